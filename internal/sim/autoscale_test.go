package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func scaleConfig() Config {
	c := smallConfig()
	c.MaxNumSeqs = 1
	c.Autoscale = true
	c.MinReplicas, c.MaxReplicas, c.Replicas = 1, 2, 1
	c.ScaleUpWaiting = 2
	c.ScaleUpHold = 5 * time.Second
	c.ScaleRequestDelay = time.Second
	c.NodeReadyDelay = 2 * time.Second
	c.ContainerReadyDelay = 3 * time.Second
	c.ModelReadyDelay = 4 * time.Second
	c.ScaleDownIdle = 10 * time.Second
	return c
}

// long runs for 1000 steps of ≈ 11 ms: ≈ 11 s on its replica.
var long = Request{PromptTokens: 10, MaxTokens: 1000, IgnoreEOS: true}

func eventsString(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%v %s r%d\n", e.At, e.Kind, e.Replica)
	}
	return b.String()
}

func TestAutoscalerTimeline(t *testing.T) {
	c, err := NewCluster(scaleConfig())
	if err != nil {
		t.Fatal(err)
	}
	type sub struct {
		at time.Duration
		tr *trace
		tk Ticket
	}
	var subs []*sub
	submit := func(at time.Duration) *sub {
		runUntil(c, at)
		s := &sub{at: at, tr: newTrace()}
		tk, err := c.Submit(at, long, s.tr)
		if err != nil {
			t.Fatal(err)
		}
		s.tk = tk
		subs = append(subs, s)
		return s
	}
	// waiting after each: 0, 1, 2, 3 → above 2 per ready replica from 3 s
	for _, at := range []time.Duration{0, 1, 2, 3} {
		submit(at * time.Second)
	}
	// 17 s: the new replica is still loading its model → replica 0
	if s := submit(17 * time.Second); s.tk.Replica != 0 {
		t.Fatalf("request at 17s routed to replica %d before model_ready", s.tk.Replica)
	}
	if snap := c.Snapshot(17 * time.Second); snap.StartingReplicas != 1 || snap.ReadyReplicas != 1 ||
		snap.Replicas[1].Awaiting != EventModelReady {
		t.Fatalf("at 17s: %+v", snap)
	}
	// 18.5 s: ready since 18 s and empty → replica 1
	late := submit(18500 * time.Millisecond)
	if late.tk.Replica != 1 {
		t.Fatalf("request at 18.5s routed to replica %d, want the new replica 1", late.tk.Replica)
	}
	drain(c)
	for i, s := range subs {
		if s.tr.bad != "" || !s.tr.fin {
			t.Fatalf("request %d: bad=%q fin=%v", i, s.tr.bad, s.tr.fin)
		}
		if s.tr.res.Replica == 1 && s.tr.sched < 18*time.Second {
			t.Fatalf("replica 1 served request %d at %v, before model_ready", i, s.tr.sched)
		}
	}
	want := fmt.Sprintf(`8s scale_trigger r1
9s capacity_requested r1
11s node_ready r1
14s container_ready r1
18s model_ready r1
18.5s first_served r1
%v scale_down r1
`, late.tr.finAt+10*time.Second)
	if got := eventsString(c.Events()); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	if s := c.Snapshot(time.Hour); s.ReadyReplicas != 1 || len(s.Replicas) != 1 {
		t.Fatalf("after scale-down: %+v", s)
	}
}

func TestAutoscalerHoldMustBeContinuous(t *testing.T) {
	c, _ := NewCluster(scaleConfig())
	longer := Request{PromptTokens: 10, MaxTokens: 3000, IgnoreEOS: true} // ≈ 33 s
	var ids []uint64
	for _, at := range []time.Duration{0, 1, 2, 3} {
		tk, _ := c.Submit(at*time.Second, longer, nil)
		ids = append(ids, tk.ID)
	}
	c.Cancel(6*time.Second, ids[3]) // 2 waiting: not above 2 → the hold restarts
	c.Submit(7*time.Second, longer, nil)
	runUntil(c, 30*time.Second)
	evs := c.Events()
	if len(evs) == 0 || evs[0].Kind != EventScaleTrigger || evs[0].At != 12*time.Second {
		t.Fatalf("events %v, want scale_trigger at 12s (7s + 5s hold)", evs)
	}
}

func TestAutoscalerLimits(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
	}{
		{"autoscale off", func(c *Config) { c.Autoscale = false }},
		{"already at max", func(c *Config) { c.Replicas, c.MinReplicas, c.MaxReplicas = 2, 2, 2 }},
		{"threshold not reached", func(c *Config) { c.ScaleUpWaiting = 50 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := scaleConfig()
			tc.edit(&cfg)
			c, err := NewCluster(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				c.Submit(time.Duration(i)*time.Second, long, nil)
			}
			drain(c)
			if evs := c.Events(); len(evs) != 0 {
				t.Fatalf("unexpected events %v", evs)
			}
		})
	}
}

func TestScaleDownNeverBelowMin(t *testing.T) {
	cfg := scaleConfig()
	cfg.Replicas, cfg.MinReplicas, cfg.MaxReplicas = 3, 1, 3
	c, _ := NewCluster(cfg)
	runUntil(c, time.Hour)
	want := "10s scale_down r2\n20s scale_down r1\n"
	if got := eventsString(c.Events()); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	if _, ok := c.NextEvent(); ok {
		t.Fatal("work pending at min_replicas on an idle cluster")
	}
	if s := c.Snapshot(time.Hour); s.ReadyReplicas != 1 {
		t.Fatalf("ready %d, want min_replicas 1", s.ReadyReplicas)
	}
}

