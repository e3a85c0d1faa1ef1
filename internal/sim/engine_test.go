package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// smallConfig is a configuration whose step times are easy to compute by hand.
func smallConfig() Config {
	c := DefaultConfig()
	c.MaxNumSeqs = 4
	c.MaxNumBatchedTokens = 2048
	c.KVCacheTokens = 8192
	c.MaxModelLen = 4096
	c.StepBase = 10 * time.Millisecond
	c.StepPerDecodeSeq = time.Millisecond
	c.StepPerPrefillToken = 10 * time.Microsecond
	return c
}

func TestStepTimeFormula(t *testing.T) {
	c, err := NewCluster(smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	a, b := newTrace(), newTrace()
	if _, err := c.Submit(time.Second, Request{PromptTokens: 3000, MaxTokens: 3, IgnoreEOS: true}, a); err != nil {
		t.Fatal(err)
	}
	if a.sched != time.Second {
		t.Fatalf("an idle replica must admit at once: scheduled at %v", a.sched)
	}
	runUntil(c, ms(1055))
	if _, err := c.Submit(ms(1055), Request{PromptTokens: 100, MaxTokens: 2, IgnoreEOS: true}, b); err != nil {
		t.Fatal(err)
	}
	drain(c)
	// A: step 1 prefills 2048 tokens (10 + 20.48 ms), step 2 the other 952
	// (10 + 9.52 ms) and yields the first token at 1050 ms; step 3 decodes
	// A alone (10 + 1 ms); step 4 decodes A and prefills B's 100 tokens
	// (10 + 1 + 1 ms); step 5 decodes B (10 + 1 ms).
	wantA := []time.Duration{ms(1050), ms(1061), ms(1073)}
	wantB := []time.Duration{ms(1073), ms(1084)}
	for _, tc := range []struct {
		name string
		tr   *trace
		want []time.Duration
	}{{"A", a, wantA}, {"B", b, wantB}} {
		if tc.tr.bad != "" {
			t.Fatalf("%s: %s", tc.name, tc.tr.bad)
		}
		if fmt.Sprint(tc.tr.toks) != fmt.Sprint(tc.want) {
			t.Errorf("%s tokens at %v, want %v", tc.name, tc.tr.toks, tc.want)
		}
	}
	if b.sched != ms(1061) {
		t.Errorf("B admitted at %v, want 1061ms (the next step start)", b.sched)
	}
	if r := b.res; r.QueueTime != ms(6) || r.FinishReason != "length" || r.OutputTokens != 2 || r.PromptTokens != 100 {
		t.Errorf("B result %+v", r)
	}
	if _, ok := c.NextEvent(); ok {
		t.Error("NextEvent reports work on an idle cluster")
	}
}

func TestInvariantsProperty(t *testing.T) {
	for iter := range 60 {
		rng := rand.New(rand.NewPCG(uint64(iter), 1))
		cfg := DefaultConfig()
		cfg.Seed = int64(iter)
		cfg.MaxNumSeqs = 1 + rng.IntN(12)
		cfg.MaxNumBatchedTokens = cfg.MaxNumSeqs + rng.IntN(300)
		cfg.MaxModelLen = 16 + rng.IntN(500)
		cfg.KVCacheTokens = cfg.MaxModelLen + rng.IntN(3*cfg.MaxModelLen)
		cfg.StepBase = time.Duration(1+rng.IntN(20)) * time.Millisecond
		cfg.StepPerDecodeSeq = time.Duration(rng.IntN(500)) * time.Microsecond
		cfg.StepPerPrefillToken = time.Duration(rng.IntN(200)) * time.Microsecond
		cfg.OutputMean = 1 + rng.Float64()*100
		cfg.Replicas = 1 + rng.IntN(3)
		if rng.IntN(2) == 0 {
			cfg.MaxWaiting = 1 + rng.IntN(6)
		}
		cfg.Fault500 = 0.05
		if rng.IntN(2) == 0 {
			cfg.Autoscale = true
			cfg.Replicas, cfg.MinReplicas, cfg.MaxReplicas = 1, 1, 2+rng.IntN(3)
			cfg.ScaleUpWaiting = 0.5 + rng.Float64()*3
			cfg.ScaleUpHold = time.Duration(rng.IntN(500)) * time.Millisecond
			cfg.NodeReadyDelay = time.Duration(rng.IntN(500)) * time.Millisecond
			cfg.ModelReadyDelay = time.Duration(rng.IntN(500)) * time.Millisecond
			cfg.ScaleDownIdle = time.Duration(rng.IntN(500)) * time.Millisecond
		}
		name := fmt.Sprintf("iter%d", iter)
		t.Run(name, func(t *testing.T) {
			c, err := NewCluster(cfg)
			if err != nil {
				t.Fatal(err)
			}
			steps := 0
			c.stepHook = func(r *replica) { steps++; checkInvariants(t, c, r) }
			type sub struct {
				tr       *trace
				req      Request
				id       uint64
				outcome  string // ok, rejected, failed, cancelled
				cancelAt time.Duration
			}
			var subs []*sub
			now := time.Duration(0)
			for range 150 {
				now += time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond))
				runUntil(c, now)
				p := 1 + rng.IntN(cfg.MaxModelLen-1)
				req := Request{PromptTokens: p, IgnoreEOS: rng.IntN(2) == 0}
				if rng.IntN(4) > 0 {
					req.MaxTokens = 1 + rng.IntN(cfg.MaxModelLen-p)
				}
				if rng.IntN(8) == 0 { // pooling work, up to the whole KV cache
					req = Request{PromptTokens: 1 + rng.IntN(cfg.KVCacheTokens), PrefillOnly: true}
				}
				s := &sub{tr: newTrace(), req: req, outcome: "ok", cancelAt: Never}
				s.tr.prefillOnly = req.PrefillOnly
				tk, err := c.Submit(now, req, s.tr)
				s.id = tk.ID
				switch {
				case errors.Is(err, ErrQueueFull):
					s.outcome = "rejected"
				case err != nil:
					t.Fatal(err)
				case tk.Fault.Kind == Fault500:
					s.outcome = "failed"
				case rng.IntN(8) == 0:
					s.cancelAt = now + time.Duration(rng.IntN(300))*time.Millisecond
				}
				subs = append(subs, s)
				for _, q := range subs {
					if q.cancelAt != Never && q.cancelAt <= now && !q.tr.fin && !q.tr.noCall {
						c.Cancel(now, q.id)
						q.tr.noCall, q.outcome = true, "cancelled"
					}
				}
			}
			drain(c)
			if steps == 0 {
				t.Fatal("no step ran")
			}
			for i, q := range subs {
				if q.tr.bad != "" {
					t.Fatalf("request %d: %s", i, q.tr.bad)
				}
				limit := q.req.MaxTokens
				if limit == 0 {
					limit = cfg.MaxModelLen - q.req.PromptTokens
				}
				switch q.outcome {
				case "ok":
					if !q.tr.fin {
						t.Fatalf("request %d never finished", i)
					}
					n := q.tr.res.OutputTokens
					if q.req.PrefillOnly {
						if n != 0 || q.tr.res.FinishReason != "stop" || q.tr.res.FirstTokenAt != q.tr.finAt {
							t.Fatalf("prefill-only request %d: %+v, finished at %v", i, q.tr.res, q.tr.finAt)
						}
						continue
					}
					if n < 1 || n > limit || (q.req.IgnoreEOS && n != limit) {
						t.Fatalf("request %d (%+v): %d tokens, limit %d", i, q.req, n, limit)
					}
					if (n == limit) != (q.tr.res.FinishReason == "length") {
						t.Fatalf("request %d: %d/%d tokens with finish %q", i, n, limit, q.tr.res.FinishReason)
					}
				case "rejected", "failed":
					if q.tr.sched != Never {
						t.Fatalf("request %d was %s but scheduled", i, q.outcome)
					}
				}
			}
			ready := map[int]time.Duration{}
			var last time.Duration
			for _, e := range c.Events() {
				if e.At < last {
					t.Fatalf("events out of order: %v", c.Events())
				}
				last = e.At
				if e.Kind == EventModelReady {
					ready[e.Replica] = e.At
				}
			}
			for i, q := range subs {
				if at, ok := ready[q.tr.res.Replica]; ok && q.tr.fin && q.tr.sched < at {
					t.Fatalf("request %d scheduled at %v on replica %d, ready only at %v", i, q.tr.sched, q.tr.res.Replica, at)
				}
			}
			snap := c.Snapshot(now + time.Hour)
			if snap.Waiting != 0 || snap.Running != 0 || snap.KVUsage != 0 {
				t.Fatalf("not empty after drain: %+v", snap)
			}
			if len(c.seqs) != 0 {
				t.Fatalf("%d sequences leaked in the index", len(c.seqs))
			}
		})
	}
}

