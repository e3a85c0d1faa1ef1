package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func hashes(c Config, parts ...string) []uint64 {
	h := c.NewPrefixHasher(nil)
	for _, p := range parts {
		h.Text(p)
	}
	return h.Hashes
}

func TestPrefixHasherChainsBlocks(t *testing.T) {
	c := DefaultConfig() // 16 tokens × 4 bytes = 64-byte blocks
	if c.BlockBytes() != 64 {
		t.Fatalf("BlockBytes = %d, want 64", c.BlockBytes())
	}
	text := strings.Repeat("abcdefghij", 100) // 1000 bytes: 15 full blocks
	whole := hashes(c, text)
	if len(whole) != 15 {
		t.Fatalf("%d hashes of 1000 bytes, want 15 full blocks", len(whole))
	}
	// Writing in pieces, across block boundaries, gives the same blocks.
	if got := hashes(c, text[:3], text[3:130], text[130:131], text[131:]); !slices.Equal(got, whole) {
		t.Fatal("split writes hash differently")
	}
	// A change in byte 200 (block 3) changes block 3 and every block after
	// it, although blocks 4.. have the same bytes: the hashes are chained.
	changed := text[:200] + "X" + text[201:]
	got := hashes(c, changed)
	for i := range whole {
		if same := got[i] == whole[i]; same != (i < 3) {
			t.Fatalf("block %d: same=%v after a change in block 3", i, same)
		}
	}
	// Identical bytes after different blocks hash differently.
	if whole[1] == hashes(c, text[64:])[0] {
		t.Fatal("blocks hash without their position in the chain")
	}
	// Chat rendering is prefix-stable: a conversation's first messages
	// give the first blocks of the whole conversation.
	h := c.NewPrefixHasher(nil)
	h.Message("user", text)
	first := slices.Clone(h.Hashes)
	h.Message("assistant", "an answer")
	h.Message("user", text)
	if !slices.Equal(h.Hashes[:len(first)], first) || len(h.Hashes) <= len(first) {
		t.Fatal("a longer conversation does not extend the shorter one's blocks")
	}
	h.Reset(nil)
	if len(h.Hashes) != 0 || len(hashes(c, "short")) != 0 {
		t.Fatal("Reset keeps hashes, or a part block was hashed")
	}
	if n := testing.AllocsPerRun(100, func() { h.Reset(h.Hashes); h.Text(text) }); n != 0 {
		t.Fatalf("hashing allocates %v times per prompt with a reused buffer", n)
	}
}

func TestPrefixCacheLRU(t *testing.T) {
	p := newPrefixCache(3)
	for _, h := range []uint64{1, 2, 3} {
		p.add(h)
	}
	if n := p.match([]uint64{1, 2, 9, 3}); n != 2 { // 1 and 2 are now the most recent
		t.Fatalf("match = %d, want 2 (stops at the first miss)", n)
	}
	p.add(4) // evicts 3, the least recently used
	if p.len() != 3 || p.match([]uint64{3}) != 0 || p.match([]uint64{1, 2, 4}) != 3 {
		t.Fatal("the least recently used block was not the one evicted")
	}
	p.add(4) // already there: no growth
	if p.len() != 3 {
		t.Fatalf("len = %d after re-adding a block", p.len())
	}
}

// prefixRun submits, one after the other on an idle engine, requests of
// 2500 prompt tokens whose first 2000 tokens (8000 bytes) are shared, and
// returns each one's TTFT and cached tokens.
func prefixRun(t *testing.T, cfg Config, n int) (ttft []time.Duration, cached []int) {
	t.Helper()
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shared := strings.Repeat("the shared system prompt. ", 8000/26+1)[:8000]
	at := time.Duration(0)
	for i := range n {
		unique := strings.Repeat(string(rune('a'+i%26)), 2000)
		tr := newTrace()
		req := Request{PromptTokens: 2500, MaxTokens: 4, IgnoreEOS: true, Blocks: hashes(cfg, shared, unique)}
		if _, err := c.Submit(at, req, tr); err != nil {
			t.Fatal(err)
		}
		for {
			next, ok := c.NextEvent()
			if !ok {
				break
			}
			c.Advance(next)
		}
		if tr.bad != "" || !tr.fin {
			t.Fatalf("request %d: %s (finished %v)", i, tr.bad, tr.fin)
		}
		ttft = append(ttft, tr.toks[0]-at)
		cached = append(cached, tr.res.CachedTokens)
		at = tr.finAt + time.Second
	}
	return ttft, cached
}

