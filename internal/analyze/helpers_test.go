package analyze

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/record/recordtest"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// okRec and failRec build records (recordtest).
var okRec, failRec = recordtest.OK, recordtest.Fail

func withPhase(r *record.Record, phase string) *record.Record {
	r.Phase = phase
	return r
}

// burstPhases is a small burst experiment: warmup 0–10 s, baseline 10–40 s,
// burst 40–50 s, recovery 50–110 s.
func burstPhases() []Phase {
	return []Phase{
		{Name: "warmup", Start: 0, End: 10 * s, Rate: 10, Excluded: true},
		{Name: "baseline", Start: 10 * s, End: 40 * s, Rate: 10},
		{Name: "burst", Start: 40 * s, End: 50 * s, Rate: 50},
		{Name: "recovery", Start: 50 * s, End: 110 * s, Rate: 10},
	}
}

func mustNew(t testing.TB, cfg Config) *Analyzer {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func addAll(a *Analyzer, recs ...*record.Record) {
	for _, r := range recs {
		a.Add(r)
	}
}

func mustPhase(t *testing.T, r *Result, name string) PhaseResult {
	t.Helper()
	p, ok := r.Phase(name)
	if !ok {
		t.Fatalf("no phase %q in result", name)
	}
	return p
}

func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, abs(a), abs(b))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// hdrNear reports whether got is the HDR-reported value of exact: never
// below it and at most 0.1 % above.
func hdrNear(got, exact float64) bool { return got >= exact && got <= exact*1.001 }
