package sim

import (
	"testing"
	"time"
)

// SimulateStream holds the requests in flight, not the run: over 100,000
// arrivals at 200/s (each request a few hundred ms), an outcome is
// emitted within a bounded number of arrivals after its own — the
// arrivals made but not yet emitted never exceed what is in flight — and
// in order, one per arrival. Counts, not memory: what it keeps is exactly
// that window.
func TestSimulateStreamIsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Replicas = 4
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	made, emitted, maxAhead := 0, 0, 0
	next := func(i int) (Arrival, bool) {
		if i != made {
			t.Fatalf("asked for arrival %d after %d made", i, made)
		}
		if i >= n {
			return Arrival{}, false
		}
		made++
		return Arrival{At: time.Duration(i) * 5 * time.Millisecond, Req: Request{PromptTokens: 64, MaxTokens: 16, IgnoreEOS: true}}, true
	}
	emit := func(i int, o *Outcome) bool {
		if i != emitted || o.DoneAt == Never || o.Status != 200 {
			t.Fatalf("outcome %d (done %v, status %d) after %d emitted", i, o.DoneAt, o.Status, emitted)
		}
		emitted++
		maxAhead = max(maxAhead, made-emitted)
		return true
	}
	SimulateStream(c, next, nil, time.Minute, 0, nil, emit)
	if emitted != n {
		t.Fatalf("%d outcomes, want %d", emitted, n)
	}
	// 200/s for well under a second each: a few hundred in flight at most.
	if maxAhead > 1000 {
		t.Errorf("up to %d arrivals made and not yet emitted; want the requests in flight (≤ 1000)", maxAhead)
	}
}
