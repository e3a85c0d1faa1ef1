package virtual

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// prefixGen: 1000-token prompts of which the first 800 are shared.
func prefixGen(t *testing.T) *workload.Generator {
	t.Helper()
	p := workload.Profile{Name: "fixed", Prompt: workload.Fixed(1000), Output: workload.Fixed(10), MaxTokens: 10}
	g, err := workload.New(workload.Config{Profile: p, Seed: 1, IgnoreEOS: true, SharedPrefix: 800})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// prefixConfig has the prefix cache on and hashes prompts as the HTTP
// facade would see them in a chat request, counting the calls.
func prefixConfig(calls *int) Config {
	cfg := baseConfig()
	cfg.Sim.PrefixCacheTokens = 100_000
	cfg.Blocks = func(r *workload.Request, dst []uint64) []uint64 {
		*calls++
		h := cfg.Sim.NewPrefixHasher(dst)
		h.Message("user", r.Prompt)
		return h.Hashes
	}
	return cfg
}

// Open hashes each prompt once, when it is submitted; records carry the
// cached tokens and the prefix label; a request's first token comes sooner
// when its prefix was cached.
func TestOpenPrefixCache(t *testing.T) {
	calls := 0
	cfg := prefixConfig(&calls)
	arr := constant(t, "main", 1, 20*time.Second)
	out, err := Open(context.Background(), cfg, prefixGen(t), arr, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(arr) {
		t.Fatalf("Blocks called %d times for %d arrivals", calls, len(arr))
	}
	first, second := out.Records[0], out.Records[1]
	if first.CachedTokens != 0 || second.CachedTokens != 800 || second.PrefixTokens != 800 {
		t.Fatalf("cached %d then %d (prefix label %d); want 0, 800, 800", first.CachedTokens, second.CachedTokens, second.PrefixTokens)
	}
	if second.TTFTSend() >= first.TTFTSend() {
		t.Fatalf("TTFT %d with the prefix cached, %d without", second.TTFTSend(), first.TTFTSend())
	}
	// Without the cache the same config never hashes and never caches.
	calls = 0
	cfg.Sim.PrefixCacheTokens = 0
	out, err = Open(context.Background(), cfg, prefixGen(t), arr, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 0 || out.Records[1].CachedTokens != 0 {
		t.Fatalf("cache off: %d hash calls, %d cached tokens", calls, out.Records[1].CachedTokens)
	}
}

// The closed loop uses the cache too: every request after the first of
// each user that finds the prefix gets it from the cache.
func TestClosedPrefixCache(t *testing.T) {
	calls := 0
	out, err := Closed(context.Background(), prefixConfig(&calls), prefixGen(t), schedule.ClosedLoop{Users: 2, Duration: 10 * time.Second, Phase: "level"})
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	for _, r := range out.Records {
		if r.CachedTokens == 800 {
			cached++
		}
	}
	if calls != len(out.Records) || cached < len(out.Records)-2 {
		t.Fatalf("%d of %d records cached the prefix (%d hash calls)", cached, len(out.Records), calls)
	}
}

// Sessions hash every turn and sub-request once, as it is submitted (its
// messages, which the run drops right after); every request of a later
// turn finds the conversation before it in the cache (a sub-request is
// sent with its turn, so turn 1's find nothing yet).
func TestSessionsPrefixCache(t *testing.T) {
	calls := 0
	cfg := prefixConfig(&calls)
	cfg.CountPrompt = func(texts ...string) int { return cfg.Sim.PromptTokens(true, texts...) }
	cfg.Blocks = func(r *workload.Request, dst []uint64) []uint64 {
		calls++
		h := cfg.Sim.NewPrefixHasher(dst)
		for _, m := range r.Messages {
			h.Message(m.Role, m.Content)
		}
		return h.Hashes
	}
	arr := constant(t, "main", 1, 10*time.Second)
	out, err := Sessions(context.Background(), cfg, testSessions(t, 3, 1, time.Second), arr, nil, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(out.Records) {
		t.Fatalf("Blocks called %d times for %d requests", calls, len(out.Records))
	}
	for _, r := range out.Records {
		if r.Turn > 1 && r.CachedTokens == 0 {
			t.Fatalf("session %d turn %d branch %d: no cached tokens (%d prompt)", r.Session, r.Turn, r.Branch, r.PromptTokens)
		}
		if r.CachedTokens >= r.PromptTokens {
			t.Fatalf("record %+v: all of the prompt cached", r)
		}
	}
}

// BenchmarkOpenPrefixCache runs 2,000 arrivals of 2500-token prompts sharing
// 2000 tokens through the engine model with its prefix cache on: the cost
// of making and hashing each prompt at submit and of the cache itself.
func BenchmarkOpenPrefixCache(b *testing.B) {
	for _, cache := range []int{0, 200_000} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) {
			p := workload.Profile{Name: "fixed", Prompt: workload.Fixed(2500), Output: workload.Fixed(20), MaxTokens: 20}
			g, err := workload.New(workload.Config{Profile: p, Seed: 1, IgnoreEOS: true, SharedPrefix: 2000})
			if err != nil {
				b.Fatal(err)
			}
			calls := 0
			cfg := prefixConfig(&calls)
			cfg.Sim.PrefixCacheTokens = cache
			cfg.ScrapeInterval = 0
			arr := make([]schedule.Arrival, 2000)
			for i := range arr {
				arr[i] = schedule.Arrival{Seq: int64(i), At: time.Duration(i) * 500 * time.Millisecond, Phase: "main"}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Open(context.Background(), cfg, g, arr, 1000*time.Second, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(arr)), "ns/request")
		})
	}
}
