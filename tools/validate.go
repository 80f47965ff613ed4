package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ValidationError is an input that does not match a tool's schema. Its
// message tells the model which fields are wrong.
type ValidationError struct {
	Tool string
	// Problems are "at '/field': what is wrong" lines.
	Problems []string
}

// Error implements error.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("Input validation failed for tool '%s': %s", e.Tool, strings.Join(e.Problems, "; "))
}

// Validator checks tool inputs against their schemas, caching compiled
// schemas by tool name and schema text. It is safe for concurrent use;
// its zero value is ready.
type Validator struct {
	mu    sync.Mutex
	cache map[string]*jsonschema.Schema
}

// Validate checks input against info.InputSchema without caching; see
// Validator for repeated use. It returns a *ValidationError for a bad
// input and a plain error when the schema itself does not compile.
func Validate(info Info, input json.RawMessage) error {
	var v Validator
	return v.Validate(info, input)
}

// Validate checks input against info.InputSchema. It returns a
// *ValidationError for a bad input and a plain error when the schema
// itself does not compile. A tool without a schema accepts any JSON
// object.
func (v *Validator) Validate(info Info, input json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return &ValidationError{Tool: info.Name, Problems: []string{fmt.Sprintf("input is not valid JSON: %v", err)}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &ValidationError{Tool: info.Name, Problems: []string{fmt.Sprintf("at '': got %s, want object", jsonKind(inst))}}
	}
	if len(bytes.TrimSpace(info.InputSchema)) == 0 {
		return nil
	}
	sch, err := v.compiled(info)
	if err != nil {
		return err
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return &ValidationError{Tool: info.Name, Problems: problems(ve)}
	}
	return err
}

func (v *Validator) compiled(info Info) (*jsonschema.Schema, error) {
	key := info.Name + "\x00" + string(info.InputSchema)
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.cache[key]; ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(info.InputSchema))
	if err != nil {
		return nil, fmt.Errorf("tools: schema of %s: %w", info.Name, err)
	}
	c := jsonschema.NewCompiler()
	const loc = "tool-input.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("tools: schema of %s: %w", info.Name, err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("tools: schema of %s: %w", info.Name, err)
	}
	if v.cache == nil {
		v.cache = map[string]*jsonschema.Schema{}
	}
	v.cache[key] = s
	return s, nil
}

// problems flattens a validation error to its leaf causes, one line each.
func problems(ve *jsonschema.ValidationError) []string {
	p := message.NewPrinter(language.English)
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, fmt.Sprintf("at '%s': %s", pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(out) == 0 {
		out = append(out, ve.Error())
	}
	return out
}

// pointer renders an instance location as a JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}
