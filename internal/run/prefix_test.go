package run

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// prefixOptions: 2500-token prompts, 20 output tokens, at a rate the engine
// model holds even without a cache; sharedPrefix tokens shared, the
// simulator's prefix cache of cacheTokens (0 = off).
func prefixOptions(sharedPrefix, cacheTokens int) Options {
	o := quietOptions()
	o.PromptTokens = workload.FixedLength(2500)
	o.OutputTokens = workload.FixedLength(20)
	o.IgnoreEOS = true
	o.SharedPrefix = sharedPrefix
	o.Sim.PrefixCacheTokens = cacheTokens
	return o
}

// prefixStats are the TTFT (send) p50 and p95 and the cached tokens of the
// successful records: their mean and largest, and how many had fewer than
// least.
type prefixStats struct {
	p50, p95            time.Duration
	meanCached, maxCach int
	below               int
}

func statsOf(t *testing.T, res *Result, least int) prefixStats {
	t.Helper()
	var ttft []int64
	var s prefixStats
	sum := 0
	for _, r := range recordsOf(t, res) {
		if r.Outcome != record.OK {
			t.Fatalf("record %d: %s", r.Seq, r.Outcome)
		}
		ttft = append(ttft, r.TTFTSend())
		sum += r.CachedTokens
		s.maxCach = max(s.maxCach, r.CachedTokens)
		if r.CachedTokens < least {
			s.below++
		}
	}
	slices.Sort(ttft)
	s.p50, s.p95 = time.Duration(ttft[(len(ttft)-1)/2]), time.Duration(ttft[len(ttft)*95/100])
	s.meanCached = sum / len(ttft)
	return s
}

