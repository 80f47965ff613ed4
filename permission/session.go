package permission

import (
	"fmt"
	"slices"
	"time"
)

// Leg is one of the things a session can hold that, together, let an
// attacker who controls what the agent reads take data out: the "lethal
// trifecta" of untrusted input, private data and a way out, and the
// wider "Rule of Two", whose third leg is any change of state.
type Leg string

// The legs a call can add to its session (Touch.Leg).
const (
	// LegUntrusted is input the agent read from outside: a network
	// response, a tool labelled untrusted, a read outside the working
	// directories (system directories excepted).
	LegUntrusted Leg = "untrusted"
	// LegPrivate is private data: a sensitive path read, a tool
	// labelled private.
	LegPrivate Leg = "private"
	// LegOut is a way out: a network grant used, a git push, a write
	// outside the working directories, a tool labelled out or marked
	// external.
	LegOut Leg = "out"
	// LegChange is any change of state (a call that is not read-only);
	// only the Rule of Two counts it, as a way to act.
	LegChange Leg = "change"
)

// Legs are the legs in the order reasons name them.
func Legs() []Leg { return []Leg{LegUntrusted, LegPrivate, LegOut, LegChange} }

// ValidLeg reports whether l is one of Legs.
func ValidLeg(l Leg) bool { return slices.Contains(Legs(), l) }

// SessionPolicy is the part of a policy that sees the session: what the
// turn's earlier calls (and its session's earlier turns) touched.
//
//	session:
//	  trifecta: ask          # untrusted input + private data, then a way out
//	  rule_of_two: deny      # untrusted + private + out or any change
//	  enforce: false         # log-only: record what would happen
//	  labels:
//	    - {rule: "mcp__web__fetch", legs: [untrusted]}
//	    - {rule: "Bash(rclone:*)", legs: [out]}
type SessionPolicy struct {
	// Trifecta (ask or deny) applies to a call that sends out (LegOut)
	// while the session holds untrusted input and private data: the
	// call asks (or is denied), whatever allow rule, mode or remembered
	// approval passes it.
	Trifecta Behavior `yaml:"trifecta,omitempty" json:"trifecta,omitempty"`
	// RuleOfTwo (ask or deny) applies to a call after which the session
	// would hold all three of untrusted input, private data and a way
	// to act (out, or any change of state), whichever comes last.
	RuleOfTwo Behavior `yaml:"rule_of_two,omitempty" json:"rule_of_two,omitempty"`
	// Enforce false makes both rules log-only: the verdict they would
	// give is recorded (Verdict.WouldBe), the call is decided without
	// them.
	Enforce *bool `yaml:"enforce,omitempty" json:"enforce,omitempty"`
	// Labels add legs to the calls their rule matches (as a deny rule
	// matches: any simple command of a Bash line): MCP tools that read
	// the web (untrusted), mail or CRM tools (private), uploaders (out).
	Labels []SessionLabel `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// SessionLabel gives the calls Rule matches the legs Legs.
type SessionLabel struct {
	Rule string `yaml:"rule" json:"rule"`
	Legs []Leg  `yaml:"legs" json:"legs"`
}

// Enforced reports whether the session rules bind (Enforce unset or
// true).
func (s *SessionPolicy) Enforced() bool { return s == nil || s.Enforce == nil || *s.Enforce }

// On reports whether any session rule is set.
func (s *SessionPolicy) On() bool { return s != nil && (s.Trifecta != "" || s.RuleOfTwo != "") }

// Check validates the session policy.
func (s *SessionPolicy) Check() error {
	if s == nil {
		return nil
	}
	for _, b := range []struct {
		name string
		b    Behavior
	}{{"trifecta", s.Trifecta}, {"rule_of_two", s.RuleOfTwo}} {
		if b.b != "" && b.b != Ask && b.b != Deny {
			return fmt.Errorf("session.%s: %q is not ask or deny", b.name, b.b)
		}
	}
	for i, l := range s.Labels {
		if _, err := ParseRule(l.Rule, Deny); err != nil {
			return fmt.Errorf("session.labels %d: %w", i+1, err)
		}
		if len(l.Legs) == 0 {
			return fmt.Errorf("session.labels %d %q: name its legs (untrusted, private, out, change)", i+1, l.Rule)
		}
		for _, g := range l.Legs {
			if !ValidLeg(g) {
				return fmt.Errorf("session.labels %d %q: unknown leg %q (want untrusted, private, out or change)", i+1, l.Rule, g)
			}
		}
	}
	return nil
}

// Touch is one leg one call added to its session: "read .env" (private)
// in call c3 of a turn.
type Touch struct {
	Leg    Leg    `json:"leg"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// What says what the call did, for a reason: "read of /w/.env",
	// "response from example.com", "git push".
	What string `json:"what"`
	// Turn is the session turn the call was made in (1 for the first;
	// 0 when the turn is no session).
	Turn int `json:"turn,omitempty"`
	// Network says the touch comes from the call's network grant: the
	// turn records it only when the call used the network (its
	// connections, on the backends that report them).
	Network bool `json:"network,omitempty"`
}

