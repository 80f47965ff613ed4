package shell

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds the nesting of analysed scripts (bash -c inside
// bash -c, substitutions inside substitutions); deeper nesting fails.
const maxDepth = 4

// maxCwds bounds the set of possible working directories tracked across
// cd commands; beyond it the working directory becomes unknown.
const maxCwds = 8

// word is one shell word, resolved statically.
type word struct {
	// val is the word's value with quotes and escapes removed. Dynamic
	// parts appear as "$NAME".
	val string
	// dynamic is set when part of the value is only known at run time.
	dynamic bool
	// glob is set when the word holds unquoted pattern characters
	// (* ? [ or braces), so it may expand to other words.
	glob bool
	// quoted is set when any part of the word is quoted.
	quoted bool
	// tilde is set when the word starts with an unquoted ~.
	tilde bool
	// brace is set when the word holds a brace expansion ({a,b}, {1..3}),
	// which may expand to several words, options among them.
	brace bool
}

// redir is one redirection of a unit.
type redir struct {
	op     syntax.RedirOperator
	target word
}

// assign is one NAME=value prefix of a unit.
type assign struct {
	name  string
	value word
}

// unit is one simple command the script runs.
type unit struct {
	// text is the command's source text (redirections included) for
	// units written in the script, or its words joined by spaces for
	// units synthesised from wrappers.
	text    string
	assigns []assign
	args    []word
	redirs  []redir
	// nested marks units that run inside another unit (behind a wrapper,
	// in a bash -c script, find -exec or a substitution).
	nested bool
	// wrapper names the wrapper kind when this unit runs another.
	wrapper string
	// inner is the number of units this one wraps directly.
	inner int
	// privileged marks units run through sudo or doas.
	privileged bool
	// cwds are the possible working directories the unit runs in; nil
	// means unknown.
	cwds []string
	// findDelete marks find with -delete; findTests reports whether it
	// has test predicates restricting what it deletes.
	findDelete, findTests bool
	// roWhy caches unitRO once roDone is set.
	roWhy  string
	roDone bool
}

// name is the command name's base name ("rm" for /bin/rm), or "".
func (u *unit) name() string {
	if len(u.args) == 0 {
		return ""
	}
	return path.Base(u.args[0].val)
}

// trustedName reports whether the command name resolves through PATH or
// a standard system directory, so that "ls" really is ls and not a local
// script called ./ls.
func (u *unit) trustedName() bool {
	if len(u.args) == 0 {
		return false
	}
	n := u.args[0].val
	if !strings.Contains(n, "/") {
		return true
	}
	switch path.Dir(n) {
	case "/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin":
		return true
	}
	return false
}

// Analysis is the static analysis of one command string. Build it with
// Analyze; its methods are safe for concurrent use.
type Analysis struct {
	src string
	cfg Config
	// fail is the reason the command cannot be analysed statically
	// (parse error, substitution, eval, ...); empty when it can.
	fail     string
	parseErr bool
	units    []*unit
	// cwds is the current set of possible working directories while
	// walking; nil means unknown.
	cwds []string
	// andLeft is set while walking the left side of "&&": a cd there
	// that fails stops the commands after it.
	andLeft bool
	// parser parses the command and nested scripts while analysing.
	parser *syntax.Parser
	// wds caches cfg.workingDirs().
	wds []string
	// unitBuf and unitStore hold the first units without allocating.
	unitBuf   [4]*unit
	unitStore [3]unit
	nUnits    int
	reader    strings.Reader
	cwdBuf    [1]string
}

// newUnit returns a zeroed unit, from the analysis's own store while it
// lasts.
func (a *Analysis) newUnit() *unit {
	if a.nUnits < len(a.unitStore) {
		u := &a.unitStore[a.nUnits]
		a.nUnits++
		return u
	}
	return &unit{}
}

// Analyze parses command and collects its units. It never fails: a
// command it cannot understand gives an Analysis whose Failure is set.
// It allocates a parser per call; an Analyzer reuses them.
func Analyze(command string, cfg Config) *Analysis {
	return analyze(command, cfg, nil)
}

// Analyzer analyses commands, reusing its parsers between calls (a
// parser is a few KiB to allocate and clear). Its zero value is ready to
// use, and it is safe for concurrent use.
type Analyzer struct {
	parsers sync.Pool
}

// Analyze is the package's Analyze with one of z's parsers.
func (z *Analyzer) Analyze(command string, cfg Config) *Analysis {
	p, _ := z.parsers.Get().(*syntax.Parser)
	if p == nil {
		p = newParser()
	}
	a := analyze(command, cfg, p)
	a.parser = nil
	z.parsers.Put(p)
	return a
}

func newParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
}

