package judge

import (
	"cmp"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/scrape"
)

// span adds one request every gap (100 ms when zero) in [from, to): ok
// with the given latencies, except every failEvery-th (i % failEvery ==
// 0), which fails.
type span struct {
	from, to  time.Duration
	ttft, e2e time.Duration
	fail      record.Outcome
	failEvery int
	gap       time.Duration
}

func (sp span) add(a *analyze.Analyzer) {
	ttft := sp.ttft
	if ttft == 0 {
		ttft = 100 * ms
	}
	gap := sp.gap
	if gap == 0 {
		gap = 100 * ms
	}
	for i, t := 0, sp.from; t < sp.to; i, t = i+1, t+gap {
		if sp.failEvery > 0 && i%sp.failEvery == 0 {
			a.Add(failRec(t, sp.fail))
			continue
		}
		a.Add(okRec(t, 0, ttft, sp.e2e))
	}
}

// burstPhases is a small burst experiment: warmup 0–10 s, baseline 10–40 s,
// burst 40–50 s, recovery 50–110 s.
func burstPhases() []analyze.Phase {
	return []analyze.Phase{
		{Name: "warmup", Start: 0, End: 10 * s, Rate: 10, Excluded: true},
		{Name: "baseline", Start: 10 * s, End: 40 * s, Rate: 10},
		{Name: "burst", Start: 40 * s, End: 50 * s, Rate: 50},
		{Name: "recovery", Start: 50 * s, End: 110 * s, Rate: 10},
	}
}

func judged(t *testing.T, rule analyze.RecoveryRule, spans []span, samples []scrape.Sample) Recovery {
	t.Helper()
	a, err := analyze.New(analyze.Config{Phases: burstPhases(), Recovery: rule, Timeout: 60 * s})
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spans {
		sp.add(a)
	}
	return JudgeRecovery(a.Result(), samples)
}

