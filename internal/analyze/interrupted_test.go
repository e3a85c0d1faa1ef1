package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Review 14, finding 6b: after a Ctrl-C the requests surge cancelled are
// not failures of the target. A clause they decide is Unknown (not
// FAIL): a percentile whose lower bound is within the limit, a goodput
// that would hold had they finished in time. A clause that fails
// whatever they would have done still fails, and without the interrupt
// nothing changes.
func TestInterruptedClausesUndecided(t *testing.T) {
	st := func(good, cancelled int64, ttftBound float64) *Stats {
		s := &Stats{Offered: 100, Good: good, GoodputRatio: float64(good) / 100, Outcomes: map[record.Outcome]int64{record.Cancelled: cancelled}}
		s.Latency.TTFTSchedule = Dist{Count: good, P95Ms: ttftBound, P95Censored: true, Interrupted: true}
		return s
	}
	slo := SLO{TTFTP95: 2 * time.Second, GoodputRatio: 0.99, Interrupted: true}

	v := slo.Check(st(60, 40, 554))
	if v.Pass || v.Sure() {
		t.Fatalf("undecided verdict: pass %v sure %v %+v", v.Pass, v.Sure(), v.Clauses)
	}
	for _, c := range v.Clauses {
		if !c.Unknown || c.Pass {
			t.Errorf("%s: unknown %v pass %v, want unknown: %s", c.Name, c.Unknown, c.Pass, c.Text)
		}
		if b := c.Brief(); !strings.Contains(b, "not judged: requests cancelled by the interrupt") {
			t.Errorf("brief %q", b)
		}
	}

	// A lower bound over the limit, and a goodput that fails even had
	// every cancelled request finished in time: sure failures.
	v = slo.Check(st(50, 10, 2500))
	if v.Pass || !v.Sure() {
		t.Fatalf("sure failure: pass %v sure %v", v.Pass, v.Sure())
	}
	for _, c := range v.Clauses {
		if c.Unknown {
			t.Errorf("%s unknown, want FAIL: %s", c.Name, c.Text)
		}
	}

	// Not interrupted (a budget stop, a whole run): FAIL as before.
	slo.Interrupted = false
	if v := slo.Check(st(60, 40, 554)); v.Pass || !v.Sure() {
		t.Errorf("without the interrupt the clauses fail: %+v", v.Clauses)
	}
}

// A run interrupted before anything arrived is not judged, not FAIL.
func TestInterruptedBeforeAnyArrival(t *testing.T) {
	slo := SLO{TTFTP95: 2 * time.Second, E2EP99: 12 * time.Second, GoodputRatio: 0.99, Interrupted: true}
	v := slo.Check(&Stats{})
	if v.Pass || v.Sure() {
		t.Fatalf("pass %v sure %v: %+v", v.Pass, v.Sure(), v.Clauses)
	}
	for _, c := range v.Clauses {
		if !c.Unknown || !strings.Contains(c.Brief(), "n/a") {
			t.Errorf("%s: %s / %s", c.Name, c.Text, c.Brief())
		}
	}
}
