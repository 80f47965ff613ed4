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
			e := p[i+1]
			i++
			switch e {
			case 'w':
				b.WriteString(wrap(wordClass, inClass, false))
			case 'd':
				b.WriteString(wrap(`\p{Nd}`, inClass, false))
			case 's':
				b.WriteString(wrap(spaceClass, inClass, false))
			case 'W':
				if inClass {
					b.WriteString(`\W`)
				} else {
					b.WriteString(wrap(wordClass, false, true))
				}
			case 'D':
				b.WriteString(`\P{Nd}`)
			case 'S':
				if inClass {
					b.WriteString(`\S`)
				} else {
					b.WriteString(wrap(spaceClass, false, true))
				}
			case 'Q':
				return "", fmt.Errorf(`regex parse error: unrecognized escape sequence \Q`)
			case 'A', 'z':
				switch {
				case inClass, multiline:
					b.WriteByte('\\')
					b.WriteByte(e)
				case e == 'A':
					b.WriteByte('^')
				default:
					b.WriteByte('$')
				}
			default:
				// Other escapes (\pL, \x{263a}, \., \\) are copied as they are.
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ] first in the class (after an optional ^) is literal.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == '[' && inClass && strings.HasPrefix(p[i:], "[:"):
			// A POSIX class ([:alpha:]) inside a class: copied whole.
			end := strings.Index(p[i+2:], ":]")
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(p[i : i+2+end+2])
			i += 2 + end + 1
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
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
