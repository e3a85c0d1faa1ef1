package capacity

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/golden"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/run"
)

// The end of `surge capacity`, on constructed searches: the sustainable
// step with every clause and the lowest failing one with its failing
// clauses (and why it stopped early), the search's note as why, and the
// exit line: 0 when a sustainable rate was found, whatever the steps
// above it did.
func TestVerdictsGolden(t *testing.T) {
	o := run.DefaultOptions()
	pass := exptest.Verdict(exptest.TTFT(551, 2000, false, 971), exptest.E2E(11700, 12000, false, 971), exptest.Goodput(0.998, 0.99, 971))
	fail := exptest.Verdict(exptest.TTFT(592, 2000, false, 894), exptest.E2E(12300, 12000, false, 894), exptest.Goodput(0.9888, 0.99, 894))
	bad := exptest.Verdict(exptest.TTFT(60000, 2000, true, 600), exptest.E2E(60000, 12000, true, 600), exptest.Goodput(0.12, 0.99, 600))
	cases := []struct {
		name string
		cr   Result
	}{
		{"verdicts-bounded.txt", Result{SustainableRPS: 6.5, LowestFailingRPS: 6.75, Bounded: true, Converged: true, BaselineRPS: 4.55, BaselineFraction: 0.7, Steps: []Step{
			{Index: 1, Rate: 4, Pass: true, Verdict: pass},
			{Index: 2, Rate: 8, Verdict: bad, StoppedEarly: "stopped after 25s of 2m5s: goodput can no longer reach 99%"},
			{Index: 3, Rate: 6.5, Pass: true, Verdict: pass},
			{Index: 4, Rate: 6.75, Verdict: fail},
		}}},
		{"verdicts-none.txt", Result{Note: "even 1 req/s fails the SLO: no sustainable rate found", BaselineFraction: 0.7, Steps: []Step{
			{Index: 1, Rate: 1, Verdict: bad},
		}}},
		{"verdicts-generator-limited.txt", Result{SustainableRPS: 400, BaselineRPS: 280, BaselineFraction: 0.7, GeneratorLimited: true,
			Note: "the search stopped at 800 req/s: the generator fell behind. The target's capacity is at least 400 req/s; lower --max-rps, or spread the load over several generators.",
			Steps: []Step{
				{Index: 1, Rate: 400, Pass: true, Verdict: pass},
				{Index: 2, Rate: 800, GeneratorLimited: true, Verdict: pass, Measure: measureNote("the generator fell behind")},
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printEnd(&b, &o, &tc.cr, "out/capacity")
			b.WriteString("exit line: " + meaning(&tc.cr) + "\n")
			golden.Check(t, tc.name, []byte(b.String()))
		})
	}
}

func measureNote(note string) experiment.Measure {
	return experiment.Measure{GeneratorLimited: true, GeneratorNote: note}
}
