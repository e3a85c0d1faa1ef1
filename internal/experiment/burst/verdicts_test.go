package burst

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/judge"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
)

// constructedRun is a burst run at k× whose baseline, burst and recovery
// phases and whole run have the given verdicts; the baseline offered n
// requests.
//
// The baseline's stats follow its verdict, as in the demo: 4 req/s
// against a capacity μ of 9.14 req/s, TTFT from send p95 as its TTFT
// clause, every request succeeded and the goodput clause's share in time.
func constructedRun(k float64, n int64, baseline, burst, recovery, overall judge.Verdict) Run {
	a := &analyze.Result{}
	v := &judge.Verdicts{Overall: overall}
	a.Settings.TTFTDeadlineMs, a.Settings.E2EDeadlineMs = 2000, 12000
	for _, p := range []struct {
		name string
		v    judge.Verdict
	}{{schedule.PhaseWarmup, exptest.Verdict()}, {schedule.PhaseBaseline, baseline}, {schedule.PhaseBurst, burst}, {schedule.PhaseRecovery, recovery}} {
		pr := analyze.PhaseResult{Name: p.name, Excluded: p.name == schedule.PhaseWarmup}
		pr.Offered, pr.Succeeded, pr.OfferedRPS = n, n, 4
		for _, c := range p.v.Clauses {
			switch c.Name {
			case judge.ClauseTTFTP95:
				pr.Latency.TTFTSend = analyze.Dist{Count: c.Samples, P95Ms: c.Measured, P95Censored: c.Bound}
			case judge.ClauseGoodputRatio:
				pr.Good = int64(math.Round(c.Measured * float64(n)))
			}
		}
		a.Phases = append(a.Phases, pr)
		v.Phases = append(v.Phases, judge.PhaseVerdict{Name: p.name, Excluded: pr.Excluded, Verdict: p.v})
	}
	return Run{K: k, Result: &run.Result{Analysis: a, Verdicts: v}, Mu: 9.14, MuSource: "simulated engine"}
}

// withEmptyBaseline makes n of r's baseline successes answers that
// carried no token.
func withEmptyBaseline(r Run, n int64) Run {
	for i := range r.Result.Analysis.Phases {
		if p := &r.Result.Analysis.Phases[i]; p.Name == schedule.PhaseBaseline {
			p.Tokenless = n
		}
	}
	return r
}

// The burst's closing block, on constructed verdicts: a line per
// multiplier with each phase's verdict and the failing clauses of the
// phase that matters; a baseline that already missed the SLO in every run
// explained once, first; the exit line names the multipliers that failed.
func TestVerdictsGolden(t *testing.T) {
	o := run.DefaultOptions()
	ok := exptest.Verdict(exptest.TTFT(380, 2000, false, 300), exptest.E2E(9100, 12000, false, 300), exptest.Goodput(0.995, 0.99, 300))
	slowBase := exptest.Verdict(exptest.TTFT(640, 2000, false, 83), exptest.E2E(10400, 12000, false, 83), exptest.Goodput(0.9518, 0.99, 83))
	burstMiss := exptest.Verdict(exptest.TTFT(60000, 2000, true, 892), exptest.E2E(60000, 12000, true, 892), exptest.Goodput(0.031, 0.99, 1186))
	burstSoft := exptest.Verdict(exptest.TTFT(557, 2000, false, 485), exptest.E2E(15400, 12000, false, 485), exptest.Goodput(0.965, 0.99, 485))
	overallMiss := exptest.Verdict(exptest.TTFT(60000, 2000, true, 3635), exptest.E2E(60000, 12000, true, 3635), exptest.Goodput(0.6897, 0.99, 4860))
	onlyOverall := exptest.Verdict(exptest.TTFT(400, 2000, false, 900), exptest.E2E(11000, 12000, false, 900), exptest.Goodput(0.9896, 0.99, 900))

	cases := []struct {
		name string
		runs []Run
	}{
		{"verdicts-baseline-fails.txt", []Run{
			constructedRun(2, 83, slowBase, burstSoft, ok, ok),
			constructedRun(5, 83, slowBase, burstMiss, burstMiss, overallMiss),
			constructedRun(10, 83, slowBase, burstMiss, burstMiss, overallMiss),
		}},
		{"verdicts-baseline-fails-some.txt", []Run{
			constructedRun(2, 300, ok, ok, ok, ok),
			constructedRun(5, 83, slowBase, burstMiss, burstMiss, overallMiss),
			constructedRun(10, 83, slowBase, burstMiss, burstMiss, overallMiss),
		}},
		{"verdicts-baseline-minor-miss.txt", []Run{
			constructedRun(2, 83, exptest.Verdict(exptest.TTFT(653, 2000, false, 83), exptest.E2E(14900, 12000, false, 83), exptest.Goodput(0.988, 0.99, 83)), burstSoft, ok, ok),
			constructedRun(5, 83, slowBase, burstMiss, burstMiss, overallMiss),
		}},
		// A baseline whose first tokens came late queued: it may not be
		// sustainable, whatever its goodput; the other run's baseline
		// missed by long answers.
		{"verdicts-baseline-queued.txt", []Run{
			constructedRun(2, 83, slowBase, burstSoft, ok, ok),
			constructedRun(5, 83, exptest.Verdict(exptest.TTFT(2600, 2000, false, 83), exptest.E2E(14000, 12000, false, 83), exptest.Goodput(0.988, 0.99, 83)), burstMiss, burstMiss, overallMiss),
		}},
		// First tokens in time below μ, but one answer in eight too
		// long: not queueing, a completion deadline short for them.
		{"verdicts-baseline-many-late.txt", []Run{
			constructedRun(2, 83, exptest.Verdict(exptest.TTFT(640, 2000, false, 83), exptest.E2E(16000, 12000, false, 83), exptest.Goodput(0.88, 0.99, 83)), burstSoft, ok, ok),
		}},
		// One ok answer of the baseline carried no token: an empty
		// answer, not a long one, and no deadline was missed.
		{"verdicts-baseline-empty.txt", []Run{
			withEmptyBaseline(constructedRun(2, 83, exptest.Verdict(exptest.TTFT(640, 2000, false, 82), exptest.E2E(9000, 12000, false, 82), exptest.Goodput(0.988, 0.99, 83)), burstSoft, ok, ok), 1),
		}},
		{"verdicts-all-pass.txt", []Run{
			constructedRun(2, 300, ok, ok, ok, ok),
			constructedRun(3, 300, ok, ok, ok, ok),
		}},
		{"verdicts-only-overall-fails.txt", []Run{
			constructedRun(2, 300, ok, ok, ok, onlyOverall),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			why := baselineNotes(tc.runs)
			printVerdicts(&b, &o, tc.runs, nil, why)
			b.WriteString("exit line: " + meaning(tc.runs) + "\n")
			golden.Check(t, tc.name, []byte(b.String()))
		})
	}
}

