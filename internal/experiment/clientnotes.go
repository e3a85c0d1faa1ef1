package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/report"
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

// SelfSection is report.html's self-accuracy section of a run (nil for
// none): the verdict, its reasons and advice, and the observations.
func SelfSection(s *judge.SelfAccuracy) *report.SelfSection {
	if s == nil {
		return nil
	}
	sec := &report.SelfSection{Why: s.Why, Advice: s.Advice}
	switch s.State {
	case judge.SelfKeptUp:
		sec.Badge, sec.Title = "KEPT-UP", "surge kept its schedule with headroom: the timings describe the target"
	case judge.SelfAtRisk:
		sec.Badge, sec.Title = "AT-RISK", "surge kept its schedule without headroom: its timings may be inflated"
	case judge.SelfBehind:
		sec.Badge, sec.Title = "BEHIND", "surge fell behind its schedule: the run describes surge on this machine, not the target"
	default:
		sec.Badge, sec.Title = "NOT-JUDGED", "too few sends to judge"
	}
	ms := analyze.FormatMs
	kv := func(k, v string) { sec.Facts = append(sec.Facts, report.KV{Key: k, Value: v}) }
	kv("send lag (actual − scheduled)", fmt.Sprintf("p50 %s, p99 %s, max %s over %d sends", ms(s.LagP50Ms), ms(s.LagP99Ms), ms(s.LagMaxMs), s.Sends))
	if s.CPUSeconds >= 0 {
		v := fmt.Sprintf("%.3f ms per request; %.2f cores used of %.2f available (GOMAXPROCS %d, %d CPUs", s.CPUPerRequestMs, s.CoresUsed, s.CoresAvailable, s.GOMAXPROCS, s.NumCPU)
		if s.CPUQuotaCores > 0 {
			v += fmt.Sprintf(", a CPU quota of %.2f", s.CPUQuotaCores)
		}
		v += ")"
		if s.InProcess {
			v += "; the built-in simulator ran in this process and is included"
		}
		kv("surge's CPU", v)
	} else {
		kv("surge's CPU", "")
	}
	if s.CPUPressure >= 0 {
		kv("CPU pressure", fmt.Sprintf("%.0f%% of the run some task waited for a CPU", 100*s.CPUPressure))
	} else {
		kv("CPU pressure", "")
	}
	if s.SchedLatP99Us >= 0 {
		kv("goroutine wait to run", fmt.Sprintf("p50 %.0f µs, p99 %.0f µs", s.SchedLatP50Us, s.SchedLatP99Us))
	}
	kv("peak streams in flight", fmt.Sprint(s.PeakInFlight))
	kv("timer", fmt.Sprintf("a 100 µs sleep overshoots by %.0f µs (median of 20)", s.TimerOvershootUs))
	if s.ClockStepMs != 0 {
		kv("wall clock", fmt.Sprintf("stepped %s during the run (surge's times are monotonic, unaffected)", ms(s.ClockStepMs)))
	}
	for _, p := range s.Phases {
		row := []string{p.Name, fmt.Sprint(p.Sends), "–", fmt.Sprintf("%.2f", p.AchievedRPS), "–", ms(p.LagP99Ms)}
		if p.ScheduledRPS > 0 {
			row[2] = fmt.Sprintf("%.2f", p.ScheduledRPS)
			row[4] = fmt.Sprintf("%.1f%%", 100*p.AchievedRPS/p.ScheduledRPS)
		}
		if p.Behind {
			row[4] += " (behind)"
		}
		sec.Phases = append(sec.Phases, row)
	}
	return sec
}
