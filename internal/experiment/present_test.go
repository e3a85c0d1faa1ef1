package experiment

import (
	"math"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/scrape"
)

// TestRowQueueWaitInFirstBucket follows the case found against vLLM 0.32
// from the engine's histogram to the results row: 500 waits of 0.03 ms on
// average, all in the first bucket (le 0.3 s), read as "≤ 300ms" with the
// mean in the reason, never as 150/285/297 ms.
func TestRowQueueWaitInFirstBucket(t *testing.T) {
	bounds := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 20, 40, 80, 160, 640, 2560, 5120, 10240, 20480, math.Inf(1)}
	zero, end := make([]float64, len(bounds)), make([]float64, len(bounds))
	for i := range end {
		end[i] = 500
	}
	st := scrape.DeltaStats(scrape.Hist{Bounds: bounds, Counts: zero}, scrape.Hist{Bounds: bounds, Counts: end, Count: 500, Sum: 0.015})
	res := &run.Result{
		Analysis:  &analyze.Result{Phases: []analyze.PhaseResult{{Name: "main"}}},
		QueueWait: map[string]analyze.QueueWait{"main": run.QueueWaitOf(st)},
	}
	r := Row(res, &run.Options{}, "main")
	for name, o := range map[string]struct {
		v               float64
		censored, upper bool
		reason          string
	}{
		"p50": {r.QueueWait.P50.V, r.QueueWait.P50.Censored, r.QueueWait.P50.AtMost, r.QueueWait.P50.Reason},
		"p95": {r.QueueWait.P95.V, r.QueueWait.P95.Censored, r.QueueWait.P95.AtMost, r.QueueWait.P95.Reason},
		"p99": {r.QueueWait.P99.V, r.QueueWait.P99.Censored, r.QueueWait.P99.AtMost, r.QueueWait.P99.Reason},
	} {
		if o.v != 300 || !o.censored || !o.upper {
			t.Errorf("queue wait %s = %+v, want at most 300 ms", name, o)
		}
		if !strings.Contains(o.reason, "mean wait 0.03ms") {
			t.Errorf("queue wait %s reason %q lacks the exact mean", name, o.reason)
		}
	}
}
