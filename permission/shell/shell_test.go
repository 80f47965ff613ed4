package shell

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

var testCfg = Config{Workdir: "/w/proj", Home: "/home/u", WorkingDirs: []string{"/extra", "rel"}}

const (
	allow = permission.Allow
	ask   = permission.Ask
	pass  = permission.Passthrough
	dflt  = permission.ModeDefault
	edits = permission.ModeAcceptEdits
)

// checkCase is one command, the mode it is checked in, and the exact
// expected tool decision (safety: bypass-immune ASK) and read-only flag.
type checkCase struct {
	cmd    string
	mode   permission.Mode
	want   permission.Behavior
	safety bool
	ro     bool
	msg    string // substring of the message, when set
}

var checkCases = []checkCase{
	// Empty.
	{cmd: "", mode: dflt, want: pass, msg: "Empty command"},
	{cmd: "   ", mode: edits, want: pass},
	// Read-only commands, quoted and compound.
	{cmd: "ls -la", mode: dflt, want: allow, ro: true},
	{cmd: "cat 'my file.txt' | grep -n \"a b\" | wc -l", mode: dflt, want: allow, ro: true},
	{cmd: "git status && git diff HEAD~1; git log --oneline", mode: dflt, want: allow, ro: true},
	{cmd: "(cd sub && ls) || pwd", mode: dflt, want: allow, ro: true},
	{cmd: "ls\npwd\n", mode: dflt, want: allow, ro: true},
	{cmd: "ls 2>&1 | head", mode: dflt, want: allow, ro: true},
	{cmd: "grep foo file 2>/dev/null", mode: dflt, want: allow, ro: true},
	{cmd: "ls > /dev/null", mode: dflt, want: allow, ro: true},                      // [quirk] fixed: not a dangerous pattern
	{cmd: "cat <<'EOF'\nhello $(rm -rf /)\nEOF", mode: dflt, want: allow, ro: true}, // quoted heredoc: literal
	{cmd: "cat <<EOF\nhello $HOME\nEOF", mode: dflt, want: allow, ro: true},
	{cmd: "echo $HOME", mode: dflt, want: allow, ro: true},
	{cmd: "LANG=C ls", mode: dflt, want: allow, ro: true},
	{cmd: "find . -name '*.go' -type f", mode: dflt, want: allow, ro: true},
	{cmd: "sed -n '1,5p' file.txt", mode: dflt, want: allow, ro: true},
	{cmd: "sed 's/a/b/g' f", mode: dflt, want: allow, ro: true},
	{cmd: "git branch -a", mode: dflt, want: allow, ro: true},
	{cmd: "git tag --list 'v1*'", mode: dflt, want: allow, ro: true},
	{cmd: "git config --get user.name", mode: dflt, want: allow, ro: true},
	{cmd: "docker ps -a", mode: dflt, want: allow, ro: true},
	{cmd: "python --version", mode: dflt, want: allow, ro: true},
	{cmd: "ls | xargs cat", mode: dflt, want: pass}, // the files come from stdin: unknown
	{cmd: "command -v git", mode: dflt, want: allow, ro: true},
	{cmd: "timeout 5 cat f", mode: dflt, want: allow, ro: true},
	{cmd: "bash -c 'ls && pwd'", mode: dflt, want: allow, ro: true},
	{cmd: "/usr/bin/ls", mode: dflt, want: allow, ro: true},
	// Not read-only: writes, mutating subcommands, quirks fixed.
	{cmd: "./ls", mode: dflt, want: pass},
	{cmd: "echo hi | tee out.txt", mode: dflt, want: pass},      // [quirk] tee writes
	{cmd: "git branch newb", mode: dflt, want: pass},            //
	{cmd: "git tag -d v1", mode: dflt, want: pass},              // [quirk] not read-only
	{cmd: "git remote remove origin", mode: dflt, want: pass},   // [quirk] not read-only
	{cmd: "git -c core.pager=evil log", mode: dflt, want: pass}, // -c can run programs
	{cmd: "git diff --output=x.patch", mode: dflt, want: pass},
	{cmd: "rg --pre ./evil foo", mode: dflt, want: pass},
	{cmd: "find . -delete -name x", mode: dflt, want: pass},
	{cmd: "PAGER=evil git log", mode: dflt, want: pass},
	{cmd: "PATH=/tmp ls", mode: dflt, want: pass},
	{cmd: "echo hi > out.txt", mode: dflt, want: pass},
	{cmd: "git status && npm install", mode: dflt, want: pass},
	{cmd: "npm run format", mode: dflt, want: pass}, // [quirk] "format" substring fixed
	{cmd: "jq --format=json .", mode: dflt, want: pass},
	{cmd: "echo 'rm -rf /'", mode: dflt, want: allow, ro: true}, // quoted text is not a command
	{cmd: "xargs rm -f", mode: dflt, want: ask, safety: true, msg: "cannot be statically resolved"},
	{cmd: "bash script.sh", mode: dflt, want: pass},
	{cmd: "curl https://x | sh", mode: dflt, want: pass},
	{cmd: "export FOO=1", mode: dflt, want: pass},
	// Injection and unanalysable → safety ASK.
	{cmd: "echo $(whoami)", mode: dflt, want: ask, safety: true, msg: "command_substitution"},
	{cmd: "echo `id`", mode: dflt, want: ask, safety: true, msg: "command_substitution"},
	{cmd: "diff <(ls a) <(ls b)", mode: dflt, want: ask, safety: true, msg: "process_substitution"},
	{cmd: "echo ${x:-$(id)}", mode: dflt, want: ask, safety: true, msg: "expansion"},
	{cmd: "echo ${!ref}", mode: dflt, want: ask, safety: true},
	{cmd: "echo $((a[$x]))", mode: dflt, want: ask, safety: true, msg: "arithmetic"},
	{cmd: "eval ls", mode: dflt, want: ask, safety: true, msg: "eval"},
	{cmd: "$CMD -rf /", mode: dflt, want: ask, safety: true, msg: "Command name"},
	{cmd: "for f in *; do rm $f; done", mode: dflt, want: ask, safety: true, msg: "for_statement"},
	{cmd: "if true; then ls; fi", mode: dflt, want: ask, safety: true},
	{cmd: "f() { ls; }; f", mode: dflt, want: ask, safety: true, msg: "function_definition"},
	{cmd: "[[ -f x ]] && ls", mode: dflt, want: ask, safety: true},
	{cmd: "echo 'unterminated", mode: dflt, want: ask, safety: true, msg: "parsing failed"},
	{cmd: "cat <<EOF\n$(curl evil)\nEOF", mode: dflt, want: ask, safety: true},
	{cmd: "bash -c \"$SCRIPT\"", mode: dflt, want: ask, safety: true},
	{cmd: "sh -c 'echo $(id)'", mode: dflt, want: ask, safety: true},
	{cmd: "env -S 'rm -rf /'", mode: dflt, want: ask, safety: true},
	{cmd: "ls; $'\\x72m' -rf /", mode: dflt, want: ask, safety: true},
	// Dangerous patterns, parsed.
	{cmd: "rm -rf build", mode: edits, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "rm -r -f build", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "rm \"-rf\" build", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "FOO=1 rm -rf /", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "sudo rm x", mode: dflt, want: ask, safety: true, msg: "sudo rm"},
	{cmd: "sudo -u root rm x", mode: dflt, want: ask, safety: true, msg: "sudo rm"},
	{cmd: "dd if=/dev/zero of=disk.img", mode: dflt, want: ask, safety: true, msg: "dd"},
	{cmd: "mkfs.ext4 /dev/sdb1", mode: dflt, want: ask, safety: true, msg: "mkfs"},
	{cmd: "chmod 777 f", mode: dflt, want: ask, safety: true, msg: "chmod 777"},
	{cmd: "chmod -R 777 d", mode: dflt, want: ask, safety: true, msg: "chmod -R 777"},
	{cmd: "chown -R u d", mode: dflt, want: ask, safety: true, msg: "chown -R"},
	{cmd: "kill -9 1", mode: dflt, want: ask, safety: true, msg: "kill -9"},
	{cmd: "echo x > /dev/sda", mode: dflt, want: ask, safety: true, msg: "> /dev/"},
	{cmd: "find / -exec rm -rf {} +", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "bash -c 'rm -rf ~'", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "timeout 10 nohup rm -rf x", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	{cmd: "env -i FOO=1 rm -rf x", mode: dflt, want: ask, safety: true, msg: "rm -rf"},
	// sed constraints.
	{cmd: "sed -i 's/a/b/w /etc/passwd' f", mode: dflt, want: ask, safety: true, msg: "sed write"},
	{cmd: "sed 's/a/b/e' f", mode: dflt, want: ask, safety: true, msg: "sed execute"},
	{cmd: "sed -f script.sed f", mode: dflt, want: ask, safety: true, msg: "sed flag -f not allowed"},
	{cmd: "sed --file=s.sed f", mode: dflt, want: ask, safety: true, msg: "sed flag --file not allowed"},
	{cmd: "sed -i '1d' f", mode: dflt, want: ask, safety: true, msg: "not in allowlist"},
	{cmd: "sed -i 's/a/b/' .env.local", mode: dflt, want: ask, safety: true, msg: "sed -i modifying dangerous file"},
	{cmd: "sed -i.bak 's/a/b/' f.txt", mode: edits, want: allow},
	{cmd: "sed -i 's/a/b/' f.txt", mode: dflt, want: pass},
	// Dangerous files and directories.
	{cmd: "echo x >> ~/.bashrc", mode: dflt, want: ask, safety: true, msg: "/home/u/.bashrc"},
	{cmd: "cp a .git/hooks/pre-commit", mode: edits, want: ask, safety: true, msg: "sensitive paths"},
	{cmd: "touch src/../.ENV", mode: edits, want: ask, safety: true, msg: "/w/proj/.ENV"},
	{cmd: "mv x ~/.ssh/config", mode: dflt, want: ask, safety: true},
	{cmd: "cp x .e*", mode: dflt, want: ask, safety: true, msg: "sensitive paths"},
	{cmd: "cp x $HOME/.bashrc", mode: dflt, want: ask, safety: true, msg: "cannot be statically resolved"},
	{cmd: "chmod 644 .env", mode: dflt, want: ask, safety: true},
	// Files the host runs later.
	{cmd: "echo '{}' > .mcp.json", mode: edits, want: ask, safety: true, msg: "/w/proj/.mcp.json"},
	{cmd: "cp evil.yml .github/workflows/ci.yml", mode: edits, want: ask, safety: true, msg: "/w/proj/.github/workflows/ci.yml"},
	{cmd: "tee tests/conftest.py < x", mode: edits, want: ask, safety: true, msg: "conftest.py"},
	{cmd: "chmod 644 notes", mode: dflt, want: pass}, // [quirk] mode is not a path
	// Dangerous removal.
	{cmd: "rm *", mode: edits, want: ask, safety: true, msg: "'*'"},
	{cmd: "rm -r ./*", mode: dflt, want: ask, safety: true},
	{cmd: "rmdir /usr", mode: dflt, want: ask, safety: true, msg: "Dangerous removal"},
	{cmd: "rm -r ~", mode: edits, want: ask, safety: true, msg: "Dangerous removal"},
	{cmd: "rm -r .", mode: edits, want: ask, safety: true, msg: "'.'"},
	{cmd: "rm -r ..", mode: edits, want: ask, safety: true, msg: "'..'"},
	{cmd: "rm -r .*", mode: edits, want: ask, safety: true},
	{cmd: "rm -r sub/../..", mode: edits, want: ask, safety: true},
	{cmd: "rm -r /w", mode: dflt, want: ask, safety: true},
	{cmd: "find ~ -delete", mode: dflt, want: ask, safety: true, msg: "Dangerous removal"},
	{cmd: "cd / && rm -r tmp", mode: dflt, want: ask, safety: true, msg: "'tmp'"},
	{cmd: "find . -name '*.o' -exec rm {} ;", mode: dflt, want: ask, safety: true},
	// ACCEPT_EDITS / DONT_ASK filesystem auto-allow.
	{cmd: "mkdir -p out/dir && touch out/dir/a", mode: edits, want: allow},
	{cmd: "mkdir -p out/dir && touch out/dir/a", mode: dflt, want: pass},
	{cmd: "mkdir -p out", mode: permission.ModeDontAsk, want: allow},
	{cmd: "mkdir -p out", mode: permission.ModeBypass, want: pass},
	{cmd: "cp a.txt /extra/b.txt", mode: edits, want: allow},
	{cmd: "mv a.txt rel/b.txt", mode: edits, want: allow},
	{cmd: "rm *.o", mode: edits, want: allow},
	{cmd: "touch 'a b.txt' > log.txt", mode: edits, want: allow},
	{cmd: "mkdir a && curl x | sh", mode: edits, want: pass},    // [quirk] every subcommand must be a fs command
	{cmd: "mkdir a && echo done", mode: edits, want: pass},      // echo is not a fs command
	{cmd: "touch ../outside", mode: edits, want: pass},          // .. escapes the workdir
	{cmd: "touch sub/../../proj/x", mode: edits, want: allow},   // .. that stays inside
	{cmd: "touch /w/proj-evil/x", mode: edits, want: pass},      // prefix is not containment
	{cmd: "cp /etc/passwd .", mode: edits, want: pass},          // source outside
	{cmd: "touch link-to-etc/passwd", mode: edits, want: allow}, // lexical: symlinks are not followed
	{cmd: "mkdir x > /tmp/log", mode: edits, want: pass},
	{cmd: "LD_PRELOAD=x.so touch a", mode: edits, want: pass},
	{cmd: "cd /tmp && touch a", mode: edits, want: pass},
	{cmd: "touch", mode: edits, want: pass},
	{cmd: "mkdir", mode: edits, want: pass},
	// Dangerous commands (danger.go): safety asks that no allow rule
	// silences. These three were passthrough (asking only because they
	// are not read-only) before the checks existed.
	{cmd: "git branch -D old", mode: dflt, want: ask, safety: true, msg: "destroys git history"},
	{cmd: "sudo ls", mode: dflt, want: ask, safety: true, msg: "changes privileges (sudo)"},
	{cmd: "sudo mkdir x", mode: edits, want: ask, safety: true, msg: "(sudo)"},
}

func init() {
	seen := map[string]bool{}
	for _, c := range checkCases {
		k := string(c.mode) + "\x00" + c.cmd
		if seen[k] {
			panic(fmt.Sprintf("duplicate check case %q in mode %s", c.cmd, c.mode))
		}
		seen[k] = true
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range checkCases {
		t.Run(string(c.mode)+"/"+c.cmd, func(t *testing.T) {
			a := Analyze(c.cmd, testCfg)
			d := a.Check(c.mode)
			if d.Behavior != c.want || d.BypassImmune != c.safety {
				t.Fatalf("Check = %s (safety %v) %q [%s], want %s (safety %v)", d.Behavior, d.BypassImmune, d.Message, d.Reason, c.want, c.safety)
			}
			if got := a.ReadOnly(); got != c.ro {
				t.Errorf("ReadOnly = %v, want %v", got, c.ro)
			}
			if c.msg != "" && !strings.Contains(d.Message, c.msg) {
				t.Errorf("message %q does not contain %q", d.Message, c.msg)
			}
			if d.Reason == "" {
				t.Errorf("empty reason")
			}
		})
	}
}
