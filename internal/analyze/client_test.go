package analyze

import (
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

func TestIgnoredMaxTokens(t *testing.T) {
	for _, tt := range []struct {
		out, cap int
		want     bool
	}{
		{64, 64, false}, {72, 64, false}, {73, 64, true}, // max(8, 6) = 8
		{1100, 1000, false}, {1101, 1000, true}, // 10% = 100
		{500, 0, false}, // no cap asked
	} {
		if got := IgnoredMaxTokens(tt.out, tt.cap); got != tt.want {
			t.Errorf("IgnoredMaxTokens(%d, %d) = %v, want %v", tt.out, tt.cap, got, tt.want)
		}
	}
}

// TestClientStats: retry amplification, replays, max_tokens ignored,
// reasoning, unknown events, 413s, rate-limit headers and Server-Timing,
// computed by hand over the burst phase (10 s): 5 arrivals.
func TestClientStats(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	r1 := okRec(41*s, 0, 100*ms, 500*ms) // 3 attempts, max_tokens ignored (200 > 64 + 8)
	r1.Attempts, r1.OutputTokens = 3, 200
	r1.RateLimit = record.RateLimit{LimitRequests: 100, LimitTokens: record.None, RemainingRequests: 7, RemainingTokens: 900,
		ResetRequestsNs: int64(2 * s), ResetTokensNs: record.None}
	r1.ServerTiming = []record.Timing{{Name: "queue", DurNs: int64(12 * ms)}, {Name: "upstream", DurNs: int64(8 * ms)}}
	r2 := okRec(42*s, 0, 100*ms, 500*ms) // thought first; a conn replay
	r2.FirstTextNs = r2.FirstTokenNs + int64(300*ms)
	r2.ReasoningTokens, r2.CachedTokens, r2.ConnRetries = 5, 32, 1
	r2.RateLimit = record.RateLimit{LimitRequests: 100, LimitTokens: record.None, RemainingRequests: 3, RemainingTokens: record.None,
		ResetRequestsNs: int64(500 * ms), ResetTokensNs: int64(6 * 60 * s)}
	r2.ServerTiming = []record.Timing{{Name: "queue", DurNs: int64(20 * ms)}}
	r3 := failRec(43*s, record.RateLimited) // 2 attempts, a Retry-After
	r3.Attempts, r3.RetryAfterNs = 2, int64(s)
	r4 := failRec(44*s, record.GeneratorDrop) // never sent: no attempt
	r1.UnknownEvents = 3                      // a newer API's events, ignored
	r5 := failRec(45*s, record.HTTPError)     // too large: 413
	r5.Status = 413
	addAll(a, r1, r2, r3, r4, r5)
	c := mustPhase(t, a.Result(), "burst").Client

	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"attempts", float64(c.Attempts), 7},
		{"attempts per arrival", c.AttemptsPerArrival, 7.0 / 5},
		{"attempts/s", c.AttemptsRPS, 0.7},
		{"unknown events", float64(c.UnknownEvents), 3},
		{"requests with unknown events", float64(c.UnknownEventsIn), 1},
		{"413s", float64(c.TooLarge), 1},
		{"conn retries", float64(c.ConnRetries), 1},
		{"max_tokens ignored", float64(c.MaxTokensIgnored), 1},
		{"max_tokens checked", float64(c.MaxTokensChecked), 2},
		{"reasoning tokens", float64(c.ReasoningTokens), 5},
		{"cached tokens", float64(c.CachedTokens), 32},
		{"thought first", float64(c.ThoughtFirst), 1},
		{"ratelimit responses", float64(c.RateLimit.Responses), 2},
		{"lowest remaining requests", float64(c.RateLimit.LowestRemainingRequests), 3},
		{"lowest remaining tokens", float64(c.RateLimit.LowestRemainingTokens), 900},
		{"limit requests", float64(c.RateLimit.LimitRequests), 100},
		{"limit tokens (none)", float64(c.RateLimit.LimitTokens), -1},
		{"resets requests", float64(c.RateLimit.ResetsRequests), 2},
		{"longest reset requests ms", c.RateLimit.LongestResetRequestsMs, 2000},
		{"longest reset tokens ms", c.RateLimit.LongestResetTokensMs, 360000},
		{"retry-after", float64(c.RateLimit.RetryAfter), 1},
		{"longest retry-after ms", c.RateLimit.LongestRetryAfterMs, 1000},
		{"queue count", float64(c.ServerTiming["queue"].Count), 2},
		{"queue max ms", c.ServerTiming["queue"].MaxMs, 20},
		{"upstream p50 ms", c.ServerTiming["upstream"].P50Ms, 8},
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	// TTFT (answer text) is its own distribution: r1 has no FirstTextNs
	// (okRec sets none), r2's is 400 ms.
	if d := mustPhase(t, a.Result(), "burst").Latency.TTFTTextSend; d.Count != 1 || !hdrNear(d.P50Ms, 400) {
		t.Errorf("ttft_text_send %+v, want one value of 400 ms", d)
	}
	if o := a.Result().Overall.Client; o.Attempts != 7 || o.TooLarge != 1 || o.RateLimit.LowestRemainingRequests != 3 || o.ServerTiming["queue"].Count != 2 {
		t.Errorf("overall client stats %+v", o)
	}
}

// TestClientStatsNoneSeen: without headers every lowest/longest is -1.
func TestClientStatsNoneSeen(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	addAll(a, okRec(41*s, 0, 100*ms, 500*ms))
	rl := mustPhase(t, a.Result(), "burst").Client.RateLimit
	if rl.Responses != 0 || rl.LowestRemainingRequests != -1 || rl.LowestRemainingTokens != -1 || rl.LongestResetRequestsMs != -1 || rl.LongestRetryAfterMs != -1 {
		t.Errorf("%+v", rl)
	}
}
