package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/judge"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/run"
)

// The end of `surge soak`, on constructed results: the drift lines, then
// the SLO over the soak (every clause, measured vs limit) and the drift
// verdict naming what drifts, and the exit line's meaning.
func TestVerdictsGolden(t *testing.T) {
	o := run.DefaultOptions()
	pass := exptest.Verdict(exptest.TTFT(326, 2000, false, 2475), exptest.E2E(8680, 12000, false, 2475), exptest.Goodput(0.999, 0.99, 2475))
	fail := exptest.Verdict(exptest.TTFT(2600, 2000, false, 2475), exptest.E2E(8680, 12000, false, 2475), exptest.Goodput(0.97, 0.99, 2475))
	stable := []judge.Drift{{Metric: "p95 TTFT", Tested: true, Text: "p95 TTFT: -203ms per hour (…) → stable"}, {Metric: "failure rate", Tested: true, Text: "failure rate: +0% per hour (…) → stable"}}
	drifting := []judge.Drift{{Metric: "p95 TTFT", Tested: true, Drifting: true, Text: "p95 TTFT: +2.1s per hour (…) → DRIFTING"}, {Metric: "p95 completion", Tested: true, Drifting: true, Text: "p95 completion: +9s per hour (…) → DRIFTING"}, {Metric: "failure rate", Tested: true, Text: "failure rate: +0% per hour (…) → stable"}}
	untested := []judge.Drift{{Metric: "p95 TTFT", Why: "2 windows, need 3", Text: "p95 TTFT: not tested (2 windows, need 3)"}, {Metric: "failure rate", Why: "2 windows, need 3", Text: "failure rate: not tested (2 windows, need 3)"}}
	// 20 windows of 600 requests, 6 of them clearly over the p99
	// completion limit and 2 of those clearly under the goodput target
	// too, while the soak as a whole passes: the block says how many
	// windows failed which clause.
	wins := make([]Window, 20)
	for i := range wins {
		st := &wins[i].Stats
		st.Offered, st.Good, st.GoodputRatio = 600, 600, 1
		st.Latency.TTFTSchedule = analyze.Dist{Count: 600, P95Ms: 400, P95CI: analyze.Interval{LoMs: 380, HiMs: 420}}
		st.Latency.E2ESchedule = analyze.Dist{Count: 600, P99Ms: 9000, P99CI: analyze.Interval{LoMs: 8800, HiMs: 9300}}
		if i%3 == 0 && i > 0 { // windows 3, 6, …, 18: 6 of them
			st.Latency.E2ESchedule.P99Ms, st.Latency.E2ESchedule.P99CI = 13500, analyze.Interval{LoMs: 13000, HiMs: 14200}
		}
		if i == 3 || i == 9 {
			st.Good, st.GoodputRatio = 570, 0.95
		}
		wins[i].Verdict = o.SLO().Check(st)
	}
	cases := []struct {
		name    string
		v       judge.Verdict
		trends  []judge.Drift
		verdict string
		windows []Window
	}{
		{"verdicts-windows-fail.txt", pass, stable, judge.DriftStable, wins},
		{"verdicts-stable.txt", pass, stable, judge.DriftStable, nil},
		{"verdicts-drifting.txt", fail, drifting, judge.DriftDrifting, nil},
		{"verdicts-inconclusive.txt", pass, untested, judge.DriftInconclusive, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sr := &Result{Result: &run.Result{Analysis: &analyze.Result{}, Verdicts: &judge.Verdicts{Overall: tc.v}}, Trends: tc.trends, Verdict: tc.verdict, Window: time.Minute, Windows: tc.windows}
			if sr.Windows == nil {
				sr.Windows = make([]Window, 10)
			}
			var b strings.Builder
			printEnd(&b, &o, sr, "out/soak")
			b.WriteString("exit line: " + meaning(sr) + "\n")
			golden.Check(t, tc.name, []byte(b.String()))
		})
	}
}
