package burst

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
)

// The prediction's admission limit: --queue-limit for any target, else the
// simulator's max_waiting × replicas; retries only where the client sends
// them (not in virtual time), after Q / μ rounded up to whole seconds.
func TestPredictParamsQueueLimit(t *testing.T) {
	c := DefaultConfig()
	c.BaselineRPS = 8
	c.Options.Retries = 2
	cases := []struct {
		name               string
		queue, waiting     int
		simulated, virtual bool
		wantLimit          float64
		wantRetries        int
		wantDelay          time.Duration
	}{
		{"real target, limit unknown", 0, 0, false, false, 0, 0, 0},
		{"real target, --queue-limit 20", 20, 0, false, false, 20, 2, 3 * time.Second},
		{"simulator over HTTP, max-waiting 20", 0, 20, true, false, 20, 2, 3 * time.Second},
		{"simulator in virtual time: no retries", 0, 20, true, true, 20, 0, 0},
		{"--queue-limit wins over the simulator's", 50, 20, true, false, 50, 2, 6 * time.Second},
		{"a real target's sim settings are not its limit", 0, 20, false, false, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			c.QueueLimit, c.Options.Sim.MaxWaiting, c.Options.Sim.Replicas = tc.queue, tc.waiting, 1
			p := predictParams(&c, 5, 9.14, tc.simulated, tc.virtual)
			if p.QueueLimit != tc.wantLimit || p.Retries != tc.wantRetries || p.RetryDelay != tc.wantDelay {
				t.Fatalf("got limit %v, %d retries after %v; want %v, %d after %v", p.QueueLimit, p.Retries, p.RetryDelay, tc.wantLimit, tc.wantRetries, tc.wantDelay)
			}
			if _, err := predict.Predict(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestQueueLimitNote(t *testing.T) {
	runWith := func(limit float64, rejected int64) *Run {
		a := &analyze.Result{Phases: []analyze.PhaseResult{{Name: schedule.PhaseBurst,
			Stats: analyze.Stats{Offered: 1000, Outcomes: map[record.Outcome]int64{record.RateLimited: rejected}}}}}
		return &Run{Prediction: &predict.Prediction{Params: predict.Params{QueueLimit: limit}}, Result: &run.Result{Analysis: a}}
	}
	if got := queueLimitNote(runWith(0, 300)); !strings.Contains(got, "rejected 30.0% of the burst with 429") || !strings.Contains(got, "--queue-limit") {
		t.Errorf("unbounded model, 30%% rejected: %q", got)
	}
	if got := queueLimitNote(runWith(20, 300)); got != "" {
		t.Errorf("the model knew the limit: %q", got)
	}
	if got := queueLimitNote(runWith(0, 5)); got != "" {
		t.Errorf("0.5%% rejected: %q", got)
	}
}
