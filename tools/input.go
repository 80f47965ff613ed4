package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// InputError is an input a tool rejects without running it: a decode
// failure or a check of the input (and, where the decision has it, of
// the turn's state) that fails. Its message is the tool error the model
// reads; decide.Verdict returns it (wrapped) so that such a call is never put to
// a human for approval.
type InputError struct {
	Tool    string
	Message string
}

// Error implements error: the message the model reads.
func (e *InputError) Error() string { return e.Message }

// InputChecker is a tool's check of an input beyond its JSON schema, run
// by decide.Verdict after schema validation and before the permission decision.
// It must do no I/O; env.State is the turn's state when the caller of
// decide.Verdict passed one, else nil. A non-nil error (an *InputError, whose
// message the model reads) makes the call an invalid input: it is never
// asked about.
type InputChecker interface {
	CheckInput(ctx context.Context, env *Env, input json.RawMessage) error
}

// checked is an input struct with checks its schema cannot express; check
// returns the message the model reads, or "".
type checked interface {
	check() string
}

// decodeInput is the one decode helper of the built-in tools: it decodes
// input into In; a malformed input is an *InputError "Invalid input for
// TOOL: ...". The permission methods use it as is (they handle any path
// lexically); Call and CheckInput go through parseInput.
func decodeInput[In any](tool string, input json.RawMessage) (In, error) {
	var in In
	if err := json.Unmarshal(input, &in); err != nil {
		return in, &InputError{Tool: tool, Message: fmt.Sprintf("Invalid input for %s: %v", tool, err)}
	}
	return in, nil
}

// parseInput is decodeInput followed by In's check, when it has one: a
// failed check is an *InputError with the check's message.
func parseInput[In any](tool string, input json.RawMessage) (In, error) {
	in, err := decodeInput[In](tool, input)
	if err != nil {
		return in, err
	}
	if c, ok := any(in).(checked); ok {
		if msg := c.check(); msg != "" {
			return in, &InputError{Tool: tool, Message: msg}
		}
	}
	return in, nil
}

// checkInput is CheckInput for a tool whose checks are all in its input
// struct.
func checkInput[In any](tool string, input json.RawMessage) error {
	_, err := parseInput[In](tool, input)
	return err
}

// invalid returns the stream of an input error: the tool error the model
// reads.
func invalid(err error) Stream {
	var ie *InputError
	if errors.As(err, &ie) {
		return Errorf("%s", ie.Message)
	}
	return Errorf("%v", err)
}

// builtinSchema returns a function that derives a built-in's input
// schema from its input struct, as Func does for function tools, once:
// deriving it takes a few hundred microseconds and Info is called on
// every decision. The input types are fixed structs (TestSchemasGolden
// derives every one), so a failure is a programming error.
func builtinSchema[In any]() func() json.RawMessage {
	return sync.OnceValue(func() json.RawMessage {
		s, err := schemaFor[In]()
		if err != nil {
			panic(fmt.Sprintf("tools: built-in schema: %v", err))
		}
		return s
	})
}
