package audit

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// withEvidence rewrites the tool results of a recorded history, regular
// activities and local-activity markers alike, as a worker with the
// egress proxy and limits records them: each result's metadata gets
// the connections (through JSON, as a history holds them) and, for the
// call ids in limited, the limit that ended it. It returns the ids of
// the rewritten results.
func withEvidence(t *testing.T, evs []*historypb.HistoryEvent, conns []calls.Connection, limited map[string]string) []string {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	rewrite := func(p *commonpb.Payloads) string {
		var out workflows.ToolOutput
		if err := dc.FromPayload(p.GetPayloads()[0], &out); err != nil {
			t.Fatal(err)
		}
		if out.Result.Metadata == nil {
			out.Result.Metadata = map[string]any{}
		}
		out.Result.Metadata["connections"] = conns
		if l := limited[out.Result.CallID]; l != "" {
			out.Result.Metadata["limit"] = l
		}
		np, err := dc.ToPayload(out)
		if err != nil {
			t.Fatal(err)
		}
		p.Payloads[0] = np
		return out.Result.CallID
	}
	var ids []string
	sched := map[int64]string{}
	for _, e := range evs {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			sched[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			if sched[a.GetScheduledEventId()] == workflows.ActivityTool {
				ids = append(ids, rewrite(a.GetResult()))
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			d := e.GetMarkerRecordedEventAttributes().GetDetails()
			if p := d["data"].GetPayloads(); len(p) > 0 && strings.Contains(string(p[0].GetData()), `"ActivityType":"`+workflows.ActivityTool+`"`) && d["result"] != nil {
				ids = append(ids, rewrite(d["result"]))
			}
		}
	}
	return ids
}

func sampleConnections() []calls.Connection {
	return []calls.Connection{
		{Host: "registry.npmjs.org", Port: 443, Addr: "104.16.0.35:443", Method: "CONNECT", Allowed: true,
			By: "registry.npmjs.org (sandbox.network_for rule Bash(npm install:*))", Sent: 1200, Received: 340000},
		{Host: "evil.example", Port: 443, Method: "CONNECT", By: "not an allowed host"},
	}
}

// TestExtractConnections: the connections a call's result carries and
// the limit that ended it become records of their own (connection:
// allowed or refused by the proxy, its line as the reason; limit),
// from regular tool activities and from local-activity markers; the
// connections stay with the call's verdict for what-if.
func TestExtractConnections(t *testing.T) {
	t.Parallel()
	evs := load(t, "demo_turn_v8.json")
	ids := withEvidence(t, evs, sampleConnections(), nil)
	if len(ids) < 3 {
		t.Fatalf("rewrote %d tool results, want the demo's activities and markers", len(ids))
	}
	limited := map[string]string{ids[0]: "the call's processes reached the memory limit (512 MiB): killed"}
	evs = load(t, "demo_turn_v8.json")
	withEvidence(t, evs, sampleConnections(), limited)
	recs, err := Extract("demo", evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		var got []string
		for _, r := range recs {
			if r.CallID == id && r.Kind == KindConnection {
				if r.By != "proxy" || r.Layer != "egress" || r.Connection == nil || r.Tool == "" {
					t.Errorf("%s: connection record %+v", id, r)
				}
				got = append(got, r.Decision+": "+r.Reason)
			}
		}
		want := []string{"allowed: allowed CONNECT registry.npmjs.org:443 (104.16.0.35:443), 1.2 KiB out, 332 KiB in: registry.npmjs.org (sandbox.network_for rule Bash(npm install:*))",
			"refused: refused CONNECT evil.example:443: not an allowed host"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: connection records\n%s\nwant\n%s", id, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if r := find(t, recs, ids[0], KindLimit); r.Decision != "ended" || !strings.Contains(r.Reason, "memory limit") {
		t.Errorf("limit record %+v", r)
	}
	if n := countKind(recs, KindLimit); n != 1 {
		t.Errorf("%d limit records, want 1", n)
	}
	// The table shows them (and JSON carries the connection's fields).
	var tb strings.Builder
	if err := WriteTable(&tb, recs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"connection  refused   proxy", "egress", "refused CONNECT evil.example:443: not an allowed host",
		"limit", "memory limit (512 MiB)"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	i := slices.IndexFunc(recs, func(r Record) bool { return r.Kind == KindConnection })
	if b, _ := json.Marshal(recs[i]); !strings.Contains(string(b), `"connection":{"host":"registry.npmjs.org","port":443`) {
		t.Errorf("JSON: %s", b)
	}
	// Control: the history as recorded has neither.
	plain, err := Extract("demo", load(t, "demo_turn_v8.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := countKind(plain, KindConnection) + countKind(plain, KindLimit); n != 0 {
		t.Errorf("the recorded history gives %d connection/limit records", n)
	}
	ds, err := ExtractCalls("demo", []Run{{Events: evs}})
	if err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, d := range ds {
		if len(d.Connections) > 0 {
			with++
		}
	}
	if with == 0 {
		t.Error("no verdict keeps its call's connections")
	}
}

func countKind(rs []Record, kind string) int {
	n := 0
	for _, r := range rs {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// TestConnectionsDecode: the connections of a result's metadata are
// read as the worker sets them and as a JSON round trip leaves them;
// what is not a connection is left out.
func TestConnectionsDecode(t *testing.T) {
	t.Parallel()
	cs := sampleConnections()
	if got := Connections(map[string]any{"connections": cs}); len(got) != 2 {
		t.Errorf("as set: %d", len(got))
	}
	b, _ := json.Marshal(map[string]any{"connections": cs})
	var md map[string]any
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	if got := Connections(md); len(got) != 2 || got[0] != cs[0] || got[1] != cs[1] {
		t.Errorf("round trip: %+v", got)
	}
	for _, md := range []map[string]any{nil, {"connections": "x"}, {"connections": []any{1, "x", map[string]any{"port": 1}}}} {
		if got := Connections(md); len(got) != 0 {
			t.Errorf("%v: %+v", md, got)
		}
	}
}

// TestWhatIfConnections: "policy what-if" replays the recorded
// connections against the hosts the proposed policy gives each call:
// a host it names is "would be allowed by" the rule that names it, a
// host it does not is "would be refused"; a proposal that grants what
// the proxy did changes nothing (the control).
func TestWhatIfConnections(t *testing.T) {
	t.Parallel()
	evs := load(t, "demo_turn_v8.json")
	withEvidence(t, evs, sampleConnections(), nil)
	ds, err := ExtractCalls("demo", []Run{{Events: evs}})
	if err != nil {
		t.Fatal(err)
	}
	bash := 0
	for _, d := range ds {
		if d.Verdict.Tool == "Bash" && len(d.Connections) > 0 {
			bash++
		}
	}
	if bash == 0 {
		t.Fatal("no Bash call with connections in the demo")
	}
	whatIf := func(sb *permission.Sandbox) WhatIf {
		t.Helper()
		w, err := Redecide(context.Background(), ds, WhatIfOptions{Policy: permission.Policy{Mode: permission.ModeBypass, Sandbox: sb}, Workdir: "/src/app"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range w.Connections {
			t.Logf("%s %s %s: %s", c.CallID, c.Tool, c.Change, c.Why)
		}
		return w
	}
	// The proposal lets evil.example through and not the registry.
	w := whatIf(&permission.Sandbox{NetworkFor: []permission.NetworkRule{{Rule: "Bash", Hosts: []string{"evil.example"}}}})
	var allowed, refused int
	for _, c := range w.Connections {
		switch {
		case c.Tool == "Bash" && c.Host == "evil.example:443" && c.Change == "refused→allowed" &&
			c.Why == "would be allowed by sandbox.network_for rule Bash (host evil.example)":
			allowed++
		case c.Host == "registry.npmjs.org:443" && c.Change == "allowed→refused" && strings.HasPrefix(c.Why, "would be refused: "):
			refused++
		default:
			t.Errorf("unexpected change %+v", c)
		}
	}
	if allowed != bash || refused < bash {
		t.Errorf("%d refused→allowed (want %d), %d allowed→refused", allowed, bash, refused)
	}
	var rep strings.Builder
	if err := w.WriteReport(&rep, "new.yaml", 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recorded connection(s) replayed", "CONNECTION", "evil.example:443",
		"would be allowed by sandbox.network_for rule Bash (host evil.example)"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, rep.String())
		}
	}
	// A proposal that grants the registry to every call and refuses
	// evil.example decides as the proxy did.
	w = whatIf(&permission.Sandbox{Network: true, Hosts: []string{"registry.npmjs.org"}})
	if len(w.Connections) != 0 || w.ConnectionsUnchanged == 0 {
		t.Errorf("control: %d changes, %d unchanged", len(w.Connections), w.ConnectionsUnchanged)
	}
	// A resolved address that is loopback is refused under "*".
	ds2 := slices.Clone(ds)
	for i := range ds2 {
		if len(ds2[i].Connections) > 0 {
			ds2[i].Connections = []calls.Connection{{Host: "sneaky.example", Port: 80, Addr: "127.0.0.1:80", Method: "GET", Allowed: true, By: "test"}}
		}
	}
	w, err = Redecide(context.Background(), ds2, WhatIfOptions{Policy: permission.Policy{Mode: permission.ModeBypass, Sandbox: &permission.Sandbox{Network: true}}, Workdir: "/src/app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Connections) == 0 || w.Connections[0].Change != "allowed→refused" {
		t.Errorf("loopback under network: true: %+v", w.Connections)
	}
}
