package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// errNoClient refuses live-policy work on a worker without a client.
var errNoClient = errors.New("this worker has no Temporal client (warden.Options.Client): it cannot follow a policy store")

// policyState reads the policy store's state. A store that does not
// exist (yet) has no rules and no remembered approvals: the turn's own
// policy applies, at version 0.
func (a *Activities) policyState(ctx context.Context, store string) (workflows.PolicyState, error) {
	if a.Client == nil {
		return workflows.PolicyState{}, errNoClient
	}
	v, err := a.Client.QueryWorkflow(ctx, store, "", workflows.QueryPolicy)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return workflows.PolicyState{}, nil
	}
	if err != nil {
		return workflows.PolicyState{}, fmt.Errorf("policy store %s: %w", store, err)
	}
	var st workflows.PolicyState
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("policy store %s: %w", store, err)
	}
	return st, nil
}

// livePolicy lays the store's live rules over the turn's policy: the
// store's allow, ask and deny rules replace the turn's own, except the
// rules the turn's approvers added (source "session").
func livePolicy(pc *permission.Context, st workflows.PolicyState) error {
	if st.Rules == nil {
		return nil
	}
	allow, ask, deny, err := st.Rules.Parse()
	if err != nil {
		return fmt.Errorf("policy store v%d: %w", st.Version, err)
	}
	session := func(rs []permission.Rule) []permission.Rule {
		var out []permission.Rule
		for _, r := range rs {
			if r.Source == "session" {
				out = append(out, r)
			}
		}
		return out
	}
	pc.Allow = append(allow, session(pc.Allow)...)
	pc.Ask = append(ask, session(pc.Ask)...)
	pc.Deny = append(deny, session(pc.Deny)...)
	return nil
}

// canonical is a JSON input with its keys sorted and no spaces, so equal
// inputs compare equal however they were written.
func canonical(in json.RawMessage) string {
	var v any
	if json.Unmarshal(in, &v) != nil {
		return string(in)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(in)
	}
	return string(b)
}

// remembered tries the store's remembered approvals on a call the policy
// asks about (never a deny, nor a safety check no allow rule silences):
// the first active one whose scope covers the turn and that allows the
// call decides it. A single-use approval is spent with the store (an
// Update, refused when another call spent it first). It returns the new
// verdict and the approval, or ok false.
func (a *Activities) remembered(ctx context.Context, in workflows.PrepareInput, st workflows.PolicyState, call decide.Call, base permission.Verdict) (permission.Verdict, *workflows.Remembered, error) {
	if base.Behavior != permission.Ask && base.Behavior != permission.Passthrough || base.BypassImmune {
		return base, nil, nil
	}
	key := in.WorkflowID + "/" + in.Call.ID
	now := time.Now()
	for _, r := range st.Remembered {
		if r.Tool != in.Call.Name || !r.Active(now, key) || !r.Applies(in.WorkflowID, in.Agent) {
			continue
		}
		v := base
		if r.Input != nil {
			// The exact input: never over an explicit ask rule.
			if canonical(r.Input) != canonical(in.Call.Input) || (base.Rule != nil && base.Rule.Behavior == permission.Ask) {
				continue
			}
			v.Decision = permission.Decision{Behavior: permission.Allow}
		} else {
			rule, err := permission.ParseRule(r.Rule, permission.Allow)
			if err != nil {
				continue
			}
			rule.Source = "remembered:" + r.ID
			pc := *call.Policy
			pc.Allow = append(slices.Clone(pc.Allow), rule)
			c := call
			c.Policy = &pc
			nv, invalid := decide.VerdictOrAsk(ctx, c)
			if invalid != "" || nv.Behavior != permission.Allow || nv.Rule == nil || nv.Rule.Source != rule.Source {
				continue
			}
			v = nv
		}
		if r.SingleUse && r.UsedBy != key {
			if err := a.spend(ctx, in.LivePolicy, r.ID, key); err != nil {
				continue
			}
		}
		what := r.Rule
		if what == "" {
			what = "exact input"
		}
		v.Decision.Reason = fmt.Sprintf("Remembered: %s by %s (%s scope): %s", r.ID, r.By, r.Scope, what)
		v.Decision.Suggestions = nil
		rc := r
		return v, &rc, nil
	}
	return base, nil, nil
}

// spend spends a single-use remembered approval for the call key.
func (a *Activities) spend(ctx context.Context, store, id, key string) error {
	h, err := a.Client.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID: store, UpdateName: workflows.UpdateUse, Args: []any{workflows.UseRequest{ID: id, Key: key}},
		WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("spend %s: %w", id, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("spend %s: %w", id, err)
	}
	return nil
}

// PolicyFanout tells the namespace's waiting turns that the policy store
// changed (SignalPolicyChanged): turns that follow that store re-decide
// their waiting calls, the others ignore it. It lists the waiting turns
// with the same visibility query as the pending listings.
func (a *Activities) PolicyFanout(ctx context.Context, in workflows.PolicyFanoutInput) error {
	if a.Client == nil {
		return errNoClient
	}
	q := "WorkflowType = '" + workflows.TurnWorkflow + "' AND ExecutionStatus = 'Running' AND " + workflows.SAPendingCalls + " IS NOT NULL"
	var token []byte
	for {
		resp, err := a.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return fmt.Errorf("list waiting turns: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			id := ex.GetExecution().GetWorkflowId()
			err := a.Client.SignalWorkflow(ctx, id, "", workflows.SignalPolicyChanged, workflows.PolicyNotice(in))
			var nf *serviceerror.NotFound
			if err != nil && !errors.As(err, &nf) {
				return fmt.Errorf("signal %s: %w", id, err)
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return nil
		}
	}
}

// CheckRules is workflows.ActivityCheckRules: it refuses live rules that
// do not parse, or that name a tool of this worker's registry with
// content the tool cannot match (decide.CheckRules), with a
// non-retryable workflows.ErrTypeUnmatchableRule error naming each such
// rule and its tool. Rules of tools this worker does not know pass.
func (a *Activities) CheckRules(_ context.Context, r workflows.LiveRules) error {
	allow, ask, deny, err := r.Parse()
	if err == nil {
		err = decide.CheckRules(a.Tools.Get, permission.Context{Allow: allow, Ask: ask, Deny: deny})
	}
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeUnmatchableRule, nil)
	}
	return nil
}
