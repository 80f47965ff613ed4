package decide

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// linkCall decides one call of the workspace /src/app (home /home/u)
// under mode and the allow rules, with links.
func linkCall(t *testing.T, tool tools.Tool, input string, mode permission.Mode, allow, deny []string, links permission.Links) permission.Verdict {
	t.Helper()
	pc, err := permission.Policy{Mode: mode, Allow: allow, Deny: deny}.Context()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verdict(context.Background(), Call{Tool: tool, Input: json.RawMessage(input), Workdir: "/src/app", Home: "/home/u",
		Policy: &pc, Links: links})
	if err != nil {
		t.Fatalf("%s %s: %v", tool.Info().Name, input, err)
	}
	return v
}

// TestLinksDecidedAsTarget: a path of the workspace that is a symbolic
// link (Call.Links) is decided as where it leads and as itself, the
// stricter winning, and the verdict names both; without the link (the
// control) the same call is an ordinary workspace call.
func TestLinksDecidedAsTarget(t *testing.T) {
	t.Parallel()
	out := permission.Links{"/src/app/notes/key": "/home/u/.ssh/authorized_keys"}
	dir := permission.Links{"/src/app/notes": "/home/u/.ssh"}
	inside := permission.Links{"/src/app/notes/readme": "/src/app/docs/readme"}
	env := permission.Links{"/src/app/notes/cfg": "/src/app/.env"}
	ci := permission.Links{"/src/app/notes/ci": "/src/app/.github/workflows/ci.yml"}
	unknown := permission.Links{"/src/app/notes/key": ""}
	const target = "/src/app/notes/key -> /home/u/.ssh/authorized_keys"
	write := `{"file_path":"/src/app/notes/key","content":"ssh-ed25519 AAAA attacker"}`
	edit := `{"file_path":"/src/app/notes/key","old_string":"a","new_string":"b"}`
	read := `{"file_path":"/src/app/notes/key"}`
	echo := []string{"Bash(echo:*)"}
	cases := []struct {
		name   string
		tool   tools.Tool
		input  string
		mode   permission.Mode
		allow  []string
		deny   []string
		links  permission.Links
		want   permission.Behavior
		layer  permission.Layer
		shows  string // in the message, when set
		reason string // in the reason, when set
	}{
		// A link out of the workspace: decided as the outside path.
		{"write out", tools.Write{}, write, permission.ModeAcceptEdits, nil, nil, out, permission.Ask, permission.LayerSafety, target, "through the link /src/app/notes/key"},
		{"write out, control", tools.Write{}, write, permission.ModeAcceptEdits, nil, nil, nil, permission.Allow, permission.LayerTool, "", ""},
		{"write out, dont_ask", tools.Write{}, write, permission.ModeDontAsk, nil, nil, out, permission.Deny, permission.LayerSafety, "", "through the link /src/app/notes/key"},
		{"write out, allow rule of the link", tools.Write{}, write, permission.ModeDefault, []string{"Write(notes/**)"}, nil, out, permission.Ask, permission.LayerSafety, target, ""},
		{"write out, deny rule of the target", tools.Write{}, write, permission.ModeAcceptEdits, nil, []string{"Write(/home/u/.ssh/**)"}, out, permission.Deny, permission.LayerTool, target, ""},
		{"write out, deny rule of the link", tools.Write{}, write, permission.ModeAcceptEdits, nil, []string{"Write(notes/**)"}, out, permission.Deny, permission.LayerDenyRule, "", ""},
		{"edit out", tools.Edit{}, edit, permission.ModeAcceptEdits, nil, nil, out, permission.Ask, permission.LayerSafety, target, ""},
		{"edit out, control", tools.Edit{}, edit, permission.ModeAcceptEdits, nil, nil, nil, permission.Allow, permission.LayerTool, "", ""},
		{"read out", tools.Read{}, read, permission.ModeDefault, nil, nil, out, permission.Ask, permission.LayerSafety, target, ""},
		{"read out, control", tools.Read{}, read, permission.ModeDefault, nil, nil, nil, permission.Allow, permission.LayerReadOnly, "", ""},
		{"cat out", tools.Bash{}, `{"command":"cat notes/key"}`, permission.ModeDefault, nil, nil, out, permission.Ask, permission.LayerSafety, target, ""},
		{"cat out, control", tools.Bash{}, `{"command":"cat notes/key"}`, permission.ModeDefault, nil, nil, nil, permission.Allow, permission.LayerReadOnly, "", ""},
		{"echo out", tools.Bash{}, `{"command":"echo x >> notes/key"}`, permission.ModeDefault, echo, nil, out, permission.Ask, permission.LayerSafety, target, ""},
		{"echo out, control", tools.Bash{}, `{"command":"echo x >> notes/key"}`, permission.ModeDefault, echo, nil, nil, permission.Allow, permission.LayerAllowRule, "", ""},
		{"echo out, accept_edits", tools.Bash{}, `{"command":"echo x > notes/key"}`, permission.ModeAcceptEdits, echo, nil, out, permission.Ask, permission.LayerSafety, target, ""},
		// A linked directory: what is below it leads below its target.
		{"cat below a linked directory", tools.Bash{}, `{"command":"cat notes/id_ed25519"}`, permission.ModeDefault, nil, nil, dir,
			permission.Ask, permission.LayerSafety, "/src/app/notes/id_ed25519 -> /home/u/.ssh/id_ed25519", ""},
		{"glob below a linked directory", tools.Bash{}, `{"command":"cat notes/*"}`, permission.ModeDefault, nil, nil, dir,
			permission.Ask, permission.LayerSafety, "/src/app/notes/* -> /home/u/.ssh/*", ""},
		{"grep a linked directory", tools.Grep{}, `{"pattern":"BEGIN","path":"/src/app/notes"}`, permission.ModeDefault, nil, nil, dir,
			permission.Ask, permission.LayerSafety, "/src/app/notes -> /home/u/.ssh", ""},
		// A link inside the workspace to an ordinary file: unchanged.
		{"write inside", tools.Write{}, `{"file_path":"/src/app/notes/readme","content":"x"}`, permission.ModeAcceptEdits, nil, nil, inside, permission.Allow, permission.LayerTool, "", ""},
		{"cat inside", tools.Bash{}, `{"command":"cat notes/readme"}`, permission.ModeDefault, nil, nil, inside, permission.Allow, permission.LayerReadOnly, "", ""},
		// A link to a sensitive file of the workspace: sensitive.
		{"read a link to .env", tools.Read{}, `{"file_path":"/src/app/notes/cfg"}`, permission.ModeDefault, nil, nil, env,
			permission.Ask, permission.LayerSafety, "/src/app/notes/cfg -> /src/app/.env", "sensitive path /src/app/.env"},
		// A link to a file the host runs later: a write asks as one.
		{"write a link to a CI workflow", tools.Write{}, `{"file_path":"/src/app/notes/ci","content":"x"}`, permission.ModeAcceptEdits, nil, nil, ci,
			permission.Ask, permission.LayerSafety, "/src/app/notes/ci -> /src/app/.github/workflows/ci.yml", "file the host runs later"},
		{"echo to a link to a CI workflow", tools.Bash{}, `{"command":"echo x > notes/ci"}`, permission.ModeAcceptEdits, echo, nil, ci,
			permission.Ask, permission.LayerSafety, "/src/app/notes/ci -> /src/app/.github/workflows/ci.yml", "file the host runs later"},
		{"read a link to a CI workflow", tools.Read{}, `{"file_path":"/src/app/notes/ci"}`, permission.ModeDefault, nil, nil, ci, permission.Allow, permission.LayerReadOnly, "", ""},
		// A link that cannot be followed asks.
		{"write an unknown link", tools.Write{}, write, permission.ModeAcceptEdits, nil, nil, unknown, permission.Ask, permission.LayerSafety, "target cannot be told", ""},
	}
	for _, c := range cases {
		v := linkCall(t, c.tool, c.input, c.mode, c.allow, c.deny, c.links)
		if v.Behavior != c.want || v.Layer != c.layer {
			t.Errorf("%s: %s by %s (%s: %s), want %s by %s", c.name, v.Behavior, v.Layer, v.Reason, v.Message, c.want, c.layer)
			continue
		}
		if c.shows != "" && !strings.Contains(v.Message, c.shows) {
			t.Errorf("%s: the message does not show %q: %s", c.name, c.shows, v.Message)
		}
		if c.reason != "" && !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: the reason does not say %q: %s", c.name, c.reason, v.Reason)
		}
		if c.links == nil && strings.Contains(v.Message, "->") {
			t.Errorf("%s: a call without links names one: %s", c.name, v.Message)
		}
	}
}

