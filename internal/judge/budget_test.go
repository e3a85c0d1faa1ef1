package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// A sweep level is within its latency budget only when its sample can
// show it: 6 fast requests (15 s at 0.4 req/s) cannot bound a p95 (72
// values are needed), so the level is INCONCLUSIVE, not "within budget";
// 400 such requests are (368 bound a 1% failure share with none
// failed); 200 slow ones are over it.
func TestBudgetSmallLevelInconclusive(t *testing.T) {
	level := func(n int, ttft time.Duration) Verdict {
		var recs []*record.Record
		for i := range n {
			recs = append(recs, okRec(time.Duration(i)*2500*ms, 0, ttft, ttft+time.Second))
		}
		return Budget(phaseStats(t, recs...), 2*time.Second, 200*time.Millisecond, 0.99)
	}
	v := level(6, 100*ms)
	if v.Outcome != Inconclusive {
		t.Fatalf("6 requests: %s, want INCONCLUSIVE: %+v", v.Outcome, v.Clauses)
	}
	if c := clause(v, ClauseBudgetTTFT); c.Outcome != Inconclusive || c.Samples != 6 || !strings.Contains(c.Brief(), "72") {
		t.Errorf("6 requests, TTFT clause: %s (n %d): %s", c.Outcome, c.Samples, c.Brief())
	}
	if v := level(400, 100*ms); v.Outcome != Pass {
		t.Errorf("400 fast requests: %s, want PASS: %+v", v.Outcome, v.Clauses)
	}
	if v := level(200, 3*time.Second); v.Outcome != Fail || clause(v, ClauseBudgetTTFT).Outcome != Fail {
		t.Errorf("200 slow requests: %s, want FAIL by TTFT: %+v", v.Outcome, v.Clauses)
	}
}
