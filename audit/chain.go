// Tamper evidence: a turn's records, in the order the turn recorded them
// (its history's), form a hash chain. An exported stream or file is checked against the
// turn's histories (server or archive), and the first record that does
// not match is named: edited, removed, reordered, or not in the history.
// Each run records the chain's head as it ends (workflows.HeadNote), so
// a history changed afterwards no longer gives the head it recorded
// (CheckHeads, ErrHeadMismatch).

package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/workflows"
)

// Link numbers recs (one turn's, in order) from 1 and chains their
// hashes. It sets Seq, Prev and Hash in place.
func Link(recs []Record) error {
	prev := ""
	for i := range recs {
		recs[i].Seq, recs[i].Prev, recs[i].Hash = i+1, prev, ""
		h, err := recordHash(recs[i], prev)
		if err != nil {
			return err
		}
		recs[i].Hash = h
		prev = h
	}
	return nil
}

// recordHash is the SHA-256, in hex, of prev, a newline and r's JSON
// without Prev and Hash.
func recordHash(r Record, prev string) (string, error) {
	r.Prev, r.Hash = "", ""
	b, err := canonical(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(prev+"\n"), b...))
	return hex.EncodeToString(sum[:]), nil
}

// canonical is r's JSON as the audit writes it (no HTML escaping).
func canonical(r Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Mismatch is the first exported record that does not match.
type Mismatch struct {
	// Line is the record's line in the export (from 1).
	Line       int
	WorkflowID string
	Seq        int
	CallID     string
	Kind       string
	// Why says what does not match.
	Why string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("line %d (turn %s, record %d, %s %s): %s", m.Line, m.WorkflowID, m.Seq, m.CallID, m.Kind, m.Why)
}

// Verify checks exported records (in the export's order, several turns
// interleaved) against each turn's linked records read from its history
// (source, by workflow id). It returns the first record that does not
// match as a *Mismatch: one whose hash does not match its content (an
// edit), whose Prev is not the hash of the turn's record before it in
// the export, or whose Seq does not follow it (a removal or a
// reordering), or that differs from the history's record of the same
// Seq (a chain rebuilt after an edit) or is not in the history.
func Verify(exported []Record, source map[string][]Record) error {
	type last struct {
		line, seq int
		hash      string
	}
	seen := map[string]last{}
	for i, r := range exported {
		m := &Mismatch{Line: i + 1, WorkflowID: r.WorkflowID, Seq: r.Seq, CallID: r.CallID, Kind: r.Kind}
		if r.Seq < 1 || r.Hash == "" {
			m.Why = "not chained (no seq or hash): export with starter audit --jsonl"
			return m
		}
		h, err := recordHash(r, r.Prev)
		if err != nil {
			return err
		}
		if h != r.Hash {
			m.Why = "edited: its hash does not match its content"
			return m
		}
		if l, ok := seen[r.WorkflowID]; ok {
			switch {
			case r.Seq != l.seq+1:
				m.Why = fmt.Sprintf("follows record %d (line %d): records were removed or reordered", l.seq, l.line)
				return m
			case r.Prev != l.hash:
				m.Why = fmt.Sprintf("its prev is not the hash of record %d (line %d): the chain is broken", l.seq, l.line)
				return m
			}
		}
		seen[r.WorkflowID] = last{line: i + 1, seq: r.Seq, hash: r.Hash}
		src := source[r.WorkflowID]
		if r.Seq > len(src) {
			m.Why = fmt.Sprintf("not in the turn's history, which has %d records", len(src))
			return m
		}
		if want := src[r.Seq-1]; want.Hash != r.Hash {
			m.Why = "differs from the turn's history: " + differing(r, want)
			return m
		}
	}
	return nil
}

// differing names the JSON fields in which a and b differ (chain fields
// aside).
func differing(a, b Record) string {
	fields := func(r Record) map[string]json.RawMessage {
		r.Prev, r.Hash = "", ""
		out := map[string]json.RawMessage{}
		if bs, err := canonical(r); err == nil {
			_ = json.Unmarshal(bs, &out)
		}
		return out
	}
	fa, fb := fields(a), fields(b)
	var names []string
	for k, v := range fa {
		if !bytes.Equal(v, fb[k]) {
			names = append(names, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "the chain before it"
	}
	return strings.Join(names, ", ")
}

// MarshalLine is r as one JSON line (with its newline), as `starter
// audit --jsonl` and the audit stream write it.
func MarshalLine(r Record) ([]byte, error) {
	b, err := canonical(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// HeadFormat numbers how the audit reads a history, recorded with each
// chain head (workflows.HeadNote.Format): 2 reads a tool attempt cut
// off mid-run (cut_off) or run again (retried); heads without it were
// computed before, and the runs up to the last of them are read as then,
// so the heads they recorded still hold.
const HeadFormat = 2

// oldHeads says, for each run, whether it or a later run recorded a
// chain head without HeadFormat (computed by an audit that read the
// runs up to it without cut_off and retried records).
func (x *extractor) oldHeads(runs []Run) []bool {
	old := make([]bool, len(runs))
	last := -1
	for i, run := range runs {
		for _, e := range run.Events {
			a := e.GetMarkerRecordedEventAttributes()
			if a.GetMarkerName() != "SideEffect" {
				continue
			}
			var n workflows.AuditNote
			if x.decode(a.GetDetails()["data"], &n) == nil && n.Head != nil && n.Head.Format < HeadFormat {
				last = i
			}
		}
	}
	for i := 0; i <= last; i++ {
		old[i] = true
	}
	return old
}

// ErrHeadMismatch is the error of a history that no longer gives the
// audit chain head one of its runs recorded as it ended
// (workflows.HeadNote): an event before that point was changed, removed
// or added after the run recorded it.
var ErrHeadMismatch = errors.New("the history does not give the audit chain head it recorded")

// CheckHeads checks a turn's linked records against the chain heads its
// runs recorded: record Seq of each head must exist and have its Hash.
func CheckHeads(workflowID string, recs []Record, heads []workflows.HeadNote) error {
	for _, h := range heads {
		switch {
		case h.Seq > len(recs):
			return fmt.Errorf("turn %s: run %s recorded its chain head at record %d, and the history now gives %d records: %w",
				workflowID, h.RunID, h.Seq, len(recs), ErrHeadMismatch)
		case h.Seq > 0 && recs[h.Seq-1].Hash != h.Hash:
			return fmt.Errorf("turn %s: run %s recorded record %d's hash as %s, and the history now gives %s: %w",
				workflowID, h.RunID, h.Seq, h.Hash, recs[h.Seq-1].Hash, ErrHeadMismatch)
		}
	}
	return nil
}
