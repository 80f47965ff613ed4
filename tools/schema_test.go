package tools

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden schemas in testdata/schemas")

// TestSchemasGolden: every built-in's input schema means what the golden
// file in testdata/schemas says (compared as decoded JSON, so key order
// and spacing do not matter). Run with -update to rewrite the goldens.
func TestSchemasGolden(t *testing.T) {
	for _, tl := range Builtins() {
		info := tl.Info()
		file := filepath.Join("testdata", "schemas", info.Name+".json")
		if *update {
			var v any
			if err := json.Unmarshal(info.InputSchema, &v); err != nil {
				t.Fatalf("%s: %v", info.Name, err)
			}
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v (run with -update)", info.Name, err)
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatalf("%s golden: %v", info.Name, err)
		}
		if err := json.Unmarshal(info.InputSchema, &g); err != nil {
			t.Fatalf("%s schema: %v", info.Name, err)
		}
		if !reflect.DeepEqual(w, g) {
			got, _ := json.MarshalIndent(g, "", "  ")
			t.Errorf("%s: schema differs from %s:\n%s", info.Name, file, got)
		}
	}
}
