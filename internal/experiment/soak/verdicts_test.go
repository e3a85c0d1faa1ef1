package soak

import (
	"strings"
	"testing"
	"time"

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
	stable := []analyze.Drift{{Metric: "p95 TTFT", Tested: true, Text: "p95 TTFT: -203ms per hour (…) → stable"}, {Metric: "failure rate", Tested: true, Text: "failure rate: +0% per hour (…) → stable"}}
	drifting := []analyze.Drift{{Metric: "p95 TTFT", Tested: true, Drifting: true, Text: "p95 TTFT: +2.1s per hour (…) → DRIFTING"}, {Metric: "p95 completion", Tested: true, Drifting: true, Text: "p95 completion: +9s per hour (…) → DRIFTING"}, {Metric: "failure rate", Tested: true, Text: "failure rate: +0% per hour (…) → stable"}}
	untested := []analyze.Drift{{Metric: "p95 TTFT", Why: "2 windows, need 3", Text: "p95 TTFT: not tested (2 windows, need 3)"}, {Metric: "failure rate", Why: "2 windows, need 3", Text: "failure rate: not tested (2 windows, need 3)"}}
	cases := []struct {
		name    string
		v       analyze.Verdict
		trends  []analyze.Drift
		verdict string
	}{
		{"verdicts-stable.txt", pass, stable, analyze.DriftStable},
		{"verdicts-drifting.txt", fail, drifting, analyze.DriftDrifting},
		{"verdicts-inconclusive.txt", pass, untested, analyze.DriftInconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sr := &Result{Result: &run.Result{Analysis: &analyze.Result{Verdict: tc.v}}, Trends: tc.trends, Verdict: tc.verdict, Window: time.Minute, Windows: make([]Window, 10)}
			var b strings.Builder
			printEnd(&b, &o, sr, "out/soak")
			b.WriteString("exit line: " + meaning(sr) + "\n")
			exptest.Golden(t, tc.name, b.String())
		})
	}
}