// String is "read of /w/.env in call c3", with "(turn 2)" in a session.
func (t Touch) String() string {
	s := t.What + " in call " + t.CallID
	if t.Turn > 0 {
		s += fmt.Sprintf(" (turn %d)", t.Turn)
	}
	return s
}

// Touched is what a session's calls touched so far, kept in the turn's
// durable state: the first touches of each leg (a reason names them),
// the count of each, and the legs approvals cleared.
type Touched struct {
	Touches []Touch `json:"touches,omitempty"`
	// Counts counts the touches of each leg since it was last cleared,
	// in the order of Legs (kept touches are at most MaxTouches a leg).
	Counts []int `json:"counts,omitempty"`
	// Cleared records each clearing of a leg by an approval.
	Cleared []Cleared `json:"cleared,omitempty"`
}

// Cleared is a leg an approval of a session rule's ASK cleared for the
// rest of the session: touches of it made until then no longer count.
type Cleared struct {
	Leg    Leg    `json:"leg"`
	CallID string `json:"call_id"`
	By     string `json:"by,omitempty"`
}

// MaxTouches bounds the touches of one leg Touched keeps.
const MaxTouches = 4

func legIndex(l Leg) int { return slices.Index(Legs(), l) }

// Add records touches (a call that completed), keeping at most
// MaxTouches of each leg.
func (t *Touched) Add(ts ...Touch) {
	for _, x := range ts {
		i := legIndex(x.Leg)
		if i < 0 {
			continue
		}
		for len(t.Counts) <= i {
			t.Counts = append(t.Counts, 0)
		}
		t.Counts[i]++
		if len(t.of(x.Leg)) < MaxTouches {
			t.Touches = append(t.Touches, x)
		}
	}
}

// Clear drops the touches of leg: an approval vouched for them.
func (t *Touched) Clear(l Leg, callID, by string) {
	t.Touches = slices.DeleteFunc(t.Touches, func(x Touch) bool { return x.Leg == l })
	if i := legIndex(l); i >= 0 && i < len(t.Counts) {
		t.Counts[i] = 0
	}
	t.Cleared = append(t.Cleared, Cleared{Leg: l, CallID: callID, By: by})
}

// Holds reports whether the session holds leg l.
func (t *Touched) Holds(l Leg) bool { return t != nil && len(t.of(l)) > 0 }

func (t *Touched) of(l Leg) []Touch {
	if t == nil {
		return nil
	}
	var out []Touch
	for _, x := range t.Touches {
		if x.Leg == l {
			out = append(out, x)
		}
	}
	return out
}

// Of returns the kept touches of leg l, in order.
func (t *Touched) Of(l Leg) []Touch { return t.of(l) }

// WindowLimit bounds how many calls a rule's matches may make per
// window: {rule: "Bash(git push:*)", max: 5, per: 1h, scope: agent}.
// Running calls count.
type WindowLimit struct {
	Rule string        `yaml:"rule" json:"rule"`
	Max  int           `yaml:"max" json:"max"`
	Per  time.Duration `yaml:"per" json:"per"`
	// Scope is turn (the default: this turn and its session) or agent
	// (every turn of the agent, through its budget store).
	Scope string `yaml:"scope,omitempty" json:"scope,omitempty"`
	// Enforce false makes the limit log-only.
	Enforce *bool `yaml:"enforce,omitempty" json:"enforce,omitempty"`
}

// Window limit scopes.
const (
	ScopeTurn  = "turn"
	ScopeAgent = "agent"
)

// Enforced reports whether the limit binds.
func (w WindowLimit) Enforced() bool { return w.Enforce == nil || *w.Enforce }

// Check validates the limit.
func (w WindowLimit) Check() error {
	if _, err := ParseRule(w.Rule, Deny); err != nil {
		return err
	}
	if w.Max < 1 {
		return fmt.Errorf("%q: max must be at least 1", w.Rule)
	}
	if w.Per <= 0 {
		return fmt.Errorf("%q: per must be a positive duration (1h, 10m)", w.Rule)
	}
	switch w.Scope {
	case "", ScopeTurn, ScopeAgent:
	default:
		return fmt.Errorf("%q: scope %q is not turn or agent", w.Rule, w.Scope)
	}
	return nil
}

// Would is what a log-only rule would have decided: recorded with the
// verdict, counted, shown by what-if and the audit, never applied.
type Would struct {
	// Layer is the kind of rule: "log-only deny rule", "session", "window".
	Layer    Layer    `json:"layer"`
	Rule     string   `json:"rule,omitempty"`
	Behavior Behavior `json:"behavior"`
	Reason   string   `json:"reason"`
}

// String is "would deny (log-only deny rule Bash(curl:*)): ...".
func (w Would) String() string {
	s := "would " + string(w.Behavior) + " (" + string(w.Layer)
	if w.Rule != "" {
		s += " " + w.Rule
	}
	return s + "): " + w.Reason
}
