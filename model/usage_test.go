package model

import (
	"math"
	"testing"
)

func TestPriceCost(t *testing.T) {
	u := Usage{InputTokens: 1_000_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 500_000, OutputTokens: 100_000}
	for _, c := range []struct {
		name string
		p    Price
		want float64
	}{
		// 1M×3 + 2M×0.3 + 0.5M×3.75 + 0.1M×15.
		{"every kind priced", Price{Input: 3, CachedInput: 0.3, CacheWrite: 3.75, Output: 15}, 3 + 0.6 + 1.875 + 1.5},
		// Cached and cache-write input at the input price when unset.
		{"input price for the cache", Price{Input: 3, Output: 15}, 3 + 6 + 1.5 + 1.5},
	} {
		if got := c.p.Cost(u); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: cost %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	c := 0.25
	a := Usage{InputTokens: 10, OutputTokens: 2, Cost: &c}
	b := Usage{InputTokens: 5, CacheReadTokens: 7, CacheWriteTokens: 1, OutputTokens: 3}
	s := a.Add(b)
	if s.InputTokens != 15 || s.CacheReadTokens != 7 || s.CacheWriteTokens != 1 || s.OutputTokens != 5 {
		t.Errorf("sum %+v", s)
	}
	if s.Cost == nil || *s.Cost != 0.25 || s.Total() != 28 || s.Input() != 23 {
		t.Errorf("sum %v: cost %v, total %d", s, s.Cost, s.Total())
	}
	// Control: unpriced plus unpriced has no cost.
	if n := b.Add(b); n.Cost != nil {
		t.Errorf("unpriced sum has a cost: %v", *n.Cost)
	}
	if got, want := s.String(), "23 in (7 cached, 1 written to cache), 5 out, cost 0.250000"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
