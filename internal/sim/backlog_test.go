package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

// chat is the calibration workload: 500 prompt tokens, exactly 150 output tokens.
var chat = Request{PromptTokens: 500, MaxTokens: 150, IgnoreEOS: true}

// measureMu returns the saturated throughput of one replica on the chat
// workload, in requests/s: completions per second over three minutes of
// constant overload (15/s, 1.5× capacity) after a minute of warm-up.
func measureMu(t *testing.T, cfg Config) float64 {
	t.Helper()
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := Simulate(c, constArrivals(0, 15, 300*time.Second, chat), 0, 0, nil)
	n := 0
	for _, o := range out {
		if o.DoneAt >= 60*time.Second && o.DoneAt < 240*time.Second {
			n++
		}
	}
	return float64(n) / 180
}

// count returns the arrivals in (from, to].
func count(arr []Arrival, from, to time.Duration) float64 {
	n := 0
	for _, a := range arr {
		if a.At > from && a.At <= to {
			n++
		}
	}
	return float64(n)
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// TestBacklogGrowsAndDrains is docs/method.md §8's worked example on the model:
// baseline λ = 8/s, a 60 s burst at 20/s, then λ = 8/s until drained.
func TestBacklogGrowsAndDrains(t *testing.T) {
	cfg := DefaultConfig()
	mu := measureMu(t, cfg)
	if mu <= 8.5 || mu >= 20 {
		t.Fatalf("μ = %.2f/s: the example needs 8 < μ < 20", mu)
	}
	const lamBase, lamBurst = 8.0, 20.0
	burstStart, burstEnd := 60*time.Second, 120*time.Second
	for _, tc := range []struct {
		name string
		arr  func(start time.Duration, rate float64, dur time.Duration) []Arrival
	}{
		{"constant", func(s time.Duration, r float64, d time.Duration) []Arrival { return constArrivals(s, r, d, chat) }},
		{"poisson", func(s time.Duration, r float64, d time.Duration) []Arrival { return poissonArrivals(11, s, r, d, chat) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var arr []Arrival
			arr = append(arr, tc.arr(0, lamBase, burstStart)...)
			arr = append(arr, tc.arr(burstStart, lamBurst, burstEnd-burstStart)...)
			arr = append(arr, tc.arr(burstEnd, lamBase, 900*time.Second)...)
			c, _ := NewCluster(cfg)
			waiting := map[time.Duration]int{}
			inSystem := map[time.Duration]int{}
			drainedAt := Never
			Simulate(c, arr, 0, time.Second, func(at time.Duration, s Snapshot) {
				waiting[at], inSystem[at] = s.Waiting, s.Waiting+s.Running
				// drained: nobody has waited longer than a few steps (an
				// arrival at the sampling instant may still be queued)
				if at > burstEnd && s.OldestWaiting <= 100*time.Millisecond && drainedAt == Never {
					drainedAt = at
				}
			})
			// Predictions from the arrivals actually drawn (for constant
			// arrivals they are the nominal λ): growth λ − μ, and drain time
			// from the fluid model, the first T with W0 + A(T) − μT ≤ 0.
			growth := count(arr, burstStart+10*time.Second, burstEnd)/50 - mu
			addedPred := count(arr, burstStart, burstEnd) - mu*60
			w0 := float64(waiting[burstEnd])
			predDrain, k, a := 0.0, 0, 0.0
			for predDrain < 900 && w0+a-mu*predDrain > 0 {
				predDrain += 0.1
				for ; k < len(arr) && arr[k].At <= burstEnd+time.Duration(predDrain*float64(time.Second)); k++ {
					if arr[k].At > burstEnd {
						a++
					}
				}
			}
			slope := float64(waiting[burstEnd]-waiting[burstStart+10*time.Second]) / 50
			added := float64(inSystem[burstEnd] - inSystem[burstStart])
			drain := (drainedAt - burstEnd).Seconds()
			t.Logf("μ=%.2f/s; waiting grows %.2f/s (λ−μ = %.2f); backlog +%.0f (λ−μ)×60 = %.0f; "+
				"%.0f waiting at burst end; drained in %.0f s (fluid %.0f s, W0/(μ−8) = %.0f s)",
				mu, slope, growth, added, addedPred, w0, drain, predDrain, w0/(mu-lamBase))
			if !within(slope, growth, 0.15) {
				t.Errorf("waiting grows at %.2f/s, want λ−μ = %.2f ± 15%%", slope, growth)
			}
			if !within(added, addedPred, 0.15) {
				t.Errorf("backlog grew by %.0f, want (λ−μ)×60 = %.0f ± 15%%", added, addedPred)
			}
			if drainedAt == Never || !within(drain, predDrain, 0.15) {
				t.Errorf("drained in %.0f s, want %.0f s ± 15%%", drain, predDrain)
			}
			if tc.name == "constant" && !within(predDrain, w0/(mu-lamBase), 0.01) {
				t.Errorf("fluid model %.0f s != W0/(μ−λ) = %.0f s", predDrain, w0/(mu-lamBase))
			}
			if w := waiting[burstStart]; w > 3 {
				t.Errorf("%d waiting at baseline λ = 8/s before the burst", w)
			}
		})
	}
}

func TestBelowCapacityQueueStaysEmpty(t *testing.T) {
	for _, lam := range []float64{5, 8} {
		c, _ := NewCluster(DefaultConfig())
		sum, n, most := 0, 0, 0
		Simulate(c, poissonArrivals(5, 0, lam, 300*time.Second, chat), 0, 100*time.Millisecond, func(_ time.Duration, s Snapshot) {
			sum += s.Waiting
			n++
			most = max(most, s.Waiting)
		})
		mean := float64(sum) / float64(n)
		t.Logf("λ=%v/s: mean waiting %.3f, max %d", lam, mean, most)
		if mean > 0.5 || most > 10 {
			t.Errorf("λ=%v/s: mean waiting %.2f, max %d: the queue should stay near empty", lam, mean, most)
		}
	}
}

// gaps collects inter-token gaps of every request it follows.
type gaps struct {
	last time.Duration
	all  *[]time.Duration
}

func (g *gaps) Scheduled(time.Duration) {}
func (g *gaps) Tokens(now time.Duration, total int) {
	if total > 1 {
		*g.all = append(*g.all, now-g.last)
	}
	g.last = now
}
func (g *gaps) Finished(time.Duration, Result) {}

// TestCalibration measures the defaults the package doc quotes: μ, and TTFT
// and ITL at half load (5/s Poisson, chat workload).
func TestCalibration(t *testing.T) {
	cfg := DefaultConfig()
	mu := measureMu(t, cfg)
	arr := poissonArrivals(7, 0, 5, 300*time.Second, chat)
	c, _ := NewCluster(cfg)
	var ttft []time.Duration
	for _, o := range Simulate(c, arr, 0, 0, nil) {
		ttft = append(ttft, o.FirstTokenAt-o.ScheduledAt)
	}
	c, _ = NewCluster(cfg)
	var itl []time.Duration
	obs := make([]gaps, len(arr))
	for i, a := range arr {
		runUntil(c, a.At)
		obs[i].all = &itl
		c.Submit(a.At, a.Req, &obs[i])
	}
	drain(c)
	slices.Sort(ttft)
	slices.Sort(itl)
	t.Logf("μ = %.2f req/s; at 5 req/s: TTFT p50 %v p95 %v p99 %v; ITL p50 %v p95 %v p99 %v",
		mu, pct(ttft, .5), pct(ttft, .95), pct(ttft, .99), pct(itl, .5), pct(itl, .95), pct(itl, .99))
	if mu < 9.5 || mu > 10.5 {
		t.Errorf("μ = %.2f req/s, want ≈ 10", mu)
	}
	if p := pct(ttft, .5); p < 50*time.Millisecond || p > 300*time.Millisecond {
		t.Errorf("TTFT p50 %v at half load, want ~100 ms", p)
	}
	if p := pct(itl, .5); p < 10*time.Millisecond || p > 60*time.Millisecond {
		t.Errorf("ITL p50 %v at half load, want a few tens of ms", p)
	}
}
