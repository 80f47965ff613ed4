package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The fast path: most commands an agent runs are plain words joined by
// ";", "&&", "||" and "|" ("git status", "ls -la src && wc -l go.mod").
// For those, the shell grammar is trivial, and fast builds the same
// units the parser's syntax tree would give, without parsing. Anything
// else - quotes, escapes, expansions, globs, redirections, assignments,
// comments, reserved words, newlines - goes to the parser.
// TestFastPathMatchesParser checks the two agree.

// fastByte reports whether c may appear in a word on the fast path.
func fastByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '/', ',', ':', '@', '%', '+', '=':
		return true
	}
	return false
}

// fastOp is an operator between simple commands.
type fastOp byte

const (
	opNone fastOp = iota
	opSemi
	opAnd
	opOr
	opPipe
)

type fastCmd struct {
	start, end int // source span
	words      []word
	redirs     []redir
}

// fast analyses src when it qualifies for the fast path and reports
// whether it did.
func (a *Analysis) fast(src string) bool {
	if !fastChars(src) {
		return false
	}
	var cmdBuf [6]fastCmd
	var opBuf [6]fastOp
	cmds, ops, ok := fastSplit(src, cmdBuf[:0], opBuf[:0])
	if !ok {
		return false
	}
	// Statements are separated by ";"; inside one, && and || chain
	// pipelines left to right.
	first := 0
	for k := range cmds {
		if ops[k] == opSemi || ops[k] == opNone {
			a.fastChain(src, cmds[first:k+1], ops[first:k])
			first = k + 1
		}
	}
	return true
}

// fastChars reports whether src holds only bytes the fast path knows,
// with every quote closed and nothing inside quotes that expands or
// escapes.
func fastChars(src string) bool {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !fastByte(c) && c != ' ' && c != '\t' && c != '&' && c != '|' && c != ';' && c != '\'' && c != '"' && c != '<' && c != '>' {
			return false
		}
		if c == '\'' || c == '"' {
			// Inside quotes: anything printable but the closing quote
			// (and, in double quotes, what expands or escapes).
			j := i + 1
			for j < len(src) && src[j] != c {
				d := src[j]
				if d < ' ' || d >= 0x7f || (c == '"' && (d == '$' || d == '`' || d == '\\' || d == '!')) {
					return false
				}
				j++
			}
			if j == len(src) {
				return false // unterminated
			}
			i = j
		}
	}
	return true
}

// fastSplit splits src into simple commands, appended to cmds, and the
// operators after each, appended to ops (opNone after the last). ok is
// false when src is not for the fast path.
func fastSplit(src string, cmds []fastCmd, ops []fastOp) ([]fastCmd, []fastOp, bool) {
	cur := fastCmd{start: -1}
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == ';' || c == '&' || c == '|':
			op, n, ok := fastOperator(src, i)
			if !ok || cur.start < 0 {
				return nil, nil, false // or an operator without a command before it
			}
			cmds = append(cmds, cur)
			ops = append(ops, op)
			cur = fastCmd{start: -1}
			i += n
		default:
			next, ok := cur.token(src, i)
			if !ok {
				return nil, nil, false
			}
			i = next
		}
	}
	if cur.start >= 0 {
		cmds = append(cmds, cur)
		ops = append(ops, opNone)
	} else if len(ops) == 0 || ops[len(ops)-1] != opSemi {
		return nil, nil, false // empty, or a trailing &&, || or |
	}
	return cmds, ops, true
}

// fastOperator reads the operator at i (";", "&&", "||" or "|") and
// returns it and its length; ok is false for "|&" and a background "&".
func fastOperator(src string, i int) (fastOp, int, bool) {
	c := src[i]
	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch {
	case c == '&' && next == '&':
		return opAnd, 2, true
	case c == '|' && next == '|':
		return opOr, 2, true
	case c == '|' && next == '&':
		return opNone, 0, false // |&
	case c == '|':
		return opPipe, 1, true
	case c == '&':
		return opNone, 0, false // background
	}
	return opSemi, 1, true
}