func analyze(command string, cfg Config, p *syntax.Parser) *Analysis {
	a := &Analysis{src: command, cfg: cfg, parser: p}
	a.units = a.unitBuf[:0]
	if cfg.Workdir != "" && path.IsAbs(cfg.Workdir) {
		a.cwdBuf[0] = path.Clean(cfg.Workdir)
		a.cwds = a.cwdBuf[:1:1]
	}
	if strings.TrimSpace(command) == "" {
		return a
	}
	if strings.ContainsRune(command, '\r') {
		// Bash keeps a carriage return in the word ("ls\rrm" is one
		// command name), while the parser treats it as a blank.
		a.fail = "Command contains a carriage return, which the shell and the analyser would split differently"
		return a
	}
	if !cfg.noFast && a.fast(command) {
		return a
	}
	f, err := a.parse(command)
	if err != nil {
		a.fail = "Command parsing failed, cannot verify safety"
		a.parseErr = true
		return a
	}
	a.stmts(command, f.Stmts, 0, false, nil)
	return a
}

// parse parses src with the analysis's parser (a fresh one without).
func (a *Analysis) parse(src string) (*syntax.File, error) {
	if a.parser == nil {
		a.parser = newParser()
	}
	a.reader.Reset(src)
	f, err := a.parser.Parse(&a.reader, "")
	if err != nil {
		return nil, fmt.Errorf("parse command: %w", err)
	}
	return f, nil
}

// Failure is the reason the command cannot be statically analysed, or ""
// when it can.
func (a *Analysis) Failure() string { return a.fail }

// Empty reports whether the command is empty or only blanks.
func (a *Analysis) Empty() bool { return strings.TrimSpace(a.src) == "" }

func (a *Analysis) failf(format string, args ...any) {
	if a.fail == "" {
		a.fail = fmt.Sprintf(format, args...)
	}
}

// text returns the source text of node n within src.
func text(src string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(src[s:e]), ";&"))
}

func (a *Analysis) stmts(src string, ss []*syntax.Stmt, depth int, nested bool, inherited []redir) {
	for _, s := range ss {
		a.stmt(src, s, depth, nested, inherited)
	}
}

func (a *Analysis) stmt(src string, s *syntax.Stmt, depth int, nested bool, inherited []redir) {
	if depth > maxDepth {
		a.failf("Command nesting is too deep to analyze")
		return
	}
	if s.Coprocess || s.Disown {
		a.failf("Command contains coprocess which cannot be statically analyzed")
	}
	rs := a.redirs(src, s, depth, inherited)
	switch c := s.Cmd.(type) {
	case nil:
		// Only redirections: "> file" truncates file.
		u := a.newUnit()
		*u = unit{text: text(src, s), redirs: rs, nested: nested, cwds: a.cwds}
		a.units = append(a.units, u)
	case *syntax.CallExpr:
		a.call(src, s, c, depth, nested, rs)
	case *syntax.BinaryCmd:
		a.binary(src, c, depth, nested, rs)
	case *syntax.Subshell:
		saved := a.cwds
		a.stmts(src, c.Stmts, depth, nested, rs)
		a.cwds = saved
	case *syntax.Block:
		a.stmts(src, c.Stmts, depth, nested, rs)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			a.stmt(src, c.Stmt, depth, nested, rs)
		}
	case *syntax.DeclClause:
		a.decl(src, s, c, depth, nested, rs)
	default:
		a.failf("Command contains %s which cannot be statically analyzed", unsupported(c))
	}
}

// redirs resolves the redirections of s, after those it inherits from
// the commands around it.
func (a *Analysis) redirs(src string, s *syntax.Stmt, depth int, inherited []redir) []redir {
	rs := inherited
	if len(s.Redirs) > 0 {
		rs = make([]redir, len(inherited), len(inherited)+len(s.Redirs))
		copy(rs, inherited)
	}
	for _, r := range s.Redirs {
		if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
			a.failf("Command contains a named file descriptor which cannot be statically analyzed")
		}
		if r.Hdoc != nil {
			a.word(src, r.Hdoc, depth, false)
		}
		if r.Word != nil {
			rs = append(rs, redir{op: r.Op, target: a.word(src, r.Word, depth, true)})
		}
	}
	return rs
}

