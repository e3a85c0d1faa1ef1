package analyze

import (
	"fmt"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

var seq int64

// okRec is a successful request scheduled at sched, sent lag later, with its
// first token ttft and completion e2e after the scheduled arrival.
func okRec(sched, lag, ttft, e2e time.Duration) *record.Record {
	seq++
	r := record.New(fmt.Sprintf("r%d", seq), seq, "", int64(sched))
	r.SentNs = int64(sched + lag)
	r.ConnNs = r.SentNs + int64(ms)
	r.HeadersNs = r.ConnNs + int64(ms)
	r.FirstChunkNs = int64(sched + ttft)
	r.FirstTokenNs = int64(sched + ttft)
	r.DoneNs = int64(sched + e2e)
	r.Status = 200
	r.Outcome = record.OK
	r.PromptTokens, r.OutputTokens, r.MaxTokens, r.Chunks = 100, 11, 64, 11
	r.TPOTNs = (r.DoneNs - r.FirstTokenNs) / 10
	r.ITLMaxNs = r.TPOTNs * 2
	r.Attempts = 1
	r.Good = Judge(&r, DefaultDeadlines)
	return &r
}

// failRec is a failed request scheduled at sched.
func failRec(sched time.Duration, o record.Outcome) *record.Record {
	seq++
	r := record.New(fmt.Sprintf("f%d", seq), seq, "", int64(sched))
	r.Outcome = o
	switch o {
	case record.GeneratorDrop:
		return &r
	case record.RateLimited:
		r.Status = 429
		r.DoneNs = int64(sched + 5*ms)
	case record.Timeout:
		r.DoneNs = int64(sched + 60*s)
	case record.HTTPError:
		r.Status = 500
		r.DoneNs = int64(sched + 20*ms)
	default:
		r.DoneNs = int64(sched + 10*ms)
	}
	r.SentNs = int64(sched)
	r.Attempts = 1
	return &r
}

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
