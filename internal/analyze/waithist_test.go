package analyze

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The histogram's summary is exactQueueWait's to the histogram's
// precision: the same count, the mean exact, each percentile the same
// nearest rank, never below the true wait's µs and at most 0.1 % above it.
func TestWaitHist(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	cases := []struct {
		name  string
		waits []time.Duration
		want  QueueWait
	}{
		// Sorted 125, 250, 500, 1000 ms: p50 is the 2nd, p95 and p99 the 4th.
		// 250,000 µs lies in a bucket of 128 µs, [249,984, 250,111]: its
		// highest value is reported (+0.04 %); 1000 ms is the maximum.
		{"four waits", ms(500, 125, 1000, 250), QueueWait{Available: true, Count: 4, MeanMs: 468.75, P50Ms: 250.111, P95Ms: 1000, P99Ms: 1000}},
		{"one wait", ms(0.25), QueueWait{Available: true, Count: 1, MeanMs: 0.25, P50Ms: 0.25, P95Ms: 0.25, P99Ms: 0.25}},
		{"zero waits are waits", ms(0, 0, 0), QueueWait{Available: true, Count: 3}},
		// 1234.5678 ms is recorded as 1,234,567 µs, in a bucket of width
		// 1024 µs: the bucket's highest value is above the maximum, so the
		// maximum's µs is reported; the mean stays exact.
		{"histogram precision", ms(1234.5678), QueueWait{Available: true, Count: 1, MeanMs: 1234.5678, P50Ms: 1234.567, P95Ms: 1234.567, P99Ms: 1234.567}},
		// Sad paths.
		{"an hour at most, never negative", []time.Duration{-time.Second, 2 * time.Hour}, QueueWait{Available: true, Count: 2, MeanMs: 1800e3, P50Ms: 0, P95Ms: 3600e3, P99Ms: 3600e3}},
		{"no waits", nil, QueueWait{Reason: "no observations"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w WaitHist
			for _, d := range tc.waits {
				w.Add(d)
			}
			got := w.QueueWait()
			if got.Available != tc.want.Available || got.Reason != tc.want.Reason || got.Count != tc.want.Count ||
				!near(got.MeanMs, tc.want.MeanMs) || !near(got.P50Ms, tc.want.P50Ms) || !near(got.P95Ms, tc.want.P95Ms) || !near(got.P99Ms, tc.want.P99Ms) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	var none *WaitHist
	if got := none.QueueWait(); got.Available || got.Reason != "no observations" {
		t.Errorf("nil: %+v", got)
	}
}

// Against the exact summary on random waits, and merged from parts equal
// to recording everything once.
func TestWaitHistAgainstExact(t *testing.T) {
	for iter := range 20 {
		rng := rand.New(rand.NewPCG(uint64(iter), 9))
		n := 1 + rng.IntN(5000)
		waits := make([]time.Duration, n)
		secs := make([]float64, n)
		var once WaitHist
		parts := make([]WaitHist, 1+rng.IntN(4))
		for i := range waits {
			waits[i] = time.Duration(rng.ExpFloat64() * float64(time.Duration(1+rng.IntN(3))*100*time.Millisecond))
			if rng.IntN(10) == 0 {
				waits[i] = 0
			}
			secs[i] = waits[i].Seconds()
			once.Add(waits[i])
			parts[rng.IntN(len(parts))].Add(waits[i])
		}
		got, exact := once.QueueWait(), exactQueueWait(secs)
		if got.Count != exact.Count || math.Abs(got.MeanMs-exact.MeanMs) > 1e-9*exact.MeanMs {
			t.Fatalf("n=%d: count %v mean %v, exact %v %v", n, got.Count, got.MeanMs, exact.Count, exact.MeanMs)
		}
		for _, p := range [][2]float64{{got.P50Ms, exact.P50Ms}, {got.P95Ms, exact.P95Ms}, {got.P99Ms, exact.P99Ms}} {
			lo := math.Floor(p[1]*1e3) / 1e3 // the exact wait's µs
			if p[0] < lo-1e-9 || p[0] > p[1]*1.001+1e-9 {
				t.Fatalf("n=%d: percentile %v ms, exact %v ms: outside [its µs, +0.1 %%]", n, p[0], p[1])
			}
		}
		var merged WaitHist
		for i := range parts {
			merged.Merge(&parts[i])
		}
		merged.Merge(nil)
		if m := merged.QueueWait(); m != got {
			t.Fatalf("merged %+v, recorded once %+v", m, got)
		}
	}
}
