package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// TestToolsListBuiltin: --builtin lists the built-ins without a server,
// as JSON entries and as a table with their source.
func TestToolsListBuiltin(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("tools:\n  per_tool:\n    Bash: {network_hosts: [registry.npmjs.org]}\n    Grep: {network: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, newRoot(), "", "--config", cfg, "tools", "list", "--builtin", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var es []tools.Entry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(es) != len(tools.Builtins()) {
		t.Fatalf("%d tools, want %d", len(es), len(tools.Builtins()))
	}
	for _, e := range es {
		if e.Source != tools.SourceBuiltin || len(e.InputSchema) == 0 {
			t.Errorf("entry %s: source %q, schema %s", e.Name, e.Source, e.InputSchema)
		}
	}

	out, err = execute(t, newRoot(), "", "--config", cfg, "tools", "list", "--builtin")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, re := range []string{`(?m)^local backend: `, `(?m)^NAME +SOURCE +READ-ONLY +CONCURRENT +EXTERNAL +STATE +NETWORK +DESCRIPTION$`,
		`(?m)^Read +builtin +true +true +false +true +policy +\S`, `(?m)^AskUser +builtin +\w+ +\w+ +true `,
		`(?m)^Bash +builtin +false +false +false +false +registry\.npmjs\.org \(tools\.Bash\.network_hosts\) +\S`,
		`(?m)^Grep +builtin +\w+ +\w+ +\w+ +\w+ +any public host \(tools\.Grep\.network\) +\S`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
}

// TestBackendLines: the tools listing's header says the worker's
// sandbox state, OFF included, and its protected paths.
func TestBackendLines(t *testing.T) {
	got := backendLines([]workflows.BackendState{{Name: "docker"}, {Name: "local", Default: true, Sandbox: local.SandboxOff}}, []string{"/srv/data{,/**}"})
	for _, want := range []string{
		"backend docker: its own isolation\n",
		"backend local (default): sandbox OFF (backend.local.sandbox: off): tools run as the worker's user",
		"protected: /srv/data{,/**}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("header lacks %q:\n%s", want, got)
		}
	}
	if got := backendLines(nil, nil); !strings.Contains(got, "does not say") {
		t.Errorf("older worker: %q", got)
	}
}
