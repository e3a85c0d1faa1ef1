package simhttp

import (
	"context"
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// gateways are the simulator's gateway (sim.Gateway) per API key: the
// hash (never the key) of the Authorization header, or of Anthropic's
// x-api-key as a bearer token without one, names a key's buckets.
type gateways struct {
	cfg     sim.Config
	headers string // sim.Config.GatewayHeaders
	keys    map[[32]byte]*sim.Gateway
}

func newGateways(cfg sim.Config) *gateways {
	if !cfg.HasGateway() {
		return nil
	}
	return &gateways{cfg: cfg, headers: cfg.GatewayHeaders, keys: map[[32]byte]*sim.Gateway{}}
}

// admit asks the key's gateway about a request at now (under the
// server's lock).
func (g *gateways) admit(r *http.Request, now time.Duration, req sim.Request) sim.Admission {
	key := r.Header.Get("Authorization")
	if key == "" && r.Header.Get("X-Api-Key") != "" {
		key = "Bearer " + r.Header.Get("X-Api-Key") // the same key as either header
	}
	k := sha256.Sum256([]byte(key))
	gw := g.keys[k]
	if gw == nil {
		gw = sim.NewGateway(g.cfg)
		g.keys[k] = gw
	}
	return gw.Admit(now, g.cfg.Cost(req))
}

// The nine rate-limit headers of a DigitalOcean-style managed endpoint
// (limit, remaining, reset × requests, tokens per minute, tokens per
// day), the bucket order of sim.Admission.Buckets.
var quotaHeaders = [...][3]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
	{"X-Ratelimit-Limit-Tokens-Per-Minute", "X-Ratelimit-Remaining-Tokens-Per-Minute", "X-Ratelimit-Reset-Tokens-Per-Minute"},
	{"X-Ratelimit-Limit-Tokens-Per-Day", "X-Ratelimit-Remaining-Tokens-Per-Day", "X-Ratelimit-Reset-Tokens-Per-Day"},
}

// writeQuota sets the rate-limit headers of a: per bucket its limit, what
// remains, and its reset as DigitalOcean writes it, a Unix time in seconds
// when the bucket will hold another request of this size, 0 when it does.
func (s *Server) writeQuota(h http.Header, a *sim.Admission) {
	for b, names := range quotaHeaders {
		q := a.Buckets[b]
		if !q.On {
			continue
		}
		h.Set(names[0], strconv.FormatInt(q.Limit, 10))
		h.Set(names[1], strconv.FormatInt(q.Remaining, 10))
		reset := int64(0)
		if q.Reset > 0 {
			reset = int64(math.Ceil(float64(s.origin.Add(s.now()+q.Reset).UnixNano()) / 1e9))
		}
		h.Set(names[2], strconv.FormatInt(reset, 10))
	}
}

// announceWait writes the gateway's wait in the convention chosen (Envoy
// announces only the upstream's time: announceUpstream).
func (g *gateways) announceWait(h http.Header, wait time.Duration) {
	switch g.headers {
	case "none", "envoy":
	case "kong":
		h.Set("X-Kong-Proxy-Latency", strconv.FormatInt(int64(math.Round(float64(wait)/1e6)), 10))
	case "litellm":
		h.Set("X-Litellm-Overhead-Duration-Ms", msText(wait))
	default:
		h.Add("Server-Timing", "gateway;dur="+msText(wait))
	}
}

// announceUpstream writes, as the response headers go out, the engine's
// time from the gateway's release to its headers, where the convention
// has it: Kong's upstream latency, Envoy's upstream service time.
func (g *gateways) announceUpstream(h http.Header, upstream time.Duration) {
	ms := strconv.FormatInt(int64(math.Round(float64(upstream)/1e6)), 10)
	switch g.headers {
	case "kong":
		h.Set("X-Kong-Upstream-Latency", ms)
	case "envoy":
		h.Set("X-Envoy-Upstream-Service-Time", ms)
	}
}

func msText(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// holdAtGateway waits until release (sim time) unless the client goes
// away first; false then.
func (s *Server) holdAtGateway(ctx context.Context, release time.Duration) bool {
	t := time.NewTimer(max(release-s.now(), 0))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// gatewayRefusal is the gateway's 429: over quota, and its queue full or
// none.
func gatewayRefusal(a *sim.Admission) *apiError {
	msg := "rate limit exceeded"
	if a.Binding >= 0 {
		msg += ": " + sim.BucketNames[a.Binding]
	}
	if a.Full {
		msg += " (the gateway's queue is full)"
	}
	retry := 0
	if a.RetryAfter > 0 {
		retry = int(math.Ceil(a.RetryAfter.Seconds()))
	}
	return &apiError{status: http.StatusTooManyRequests, typ: "RateLimitError", message: msg, retryAfter: retry}
}
