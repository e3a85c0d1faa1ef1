package simhttp

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGatewayHeaders: with quotas the simulator answers as a managed
// endpoint: the nine rate-limit headers on every answer, a reset of 0
// while a bucket holds a request of that size and a Unix time in seconds
// once it does not, and a 429 with Retry-After past the quota, per key.
func TestGatewayHeaders(t *testing.T) {
	cfg := fastConfig()
	cfg.QuotaRequestsPerMinute, cfg.QuotaTokensPerMinute, cfg.QuotaTokensPerDay = 2, 100000, 1000000
	cfg.GatewayHeaders = "kong"
	e := startServer(t, cfg)
	body := `{"model":"surge-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	send := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	first := send("a")
	h := first.Header
	if first.StatusCode != 200 {
		t.Fatalf("first: %d", first.StatusCode)
	}
	for _, name := range []string{"Requests", "Tokens-Per-Minute", "Tokens-Per-Day"} {
		for _, kind := range []string{"Limit", "Remaining", "Reset"} {
			if h.Get("X-Ratelimit-"+kind+"-"+name) == "" {
				t.Errorf("no X-Ratelimit-%s-%s", kind, name)
			}
		}
	}
	if h.Get("X-Ratelimit-Remaining-Requests") != "1" || h.Get("X-Ratelimit-Reset-Requests") != "0" || h.Get("X-Ratelimit-Limit-Tokens-Per-Day") != "1000000" {
		t.Errorf("first: %v", h)
	}
	if h.Get("X-Kong-Proxy-Latency") != "0" || h.Get("X-Kong-Upstream-Latency") == "" {
		t.Errorf("kong timing: %v", h)
	}
	second := send("a")
	reset, _ := strconv.ParseInt(second.Header.Get("X-Ratelimit-Reset-Requests"), 10, 64)
	if now := time.Now().Unix(); reset < now+25 || reset > now+31 { // the next request's worth refills in 30 s
		t.Errorf("second: reset %d, now %d", reset, now)
	}
	third := send("a")
	if third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") == "" || third.Header.Get("X-Ratelimit-Remaining-Requests") != "0" {
		t.Errorf("third: %d %v", third.StatusCode, third.Header)
	}
	// Another key has its own buckets.
	if other := send("b"); other.StatusCode != 200 || other.Header.Get("X-Ratelimit-Remaining-Requests") != "1" {
		t.Errorf("another key: %d %v", other.StatusCode, other.Header)
	}
}
