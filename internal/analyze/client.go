package analyze

import (
	"maps"
	"slices"

	"github.com/surge-bench/surge/internal/record"
)

// maxServerTimingNames bounds the distinct Server-Timing names a group
// keeps a distribution for; further names are counted, not kept.
const maxServerTimingNames = 16

// IgnoredMaxTokens reports whether a response of out tokens ignored a
// max_tokens cap: out > cap + max(8, cap/10). A cap of 0 is no cap.
func IgnoredMaxTokens(out, maxTokens int) bool {
	return maxTokens > 0 && out > maxTokens+max(8, maxTokens/10)
}

// clientAcc accumulates ClientStats. Values in the Server-Timing
// accumulators are µs, like every metricAcc. Lowest, highest and longest
// values are held plus one, so that the zero clientAcc means "none seen".
type clientAcc struct {
	attempts, connRetries      int64
	maxIgnored, maxChecked     int64
	reasoning, cached, thought int64
	unknownEvents, unknownIn   int64 // typed streams' events of unknown types; the requests that had any
	tooLarge                   int64 // 413 answers: the request was larger than the server accepts
	rlResponses                int64
	lowReq, lowTok             int64 // lowest remaining + 1
	limReq, limTok             int64 // highest limit + 1
	resetsReq, resetsTok       int64
	longResetReq, longResetTok int64 // longest reset ns + 1
	retryAfter, longRetryAfter int64 // count; longest hint ns + 1
	// The day's token bucket (lowest remaining, highest limit, longest
	// reset; each + 1) and the rate-limit values that were not numbers.
	lowTokDay, limTokDay, longResetTokDay int64
	rlUnparsed                            int64
	buckets                               [numBuckets]bucketAcc
	st                                    map[string]*metricAcc
	stDropped                             int64
}

// lowest1 and highest1 fold v (record.None = absent) into a value held plus one.
func lowest1(cur, v int64) int64 {
	if v == record.None || v < 0 {
		return cur
	}
	if cur == 0 || v+1 < cur {
		return v + 1
	}
	return cur
}

func highest1(cur, v int64) int64 {
	if v == record.None || v < 0 {
		return cur
	}
	return max(cur, v+1)
}

func merged1(a, b int64) int64 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}

// observe adds one record.
func (c *clientAcc) observe(rec *record.Record, ok, packed bool) {
	if rec.Sent() {
		c.attempts += int64(rec.Attempts)
	}
	c.connRetries += int64(rec.ConnRetries)
	if rec.UnknownEvents > 0 {
		c.unknownEvents += int64(rec.UnknownEvents)
		c.unknownIn++
	}
	if rec.Status == 413 {
		c.tooLarge++
	}
	if ok {
		if rec.MaxTokens > 0 {
			c.maxChecked++
			if IgnoredMaxTokens(rec.OutputTokens, rec.MaxTokens) {
				c.maxIgnored++
			}
		}
		c.reasoning += int64(rec.ReasoningTokens)
		c.cached += int64(rec.CachedTokens)
		if rec.FirstTextNs != record.None && rec.FirstTokenNs != record.None && rec.FirstTextNs > rec.FirstTokenNs {
			c.thought++
		}
	}
	if l := &rec.RateLimit; l.Seen() {
		c.rlResponses++
		c.lowReq = lowest1(c.lowReq, l.RemainingRequests)
		c.lowTok = lowest1(c.lowTok, l.RemainingTokens)
		c.limReq = highest1(c.limReq, l.LimitRequests)
		c.limTok = highest1(c.limTok, l.LimitTokens)
		if l.ResetRequestsNs != record.None {
			c.resetsReq++
			c.longResetReq = highest1(c.longResetReq, l.ResetRequestsNs)
		}
		if l.ResetTokensNs != record.None {
			c.resetsTok++
			c.longResetTok = highest1(c.longResetTok, l.ResetTokensNs)
		}
		c.lowTokDay = lowest1(c.lowTokDay, l.RemainingTokensDay)
		c.limTokDay = highest1(c.limTokDay, l.LimitTokensDay)
		c.longResetTokDay = highest1(c.longResetTokDay, l.ResetTokensDayNs)
		c.rlUnparsed += int64(l.Unparsed)
		at := rec.HeadersNs
		if at == record.None {
			at = rec.DoneNs
		}
		c.buckets[bucketRequests].observe(l.LimitRequests, l.RemainingRequests, l.ResetRequestsNs, at)
		c.buckets[bucketTokensMinute].observe(l.LimitTokens, l.RemainingTokens, l.ResetTokensNs, at)
		c.buckets[bucketTokensDay].observe(l.LimitTokensDay, l.RemainingTokensDay, l.ResetTokensDayNs, at)
	}
	if rec.RetryAfterNs != record.None {
		c.retryAfter++
		c.longRetryAfter = highest1(c.longRetryAfter, rec.RetryAfterNs)
	}
	for _, t := range rec.ServerTiming {
		m := c.st[t.Name]
		if m == nil {
			if len(c.st) >= maxServerTimingNames {
				c.stDropped++
				continue
			}
			if c.st == nil {
				c.st = map[string]*metricAcc{}
			}
			m = &metricAcc{}
			c.st[t.Name] = m
		}
		m.add(min(max(t.DurNs, 0)/1000, histHighest), packed) // the client bounds dur to [0, 1 h]
	}
}

