package experiment_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
)

// TestClientNotes: each client observation gets its sentence, computed
// from the analysis alone.
func TestClientNotes(t *testing.T) {
	a := &analyze.Result{Phases: []analyze.PhaseResult{{Name: "burst"}}}
	p := &a.Phases[0]
	p.OfferedRPS, p.Client.AttemptsRPS = 2.57, 8.37
	p.Client.ServerTiming = map[string]analyze.Dist{"queue": {Count: 3, P50Ms: 12.5, P95Ms: 20, P99Ms: 20}}
	o := &a.Overall
	o.Offered, o.Sent, o.Succeeded, o.OutputTokens = 77, 77, 70, 700
	o.Images, o.RequestBytes = 154, 77*2_100_000
	o.Client = analyze.ClientStats{Attempts: 251, AttemptsPerArrival: 251.0 / 77, ConnRetries: 24,
		MaxTokensIgnored: 3, MaxTokensChecked: 70, ThoughtFirst: 5, ReasoningTokens: 40,
		UnknownEvents: 12, UnknownEventsIn: 4, TooLarge: 7,
		RateLimit: analyze.RateLimitStats{Responses: 9, LowestRemainingRequests: 2, LimitRequests: 60, LowestRemainingTokens: -1,
			LimitTokens: -1, ResetsRequests: 9, LongestResetRequestsMs: 1000, RetryAfter: 0,
			LowestRemainingTokensDay: -1, LimitTokensDay: -1, LongestResetTokensDayMs: -1}}
	got := strings.Join(experiment.ClientNotes(&run.Result{Analysis: a}), "\n")
	day := *a
	day.Overall.Client.RateLimit = analyze.RateLimitStats{Responses: 4, LowestRemainingRequests: -1, LimitRequests: -1,
		LowestRemainingTokens: 150, LimitTokens: 200000, LowestRemainingTokensDay: 10, LimitTokensDay: 9000000, Unparsed: 2}
	if want := "rate-limit headers: on 4 responses, lowest remaining tokens 150 of 200000, lowest remaining tokens of the day 10 of 9000000, 2 values that were not numbers (not kept)."; !strings.Contains(strings.Join(experiment.ClientNotes(&run.Result{Analysis: &day}), "\n"), want) {
		t.Errorf("the day's bucket: notes lack %q", want)
	}
	for _, want := range []string{
		"server ignored max_tokens: 3 of 70 requests returned more tokens than asked",
		"retries multiplied the load: 251 attempts for 77 arrivals (3.26 per arrival); burst 8.37 attempts/s for 2.57 arrivals/s.",
		"24 requests were replayed once on a new connection",
		"5 of 70 successful requests produced reasoning or a tool call before answer text",
		"reasoning tokens (server usage): 40 of 700 output tokens.",
		"12 streamed events of types surge does not know were ignored, in 4 requests",
		"7 requests were refused as too large (HTTP 413): the images and prompts exceed what the server accepts; --image-size, --images or --prompt-tokens shrink them (request bodies: 2,100,000 bytes on average).",
		"rate-limit headers: on 9 responses, lowest remaining requests 2 of 60, request-bucket resets seen 9 (longest 1s).",
		"Server-Timing (gateway/router boundary, beside the engine's queue), burst: queue p50 12.5ms / p95 20ms / p99 20ms (3).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("notes lack %q:\n%s", want, got)
		}
	}
	if n := experiment.ClientNotes(&run.Result{Analysis: &analyze.Result{}}); len(n) != 0 {
		t.Errorf("notes for nothing observed: %q", n)
	}
	// A convention chosen whose headers never came: one line naming them.
	kong := &run.Result{Analysis: &analyze.Result{}, Manifest: &record.Manifest{GatewayTiming: "kong"}}
	if got, want := strings.Join(experiment.ClientNotes(kong), "\n"), "gateway timing n/a: the target sent no X-Kong-Proxy-Latency or X-Kong-Upstream-Latency header (--gateway-timing kong)."; got != want {
		t.Errorf("kong without its headers: %q, want %q", got, want)
	}
	kong.Analysis.Overall.Latency.GatewayWait.Count = 1
	if n := experiment.ClientNotes(kong); len(n) != 0 {
		t.Errorf("kong with its headers: %q", n)
	}
}

// TestThinkingRunReports: `surge run` against the simulator thinking first
// shows both TTFTs, labelled, in the terminal and results.md, and the
// reasoning tokens in summary.json.
func TestThinkingRunReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := experiment.DefaultRunConfig()
		c.Options = exptest.LiveOptions()
		c.Options.Sim.ReasoningTokens = 6
		c.Rate, c.Duration = 2, 5*time.Second
		env, _ := exptest.BubbleEnv(t, c.Options)
		d := exptest.Dir(t)
		var out bytes.Buffer
		if _, err := experiment.Run(context.Background(), env, &c, d, &out); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(d.Path(), "results.md"))
		if err != nil {
			t.Fatal(err)
		}
		summary, err := os.ReadFile(filepath.Join(d.Path(), "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(string(summary), `"reasoning_tokens": `); i < 0 || strings.HasPrefix(string(summary)[i+len(`"reasoning_tokens": `):], "0") {
			t.Errorf("summary.json: no reasoning tokens counted")
		}
		for _, c := range []struct{ name, text, want string }{
			{"terminal", out.String(), "TTFT (any token) from send"},
			{"terminal", out.String(), "TTFT (answer text) from send"},
			{"terminal", out.String(), "produced reasoning or a tool call before answer text"},
			{"results.md", string(md), "TTFT text p50"},
			{"summary.json", string(summary), `"ttft_text_send"`},
			{"summary.json", string(summary), `"reasoning_tokens":`},
		} {
			if !strings.Contains(c.text, c.want) {
				t.Errorf("%s lacks %q", c.name, c.want)
			}
		}
	})
}

// TestRetriesShownInTerminal: with --retries against a simulator that
// answers half the requests with 503, the terminal and results.md show
// the attempts per arrival and attempts/s beside the arrival rates.
func TestRetriesShownInTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := experiment.DefaultRunConfig()
		c.Options = exptest.LiveOptions()
		c.Options.Sim.Fault503 = 0.5
		c.Options.Retries = 3
		c.Rate, c.Duration = 4, 5*time.Second
		env, _ := exptest.BubbleEnv(t, c.Options)
		d := exptest.Dir(t)
		var out bytes.Buffer
		if _, err := experiment.Run(context.Background(), env, &c, d, &out); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(d.Path(), "results.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ name, text, want string }{
			{"terminal", out.String(), "attempts/arrival"},
			{"terminal", out.String(), "retries multiplied the load: "},
			{"results.md", string(md), "| attempts/arrival | attempts/s |"},
			{"results.md", string(md), "retries multiplied the load: "},
		} {
			if !strings.Contains(c.text, c.want) {
				t.Errorf("%s lacks %q:\n%s", c.name, c.want, c.text)
			}
		}
	})
}