func TestOutputLength(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = 256, 4096
	cfg.OutputMean, cfg.OutputSigma = 120, 0.6
	cases := []struct {
		name  string
		req   Request
		check func(t *testing.T, res []Result)
	}{
		{"ignore_eos runs to max_tokens", Request{PromptTokens: 10, MaxTokens: 77, IgnoreEOS: true}, func(t *testing.T, res []Result) {
			for _, r := range res {
				if r.OutputTokens != 77 || r.FinishReason != "length" {
					t.Fatalf("got %d tokens, %q", r.OutputTokens, r.FinishReason)
				}
			}
		}},
		{"max_tokens caps natural length", Request{PromptTokens: 10, MaxTokens: 100}, func(t *testing.T, res []Result) {
			stop, length := 0, 0
			for _, r := range res {
				switch {
				case r.OutputTokens > 100:
					t.Fatalf("%d tokens > max_tokens 100", r.OutputTokens)
				case r.FinishReason == "length" && r.OutputTokens == 100:
					length++
				case r.FinishReason == "stop" && r.OutputTokens < 100:
					stop++
				default:
					t.Fatalf("%d tokens with finish %q", r.OutputTokens, r.FinishReason)
				}
			}
			if stop == 0 || length == 0 {
				t.Fatalf("stop=%d length=%d: expected both", stop, length)
			}
		}},
		{"natural length has the configured mean", Request{PromptTokens: 10, MaxTokens: 5000}, func(t *testing.T, res []Result) {
			sum := 0.0
			for _, r := range res {
				sum += float64(r.OutputTokens)
			}
			if mean := sum / float64(len(res)); math.Abs(mean-120) > 120*0.05 {
				t.Fatalf("mean natural length %.1f, want 120 ± 5%%", mean)
			}
		}},
		{"unset max_tokens caps at max_model_len", Request{PromptTokens: DefaultMaxModelLen - 5, IgnoreEOS: true}, func(t *testing.T, res []Result) {
			for _, r := range res {
				if r.OutputTokens != 5 {
					t.Fatalf("got %d tokens, want 5", r.OutputTokens)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCluster(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var trs []*trace
			for i := range 3000 {
				tr := newTrace()
				trs = append(trs, tr)
				if _, err := c.Submit(time.Duration(i)*time.Millisecond, tc.req, tr); err != nil {
					t.Fatal(err)
				}
			}
			drain(c)
			var res []Result
			for _, tr := range trs {
				if tr.bad != "" || !tr.fin {
					t.Fatalf("bad trace: %q fin=%v", tr.bad, tr.fin)
				}
				res = append(res, tr.res)
			}
			tc.check(t, res)
		})
	}
}

func TestCancel(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxNumSeqs = 1
	req := Request{PromptTokens: 100, MaxTokens: 1000, IgnoreEOS: true}

	t.Run("running frees slot and KV", func(t *testing.T) {
		c, _ := NewCluster(cfg)
		a, b := newTrace(), newTrace()
		ta, _ := c.Submit(0, req, a)
		c.Submit(0, req, b)
		runUntil(c, 100*time.Millisecond)
		if s := c.Snapshot(100 * time.Millisecond); s.Running != 1 || s.Waiting != 1 || s.KVUsage == 0 {
			t.Fatalf("before cancel: %+v", s)
		}
		end, _ := c.NextEvent() // the step in progress
		c.Cancel(100*time.Millisecond, ta.ID)
		a.noCall = true
		if s := c.Snapshot(100 * time.Millisecond); s.Running != 0 || s.KVUsage != 0 || s.Cancelled != 1 {
			t.Fatalf("after cancel: %+v", s)
		}
		drain(c)
		if a.bad != "" || b.bad != "" {
			t.Fatalf("%q %q", a.bad, b.bad)
		}
		if b.sched != end {
			t.Fatalf("B admitted at %v, want %v (end of the step in progress)", b.sched, end)
		}
		if !b.fin || len(b.toks) != 1000 {
			t.Fatalf("B did not complete: %d tokens", len(b.toks))
		}
	})
	t.Run("waiting never runs", func(t *testing.T) {
		c, _ := NewCluster(cfg)
		a, b := newTrace(), newTrace()
		c.Submit(0, req, a)
		tb, _ := c.Submit(0, req, b)
		c.Cancel(50*time.Millisecond, tb.ID)
		b.noCall = true
		if s := c.Snapshot(50 * time.Millisecond); s.Waiting != 0 || s.Running != 1 {
			t.Fatalf("after cancel: %+v", s)
		}
		drain(c)
		if b.bad != "" || b.sched != Never || !a.fin {
			t.Fatalf("b.bad=%q b.sched=%v a.fin=%v", b.bad, b.sched, a.fin)
		}
	})
	t.Run("unknown and finished ids are ignored", func(t *testing.T) {
		c, _ := NewCluster(cfg)
		tk, _ := c.Submit(0, Request{PromptTokens: 5, MaxTokens: 2, IgnoreEOS: true}, nil)
		drain(c)
		c.Cancel(time.Hour, tk.ID)
		c.Cancel(time.Hour, 12345)
		if s := c.Snapshot(time.Hour); s.Cancelled != 0 || s.Finished != 1 {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("cancel from an observer callback", func(t *testing.T) {
		c, _ := NewCluster(cfg)
		var id uint64
		self := &cancelAt{c: c, at: 3, id: &id}
		tk, _ := c.Submit(0, req, self)
		id = tk.ID
		b := newTrace()
		c.Submit(0, Request{PromptTokens: 5, MaxTokens: 2, IgnoreEOS: true}, b)
		drain(c)
		if self.seen != 3 || !b.fin || b.bad != "" {
			t.Fatalf("self saw %d tokens; b fin=%v bad=%q", self.seen, b.fin, b.bad)
		}
	})
}

// cancelAt cancels its own request when it sees token at.
type cancelAt struct {
	c    *Cluster
	at   int
	id   *uint64
	seen int
}

func (o *cancelAt) Scheduled(time.Duration) {}
func (o *cancelAt) Tokens(now time.Duration, total int) {
	o.seen = total
	if total == o.at {
		o.c.Cancel(now, *o.id)
	}
}
func (o *cancelAt) Finished(time.Duration, Result) { o.seen = -1 }

func TestKVBudgetLimitsAdmission(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxNumSeqs = 8
	cfg.KVCacheTokens = 4096
	cfg.MaxModelLen = 4096
	c, _ := NewCluster(cfg)
	// each reserves 1000 + 1000 tokens: only two fit in 4096
	req := Request{PromptTokens: 1000, MaxTokens: 1000, IgnoreEOS: true}
	for range 3 {
		c.Submit(0, req, nil)
	}
	runUntil(c, time.Second)
	s := c.Snapshot(time.Second)
	if s.Running != 2 || s.Waiting != 1 {
		t.Fatalf("running %d waiting %d, want 2 and 1 (KV bound)", s.Running, s.Waiting)
	}
	if r := s.Replicas[0]; r.KVReservedTokens != 4000 || r.KVUsedTokens > 4000 || r.KVUsedTokens < 2000 {
		t.Fatalf("KV %+v", r)
	}
}

func TestAdmissionControl(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxWaiting = 3
	c, _ := NewCluster(cfg)
	req := Request{PromptTokens: 10, MaxTokens: 20, IgnoreEOS: true}
	// 1 runs, 3 wait, the fifth is refused
	for i := range 6 {
		before := c.Snapshot(0).Waiting
		_, err := c.Submit(0, req, nil)
		full := before == cfg.MaxWaiting
		if full != errors.Is(err, ErrQueueFull) {
			t.Fatalf("submit %d with %d waiting: err=%v", i, before, err)
		}
		var qf *QueueFullError
		if full {
			if !errors.As(err, &qf) || qf.RetryAfter < time.Second || qf.RetryAfter%time.Second != 0 || qf.Waiting != 3 {
				t.Fatalf("bad QueueFullError %+v", qf)
			}
		}
	}
	// the first request completes; its slot goes to the head, freeing one queue place
	var first time.Duration
	for {
		t0, _ := c.NextEvent()
		c.Advance(t0)
		if c.Snapshot(t0).Finished == 1 {
			first = t0
			break
		}
	}
	if s := c.Snapshot(first); s.Waiting != 2 {
		t.Fatalf("waiting %d after one completion, want 2", s.Waiting)
	}
	if _, err := c.Submit(first, req, nil); err != nil {
		t.Fatalf("submit with room refused: %v", err)
	}
	_, err := c.Submit(first, req, nil)
	var qf *QueueFullError
	if !errors.As(err, &qf) {
		t.Fatalf("submit to a full queue: %v", err)
	}
	// RetryAfter follows the drain rate: one completion in the ≈ 0.22 s
	// since the first step (1 prefill + 19 decode steps) → 3 waiting drain
	// in ≈ 0.7 s → rounded up to 1 s.
	if qf.RetryAfter != time.Second {
		t.Fatalf("RetryAfter %v, want 1s", qf.RetryAfter)
	}
	if s := c.Snapshot(first); s.Rejected != 3 {
		t.Fatalf("rejected %d, want 3", s.Rejected)
	}
}

func TestRetryAfterFollowsDrainRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxWaiting = 300
	c, _ := NewCluster(cfg)
	req := Request{PromptTokens: 500, MaxTokens: 150, IgnoreEOS: true}
	var err error
	at := time.Duration(0)
	for i := 0; err == nil; i++ {
		at = time.Duration(i) * time.Second / 15 // 15/s: the queue grows at ≈ 5/s, full after ≈ 60 s
		runUntil(c, at)
		_, err = c.Submit(at, req, nil)
	}
	var qf *QueueFullError
	if !errors.As(err, &qf) {
		t.Fatal(err)
	}
	// 300 waiting at ≈ 10/s (the measured completion rate) → ≈ 30 s
	if qf.RetryAfter < 25*time.Second || qf.RetryAfter > 36*time.Second {
		t.Fatalf("RetryAfter %v at %v, want ≈ 30s (300 waiting at ≈ 10/s)", qf.RetryAfter, at)
	}
	t.Logf("queue full at %v, RetryAfter %v", at, qf.RetryAfter)
}

func TestRouting(t *testing.T) {
	cfg := smallConfig()
	cfg.Replicas = 3
	c, _ := NewCluster(cfg)
	req := Request{PromptTokens: 10, MaxTokens: 50, IgnoreEOS: true}
	var got []int
	for range 7 {
		tk, err := c.Submit(0, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tk.Replica)
	}
	if want := "[0 1 2 0 1 2 0]"; fmt.Sprint(got) != want {
		t.Fatalf("routing %v, want %v (least loaded, ties → lowest index)", got, want)
	}
}

func TestFaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Fault500, cfg.Fault503, cfg.FaultReset, cfg.FaultMalformed, cfg.FaultStall, cfg.FaultSlowHeaders = 0.1, 0.1, 0.1, 0.1, 0.1, 0.1
	c, _ := NewCluster(cfg)
	counts := map[FaultKind]int{}
	const n = 20000
	for i := range n {
		tr := newTrace()
		now := time.Duration(i) * time.Second // one at a time: never queued
		runUntil(c, now)
		tk, err := c.Submit(now, Request{PromptTokens: 20, MaxTokens: 40, IgnoreEOS: true}, tr)
		if err != nil {
			t.Fatal(err)
		}
		f := tk.Fault
		counts[f.Kind]++
		switch f.Kind {
		case Fault500, Fault503:
			if tr.sched != Never || c.Snapshot(now).Waiting+c.Snapshot(now).Running != 0 {
				t.Fatal("a 500/503 request entered the engine")
			}
		case FaultReset, FaultMalformed, FaultStall:
			if f.AtToken < 1 || f.AtToken > 40 {
				t.Fatalf("AtToken %d outside [1, 40]", f.AtToken)
			}
		}
		if (f.Kind == FaultStall && f.Delay != cfg.FaultStallDelay) || (f.Kind == FaultSlowHeaders && f.Delay != cfg.FaultSlowHeadersDelay) {
			t.Fatalf("plan %+v has the wrong delay", f)
		}
	}
	for k := Fault500; k <= FaultSlowHeaders; k++ {
		if got := float64(counts[k]) / n; math.Abs(got-0.1) > 0.01 {
			t.Errorf("%v: fraction %.3f, want 0.10 ± 0.01", k, got)
		}
	}
	if got := float64(counts[FaultNone]) / n; math.Abs(got-0.4) > 0.015 {
		t.Errorf("none: fraction %.3f, want 0.40", got)
	}
	if s := c.Snapshot(n * time.Second); s.Failed != uint64(counts[Fault500]+counts[Fault503]) {
		t.Errorf("Failed counter %d", s.Failed)
	}
}

// timeline runs a mixed workload with natural lengths, faults, cancels and
// autoscaling, and hashes everything observable.
func timeline(seed int64) (uint64, int) {
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Autoscale = true
	cfg.FaultReset, cfg.Fault503 = 0.05, 0.05
	c, _ := NewCluster(cfg)
	h := fnv.New64a()
	log := &hashObs{h: h}
	rng := rand.New(rand.NewPCG(1, 2)) // the workload is fixed; only the engine seed varies
	now := time.Duration(0)
	for i := range 3000 {
		now += time.Duration(rng.ExpFloat64() * float64(time.Second) / 25)
		runUntil(c, now)
		req := Request{PromptTokens: 100 + rng.IntN(900), MaxTokens: 50 + rng.IntN(300), IgnoreEOS: rng.IntN(3) == 0}
		tk, err := c.Submit(now, req, log)
		fmt.Fprintf(h, "submit %d %v %+v %v\n", i, now, tk, err)
		if i%17 == 0 {
			c.Cancel(now, tk.ID-3)
		}
	}
	drain(c)
	for _, e := range c.Events() {
		fmt.Fprintf(h, "%+v\n", e)
	}
	fmt.Fprintf(h, "%+v", c.Snapshot(now))
	return h.Sum64(), len(c.Events())
}

type hashObs struct {
	h   hash.Hash64
	buf []byte
}

func (o *hashObs) put(kind byte, now time.Duration, n int) {
	o.buf = binary.LittleEndian.AppendUint64(append(o.buf[:0], kind), uint64(now))
	o.h.Write(binary.LittleEndian.AppendUint64(o.buf, uint64(n)))
}
func (o *hashObs) Scheduled(now time.Duration)          { o.put('s', now, 0) }
func (o *hashObs) Tokens(now time.Duration, total int)  { o.put('t', now, total) }
func (o *hashObs) Finished(now time.Duration, r Result) { fmt.Fprintln(o.h, "f", now, r) }

func TestDeterminism(t *testing.T) {
	a, events := timeline(5)
	b, _ := timeline(5)
	if a != b {
		t.Fatal("the same seed and submissions gave different timelines")
	}
	if events == 0 {
		t.Fatal("the workload did not exercise the autoscaler")
	}
	if c, _ := timeline(6); c == a {
		t.Fatal("a different seed gave the same timeline: the hash sees nothing")
	}
}

type submitter struct{ c *Cluster }

func (o *submitter) Scheduled(now time.Duration) {
	o.c.Submit(now, Request{PromptTokens: 1, MaxTokens: 1}, nil)
}
func (o *submitter) Tokens(time.Duration, int)      {}
func (o *submitter) Finished(time.Duration, Result) {}

func TestSubmitFromCallbackPanics(t *testing.T) {
	c, _ := NewCluster(smallConfig())
	defer func() {
		if recover() == nil {
			t.Fatal("Submit from an Observer callback did not panic")
		}
	}()
	c.Submit(0, Request{PromptTokens: 1, MaxTokens: 1}, &submitter{c})
}

// With slowdown_per_hour s, a step starting at t lasts (1 + s·t/1h) times
// as long: the same request an hour in takes twice as long at s = 1, and
// exactly as long at s = 0 or at the start.
func TestSlowdownPerHour(t *testing.T) {
	gaps := func(slowdown float64, at time.Duration) []time.Duration {
		cfg := smallConfig()
		cfg.SlowdownPerHour = slowdown
		c, err := NewCluster(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr := newTrace()
		if _, err := c.Submit(at, Request{PromptTokens: 10, MaxTokens: 4, IgnoreEOS: true}, tr); err != nil {
			t.Fatal(err)
		}
		drain(c)
		if tr.bad != "" || len(tr.toks) != 4 {
			t.Fatalf("trace: %s, %d tokens", tr.bad, len(tr.toks))
		}
		out := []time.Duration{tr.toks[0] - at}
		for i := 1; i < len(tr.toks); i++ {
			out = append(out, tr.toks[i]-tr.toks[i-1])
		}
		return out
	}
	base := gaps(0, time.Hour)
	cases := []struct {
		name     string
		slowdown float64
		at       time.Duration
		factor   float64
	}{
		{"off", 0, time.Hour, 1},
		{"at start", 1, 0, 1},
		{"one hour at 1/h", 1, time.Hour, 2},
		{"two hours at 0.25/h", 0.25, 2 * time.Hour, 1.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gaps(tc.slowdown, tc.at)
			for i := range got {
				ratio := float64(got[i]) / float64(base[i])
				if ratio < tc.factor-0.001 || ratio > tc.factor+0.001 {
					t.Fatalf("step %d lasted %v vs %v unslowed: ratio %.4f, want %.2f", i, got[i], base[i], ratio, tc.factor)
				}
			}
		})
	}
}

// TestPrefillOnly: pooling work is prefilled like a prompt and finishes
// at the end of the step that completes its prefill, without a token:
// counted as prompt tokens and a "stop" finish, not as generation, its KV
// (the prompt alone) freed, and its gateway cost the prompt alone.
func TestPrefillOnly(t *testing.T) {
	cfg := smallConfig()
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := newTrace()
	a.prefillOnly = true
	// Longer than max_model_len (4096): a batch of inputs as one prompt.
	req := Request{PromptTokens: 5000, PrefillOnly: true}
	tk, err := c.Submit(0, req, a)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Fault.AtToken != 0 {
		t.Errorf("prefill-only fault strikes at token %d, want 0", tk.Fault.AtToken)
	}
	if s := c.Snapshot(0); s.Replicas[0].KVReservedTokens != 5000 {
		t.Errorf("reserved %d KV tokens, want the prompt's 5000", s.Replicas[0].KVReservedTokens)
	}
	drain(c)
	if a.bad != "" {
		t.Fatal(a.bad)
	}
	// Three prefill chunks of ≤ 2048 tokens: 2048, 2048, 904, each step
	// step_base + 10 µs per token.
	want := ms(10+20.48) + ms(10+20.48) + ms(10+9.04)
	if !a.fin || a.finAt != want || a.res.FirstTokenAt != want || a.res.OutputTokens != 0 || a.res.FinishReason != "stop" || a.res.PromptTokens != 5000 {
		t.Fatalf("finished %v at %v (want %v): %+v", a.fin, a.finAt, want, a.res)
	}
	s := c.Snapshot(want)
	if s.PromptTokens != 5000 || s.GenerationTokens != 0 || s.FinishedStop != 1 || s.Running != 0 || s.KVUsage != 0 {
		t.Errorf("snapshot after: %+v", s)
	}
	if got := cfg.Cost(req); got != 5000 {
		t.Errorf("Cost = %d, want the prompt alone", got)
	}
}
