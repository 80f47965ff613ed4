package tools

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Result size limits.
const (
	// DefaultResultBudget is CapResult's default budget in bytes.
	DefaultResultBudget = 64 << 10
	// MaxResultBudget is the largest budget CapResult honours: it keeps a
	// result well below Temporal's 2 MB payload limit, with room for the
	// rest of the activity's output.
	MaxResultBudget = 1536 << 10
	// minContentBudget is always left for the text.
	minContentBudget = 1 << 10
)

// CapResult bounds the serialised size of r to about budget bytes
// (DefaultResultBudget when budget <= 0, at most MaxResultBudget).
// Data blocks are counted as their base64 size and kept in order while
// they fit in three quarters of the budget; the others are dropped with a
// note. Metadata string values are shortened, longest first, when the
// metadata exceeds an eighth of the budget. Content keeps its head and
// tail with a note saying how many bytes were cut. The result exceeds the
// budget by at most the length of the notes (a few hundred bytes).
func CapResult(r Result, budget int) Result {
	if budget <= 0 {
		budget = DefaultResultBudget
	}
	budget = min(budget, MaxResultBudget)
	var notes []string

	// Data blocks.
	dataAllow := budget - min(len(r.Content), budget/4)
	used := 0
	if len(r.Data) > 0 {
		var kept []DataBlock
		dropped, droppedBytes := 0, 0
		for _, d := range r.Data {
			n := base64.StdEncoding.EncodedLen(len(d.Data)) + len(d.MediaType) + 32
			if used+n <= dataAllow {
				kept = append(kept, d)
				used += n
				continue
			}
			dropped++
			droppedBytes += len(d.Data)
		}
		if dropped > 0 {
			r.Data = kept
			notes = append(notes, fmt.Sprintf("[%d data block(s) of %d bytes omitted: the result is limited to %d bytes]", dropped, droppedBytes, budget))
		}
	}

	// Metadata.
	metaAllow := budget / 8
	if n := jsonSize(r.Metadata); n > metaAllow {
		r.Metadata = shrinkMetadata(r.Metadata, metaAllow)
	}
	used += jsonSize(r.Metadata)

	// Content.
	contentAllow := max(budget-used, minContentBudget)
	for _, n := range notes {
		r.Content += "\n" + n
	}
	if len(r.Content) > contentAllow {
		r.Content = cutMiddle(r.Content, contentAllow)
	}
	return r
}

// cutMiddle keeps the head and tail of s within max bytes, on rune
// boundaries, with a note in the middle.
func cutMiddle(s string, max int) string {
	if max < 0 {
		max = 0
	}
	head := max * 2 / 3
	tail := max - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	cut := start - head
	return fmt.Sprintf("%s\n\n... [%d bytes truncated: the output was %d bytes, the limit is %d] ...\n\n%s",
		s[:head], cut, len(s), max, s[start:])
}

func jsonSize(m map[string]any) int {
	if len(m) == 0 {
		return 0
	}
	b, err := json.Marshal(m)
	if err != nil {
		return 0
	}
	return len(b)
}

// shrinkMetadata shortens string values, longest first, and drops
// non-string values that are still too large, until m fits in allow
// bytes. It marks the result with "metadata_truncated".
func shrinkMetadata(m map[string]any, allow int) map[string]any {
	m = maps.Clone(m)
	m["metadata_truncated"] = true
	keys := slices.Collect(maps.Keys(m))
	size := func(k string) int { b, _ := json.Marshal(m[k]); return len(b) }
	slices.SortFunc(keys, func(a, b string) int {
		if d := size(b) - size(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		if k == "metadata_truncated" {
			continue
		}
		orig, isString := m[k].(string)
		target := len(orig)
		for range 4 {
			over := jsonSize(m) - allow
			if over <= 0 {
				break
			}
			target -= over + 256
			if !isString || target < 256 {
				delete(m, k)
				break
			}
			m[k] = cutMiddle(orig, target)
		}
		if jsonSize(m) <= allow {
			break
		}
	}
	return m
}