// call records the simple command c of statement s.
func (a *Analysis) call(src string, s *syntax.Stmt, c *syntax.CallExpr, depth int, nested bool, rs []redir) {
	u := a.newUnit()
	*u = unit{text: text(src, s), redirs: rs, nested: nested, cwds: a.cwds}
	if len(c.Assigns) > 0 {
		u.assigns = make([]assign, 0, len(c.Assigns))
		for _, as := range c.Assigns {
			u.assigns = append(u.assigns, a.assign(src, as, depth))
		}
	}
	u.args = make([]word, 0, len(c.Args))
	for _, w := range c.Args {
		u.args = append(u.args, a.word(src, w, depth, true))
	}
	a.add(u, depth)
}

// binary walks "X && Y", "X || Y" and pipelines. In "X && Y", Y only
// runs when X succeeded, so a cd ending X did change the directory; in
// "X || Y" and "X | Y" it may not have. The elements of a pipeline run
// in subshells: a cd there changes nothing after it.
func (a *Analysis) binary(src string, c *syntax.BinaryCmd, depth int, nested bool, rs []redir) {
	saved := a.andLeft
	pipe := c.Op == syntax.Pipe || c.Op == syntax.PipeAll
	a.andLeft = c.Op == syntax.AndStmt
	a.stmt(src, c.X, depth, nested, rs)
	a.andLeft = saved && !pipe
	a.stmt(src, c.Y, depth, nested, rs)
	a.andLeft = saved
}

// decl records export/declare/local/readonly/typeset: not read-only,
// but their values are still scanned for substitutions.
func (a *Analysis) decl(src string, s *syntax.Stmt, c *syntax.DeclClause, depth int, nested bool, rs []redir) {
	u := &unit{text: text(src, s), redirs: rs, nested: nested, cwds: a.cwds}
	u.args = append(u.args, word{val: c.Variant.Value})
	for _, as := range c.Args {
		v := a.assign(src, as, depth)
		w := v.value
		if as.Name != nil && !as.Naked {
			w.val = v.name + "=" + w.val
		} else if as.Name != nil {
			w = word{val: v.name}
		}
		u.args = append(u.args, w)
	}
	a.units = append(a.units, u)
}

// unsupported names, for the failure message, a command that needs code
// to run to be understood (conditionals, loops, functions, tests,
// arithmetic).
func unsupported(c syntax.Command) string {
	switch c := c.(type) {
	case *syntax.IfClause:
		return "if_statement"
	case *syntax.WhileClause:
		if c.Until {
			return "until_statement"
		}
		return "while_statement"
	case *syntax.ForClause:
		return "for_statement"
	case *syntax.CaseClause:
		return "case_statement"
	case *syntax.FuncDecl:
		return "function_definition"
	case *syntax.TestClause:
		return "test_command"
	case *syntax.ArithmCmd, *syntax.LetClause:
		return "arithmetic"
	}
	return fmt.Sprintf("%T", c)
}

func (a *Analysis) assign(src string, as *syntax.Assign, depth int) assign {
	var v assign
	if as.Name != nil {
		v.name = as.Name.Value
	}
	if as.Index != nil {
		a.failf("Command contains arithmetic which cannot be statically analyzed")
	}
	if as.Value != nil {
		v.value = a.word(src, as.Value, depth, true)
	}
	if as.Array != nil {
		v.value.dynamic = true
		for _, e := range as.Array.Elems {
			if e.Index != nil {
				a.failf("Command contains arithmetic which cannot be statically analyzed")
			}
			if e.Value != nil {
				a.word(src, e.Value, depth, true)
			}
		}
	}
	return v
}

// word resolves w. Substitutions make the analysis fail, and the
// commands inside them are still collected (as nested units) so that
// deny rules can see them.
func (a *Analysis) word(src string, w *syntax.Word, depth int, top bool) word {
	var out word
	if len(w.Parts) == 1 {
		// The common case, a plain literal: no builder needed.
		if l, ok := w.Parts[0].(*syntax.Lit); ok {
			if top && strings.HasPrefix(l.Value, "~") {
				out.tilde = true
			}
			s, glob := unescapeLit(l.Value)
			out.glob = glob
			if glob && strings.IndexByte(l.Value, '{') >= 0 && strings.IndexByte(l.Value, '}') >= 0 {
				out.brace = true
			}
			out.val = s
			return out
		}
	}
	var b strings.Builder
	for i, p := range w.Parts {
		a.part(src, p, depth, false, i == 0 && top, &b, &out)
	}
	out.val = b.String()
	return out
}

