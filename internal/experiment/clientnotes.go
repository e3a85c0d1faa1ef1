package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/run"
)

// ClientNotes are the notes on what the client saw besides latency, for
// results.md and the terminal: a server that ignored max_tokens, retry
// amplification, connection replays, requests that thought first,
// cached prompt tokens, rate-limit headers and the Server-Timing durations
// of each measured phase (the gateway/router boundary, beside the engine's
// queue), and a gateway timing convention chosen whose headers never
// came. Empty when there is nothing to say.
func ClientNotes(res *run.Result) []string {
	a := res.Analysis
	o := &a.Overall
	c := &o.Client
	var notes []string
	if s := res.SelfAccuracy; s != nil { // one line: did surge itself keep up?
		line := s.Line()
		if s.State == judge.SelfBehind || s.State == judge.SelfAtRisk {
			line = "WARNING: " + line
		}
		notes = append(notes, line)
	}
	if c.MaxTokensIgnored > 0 {
		notes = append(notes, fmt.Sprintf("server ignored max_tokens: %d of %d requests returned more tokens than asked (more than max_tokens + max(8, 10%%)); output tokens and TPOT count what was generated.",
			c.MaxTokensIgnored, c.MaxTokensChecked))
	}
	if c.Attempts > o.Sent {
		var per []string
		for i := range a.Phases {
			p := &a.Phases[i]
			if !p.Excluded {
				per = append(per, fmt.Sprintf("%s %.2f attempts/s for %.2f arrivals/s", p.Name, p.Client.AttemptsRPS, p.OfferedRPS))
			}
		}
		notes = append(notes, fmt.Sprintf("retries multiplied the load: %d attempts for %d arrivals (%.2f per arrival); %s.",
			c.Attempts, o.Offered, c.AttemptsPerArrival, strings.Join(per, ", ")))
	}
	if c.ConnRetries > 0 {
		notes = append(notes, fmt.Sprintf("%d requests were replayed once on a new connection after a reused keep-alive connection failed before any response byte (the server had closed it); not failures — their latency includes the replay.", c.ConnRetries))
	}
	if c.ThoughtFirst > 0 {
		n := fmt.Sprintf("%d of %d successful requests produced reasoning or a tool call before answer text: TTFT (any token) counts the first token of any kind, TTFT (answer text) the first answer text", c.ThoughtFirst, o.Succeeded)
		if tx := o.Latency.TTFTTextSend; tx.Count > 0 {
			n += fmt.Sprintf(" (from send: any token p50 %s, answer text p50 %s)", o.Latency.TTFTSend.Text(analyze.Q50), tx.Text(analyze.Q50))
		}
		notes = append(notes, n+".")
	}
	if c.UnknownEvents > 0 {
		notes = append(notes, fmt.Sprintf("%d streamed events of types surge does not know were ignored, in %d requests (record unknown_events): a newer API version's events; the answer's tokens and usage were read as usual.", c.UnknownEvents, c.UnknownEventsIn))
	}
	if c.TooLarge > 0 {
		what := "the prompts"
		if o.Images > 0 {
			what = "the images and prompts"
		}
		notes = append(notes, fmt.Sprintf("%d requests were refused as too large (HTTP 413): %s exceed what the server accepts; --image-size, --images or --prompt-tokens shrink them (request bodies: %s on average).",
			c.TooLarge, what, analyze.Thousands(o.RequestBytes/max(o.Sent, 1))+" bytes"))
	}
	if c.ReasoningTokens > 0 {
		notes = append(notes, fmt.Sprintf("reasoning tokens (server usage): %d of %d output tokens.", c.ReasoningTokens, o.OutputTokens))
	}
	if c.CachedTokens > 0 {
		notes = append(notes, fmt.Sprintf("cached prompt tokens (server usage): %d of %d prompt tokens.", c.CachedTokens, o.PromptTokens))
	}
	if line := rateLimitNote(&c.RateLimit); line != "" {
		notes = append(notes, line)
	}
	for i := range a.Phases {
		p := &a.Phases[i]
		if text, _, ok := judge.Binding(&p.Client.RateLimit, p.StartMs); ok && !p.Excluded {
			notes = append(notes, fmt.Sprintf("quota, %s: %s.", p.Name, text))
		}
	}
	for i := range a.Phases {
		p := &a.Phases[i]
		if p.Excluded || len(p.Client.ServerTiming) == 0 {
			continue
		}
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(p.Client.ServerTiming)) {
			d := p.Client.ServerTiming[name]
			parts = append(parts, fmt.Sprintf("%s p50 %s / p95 %s / p99 %s (%d)", name, d.Text(analyze.Q50), d.Text(analyze.Q95), d.Text(analyze.Q99), d.Count))
		}
		notes = append(notes, fmt.Sprintf("Server-Timing (gateway/router boundary, beside the engine's queue), %s: %s.", p.Name, strings.Join(parts, "; ")))
	}
	if line := gatewayNote(res); line != "" {
		notes = append(notes, line)
	}
	return notes
}

