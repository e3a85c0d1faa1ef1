package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

func TestParseRateLimit(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	const N = record.None
	for _, tt := range []struct {
		name string
		h    map[string]string
		want record.RateLimit
	}{
		{"none", nil, record.NoRateLimit},
		{"openai", map[string]string{
			"x-ratelimit-limit-requests": "60", "x-ratelimit-limit-tokens": "150000",
			"x-ratelimit-remaining-requests": "59", "x-ratelimit-remaining-tokens": "149984",
			"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s",
		}, rl(60, 150000, 59, 149984, int64(time.Second), int64(6*time.Minute))},
		{"durations and seconds", map[string]string{
			"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "0.5",
		}, rl(N, N, N, N, int64(20*time.Millisecond), int64(500*time.Millisecond))},
		{"compound duration", map[string]string{"x-ratelimit-reset-tokens": "1h2m3.5s"},
			rl(N, N, N, N, N, int64(time.Hour+2*time.Minute+3500*time.Millisecond))},
		{"digitalocean per-minute, unix reset", map[string]string{
			"x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999",
			"x-ratelimit-limit-tokens-per-minute": "200000", "x-ratelimit-remaining-tokens-per-minute": "199000",
			"x-ratelimit-limit-tokens-per-day": "9000000", "x-ratelimit-remaining-tokens-per-day": "10",
			"x-ratelimit-reset-requests": "0", "x-ratelimit-reset-tokens-per-minute": "1800000030",
			"x-ratelimit-reset-tokens-per-day": "1800003600",
		}, day(rl(5000, 200000, 4999, 199000, 0, int64(30*time.Second)), 9000000, 10, int64(time.Hour))},
		{"digitalocean per-day only", map[string]string{
			"x-ratelimit-limit-tokens-per-day": "9000000", "x-ratelimit-remaining-tokens-per-day": "0",
		}, day(rl(N, N, N, N, N, N), 9000000, 0, N)},
		{"units", map[string]string{"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "60s"},
			rl(N, N, N, N, int64(90*time.Second), int64(time.Minute))},
		{"huge", map[string]string{
			"x-ratelimit-limit-requests": "99999999999999999999", "x-ratelimit-reset-requests": "99999999999",
			"x-ratelimit-reset-tokens": "100000h",
		}, unparsed(rl(N, N, N, N, int64(maxRetryAfter), int64(maxRetryAfter)), 1)},
		{"unix reset in the past", map[string]string{"x-ratelimit-reset-requests": "1700000000"},
			rl(N, N, N, N, 0, N)},
		{"not numbers", map[string]string{
			"x-ratelimit-limit-requests": "lots", "x-ratelimit-remaining-requests": "-1",
			"x-ratelimit-reset-requests": "soon", "x-ratelimit-reset-tokens": "-1s",
			"x-ratelimit-remaining-tokens-per-day": "1e6", "x-ratelimit-reset-tokens-per-day": "1 minute",
		}, unparsed(record.NoRateLimit, 6)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			if got := parseRateLimit(h, now); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseServerTiming(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1/v1", func(c *Config) { c.APIKey = "sk-canary-0123456789" })
	for _, tt := range []struct {
		name string
		vals []string
		want []record.Timing
	}{
		{"none", nil, nil},
		{"w3c example", []string{`queue;dur=12.5, upstream;dur=8;desc="x"`},
			[]record.Timing{tm("queue", 12_500_000), tm("upstream", 8_000_000)}},
		{"two headers, desc with comma and semicolon", []string{`cache;desc="hit, warm; yes";dur=0.25`, `total;dur=30`},
			[]record.Timing{tm("cache", 250_000), tm("total", 30_000_000)}},
		{"no dur is skipped", []string{`miss, db;dur=5`}, []record.Timing{tm("db", 5_000_000)}},
		{"first dur wins", []string{`a;dur=1;dur=2`}, []record.Timing{tm("a", 1_000_000)}},
		{"bad values skipped", []string{`a;dur=x, b;dur=-1, c;dur=1e99, d;dur="3"`}, []record.Timing{tm("d", 3_000_000)}},
		{"unsafe names dropped", []string{`sk-canary-0123456789;dur=1, canary;dur=2, a b;dur=3, é;dur=4, ok.name_1-x;dur=5`},
			[]record.Timing{tm("ok.name_1-x", 5_000_000)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Server-Timing": tt.vals}
			if got := c.parseServerTiming(nil, h); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		v := ""
		for range 100 {
			v += "x;dur=1,"
		}
		if got := c.parseServerTiming(nil, http.Header{"Server-Timing": {v}}); len(got) != maxServerTimings {
			t.Errorf("%d timings kept, want %d", len(got), maxServerTimings)
		}
	})
}

// TestHeadersNoAlloc: responses without these headers cost nothing.
func TestHeadersNoAlloc(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	h := http.Header{"Content-Type": {"text/event-stream"}, "Date": {"x"}}
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() {
		_ = parseRateLimit(h, now)
		_ = c.parseServerTiming(nil, h)
	}); n != 0 {
		t.Errorf("%.0f allocations without rate-limit or Server-Timing headers", n)
	}
}

// TestDoRecordsHeaders: rate-limit headers and Server-Timing reach the record.
func TestDoRecordsHeaders(t *testing.T) {
	sse := sseHandler(role(), content("a"), usage(3, 1), done)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelimit-Remaining-Requests", "7")
		w.Header().Set("X-Ratelimit-Reset-Tokens", "20ms")
		w.Header().Set("Server-Timing", `gateway;dur=1.5, router;dur=0.5;desc="r1"`)
		sse(w, r)
	}))
	defer srv.Close()
	rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", nil), &testReq)
	if rec.Outcome != record.OK {
		t.Fatalf("outcome %s %q", rec.Outcome, rec.Error)
	}
	want := rl(record.None, record.None, 7, record.None, record.None, int64(20*time.Millisecond))
	if rec.RateLimit != want {
		t.Errorf("ratelimit %+v, want %+v", rec.RateLimit, want)
	}
	if wantST := []record.Timing{tm("gateway", 1_500_000), tm("router", 500_000)}; !reflect.DeepEqual(rec.ServerTiming, wantST) {
		t.Errorf("server timing %+v, want %+v", rec.ServerTiming, wantST)
	}
}

func rl(limReq, limTok, remReq, remTok, resetReq, resetTok int64) record.RateLimit {
	l := record.NoRateLimit
	l.LimitRequests, l.LimitTokens, l.RemainingRequests = limReq, limTok, remReq
	l.RemainingTokens, l.ResetRequestsNs, l.ResetTokensNs = remTok, resetReq, resetTok
	return l
}

// day is l with the day's token bucket.
func day(l record.RateLimit, limit, remaining, reset int64) record.RateLimit {
	l.LimitTokensDay, l.RemainingTokensDay, l.ResetTokensDayNs = limit, remaining, reset
	return l
}

// unparsed is l with n headers that were not numbers.
func unparsed(l record.RateLimit, n int) record.RateLimit {
	l.Unparsed = n
	return l
}

func tm(name string, durNs int64) record.Timing { return record.Timing{Name: name, DurNs: durNs} }
