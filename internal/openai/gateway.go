package openai

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/record"
)

// Gateway timing conventions (Config.GatewayTiming, --gateway-timing): how
// a gateway in front of the engine announces its own wait and the
// upstream's time in the response headers.
const (
	GatewayAuto         = "auto"          // the first convention whose headers a response carries (default)
	GatewayOff          = "off"           // read none
	GatewayKong         = "kong"          // X-Kong-Proxy-Latency, X-Kong-Upstream-Latency (ms)
	GatewayEnvoy        = "envoy"         // x-envoy-upstream-service-time (ms); the wait is derived
	GatewayLiteLLM      = "litellm"       // x-litellm-overhead-duration-ms, x-litellm-response-duration-ms
	GatewayServerTiming = "server-timing" // Server-Timing metrics named gateway/proxy/queue/wait and upstream/backend/origin (or total)
	gatewayHeaderPrefix = "header:"       // header:WAIT, or header:TOTAL,UPSTREAM
)

// The headers of the named conventions, canonical.
const (
	hdrKongProxy      = "X-Kong-Proxy-Latency"
	hdrKongUpstream   = "X-Kong-Upstream-Latency"
	hdrEnvoyUpstream  = "X-Envoy-Upstream-Service-Time"
	hdrLiteLLMWait    = "X-Litellm-Overhead-Duration-Ms"
	hdrLiteLLMTotal   = "X-Litellm-Response-Duration-Ms"
	gatewayConvention = "gateway timing convention"
)

// GatewayTimingNames lists the named conventions --gateway-timing accepts
// besides header:NAME[,NAME].
var GatewayTimingNames = []string{GatewayAuto, GatewayOff, GatewayKong, GatewayEnvoy, GatewayLiteLLM, GatewayServerTiming}

// GatewayTiming is a parsed convention. For header:, wait is the header of
// the gateway's own wait, or total and upstream are given and the wait is
// total − upstream.
type GatewayTiming struct {
	kind                  string
	wait, total, upstream string // canonical header names (header: only)
}

// ParseGatewayTiming checks a --gateway-timing value: one of
// GatewayTimingNames, or header:NAME (the gateway's wait) or
// header:TOTAL,UPSTREAM (the gateway's total time and the upstream's; the
// wait is their difference). "" is auto.
func ParseGatewayTiming(s string) (GatewayTiming, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return GatewayTiming{kind: GatewayAuto}, nil
	}
	for _, n := range GatewayTimingNames {
		if strings.EqualFold(s, n) {
			return GatewayTiming{kind: n}, nil
		}
	}
	n := len(gatewayHeaderPrefix)
	if len(s) < n || !strings.EqualFold(s[:n], gatewayHeaderPrefix) {
		return GatewayTiming{}, fmt.Errorf("%s %q: want %s or header:NAME[,NAME]", gatewayConvention, s, strings.Join(GatewayTimingNames, ", "))
	}
	names := strings.Split(s[n:], ",")
	if len(names) > 2 {
		return GatewayTiming{}, fmt.Errorf("%s %q: header: takes one name (the gateway's wait) or two (its total time, then the upstream's)", gatewayConvention, s)
	}
	for i := range names {
		name := strings.TrimSpace(names[i])
		if !validHeaderName(name) {
			return GatewayTiming{}, fmt.Errorf("%s %q: %q is not a header name", gatewayConvention, s, name)
		}
		names[i] = http.CanonicalHeaderKey(name)
	}
	g := GatewayTiming{kind: gatewayHeaderPrefix}
	if len(names) == 1 {
		g.wait = names[0]
	} else {
		g.total, g.upstream = names[0], names[1]
	}
	return g, nil
}

// Headers names the headers the convention reads, for the line that says
// a target sent none of them; nil for auto and off.
func (g GatewayTiming) Headers() []string {
	switch g.kind {
	case GatewayKong:
		return []string{hdrKongProxy, hdrKongUpstream}
	case GatewayEnvoy:
		return []string{hdrEnvoyUpstream}
	case GatewayLiteLLM:
		return []string{hdrLiteLLMWait}
	case GatewayServerTiming:
		return []string{hdrServerTiming}
	case gatewayHeaderPrefix:
		if g.wait != "" {
			return []string{g.wait}
		}
		return []string{g.total, g.upstream}
	}
	return nil
}

