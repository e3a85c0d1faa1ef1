package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// span adds one request every 100 ms in [from, to): ok with the given
// latencies, except every failEvery-th (i % failEvery == 0), which fails.
type span struct {
	from, to  time.Duration
	ttft, e2e time.Duration
	fail      record.Outcome
	failEvery int
}

func (sp span) add(a *Analyzer) {
	ttft := sp.ttft
	if ttft == 0 {
		ttft = 100 * ms
	}
	for i, t := 0, sp.from; t < sp.to; i, t = i+1, t+100*ms {
		if sp.failEvery > 0 && i%sp.failEvery == 0 {
			a.Add(failRec(t, sp.fail))
			continue
		}
		a.Add(okRec(t, 0, ttft, sp.e2e))
	}
}

// The recovery evidence of each window: its judged arrivals, the slow
// (above 1.1 × the baseline's p99) and the failed. Phases from
// burstPhases: baseline 10–40 s, burst 40–50 s, recovery 50–110 s.
func TestRecoveryCounts(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases(), Timeout: 60 * s})
	span{from: 10 * s, to: 40 * s, e2e: time.Second, fail: record.HTTPError, failEvery: 50}.add(a)
	span{from: 40 * s, to: 50 * s, e2e: 8 * s}.add(a)
	span{from: 50 * s, to: 60 * s, e2e: 5 * s, fail: record.Timeout, failEvery: 4}.add(a)
	span{from: 60 * s, to: 110 * s, e2e: time.Second}.add(a)
	// A request cancelled in flight and an empty answer: in no count.
	c := failRec(61*s, record.Cancelled)
	a.Add(c)
	rec := a.Result().Recovery
	if !rec.Measured {
		t.Fatalf("not measured: %s", rec.Reason)
	}
	if !hdrNear(rec.BaselineP99Ms, 1000) || !near(rec.ThresholdMs, rec.BaselineP99Ms*1.1) || rec.BaselineSamples != 294 {
		t.Errorf("baseline p99 %v over %d, threshold %v", rec.BaselineP99Ms, rec.BaselineSamples, rec.ThresholdMs)
	}
	// 300 baseline arrivals, one in 50 failed: 6.
	if rec.BaselineJudged != 300 || rec.BaselineFailed != 6 || rec.BaselineBad != 6 || len(rec.Baseline) != 3 {
		t.Errorf("baseline judged %d failed %d bad %d over %d windows; want 300, 6, 6 over 3", rec.BaselineJudged, rec.BaselineFailed, rec.BaselineBad, len(rec.Baseline))
	}
	if len(rec.Windows) != 6 || rec.Windows[0].Index != 0 || rec.Windows[0].StartMs != 50000 {
		t.Fatalf("%d windows from %+v; want 6 from the burst end", len(rec.Windows), rec.Windows[0])
	}
	// Window 0: 100 arrivals, 25 timed out, 75 slow (5 s > 1.1 s).
	if w := rec.Windows[0]; w.Judged != 100 || w.Failed != 25 || w.Slow != 75 || w.Bad != 100 || !w.P99Censored {
		t.Errorf("window 0 %+v", w)
	}
	// Window 1: 100 fast, and one cancelled that counts nowhere.
	if w := rec.Windows[1]; w.Offered != 101 || w.Judged != 100 || w.Bad != 0 || w.Phase != "recovery" {
		t.Errorf("window 1 %+v", w)
	}
}

func TestRecoveryNotMeasured(t *testing.T) {
	tests := []struct {
		name   string
		phases []Phase
		spans  []span
		reason string
	}{
		{"no burst phase", []Phase{{Name: "baseline", End: 60 * s}}, []span{{from: 0, to: 60 * s, e2e: time.Second}},
			`no phase named "burst"`},
		{"no baseline phase", []Phase{{Name: "burst", End: 10 * s}, {Name: "after", Start: 10 * s, End: 60 * s}},
			[]span{{from: 0, to: 60 * s, e2e: time.Second}}, `no phase named "baseline"`},
		{"baseline without samples", burstPhases(), []span{{from: 40 * s, to: 110 * s, e2e: time.Second}},
			"the baseline phase has no e2e_schedule samples"},
		{"baseline p99 censored", burstPhases(), []span{{from: 10 * s, to: 110 * s, e2e: time.Second, fail: record.Timeout, failEvery: 50}},
			"the baseline phase's p99 e2e_schedule is unknown (> 60s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Phases: tc.phases, Timeout: time.Minute})
			for _, sp := range tc.spans {
				sp.add(a)
			}
			rec := a.Result().Recovery
			if rec.Measured || !strings.Contains(rec.Reason, tc.reason) {
				t.Errorf("measured %v, reason %q; want not measured for %q", rec.Measured, rec.Reason, tc.reason)
			}
		})
	}
}

func TestCountAtOrBelow(t *testing.T) {
	h := newHist(true)
	for v := int64(1); v <= 1000; v++ {
		_ = h.RecordValue(v * 1000) // 1..1000 ms in µs; a value reads as its bucket's highest (≤ 0.1% above)
	}
	for _, tc := range []struct{ v, want int64 }{{0, 0}, {999, 0}, {1000, 1}, {501_000, 500}, {1_001_000, 1000}, {2_000_000, 1000}} {
		if got := countAtOrBelow(h, 1000, tc.v, 1_000_000); got != tc.want {
			t.Errorf("countAtOrBelow(%d µs) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
