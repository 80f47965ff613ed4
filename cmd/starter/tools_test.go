package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/wardenhq/warden/tools"
)

// TestToolsListBuiltin: --builtin lists the built-ins without a server,
// as JSON entries and as a table with their source.
func TestToolsListBuiltin(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
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
	for _, re := range []string{`(?m)^local backend: `, `(?m)^NAME +SOURCE +READ-ONLY +CONCURRENT +EXTERNAL +STATE +DESCRIPTION$`,
		`(?m)^Read +builtin +true +true +false +true +\S`, `(?m)^AskUser +builtin +\w+ +\w+ +true `} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
}
