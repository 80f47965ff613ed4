package tools

import (
	"context"
	"encoding/json"
	"testing"
)

// ownTool is a Tool of an embedding program's own type: it says nothing
// of its source.
type ownTool struct{}

func (ownTool) Info() Info { return Info{Name: "Own", External: true} }
func (ownTool) Call(context.Context, *Env, json.RawMessage) Stream {
	return Errorf("external")
}

// TestRegistryEntries: every tool is listed in registration order with
// its flags and where it comes from.
func TestRegistryEntries(t *testing.T) {
	t.Parallel()
	fn, err := Func("Lookup", "Look a key up.", func(context.Context, struct {
		Key string `json:"key"`
	}) (string, error) {
		return "", nil
	}, WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(append(Builtins(), fn, ownTool{})...)
	if err != nil {
		t.Fatal(err)
	}
	es := reg.Entries()
	names := reg.Names()
	if len(es) != len(names) {
		t.Fatalf("%d entries for %d tools", len(es), len(names))
	}
	for i, e := range es {
		if e.Name != names[i] {
			t.Errorf("entry %d is %s, want %s", i, e.Name, names[i])
		}
		want := SourceBuiltin
		switch e.Name {
		case "Lookup":
			want = SourceFunction
			if !e.ReadOnly || !e.ConcurrencySafe || e.External {
				t.Errorf("Lookup flags = %+v", e.Info)
			}
		case "Own":
			want = SourceCustom
			if !e.External {
				t.Errorf("Own flags = %+v", e.Info)
			}
		case "Read":
			if !e.ReadOnly || !e.ConcurrencySafe {
				t.Errorf("Read flags = %+v", e.Info)
			}
		}
		if e.Source != want {
			t.Errorf("source of %s = %q, want %q", e.Name, e.Source, want)
		}
	}
}

// TestEntryJSON: an entry's JSON is the Info's fields with "source"
// beside them.
func TestEntryJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Entry{Info: Info{Name: "Read", ReadOnly: true, InputSchema: json.RawMessage(`{}`)}, Source: SourceBuiltin})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"Read","description":"","input_schema":{},"read_only":true,"concurrency_safe":false,"external":false,"state_injected":false,"source":"builtin"}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}
