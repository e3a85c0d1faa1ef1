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

// Phases from burstPhases: baseline 10–40 s, burst 40–50 s, recovery 50–110 s
// (six 10 s windows after the burst end). Baseline P99 e2e ≈ 1 s.
func TestRecovery(t *testing.T) {
	baseline := span{from: 10 * s, to: 40 * s, e2e: time.Second}
	burst := span{from: 40 * s, to: 50 * s, e2e: 8 * s}
	tests := []struct {
		name      string
		rule      RecoveryRule
		spans     []span
		recovered bool
		timeMs    float64
		message   string
	}{
		{"recovers in the third window", RecoveryRule{}, []span{
			{from: 50 * s, to: 70 * s, e2e: 5 * s}, {from: 70 * s, to: 110 * s, e2e: time.Second},
		}, true, 20000, "recovered 20s after the burst ended"},
		{"first window already qualifies", RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second},
		}, true, 0, "recovered 0ms after the burst ended"},
		{"within the 10% tolerance", RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: 1090 * ms},
		}, true, 0, "resolution 10s"},
		{"just beyond the 10% tolerance", RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: 1120 * ms},
		}, false, 0, "did not recover within the planned window: observed 60s after the burst ended (6 windows of 10s)"},
		{"a broken run starts again", RecoveryRule{}, []span{
			{from: 50 * s, to: 70 * s, e2e: time.Second}, {from: 70 * s, to: 80 * s, e2e: 3 * s},
			{from: 80 * s, to: 110 * s, e2e: time.Second},
		}, true, 30000, "recovered 30s"},
		{"failures stay high", RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second, fail: record.RateLimited, failEvery: 10},
		}, false, 0, "did not recover within the planned window"},
		{"failures within the tolerance", RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second, fail: record.HTTPError, failEvery: 100},
		}, true, 0, "failure rate <= 1%"},
		{"empty windows do not count", RecoveryRule{}, []span{
			{from: 50 * s, to: 70 * s, e2e: 5 * s},
		}, false, 0, "did not recover"},
		{"a censored p99 does not qualify", RecoveryRule{FailureTolerance: 0.5}, []span{
			{from: 50 * s, to: 80 * s, e2e: time.Second, fail: record.Timeout, failEvery: 33},
			{from: 80 * s, to: 110 * s, e2e: time.Second},
		}, true, 30000, "recovered 30s"},
		{"TTFT metric ignores slow completions", RecoveryRule{Metric: MetricTTFTSchedule}, []span{
			{from: 50 * s, to: 110 * s, e2e: 5 * s},
		}, true, 0, "p99 ttft_schedule"},
		{"two consecutive windows suffice when asked", RecoveryRule{Consecutive: 2}, []span{
			{from: 50 * s, to: 90 * s, e2e: 5 * s}, {from: 90 * s, to: 110 * s, e2e: time.Second},
		}, true, 40000, "2 windows in a row"},
		{"5 s windows resolve finer", RecoveryRule{Window: 5 * s}, []span{
			{from: 50 * s, to: 62 * s, e2e: 5 * s}, {from: 62 * s, to: 110 * s, e2e: time.Second},
		}, true, 15000, "resolution 5s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Phases: burstPhases(), Recovery: tc.rule, Timeout: 60 * s})
			baseline.add(a)
			burst.add(a)
			for _, sp := range tc.spans {
				sp.add(a)
			}
			rec := a.Result().Recovery
			if !rec.Judged {
				t.Fatalf("not judged: %s", rec.Reason)
			}
			if rec.Recovered != tc.recovered || rec.RecoveryTimeMs != tc.timeMs {
				t.Errorf("recovered=%v time=%v ms, want %v %v\n%s", rec.Recovered, rec.RecoveryTimeMs, tc.recovered, tc.timeMs, rec.Message)
			}
			if !strings.Contains(rec.Message, tc.message) {
				t.Errorf("message %q lacks %q", rec.Message, tc.message)
			}
			wantBase := 1000.0 // e2e
			if tc.rule.Metric == MetricTTFTSchedule {
				wantBase = 100
			}
			if !hdrNear(rec.BaselineP99Ms, wantBase) || !near(rec.ThresholdMs, rec.BaselineP99Ms*1.1) {
				t.Errorf("baseline p99 %v, threshold %v", rec.BaselineP99Ms, rec.ThresholdMs)
			}
			if rec.ObservedMs != 60000 || rec.BurstEndMs != 50000 {
				t.Errorf("observed %v after burst end %v, want 60000 after 50000", rec.ObservedMs, rec.BurstEndMs)
			}
			wantWindows := 6
			if tc.rule.Window == 5*s {
				wantWindows = 12
			}
			if len(rec.Windows) != wantWindows || rec.Windows[0].Index != 0 || rec.Windows[0].StartMs != 50000 {
				t.Errorf("%d recovery windows starting %+v, want %d from the burst end", len(rec.Windows), rec.Windows[0], wantWindows)
			}
		})
	}
}

func TestRecoveryNotJudged(t *testing.T) {
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
			if rec.Judged || rec.Recovered {
				t.Fatalf("judged=%v recovered=%v, want neither", rec.Judged, rec.Recovered)
			}
			if !strings.Contains(rec.Reason, tc.reason) || !strings.HasPrefix(rec.Message, "recovery not judged: ") {
				t.Errorf("reason %q / message %q, want %q", rec.Reason, rec.Message, tc.reason)
			}
		})
	}
}
