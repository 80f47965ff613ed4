package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

type weatherIn struct {
	City  string `json:"city" jsonschema:"description=City name"`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
	Days  int    `json:"days" jsonschema:"minimum=1,maximum=7"`
}

type weatherOut struct {
	Summary string `json:"summary"`
}

func TestFunc(t *testing.T) {
	t.Parallel()
	tool, err := Func("weather", "Get the forecast.", func(_ context.Context, in weatherIn) (weatherOut, error) {
		switch in.City {
		case "boom":
			panic("kaboom")
		case "fail":
			return weatherOut{}, errors.New("no station")
		}
		return weatherOut{Summary: in.City + " sunny"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	info := tool.Info()
	var schema map[string]any
	if err := json.Unmarshal(info.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	props := schema["properties"].(map[string]any)
	if d := props["city"].(map[string]any)["description"]; d != "City name" {
		t.Errorf("description %v", d)
	}
	if _, ok := schema["$schema"]; ok {
		t.Errorf("schema keeps $schema")
	}
	if info.ReadOnly || !info.ConcurrencySafe {
		t.Errorf("defaults: %+v", info)
	}
	cases := []struct {
		input, want string
		isErr       bool
		validErr    string
	}{
		{`{"city":"Oslo","days":2}`, `{"summary":"Oslo sunny"}`, false, ""},
		{`{"city":"fail","days":2}`, "Error: no station", true, ""},
		{`{"city":"boom","days":2}`, "Error: tool weather panicked: kaboom", true, ""},
		{`{"city":"Oslo","days":9}`, "", false, "at '/days': maximum: got 9, want 7"},
		{`{"city":"Oslo","days":1,"units":"kelvin"}`, "", false, "at '/units': value must be one of 'metric', 'imperial'"},
		{`{"days":1}`, "", false, "missing property 'city'"},
	}
	for _, c := range cases {
		if err := Validate(info, json.RawMessage(c.input)); (err == nil) != (c.validErr == "") || (err != nil && !strings.Contains(err.Error(), c.validErr)) {
			t.Errorf("%s: validate %v, want %q", c.input, err, c.validErr)
		}
		if c.validErr != "" {
			continue
		}
		r, err := Collect(tool.Call(context.Background(), nil, json.RawMessage(c.input)))
		if err != nil || r.IsError != c.isErr || r.Content != c.want {
			t.Errorf("%s: got %q error=%v (%v), want %q", c.input, r.Content, r.IsError, err, c.want)
		}
	}
	d, _ := tool.(PermissionChecker).CheckPermissions(context.Background(), nil, nil, nil)
	if d.Behavior != permission.Ask || d.Message != FuncAskMessage || d.BypassImmune {
		t.Errorf("default decision %+v", d)
	}

	// Options.
	str, err := Func("echo", "Echo.", func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil },
		WithAllow(), WithReadOnly(true), WithConcurrencySafe(false), WithSchema(json.RawMessage(`{"type":"object"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if i := str.Info(); !i.ReadOnly || i.ConcurrencySafe || string(i.InputSchema) != `{"type":"object"}` {
		t.Errorf("options: %+v", i)
	}
	if d, _ := str.(PermissionChecker).CheckPermissions(context.Background(), nil, nil, nil); d.Behavior != permission.Allow {
		t.Errorf("WithAllow: %+v", d)
	}
	if r, _ := Collect(str.Call(context.Background(), nil, json.RawMessage(`{"S":"hi"}`))); r.Content != "hi" {
		t.Errorf("string out %q", r.Content)
	}
	// A cancelled context is an infrastructure error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow, _ := Func("slow", "", func(ctx context.Context, _ struct{}) (string, error) { return "", ctx.Err() })
	if _, err := Collect(slow.Call(ctx, nil, json.RawMessage(`{}`))); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Func("bad", "", func(context.Context, int) (string, error) { return "", nil }); err == nil {
		t.Errorf("non-struct input accepted")
	}
}
