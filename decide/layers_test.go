package decide

import (
	"bufio"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// TestLayersMatchDocs: the manual's list of the decision's layers
// (docs/permissions.md, "### The decision's layers") is the list Verdict
// walks, in order.
func TestLayersMatchDocs(t *testing.T) {
	f, err := os.Open("../docs/permissions.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	item := regexp.MustCompile(`^\d+\. \*\*([^*]+)\*\*`)
	var doc []string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if in {
				break
			}
			in = line == "### The decision's layers"
			continue
		}
		if m := item.FindStringSubmatch(line); in && m != nil {
			doc = append(doc, m[1])
		}
	}
	if code := Layers(); !slices.Equal(doc, code) {
		t.Errorf("docs/permissions.md lists the decision's layers\n\t%q\nVerdict walks\n\t%q", doc, code)
	}
}

// TestOneParsePerCall: a Bash call decided with quorum rules and
// remembered approvals is parsed once, whatever their number; the same
// memo passed again (the worker deciding again without a spent
// approval) parses nothing more.
func TestOneParsePerCall(t *testing.T) {
	in := []byte(`{"command":"kubectl delete pod web-1 && kubectl get pods"}`)
	pc := permission.Context{Mode: permission.ModeDefault,
		Quorum: []permission.QuorumRule{{Rule: "Bash(kubectl delete:*)", Approvals: 2}, {Rule: "Bash(helm:*)", Approvals: 3}, {Rule: "Bash(kubectl drain:*)", Approvals: 2}}}
	rem := []calls.Remembered{
		{ID: "r1", Scope: calls.ScopeNamespace, Tool: "Bash", Rule: "Bash(kubectl get:*)"},
		{ID: "r2", Scope: calls.ScopeNamespace, Tool: "Bash", Rule: "Bash(kubectl:*)"},
		{ID: "r3", Scope: calls.ScopeTurn, WorkflowID: "other", Tool: "Bash", Rule: "Bash(kubectl:*)"},
	}
	m := &tools.Memo{}
	c := Call{Tool: tools.Bash{}, Input: in, Workdir: "/w/proj", Home: "/home/u", Policy: &pc, Remembered: rem,
		Turn: Turn{WorkflowID: "t1", CallID: "c1"}, Memo: m}
	v, err := Verdict(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if v.Behavior != permission.Ask || v.Layer != permission.LayerQuorum || v.Quorum != 2 || v.QuorumRule != "Bash(kubectl delete:*)" {
		t.Errorf("verdict %s by %s (quorum %d, rule %q), want ask by quorum 2 of Bash(kubectl delete:*)", v.Behavior, v.Layer, v.Quorum, v.QuorumRule)
	}
	if m.Parses() != 1 {
		t.Errorf("%d parses for one call with 3 quorum rules and 3 remembered approvals, want 1", m.Parses())
	}
	c.Remembered = rem[:1]
	if _, err := Verdict(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if m.Parses() != 1 {
		t.Errorf("%d parses after deciding the call again with the same memo, want 1", m.Parses())
	}
	// Without the quorum rules, the remembered approval r2 allows it and
	// the verdict names it.
	pc.Quorum = nil
	c.Remembered = rem
	v, err = Verdict(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if v.Behavior != permission.Allow || v.Layer != permission.LayerRemembered || v.Remembered != "r2" {
		t.Errorf("verdict %s by %s (remembered %q), want allow by remembered r2", v.Behavior, v.Layer, v.Remembered)
	}
}
