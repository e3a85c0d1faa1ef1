package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

func TestParseGatewayTiming(t *testing.T) {
	for _, tc := range []struct {
		in, kind, wait, total, upstream string
	}{
		{"", GatewayAuto, "", "", ""},
		{"Kong", GatewayKong, "", "", ""},
		{"server-timing", GatewayServerTiming, "", "", ""},
		{"header:x-gw-wait", gatewayHeaderPrefix, "X-Gw-Wait", "", ""},
		{"HEADER:x-request-time, x-upstream-header-time", gatewayHeaderPrefix, "", "X-Request-Time", "X-Upstream-Header-Time"},
	} {
		g, err := ParseGatewayTiming(tc.in)
		if err != nil || g.kind != tc.kind || g.wait != tc.wait || g.total != tc.total || g.upstream != tc.upstream {
			t.Errorf("%q: %+v %v", tc.in, g, err)
		}
	}
	for in, want := range map[string]string{
		"nginx":         "want auto, off, kong",
		"header:":       `"" is not a header name`,
		"header:a,b,c":  "one name",
		"header:a b":    `"a b" is not a header name`,
		"header:x,":     `"" is not a header name`,
		"header:a:b":    `"a:b" is not a header name`,
		"headers:x-gw":  "want auto",
		"header:x\x7f,": "is not a header name",
	} {
		if _, err := ParseGatewayTiming(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestHeaderDuration(t *testing.T) {
	for v, want := range map[string]int64{
		"12":                   12_000_000,
		" 1.5 ":                1_500_000,
		"12ms":                 12_000_000,
		"0.012s":               12_000_000,
		"250us":                250_000,
		"0":                    0,
		"-3":                   record.None,
		"-":                    record.None, // nginx's "no upstream"
		"abc":                  record.None,
		"1e3":                  record.None,
		"1m30s":                record.None,
		"3600s":                3_600_000_000_000,
		"3601s":                record.None,
		"99999999999999999999": record.None,
		"":                     record.None,
		".":                    record.None,
	} {
		if got := headerDuration(http.Header{"X-T": {v}}, "X-T"); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
	if got := headerDuration(http.Header{}, "X-T"); got != record.None {
		t.Errorf("absent: %d", got)
	}
}

// TestGatewayConventions: each convention reads its own headers, and auto
// reads the one a response carries.
func TestGatewayConventions(t *testing.T) {
	ms := func(f float64) int64 { return int64(f * 1e6) }
	kongH := http.Header{hdrKongProxy: {"7"}, hdrKongUpstream: {"40"}}
	envoyH := http.Header{hdrEnvoyUpstream: {"40"}}
	litellmH := http.Header{hdrLiteLLMWait: {"2.5"}, hdrLiteLLMTotal: {"52.5"}}
	nginxH := http.Header{"X-Request-Time": {"0.047s"}, "X-Upstream-Header-Time": {"0.040s"}}
	st := []record.Timing{tm("edge", 100), tm("Queue", ms(3)), tm("upstream", ms(40)), tm("queue", ms(9))}
	stTotal := []record.Timing{tm("total", ms(45)), tm("backend", ms(40))}
	for _, tc := range []struct {
		conv           string
		h              http.Header
		st             []record.Timing
		wait, upstream int64
	}{
		{"kong", kongH, nil, ms(7), ms(40)},
		{"auto", kongH, nil, ms(7), ms(40)},
		{"off", kongH, nil, record.None, record.None},
		{"envoy", kongH, nil, record.None, record.None}, // chosen, absent
		// envoy: headers at 50 ms after the connection at 2 ms, upstream 40 ms: 8 ms left
		{"envoy", envoyH, nil, ms(8), ms(40)},
		{"auto", envoyH, nil, ms(8), ms(40)},
		{"litellm", litellmH, nil, ms(2.5), ms(50)},
		{"auto", litellmH, nil, ms(2.5), ms(50)},
		{"server-timing", nil, st, ms(3), ms(40)}, // the first of each name, any case
		{"auto", nil, st, ms(3), ms(40)},
		{"auto", nil, stTotal, ms(5), ms(40)},
		{"server-timing", nil, []record.Timing{tm("total", ms(5)), tm("upstream", ms(9))}, record.None, ms(9)},
		{"header:x-request-time,x-upstream-header-time", nginxH, nil, ms(7), ms(40)},
		{"header:x-request-time", nginxH, nil, ms(47), record.None},
		// nginx rounds the two on separate clocks: 1 ms the wrong way is
		// a wait of 0; more is no wait at all.
		{"header:x-request-time,x-upstream-header-time", http.Header{"X-Request-Time": {"0.000s"}, "X-Upstream-Header-Time": {"0.001s"}}, nil, 0, ms(1)},
		{"header:x-request-time,x-upstream-header-time", http.Header{"X-Request-Time": {"0.040s"}, "X-Upstream-Header-Time": {"0.042s"}}, nil, record.None, ms(42)},
		{"header:x-absent", nginxH, nil, record.None, record.None},
	} {
		g, err := ParseGatewayTiming(tc.conv)
		if err != nil {
			t.Fatal(err)
		}
		rec := record.New("x", 0, "p", 0)
		rec.SentNs, rec.ConnNs, rec.HeadersNs = ms(1), ms(2), ms(50)
		rec.ServerTiming = tc.st
		g.apply(&rec, tc.h)
		if rec.GatewayNs != tc.wait || rec.UpstreamNs != tc.upstream {
			t.Errorf("%s %v %v: gateway %d upstream %d, want %d %d", tc.conv, tc.h, tc.st, rec.GatewayNs, rec.UpstreamNs, tc.wait, tc.upstream)
		}
	}
}

// TestGatewayTimingNoAlloc: reading the conventions costs no allocation.
func TestGatewayTimingNoAlloc(t *testing.T) {
	h := http.Header{"Content-Type": {"text/event-stream"}, hdrKongProxy: {"7"}, hdrKongUpstream: {"40"}}
	g, _ := ParseGatewayTiming("")
	rec := record.New("x", 0, "p", 0)
	if n := testing.AllocsPerRun(100, func() { g.apply(&rec, h) }); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}

// TestDoRecordsGatewayTiming: a response's Kong headers reach the record.
func TestDoRecordsGatewayTiming(t *testing.T) {
	sse := sseHandler(role(), content("a"), usage(3, 1), done)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kong-Proxy-Latency", "3")
		w.Header().Set("X-Kong-Upstream-Latency", "11")
		sse(w, r)
	}))
	defer srv.Close()
	for _, transport := range []string{TransportSurge, TransportGo} {
		cfg := DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.Transport = srv.URL+"/v1", "m", transport
		c, err := New(cfg, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		rec := run(context.Background(), c, &testReq)
		if rec.GatewayNs != 3e6 || rec.UpstreamNs != 11e6 {
			t.Errorf("%s: gateway %d upstream %d", transport, rec.GatewayNs, rec.UpstreamNs)
		}
	}
}

// FuzzTimingHeaders: any value in any rate-limit or gateway timing header
// is read as a number, left out or counted as unparsed, and never gives a
// negative count, reset or duration.
func FuzzTimingHeaders(f *testing.F) {
	for _, s := range []string{"60", "1m30s", "60s", "-1", "1e6", "99999999999999999999", "0.012s", "1800000030", "Wed, 21 Oct 2015 07:28:00 GMT", "-", "", "NaN", "Inf", "1.5us"} {
		f.Add(s)
	}
	now := time.Unix(1_800_000_000, 0)
	names := []string{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens-Per-Minute",
		"X-Ratelimit-Remaining-Tokens-Per-Day", "X-Ratelimit-Reset-Tokens-Per-Day", hdrKongProxy, hdrKongUpstream, hdrEnvoyUpstream, hdrLiteLLMWait, hdrLiteLLMTotal, "Retry-After"}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		for _, n := range names {
			h[n] = []string{v}
		}
		l := parseRateLimit(h, now)
		for _, x := range []int64{l.LimitRequests, l.LimitTokens, l.RemainingRequests, l.RemainingTokens, l.ResetRequestsNs, l.ResetTokensNs,
			l.LimitTokensDay, l.RemainingTokensDay, l.ResetTokensDayNs} {
			if x != record.None && x < 0 {
				t.Fatalf("%q: negative %d in %+v", v, x, l)
			}
		}
		if d, ok := parseRetryAfter(v, now); ok && (d < 0 || d > maxRetryAfter) {
			t.Fatalf("%q: Retry-After %v", v, d)
		}
		for _, conv := range GatewayTimingNames {
			g, _ := ParseGatewayTiming(conv)
			rec := record.New("x", 0, "p", 0)
			rec.SentNs, rec.ConnNs, rec.HeadersNs = 1, 2, 50e6
			g.apply(&rec, h)
			if rec.GatewayNs != record.None && (rec.GatewayNs < 0 || rec.GatewayNs > 3.6e12) || rec.UpstreamNs != record.None && (rec.UpstreamNs < 0 || rec.UpstreamNs > 3.6e12) {
				t.Fatalf("%q %s: gateway %d upstream %d", v, conv, rec.GatewayNs, rec.UpstreamNs)
			}
		}
	})
}
