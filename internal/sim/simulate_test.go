package sim

import (
	"net/http"
	"testing"
	"time"
)

func TestSimulateMatchesDirectDriving(t *testing.T) {
	cfg := DefaultConfig()
	arr := poissonArrivals(3, 0, 12, 20*time.Second, Request{PromptTokens: 500, MaxTokens: 300})
	c1, _ := NewCluster(cfg)
	out := Simulate(c1, arr, 0, 0, nil)

	c2, _ := NewCluster(cfg)
	trs := make([]*trace, len(arr))
	for i, a := range arr {
		runUntil(c2, a.At)
		trs[i] = newTrace()
		if _, err := c2.Submit(a.At, a.Req, trs[i]); err != nil {
			t.Fatal(err)
		}
	}
	drain(c2)
	for i, o := range out {
		tr := trs[i]
		var gap time.Duration
		for k := 1; k < len(tr.toks); k++ {
			gap = max(gap, tr.toks[k]-tr.toks[k-1])
		}
		if tr.bad != "" || o.Status != http.StatusOK || o.AdmittedAt != tr.sched || o.FirstTokenAt != tr.toks[0] ||
			o.DoneAt != tr.finAt || o.OutputTokens != len(tr.toks) || o.MaxGap != gap ||
			o.FinishReason != tr.res.FinishReason || o.PromptTokens != 500 {
			t.Fatalf("arrival %d: outcome %+v, direct %+v", i, o, tr)
		}
	}
}

