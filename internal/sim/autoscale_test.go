package sim

import (
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
