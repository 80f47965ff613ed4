package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/permission/shell"
	"github.com/wardenhq/warden/tools"
)

// ExampleOptions say where the examples of a policy's rules are checked.
type ExampleOptions struct {
	// Workdir is the workspace relative paths resolve against, those of
	// path rules (Edit(src/**)) and of path examples alike; "" is the
	// current directory.
	Workdir string
	// Home is the home directory ~ resolves to in Bash examples; ""
	// leaves it unknown.
	Home string
	// Tools are the tools the rules name (nil: Builtins). A content
	// rule of any other tool (an MCP tool) matches none of its examples;
	// one of a tool here without a content matcher fails its examples
	// with an *UnmatchableRuleError's message.
	Tools []tools.Tool
}

// ExampleResult is one example of one rule, checked.
type ExampleResult struct {
	// List and Index place the rule: allow, ask, deny or
	// dangerous_commands, and its 1-based position there.
	List  string `json:"list"`
	Index int    `json:"index"`
	Rule  string `json:"rule"`
	// Example is the call: a command, a path or a JSON input.
	Example string `json:"example"`
	// Want is true for a match example and false for a not_match one;
	// Matched is what the rule did.
	Want    bool `json:"want_match"`
	Matched bool `json:"matched"`
	// Err says why the example could not be checked (a bad rule, an
	// input that is not JSON).
	Err string `json:"error,omitempty"`
}

// OK reports whether the rule did what the example says.
func (r ExampleResult) OK() bool { return r.Err == "" && r.Matched == r.Want }

// String describes a failing (or passing) example the way a load error
// names it: the list, the rule and the example.
func (r ExampleResult) String() string {
	kind := "match"
	if !r.Want {
		kind = "not_match"
	}
	switch {
	case r.Err != "":
		return fmt.Sprintf("%s rule %d %s: %s example %q: %s", r.List, r.Index, r.Rule, kind, r.Example, r.Err)
	case r.Want && !r.Matched:
		return fmt.Sprintf("%s rule %d %s: match example %q does not match", r.List, r.Index, r.Rule, r.Example)
	case !r.Want && r.Matched:
		return fmt.Sprintf("%s rule %d %s: not_match example %q matches", r.List, r.Index, r.Rule, r.Example)
	}
	verb := "matches"
	if !r.Matched {
		verb = "does not match"
	}
	return fmt.Sprintf("%s rule %d %s %s %q", r.List, r.Index, r.Rule, verb, r.Example)
}

// ExampleError is the error of a policy whose examples fail: it names
// every failing rule and example.
type ExampleError struct {
	Failed []ExampleResult
}

// Error names each failing example: its list, the rule's position, the
// rule and the example.
func (e *ExampleError) Error() string {
	lines := make([]string, len(e.Failed))
	for i, r := range e.Failed {
		lines[i] = r.String()
	}
	return fmt.Sprintf("%d rule example(s) fail: %s", len(e.Failed), strings.Join(lines, "; "))
}

// TestExamples checks every example of p's rules (p.Examples, the
// rules written in the long form) and returns the results in the
// policy's order. A rule matches an example the way the engine matches
// it in its list: Bash rules per simple command, strictly for allow
// rules (every command must match or only read), loosely for ask and
// deny rules (any command behind a wrapper or in a script); path rules
// on the cleaned absolute path; dangerous_commands patterns as deny
// rules of Bash. The error is for a policy that does not parse.
func TestExamples(ctx context.Context, p permission.Policy, o ExampleOptions) ([]ExampleResult, error) {
	pc, err := p.Context()
	if err != nil {
		return nil, err
	}
	wd := o.Workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("examples: workdir: %w", err)
		}
	}
	if wd, err = filepath.Abs(wd); err != nil {
		return nil, fmt.Errorf("examples: workdir: %w", err)
	}
	ts := o.Tools
	if ts == nil {
		ts = tools.Builtins()
	}
	var out []ExampleResult
	for _, ex := range p.Examples {
		for _, want := range []bool{true, false} {
			list := ex.Match
			if !want {
				list = ex.NotMatch
			}
			for _, call := range list {
				r := ExampleResult{List: ex.List, Index: ex.Index, Rule: ex.Rule, Example: call, Want: want}
				m, err := matchExample(ctx, ts, &pc, wd, o.Home, ex, call)
				if err != nil {
					r.Err = err.Error()
				}
				r.Matched = m
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// CheckExamples is TestExamples as a policy loads: nil when every
// example holds, an *ExampleError naming the failing ones otherwise.
func CheckExamples(ctx context.Context, p permission.Policy, o ExampleOptions) error {
	rs, err := TestExamples(ctx, p, o)
	if err != nil {
		return err
	}
	var bad []ExampleResult
	for _, r := range rs {
		if !r.OK() {
			bad = append(bad, r)
		}
	}
	if len(bad) > 0 {
		return &ExampleError{Failed: bad}
	}
	return nil
}

// pathExampleInput is the input of a path tool's call on the path p
// (false for a tool that takes no path).
func pathExampleInput(tool, p string) (json.RawMessage, bool) {
	var in any
	switch tool {
	case "Read":
		in = map[string]string{"file_path": p}
	case "Write":
		in = map[string]string{"file_path": p, "content": ""}
	case "Edit":
		in = map[string]string{"file_path": p, "old_string": "a", "new_string": "b"}
	case "Glob":
		in = map[string]string{"pattern": p}
	case "Grep":
		in = map[string]string{"pattern": "x", "path": p}
	default:
		return nil, false
	}
	b, _ := json.Marshal(in)
	return b, true
}

// matchExample reports whether the rule of ex matches the example call.
func matchExample(ctx context.Context, ts []tools.Tool, pc *permission.Context, wd, home string, ex permission.RuleExamples, call string) (bool, error) {
	bt := bind(nil, &tools.Env{Workdir: wd, Permission: pc, Home: cleanHome(home), Memo: &tools.Memo{}}) // the tool is set below
	if ex.List == permission.ListDangerousCommands {
		a := shell.Analyze(call, tools.ShellConfig(bt.env))
		return a.MatchRule(ex.Rule, permission.Deny), nil
	}
	b := permission.Behavior(ex.List)
	r, err := permission.ParseRule(ex.Rule, b)
	if err != nil {
		return false, err
	}
	var input json.RawMessage
	trimmed := strings.TrimSpace(call)
	switch {
	case r.Tool == "Bash":
		input, _ = json.Marshal(tools.BashInput{Command: call})
	case strings.HasPrefix(trimmed, "{"):
		if !json.Valid([]byte(trimmed)) {
			return false, fmt.Errorf("not valid JSON input")
		}
		input = json.RawMessage(trimmed)
	default:
		var ok bool
		if input, ok = pathExampleInput(r.Tool, call); !ok {
			return false, fmt.Errorf("an example of %s is its JSON input, e.g. {\"name\": \"x\"}", r.Tool)
		}
	}
	if r.Content == "" {
		return true, nil
	}
	for _, x := range ts {
		if x.Info().Name == r.Tool {
			bt.t = x
			break
		}
	}
	if bt.t == nil {
		return false, nil // matched by name only, as a tool without a matcher
	}
	ok, err := bt.MatchRule(permission.WithRuleBehavior(ctx, b), r.Content, input)
	if err != nil {
		return false, fmt.Errorf("match: %w", err)
	}
	return ok, nil
}
