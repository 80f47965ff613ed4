package shell

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// TestFastPathMatchesParser: wherever the fast path applies, it gives
// the same units, accesses and verdicts as the parser.
func TestFastPathMatchesParser(t *testing.T) {
	t.Parallel()
	cmds := loadCorpus(t)
	extra := []string{
		"ls", "ls;", "cd src && ls", "cd / || ls", "true | cd / && ls", "cd src && cd .. && ls",
		"cd a; cd b; ls", "a | b | c && d || e; f", "git status && git diff HEAD~1; git log --oneline",
		"sudo rm -rf /", "timeout 5 rm -rf build", "env FOO=1 ls", "xargs cat", "find . -exec rm {} ;",
		"nice -n 5 cat f", "command -v git", "builtin cd /", "sort -o out.txt x", "cd", "cd -",
		"ls  -la\tsrc", "echo a && echo b || echo c | wc -l", "git -C /etc log", "cat /proc/self/environ",
		"ls &&", "&& ls", "ls & pwd", "ls |& cat", "time ls", "if true", "FOO=1 ls", "ls ;; pwd",
		"grep -n 'a b' file", "find . -name '*.go'", `echo "hello world"`, `git commit -m "fix: x"`,
		`ls 'a'"b"c`, "'ls' -la", `"if" x`, `'FOO=1' ls`, `echo 'unterminated`, `echo "a'b" 'c"d'`,
		`sort '-o' /etc/x y`, `cat "$HOME"`, "echo '{a,b}' '~'", "echo \"a\b\"",
	}
	cmds = append(cmds, extra...)
	cfg := testCfg
	slow := cfg
	slow.noFast = true
	n := 0
	for _, c := range cmds {
		f := Analyze(c, cfg)
		fast := &Analysis{src: c, cfg: cfg}
		if cfg.Workdir != "" {
			fast.cwds = []string{cfg.Workdir}
		}
		if !fast.fast(c) {
			continue
		}
		n++
		s := Analyze(c, slow)
		if got, want := dump(f), dump(s); got != want {
			t.Errorf("%q:\nfast   %s\nparser %s", c, got, want)
		}
		for _, m := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits} {
			if got, want := f.Check(m), s.Check(m); !reflect.DeepEqual(got, want) {
				t.Errorf("%q %s: fast %+v, parser %+v", c, m, got, want)
			}
		}
		if !reflect.DeepEqual(f.Accesses(), s.Accesses()) || f.NotReadOnly() != s.NotReadOnly() ||
			!reflect.DeepEqual(f.Suggestions(), s.Suggestions()) || f.MatchRule("ls:*", permission.Allow) != s.MatchRule("ls:*", permission.Allow) {
			t.Errorf("%q: fast and parser disagree on accesses, read-only, suggestions or rules", c)
		}
	}
	if n < 100 {
		t.Errorf("the fast path applied to only %d commands", n)
	}
	t.Logf("fast path applied to %d of %d commands", n, len(cmds))
}

func dump(a *Analysis) string {
	s := fmt.Sprintf("fail=%q units=", a.fail)
	for _, u := range a.units {
		s += fmt.Sprintf("{%q %v %v nested=%v wrapper=%q inner=%d priv=%v cwds=%v}", u.text, u.args, u.assigns, u.nested, u.wrapper, u.inner, u.privileged, u.cwds)
	}
	return s
}

// FuzzFastPath: wherever the fast path applies, the parser agrees.
func FuzzFastPath(f *testing.F) {
	for _, s := range []string{"ls -la", "a && b || c | d; e", "echo 'x y' \"z\" > f 2>&1", "cd / && ls", "2>&1", "x<y"} {
		f.Add(s)
	}
	slow := testCfg
	slow.noFast = true
	f.Fuzz(func(t *testing.T, cmd string) {
		probe := &Analysis{src: cmd, cfg: testCfg}
		if !probe.fast(cmd) {
			return
		}
		fa, sa := Analyze(cmd, testCfg), Analyze(cmd, slow)
		if dump(fa) != dump(sa) || !reflect.DeepEqual(fa.Check(permission.ModeAcceptEdits), sa.Check(permission.ModeAcceptEdits)) {
			t.Errorf("%q:\nfast   %s\nparser %s", cmd, dump(fa), dump(sa))
		}
	})
}