// Baseline 10–40 s at 10/s with p99 completion 1 s: a request is slow
// above 1.1 s; a 10 s window holds 100 requests and is slow from 6 bad
// ones (P(Bin(100, 1%) ≥ 6) = 0.05% ≤ 0.1%).
func TestRecovery(t *testing.T) {
	baseline := span{from: 10 * s, to: 40 * s, e2e: time.Second}
	burst := span{from: 40 * s, to: 50 * s, e2e: 8 * s}
	tests := []struct {
		name    string
		rule    analyze.RecoveryRule
		spans   []span
		outcome Outcome
		timeMs  float64
		message string
	}{
		{"recovers in the third window", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 70 * s, e2e: 5 * s}, {from: 70 * s, to: 110 * s, e2e: time.Second},
		}, Pass, 20000, "recovered 20s after the burst ended: 3 windows in a row with no more requests slower than 1.1s"},
		{"first window already recovered", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second},
		}, Pass, 0, "recovered 0ms after the burst ended"},
		{"within the 10% tolerance", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: 1090 * ms},
		}, Pass, 0, "resolution 10s"},
		{"just beyond the 10% tolerance", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: 1120 * ms},
		}, Fail, 0, "did not recover within the planned window: observed 60s after the burst ended (6 windows of 10s)"},
		{"a slow window starts the count again", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 70 * s, e2e: time.Second}, {from: 70 * s, to: 80 * s, e2e: 3 * s},
			{from: 80 * s, to: 110 * s, e2e: time.Second},
		}, Pass, 30000, "recovered 30s"},
		// Five slow requests in a window of 100 are within what the
		// baseline's 1% allows by chance; the slowest of them would
		// have been the window's p99 (and failed the old rule).
		{"a few slow requests are not a slow window", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second}, {from: 50*s + 50*ms, to: 50*s + 550*ms, e2e: 3 * s},
			{from: 60*s + 50*ms, to: 60*s + 550*ms, e2e: 3 * s},
		}, Pass, 0, "recovered 0ms"},
		{"failures stay high", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second, fail: record.RateLimited, failEvery: 10},
		}, Fail, 0, "did not recover"},
		{"a failure per window is within the baseline's share", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 110 * s, e2e: time.Second, fail: record.HTTPError, failEvery: 100},
		}, Pass, 0, "or failed than 1% of them allows"},
		{"timeouts are bad requests", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 80 * s, e2e: time.Second, fail: record.Timeout, failEvery: 10},
			{from: 80 * s, to: 110 * s, e2e: time.Second},
		}, Pass, 30000, "recovered 30s"},
		{"the observation ends before three windows", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 90 * s, e2e: 5 * s}, {from: 90 * s, to: 110 * s, e2e: time.Second},
		}, Inconclusive, 0, "no slow window from 40s after the burst on, but the observation ended after 2 of the 3 windows in a row"},
		{"empty windows cannot show a recovery", analyze.RecoveryRule{}, []span{
			{from: 50 * s, to: 70 * s, e2e: 5 * s},
		}, Inconclusive, 0, "recovery inconclusive: no slow window from 20s after the burst on, but windows of fewer than"},
		{"TTFT metric ignores slow completions", analyze.RecoveryRule{Metric: analyze.MetricTTFTSchedule}, []span{
			{from: 50 * s, to: 110 * s, e2e: 5 * s},
		}, Pass, 0, "of ttft_schedule"},
		{"two consecutive windows suffice when asked", analyze.RecoveryRule{Consecutive: 2}, []span{
			{from: 50 * s, to: 90 * s, e2e: 5 * s}, {from: 90 * s, to: 110 * s, e2e: time.Second},
		}, Pass, 40000, "2 windows in a row"},
		{"5 s windows resolve finer", analyze.RecoveryRule{Window: 5 * s}, []span{
			{from: 50 * s, to: 62 * s, e2e: 5 * s}, {from: 62 * s, to: 110 * s, e2e: time.Second},
		}, Pass, 15000, "resolution 5s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := judged(t, tc.rule, append([]span{baseline, burst}, tc.spans...), nil)
			if rec.Outcome != tc.outcome || rec.RecoveryTimeMs != tc.timeMs || rec.Recovered != (tc.outcome == Pass) {
				t.Errorf("%s recovered=%v time=%v ms, want %s %v\n%s", rec.Outcome, rec.Recovered, rec.RecoveryTimeMs, tc.outcome, tc.timeMs, rec.Message)
			}
			if !strings.Contains(rec.Message, tc.message) {
				t.Errorf("message %q lacks %q", rec.Message, tc.message)
			}
			w := cmp.Or(tc.rule.Window, 10*s)
			if rec.BaselineWindows != int(30*s/w) || rec.BaselineSlow != 0 {
				t.Errorf("the rule called %d of %d baseline windows slow", rec.BaselineSlow, rec.BaselineWindows)
			}
		})
	}
}

// At 2 req/s a 10 s window holds 20 requests: too few to tell 1% bad
// from 10% (undecided). A recovery then has only its earliest time, and
// wider windows decide it (30 s, one as long as the baseline).
func TestRecoveryWindowsTooSmall(t *testing.T) {
	slow := func(from, to time.Duration, e2e time.Duration) span {
		return span{from: from, to: to, e2e: e2e, gap: 500 * ms}
	}
	spans := []span{slow(10*s, 40*s, time.Second), slow(40*s, 50*s, 8*s), slow(50*s, 70*s, 6*s), slow(70*s, 110*s, time.Second)}
	rec := judged(t, analyze.RecoveryRule{}, spans, nil)
	if rec.Outcome != Inconclusive || !rec.EarliestKnown || rec.EarliestMs != 20000 || rec.LatestKnown || rec.MinJudged <= 20 {
		t.Fatalf("10 s windows: %s earliest %v (%v) latest known %v, min judged %d\n%s", rec.Outcome, rec.EarliestMs, rec.EarliestKnown, rec.LatestKnown, rec.MinJudged, rec.Message)
	}
	if rec.Windows[3].State != WindowUndecided || rec.Windows[0].State != WindowSlow {
		t.Errorf("window states %s, %s; want slow, then undecided", rec.Windows[0].State, rec.Windows[3].State)
	}
	rec = judged(t, analyze.RecoveryRule{Window: 30 * s, Consecutive: 1}, spans, nil)
	if rec.Outcome != Pass || rec.RecoveryTimeMs != 30000 {
		t.Errorf("30 s windows: %s at %v ms\n%s", rec.Outcome, rec.RecoveryTimeMs, rec.Message)
	}
}

