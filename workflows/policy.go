package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
)

// The namespace's live policy is a long-lived workflow (PolicyWorkflow)
// whose id names the policy store: it holds the live rules, their
// version, and the remembered approvals. A turn follows it when its
// TurnInput.LivePolicy names that id: every Prepare of the turn queries
// the store (QueryPolicy), so each verdict is decided under, and records,
// the store's version; and when the store changes it signals every
// waiting turn (SignalPolicyChanged, through the ActivityPolicyFanout
// activity), which re-decides its waiting calls.

// Names of the policy store's workflow, handlers and activity.
const (
	// PolicyWorkflow is the policy store's workflow type.
	PolicyWorkflow = "WardenPolicy"
	// DefaultPolicyStore is the workflow id of a namespace's policy
	// store when none is configured.
	DefaultPolicyStore = "warden-policy"
	// QueryPolicy returns the store's PolicyState.
	QueryPolicy = "policy"
	// UpdateSetPolicy replaces the live rules (a PolicyChange) and
	// returns the new version.
	UpdateSetPolicy = "set-policy"
	// UpdateRevoke revokes a remembered approval (a RevokeRequest).
	UpdateRevoke = "revoke"
	// UpdateUse spends a single-use remembered approval (a UseRequest);
	// it is refused when another call spent it already.
	UpdateUse = "use"
	// UpdateSetTeam sets the store's team: the approvers in force for the
	// turns that follow it (TeamChange).
	UpdateSetTeam = "set-team"
	// SignalRemember adds a remembered approval (a Remembered); turns
	// send it when an approver answers always_allow with a scope.
	SignalRemember = "remember"
	// SignalPolicyChanged tells a turn the store changed (a
	// PolicyNotice); a turn that follows that store re-decides its
	// waiting calls.
	SignalPolicyChanged = "policy-changed"
	// ActivityPolicyFanout signals the waiting turns of the namespace
	// after a change.
	ActivityPolicyFanout = "warden.PolicyFanout"
	// ActivityCheckRules checks live rules (a LiveRules) against the
	// tool registry of the worker that runs it before UpdateSetPolicy
	// sets them: a content rule for a tool that matches no content
	// fails it (ErrTypeUnmatchableRule).
	ActivityCheckRules = "warden.CheckRules"
	// ErrTypeUnmatchableRule is the error type of ActivityCheckRules's
	// refusal.
	ErrTypeUnmatchableRule = "UnmatchableRule"
)

// LiveRules are the rules of a live policy, written as in the config
// ("Bash(npm run:*)"). A turn that follows the store is decided with
// these instead of its own allow, ask and deny rules (the rules its
// approvers added with always_allow are kept).
type LiveRules struct {
	Allow []string `json:"allow,omitempty" yaml:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty" yaml:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty" yaml:"deny,omitempty"`
}

// Parse returns the rules as permission rules (Source "live").
func (r LiveRules) Parse() (allow, ask, deny []permission.Rule, err error) {
	parse := func(ss []string, b permission.Behavior) ([]permission.Rule, error) {
		var out []permission.Rule
		for _, s := range ss {
			rule, err := permission.ParseRule(s, b)
			if err != nil {
				return nil, fmt.Errorf("%s rule %q: %w", b, s, err)
			}
			rule.Source = "live"
			out = append(out, rule)
		}
		return out, nil
	}
	if allow, err = parse(r.Allow, permission.Allow); err != nil {
		return
	}
	if ask, err = parse(r.Ask, permission.Ask); err != nil {
		return
	}
	deny, err = parse(r.Deny, permission.Deny)
	return
}

// PolicyChange is UpdateSetPolicy's argument.
type PolicyChange struct {
	Rules LiveRules `json:"rules"`
	By    string    `json:"by,omitempty"`
}

// TeamChange is UpdateSetTeam's argument: the approvers now in force (nil
// or no users: anyone may answer), and who set them (the worker, from
// its config's inbox.users and inbox.roles).
type TeamChange struct {
	Team *Approvers `json:"team,omitempty"`
	By   string     `json:"by,omitempty"`
}

