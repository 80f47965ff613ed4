package decide

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// CheckRequest asks for the verdict on one call of a built-in tool, on
// the local machine: one line of "starter permission check --jsonl".
type CheckRequest struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// Mode, when set, replaces the base context's mode.
	Mode permission.Mode `json:"mode,omitempty"`
	// Workdirs, when set, replace CheckOptions.Workdirs; the first is the
	// workspace.
	Workdirs []string `json:"workdirs,omitempty"`
	// Rules are added to the base context's (source "request").
	Rules struct {
		Allow []string `json:"allow,omitempty"`
		Ask   []string `json:"ask,omitempty"`
		Deny  []string `json:"deny,omitempty"`
	} `json:"rules"`
}

// CheckOptions are what every request of a check extends.
type CheckOptions struct {
	// Base is the permission context (policy and mode) requests start from.
	Base permission.Context
	// Workdirs are the working directories of a request that names none;
	// the first is the workspace. Empty: the current directory.
	Workdirs []string
	// Home is the home directory ~ resolves to; "" is the current user's,
	// as on the local backend.
	Home string
	// Unsandboxed says the local backend runs without its sandbox
	// (backend.local.sandbox: off); the profile then says so, and
	// sandbox.auto_allow cannot apply.
	Unsandboxed bool
	// ToolNetwork gives the network grant of the worker's settings for a
	// tool (tools.NAME.network, network_hosts: SettingsNetwork); nil:
	// none.
	ToolNetwork func(tool string) *permission.NetworkGrant
	// Limits are the local backend's limits a call is recorded with (nil:
	// none, or the sandbox is off).
	Limits *calls.Limits
	// Remembered are the remembered approvals a call may use (the live
	// policy store's, "permission check --live-policy"), for the turn
	// Turn at Now, as the worker's Prepare passes them.
	Remembered []calls.Remembered
	Turn       Turn
	Now        time.Time
	// State is the turn's tool state as the call would find it (an Edit
	// of a file read before); nil: unknown, and those checks are left to
	// the call.
	State *tools.State
	// Session is what the session's earlier calls touched, for the
	// session rules ("permission check --session", PlaySession); nil:
	// nothing yet.
	Session *permission.Touched
	// NoLinks decides every path as named, as a worker with
	// backend.local.sandbox_off: [links] does; otherwise the links of
	// the working directories are resolved on the local file system, as
	// the worker's local backend resolves them (Call.Links).
	NoLinks bool
}

// CheckResult is the verdict of Verdict (through VerdictOrAsk, as the
// worker applies it) on a CheckRequest.
type CheckResult struct {
	Tool         string   `json:"tool"`
	Behavior     string   `json:"behavior"`
	ReadOnly     bool     `json:"read_only"`
	Layer        string   `json:"layer"`
	Rule         string   `json:"rule,omitempty"`
	ToolCheck    string   `json:"tool_check"`
	BypassImmune bool     `json:"bypass_immune"`
	Reason       string   `json:"reason"`
	Message      string   `json:"message"`
	Suggestions  []string `json:"suggestions"`
	// Invalid is the schema or input error the model would read;
	// Behavior is then "invalid".
	Invalid     string          `json:"invalid,omitempty"`
	Mode        permission.Mode `json:"mode"`
	WorkingDirs []string        `json:"working_dirs,omitempty"`
	// Sandbox is how the call would run on the local backend
	// (Profile), and Profile the profile itself.
	Sandbox string         `json:"sandbox,omitempty"`
	Profile *calls.Sandbox `json:"profile,omitempty"`
	// Remembered is the remembered approval that allowed the call;
	// Quorum the distinct approvers it needs (QuorumRule: the quorum
	// rule that says so); RequireReason that every answer needs a reason.
	Remembered    string `json:"remembered,omitempty"`
	Quorum        int    `json:"quorum,omitempty"`
	QuorumRule    string `json:"quorum_rule,omitempty"`
	RequireReason bool   `json:"require_reason,omitempty"`
	// Touches are the legs the call would add to its session, Clears the
	// leg an approval of a session rule's ASK clears, WouldBe what the
	// log-only rules would decide (permission.Verdict).
	Touches []permission.Touch `json:"touches,omitempty"`
	Clears  permission.Leg     `json:"clears,omitempty"`
	WouldBe []permission.Would `json:"would_be,omitempty"`
	// Links are the symbolic links the call's paths lead through and
	// where they lead (Call.Links), as the decision saw them.
	Links permission.Links `json:"links,omitempty"`

	// toolDecision is the tool's own check, for Explain.
	toolDecision permission.Decision
}

// builtin is the built-in tool named name.
func builtin(name string) (tools.Tool, bool) {
	for _, t := range tools.Builtins() {
		if t.Info().Name == name {
			return t, true
		}
	}
	return nil, false
}

