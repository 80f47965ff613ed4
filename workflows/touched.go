package workflows

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
)

// touch records what a call that ran adds to its session (the touches
// its verdict found, Prepared.Touches), for the session rules to decide
// the calls after it against. A call that did not run (denied, invalid,
// withdrawn) touches nothing. A touch of the call's network grant counts
// only when the call used the network where the backend reports its
// connections (the local backend's egress proxy), and names the hosts
// it reached; elsewhere the grant counts.
func (t *turn) touch(s *slot) {
	p := s.Prep
	if len(p.Touches) == 0 || s.Result == nil || p.Invalid != "" {
		return
	}
	if st := s.Result.State; st != calls.StateSuccess && st != calls.StateError {
		return
	}
	reported := p.Sandbox != nil && !p.Sandbox.Off && p.Sandbox.Backend == ""
	hosts := reachedHosts(s.Result.Metadata)
	turn := 0
	if t.in.Session {
		turn = t.turnNo()
	}
	var add []permission.Touch
	for _, x := range p.Touches {
		if x.Network && reported {
			if len(hosts) == 0 {
				continue
			}
			switch x.Leg {
			case permission.LegOut:
				x.What = "network to " + strings.Join(hosts, ", ")
			case permission.LegUntrusted:
				x.What = "response from " + strings.Join(hosts, ", ")
			}
		}
		x.CallID, x.Turn = s.Call.ID, turn
		add = append(add, x)
	}
	// A brokered secret the proxy put into a request is private data the
	// session now holds, though the process never saw its value.
	if reported {
		for _, u := range secretUses(s.Result.Metadata) {
			add = append(add, permission.Touch{Leg: permission.LegPrivate, CallID: s.Call.ID, Tool: s.Call.Name, What: u, Turn: turn})
		}
	}
	if len(add) == 0 {
		return
	}
	if t.Touched == nil {
		t.Touched = &permission.Touched{}
	}
	t.Touched.Add(add...)
}

// clearLeg clears the leg an approval of a session rule's ASK vouches
// for (Prepared.Clears) for the rest of the session.
func (t *turn) clearLeg(s *slot, by string) {
	if s.Prep.Clears == "" {
		return
	}
	if t.Touched == nil {
		t.Touched = &permission.Touched{}
	}
	t.Touched.Clear(s.Prep.Clears, s.Call.ID, by)
}

// connectionsOf are the connections the egress proxy recorded for a
// call (its result's Metadata["connections"]).
func connectionsOf(md map[string]any) []calls.Connection {
	v, ok := md["connections"]
	if !ok {
		return nil
	}
	var conns []calls.Connection
	if cs, ok := v.([]calls.Connection); ok {
		conns = cs
	} else if b, err := json.Marshal(v); err != nil || json.Unmarshal(b, &conns) != nil {
		return nil
	}
	return conns
}

// reachedHosts are the hosts of the connections the egress proxy let
// through for a call, in order.
func reachedHosts(md map[string]any) []string {
	var out []string
	for _, c := range connectionsOf(md) {
		if c.Allowed && !slices.Contains(out, c.Host) {
			out = append(out, c.Host)
		}
	}
	return out
}

// secretUses say which brokered secrets the proxy put into a call's
// requests, and for which host ("secret GH_TOKEN used for
// api.github.com"), in order.
func secretUses(md map[string]any) []string {
	var out []string
	for _, c := range connectionsOf(md) {
		if !c.Allowed || c.Secrets == "" {
			continue
		}
		if u := "secret " + c.Secrets + " used for " + c.Host; !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}