func TestPrefixCacheSkipsCachedPrefill(t *testing.T) {
	off := DefaultConfig()
	on := DefaultConfig()
	on.PrefixCacheTokens = 100_000
	offTTFT, offCached := prefixRun(t, off, 3)
	onTTFT, onCached := prefixRun(t, on, 3)
	// Without the cache every request prefills 2500 tokens: two steps of
	// the 2048-token budget, 20 ms + 2048 × 120 µs and 20 ms + 452 × 120 µs.
	wantOff := 2*DefaultStepBase + 2500*DefaultStepPerPrefillToken
	for i := range 3 {
		if offTTFT[i] != wantOff || offCached[i] != 0 {
			t.Fatalf("cache off, request %d: TTFT %v cached %d; want %v, 0", i, offTTFT[i], offCached[i], wantOff)
		}
	}
	// The first request finds nothing; the next ones find the 125 blocks
	// of the shared 8000 bytes (2000 tokens) and prefill 500 in one step.
	if onCached[0] != 0 || onTTFT[0] != wantOff {
		t.Fatalf("first request with the cache: TTFT %v cached %d", onTTFT[0], onCached[0])
	}
	wantOn := DefaultStepBase + 500*DefaultStepPerPrefillToken
	for i := 1; i < 3; i++ {
		if onCached[i] != 2000 || onTTFT[i] != wantOn {
			t.Fatalf("cache on, request %d: TTFT %v cached %d; want %v, 2000", i, onTTFT[i], onCached[i], wantOn)
		}
	}
}

func TestPrefixCacheKeepsTheLastTokenAndCapacity(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PrefixCacheTokens = 64 // 4 blocks
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("0123456789", 64)[:640] // 10 blocks of 64 bytes
	run := func(prompt int) Result {
		tr := newTrace()
		now, _ := c.NextEvent()
		now = max(now, time.Duration(c.Snapshot(0).Steps)*time.Second)
		if _, err := c.Submit(now, Request{PromptTokens: prompt, MaxTokens: 1, Blocks: hashes(cfg, text)}, tr); err != nil {
			t.Fatal(err)
		}
		for {
			next, ok := c.NextEvent()
			if !ok {
				break
			}
			c.Advance(next)
		}
		return tr.res
	}
	run(160) // caches 4 of its 10 blocks: the capacity; the last 4 added stay
	if r := run(160); r.CachedTokens != 0 {
		t.Fatalf("blocks 7..10 in a 4-block cache: %d cached tokens, want 0 (block 1 was evicted)", r.CachedTokens)
	}
	cfg.PrefixCacheTokens = 1000
	if c, err = NewCluster(cfg); err != nil {
		t.Fatal(err)
	}
	run(160)
	// A prompt of exactly 10 blocks gets 9 of them: the last token is
	// always computed.
	if r := run(160); r.CachedTokens != 144 {
		t.Fatalf("a fully cached prompt of 160 tokens: %d cached, want 144", r.CachedTokens)
	}
	if s := c.Snapshot(0); s.CachedTokens != 144 || s.PromptTokens != 320 {
		t.Fatalf("snapshot: %d cached of %d prompt tokens, want 144 of 320", s.CachedTokens, s.PromptTokens)
	}
}

func TestPrefixCacheConfig(t *testing.T) {
	for _, tc := range []struct {
		cache, block int
		field        string
	}{
		{-1, 16, "prefix_cache_tokens"},
		{8, 16, "prefix_cache_tokens"},
		{1000, -1, "prefix_block_tokens"},
		{1000, MaxPrefixBlockTokens + 1, "prefix_block_tokens"},
	} {
		c := DefaultConfig()
		c.PrefixCacheTokens, c.PrefixBlockTokens = tc.cache, tc.block
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("cache %d block %d: %v, want an error on %s", tc.cache, tc.block, err, tc.field)
		}
	}
	c := DefaultConfig()
	c.PrefixCacheTokens, c.PrefixBlockTokens = 64, 0 // 0 = the default block
	if err := c.Validate(); err != nil || c.BlockBytes() != 64 {
		t.Fatalf("block 0: %v, %d bytes", err, c.BlockBytes())
	}
}

// BenchmarkPrefixHasher hashes a 2500-token (10 KB) chat prompt in 64-byte
// blocks with a reused buffer, as virtual time does at every submit.
func BenchmarkPrefixHasher(b *testing.B) {
	c := DefaultConfig()
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 10_000/45+1)[:10_000]
	h := c.NewPrefixHasher(nil)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		h.Reset(h.Hashes)
		h.Message("user", text)
	}
}