// TestLinkPaths: the paths a call names inside its working directories,
// which the worker resolves before deciding it; never a working
// directory itself nor a path outside.
func TestLinkPaths(t *testing.T) {
	t.Parallel()
	pc, err := permission.Policy{WorkingDirs: []string{"/data"}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool  tools.Tool
		input string
		want  []string
	}{
		{tools.Bash{}, `{"command":"cat a ../app/b /etc/hosts > /data/out; echo x >> notes/key; ls; cat src/*.go"}`,
			[]string{"/data/out", "/src/app/a", "/src/app/b", "/src/app/notes/key", "/src/app/src"}},
		{tools.Write{}, `{"file_path":"/src/app/notes/key","content":"x"}`, []string{"/src/app/notes/key"}},
		{tools.Read{}, `{"file_path":"/etc/passwd"}`, nil},
		{tools.Grep{}, `{"pattern":"x","path":"/src/app"}`, nil},
		{tools.Glob{}, `{"pattern":"notes/**/*.md"}`, []string{"/src/app/notes"}},
	} {
		got := LinkPaths(context.Background(), Call{Tool: c.tool, Input: json.RawMessage(c.input), Workdir: "/src/app", Policy: &pc})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.tool.Info().Name, c.input, got, c.want)
		}
	}
}

