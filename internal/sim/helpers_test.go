package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// trace records what an Observer sees and flags protocol violations.
type trace struct {
	sched  time.Duration
	toks   []time.Duration
	fin    bool
	res    Result
	finAt  time.Duration
	bad    string
	noCall bool // set after Cancel: any later call is a violation
	// prefillOnly: the request finishes without a token, at the end of
	// its prefill.
	prefillOnly bool
}

func newTrace() *trace { return &trace{sched: Never, finAt: Never} }

func (tr *trace) fail(format string, args ...any) {
	if tr.bad == "" {
		tr.bad = fmt.Sprintf(format, args...)
	}
}

func (tr *trace) Scheduled(now time.Duration) {
	if tr.noCall {
		tr.fail("Scheduled after Cancel")
	}
	if tr.sched != Never {
		tr.fail("Scheduled twice")
	}
	tr.sched = now
}

func (tr *trace) Tokens(now time.Duration, total int) {
	switch {
	case tr.noCall:
		tr.fail("Tokens after Cancel")
	case tr.sched == Never:
		tr.fail("Tokens before Scheduled")
	case total != len(tr.toks)+1:
		tr.fail("Tokens total %d after %d tokens", total, len(tr.toks))
	case len(tr.toks) > 0 && now < tr.toks[len(tr.toks)-1]:
		tr.fail("Tokens time went back")
	case now < tr.sched:
		tr.fail("token before admission")
	}
	tr.toks = append(tr.toks, now)
}

func (tr *trace) Finished(now time.Duration, res Result) {
	switch {
	case tr.noCall:
		tr.fail("Finished after Cancel")
	case tr.fin:
		tr.fail("Finished twice")
	case res.OutputTokens != len(tr.toks):
		tr.fail("Finished with %d tokens, saw %d", res.OutputTokens, len(tr.toks))
	case tr.prefillOnly && (len(tr.toks) != 0 || now != res.FirstTokenAt):
		tr.fail("prefill-only request finished at %v with %d tokens, prefill done at %v", now, len(tr.toks), res.FirstTokenAt)
	case !tr.prefillOnly && (len(tr.toks) == 0 || now != tr.toks[len(tr.toks)-1]):
		tr.fail("Finished at %v, not at the last token", now)
	}
	tr.fin, tr.res, tr.finAt = true, res, now
}

// drain advances c through every pending event.
func drain(c *Cluster) {
	for {
		t, ok := c.NextEvent()
		if !ok {
			return
		}
		c.Advance(t)
	}
}

// runUntil advances c event by event up to and including until.
func runUntil(c *Cluster, until time.Duration) {
	for {
		t, ok := c.NextEvent()
		if !ok || t > until {
			c.Advance(until)
			return
		}
		c.Advance(t)
	}
}

// constArrivals returns arrivals every 1/rate seconds in [start, start+dur).
func constArrivals(start time.Duration, rate float64, dur time.Duration, r Request) []Arrival {
	var out []Arrival
	gap := time.Duration(float64(time.Second) / rate)
	for i := 0; ; i++ {
		at := start + time.Duration(i)*gap
		if at >= start+dur {
			return out
		}
		out = append(out, Arrival{At: at, Req: r})
	}
}

// poissonArrivals returns seeded Poisson arrivals at rate per second in [start, start+dur).
func poissonArrivals(seed uint64, start time.Duration, rate float64, dur time.Duration, r Request) []Arrival {
	rng := rand.New(rand.NewPCG(seed, 99))
	var out []Arrival
	at := start
	for {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if at >= start+dur {
			return out
		}
		out = append(out, Arrival{At: at, Req: r})
	}
}

func pct(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return Never
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// checkInvariants verifies a replica's bookkeeping when a step starts.
func checkInvariants(t *testing.T, c *Cluster, r *replica) {
	t.Helper()
	cfg := c.cfg
	if r.stepDecode+r.stepPrefill > cfg.MaxNumBatchedTokens {
		t.Fatalf("replica %d: step of %d decodes + %d prefill tokens exceeds max_num_batched_tokens %d",
			r.index, r.stepDecode, r.stepPrefill, cfg.MaxNumBatchedTokens)
	}
	if r.nRunning > cfg.MaxNumSeqs {
		t.Fatalf("replica %d: %d running > max_num_seqs %d", r.index, r.nRunning, cfg.MaxNumSeqs)
	}
	if r.kvRes > cfg.KVCacheTokens {
		t.Fatalf("replica %d: %d KV tokens reserved > kv_cache_tokens %d", r.index, r.kvRes, cfg.KVCacheTokens)
	}
	live, kv, chunks := 0, 0, 0
	for _, s := range r.running {
		if s.state != stRunning {
			continue
		}
		live++
		kv += s.kv
		chunks += s.chunk
		if s.prefilled+s.chunk+s.generated > s.kv {
			t.Fatalf("seq %d uses %d KV tokens > %d reserved", s.id, s.prefilled+s.chunk+s.generated, s.kv)
		}
		if s.outLen > 0 && s.generated >= s.outLen { // prefill-only (outLen 0) runs until its prefill is done
			t.Fatalf("seq %d still running with %d/%d tokens", s.id, s.generated, s.outLen)
		}
	}
	if live != r.nRunning || kv != r.kvRes {
		t.Fatalf("replica %d: counters say %d running/%d KV, batch holds %d/%d", r.index, r.nRunning, r.kvRes, live, kv)
	}
	if chunks != r.stepPrefill {
		t.Fatalf("replica %d: chunks %d != step prefill %d", r.index, chunks, r.stepPrefill)
	}
	waiting := 0
	for _, s := range r.waiting[r.whead:] {
		if s.state == stWaiting {
			waiting++
		}
	}
	if waiting != r.nWaiting {
		t.Fatalf("replica %d: %d waiting counted, %d queued", r.index, r.nWaiting, waiting)
	}
}