// Check decides one request on top of o, offline: the call is never run.
// Errors are those of the request itself (unknown tool or mode, input
// that is not JSON, a bad rule); an input the tool rejects is a result
// with Behavior "invalid".
func Check(ctx context.Context, req CheckRequest, o CheckOptions) (CheckResult, error) {
	t, ok := builtin(req.Tool)
	if !ok {
		return CheckResult{}, fmt.Errorf("unknown tool %q", req.Tool)
	}
	if len(bytes.TrimSpace(req.Input)) == 0 {
		return CheckResult{}, errors.New("missing input")
	}
	if !json.Valid(req.Input) {
		return CheckResult{}, errors.New("input is not valid JSON")
	}
	pc, err := req.policy(o.Base)
	if err != nil {
		return CheckResult{}, err
	}
	wd, err := checkWorkdirs(&pc, req.Workdirs, o.Workdirs)
	if err != nil {
		return CheckResult{}, err
	}
	home := o.Home
	if home == "" {
		// Resolved once here, outside the decision.
		home, _ = os.UserHomeDir()
	}
	call := Call{Tool: t, Input: req.Input, Workdir: wd, Home: home, Policy: &pc, Sandboxed: !o.Unsandboxed,
		Remembered: o.Remembered, Turn: o.Turn, Now: o.Now, State: o.State, Session: o.Session}
	if o.ToolNetwork != nil {
		call.ToolNetwork = o.ToolNetwork(t.Info().Name)
	}
	if !o.NoLinks {
		// Resolved here, outside the decision, on the local file system
		// (as the worker's local backend does); the parse is shared.
		call.Memo = &tools.Memo{}
		call.Links = backend.LocalLinks(call.Dirs(), LinkPaths(ctx, call))
	}
	v, invalid := VerdictOrAsk(ctx, call)
	if invalid != "" {
		return CheckResult{Tool: t.Info().Name, Behavior: "invalid", Invalid: invalid, Message: invalid,
			Suggestions: []string{}, Mode: pc.Mode, WorkingDirs: pc.WorkingDirs}, nil
	}
	res := CheckResult{
		Tool:         t.Info().Name,
		Behavior:     string(v.Behavior),
		ReadOnly:     v.ReadOnly,
		Layer:        string(v.Layer),
		ToolCheck:    string(v.Tool.Behavior),
		BypassImmune: v.BypassImmune,
		Reason:       v.Reason,
		Message:      v.Message,
		Suggestions:  []string{},
		Mode:         v.Mode,
		WorkingDirs:  v.WorkingDirs,
		toolDecision: v.Tool,
		Remembered:   v.Remembered, Quorum: v.Quorum, QuorumRule: v.QuorumRule, RequireReason: v.RequireReason,
		Touches: v.Touches, Clears: v.Clears, WouldBe: v.WouldBe,
		Links: call.Links,
	}
	prof := Profile(ctx, call, v)
	prof.Off = o.Unsandboxed
	if !o.Unsandboxed {
		prof.Limits = o.Limits
	}
	res.Profile, res.Sandbox = &prof, prof.String()
	if v.Rule != nil {
		res.Rule = v.Rule.String()
	}
	for _, s := range v.Suggestions {
		res.Suggestions = append(res.Suggestions, s.String())
	}
	return res, nil
}

// policy is base with the request's mode and rules (source "request")
// on top; base's rule lists are not changed.
func (req CheckRequest) policy(base permission.Context) (permission.Context, error) {
	pc := base
	pc.Allow = slices.Clone(base.Allow)
	pc.Ask = slices.Clone(base.Ask)
	pc.Deny = slices.Clone(base.Deny)
	if req.Mode != "" {
		if !permission.ValidMode(req.Mode) {
			return pc, fmt.Errorf("unknown mode %q", req.Mode)
		}
		pc.Mode = req.Mode
	}
	lists := []struct {
		b  permission.Behavior
		rs []string
	}{{permission.Allow, req.Rules.Allow}, {permission.Ask, req.Rules.Ask}, {permission.Deny, req.Rules.Deny}}
	for _, l := range lists {
		for _, s := range l.rs {
			r, err := permission.ParseRule(s, l.b)
			if err != nil {
				return pc, err
			}
			r.Source = "request"
			pc.AddRule(r)
		}
	}
	return pc, nil
}

