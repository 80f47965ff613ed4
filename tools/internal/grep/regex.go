package grep

import (
	"fmt"
	"strings"
)

// Ripgrep's Perl classes are Unicode-aware (its regex crate's defaults);
// Go's \w, \d and \s are ASCII. These are the Unicode sets, written as
// the inside of a Go character class.
const (
	// wordClass is \w: alphabetic, marks, decimal digits, connector
	// punctuation and the join controls (UTS #18's word characters;
	// Alphabetic is approximated by letters and letter numbers).
	wordClass = `\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\x{200C}\x{200D}`
	// spaceClass is \s: the White_Space property.
	spaceClass = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`
)

// goPattern rewrites a ripgrep pattern into the Go regexp that matches
// what ripgrep matches, or returns the error ripgrep reports for it:
//
//   - \w, \d and \s (and \W, \D, \S outside a class) become their Unicode
//     sets; \W and \S inside a class stay Go's (ASCII) complements, which
//     a Go class cannot express otherwise.
//   - \Q...\E, which Go accepts and ripgrep does not, is refused.
//   - Outside multiline mode ripgrep searches each line on its own, so \A
//     and \z match at every line's start and end: they become ^ and $
//     (under (?m)), which also keeps the whole-file prefilter sound.
//
// Word boundaries (\b, \B) stay Go's ASCII ones: an RE2 pattern has no
// way to express Unicode ones.
func goPattern(p string, multiline bool) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			s, err := goEscape(p[i:i+2], inClass, multiline)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			i++
		case c == '[' && !inClass:
			inClass = true
			n := classOpening(p[i:])
			b.WriteString(p[i : i+n])
			i += n - 1
		case c == '[' && inClass && strings.HasPrefix(p[i:], "[:"):
			n := posixClass(p[i:])
			b.WriteString(p[i : i+n])
			i += n - 1
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// goEscape rewrites one two-byte escape, esc, as goPattern describes.
func goEscape(esc string, inClass, multiline bool) (string, error) {
	switch e := esc[1]; e {
	case 'w':
		return wrap(wordClass, inClass, false), nil
	case 'd':
		return wrap(`\p{Nd}`, inClass, false), nil
	case 's':
		return wrap(spaceClass, inClass, false), nil
	case 'W':
		if !inClass {
			return wrap(wordClass, false, true), nil
		}
	case 'D':
		return `\P{Nd}`, nil
	case 'S':
		if !inClass {
			return wrap(spaceClass, false, true), nil
		}
	case 'Q':
		return "", fmt.Errorf(`regex parse error: unrecognized escape sequence \Q`)
	case 'A', 'z':
		switch {
		case inClass, multiline:
		case e == 'A':
			return "^", nil
		default:
			return "$", nil
		}
	}
	// Other escapes (\pL, \x{263a}, \., \\) are copied as they are.
	return esc, nil
}

// classOpening is the length of the class opening that s starts with:
// "[", then an optional "^", then an optional "]", which is literal
// first in a class.
func classOpening(s string) int {
	n := 1
	if n < len(s) && s[n] == '^' {
		n++
	}
	if n < len(s) && s[n] == ']' {
		n++
	}
	return n
}

// posixClass is the length of the POSIX class ([:alpha:]) s starts with,
// copied whole, or 1 when s has no ":]" to end one.
func posixClass(s string) int {
	end := strings.Index(s[2:], ":]")
	if end < 0 {
		return 1
	}
	return 2 + end + 2
}

// wrap writes the class contents set as a class of its own outside a
// class, negated if asked, or as they are inside one.
func wrap(set string, inClass, negate bool) string {
	switch {
	case inClass:
		return set
	case negate:
		return "[^" + set + "]"
	default:
		return "[" + set + "]"
	}
}
