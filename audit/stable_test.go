package audit

import (
	"slices"
	"testing"
)

// TestSettledRecordsArePrefixes: for every recorded history (each
// release's turns, tests/testdata) and every point at which a running
// turn's history could be read, the records of its settled part are the
// first records of the whole history's, hash for hash (a read ends
// between event batches: a task's completion is written with its
// commands): the audit stream
// can send a running turn's records as they settle, each once, by
// number. The records of the whole of a running history are not (a
// signal received but not yet handled, for one), which is why it reads
// settled parts.
func TestSettledRecordsArePrefixes(t *testing.T) {
	names, chains := recordedChains(t)
	reads := 0
	for _, name := range names {
		runs := chains[name]
		full := mustLink(t, name, runs)
		last := len(runs) - 1
		evs := runs[last].Events
		for n := 1; n < len(evs); n++ {
			if commandEvent(evs[n].GetEventType()) {
				// A task's completion and its commands are written as
				// one batch: no read ends inside it.
				continue
			}
			part := slices.Clone(runs)
			part[last] = Run{ID: runs[last].ID, Events: settled(evs[:n])}
			recs := mustLink(t, name, part)
			reads++
			if len(recs) > len(full) {
				t.Fatalf("%s, %d events: %d records, the whole history has %d", name, n, len(recs), len(full))
			}
			for i := range recs {
				if recs[i].Hash != full[i].Hash {
					t.Fatalf("%s, %d events: record %d differs from the whole history's:\n%+v\n%+v", name, n, i+1, recs[i], full[i])
				}
			}
		}
	}
	t.Logf("%d histories, %d partial reads", len(names), reads)
}

func mustLink(t *testing.T, name string, runs []Run) []Record {
	t.Helper()
	// Not linked(): the recorded files do not keep the workflow id the
	// recorded chain heads were hashed with (TestAuditPastRetention checks
	// them on a real server).
	recs, err := ExtractChain(name, runs)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := Link(recs); err != nil {
		t.Fatal(err)
	}
	return recs
}