// gatewayNote says that the gateway timing convention the user chose
// found nothing: no response carried its headers.
func gatewayNote(res *run.Result) string {
	if res.Manifest == nil || res.Manifest.GatewayTiming == "" {
		return ""
	}
	l := &res.Analysis.Overall.Latency
	if l.GatewayWait.Count > 0 || l.Upstream.Count > 0 {
		return ""
	}
	g, err := openai.ParseGatewayTiming(res.Manifest.GatewayTiming)
	if err != nil {
		return ""
	}
	names := g.Headers()
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("gateway timing n/a: the target sent no %s header (--gateway-timing %s).", strings.Join(names, " or "), res.Manifest.GatewayTiming)
}

func rateLimitNote(r *analyze.RateLimitStats) string {
	if r.Responses == 0 && r.RetryAfter == 0 {
		return ""
	}
	var parts []string
	if r.Responses > 0 {
		parts = append(parts, fmt.Sprintf("on %d responses", r.Responses))
		if r.LowestRemainingRequests >= 0 {
			parts = append(parts, fmt.Sprintf("lowest remaining requests %d%s", r.LowestRemainingRequests, ofLimit(r.LimitRequests)))
		}
		if r.LowestRemainingTokens >= 0 {
			parts = append(parts, fmt.Sprintf("lowest remaining tokens %d%s", r.LowestRemainingTokens, ofLimit(r.LimitTokens)))
		}
		if r.ResetsRequests > 0 {
			parts = append(parts, fmt.Sprintf("request-bucket resets seen %d (longest %s)", r.ResetsRequests, analyze.FormatMs(r.LongestResetRequestsMs)))
		}
		if r.ResetsTokens > 0 {
			parts = append(parts, fmt.Sprintf("token-bucket resets seen %d (longest %s)", r.ResetsTokens, analyze.FormatMs(r.LongestResetTokensMs)))
		}
		if r.LowestRemainingTokensDay >= 0 {
			parts = append(parts, fmt.Sprintf("lowest remaining tokens of the day %d%s", r.LowestRemainingTokensDay, ofLimit(r.LimitTokensDay)))
		}
		if r.Unparsed > 0 {
			parts = append(parts, fmt.Sprintf("%d values that were not numbers (not kept)", r.Unparsed))
		}
	}
	if r.RetryAfter > 0 {
		parts = append(parts, fmt.Sprintf("Retry-After on %d responses (longest %s)", r.RetryAfter, analyze.FormatMs(r.LongestRetryAfterMs)))
	}
	return "rate-limit headers: " + strings.Join(parts, ", ") + "."
}

func ofLimit(limit int64) string {
	if limit < 0 {
		return ""
	}
	return fmt.Sprintf(" of %d", limit)
}