// RememberScope is where a remembered approval applies (calls.RememberScope).
type RememberScope = calls.RememberScope

// The scopes of a remembered approval (calls.ScopeInput, ...).
const (
	ScopeInput     = calls.ScopeInput
	ScopeTurn      = calls.ScopeTurn
	ScopeAgent     = calls.ScopeAgent
	ScopeNamespace = calls.ScopeNamespace
)

// Remembered is a remembered approval kept in the policy store
// (calls.Remembered: a value the decision takes as data).
type Remembered = calls.Remembered

// RevokeRequest is UpdateRevoke's argument.
type RevokeRequest struct {
	ID string `json:"id"`
	By string `json:"by,omitempty"`
}

// UseRequest is UpdateUse's argument: the call (workflow id/call id)
// that spends the single-use approval ID.
type UseRequest struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

// PolicyState is the store's state (QueryPolicy) and what it carries
// across continue-as-new.
type PolicyState struct {
	// Version counts the store's changes: rules set, approvals
	// remembered, spent or revoked.
	Version int `json:"version"`
	// Rules is nil until a policy is set: turns then keep their own rules.
	Rules *LiveRules `json:"rules,omitempty"`
	// SetBy and SetAt say who set the rules, and when.
	SetBy      string       `json:"set_by,omitempty"`
	SetAt      time.Time    `json:"set_at,omitzero"`
	Remembered []Remembered `json:"remembered,omitempty"`
	// NextID numbers remembered approvals.
	NextID int `json:"next_id"`
	// Notified is the last version the waiting turns were told about.
	Notified int `json:"notified"`
	// Team is the approvers in force for the turns that follow the store
	// (live approvers), TeamVersion counts its changes (0: never set),
	// TeamSetBy and TeamSetAt say who set it last, and when.
	Team        *Approvers `json:"team,omitempty"`
	TeamVersion int        `json:"team_version,omitempty"`
	TeamSetBy   string     `json:"team_set_by,omitempty"`
	TeamSetAt   time.Time  `json:"team_set_at,omitzero"`
	// RulesAt is the store version of its last change that was not the
	// team's: a fan-out of team changes only does not make turns decide
	// their waiting calls again.
	RulesAt int `json:"rules_at,omitempty"`
}

// Apply lays the store's live rules over a turn's policy pc: the store's
// allow, ask and deny rules replace the turn's own, except the rules the
// turn's approvers added (source "session"). A store with no rules set
// leaves pc as it is. The worker's Prepare and "starter permission check
// --live-policy" both apply it.
func (st PolicyState) Apply(pc *permission.Context) error {
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

// PolicyNotice is SignalPolicyChanged's payload: the store's version,
// and its team (TeamVersion 0: the store has none). TeamOnly says the
// changes since the last notice were the team's only.
type PolicyNotice struct {
	Store       string     `json:"store"`
	Version     int        `json:"version"`
	Team        *Approvers `json:"team,omitempty"`
	TeamVersion int        `json:"team_version,omitempty"`
	TeamOnly    bool       `json:"team_only,omitempty"`
}

// PolicyFanoutInput is ActivityPolicyFanout's input (what every notice
// says).
type PolicyFanoutInput = PolicyNotice

// policyHistoryBound continues the store as new past this many events.
const policyHistoryBound = 5000

// PolicyStore is the policy store's workflow: it keeps the live rules
// and remembered approvals, answers QueryPolicy, and after every change
// runs ActivityPolicyFanout so waiting turns re-decide their calls.
func PolicyStore(ctx workflow.Context, st PolicyState) error {
	s := &st
	if err := s.registerHandlers(ctx); err != nil {
		return err
	}
	remember := workflow.GetSignalChannel(ctx, SignalRemember)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r Remembered
			remember.Receive(ctx, &r)
			s.remember(ctx, r)
		}
	})
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	for {
		if err := workflow.Await(ctx, func() bool { return s.Version > s.Notified || s.long(ctx) }); err != nil {
			return fmt.Errorf("policy store: %w", err)
		}
		if s.Version <= s.Notified {
			return s.continueAsNew(ctx, remember)
		}
		v := s.Version
		in := PolicyFanoutInput{Store: id, Version: v, Team: s.Team, TeamVersion: s.TeamVersion,
			TeamOnly: s.TeamVersion > 0 && s.RulesAt <= s.Notified}
		if err := workflow.ExecuteActivity(actx, ActivityPolicyFanout, in).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("policy fan-out failed", "version", v, "error", err)
		}
		s.Notified = v
	}
}

