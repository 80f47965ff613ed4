package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Query selects the turns whose recorded calls are read.
type Query struct {
	// Since, when set, keeps the turns that ran at or after it (started,
	// closed or still running) and their verdicts not older than it.
	Since time.Time
	// Prefix, when set, keeps the turns whose workflow id starts with it.
	Prefix string
	// Parallel bounds the histories read at once (0: 8).
	Parallel int
}

// query is the visibility query of q.
func (q Query) query() (string, error) {
	parts := []string{fmt.Sprintf("WorkflowType = '%s'", workflows.TurnWorkflow)}
	if q.Prefix != "" {
		if strings.ContainsAny(q.Prefix, `'"\`) {
			return "", fmt.Errorf("workflow prefix %q: quotes and backslashes are not allowed", q.Prefix)
		}
		parts = append(parts, fmt.Sprintf("WorkflowId STARTS_WITH '%s'", q.Prefix))
	}
	if !q.Since.IsZero() {
		ts := q.Since.UTC().Format(time.RFC3339Nano)
		parts = append(parts, fmt.Sprintf("(StartTime >= '%s' OR CloseTime >= '%s' OR ExecutionStatus = 'Running')", ts, ts))
	}
	return strings.Join(parts, " AND "), nil
}

// turnIDs lists the workflow ids of the turns q selects, each once (a
// turn listed again on a later page is the same chain): the server's,
// then those only the namespace's archive still has.
func turnIDs(ctx context.Context, c tclient.Client, q Query) ([]string, error) {
	qs, err := q.query()
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: qs, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return nil, fmt.Errorf("list turns: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			if !seen[id] && strings.HasPrefix(id, q.Prefix) {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	archived, err := archivedTurnIDs(ctx, c, q.Since)
	if err != nil {
		return nil, err
	}
	for _, id := range archived {
		if !seen[id] && strings.HasPrefix(id, q.Prefix) {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// RecordedCalls lists the turns q selects and reads their histories
// (every run of each chain, q.Parallel at a time, stopping at the first
// that fails), as `starter audit` does, and returns the engine's
// verdicts on their calls (ExtractCalls), oldest first, and the number
// of turns read.
func RecordedCalls(ctx context.Context, c tclient.Client, q Query) ([]Decided, int, error) {
	per, err := readTurns(ctx, c, q, func(ctx context.Context, id string) ([]Decided, error) {
		runs, err := Chain(ctx, c, id)
		if err != nil {
			return nil, err
		}
		return ExtractCalls(id, runs)
	})
	if err != nil {
		return nil, 0, err
	}
	var out []Decided
	for _, ds := range per {
		for _, d := range ds {
			if q.Since.IsZero() || !d.Verdict.Time.Before(q.Since) {
				out = append(out, d)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Decided) int { return a.Verdict.Time.Compare(b.Verdict.Time) })
	return out, len(per), nil
}

// readTurns lists the turns q selects and reads each with read,
// q.Parallel at a time (8 by default), stopping at the first that
// fails; it returns what each turn gave, in the list's order.
func readTurns[T any](ctx context.Context, c tclient.Client, q Query, read func(context.Context, string) ([]T, error)) ([][]T, error) {
	ids, err := turnIDs(ctx, c, q)
	if err != nil {
		return nil, err
	}
	n := q.Parallel
	if n <= 0 {
		n = 8
	}
	per := make([][]T, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for i, id := range ids {
		if gctx.Err() != nil {
			break // a history failed, or ctx is done
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err // started as another failed
			}
			var err error
			per[i], err = read(gctx, id)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read histories: %w", err)
	}
	return per, nil
}

// WhatIfOptions are how recorded calls are re-decided.
type WhatIfOptions struct {
	// Policy is the proposed policy. Its rules (allow, ask, deny,
	// dangerous_commands) replace each turn's; each setting it sets
	// (mode, working_dirs, sensitive_paths, dangerous_files,
	// dangerous_dirs, sandbox) replaces the turn's, and those it leaves
	// unset keep the turn's recorded values. The rules a turn's
	// approvers added (always allow) before a call stay, as they do
	// under a live policy.
	Policy permission.Policy
	// Tools are the tools calls are decided with (nil: tools.Builtins).
	// A call of another tool (an MCP tool) is skipped.
	Tools []tools.Tool
	// Workdir is the workdir of a turn that recorded none (the worker's
	// default).
	Workdir string
	// Home is the backend home ~ resolves to ("" leaves it unknown:
	// ~ paths ask).
	Home string
	// Protected are the worker's protected paths, added to every
	// decision as the worker adds them.
	Protected []string
	// Workers bounds the decisions made at once (0: GOMAXPROCS).
	Workers int
	// ToolNetwork gives the network grant of the worker's settings for
	// a tool (tools.NAME.network, network_hosts: permission.SettingsNetwork),
	// which calls are decided and their connections replayed with; nil:
	// none.
	ToolNetwork func(tool string) *permission.NetworkGrant
}

// Change is a recorded call the proposed policy decides differently.
type Change struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	CallID     string    `json:"call_id"`
	Tool       string    `json:"tool"`
	// Kind is the recorded verdict's kind: permission, or edit (the
	// verdict on an approver's edited input).
	Kind  string          `json:"kind"`
	Input json.RawMessage `json:"input"`
	// Was and Now are the decisions (allow, ask, deny) recorded and
	// proposed; Change is "was→now".
	Was    string `json:"was"`
	Now    string `json:"now"`
	Change string `json:"change"`
	// WasReason and NowReason say what decided; WasRule and NowRule name
	// the rule, when a rule did.
	WasReason string `json:"was_reason,omitempty"`
	NowReason string `json:"now_reason,omitempty"`
	WasRule   string `json:"was_rule,omitempty"`
	NowRule   string `json:"now_rule,omitempty"`
	NowLayer  string `json:"now_layer,omitempty"`
	// Human is what a human (or the deadline) did with the recorded ASK:
	// "denied by dave: reason", "allowed by carol", "edited by carol",
	// "timed out (deny)", "waiting" (empty for calls nobody was asked).
	Human string `json:"human,omitempty"`
	// DeniedByHuman marks a change that would newly allow a call a human
	// once denied.
	DeniedByHuman bool `json:"denied_by_human,omitempty"`
}

// RuleChanges counts the changes of one rule: those it decides under the
// proposed policy and those it decided before.
type RuleChanges struct {
	Rule string `json:"rule"`
	Now  int    `json:"now"`
	Was  int    `json:"was"`
}

// WhatIf is the outcome of re-deciding recorded calls under a proposed
// policy.
type WhatIf struct {
	// Turns is the number of turns read; Calls the verdicts re-decided.
	Turns int `json:"turns"`
	Calls int `json:"calls"`
	// Skipped counts the verdicts not re-decided, by why (invalid calls,
	// tools unknown here).
	Skipped map[string]int `json:"skipped,omitempty"`
	// Unchanged counts the calls decided as recorded, by decision.
	Unchanged map[string]int `json:"unchanged"`
	// Changes are the calls decided differently, oldest first.
	Changes []Change `json:"changes"`
	// ByChange, ByTool and ByRule count the changes ("allow→ask": 3).
	ByChange map[string]int `json:"by_change"`
	ByTool   map[string]int `json:"by_tool"`
	ByRule   []RuleChanges  `json:"by_rule"`
	// DeniedByHuman counts the changes that would newly allow a call a
	// human once denied.
	DeniedByHuman int `json:"denied_by_human"`
	// Connections are the recorded connections the proposed policy
	// would let through or refuse otherwise than the egress proxy did
	// (or whose call it would not run), oldest first;
	// ConnectionsUnchanged counts the others.
	Connections          []ConnectionChange `json:"connections,omitempty"`
	ConnectionsUnchanged int                `json:"connections_unchanged,omitempty"`
	// LogOnly are the calls the proposal's log-only rules (enforce:
	// false) would decide otherwise, oldest first: shown, not applied.
	LogOnly []LogOnlyHit `json:"log_only,omitempty"`
	// Elapsed is the time the decisions took; PerSecond the calls
	// re-decided per second.
	Elapsed   time.Duration `json:"elapsed_ns"`
	PerSecond float64       `json:"calls_per_second"`
}

// LogOnlyHit is a recorded call a log-only rule of the proposal would
// decide otherwise: "would deny (log-only deny rule Bash(curl:*)): ...".
type LogOnlyHit struct {
	Time       time.Time       `json:"time"`
	WorkflowID string          `json:"workflow_id"`
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Would      []string        `json:"would"`
}

// Skip reasons (WhatIf.Skipped).
const (
	SkipInvalid     = "invalid when recorded (unknown tool, bad input)"
	SkipUnknownTool = "tool not known here (an MCP tool)"
	SkipUndecided   = "no decision recorded"
)

// Redecide re-decides each recorded call with decide.Verdict (through
// decide.VerdictOrAsk, as the worker does) under the proposed policy,
// its paths through the workspace links the worker recorded (Links), on
// o.Workers goroutines (the Bash analysis is most of the cost), and
// reports those decided differently. A call a remembered approval
// allowed is decided with that approval, as the worker decided it, and a
// quorum rule (the proposal's, else the turn's) makes its call ask.
func Redecide(ctx context.Context, calls []Decided, o WhatIfOptions) (WhatIf, error) {
	base, err := o.Policy.Context()
	if err != nil {
		return WhatIf{}, fmt.Errorf("proposed policy: %w", err)
	}
	ts := o.Tools
	if ts == nil {
		ts = tools.Builtins()
	}
	r := redecider{base: base, o: o, byName: map[string]tools.Tool{}, val: &tools.Validator{}}
	for _, t := range ts {
		r.byName[t.Info().Name] = t
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	res := make([]outcome, len(calls))
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(workers)
	if base.Session.On() {
		// The session rules decide a call against what the turn's
		// earlier calls touched: each turn's calls in order, turns in
		// parallel.
		var order []string
		byTurn := map[string][]int{}
		for i := range calls {
			id := calls[i].Verdict.WorkflowID
			if _, ok := byTurn[id]; !ok {
				order = append(order, id)
			}
			byTurn[id] = append(byTurn[id], i)
		}
		for _, id := range order {
			if ctx.Err() != nil {
				break
			}
			idx := byTurn[id]
			g.Go(func() error {
				touched := &permission.Touched{}
				for _, i := range idx {
					res[i] = r.redecide(ctx, &calls[i], touched)
				}
				return nil
			})
		}
	} else {
		for i := range calls {
			if ctx.Err() != nil {
				break
			}
			g.Go(func() error { res[i] = r.redecide(ctx, &calls[i], nil); return nil })
		}
	}
	_ = g.Wait() // the decisions return no error
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return WhatIf{}, fmt.Errorf("what-if: %w", err)
	}
	return summarize(res, elapsed), nil
}

// redecider re-decides recorded calls under the proposed policy base;
// Redecide's goroutines share it.
type redecider struct {
	base   permission.Context
	o      WhatIfOptions
	byName map[string]tools.Tool
	val    *tools.Validator
}

// outcome is what came of re-deciding one call: skipped (why), changed,
// or decided the same (the decision).
type outcome struct {
	skip  string
	ch    *Change
	same  string
	conns []connReplay
	// would are what the proposal's log-only rules would decide, for
	// the call d.
	would []string
	call  *Decided
}

// ran reports whether the recorded call ran: allowed, or asked and
// then allowed (an approval, an escalation that allowed, a re-check).
func ran(d *Decided) bool {
	if d.Verdict.Decision == string(permission.Allow) {
		return true
	}
	a := d.Answer
	return a != nil && (a.Decision == "allow" || a.Decision == "always_allow")
}

// redecide re-decides the recorded call d; touched (nil without session
// rules) is what the turn's calls before it touched, to which d adds
// its touches when it ran (as recorded) and the proposal would run it.
func (r *redecider) redecide(ctx context.Context, d *Decided, touched *permission.Touched) outcome {
	was := d.Verdict.Decision
	switch {
	case was == "invalid":
		return outcome{skip: SkipInvalid}
	case was != string(permission.Allow) && was != string(permission.Ask) && was != string(permission.Deny):
		return outcome{skip: SkipUndecided}
	}
	t, ok := r.byName[d.Verdict.Tool]
	if !ok {
		return outcome{skip: SkipUnknownTool}
	}
	now, reason, layer, rule, call, v := r.decide(ctx, t, d, touched)
	conns := r.replay(ctx, d, now, call, v)
	if touched != nil && ran(d) && now != "invalid" && now != string(permission.Deny) {
		if v.Clears != "" && d.Answer != nil {
			touched.Clear(v.Clears, d.Verdict.CallID, d.Answer.By)
		}
		touched.Add(v.Touches...)
	}
	var would []string
	for _, w := range v.WouldBe {
		would = append(would, w.String())
	}
	if now == was {
		return outcome{same: now, conns: conns, would: would, call: d}
	}
	ch := &Change{Time: d.Verdict.Time, WorkflowID: d.Verdict.WorkflowID, CallID: d.Verdict.CallID, Tool: d.Verdict.Tool,
		Kind: d.Verdict.Kind, Input: d.Input, Was: was, Now: now, Change: was + "→" + now,
		WasReason: d.Verdict.Reason, NowReason: reason, WasRule: ruleOf(d.Verdict.Reason), NowRule: rule, NowLayer: layer}
	ch.Human, ch.DeniedByHuman = human(d)
	ch.DeniedByHuman = ch.DeniedByHuman && now == string(permission.Allow)
	return outcome{ch: ch, conns: conns, would: would, call: d}
}

// replay replays the connections the call d made against the network
// the proposed policy gives it (decided now, as v, for call): each one
// the proposal would let through or refuse otherwise than the proxy did
// is a ConnectionChange; same counts the others.
func (r *redecider) replay(ctx context.Context, d *Decided, now string, call decide.Call, v permission.Verdict) []connReplay {
	if len(d.Connections) == 0 {
		return nil
	}
	var grants []permission.NetworkGrant
	runs := now == string(permission.Allow) || now == string(permission.Ask)
	if runs {
		grants = decide.Network(ctx, call, v)
	}
	out := make([]connReplay, 0, len(d.Connections))
	for _, c := range d.Connections {
		was := ConnectionRefused
		if c.Allowed {
			was = ConnectionAllowed
		}
		nowC, why := ConnectionRefused, "would be refused: "
		switch {
		case !runs:
			nowC, why = ConnectionNotMade, "would not be made: the call is "+now+" under the proposed policy"
		case len(grants) == 0:
			why += "the call has no network under the proposed policy"
		default:
			why += "no host of " + strings.Join(grantHostsOf(grants), ", ") + " lets " + hostPort(c) + " through"
			for _, g := range grants {
				if h := permission.HostAllows(g.Hosts, c.Host, c.Port, c.Addr); h != "" {
					nowC, why = ConnectionAllowed, "would be allowed by "+g.By+" (host "+h+")"
					break
				}
			}
		}
		if nowC == was {
			out = append(out, connReplay{})
			continue
		}
		out = append(out, connReplay{ch: &ConnectionChange{Time: d.Verdict.Time, WorkflowID: d.Verdict.WorkflowID,
			CallID: d.Verdict.CallID, Tool: d.Verdict.Tool, Connection: c.String(), Host: hostPort(c), Was: was, Now: nowC,
			Change: was + "→" + nowC, Why: why}})
	}
	return out
}

// ConnectionNotMade is a replayed connection whose call the proposed
// policy would not run.
const ConnectionNotMade = "not made"

// ConnectionChange is a recorded connection the proposed policy would
// decide differently than the egress proxy did.
type ConnectionChange struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	CallID     string    `json:"call_id"`
	Tool       string    `json:"tool"`
	// Connection is the recorded connection's line; Host its host:port.
	Connection string `json:"connection"`
	Host       string `json:"host"`
	// Was and Now are allowed, refused or (Now) not made; Change is
	// "was→now"; Why says what under the proposed policy would decide:
	// "would be allowed by sandbox.network_for rule Bash(npm
	// install:*) (host *.npmjs.org)", "would be refused: ...".
	Was    string `json:"was"`
	Now    string `json:"now"`
	Change string `json:"change"`
	Why    string `json:"why"`
}

// connReplay is one replayed connection: changed, or the same (nil).
type connReplay struct{ ch *ConnectionChange }

func hostPort(c calls.Connection) string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

func grantHostsOf(grants []permission.NetworkGrant) []string {
	var out []string
	for _, g := range grants {
		for _, h := range g.Hosts {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// decide decides d with t under the proposed policy and returns the
// decision ("invalid" for an input the tool rejects or a tool the turn
// did not enable), its reason, its layer and the rule that decided.
func (r *redecider) decide(ctx context.Context, t tools.Tool, d *Decided, touched *permission.Touched) (now, reason, layer, rule string, call decide.Call, v permission.Verdict) {
	pc := proposedContext(r.base, r.o, d)
	wd := d.Workdir
	if wd == "" {
		wd = r.o.Workdir
	}
	call = decide.Call{Tool: t, Input: d.Input, Workdir: wd, Home: r.o.Home, Policy: &pc,
		Validator: r.val, Sandboxed: d.Sandboxed, Now: d.Verdict.Time, Links: d.Links,
		Turn: decide.Turn{WorkflowID: d.Verdict.WorkflowID, Agent: d.Agent, CallID: d.Verdict.CallID}, Session: touched}
	if d.Remembered != nil {
		// The remembered approval that allowed the call, as the worker
		// read it from the store: the decision tries it as it did.
		call.Remembered = []calls.Remembered{*d.Remembered}
	}
	if r.o.ToolNetwork != nil {
		call.ToolNetwork = r.o.ToolNetwork(t.Info().Name)
	}
	invalid := ""
	if len(d.Tools) > 0 && !slices.Contains(d.Tools, t.Info().Name) {
		invalid = "the tool is not enabled in the turn"
	} else {
		v, invalid = decide.VerdictOrAsk(ctx, call)
	}
	now, reason, layer = string(v.Behavior), v.Reason, string(v.Layer)
	if v.Rule != nil {
		rule = v.Rule.String()
	}
	if invalid != "" {
		now, reason, layer = "invalid", invalid, "validation"
	}
	return now, reason, layer, rule, call, v
}

// summarize counts the outcomes of re-deciding calls, in the calls'
// order, that took elapsed.
func summarize(res []outcome, elapsed time.Duration) WhatIf {
	w := WhatIf{Unchanged: map[string]int{}, ByChange: map[string]int{}, ByTool: map[string]int{}, Changes: []Change{},
		ByRule: []RuleChanges{}, Elapsed: elapsed}
	rules := map[string]*RuleChanges{}
	rule := func(r string) *RuleChanges {
		if rules[r] == nil {
			rules[r] = &RuleChanges{Rule: r}
		}
		return rules[r]
	}
	for _, r := range res {
		if len(r.would) > 0 {
			w.LogOnly = append(w.LogOnly, LogOnlyHit{Time: r.call.Verdict.Time, WorkflowID: r.call.Verdict.WorkflowID,
				CallID: r.call.Verdict.CallID, Tool: r.call.Verdict.Tool, Input: r.call.Input, Would: r.would})
		}
		for _, c := range r.conns {
			if c.ch == nil {
				w.ConnectionsUnchanged++
			} else {
				w.Connections = append(w.Connections, *c.ch)
			}
		}
		switch {
		case r.skip != "":
			if w.Skipped == nil {
				w.Skipped = map[string]int{}
			}
			w.Skipped[r.skip]++
			continue
		case r.ch == nil:
			w.Unchanged[r.same]++
		default:
			c := *r.ch
			w.Changes = append(w.Changes, c)
			w.ByChange[c.Change]++
			w.ByTool[c.Tool]++
			if c.NowRule != "" {
				rule(c.NowRule).Now++
			}
			if c.WasRule != "" {
				rule(c.WasRule).Was++
			}
			if c.DeniedByHuman {
				w.DeniedByHuman++
			}
		}
		w.Calls++
	}
	for _, r := range rules {
		w.ByRule = append(w.ByRule, *r)
	}
	slices.SortFunc(w.ByRule, func(a, b RuleChanges) int {
		return cmp.Or(cmp.Compare(b.Now+b.Was, a.Now+a.Was), strings.Compare(a.Rule, b.Rule))
	})
	if s := elapsed.Seconds(); s > 0 {
		w.PerSecond = float64(w.Calls) / s
	}
	return w
}

// proposedContext is the policy a recorded call is re-decided under: the
// proposed policy's rules and settings, the turn's settings the proposal
// leaves unset, the rules the turn's approvers added, and the worker's
// protected paths.
func proposedContext(base permission.Context, o WhatIfOptions, d *Decided) permission.Context {
	pc := base
	p, turn := o.Policy, d.Policy
	if p.Mode == "" && turn.Mode != "" {
		pc.Mode = turn.Mode
	}
	if p.WorkingDirs == nil {
		pc.WorkingDirs = turn.WorkingDirs
	}
	if p.SensitivePaths == nil {
		pc.SensitivePaths = turn.SensitivePaths
	}
	if p.DangerousFiles == nil {
		pc.DangerousFiles = turn.DangerousFiles
	}
	if p.DangerousDirs == nil {
		pc.DangerousDirs = turn.DangerousDirs
	}
	if p.Sandbox == nil {
		pc.Sandbox = turn.Sandbox
	}
	if p.Quorum == nil {
		pc.Quorum, pc.RequireReason = turn.Quorum, pc.RequireReason || turn.RequireReason
	}
	pc.Protected = slices.Concat(turn.Protected, base.Protected, o.Protected)
	pc.Allow = slices.Concat(base.Allow, d.Session)
	return pc
}

// ruleOf names the rule a recorded reason says decided ("Rule: X", also
// inside a dont_ask conversion), or "".
func ruleOf(reason string) string {
	i := strings.LastIndex(reason, "Rule: ")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(reason[i+len("Rule: "):])
}

// human describes what came of a recorded ASK, and whether a human
// denied it.
func human(d *Decided) (string, bool) {
	a := d.Answer
	if d.Verdict.Decision != string(permission.Ask) {
		return "", false
	}
	if a == nil {
		return "waiting (or the turn ended first)", false
	}
	switch a.Kind {
	case KindApproval:
		by := a.By
		if by == "" {
			by = "an approver"
		}
		switch {
		case a.Decision == string(workflows.DecisionDeny):
			s := "denied by " + by
			if a.Reason != "" {
				s += ": " + a.Reason
			}
			return s, true
		case d.Verdict.Kind == KindEdit:
			return "edited by " + by + " (this input)", false
		case len(a.ApprovedInput) > 0 && string(a.ApprovedInput) != string(d.Input):
			return "edited by " + by, false
		case a.Decision == string(workflows.DecisionAlwaysAllow):
			return "always allowed by " + by, false
		}
		return "allowed by " + by, false
	case KindEscalation:
		return "deadline passed (" + a.Decision + ")", false
	case KindRecheck:
		return "allowed by a rule added later (" + ruleOf(a.Reason) + ")", false
	case KindLivePolicy:
		if a.Decision == string(permission.Deny) {
			return "denied by " + a.By + " (live policy)", false
		}
		return "released by " + a.By + " (live policy)", false
	}
	return a.Kind + " " + a.Decision, false
}