// fromZero is scaleConfig scaled to zero: min_replicas 0, 4 replicas at most.
func fromZero() Config {
	c := scaleConfig()
	c.MinReplicas, c.MaxReplicas = 0, 4
	return c
}

// short runs 10 steps of ≈ 11 ms.
var short = Request{PromptTokens: 10, MaxTokens: 10, IgnoreEOS: true}

// Scaled to zero, the first arrival starts a replica at once (no hold); it
// and the next arrivals wait in its queue through the four milestones (1 +
// 2 + 3 + 4 s), are served from model_ready on, and the replica goes after
// scale_down_idle; a later arrival goes through the milestones again.
func TestScaleFromZero(t *testing.T) {
	c, err := NewCluster(fromZero())
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Snapshot(0); s.ReadyReplicas != 0 || s.StartingReplicas != 0 || len(s.Replicas) != 0 {
		t.Fatalf("at 0 with min_replicas 0: %+v, want no replica", s)
	}
	if _, ok := c.NextEvent(); ok {
		t.Fatal("an idle cluster at zero has work pending")
	}
	a, b := newTrace(), newTrace()
	if _, err := c.Submit(2*time.Second, short, a); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(5*time.Second, short, b); err != nil {
		t.Fatal(err)
	}
	if s := c.Snapshot(6 * time.Second); s.Waiting != 2 || s.StartingReplicas != 1 || s.ReadyReplicas != 0 ||
		s.OldestWaiting != 4*time.Second {
		t.Fatalf("at 6s: %+v, want 2 waiting for the starting replica, the oldest for 4s", s)
	}
	runUntil(c, 30*time.Second)
	late := newTrace()
	if _, err := c.Submit(40*time.Second, short, late); err != nil {
		t.Fatal(err)
	}
	drain(c)
	for i, tr := range []*trace{a, b, late} {
		if tr.bad != "" || !tr.fin {
			t.Fatalf("request %d: bad=%q fin=%v", i, tr.bad, tr.fin)
		}
	}
	// max_num_seqs 1: the second waits for the first
	if a.sched != 12*time.Second || b.sched != a.finAt {
		t.Fatalf("admitted at %v and %v, want model_ready 12s (2s + 1+2+3+4 s) and %v", a.sched, b.sched, a.finAt)
	}
	if late.sched != 50*time.Second {
		t.Fatalf("the arrival at 40s was admitted at %v, want 50s (a new cold start)", late.sched)
	}
	want := fmt.Sprintf(`2s scale_trigger r0
3s capacity_requested r0
5s node_ready r0
8s container_ready r0
12s model_ready r0
12s first_served r0
%v scale_down r0
40s scale_trigger r1
41s capacity_requested r1
43s node_ready r1
46s container_ready r1
50s model_ready r1
50s first_served r1
%v scale_down r1
`, max(a.finAt, b.finAt)+10*time.Second, late.finAt+10*time.Second)
	if got := eventsString(c.Events()); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	if s := c.Snapshot(time.Hour); s.ReadyReplicas != 0 || len(s.Replicas) != 0 {
		t.Fatalf("after the last scale-down: %+v, want zero replicas", s)
	}
}

// With max_waiting, arrivals beyond the limit while the first replica
// starts are refused, with a Retry-After that covers the cold start.
func TestScaleFromZeroMaxWaiting(t *testing.T) {
	cfg := fromZero()
	cfg.MaxWaiting = 2
	c, _ := NewCluster(cfg)
	for i := range 2 {
		if _, err := c.Submit(time.Duration(i)*time.Second, short, nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_, err := c.Submit(2*time.Second, short, nil)
	var qf *QueueFullError
	if !errors.As(err, &qf) {
		t.Fatalf("third request: %v, want a queue-full refusal", err)
	}
	if qf.RetryAfter < 8*time.Second {
		t.Fatalf("Retry-After %v at 2s, want ≥ 8s (model_ready at 10s)", qf.RetryAfter)
	}
	if s := c.Snapshot(2 * time.Second); s.Rejected != 1 || s.Waiting != 2 {
		t.Fatalf("%+v", s)
	}
}

// Scaled from zero, the cluster still scales further up by the usual rule.
func TestScaleFromZeroThenUp(t *testing.T) {
	c, _ := NewCluster(fromZero())
	for i := range 6 {
		c.Submit(time.Duration(i)*100*time.Millisecond, long, nil)
	}
	runUntil(c, time.Minute)
	var kinds []string
	for _, e := range c.Events() {
		if e.Kind == EventScaleTrigger {
			kinds = append(kinds, fmt.Sprintf("%v r%d", e.At, e.Replica))
		}
	}
	// r0 ready at 10s takes 1 in its batch (max_num_seqs 1): 5 waiting > 2
	// per ready replica from 10s, held 5s → r1 triggered at 15s
	if got := strings.Join(kinds[:min(2, len(kinds))], ", "); got != "0s r0, 15s r1" {
		t.Fatalf("scale triggers %s, want 0s r0, 15s r1", got)
	}
}
