package sweep

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/golden"

	"github.com/surge-bench/surge/internal/analyze"
)

// The end of `surge sweep`, on constructed levels: the findings, then the
// usable level and the first level over budget with the budget's clauses
// as measured vs limit, the knee, the headroom as why, and the exit line's
// meaning (0 when a usable level was found).
func TestVerdictsGolden(t *testing.T) {
	c := DefaultConfig()
	within := func(i int, name string, ttft string) Level {
		return Level{Index: i, Name: name, BudgetOK: true, BudgetWhy: "p95 TTFT " + ttft + " ≤ 2s, p95 TPOT 40ms ≤ 100ms, failures 0.0% ≤ 1%"}
	}
	pass := analyze.Verdict{Pass: true, Clauses: []analyze.Clause{
		{Name: analyze.ClauseTTFTP95, Limit: 2000, Measured: 262, Samples: 100, Pass: true},
		{Name: analyze.ClauseE2EP99, Limit: 12000, Measured: 9100, Samples: 100, Pass: true},
		{Name: analyze.ClauseGoodputRatio, Limit: 0.99, Measured: 1, Samples: 100, Pass: true}}}
	miss := analyze.Verdict{Clauses: []analyze.Clause{
		{Name: analyze.ClauseTTFTP95, Limit: 2000, Measured: 417, Samples: 256, Pass: true},
		{Name: analyze.ClauseE2EP99, Limit: 12000, Measured: 16769, Samples: 256},
		{Name: analyze.ClauseGoodputRatio, Limit: 0.99, Measured: 0.953, Samples: 256}}}
	slo := func(l Level, v analyze.Verdict) Level { l.Measure.Phase.SLO = v; return l }
	broken := Level{Index: 4, Name: "c64", BudgetWhy: "p95 TTFT 3.1s > 2s, p95 TPOT 95ms ≤ 100ms, failures 0.0% ≤ 1%"}
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
		{"verdicts-first-breaks.txt", Result{Closed: true, Levels: []Level{{Index: 1, Name: "c1", BudgetWhy: "p95 TTFT 3.1s > 2s, p95 TPOT 95ms ≤ 100ms, failures 0.0% ≤ 1%"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sr := tc.sr
			var lv, tput []float64
			var ok []bool
			for i, l := range sr.Levels {
				lv, ok = append(lv, float64(int(1)<<(2*i))), append(ok, l.BudgetOK)
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