func (a *Analysis) part(src string, p syntax.WordPart, depth int, inDQ, first bool, b *strings.Builder, out *word) {
	switch p := p.(type) {
	case *syntax.Lit:
		litPart(p, inDQ, first, b, out)
	case *syntax.SglQuoted:
		out.quoted = true
		if p.Dollar && strings.Contains(p.Value, `\`) {
			// $'...' escapes (\x72m is "rm"): treat as unknown.
			out.dynamic = true
		}
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		out.quoted = true
		for _, q := range p.Parts {
			a.part(src, q, depth, true, false, b, out)
		}
	case *syntax.ParamExp:
		a.param(src, p, depth, b, out)
	case *syntax.CmdSubst:
		a.subst(src, "command_substitution", "$(...)", p.Stmts, depth, b, out)
	case *syntax.ProcSubst:
		a.subst(src, "process_substitution", "<(...)", p.Stmts, depth, b, out)
	case *syntax.ArithmExp:
		// Arithmetic evaluates array subscripts, which can run commands.
		a.failf("Command contains arithmetic expansion which cannot be statically analyzed")
		out.dynamic = true
		b.WriteString("$((...))")
	case *syntax.ExtGlob:
		out.glob = true
		b.WriteString(p.Op.String())
		if p.Pattern != nil {
			b.WriteString(p.Pattern.Value)
		}
		b.WriteString(")")
	case *syntax.BraceExp:
		out.glob = true
		out.brace = true
		b.WriteString("{...}")
	default:
		a.failf("Command contains %T which cannot be statically analyzed", p)
		out.dynamic = true
	}
}

// litPart resolves a literal part of a word, inside double quotes or not;
// first is set for the first part of a word in command or argument
// position, where ~ expands.
func litPart(p *syntax.Lit, inDQ, first bool, b *strings.Builder, out *word) {
	if inDQ {
		b.WriteString(unescapeDQ(p.Value))
		return
	}
	if first && strings.HasPrefix(p.Value, "~") {
		out.tilde = true
	}
	s, glob := unescapeLit(p.Value)
	out.glob = out.glob || glob
	if glob && strings.IndexByte(p.Value, '{') >= 0 && strings.IndexByte(p.Value, '}') >= 0 {
		out.brace = true // {a,b} or {1..3}: may expand to several words
	}
	b.WriteString(s)
}

// param resolves a parameter expansion: it makes the word dynamic, and
// anything but a plain $NAME or ${NAME} makes the analysis fail (the
// words inside are still scanned for substitutions).
func (a *Analysis) param(src string, p *syntax.ParamExp, depth int, b *strings.Builder, out *word) {
	if !simpleParam(p) {
		a.failf("Command contains expansion which cannot be statically analyzed")
		if p.Exp != nil && p.Exp.Word != nil {
			a.word(src, p.Exp.Word, depth, false)
		}
		if p.Repl != nil {
			if p.Repl.Orig != nil {
				a.word(src, p.Repl.Orig, depth, false)
			}
			if p.Repl.With != nil {
				a.word(src, p.Repl.With, depth, false)
			}
		}
	}
	out.dynamic = true
	b.WriteString("$")
	if p.Param != nil {
		b.WriteString(p.Param.Value)
	}
}

// subst handles a command or process substitution (kind): the analysis
// fails, the word shows the substitution as shown, and the commands
// inside are still collected as nested units, in the working directory
// of the word.
func (a *Analysis) subst(src, kind, shown string, stmts []*syntax.Stmt, depth int, b *strings.Builder, out *word) {
	a.failf("Command contains %s which cannot be statically analyzed", kind)
	out.dynamic = true
	b.WriteString(shown)
	saved := a.cwds
	a.stmts(src, stmts, depth+1, true, nil)
	a.cwds = saved
}

// simpleParam reports whether p is a plain $NAME or ${NAME}.
func simpleParam(p *syntax.ParamExp) bool {
	return !p.Excl && !p.Length && !p.Width && !p.IsSet && p.Flags == nil &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 &&
		p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil &&
		p.Param != nil
}

// unescapeLit removes backslash escapes from an unquoted literal and
// reports whether it holds unquoted pattern characters.
func unescapeLit(s string) (string, bool) {
	glob := false
	if !strings.ContainsAny(s, `\*?[{`) {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		case '*', '?', '[':
			glob = true
		case '{':
			if strings.ContainsAny(s[i:], "}") {
				glob = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// unescapeDQ removes the escapes that are special inside double quotes.
func unescapeDQ(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
