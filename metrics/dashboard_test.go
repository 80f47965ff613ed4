package metrics_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/audit/stream"
	"github.com/wardenhq/warden/metrics"
	mwmetrics "github.com/wardenhq/warden/middleware/metrics"
)

// names records the fully-qualified names of the metrics registered on
// it, labelled or not, before any of them has a series.
type names struct {
	prometheus.Registerer
	seen map[string]bool
}

func (n *names) Register(c prometheus.Collector) error {
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			n.seen[m[1]] = true
		}
	}
	return n.Registerer.Register(c)
}

func (n *names) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := n.Register(c); err != nil {
			panic(err)
		}
	}
}

func TestDashboardReferencesRegisteredMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	known := &names{Registerer: reg, seen: map[string]bool{}}
	metrics.NewTools(known)
	metrics.NewApprovals(known)
	metrics.NewEgress(known)
	metrics.NewModels(known)
	metrics.NewChat(known)
	metrics.NewInbox(known)
	metrics.NewNotify(known)
	// The live audit stream's metrics are its own package's (the worker
	// registers them on the same registry when audit.stream is set).
	stream.NewMetrics(known)
	if _, err := mwmetrics.New(mwmetrics.Config{Registerer: known}); err != nil {
		t.Fatal(err)
	}
	// SDK metrics exist once the SDK records them; record the ones the
	// dashboard shows, under the names the SDK uses.
	sdk := metrics.NewSDKHandler(reg)
	sdk.Timer("temporal_activity_execution_latency").Record(time.Second)
	sdk.Timer("temporal_workflow_task_execution_latency").Record(time.Second)
	sdk.Counter("temporal_request_failure").Inc(1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		known.seen[mf.GetName()] = true
	}

	data, err := os.ReadFile("../deploy/grafana/warden.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("warden.json: %v", err)
	}
	if dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatal("warden.json has no title or panels")
	}
	metric := regexp.MustCompile(`\b(?:warden|temporal)_[a-z0-9_]+`)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			refs := metric.FindAllString(tg.Expr, -1)
			if len(refs) == 0 {
				t.Errorf("panel %q: %q references no metric", p.Title, tg.Expr)
			}
			for _, r := range refs {
				base := r
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if !known.seen[base] {
						base = strings.TrimSuffix(base, suf)
					}
				}
				if !known.seen[base] {
					t.Errorf("panel %q: %s is not a registered metric", p.Title, r)
				}
				used[base] = true
			}
		}
	}
	// Every warden metric has a panel.
	for name := range known.seen {
		if strings.HasPrefix(name, "warden_") && !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(used)), func(s string) bool { return strings.HasPrefix(s, "temporal_") }) {
		t.Error("no panel shows a Temporal SDK metric")
	}
}
