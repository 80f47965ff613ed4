package permission

import (
	"strings"
	"testing"
)

// TestRunsLater: the files the host runs later are dangerous by name,
// by path tail and by pattern, and only they (a README beside them, a
// .github file outside workflows, a .pth outside a venv's site-packages
// are not); a Write to one asks, bypass-immune, saying why, even in
// accept_edits inside the working directory; overriding the dangerous
// files (an empty list) turns them off like the spec's own.
func TestRunsLater(t *testing.T) {
	for p, want := range map[string]bool{
		"/w/.mcp.json": true, "/w/.claude/settings.json": true, "/w/.claude/commands/x.md": true,
		"/w/.github/workflows/ci.yml": true, "/w/.github/workflows": true, "/w/.github/ISSUE_TEMPLATE.md": false,
		"/w/.husky/pre-commit": true, "/w/.pre-commit-config.yaml": true, "/w/.gitattributes": true,
		"/w/.venv/pyvenv.cfg": true, "/w/.venv/bin/activate.fish": true, "/w/.venv/bin/python": false,
		"/w/.venv/lib/python3.12/site-packages/x.pth": true, "/usr/lib/python3/site-packages/y.pth": true,
		"/w/docs/notes.pth": false, "/w/tests/conftest.py": true, "/w/tests/test_x.py": false,
		"/w/.cargo/config.toml": true, "/w/.yarnrc.yml": true, "/w/.codex/config.toml": true,
		"/w/.cursor/mcp.json": true, "/w/.devcontainer/devcontainer.json": true, "/w/README.md": false,
		"/w/.MCP.JSON": true,
	} {
		if got := RunsLater(p); got != want {
			t.Errorf("RunsLater(%s) = %v, want %v", p, got, want)
		}
		if got := (&Context{}).DangerousPath(p); got != want {
			t.Errorf("DangerousPath(%s) = %v, want %v", p, got, want)
		}
	}
	ps := Paths{Workdir: "/w", Policy: &Context{Mode: ModeAcceptEdits, WorkingDirs: []string{"/w"}}}
	d, err := ps.CheckEdit("Write", ".mcp.json")
	if err != nil || d.Behavior != Ask || !d.BypassImmune || !strings.Contains(d.Reason, "runs later") || !strings.Contains(d.Message, "/w/.mcp.json") {
		t.Errorf("Write .mcp.json in accept_edits: %+v, %v", d, err)
	}
	d, err = ps.CheckEdit("Write", "src/main.go")
	if err != nil || d.Behavior != Allow {
		t.Errorf("Write src/main.go in accept_edits (the control): %+v, %v", d, err)
	}
	none := []string{}
	ps.Policy.DangerousFiles, ps.Policy.DangerousDirs = &none, &none
	if d, _ := ps.CheckEdit("Write", ".mcp.json"); d.Behavior != Allow {
		t.Errorf("with the dangerous lists emptied, Write .mcp.json: %+v", d)
	}
}
