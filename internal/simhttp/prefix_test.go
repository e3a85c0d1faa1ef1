package simhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// usageOf posts a chat request with content and returns its usage.
func usageOf(t *testing.T, e *env, content string) map[string]any {
	t.Helper()
	b, _ := json.Marshal(content)
	resp := e.post("/chat/completions", `{"messages":[{"role":"user","content":`+string(b)+`}],"max_tokens":2,"ignore_eos":true}`)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var body struct {
		Usage map[string]any `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Usage
}

// With the prefix cache on, a second prompt that shares the first 640
// bytes (10 blocks of 64) reports 160 cached tokens; without it, usage
// has no prompt_tokens_details.
func TestPrefixCacheUsage(t *testing.T) {
	shared := strings.Repeat("0123456789", 64) // 640 bytes; "user\x00" shifts the blocks
	cfg := fastConfig()
	cfg.PrefixCacheTokens = 10_000
	e := startServer(t, cfg)
	u1 := usageOf(t, e, shared+"first unique tail")
	u2 := usageOf(t, e, shared+"second unique tail")
	cached := func(u map[string]any) any {
		d, _ := u["prompt_tokens_details"].(map[string]any)
		return d["cached_tokens"]
	}
	// The stream "user\x00" + 640 shared bytes holds ⌊645 / 64⌋ = 10 whole
	// shared blocks.
	if cached(u1) != 0.0 || cached(u2) != 160.0 {
		t.Fatalf("cached tokens %v then %v, want 0 then 160", cached(u1), cached(u2))
	}
	m := scrape(t, e)
	hits, queries := m["vllm:prefix_cache_hits_total"], m["vllm:prefix_cache_queries_total"]
	if hits == nil || queries == nil || hits.GetMetric()[0].GetCounter().GetValue() != 160 ||
		queries.GetMetric()[0].GetCounter().GetValue() != float64(2*EstimatePromptTokens(true, shared+"first unique tail")) {
		t.Fatalf("prefix cache counters: hits %v, queries %v", hits, queries)
	}
	off := startServer(t, fastConfig())
	usageOf(t, off, shared+"first")
	if u := usageOf(t, off, shared+"second"); u["prompt_tokens_details"] != nil {
		t.Fatalf("without a cache usage has prompt_tokens_details: %v", u)
	}
}