// registerHandlers installs the store's query and updates.
func (s *PolicyState) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryPolicy, func() (PolicyState, error) { return *s, nil }); err != nil {
		return fmt.Errorf("policy query: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSetPolicy, s.setRules,
		workflow.UpdateHandlerOptions{Validator: func(c PolicyChange) error {
			_, _, _, err := c.Rules.Parse()
			return err
		}},
	); err != nil {
		return fmt.Errorf("policy update: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRevoke, s.revoke,
		workflow.UpdateHandlerOptions{Validator: s.validateRevoke},
	); err != nil {
		return fmt.Errorf("revoke update: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateUse, s.use,
		workflow.UpdateHandlerOptions{Validator: s.validateUse},
	); err != nil {
		return fmt.Errorf("use update: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSetTeam, s.setTeam,
		workflow.UpdateHandlerOptions{Validator: func(c TeamChange) error { return c.Team.Validate() }},
	); err != nil {
		return fmt.Errorf("team update: %w", err)
	}
	return nil
}

// setTeam is UpdateSetTeam: the team becomes c's and the waiting turns
// are told (a fan-out), unless it is the team the store has. It returns
// the team's version.
func (s *PolicyState) setTeam(ctx workflow.Context, c TeamChange) (int, error) {
	if s.TeamVersion > 0 && sameTeam(s.Team, c.Team) {
		return s.TeamVersion, nil
	}
	s.Team, s.TeamSetBy, s.TeamSetAt = c.Team, c.By, workflow.Now(ctx)
	s.TeamVersion++
	s.Version++
	return s.TeamVersion, nil
}

// sameTeam reports whether two teams have the same users, roles and
// role patterns.
func sameTeam(a, b *Approvers) bool {
	if !a.Enabled() || !b.Enabled() {
		return a.Enabled() == b.Enabled()
	}
	return sameLists(a.Users, b.Users) && sameLists(a.Roles, b.Roles)
}

// sameLists reports whether two maps of lists hold the same keys and,
// for each, the same list (an empty list and none are the same).
func sameLists(a, b map[string][]string) bool {
	keys := sortedKeys(a)
	if !slices.Equal(keys, sortedKeys(b)) {
		return false
	}
	for _, k := range keys {
		if !slices.Equal(a[k], b[k]) {
			return false
		}
	}
	return true
}

// setRules is UpdateSetPolicy: the store's rules become c's, once the
// rules passed ActivityCheckRules (runs recorded before
// versionPolicyRuleCheck set them unchecked). The check runs in an
// activity because it needs a worker's tool registry, which workflow
// code must not read; its answer is recorded, so a replay sets the same
// rules.
func (s *PolicyState) setRules(ctx workflow.Context, c PolicyChange) (int, error) {
	if workflow.GetVersion(ctx, versionPolicyRuleCheck, workflow.DefaultVersion, 1) >= 1 {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second,
				MaximumAttempts: 5, NonRetryableErrorTypes: []string{ErrTypeUnmatchableRule}},
		})
		if err := workflow.ExecuteActivity(actx, ActivityCheckRules, c.Rules).Get(ctx, nil); err != nil {
			var ae *temporal.ApplicationError
			if errors.As(err, &ae) && ae.Type() == ErrTypeUnmatchableRule {
				return s.Version, fmt.Errorf("policy not set: %s", ae.Message())
			}
			return s.Version, fmt.Errorf("policy not set: the rules could not be checked: %w", err)
		}
	}
	rules := c.Rules
	s.Rules, s.SetBy, s.SetAt = &rules, c.By, workflow.Now(ctx)
	s.Version++
	s.RulesAt = s.Version
	return s.Version, nil
}

