package audit

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/recorded.golden")

// recordedChains are the histories the integration tests recorded
// (tests/testdata), each a chain of runs: a file alone, or the runs of a
// continue-as-new chain (NAME_run1_vN.json, NAME_run2_vN.json) together.
func recordedChains(t *testing.T) (names []string, chains map[string][]Run) {
	t.Helper()
	files, err := filepath.Glob("../tests/testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories: %v", err)
	}
	chains = map[string][]Run{}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.Contains(name, "_run2_") {
			continue
		}
		runs := []Run{{ID: "run1", Events: load(t, name)}}
		if second := strings.Replace(name, "_run1_", "_run2_", 1); second != name {
			if _, err := os.Stat("../tests/testdata/" + second); err == nil {
				runs = append(runs, Run{ID: "run2", Events: load(t, second)})
				name = strings.Replace(name, "_run1_", "_run1+2_", 1)
			}
		}
		names = append(names, name)
		chains[name] = runs
	}
	return names, chains
}

// TestRecordedHistoriesUnchanged extracts every recorded history and
// compares a digest of its records (ExtractChain) and verdicts
// (ExtractCalls) to testdata/recorded.golden: the audit of a turn
// already recorded does not change. The histories were all recorded
// before Prepare results named their call and layer, so they go through
// the order matcher (legacy.go). Run with -update to rewrite the golden
// file after a deliberate change of the output.
func TestRecordedHistoriesUnchanged(t *testing.T) {
	names, chains := recordedChains(t)
	var b strings.Builder
	for _, name := range names {
		runs := chains[name]
		recs, err := ExtractChain(strings.TrimSuffix(name, ".json"), runs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ds, err := ExtractCalls(strings.TrimSuffix(name, ".json"), runs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&b, "%s records=%d %s verdicts=%d %s\n", name, len(recs), digest(t, recs), len(ds), digest(t, ds))
	}
	const golden = "testdata/recorded.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("audit of recorded histories changed (-update rewrites %s):\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

func digest(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))[:16]
}