func virtualRun(t *testing.T, o Options) *Result {
	t.Helper()
	env, err := Prepare(context.Background(), o, true, nil, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(2, 2*time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The effect of the simulator's prefix cache, in virtual time: a shared
// prefix of 2000 of 2500 tokens with the cache on is served from it
// (cached_tokens = the prefix for every request after the first) and its
// TTFT is far lower than with the cache off; with surge's default nonce the
// cache finds nothing.
func TestPrefixCacheEffectVirtual(t *testing.T) {
	on := statsOf(t, virtualRun(t, prefixOptions(2000, 200_000)), 2000)
	off := statsOf(t, virtualRun(t, prefixOptions(2000, 0)), 0)
	nonce := statsOf(t, virtualRun(t, prefixOptions(0, 200_000)), 0)
	t.Logf("TTFT p50/p95: cache on %v/%v, off %v/%v, nonce first %v/%v; cached mean %d / %d / %d",
		on.p50, on.p95, off.p50, off.p95, nonce.p50, nonce.p95, on.meanCached, off.meanCached, nonce.meanCached)
	if on.below > 1 || on.maxCach != 2000 {
		t.Errorf("cache on: %d requests below 2000 cached tokens (only the first may be), most %d", on.below, on.maxCach)
	}
	if off.maxCach != 0 || nonce.maxCach != 0 {
		t.Errorf("cached tokens with the cache off %d, with a nonce first %d; want 0", off.maxCach, nonce.maxCach)
	}
	if 3*on.p50 > off.p50 || 3*on.p95 > off.p95 {
		t.Errorf("TTFT with the cache (%v/%v) not markedly below without it (%v/%v)", on.p50, on.p95, off.p50, off.p95)
	}
	if nonce.p50 != off.p50 {
		t.Errorf("nonce-first TTFT p50 %v differs from the uncached %v: the cache must not help unique prompts", nonce.p50, off.p50)
	}
}

// The same effect through the HTTP simulator: the client reads
// usage.prompt_tokens_details.cached_tokens into the record.
func TestPrefixCacheEffectHTTP(t *testing.T) {
	run := func(o Options) *Result {
		var res *Result
		synctest.Test(t, func(t *testing.T) {
			env := bubbleEnv(t, o, nil)
			var err error
			res, err = env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(2, 30*time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			res.Records = record.SliceSource(recordsOf(t, res)) // the folder goes with the bubble's t
		})
		return res
	}
	onRes := run(prefixOptions(2000, 200_000))
	on := statsOf(t, onRes, 2000)
	off := statsOf(t, run(prefixOptions(2000, 0)), 0)
	t.Logf("HTTP TTFT p50/p95: cache on %v/%v, off %v/%v; cached mean %d", on.p50, on.p95, off.p50, off.p95, on.meanCached)
	if on.below > 1 || on.maxCach != 2000 || off.maxCach != 0 {
		t.Errorf("cached tokens: %d requests below 2000 with the cache (most %d), most %d without", on.below, on.maxCach, off.maxCach)
	}
	if 3*on.p50 > off.p50 {
		t.Errorf("TTFT p50 with the cache %v not markedly below without it %v", on.p50, off.p50)
	}
	for _, r := range recordsOf(t, onRes) {
		if r.PrefixTokens != 2000 {
			t.Fatalf("record %d: prefix_tokens %d, want 2000", r.Seq, r.PrefixTokens)
		}
	}
	m := onRes.Manifest
	if sp := m.SharedPrefix; sp == nil || sp.Tokens != 2000 || sp.Share != 0.8 || sp.Lengthened != 0 || sp.Requests != len(recordsOf(t, onRes)) {
		t.Fatalf("manifest shared_prefix = %+v", m.SharedPrefix)
	}
	if !strings.Contains(m.CacheState, "shared prefix of 2000 tokens (80.0% of prompt tokens; 0 of 60 draws lengthened") {
		t.Fatalf("cache_state = %q", m.CacheState)
	}
}

func TestCacheStateWords(t *testing.T) {
	o := quietOptions()
	if s := CacheState(&o, nil); !strings.HasPrefix(s, "unique prompts: nonce first (no prefix reuse)") {
		t.Errorf("default: %q", s)
	}
	o.NoNonce = true
	if s := CacheState(&o, nil); !strings.HasPrefix(s, "no nonce: prompts share their starts") {
		t.Errorf("no nonce: %q", s)
	}
	o.NoNonce, o.SharedPrefix = false, 300
	sp := &record.SharedPrefix{Tokens: 300, Requests: 10, PromptTokens: 4000, Share: 0.75, Lengthened: 3}
	if s := CacheState(&o, sp); !strings.HasPrefix(s, "shared prefix of 300 tokens (75.0% of prompt tokens; 3 of 10 draws lengthened to hold it)") {
		t.Errorf("shared prefix: %q", s)
	}
}

// A short draw is lengthened to hold the prefix, and the manifest counts it.
func TestSharedPrefixLengthenedCounted(t *testing.T) {
	o := prefixOptions(600, 0)
	o.PromptTokens = workload.FixedLength(100)
	res := virtualRun(t, o)
	sp := res.Manifest.SharedPrefix
	if sp == nil || sp.Lengthened != sp.Requests || sp.Requests != len(recordsOf(t, res)) {
		t.Fatalf("shared_prefix = %+v for %d records", sp, len(recordsOf(t, res)))
	}
	for _, r := range recordsOf(t, res) {
		if r.PromptTokens < 600+workload.MinUniqueTokens {
			t.Fatalf("record %d: the server counted %d prompt tokens, below the prefix and its tail", r.Seq, r.PromptTokens)
		}
	}
	o.Sim.PrefixCacheTokens = -1
	if _, err := Prepare(context.Background(), o, true, nil, nil, "test"); err == nil || !strings.Contains(err.Error(), "prefix_cache_tokens") {
		t.Fatalf("a negative prefix cache: %v", err)
	}
	o = prefixOptions(-5, 0)
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "shared_prefix") {
		t.Fatalf("a negative shared prefix: %v", err)
	}
}