// revoke is UpdateRevoke (validated by validateRevoke).
func (s *PolicyState) revoke(ctx workflow.Context, r RevokeRequest) (Remembered, error) {
	i := s.find(r.ID)
	s.Remembered[i].RevokedBy, s.Remembered[i].RevokedAt = r.By, workflow.Now(ctx)
	s.Version++
	s.RulesAt = s.Version
	return s.Remembered[i], nil
}

// validateRevoke accepts the revocation of a remembered approval not
// revoked yet.
func (s *PolicyState) validateRevoke(r RevokeRequest) error {
	i := s.find(r.ID)
	if i < 0 {
		return fmt.Errorf("no remembered approval %q", r.ID)
	}
	if !s.Remembered[i].RevokedAt.IsZero() {
		return fmt.Errorf("remembered approval %s is already revoked", r.ID)
	}
	return nil
}

// use is UpdateUse (validated by validateUse): the first call to spend a
// single-use approval records its key; the same call may ask again.
func (s *PolicyState) use(_ workflow.Context, u UseRequest) (Remembered, error) {
	i := s.find(u.ID)
	if s.Remembered[i].UsedBy == "" {
		s.Remembered[i].UsedBy = u.Key
		s.Version++
		s.RulesAt = s.Version
	}
	return s.Remembered[i], nil
}

// validateUse accepts spending a single-use approval that is neither
// revoked nor used by another call.
func (s *PolicyState) validateUse(u UseRequest) error {
	i := s.find(u.ID)
	if i < 0 {
		return fmt.Errorf("no remembered approval %q", u.ID)
	}
	if u.Key == "" {
		return errors.New("use needs the call's key")
	}
	r := s.Remembered[i]
	if !r.SingleUse {
		return fmt.Errorf("remembered approval %s is not single-use", u.ID)
	}
	if r.UsedBy != "" && r.UsedBy != u.Key {
		return fmt.Errorf("remembered approval %s was used already (by %s)", u.ID, r.UsedBy)
	}
	if !r.RevokedAt.IsZero() {
		return fmt.Errorf("remembered approval %s was revoked", u.ID)
	}
	return nil
}

// continueAsNew continues the store as new once its update handlers
// finished, with the approvals already signalled remembered.
func (s *PolicyState) continueAsNew(ctx workflow.Context, remember workflow.ReceiveChannel) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return fmt.Errorf("policy store: %w", err)
	}
	for {
		var r Remembered
		if !remember.ReceiveAsync(&r) {
			break
		}
		s.remember(ctx, r)
	}
	return workflow.NewContinueAsNewError(ctx, PolicyWorkflow, *s)
}

// long reports whether the store should continue as new.
func (s *PolicyState) long(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= policyHistoryBound
}

func (s *PolicyState) find(id string) int {
	for i, r := range s.Remembered {
		if r.ID == id {
			return i
		}
	}
	return -1
}

// remember adds r once (a turn's call is remembered at most once).
func (s *PolicyState) remember(ctx workflow.Context, r Remembered) {
	for _, o := range s.Remembered {
		if o.FromWorkflow == r.FromWorkflow && o.CallID == r.CallID && o.Scope == r.Scope && o.Rule == r.Rule {
			return
		}
	}
	s.NextID++
	r.ID = "r" + strconv.Itoa(s.NextID)
	if r.CreatedAt.IsZero() {
		r.CreatedAt = workflow.Now(ctx)
	}
	r.UsedBy, r.RevokedBy, r.RevokedAt = "", "", time.Time{}
	s.Remembered = append(s.Remembered, r)
	s.Version++
	s.RulesAt = s.Version
}