func (c *clientAcc) merge(b *clientAcc, packed bool) {
	c.attempts += b.attempts
	c.connRetries += b.connRetries
	c.maxIgnored += b.maxIgnored
	c.maxChecked += b.maxChecked
	c.reasoning += b.reasoning
	c.cached += b.cached
	c.thought += b.thought
	c.unknownEvents += b.unknownEvents
	c.unknownIn += b.unknownIn
	c.tooLarge += b.tooLarge
	c.rlResponses += b.rlResponses
	c.lowReq, c.lowTok = merged1(c.lowReq, b.lowReq), merged1(c.lowTok, b.lowTok)
	c.limReq, c.limTok = max(c.limReq, b.limReq), max(c.limTok, b.limTok)
	c.resetsReq += b.resetsReq
	c.resetsTok += b.resetsTok
	c.longResetReq, c.longResetTok = max(c.longResetReq, b.longResetReq), max(c.longResetTok, b.longResetTok)
	c.retryAfter += b.retryAfter
	c.longRetryAfter = max(c.longRetryAfter, b.longRetryAfter)
	c.lowTokDay, c.limTokDay = merged1(c.lowTokDay, b.lowTokDay), max(c.limTokDay, b.limTokDay)
	c.longResetTokDay = max(c.longResetTokDay, b.longResetTokDay)
	c.rlUnparsed += b.rlUnparsed
	for i := range c.buckets {
		c.buckets[i].merge(&b.buckets[i])
	}
	c.stDropped += b.stDropped
	for _, name := range slices.Sorted(maps.Keys(b.st)) {
		src := b.st[name]
		m := c.st[name]
		if m == nil {
			if len(c.st) >= maxServerTimingNames {
				if src.h != nil {
					c.stDropped += src.h.TotalCount()
				}
				continue
			}
			if c.st == nil {
				c.st = map[string]*metricAcc{}
			}
			m = &metricAcc{}
			c.st[name] = m
		}
		m.merge(src, packed)
	}
}

// The quota buckets of the rate-limit headers, in the order of
// RateLimitStats.Buckets.
const (
	bucketRequests = iota
	bucketTokensMinute
	bucketTokensDay
	numBuckets
)

// BucketNames names the buckets of RateLimitStats.Buckets.
var BucketNames = [numBuckets]string{"requests per minute", "tokens per minute", "tokens per day"}

// bucketAcc follows one quota bucket through the responses: how many
// said it was short (BucketShort: a request of that size would wait), the first response that found it empty, and
// the latest moment it was projected to hold a request again (response
// time + reset). Times are held plus one (0: none).
type bucketAcc struct {
	seen, short      int64
	zeroAt1, refill1 int64
}

func (b *bucketAcc) observe(limit, remaining, reset, at int64) {
	if limit == record.None && remaining == record.None && reset == record.None {
		return
	}
	b.seen++
	short := BucketShort(limit, remaining, reset)
	if short {
		b.short++
	}
	if at == record.None {
		return
	}
	if remaining == 0 {
		b.zeroAt1 = lowest1(b.zeroAt1, at)
	}
	if short && reset != record.None && reset > 0 {
		b.refill1 = highest1(b.refill1, at+reset)
	}
}

func (b *bucketAcc) merge(o *bucketAcc) {
	b.seen += o.seen
	b.short += o.short
	b.zeroAt1 = merged1(b.zeroAt1, o.zeroAt1)
	b.refill1 = max(b.refill1, o.refill1)
}

func (c *clientAcc) bucketStats() []BucketStats {
	var out []BucketStats
	for i, b := range c.buckets {
		if b.seen == 0 {
			continue
		}
		out = append(out, BucketStats{Bucket: BucketNames[i], Responses: b.seen, Short: b.short, EmptyAtMs: ms1(b.zeroAt1), RefillAtMs: ms1(b.refill1)})
	}
	return out
}

// count1 and ms1 unfold a value held plus one: -1 when none was seen.
func count1(v int64) int64 { return v - 1 }

func ms1(ns1 int64) float64 {
	if ns1 == 0 {
		return -1
	}
	return nsToMs(ns1 - 1)
}

func (c *clientAcc) stats(offered, durNs int64, timeoutMs float64) ClientStats {
	s := ClientStats{
		Attempts:           c.attempts,
		AttemptsPerArrival: ratio(c.attempts, offered),
		AttemptsRPS:        perSec(c.attempts, durNs),
		ConnRetries:        c.connRetries,
		MaxTokensIgnored:   c.maxIgnored,
		MaxTokensChecked:   c.maxChecked,
		ReasoningTokens:    c.reasoning,
		CachedTokens:       c.cached,
		ThoughtFirst:       c.thought,
		UnknownEvents:      c.unknownEvents,
		UnknownEventsIn:    c.unknownIn,
		TooLarge:           c.tooLarge,
		RateLimit: RateLimitStats{
			Responses:               c.rlResponses,
			LowestRemainingRequests: count1(c.lowReq),
			LowestRemainingTokens:   count1(c.lowTok),
			LimitRequests:           count1(c.limReq),
			LimitTokens:             count1(c.limTok),
			ResetsRequests:          c.resetsReq,
			ResetsTokens:            c.resetsTok,
			LongestResetRequestsMs:  ms1(c.longResetReq),
			LongestResetTokensMs:    ms1(c.longResetTok),
			RetryAfter:              c.retryAfter,
			LongestRetryAfterMs:     ms1(c.longRetryAfter),

			LowestRemainingTokensDay: count1(c.lowTokDay),
			LimitTokensDay:           count1(c.limTokDay),
			LongestResetTokensDayMs:  ms1(c.longResetTokDay),
			Unparsed:                 c.rlUnparsed,
			Buckets:                  c.bucketStats(),
		},
		ServerTimingDropped: c.stDropped,
	}
	if len(c.st) > 0 {
		s.ServerTiming = make(map[string]Dist, len(c.st))
		for name, m := range c.st {
			s.ServerTiming[name] = m.dist(0, 0, timeoutMs)
		}
	}
	return s
}
