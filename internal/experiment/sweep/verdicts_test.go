package sweep

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/run"
)

// The end of `surge sweep`, on constructed levels: the findings, then the
// usable level and the first level over budget with the budget's clauses
// as measured vs limit, the knee, the headroom as why, and the exit line's
// meaning (0 when a usable level was found).
func TestVerdictsGolden(t *testing.T) {
	c := DefaultConfig()
	within := func(i int, name string, ttft string) Level {
		return Level{Index: i, Name: name, Budget: judge.Verdict{Outcome: judge.Pass}, BudgetWhy: "p95 TTFT " + ttft + " ≤ 2s, p95 TPOT 40ms ≤ 100ms, failures 0.0% ≤ 1%"}
	}
	pass := exptest.Verdict(exptest.TTFT(262, 2000, false, 400), exptest.E2E(9100, 12000, false, 400), exptest.Goodput(1, 0.99, 400))
	miss := exptest.Verdict(exptest.TTFT(417, 2000, false, 400), exptest.E2E(16769, 12000, false, 400), exptest.Goodput(0.953, 0.99, 400))
	slo := func(l Level, v judge.Verdict) Level {
		l.Result = &run.Result{Verdicts: &judge.Verdicts{Phases: []judge.PhaseVerdict{{Name: levelPhase, Verdict: v}}}}
		return l
	}
	broken := Level{Index: 4, Name: "c64", Budget: judge.Verdict{Outcome: judge.Fail}, BudgetWhy: "p95 TTFT 3.1s > 2s, p95 TPOT 95ms ≤ 100ms, failures 0.0% ≤ 1%"}
	cases := []struct {
		name string
		sr   Result
	}{
		{"verdicts-knee-and-break.txt", Result{Closed: true, Levels: []Level{within(1, "c1", "227ms"), within(2, "c4", "262ms"), within(3, "c16", "304ms"), broken}}},
		{"verdicts-unbounded.txt", Result{Closed: true, Levels: []Level{within(1, "c1", "227ms"), within(2, "c4", "262ms")}}},
		// Within budget at every level, yet the usable level misses the
		// SLO's p99 completion and goodput: the block says so beside the
		// budget, and names the levels where the SLO fails.
		{"verdicts-usable-misses-slo.txt", Result{Closed: true, Levels: []Level{slo(within(1, "c1", "227ms"), pass), slo(within(2, "c4", "262ms"), miss), slo(within(3, "c16", "417ms"), miss)}}},
		{"verdicts-first-breaks.txt", Result{Closed: true, Levels: []Level{{Index: 1, Name: "c1", Budget: judge.Verdict{Outcome: judge.Fail}, BudgetWhy: "p95 TTFT 3.1s > 2s, p95 TPOT 95ms ≤ 100ms, failures 0.0% ≤ 1%"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sr := tc.sr
			var lv, tput []float64
			var ok []judge.Outcome
			for i, l := range sr.Levels {
				lv, ok = append(lv, float64(int(1)<<(2*i))), append(ok, l.Budget.Outcome)
				tput = append(tput, []float64{48, 168, 180, 185}[i])
			}
			sr.Findings = findings(lv, tput, ok, c.KneeThreshold, c.levelName)
			var b strings.Builder
			printSummary(&b, &c, &sr, "out/sweep")
			b.WriteString("exit line: " + meaning(&sr) + "\n")
			golden.Check(t, tc.name, []byte(b.String()))
		})
	}
}