func TestMinJudged(t *testing.T) {
	// At a 1% share: 40 requests, where 4 bad are slow (P ≤ 0.1%) and a
	// 10% bad share gives 4 or more with even odds.
	if n := minJudged(0.01); n < 35 || n > 45 {
		t.Errorf("minJudged(1%%) = %d, want about 40", n)
	}
	if a, b := minJudged(0.01), minJudged(0.05); b <= a {
		t.Errorf("a noisier baseline needs more requests: %d at 1%%, %d at 5%%", a, b)
	}
}

// The engine's waiting queue back at the baseline's level, beside the
// latency's recovery.
func TestQueueDrain(t *testing.T) {
	baseline := span{from: 10 * s, to: 40 * s, e2e: time.Second}
	burst := span{from: 40 * s, to: 50 * s, e2e: 8 * s}
	after := []span{{from: 50 * s, to: 70 * s, e2e: 5 * s}, {from: 70 * s, to: 110 * s, e2e: time.Second}}
	var samples []scrape.Sample
	for t := 0 * s; t < 110*s; t += s {
		w := 1.0
		switch {
		case t >= 40*s && t < 50*s:
			w = float64(t-40*s) / float64(s) * 10 // up to 90
		case t >= 50*s && t < 68*s:
			w = 90 - float64(t-50*s)/float64(s)*5 // drains by 68 s
		}
		samples = append(samples, scrape.Sample{TNs: int64(t), Waiting: max(w, 0), Running: math.NaN()})
	}
	rec := judged(t, analyze.RecoveryRule{}, append([]span{baseline, burst}, after...), samples)
	q := rec.Queue
	if !q.Measured || !q.Drained || q.BaselineMax != 1 || q.Peak != 90 || q.DrainedMs != 18000 {
		t.Errorf("queue %+v; want drained 18 s after the burst, peak 90, baseline 1", q)
	}
	if rec.RecoveryTimeMs != 20000 {
		t.Errorf("latency recovered at %v ms, want 20 s", rec.RecoveryTimeMs)
	}
	if q := judged(t, analyze.RecoveryRule{}, append([]span{baseline, burst}, after...), nil).Queue; q.Measured || q.Reason == "" {
		t.Errorf("without samples: %+v", q)
	}
}

// Bad input: a recovery the samples cannot show is INCONCLUSIVE with its
// reason, never a crash and never a PASS.
func TestRecoveryBadInput(t *testing.T) {
	burst := span{from: 40 * s, to: 50 * s, e2e: 8 * s}
	after := span{from: 50 * s, to: 110 * s, e2e: time.Second}
	tests := []struct {
		name   string
		rule   analyze.RecoveryRule
		spans  []span
		reason string
	}{
		{"no baseline samples", analyze.RecoveryRule{}, []span{burst, after}, "the baseline phase has no e2e_schedule samples"},
		{"every baseline request failed", analyze.RecoveryRule{}, []span{
			{from: 10 * s, to: 40 * s, fail: record.HTTPError, failEvery: 1}, burst, after,
		}, "the baseline phase has no e2e_schedule samples"},
		{"every baseline request timed out", analyze.RecoveryRule{}, []span{
			{from: 10 * s, to: 40 * s, fail: record.Timeout, failEvery: 1}, burst, after,
		}, "p99 e2e_schedule is unknown"},
		{"a baseline shorter than three windows", analyze.RecoveryRule{Window: 15 * s}, []span{
			{from: 10 * s, to: 40 * s, e2e: time.Second}, burst, after,
		}, "the baseline's 30s is shorter than the 3 windows of 15s in a row"},
		{"a burst with no completions", analyze.RecoveryRule{}, []span{
			{from: 10 * s, to: 40 * s, e2e: time.Second}, {from: 40 * s, to: 50 * s, fail: record.Timeout, failEvery: 1},
		}, "no slow window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := judged(t, tc.rule, tc.spans, nil)
			if rec.Outcome != Inconclusive || rec.Recovered {
				t.Errorf("%s (recovered %v), want INCONCLUSIVE\n%s", rec.Outcome, rec.Recovered, rec.Message)
			}
			if !strings.Contains(rec.Message, tc.reason) {
				t.Errorf("message %q lacks %q", rec.Message, tc.reason)
			}
		})
	}
}