// checkWorkdirs adds the request's working directories (else the
// options') to pc and returns the call's workdir: the first of them, or
// the current directory.
func checkWorkdirs(pc *permission.Context, reqDirs, defDirs []string) (string, error) {
	workdirs := defDirs
	if len(reqDirs) > 0 {
		workdirs = reqDirs
	}
	wd := ""
	if len(workdirs) > 0 {
		wd = workdirs[0]
	} else {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return "", fmt.Errorf("workdir: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return "", fmt.Errorf("workdir: %w", err)
	}
	for _, d := range workdirs {
		if a, err := filepath.Abs(d); err == nil {
			pc.WorkingDirs = append(pc.WorkingDirs, a)
		}
	}
	return wd, nil
}

// CheckJSONL reads one CheckRequest per non-blank line of in (unknown
// fields are errors) and writes one JSON line per request to out, in
// order: the CheckResult, or {"error": ...} for a request that could not
// be checked. It fails only when in cannot be read or out written.
func CheckJSONL(ctx context.Context, in io.Reader, out io.Writer, o CheckOptions) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		var req CheckRequest
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&req)
		if err == nil && dec.More() {
			err = errors.New("trailing data after request")
		}
		if err == nil {
			var res CheckResult
			if res, err = Check(ctx, req, o); err == nil {
				v = res
			}
		}
		if err != nil {
			v = map[string]string{"error": err.Error()}
		}
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read requests: %w", err)
	}
	return nil
}

// Explain writes r for a person: the decision, the layer that decided,
// why, the tool's own check and the suggested rules.
func (r CheckResult) Explain(w io.Writer) {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "Decision:    %s\n", strings.ToUpper(r.Behavior))
	if r.Invalid != "" {
		fmt.Fprintf(w, "Invalid:     %s\n", r.Invalid)
		return
	}
	fmt.Fprintf(w, "Decided by:  %s (layer: %s)\n", r.Reason, r.Layer)
	fmt.Fprintf(w, "Why:         %s\n", r.Message)
	if r.BypassImmune {
		fmt.Fprintf(w, "Safety:      bypass-immune (allow rules cannot override it)\n")
	}
	if r.Remembered != "" {
		fmt.Fprintf(w, "Remembered:  approval %s of the policy store\n", r.Remembered)
	}
	if r.Quorum > 0 {
		fmt.Fprintf(w, "Quorum:      %d distinct approvers (quorum rule %s)\n", r.Quorum, r.QuorumRule)
	}
	if r.RequireReason && (r.Behavior == string(permission.Ask) || r.Behavior == string(permission.Passthrough)) {
		fmt.Fprintf(w, "Reason:      every answer must give a reason\n")
	}
	for _, wb := range r.WouldBe {
		fmt.Fprintf(w, "Log-only:    %s\n", wb)
	}
	if r.Clears != "" {
		fmt.Fprintf(w, "Session:     an allow clears the %s leg for the rest of the session\n", r.Clears)
	}
	for _, t := range r.Touches {
		fmt.Fprintf(w, "Touches:     %s: %s\n", t.Leg, t.What)
	}
	for _, p := range slices.Sorted(maps.Keys(r.Links)) {
		to := r.Links[p]
		if to == "" {
			to = "? (cannot be followed)"
		}
		fmt.Fprintf(w, "Link:        %s -> %s\n", p, to)
	}
	fmt.Fprintf(w, "Tool:        %s (mode %s)\n", r.Tool, r.Mode)
	if len(r.WorkingDirs) > 0 {
		fmt.Fprintf(w, "Directories: %s\n", strings.Join(r.WorkingDirs, ", "))
	}
	fmt.Fprintf(w, "Read-only:   %s\n", yes(r.ReadOnly))
	if r.Sandbox != "" && r.Behavior != string(permission.Deny) {
		fmt.Fprintf(w, "Sandbox:     %s\n", r.Sandbox)
	}
	tc := r.ToolCheck
	if r.toolDecision.BypassImmune {
		tc += " (safety)"
	}
	if r.toolDecision.Message != "" {
		tc += ": " + r.toolDecision.Message
	}
	fmt.Fprintf(w, "Tool check:  %s\n", tc)
	if len(r.Suggestions) == 0 {
		fmt.Fprintf(w, "Suggestions: none\n")
		return
	}
	fmt.Fprintf(w, "Suggestions: %s\n", strings.Join(r.Suggestions, ", "))
}

// PlaySession decides a session's earlier calls (one CheckRequest per
// non-blank line of in) in order, each against what the calls before it
// touched, and returns what they touched: the Session of the check that
// follows. A call is taken to have run unless it is denied or invalid
// (an ask was approved), so it adds its touches, and an approval of a
// session rule's ask clears its leg, as in a turn. The calls are named
// p1, p2, ... in the reasons.
func PlaySession(ctx context.Context, in io.Reader, o CheckOptions) (*permission.Touched, error) {
	touched := &permission.Touched{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		var req CheckRequest
		if err := json.Unmarshal(line, &req); err != nil {
			return nil, fmt.Errorf("session call %d: %w", n, err)
		}
		po := o
		po.Session = touched
		po.Turn.CallID = fmt.Sprintf("p%d", n)
		res, err := Check(ctx, req, po)
		if err != nil {
			return nil, fmt.Errorf("session call %d: %w", n, err)
		}
		if res.Behavior == string(permission.Deny) || res.Invalid != "" {
			continue
		}
		if res.Clears != "" {
			touched.Clear(res.Clears, po.Turn.CallID, "")
		}
		touched.Add(res.Touches...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return touched, nil
}
