package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// TestProxyFallback: with HTTP_PROXY applying to the endpoint, "auto"
// sends through net/http and so through the proxy (surge's own transport
// has no proxy support), and "surge" is refused, saying why. net/http
// reads the proxy variables once per process, so the checks run in a
// child process of this test binary with them set.
func TestProxyFallback(t *testing.T) {
	if os.Getenv("SURGE_PROXY_CHILD") != "" {
		proxyFallbackChild(t)
		return
	}
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A proxy gets the absolute URL; this one answers as the engine.
		if r.URL.Host != "engine.invalid" {
			http.Error(w, "not proxied: "+r.URL.String(), http.StatusBadGateway)
			return
		}
		proxied.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(role() + content("a") + usage(3, 1) + done))
	}))
	defer proxy.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyFallback$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SURGE_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestProxyFallback") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if proxied.Load() != 1 {
		t.Errorf("the proxy saw %d requests, want 1", proxied.Load())
	}
}

func proxyFallbackChild(t *testing.T) {
	const endpoint = "http://engine.invalid/v1" // reachable only through the proxy
	if !ProxyApplies(endpoint) {
		t.Fatal("HTTP_PROXY does not apply to the endpoint")
	}
	c := newTestClient(t, endpoint, nil)
	if c.TransportName() != TransportGo {
		t.Fatalf("auto with a proxy picked %q, want %q", c.TransportName(), TransportGo)
	}
	if rec := run(context.Background(), c, &testReq); rec.Outcome != record.OK || rec.OutputTokens != 1 {
		t.Fatalf("through the proxy: %s %q", rec.Outcome, rec.Error)
	}
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.Transport = endpoint, "m", TransportSurge
	if _, err := New(cfg, c.origin); err == nil || !strings.Contains(err.Error(), "does not use proxies") {
		t.Fatalf("surge with a proxy: %v, want a refusal naming the proxy", err)
	}
}
