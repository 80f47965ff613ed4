package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
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
	match           func(input json.RawMessage, content string) bool
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

// WithMatcher gives the tool a matcher for permission rules with
// content: the rule "name(content)" (allow, ask, deny or quorum) matches
// a call when match(input, content) is true, input being the call's JSON
// input as the engine decides it (after schema validation). Without
// WithMatcher or WithContentField only content-less rules ("name") match
// the tool's calls, and a policy with a content rule for it does not
// load (CheckRule). A deny rule is only as strict as match: match
// everything that means the same call (other spellings, other field
// orders).
func WithMatcher(match func(input json.RawMessage, content string) bool) FuncOption {
	return func(c *funcConfig) { c.match = match }
}

// WithContentField makes a rule's content match the input field named
// field (a top-level key of the JSON input): with
// WithContentField("id"), lookup_customer(42) matches the calls whose id
// is 42. A string field matches its text, a number matches a content
// that is the same number (42, 42.0 and 4.2e1 are one number), a bool
// true or false. A content ending in "*" matches every value whose text
// starts with what comes before it (lookup_customer(EU-*)). A call
// without the field, or with an object or array in it, matches no
// content rule. It replaces WithMatcher.
func WithContentField(field string) FuncOption {
	return func(c *funcConfig) { c.match = fieldMatcher(field) }
}

// fieldMatcher is WithContentField's matcher of field.
func fieldMatcher(field string) func(json.RawMessage, string) bool {
	return func(input json.RawMessage, content string) bool {
		d := json.NewDecoder(bytes.NewReader(input))
		d.UseNumber()
		var in map[string]any
		if d.Decode(&in) != nil {
			return false
		}
		var text string
		switch v := in[field].(type) {
		case string:
			text = v
		case bool:
			text = strconv.FormatBool(v)
		case json.Number:
			if prefix, ok := strings.CutSuffix(content, "*"); ok {
				return strings.HasPrefix(v.String(), prefix)
			}
			a, errA := strconv.ParseFloat(v.String(), 64)
			b, errB := strconv.ParseFloat(strings.TrimSpace(content), 64)
			return errA == nil && errB == nil && a == b
		default:
			return false
		}
		if prefix, ok := strings.CutSuffix(content, "*"); ok {
			return strings.HasPrefix(text, prefix)
		}
		return text == content
	}
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
// context, or an error marked with Retryable, is reported as an
// infrastructure error (the attempt fails and the activity's retry
// policy decides). fn reads its call's idempotency key and attempt with
// CallInfo(ctx).
//
// Permission rules for the tool are "name" (every call) or, with
// WithContentField or WithMatcher, "name(content)": without either a
// policy with a content rule for the tool does not load.
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
		match: cfg.match,
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
	match func(json.RawMessage, string) bool
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

// MatchRule implements RuleMatcher with the tool's matcher
// (WithMatcher, WithContentField); without one a content rule is an
// *UnmatchableRuleError, which the engine turns into a refusal (the
// call asks, naming the rule).
func (f *funcTool[In, Out]) MatchRule(ctx context.Context, _ *Env, content string, input json.RawMessage) (bool, error) {
	if content == "" {
		return true, nil
	}
	if f.match == nil {
		b, _ := permission.RuleBehaviorFrom(ctx)
		return false, &UnmatchableRuleError{Rule: permission.Rule{Tool: f.info.Name, Content: content, Behavior: b}, Why: noMatcher(f.info.Name, SourceFunction)}
	}
	return f.match(input, content), nil
}

// CheckRuleContent implements RuleContentChecker: content rules need a
// matcher.
func (f *funcTool[In, Out]) CheckRuleContent(string) error {
	if f.match == nil {
		return errors.New(noMatcher(f.info.Name, SourceFunction))
	}
	return nil
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
	case err != nil && (ctx.Err() != nil || isRetryable(err)):
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