// token reads the word or redirection at i into c and returns the index
// after it; ok is false when it is not for the fast path (an assignment
// or a reserved word in command position, a redirection it does not
// know).
func (c *fastCmd) token(src string, i int) (int, bool) {
	if c.start < 0 {
		c.start = i
	}
	j, w, ok := fastWord(src, i)
	if !ok {
		return 0, false
	}
	if j < len(src) && (src[j] == '>' || src[j] == '<') && (j == i || allDigits(src[i:j])) {
		// A redirection, with its file descriptor when digits come
		// right before it.
		r, next, ok := fastRedir(src, j)
		if !ok {
			return 0, false
		}
		c.redirs = append(c.redirs, r)
		c.end = next
		return next, true
	}
	if len(c.words) == 0 {
		raw := src[i:j]
		if strings.IndexByte(raw, '=') >= 0 || reserved(raw) {
			return 0, false
		}
		c.words = make([]word, 0, 4)
	}
	c.words = append(c.words, w)
	c.end = j
	return j, true
}

// fastChain walks one statement: pipelines joined by && and ||, the way
// stmt walks the parser's left-associative BinaryCmd tree. There, a
// pipeline is on the left of "&&" exactly when the operator after it is
// "&&"; the elements of a pipeline of several commands never are.
func (a *Analysis) fastChain(src string, cmds []fastCmd, ops []fastOp) {
	saved := a.andLeft
	for k := 0; k < len(cmds); {
		end := k
		for end < len(ops) && ops[end] == opPipe {
			end++
		}
		// cmds[k..end] is one pipeline; ops[end] (if any) follows it.
		a.andLeft = end == k && end < len(ops) && ops[end] == opAnd
		for j := k; j <= end; j++ {
			c := cmds[j]
			u := a.newUnit()
			*u = unit{text: src[c.start:c.end], args: c.words, redirs: c.redirs, cwds: a.cwds}
			if len(c.words) == 0 {
				a.units = append(a.units, u) // only redirections
				continue
			}
			a.add(u, 0)
		}
		k = end + 1
	}
	a.andLeft = saved
}

// reserved reports whether w is a word the shell treats as syntax in
// command position.
func reserved(w string) bool {
	switch w {
	case "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "for", "select",
		"while", "until", "in", "function", "time", "coproc":
		return true
	}
	return false
}

// unquote removes the quotes of a fast-path word (quoted parts hold
// nothing that expands or escapes).
func unquote(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\'' || c == '"' {
			j := i + 1 + strings.IndexByte(raw[i+1:], c)
			b.WriteString(raw[i+1 : j])
			i = j
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// fastWord reads the word starting at i (plain bytes and closed quotes)
// and returns the index after it. An empty word is fine (a redirection
// follows); ok is false when i starts nothing the fast path knows.
func fastWord(src string, i int) (int, word, bool) {
	j := i
	quoted := false
	for j < len(src) {
		if q := src[j]; q == '\'' || q == '"' {
			quoted = true
			j += 2 + strings.IndexByte(src[j+1:], q) // closed: checked by fast
			continue
		}
		if !fastByte(src[j]) {
			break
		}
		j++
	}
	if j == i && (j >= len(src) || (src[j] != '>' && src[j] != '<')) {
		return j, word{}, false
	}
	raw := src[i:j]
	w := word{val: raw, quoted: quoted}
	if quoted {
		w.val = unquote(raw)
	}
	return j, w, true
}

// fastRedir reads the redirection operator at i and its target word:
// >, >>, <, >& and <&. Anything else (heredocs, <>, >|, &>) is for the
// parser.
func fastRedir(src string, i int) (redir, int, bool) {
	var op syntax.RedirOperator
	n := 1
	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch {
	case src[i] == '>' && next == '>':
		op, n = syntax.AppOut, 2
	case src[i] == '>' && next == '&':
		op, n = syntax.DplOut, 2
	case src[i] == '>' && next == '|':
		return redir{}, 0, false
	case src[i] == '>':
		op = syntax.RdrOut
	case next == '&':
		op, n = syntax.DplIn, 2
	case next == '<' || next == '>':
		return redir{}, 0, false
	default:
		op = syntax.RdrIn
	}
	j := i + n
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	end, w, ok := fastWord(src, j)
	if !ok || end == j {
		return redir{}, 0, false
	}
	return redir{op: op, target: w}, end, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