func TestSimulateFaults(t *testing.T) {
	req := Request{PromptTokens: 100, MaxTokens: 50, IgnoreEOS: true}
	cases := []struct {
		name  string
		edit  func(*Config)
		check func(t *testing.T, o Outcome, c *Cluster)
	}{
		{"500", func(c *Config) { c.Fault500 = 1 }, func(t *testing.T, o Outcome, c *Cluster) {
			if !o.Failed || o.Status != 500 || o.DoneAt != o.ScheduledAt || o.OutputTokens != 0 || o.AdmittedAt != Never {
				t.Fatalf("%+v", o)
			}
		}},
		{"503", func(c *Config) { c.Fault503 = 1 }, func(t *testing.T, o Outcome, c *Cluster) {
			if !o.Failed || o.Status != 503 || o.Fault != Fault503 {
				t.Fatalf("%+v", o)
			}
		}},
		{"reset", func(c *Config) { c.FaultReset = 1 }, func(t *testing.T, o Outcome, c *Cluster) {
			if !o.StreamFailed || o.Status != 200 || o.OutputTokens != o.Ticket.Fault.AtToken-1 || o.FinishReason != "" {
				t.Fatalf("%+v", o)
			}
			if s := c.Snapshot(time.Hour); s.Cancelled != 1 || s.Finished != 0 {
				t.Fatalf("the engine did not drop the reset stream: %+v", s)
			}
		}},
		{"malformed", func(c *Config) { c.FaultMalformed = 1 }, func(t *testing.T, o Outcome, c *Cluster) {
			if !o.StreamFailed || o.Fault != FaultMalformed || o.OutputTokens != o.Ticket.Fault.AtToken-1 {
				t.Fatalf("%+v", o)
			}
		}},
		{"stall", func(c *Config) { c.FaultStall, c.FaultStallDelay = 1, 3*time.Second }, func(t *testing.T, o Outcome, c *Cluster) {
			if o.StreamFailed || o.OutputTokens != 50 || o.DoneAt-o.ScheduledAt < 3*time.Second {
				t.Fatalf("%+v", o)
			}
			if o.Ticket.Fault.AtToken == 1 {
				if o.FirstTokenAt-o.ScheduledAt < 3*time.Second {
					t.Fatalf("stall before the first token not applied: %+v", o)
				}
			} else if o.MaxGap < 3*time.Second || o.MaxGap > 3100*time.Millisecond {
				t.Fatalf("stall gap not applied: %+v", o)
			}
		}},
		{"slow headers", func(c *Config) { c.FaultSlowHeaders, c.FaultSlowHeadersDelay = 1, 2*time.Second }, func(t *testing.T, o Outcome, c *Cluster) {
			if o.FirstTokenAt < o.ScheduledAt+2*time.Second || o.OutputTokens != 50 || o.Status != 200 || o.AdmittedAt != o.ScheduledAt {
				t.Fatalf("%+v", o)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			for seed := range int64(5) { // several AtToken draws
				cfg.Seed = seed
				c, err := NewCluster(cfg)
				if err != nil {
					t.Fatal(err)
				}
				out := Simulate(c, []Arrival{{At: time.Second, Req: req}}, 0, 0, nil)
				tc.check(t, out[0], c)
			}
		})
	}
}

func TestSimulateTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 1
	long := Request{PromptTokens: 100, MaxTokens: 1000, IgnoreEOS: true} // ≈ 20 s alone
	short := Request{PromptTokens: 100, MaxTokens: 10, IgnoreEOS: true}
	c, _ := NewCluster(cfg)
	out := Simulate(c, []Arrival{{At: 0, Req: long}, {At: time.Second, Req: short}}, 5*time.Second, 0, nil)
	a, b := out[0], out[1]
	if !a.TimedOut || a.DoneAt != 5*time.Second || a.OutputTokens == 0 || a.OutputTokens >= 1000 || a.Status != 200 {
		t.Fatalf("long request: %+v", a)
	}
	// the timeout frees the only batch slot: b is admitted within a step of 5 s
	if b.TimedOut || b.AdmittedAt < 5*time.Second || b.AdmittedAt > 5*time.Second+100*time.Millisecond || b.OutputTokens != 10 {
		t.Fatalf("short request: %+v", b)
	}
	if s := c.Snapshot(time.Hour); s.Cancelled != 1 || s.Finished != 1 {
		t.Fatalf("%+v", s)
	}

	t.Run("slow headers beyond the timeout", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.FaultSlowHeaders, cfg.FaultSlowHeadersDelay = 1, 10*time.Second
		c, _ := NewCluster(cfg)
		o := Simulate(c, []Arrival{{At: 0, Req: short}}, 2*time.Second, 0, nil)[0]
		if !o.TimedOut || o.Status != 0 || o.OutputTokens != 0 || o.FirstTokenAt != Never || o.DoneAt != 2*time.Second {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("stall beyond the timeout", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.FaultStall, cfg.FaultStallDelay = 1, time.Minute
		c, _ := NewCluster(cfg)
		o := Simulate(c, []Arrival{{At: 0, Req: short}}, 10*time.Second, 0, nil)[0]
		if !o.TimedOut || o.OutputTokens != o.Ticket.Fault.AtToken-1 || o.DoneAt != 10*time.Second {
			t.Fatalf("%+v", o)
		}
	})
}

func TestSimulateRejectsAndSamples(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs, cfg.MaxWaiting = 1, 1
	c, _ := NewCluster(cfg)
	req := Request{PromptTokens: 100, MaxTokens: 100, IgnoreEOS: true}
	var times []time.Duration
	var maxWaiting int
	var last Snapshot
	out := Simulate(c, []Arrival{{0, req}, {0, req}, {0, req}, {500 * time.Millisecond, Request{PromptTokens: 0}}},
		0, time.Second, func(at time.Duration, s Snapshot) {
			times = append(times, at)
			maxWaiting = max(maxWaiting, s.Waiting)
			last = s
		})
	if out[0].Rejected || out[1].Rejected || !out[2].Rejected || out[2].Status != 429 || out[2].RetryAfter < time.Second {
		t.Fatalf("outcomes %+v", out[:3])
	}
	if out[3].Status != 400 {
		t.Fatalf("invalid request: %+v", out[3])
	}
	if len(times) < 3 || times[0] != 0 || maxWaiting != 1 || last.Running != 0 || last.Waiting != 0 {
		t.Fatalf("samples at %v, max waiting %d, last %+v", times, maxWaiting, last)
	}
	for i := 1; i < len(times); i++ {
		if times[i]-times[i-1] != time.Second {
			t.Fatalf("samples at %v", times)
		}
	}
	if times[len(times)-1] < out[1].DoneAt {
		t.Fatalf("last sample %v before the last completion %v", times[len(times)-1], out[1].DoneAt)
	}
}
