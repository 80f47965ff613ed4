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
	var s sedInfo
	flags := map[byte]bool{}
	var exprs []string
	hasE, endOpts := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if a.dynamic {
			s.err = "sed command has arguments that cannot be statically analyzed"
			return s
		}
		if endOpts || v == "-" || !strings.HasPrefix(v, "-") {
			if !hasE && len(exprs) == 0 {
				exprs = append(exprs, v)
			} else {
				s.files = append(s.files, a)
			}
			continue
		}
		if v == "--" {
			endOpts = true
			continue
		}
		if strings.HasPrefix(v, "--") {
			name, val, hasVal := strings.Cut(v[2:], "=")
			switch name {
			case "in-place":
				flags['i'] = true
			case "expression":
				hasE = true
				if !hasVal {
					i++
					if i >= len(args) || args[i].dynamic {
						s.err = "sed command missing expression"
						return s
					}
					val = args[i].val
				}
				exprs = append(exprs, val)
			case "quiet", "silent":
				flags['n'] = true
			case "regexp-extended":
				flags['E'] = true
			case "posix", "debug", "sandbox", "separate", "null-data", "zero-terminated", "unbuffered":
			default:
				s.err = fmt.Sprintf("sed flag --%s not allowed", name)
				return s
			}
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			c := v[j]
			switch c {
			case 'i':
				flags['i'] = true
				if j == len(v)-1 && i+1 < len(args) {
					// BSD style "-i SUFFIX": the spec's skip rule.
					n := args[i+1].val
					if !strings.HasPrefix(n, "-") && !strings.HasPrefix(n, "s") && !strings.Contains(n, ".") && !args[i+1].dynamic {
						i++
					}
				}
				break cluster // the rest is a backup suffix
			case 'e':
				hasE = true
				if j < len(v)-1 {
					exprs = append(exprs, v[j+1:])
				} else {
					i++
					if i >= len(args) || args[i].dynamic {
						s.err = "sed command missing expression"
						return s
					}
					exprs = append(exprs, args[i].val)
				}
				break cluster
			case 'n', 'E':
				flags[c] = true
			default:
				s.err = fmt.Sprintf("sed flag -%c not allowed", c)
				return s
			}
		}
	}
	s.inPlace = flags['i']
	if len(exprs) == 0 {
		s.err = "sed command missing expression"
		return s
	}
	for _, e := range exprs {
		if msg := sedExpr(e, flags['n']); msg != "" {
			s.err = msg
			return s
		}
	}
	return s
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