// A baseline shows queueing by its TTFT, its timeouts or its rate against
// μ — not by how many requests missed their deadline.
func TestBaselineQueued(t *testing.T) {
	slow := exptest.Verdict(exptest.TTFT(640, 2000, false, 83), exptest.E2E(14000, 12000, false, 83), exptest.Goodput(0.90, 0.99, 83))
	for _, tc := range []struct {
		name string
		edit func(r *Run, b *analyze.PhaseResult)
		want bool
	}{
		{"long answers, many misses", func(*Run, *analyze.PhaseResult) {}, false},
		{"first tokens late", func(_ *Run, b *analyze.PhaseResult) { b.Latency.TTFTSend.P95Ms = 2500 }, true},
		{"timeouts", func(_ *Run, b *analyze.PhaseResult) { b.TimeoutRate = 0.03 }, true},
		{"at capacity", func(r *Run, _ *analyze.PhaseResult) { r.Mu = 4 }, true},
		{"μ unknown", func(r *Run, _ *analyze.PhaseResult) { r.Mu = 0 }, false},
	} {
		r := constructedRun(2, 83, slow, slow, slow, slow)
		b, _ := r.Result.Analysis.Phase(schedule.PhaseBaseline)
		tc.edit(&r, &b)
		bv, _ := r.Result.Verdicts.Phase(schedule.PhaseBaseline)
		if ev, got := baselineQueued(&r, b, bv); got != tc.want {
			t.Errorf("%s: queued %v (%q), want %v", tc.name, got, ev, tc.want)
		}
	}
}

// A recovery is late only when it clearly misses the prediction (× 1.25
// + one window); unknown when either side is.
func TestRecoveryLate(t *testing.T) {
	pred := &predict.Prediction{RecoveryTime: 100 * time.Second}
	w := 10 * time.Second
	for _, tc := range []struct {
		name string
		r    Run
		want string
	}{
		{"on time", Run{Prediction: pred, Recovery: report.RecoveredAfter(130)}, "false"},
		{"late", Run{Prediction: pred, Recovery: report.RecoveredAfter(140)}, "true"},
		{"never recovered, watched long", Run{Prediction: pred, Recovery: report.NotRecoveredWithin(300)}, "true"},
		{"never recovered, watched briefly", Run{Prediction: pred, Recovery: report.NotRecoveredWithin(60)}, "nil"},
		{"no prediction", Run{Recovery: report.RecoveredAfter(500)}, "nil"},
		{"predicted never", Run{Prediction: &predict.Prediction{Never: true}, Recovery: report.RecoveredAfter(500)}, "nil"},
		{"recovery unknown", Run{Prediction: pred, Recovery: report.RecoveryNA("x")}, "nil"},
	} {
		got := "nil"
		if l := recoveryLate(&tc.r, w); l != nil {
			got = strconv.FormatBool(*l)
		}
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A calm baseline's misses are named by their most common reason, the
// others as "a few": long answers, empty answers (ok without a token: not
// late), failed requests.
func TestMissCause(t *testing.T) {
	for _, tc := range []struct {
		late, empty, failed int64
		want                string
	}{
		{4, 0, 0, "long answers past the 12s completion deadline"},
		{4, 0, 1, "long answers past the 12s completion deadline, and a few failed requests"},
		{1, 0, 3, "failed requests (see the failure columns), and a few long answers"},
		{0, 1, 0, "empty answers (ok, but the stream carried no token)"},
		{1, 2, 1, "empty answers (ok, but the stream carried no token), and a few long answers and failed requests"},
	} {
		if got := missCause(tc.late, tc.empty, tc.failed, 12000); got != tc.want {
			t.Errorf("late %d, empty %d, failed %d: %q, want %q", tc.late, tc.empty, tc.failed, got, tc.want)
		}
	}
}
