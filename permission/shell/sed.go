package shell

import (
	"fmt"
	"regexp"
	"strings"
)

// sedInfo is a parsed sed invocation.
type sedInfo struct {
	err     string
	inPlace bool
	files   []word
}

// The sed expression patterns of the spec (§2.5). Compiled regexps are
// immutable, so sharing them is safe.
var (
	sedWriteRe = regexp.MustCompile(`/[wW]\s+\S+`)
	sedExecRe  = regexp.MustCompile(`/[eE](\s|$)`)
	sedPrintRe = regexp.MustCompile(`^\d+p$|^\d+,\d+p$`)
)

// parseSed applies the spec's sed constraints (§2.5) to sed's arguments
// (without the command name). Fixes over the reference: once -e or
// --expression gives an expression, plain words are files; an -i cluster
// ends at the i (the rest is the backup suffix); --file and other
// unknown long options are refused rather than ignored; an s command
// with more than three delimited parts is refused.
func parseSed(args []word) sedInfo {
	var p sedArgs
	if err := p.scan(args); err != "" {
		return sedInfo{err: err, files: p.files}
	}
	s := sedInfo{inPlace: p.inPlace, files: p.files}
	if len(p.exprs) == 0 {
		s.err = "sed command missing expression"
		return s
	}
	for _, e := range p.exprs {
		if msg := sedExpr(e, p.quiet); msg != "" {
			s.err = msg
			return s
		}
	}
	return s
}

// sedArgs collects sed's options, expressions and files.
type sedArgs struct {
	exprs []string
	files []word
	// hasE is set once -e or --expression gave an expression; endOpts
	// after "--"; inPlace by -i; quiet by -n.
	hasE, endOpts, inPlace, quiet bool
}

// scan reads args, and returns why they are refused, or "".
func (p *sedArgs) scan(args []word) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if a.dynamic {
			return "sed command has arguments that cannot be statically analyzed"
		}
		var err string
		switch {
		case p.endOpts || v == "-" || !strings.HasPrefix(v, "-"):
			if !p.hasE && len(p.exprs) == 0 {
				p.exprs = append(p.exprs, v)
			} else {
				p.files = append(p.files, a)
			}
		case v == "--":
			p.endOpts = true
		case strings.HasPrefix(v, "--"):
			i, err = p.long(args, i)
		default:
			i, err = p.cluster(args, i)
		}
		if err != "" {
			return err
		}
	}
	return ""
}

// long reads the long option args[i] (and its value) and returns the
// index of its last word.
func (p *sedArgs) long(args []word, i int) (int, string) {
	name, val, hasVal := strings.Cut(args[i].val[2:], "=")
	switch name {
	case "in-place":
		p.inPlace = true
	case "expression":
		p.hasE = true
		if !hasVal {
			i++
			if i >= len(args) || args[i].dynamic {
				return i, "sed command missing expression"
			}
			val = args[i].val
		}
		p.exprs = append(p.exprs, val)
	case "quiet", "silent":
		p.quiet = true
	case "regexp-extended", "posix", "debug", "sandbox", "separate", "null-data", "zero-terminated", "unbuffered":
	default:
		return i, fmt.Sprintf("sed flag --%s not allowed", name)
	}
	return i, ""
}

// cluster reads the short options of args[i] (and a value after it) and
// returns the index of its last word.
func (p *sedArgs) cluster(args []word, i int) (int, string) {
	v := args[i].val
	for j := 1; j < len(v); j++ {
		switch c := v[j]; c {
		case 'i':
			p.inPlace = true
			if j == len(v)-1 && i+1 < len(args) {
				// BSD style "-i SUFFIX": the spec's skip rule.
				n := args[i+1].val
				if !strings.HasPrefix(n, "-") && !strings.HasPrefix(n, "s") && !strings.Contains(n, ".") && !args[i+1].dynamic {
					i++
				}
			}
			return i, "" // the rest is a backup suffix
		case 'e':
			p.hasE = true
			if j < len(v)-1 {
				p.exprs = append(p.exprs, v[j+1:])
				return i, ""
			}
			i++
			if i >= len(args) || args[i].dynamic {
				return i, "sed command missing expression"
			}
			p.exprs = append(p.exprs, args[i].val)
			return i, ""
		case 'n':
			p.quiet = true
		case 'E':
		default:
			return i, fmt.Sprintf("sed flag -%c not allowed", c)
		}
	}
	return i, ""
}

func sedExpr(e string, n bool) string {
	switch {
	case sedWriteRe.MatchString(e) || strings.HasSuffix(e, "/w") || strings.HasSuffix(e, "/W"):
		return "sed write operation (w/W) not allowed"
	case sedExecRe.MatchString(e) || strings.HasSuffix(e, "/e") || strings.HasSuffix(e, "/E"):
		return "sed execute operation (e/E) not allowed"
	case strings.ContainsAny(e, "{}"):
		return "sed curly braces not allowed"
	case strings.HasPrefix(e, "!"):
		return "sed negation (!) not allowed"
	case strings.Contains(e, "#") && !strings.HasPrefix(e, "s#"):
		return "sed comments not allowed"
	}
	if n && sedPrintRe.MatchString(e) {
		return ""
	}
	if len(e) >= 2 && e[0] == 's' && strings.IndexByte("/|#", e[1]) >= 0 {
		parts := splitUnescaped(e[2:], e[1])
		if len(parts) >= 2 && len(parts) <= 3 && !strings.ContainsAny(parts[0]+parts[1], "\n") {
			if len(parts) < 3 || strings.Trim(parts[2], "gp0123456789") == "" {
				return ""
			}
		}
	}
	return fmt.Sprintf("sed expression '%s' not in allowlist", e)
}

// splitUnescaped splits s on sep, ignoring backslash-escaped separators.
func splitUnescaped(s string, sep byte) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
