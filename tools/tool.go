// Package tools holds the tool contract, the registry and the built-in
// tools (one file each). A tool is described by Info, runs through Call,
// and may refine its permission behaviour by implementing the optional
// checker interfaces below; decide.Bind adapts it to the engine.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
)

// Info describes a tool (calls.Info).
type Info = calls.Info

// Tool is one capability the model can call.
type Tool interface {
	Info() Info
	// Call runs the tool. Failures the model should see are chunks with
	// IsError set; a yielded Go error means an infrastructure fault.
	Call(ctx context.Context, env *Env, input json.RawMessage) Stream
}

// Entry is a registered tool's description and source (calls.Entry).
type Entry = calls.Entry

// Sources of tools (Entry.Source).
const (
	// SourceBuiltin marks the tools of Builtins.
	SourceBuiltin = "builtin"
	// SourceFunction marks the tools Func makes.
	SourceFunction = "function"
	// SourceMCP prefixes the config name of the MCP server a tool comes
	// from: "mcp:NAME".
	SourceMCP = "mcp:"
	// SourceCustom is the source of a tool that does not say (a Tool
	// type of the embedding program's own).
	SourceCustom = "custom"
)

// Sourcer is a tool that says where it comes from (one of the Source
// constants); the constructor that builds a tool records it.
type Sourcer interface {
	Source() string
}

// SourceOf returns t's source: its Source method's answer, else
// SourceBuiltin for the types of Builtins, else SourceCustom.
func SourceOf(t Tool) string {
	if s, ok := t.(Sourcer); ok && s.Source() != "" {
		return s.Source()
	}
	switch t.(type) {
	case Bash, PowerShell, Read, Write, Edit, Glob, Grep, TaskCreate, TaskGet, TaskList, TaskUpdate, AskUser:
		return SourceBuiltin
	}
	return SourceCustom
}

// Stream is the sequence of chunks a call yields. Non-streaming tools
// yield one chunk.
type Stream = iter.Seq2[Chunk, error]

// Chunk is one piece of a call's output (calls.Chunk).
type Chunk = calls.Chunk

// DataBlock is a binary block, base64 in JSON (calls.DataBlock).
type DataBlock = calls.DataBlock

// Env is what a call runs against: its backend, its workspace and, for
// state-injected tools, the turn's state.
type Env struct {
	Backend backend.Backend
	// Workdir is the workspace directory inside the backend.
	Workdir string
	// State is the turn's tool state; the workflow owns it and passes it
	// to and from activities. It may be nil for stateless calls.
	State *State
	// Permission is the turn's policy, for tools that consult it.
	Permission *permission.Context
	// IdempotencyKey identifies this call across retries and workers
	// (workflow id + "/" + call id); side-effecting tools can use it to
	// avoid doing their work twice.
	IdempotencyKey string
	// Progress, when set, receives output while a tool runs (stream
	// "stdout" or "stderr"); the activity reports it as heartbeat details
	// so clients can show long commands live.
	Progress func(stream string, p []byte)

	// What a decision (package decide) binds a tool to, for its checker
	// methods; unset when the tool runs.

	// Home is the backend user's home directory, absolute and clean, as
	// resolved outside the decision; "" is unknown (~ paths ask).
	Home string
	// ToolNetwork is the network the worker's settings give every call
	// of the tool (tools.NAME.network, network_hosts); nil: none.
	ToolNetwork *permission.NetworkGrant
	// Memo holds what one decision computes once for its checker
	// methods (the analysis of a Bash command); nil: each method
	// computes it again.
	Memo *Memo
	// Links are where the call's paths inside the working directories
	// lead through symbolic links, resolved outside the decision
	// (backend.ResolveLinks): the path rules decide such a path as its
	// target and as itself. nil: none known.
	Links permission.Links
}

// Single returns a stream of one chunk.
func Single(c Chunk) Stream {
	return func(yield func(Chunk, error) bool) { yield(c, nil) }
}

// Errorf returns a stream of one error chunk the model can read.
func Errorf(format string, args ...any) Stream {
	return Single(Chunk{Text: fmt.Sprintf(format, args...), IsError: true})
}

// Fail returns a stream that yields an infrastructure error.
func Fail(err error) Stream {
	return func(yield func(Chunk, error) bool) { yield(Chunk{}, err) }
}

// PermissionChecker is a tool's own permission check (default: passthrough).
type PermissionChecker interface {
	CheckPermissions(ctx context.Context, env *Env, input json.RawMessage, pc *permission.Context) (permission.Decision, error)
}

// ReadOnlyChecker decides per input whether a call only reads
// (default: Info().ReadOnly).
type ReadOnlyChecker interface {
	CheckReadOnly(ctx context.Context, env *Env, input json.RawMessage) (bool, error)
}

// RuleMatcher matches a rule's content against a call. A tool without
// one matches only content-less rules ("Tool", which the engine handles
// itself): a policy with a content rule for it does not load
// (CheckRules), and a decision that meets one fails and asks. Function
// tools get a matcher with WithContentField or WithMatcher.
type RuleMatcher interface {
	MatchRule(ctx context.Context, env *Env, content string, input json.RawMessage) (bool, error)
}

// Suggester proposes allow rules for a call (default: the tool-level rule).
type Suggester interface {
	GenerateSuggestions(ctx context.Context, env *Env, input json.RawMessage) ([]permission.Rule, error)
}
