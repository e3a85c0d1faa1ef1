package predict

import (
	"math"
	"strings"
	"testing"
	"time"
)

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*math.Abs(want) }

func TestBoundedQueueWithoutRetries(t *testing.T) {
	// The queue fills at 10 req/s in 10 s; the other 50 s of the burst
	// reject 10 req/s (500); the 100 left drain at 2 req/s: 50 s.
	p := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: 60 * s, QueueLimit: 100}
	pr, err := Predict(p)
	if err != nil {
		t.Fatal(err)
	}
	if !within(pr.PeakBacklog, 100, 1e-9) || !within(pr.PeakAt.Seconds(), 10, 0.01) ||
		!within(pr.RecoveryTime.Seconds(), 50, 0.01) || !within(pr.Rejected, 500, 0.01) || pr.Retried != 0 || pr.Abandoned != 0 || pr.Never {
		t.Fatalf("got %+v", pr)
	}
	for _, want := range []string{"Recovered 50s after the burst end.", "at most 100 waiting requests", "queue is full 10s after the burst start", "about 500 requests are rejected for good"} {
		if !strings.Contains(pr.Explanation, want) {
			t.Errorf("explanation lacks %q:\n%s", want, pr.Explanation)
		}
	}
	if pr.Model != "fluid backlog; no timeout; queue limit 100, no retries" {
		t.Errorf("model %q", pr.Model)
	}
}

func TestBoundedQueueRetriesAreExtraArrivals(t *testing.T) {
	// One retry after 5 s. Once the retries flow (15–60 s), x req/s of
	// first attempts are rejected and return 5 s later: with the queue
	// full, x = 20·(10 + x)/(20 + x), so x = √200 ≈ 14.14 req/s (reached
	// within a few delays: 10, 13.3, 14.0, …), and the second attempts are
	// rejected for good at 20 − 10 = 10 req/s. After the burst the retries
	// cascade: 60–65 s, 8 + 14.14 in → 4.39 req/s of new arrivals turned
	// away; 65–70 s, 8 + 4.39 in → 1.54; 70–75 s, 8 + 1.54 = 9.54 in,
	// below μ: the backlog drains to 97.7, then at 2 req/s: empty 48.9 s
	// later, so recovery ≈ 63.9 s instead of 50 s without retries.
	// Retried ≈ 50 (10–15 s) + ≈ 630 (15–60 s) + 21.9 + 7.7 ≈ 711;
	// rejected for good ≈ 450 − 20 (the slower start) + 38.8 + 4.2 ≈ 472.
	p := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: 60 * s, QueueLimit: 100, Retries: 1, RetryDelay: 5 * s}
	pr, err := Predict(p)
	if err != nil {
		t.Fatal(err)
	}
	if !within(pr.RecoveryTime.Seconds(), 63.9, 0.01) || !within(pr.Retried, 711, 0.02) || !within(pr.Rejected, 472, 0.03) || pr.Never {
		t.Fatalf("recovery %v, retried %.1f, rejected %.1f; want ≈ 63.9s, ≈ 711, ≈ 472\n%s", pr.RecoveryTime, pr.Retried, pr.Rejected, pr.Explanation)
	}
	for _, want := range []string{"rejected requests come back up to 1 time after 5s each", "extra attempts in all"} {
		if !strings.Contains(pr.Explanation, want) {
			t.Errorf("explanation lacks %q:\n%s", want, pr.Explanation)
		}
	}
	if pr.Model != "fluid backlog; no timeout; queue limit 100, 1 retry after 5s" {
		t.Errorf("model %q", pr.Model)
	}
	// A retry whose delay would reach the timeout is not sent.
	p.Patience = 4 * s
	p.QueueLimit = 30 // below μ × 4 s = 40, so the limit binds, not the timeout
	pr, err = Predict(p)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Retried != 0 || pr.Rejected == 0 {
		t.Errorf("with a 4s timeout and a 5s retry delay: retried %.1f, rejected %.1f; want 0 and > 0", pr.Retried, pr.Rejected)
	}
}

// A queue limit above what the timeout lets wait changes nothing: the
// stepped model gives the closed form's answer.
func TestBoundedQueueAgreesWithClosedForm(t *testing.T) {
	for _, p := range []Params{
		{Mu: 9.14, Lambda: 4, BurstRate: 40, BurstLen: 60 * s, Patience: 60 * s},
		{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: 60 * s, BoostMu: 16, BoostAt: 30 * s},
		{Mu: 10, Lambda: 8, BurstRate: 9, BurstLen: 60 * s},
	} {
		closed, err := Predict(p)
		if err != nil {
			t.Fatal(err)
		}
		p.QueueLimit = 1e4 // above every backlog here (548 at most)
		stepped, err := Predict(p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(stepped.RecoveryTime.Seconds()-closed.RecoveryTime.Seconds()) > 0.1 ||
			math.Abs(stepped.PeakBacklog-closed.PeakBacklog) > 0.01*closed.PeakBacklog+0.1 ||
			math.Abs(stepped.Abandoned-closed.Abandoned) > 0.01*closed.Abandoned+0.1 {
			t.Errorf("%+v:\nstepped recovery %v peak %.1f abandoned %.1f\nclosed  recovery %v peak %.1f abandoned %.1f",
				p, stepped.RecoveryTime, stepped.PeakBacklog, stepped.Abandoned, closed.RecoveryTime, closed.PeakBacklog, closed.Abandoned)
		}
	}
}

func TestBoundedQueueNeverRecovers(t *testing.T) {
	pr, err := Predict(Params{Mu: 10, Lambda: 10, BurstRate: 20, BurstLen: 60 * s, QueueLimit: 50, Retries: 2, RetryDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Never || !strings.Contains(pr.Explanation, "Never recovers") {
		t.Errorf("got %+v", pr)
	}
}

func TestValidateBounded(t *testing.T) {
	ok := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: time.Minute}
	for _, tc := range []struct {
		mod  func(p *Params)
		want string
	}{
		{func(p *Params) { p.QueueLimit = -1 }, "queue_limit"},
		{func(p *Params) { p.QueueLimit = math.Inf(1) }, "queue_limit"},
		{func(p *Params) { p.Retries = 11 }, "retries"},
		{func(p *Params) { p.Retries = 2 }, "retry_delay"},
		{func(p *Params) { p.RetryDelay = -time.Second }, "retry_delay"},
	} {
		p := ok
		tc.mod(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error naming %s", p, err, tc.want)
		}
	}
}

func TestModel(t *testing.T) {
	if got := (Params{Patience: time.Minute}).Model(); got != "fluid backlog; gives up after 1m0s; unbounded queue" {
		t.Errorf("got %q", got)
	}
}

func TestBoundedTimeline(t *testing.T) {
	p := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: 60 * s, QueueLimit: 100, Retries: 1, RetryDelay: 5 * s}
	pts, err := Timeline(p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := Predict(p)
	peak, last := 0.0, pts[len(pts)-1]
	for i, pt := range pts {
		peak = math.Max(peak, pt.Backlog)
		if i > 0 && pt.T <= pts[i-1].T {
			t.Fatalf("points out of order at %d: %v after %v", i, pt.T, pts[i-1].T)
		}
	}
	if peak != 100 || last.Backlog != 0 || last.T < p.BurstLen+pr.RecoveryTime {
		t.Errorf("peak %.1f, last point %+v; want the limit 100 and an empty queue after %v", peak, last, p.BurstLen+pr.RecoveryTime)
	}
	if len(pts) < 100 || len(pts) > 200 {
		t.Errorf("%d points for a %v horizon sampled every 1s", len(pts), last.T)
	}
}
