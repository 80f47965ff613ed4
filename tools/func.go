package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/wardenhq/warden/permission"
)

// FuncOption configures a function tool made by Func.
type FuncOption func(*funcConfig)

type funcConfig struct {
	schema          json.RawMessage
	readOnly        bool
	concurrencySafe bool
	allow           bool
}

// WithSchema sets the input schema instead of deriving it from In.
func WithSchema(schema json.RawMessage) FuncOption {
	return func(c *funcConfig) { c.schema = schema }
}

// WithReadOnly sets the tool's read-only flag (default false).
func WithReadOnly(readOnly bool) FuncOption {
	return func(c *funcConfig) { c.readOnly = readOnly }
}

// WithConcurrencySafe sets whether calls may run in parallel (default
// true).
func WithConcurrencySafe(safe bool) FuncOption {
	return func(c *funcConfig) { c.concurrencySafe = safe }
}

// WithAllow makes the tool's own permission check ALLOW instead of the
// default non-safety ASK.
func WithAllow() FuncOption {
	return func(c *funcConfig) { c.allow = true }
}

// FuncAskMessage is the message of a function tool's default ASK.
const FuncAskMessage = "Custom function tools must be explicitly allowed by the user."

// Func wraps a typed Go function as a tool. In must be a struct (or a
// pointer to one); its JSON schema is derived from its fields: json tags
// name them, fields without omitempty are required, and jsonschema tags
// add descriptions, enums and ranges, e.g.
//
//	City  string `json:"city" jsonschema:"description=City name"`
//	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
//	Days  int    `json:"days" jsonschema:"minimum=1,maximum=7"`
//
// A string Out is returned as text, a Chunk as is, anything else as JSON.
// An error from fn, or a panic in it, becomes an error chunk; a cancelled
// context is reported as an infrastructure error.
func Func[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...FuncOption) (Tool, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("tools: function tool with empty name")
	}
	if fn == nil {
		return nil, fmt.Errorf("tools: function tool %q: nil function", name)
	}
	cfg := funcConfig{concurrencySafe: true}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.schema == nil {
		s, err := schemaFor[In]()
		if err != nil {
			return nil, fmt.Errorf("tools: function tool %q: %w", name, err)
		}
		cfg.schema = s
	} else if !json.Valid(cfg.schema) {
		return nil, fmt.Errorf("tools: function tool %q: schema is not valid JSON", name)
	}
	return &funcTool[In, Out]{
		info: Info{
			Name: name, Description: description, InputSchema: cfg.schema,
			ReadOnly: cfg.readOnly, ConcurrencySafe: cfg.concurrencySafe,
		},
		fn:    fn,
		allow: cfg.allow,
	}, nil
}

// schemaFor derives the JSON schema of a struct type.
func schemaFor[In any]() (json.RawMessage, error) {
	t := reflect.TypeFor[In]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("input type %s is not a struct", t)
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	s := r.ReflectFromType(t)
	s.Version = "" // models reject "$schema"
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("marshal schema of %s: %w", t, err)
	}
	return b, nil
}

type funcTool[In, Out any] struct {
	info  Info
	fn    func(context.Context, In) (Out, error)
	allow bool
}

// Info implements Tool.
func (f *funcTool[In, Out]) Info() Info { return f.info }

// Source implements Sourcer.
func (f *funcTool[In, Out]) Source() string { return SourceFunction }

// CheckPermissions implements PermissionChecker.
func (f *funcTool[In, Out]) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	if f.allow {
		return permission.Decision{Behavior: permission.Allow}, nil
	}
	return permission.Decision{Behavior: permission.Ask, Message: FuncAskMessage}, nil
}

// Call implements Tool.
func (f *funcTool[In, Out]) Call(ctx context.Context, _ *Env, input json.RawMessage) Stream {
	var in In
	if len(input) > 0 && string(input) != "null" {
		var err error
		if in, err = decodeInput[In](f.info.Name, input); err != nil {
			return invalid(err)
		}
	}
	out, err, panicked := f.run(ctx, in)
	switch {
	case panicked:
		return Errorf("Error: tool %s panicked: %v", f.info.Name, err)
	case err != nil && ctx.Err() != nil:
		return Fail(fmt.Errorf("%s: %w", f.info.Name, err))
	case err != nil:
		return Errorf("Error: %v", err)
	}
	switch v := any(out).(type) {
	case string:
		return Single(Chunk{Text: v})
	case Chunk:
		return Single(v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Errorf("Error: cannot encode the result of %s: %v", f.info.Name, err)
	}
	return Single(Chunk{Text: string(b)})
}

// run calls fn, turning a panic into an error.
func (f *funcTool[In, Out]) run(ctx context.Context, in In) (out Out, err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			err, panicked = fmt.Errorf("%v", v), true
		}
	}()
	out, err = f.fn(ctx, in)
	return out, err, false
}