// apply sets rec.GatewayNs and rec.UpstreamNs from h (and,
// for Server-Timing, from rec.ServerTiming, parsed before). Values left
// unannounced stay record.None.
func (g *GatewayTiming) apply(rec *record.Record, h http.Header) {
	switch g.kind {
	case GatewayOff:
		return
	case GatewayAuto:
		// Only the headers that name a gateway: Server-Timing is any
		// server's, so auto reads it only for the stage names below.
		switch {
		case len(h[hdrKongProxy]) > 0 || len(h[hdrKongUpstream]) > 0:
			kong(rec, h)
		case len(h[hdrLiteLLMWait]) > 0:
			litellm(rec, h)
		case len(h[hdrEnvoyUpstream]) > 0:
			envoy(rec, h)
		default:
			serverTiming(rec)
		}
	case GatewayKong:
		kong(rec, h)
	case GatewayEnvoy:
		envoy(rec, h)
	case GatewayLiteLLM:
		litellm(rec, h)
	case GatewayServerTiming:
		serverTiming(rec)
	case gatewayHeaderPrefix:
		if g.wait != "" {
			rec.GatewayNs = headerDuration(h, g.wait)
			return
		}
		rec.UpstreamNs = headerDuration(h, g.upstream)
		total := headerDuration(h, g.total)
		// Each header is rounded on its own clock: nginx truncates
		// $request_time (wall clock) and $upstream_header_time (monotonic)
		// to the ms separately, so when it held a request for no time the
		// upstream's can read 1 ms above the total (7% of 74 unheld
		// requests in e2e/nginx_test.go). That is a wait of 0, not none.
		if total != record.None && rec.UpstreamNs != record.None && rec.UpstreamNs > total && rec.UpstreamNs-total <= headerRounding {
			total = rec.UpstreamNs
		}
		rec.GatewayNs = difference(total, rec.UpstreamNs)
	}
}

// kong: X-Kong-Proxy-Latency is the time Kong spent before proxying (its
// plugins, rate limiting, routing); X-Kong-Upstream-Latency the upstream's
// time to its first byte.
func kong(rec *record.Record, h http.Header) {
	rec.GatewayNs = headerDuration(h, hdrKongProxy)
	rec.UpstreamNs = headerDuration(h, hdrKongUpstream)
}

// envoy announces only the upstream's time; the gateway's share is what
// is left of the client's own wait for the headers after its connection,
// so it includes the network between surge and Envoy.
func envoy(rec *record.Record, h http.Header) {
	rec.UpstreamNs = headerDuration(h, hdrEnvoyUpstream)
	if rec.UpstreamNs == record.None || rec.HeadersNs == record.None || rec.SentNs == record.None {
		return
	}
	from := max(rec.SentNs, rec.ConnNs)
	rec.GatewayNs = max(rec.HeadersNs-from-rec.UpstreamNs, 0)
}

// litellm: the overhead LiteLLM adds, and its whole response time.
func litellm(rec *record.Record, h http.Header) {
	rec.GatewayNs = headerDuration(h, hdrLiteLLMWait)
	rec.UpstreamNs = difference(headerDuration(h, hdrLiteLLMTotal), rec.GatewayNs)
}

// Server-Timing stage names read as the gateway's wait and the upstream's
// time; "total" stands in for the wait as total − upstream.
var (
	waitStages     = []string{"gateway", "proxy", "queue", "wait"}
	upstreamStages = []string{"upstream", "backend", "origin"}
)

func serverTiming(rec *record.Record) {
	wait, up, total := int64(record.None), int64(record.None), int64(record.None)
	for _, t := range rec.ServerTiming {
		switch {
		case wait == record.None && hasFold(waitStages, t.Name):
			wait = t.DurNs
		case up == record.None && hasFold(upstreamStages, t.Name):
			up = t.DurNs
		case total == record.None && strings.EqualFold(t.Name, "total"):
			total = t.DurNs
		}
	}
	if wait == record.None {
		wait = difference(total, up)
	}
	rec.GatewayNs, rec.UpstreamNs = wait, up
}

func hasFold(names []string, s string) bool {
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return true
		}
	}
	return false
}

// headerRounding is how far header:TOTAL,UPSTREAM's upstream may exceed
// its total and still read as a wait of 0: one millisecond, the headers'
// resolution.
const headerRounding = 1_000_000

// difference is a − b, or None when either is None or b > a.
func difference(a, b int64) int64 {
	if a == record.None || b == record.None || b > a {
		return record.None
	}
	return a - b
}

// headerDuration reads a duration header: a bare number is milliseconds
// (the gateways' own convention); "us", "ms" and "s" suffixes are read as
// such ("0.012s", as nginx writes $request_time with a unit appended).
// Absent, negative, beyond an hour or not a number: None.
func headerDuration(h http.Header, key string) int64 {
	v := h[key]
	if len(v) == 0 {
		return record.None
	}
	s := strings.TrimSpace(v[0])
	scale := 1e6 // ms
	switch {
	case strings.HasSuffix(s, "ms"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "us"):
		s, scale = s[:len(s)-2], 1e3
	case strings.HasSuffix(s, "s"):
		s, scale = s[:len(s)-1], 1e9
	}
	if !isDecimal(s) || s == "" || s == "." {
		return record.None
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f*scale > 3.6e12 {
		return record.None
	}
	return int64(f*scale + 0.5)
}
