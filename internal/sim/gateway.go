package sim

import (
	"math"
	"time"
)

// The gateway's buckets, in the order of Admission.Buckets.
const (
	BucketRequests     = iota // requests per minute
	BucketTokensMinute        // tokens per minute
	BucketTokensDay           // tokens per day
	numBuckets
)

// BucketNames names the buckets as reports say them.
var BucketNames = [numBuckets]string{"requests per minute", "tokens per minute", "tokens per day"}

// bucketWindow is each bucket's refill period: the limit refills evenly
// over it.
var bucketWindow = [numBuckets]float64{60, 60, 86400}

// Gateway is a managed endpoint's front door, in front of the engine: one
// API key's quotas as token buckets over requests and tokens per minute
// and tokens per day, and an optional FIFO queue where a request waits for
// quota instead of being refused. A bucket of limit L refills
// continuously at L per window (60 s or 86,400 s) and starts full; a
// request costs 1 request and prompt + max_tokens tokens (the tokens it may
// use, as providers count them at admission). A request passes when every
// bucket holds its cost; otherwise it waits in the queue, if the queue has
// room, until the buckets hold it (in order: nothing overtakes a waiting
// request), or is refused (HTTP 429) with the time the buckets will hold
// it. It is a pure state machine, like the Cluster: time is the caller's.
type Gateway struct {
	limit [numBuckets]float64 // 0 = no such bucket
	// full is, per bucket, the time (seconds) at which it is full again:
	// GCRA's theoretical arrival time. At t it holds
	// limit − max(0, full − t) × rate.
	full  [numBuckets]float64
	queue int             // room in the queue
	held  []time.Duration // release times of the requests waiting, in order
}

// NewGateway returns the gateway of cfg, or nil when cfg sets no quota.
func NewGateway(cfg Config) *Gateway {
	if !cfg.HasGateway() {
		return nil
	}
	return &Gateway{
		limit: [numBuckets]float64{float64(cfg.QuotaRequestsPerMinute), float64(cfg.QuotaTokensPerMinute), float64(cfg.QuotaTokensPerDay)},
		queue: cfg.GatewayQueue,
	}
}

// Bucket is one bucket's state as a response's rate-limit headers say it,
// after the request: its limit, what remains, and how long until it holds
// another request of the same size (0: it does now). On is false for a
// bucket the gateway does not have.
type Bucket struct {
	On        bool
	Limit     int64
	Remaining int64
	Reset     time.Duration
}

// Admission is the gateway's answer to one request.
type Admission struct {
	// Refused: HTTP 429. RetryAfter is then when the buckets will hold
	// it (0 when it can never pass: larger than a bucket). Full says the
	// queue was full (the request could have waited), rather than a
	// gateway without a queue.
	Refused    bool
	Full       bool
	RetryAfter time.Duration
	// Release is when the request reaches the engine (≥ now): its wait at
	// the gateway is Release − now.
	Release time.Duration
	// Binding is the bucket that held the request back (refused or
	// delayed), or that is nearest to holding the next one back; -1
	// when no bucket is short.
	Binding int
	Buckets [numBuckets]Bucket
}

// Cost is what a request of prompt tokens and max_tokens cap (its
// reservation: Cluster's rule for an unset max_tokens) takes from the
// token buckets: its prompt alone when it is prefill-only.
func (c *Config) Cost(r Request) int {
	return r.PromptTokens + c.outputCap(r)
}

// Admit decides a request of tokens arriving at now.
func (g *Gateway) Admit(now time.Duration, tokens int) Admission {
	t := now.Seconds()
	cost := [numBuckets]float64{1, float64(tokens), float64(tokens)}
	for len(g.held) > 0 && g.held[0] <= now {
		g.held = g.held[1:]
	}
	a := Admission{Release: now, Binding: -1}
	// pass is the earliest time every bucket holds the request, and never
	// before the requests waiting ahead of it.
	pass, never := t, false
	for b := range numBuckets {
		if g.limit[b] == 0 {
			continue
		}
		if cost[b] > g.limit[b] {
			if !never {
				never, a.Binding = true, b // the first bucket it can never fit names the refusal
			}
			continue
		}
		if p := g.full[b] - (g.limit[b]-cost[b])/g.rate(b); p > pass && !never {
			pass, a.Binding = p, b
		}
	}
	if n := len(g.held); n > 0 {
		pass = max(pass, g.held[n-1].Seconds())
	}
	at := now
	if pass > t+epsilon {
		at = max(seconds(pass), now)
	}
	switch {
	case never:
		a.Refused = true
	case at <= now:
	case len(g.held) < g.queue:
		a.Release = at
		g.held = append(g.held, at)
	default:
		a.Refused, a.Full, a.RetryAfter = true, g.queue > 0, at-now
	}
	if !a.Refused {
		for b := range numBuckets {
			if g.limit[b] > 0 {
				g.full[b] = max(g.full[b], a.Release.Seconds()) + cost[b]/g.rate(b)
			}
		}
	}
	g.state(&a, t, cost)
	return a
}

// state fills a.Buckets after the request, at t (seconds), and a.Binding
// when nothing held the request back: the bucket that will hold the next
// one of the same size back longest.
func (g *Gateway) state(a *Admission, t float64, cost [numBuckets]float64) {
	longest := time.Duration(0)
	for b := range numBuckets {
		if g.limit[b] == 0 {
			continue
		}
		r := g.rate(b)
		rem := g.limit[b] - max(g.full[b]-t, 0)*r
		reset := g.full[b] - (g.limit[b]-cost[b])/r - t
		if reset < epsilon {
			reset = 0
		}
		a.Buckets[b] = Bucket{On: true, Limit: int64(g.limit[b]), Remaining: int64(max(math.Floor(rem+1e-6), 0)), Reset: seconds(reset)}
		if a.Binding < 0 && a.Buckets[b].Reset > longest {
			longest = a.Buckets[b].Reset
			a.Binding = b
		}
	}
}

func (g *Gateway) rate(b int) float64 { return g.limit[b] / bucketWindow[b] }

// Queued is the number of requests waiting at the gateway at now.
func (g *Gateway) Queued(now time.Duration) int {
	n := 0
	for _, at := range g.held {
		if at > now {
			n++
		}
	}
	return n
}

// epsilon is the slack of the buckets' arithmetic, in seconds: a
// nanosecond, the resolution of the times.
const epsilon = 1e-9

// seconds converts seconds to a Duration, rounded up to the nanosecond so
// that a request released at it finds the bucket holding it.
func seconds(s float64) time.Duration { return time.Duration(math.Ceil(s * 1e9)) }
