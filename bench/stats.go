package bench

import (
	"math"
	"slices"
	"time"
)

// Stats summarises a set of durations, in milliseconds.
type Stats struct {
	N        int     `json:"n"`
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
	MeanMS   float64 `json:"mean_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// Summarize computes Stats over ds. The median of an even count is the
// mean of the two middle values; p95 is the nearest-rank percentile. An
// empty input gives the zero Stats.
func Summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	rank := int(math.Ceil(0.95*float64(n))) - 1
	return Stats{
		N:        n,
		MedianMS: ms(med),
		P95MS:    ms(s[rank]),
		MeanMS:   ms(sum / time.Duration(n)),
		MinMS:    ms(s[0]),
		MaxMS:    ms(s[n-1]),
	}
}

// ms converts d to milliseconds rounded to 0.01 ms.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)/10) / 100
}

// ratio returns a/b rounded to 0.1, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*10) / 10
}
