package sim

import (
	"testing"
	"time"
)

type countObs struct{ tokens int }

func (o *countObs) Scheduled(time.Duration)            {}
func (o *countObs) Tokens(_ time.Duration, total int)  { o.tokens++ }
func (o *countObs) Finished(_ time.Duration, _ Result) {}

// BenchmarkStep measures one engine step with 2,000 sequences decoding
// (one replica, max_num_seqs 2000), with and without an observer per
// sequence. One op = one step = 2,000 tokens.
func BenchmarkStep(b *testing.B) {
	for _, tc := range []struct {
		name string
		obs  bool
	}{{"nil-observer", false}, {"observer", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = 2000, 4096
			cfg.MaxModelLen = 1 << 24
			cfg.KVCacheTokens = 2000 * cfg.MaxModelLen
			c, err := NewCluster(cfg)
			if err != nil {
				b.Fatal(err)
			}
			obs := &countObs{}
			for range 2000 {
				var o Observer
				if tc.obs {
					o = obs
				}
				if _, err := c.Submit(0, Request{PromptTokens: 16, MaxTokens: 1<<24 - 16, IgnoreEOS: true}, o); err != nil {
					b.Fatal(err)
				}
			}
			for range 20 { // finish every prefill
				t, _ := c.NextEvent()
				c.Advance(t)
			}
			if s := c.Snapshot(0); s.Running != 2000 || s.Waiting != 0 {
				b.Fatalf("setup: %+v", s)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t, _ := c.NextEvent()
				c.Advance(t)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/token")
		})
	}
}

// BenchmarkSimulateBurst runs a whole burst experiment in virtual time:
// 7 min at 8/s, 1 min at 20/s, 5 min at 8/s on one default replica
// (≈ 6,500 requests, ≈ 1M tokens).
func BenchmarkSimulateBurst(b *testing.B) {
	var arr []Arrival
	arr = append(arr, poissonArrivals(1, 0, 8, 7*time.Minute, chat)...)
	arr = append(arr, poissonArrivals(2, 7*time.Minute, 20, time.Minute, chat)...)
	arr = append(arr, poissonArrivals(3, 8*time.Minute, 8, 5*time.Minute, chat)...)
	b.ReportAllocs()
	for b.Loop() {
		c, _ := NewCluster(DefaultConfig())
		Simulate(c, arr, 30*time.Second, time.Second, func(time.Duration, Snapshot) {})
	}
}

// BenchmarkCapacity runs one whole Capacity estimate: the default replica
// on the chat workload (6 trials, ≈ 7,500 requests), and the 10× faster
// engine of the capacity tests (9 trials, ≈ 61,000 requests).
func BenchmarkCapacity(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"default", DefaultConfig()}, {"fast", fastConfig()}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var res CapacityResult
			for b.Loop() {
				var err error
				if res, err = Capacity(tc.cfg, always(chat)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.RPS, "μ-req/s")
		})
	}
}