// TestCheckResolvesLocalLinks: "permission check" resolves the links of
// its working directories on the local file system, as the worker's
// local backend does, and with NoLinks (the worker's sandbox_off:
// [links]) decides the link as itself.
func TestCheckResolvesLocalLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(ws, "notes"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keys := filepath.Join(outside, "authorized_keys")
	if err := os.WriteFile(keys, []byte("ssh-ed25519 AAAA owner\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(keys, filepath.Join(ws, "notes", "key")); err != nil {
		t.Fatal(err)
	}
	pc, err := permission.Policy{Mode: permission.ModeAcceptEdits}.Context()
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(tools.WriteInput{FilePath: filepath.Join(ws, "notes", "key"), Content: "ssh-ed25519 AAAA attacker\n"})
	req := CheckRequest{Tool: "Write", Input: in}
	res, err := Check(context.Background(), req, CheckOptions{Base: pc, Workdirs: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	shown := filepath.Join(ws, "notes", "key") + " -> " + keys
	if res.Behavior != string(permission.Ask) || !strings.Contains(res.Message, shown) || res.Links[filepath.Join(ws, "notes", "key")] != keys {
		t.Errorf("a Write through a link out of the workspace: %s (%s), links %v; want an ask showing %q", res.Behavior, res.Message, res.Links, shown)
	}
	res, err = Check(context.Background(), req, CheckOptions{Base: pc, Workdirs: []string{ws}, NoLinks: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Behavior != string(permission.Allow) || len(res.Links) != 0 {
		t.Errorf("with NoLinks: %s (%s), links %v; want allowed as a workspace write", res.Behavior, res.Message, res.Links)
	}
}
