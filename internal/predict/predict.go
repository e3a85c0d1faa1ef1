// Package predict forecasts the backlog a burst leaves behind and how long it
// takes to drain, before a run, with the fluid model of docs/method.md §8.
//
// # Model
//
// Requests arrive at a rate a(t) and the system completes them at most at its
// effective capacity m(t), both in requests per second. Time t is measured in
// seconds from the start of the burst:
//
//	a(t) = BurstRate   for 0 ≤ t < BurstLen,   Lambda afterwards
//	m(t) = Mu          before the boost,       BoostMu from the boost on
//
// The boost (a scale-up that became useful) happens at BoostAt after the
// burst start, or at the burst end when BoostAt is 0; no boost when BoostMu is
// 0. The backlog B(t), in requests, starts empty and follows
//
//	dB/dt = a(t) − m(t)   while B > 0 or a(t) > m(t),   else B stays 0,
//
// so on an interval where both rates are constant and last Δt seconds,
// B ← max(0, B + (a − m)·Δt). During the burst the backlog grows at
// max(0, BurstRate − Mu) req/s; after it, it drains at m − Lambda req/s, and
// the recovery time from the burst end is the time until B is 0 again.
//
// Example (docs/method.md §8): Mu = 10, Lambda = 8, a 60 s burst at 20 req/s. The
// backlog grows at 20 − 10 = 10 req/s to 600 requests, then drains at
// 10 − 8 = 2 req/s: 300 s. If capacity rises to 16 req/s at the burst end,
// it drains at 16 − 8 = 8 req/s: 75 s.
//
// # Abandonment
//
// Clients give up: with a per-request timeout T (Patience), a request that
// would wait longer than T in the queue leaves unserved. In a first-come,
// first-served fluid queue served at m a request that finds a backlog B
// waits B/m, so the backlog that will still be served is capped at m·T:
//
//	B ← min(m·T, max(0, B + (a − m)·Δt))
//
// and arrivals beyond the cap are abandoned (Abandoned counts them). The
// drain after the burst starts from at most m·T: Mu = 9.14, Lambda = 4,
// T = 60 s, a 60 s burst at 40 req/s fills the cap of 548 requests after
// 17.8 s and abandons 1,303; recovery takes 548 / 5.14 = 107 s instead of
// 360 s without abandonment. T counts from the send and includes the
// request's own service time, so the cap is an upper bound: the real
// backlog is capped a little lower, at m·(T − service time).
//
// # Rejections and retries
//
// A server with an admission limit (QueueLimit requests waiting, e.g. the
// simulator's max_waiting) rejects the arrivals that find its queue full:
// the backlog is capped at QueueLimit (or at m·T when that is lower: then
// waiting past the timeout binds first). A rejected request comes back
// after RetryDelay (the Retry-After hint) as an extra arrival, up to
// Retries times, unless the wait would reach the timeout; past its last
// retry it is rejected for good (Rejected; Retried counts the extra
// attempts). The returning retries keep the queue full after the burst has
// ended and turn normal arrivals away, which come back in turn: each delay
// the cascade is smaller, and once the returning retries and the normal
// load fit in the capacity the queue drains. Because the arrival rate now
// depends on the backlog's own past, this case is stepped forward in time
// (10 ms steps) rather than solved per interval: Mu = 10, Lambda = 8, a
// 60 s burst at 20 req/s and a limit of 100 recover in 50 s without
// retries (500 rejected) and in 64 s with one retry after 5 s (472
// rejected for good, 711 retries).
//
// # Quotas
//
// A managed endpoint puts a quota in front of the engine: a token bucket
// (requests per minute, or tokens per minute divided by the tokens a
// request costs) that holds QuotaBurst requests when full and refills at
// QuotaRate req/s. The baseline runs below the refill, so the bucket is
// full when the burst begins. The burst spends the stock; once it is
// empty, the gateway passes QuotaRate req/s and the rest waits in its
// queue (QuotaQueue requests) or is refused. What passes joins the
// engine's backlog, served at μ. When QuotaRate < μ the quota binds:
// the backlog, at the gateway, drains at QuotaRate − Lambda after the
// burst, however fast the engine is. Stepped like the bounded model (10
// ms); Patience is not applied to the gateway's queue. Example: a quota of
// 60,000 tokens per minute at 250 tokens a request is 4 req/s with a
// stock of 240; a 60 s burst at 10 req/s over a baseline of 2 req/s
// empties it after 40 s, fills a queue of 50 and refuses the rest, and the
// queue drains at 4 − 2 = 2 req/s: 25 s.
//
// When Lambda ≥ the final capacity there is no headroom: a backlog cannot
// drain (and a real queue at 100 % utilisation grows without bound), so the
// prediction is Never. The model assumes the system was at steady state with
// an empty queue when the burst began, that capacity does not degrade under
// load and that no request is rejected (nor, without Patience, times out):
// it is the bound the measurement is compared with. Params.Model names the
// variant a prediction used.
package predict

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// Params describes the system and the burst. Rates are requests per second.
type Params struct {
	Mu        float64       // effective capacity before any boost, req/s (> 0)
	Lambda    float64       // normal (baseline) arrival rate, req/s (≥ 0)
	BurstRate float64       // arrival rate during the burst, req/s (≥ 0)
	BurstLen  time.Duration // burst length (> 0)
	BoostMu   float64       // capacity after the boost, req/s; 0 = no boost
	BoostAt   time.Duration // when the boost takes effect, after the burst start; 0 = at the burst end
	// Patience is how long a request waits before it gives up (the
	// client's timeout); 0 = requests never give up.
	Patience time.Duration
	// QueueLimit is the server's admission bound, in requests waiting
	// (the simulator's max_waiting × replicas); 0 = unbounded. Arrivals
	// past it are rejected (see "Rejections and retries").
	QueueLimit float64
	// Retries is how many times the client sends a rejected request
	// again (0..10), each after RetryDelay (the Retry-After hint).
	Retries    int
	RetryDelay time.Duration
	// A quota in front of the engine (package doc, "Quotas"): a token
	// bucket, counted in requests, that refills at QuotaRate req/s up to
	// QuotaBurst requests, with a queue of QuotaQueue requests where
	// arrivals over quota wait (0: they are refused). QuotaRate 0 = none.
	QuotaRate  float64
	QuotaBurst float64
	QuotaQueue float64
}

// Validate reports every invalid field, as a field.Errors named by the
// fields' keys (mu, lambda, burst_rate, burst_len, boost_mu, boost_at).
func (p Params) Validate() error {
	var errs field.Errors
	rate := func(name string, v float64, positive bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			errs.Add(name, "%v is not a finite rate", v)
		case positive && v <= 0:
			errs.Add(name, "must be > 0 req/s, got %v", v)
		case v < 0:
			errs.Add(name, "must be ≥ 0 req/s, got %v", v)
		}
	}
	rate("mu", p.Mu, true)
	rate("lambda", p.Lambda, false)
	rate("burst_rate", p.BurstRate, false)
	rate("boost_mu", p.BoostMu, false)
	if p.BurstLen <= 0 {
		errs.Add("burst_len", "must be > 0, got %v", p.BurstLen)
	}
	if p.BoostAt < 0 {
		errs.Add("boost_at", "must be ≥ 0, got %v", p.BoostAt)
	}
	if p.Patience < 0 {
		errs.Add("patience", "must be ≥ 0 (0 = requests never give up), got %v", p.Patience)
	}
	if math.IsNaN(p.QueueLimit) || math.IsInf(p.QueueLimit, 0) || p.QueueLimit < 0 {
		errs.Add("queue_limit", "must be ≥ 0 requests (0 = unbounded), got %v", p.QueueLimit)
	}
	if p.Retries < 0 || p.Retries > maxRetries {
		errs.Add("retries", "must be 0..%d, got %d", maxRetries, p.Retries)
	}
	if p.Retries > 0 && p.QueueLimit == 0 {
		errs.Add("retries", "only rejected requests are retried: give the queue limit too (without one nothing is rejected)")
	}
	for _, q := range []struct {
		name string
		v    float64
	}{{"quota_rate", p.QuotaRate}, {"quota_burst", p.QuotaBurst}, {"quota_queue", p.QuotaQueue}} {
		if math.IsNaN(q.v) || math.IsInf(q.v, 0) || q.v < 0 {
			errs.Add(q.name, "must be ≥ 0, got %v", q.v)
		}
	}
	if p.QuotaRate > 0 && p.QuotaBurst < 1 {
		errs.Add("quota_burst", "must be ≥ 1 request with a quota, got %v", p.QuotaBurst)
	}
	if p.QuotaRate > 0 && p.Retries > 0 {
		errs.Add("retries", "retries are not modelled with a quota")
	}
	if p.RetryDelay < 0 || p.Retries > 0 && p.RetryDelay == 0 {
		errs.Add("retry_delay", "must be > 0 with retries, got %v", p.RetryDelay)
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	return nil
}

// Prediction is the model's forecast.
type Prediction struct {
	PeakBacklog  float64       // largest backlog up to the last rate change, requests (when Never it may keep growing after)
	PeakAt       time.Duration // when it is first reached, after the burst start (0 if no backlog)
	DrainRate    float64       // final capacity − Lambda, req/s: how fast the backlog drains in the end (≤ 0 when Never)
	RecoveryTime time.Duration // from the burst end until the backlog is empty; 0 if empty at the burst end; unset when Never
	Never        bool          // Lambda ≥ final capacity: the backlog never drains
	// Abandoned is how many arrivals give up (Patience), up to the last
	// rate change; with Never it keeps growing after.
	Abandoned float64
	// Rejected is how many requests the queue limit turned away for good
	// (after their retries); Retried how many extra attempts the retries
	// sent. Both 0 without a QueueLimit.
	Rejected    float64 `json:",omitempty"`
	Retried     float64 `json:",omitempty"`
	Model       string  // which model, in a few words (Params.Model)
	Explanation string  // the arithmetic, in words
	// Params is what the model was given, so a report can redraw it.
	Params Params
}

// segment is an interval [from, to) of constant rates, in seconds from the
// burst start; to is +Inf for the last one.
type segment struct {
	from, to float64
	arrive   float64
	serve    float64
}

// boostAt returns when the boost takes effect, in seconds, or +Inf.
func (p Params) boostAt() float64 {
	switch {
	case p.BoostMu <= 0:
		return math.Inf(1)
	case p.BoostAt == 0:
		return p.BurstLen.Seconds()
	}
	return p.BoostAt.Seconds()
}

// lastChange is when the last rate changes, in seconds from the burst
// start: the burst end, or a boost after it.
func (p Params) lastChange() float64 {
	end := p.BurstLen.Seconds()
	if b := p.boostAt(); !math.IsInf(b, 1) && b > end {
		return b
	}
	return end
}

// finalMu is the capacity after every change.
func (p Params) finalMu() float64 {
	if p.BoostMu > 0 {
		return p.BoostMu
	}
	return p.Mu
}

// segments splits time at the burst end and the boost.
func (p Params) segments() []segment {
	end, boost := p.BurstLen.Seconds(), p.boostAt()
	cuts := []float64{0, end}
	if !math.IsInf(boost, 1) && boost != end {
		cuts = append(cuts, boost)
		if boost < end {
			cuts[1], cuts[2] = boost, end
		}
	}
	cuts = append(cuts, math.Inf(1))
	segs := make([]segment, 0, len(cuts)-1)
	for i := 0; i+1 < len(cuts); i++ {
		from := cuts[i]
		s := segment{from: from, to: cuts[i+1], arrive: p.Lambda, serve: p.Mu}
		if from < end {
			s.arrive = p.BurstRate
		}
		if from >= boost {
			s.serve = p.BoostMu
		}
		segs = append(segs, s)
	}
	return segs
}

// backlogAt returns B(t) for t seconds after the burst start.
func (p Params) backlogAt(t float64) float64 {
	b := 0.0
	for _, s := range p.segments() {
		if t <= s.from {
			break
		}
		dt := math.Min(t, s.to) - s.from
		b = math.Min(p.capOf(s), math.Max(0, math.Min(b, p.capOf(s))+(s.arrive-s.serve)*dt))
	}
	return b
}

// capOf is the largest backlog that will still be served in segment s:
// serve × Patience; +Inf without Patience.
func (p Params) capOf(s segment) float64 {
	if p.Patience <= 0 {
		return math.Inf(1)
	}
	return s.serve * p.Patience.Seconds()
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// Predict runs the fluid model.
func Predict(p Params) (Prediction, error) {
	if err := p.Validate(); err != nil {
		return Prediction{}, err
	}
	if p.QuotaRate > 0 {
		return predictQuota(p), nil
	}
	if p.QueueLimit > 0 {
		return predictBounded(p), nil
	}
	end := p.BurstLen.Seconds()
	pr := Prediction{Model: p.Model(), Params: p}
	var w strings.Builder
	b := 0.0
	// emptySince is the time from which the backlog stays empty, NaN while
	// it is not empty (or will not stay so).
	emptySince := 0.0
	for _, s := range p.segments() {
		rate := s.arrive - s.serve
		limit := p.capOf(s)
		if b > limit { // a boost never lowers the cap; kept for any order of segments
			pr.Abandoned += b - limit
			b = limit
		}
		label := "burst"
		if s.from >= end {
			label = "after the burst"
		}
		last := math.IsInf(s.to, 1)
		reached := s.to // when the backlog at the segment's end is first reached
		if last {
			fmt.Fprintf(&w, "From %s on (%s): %s req/s in, %s req/s out: ", dur(seconds(s.from)), label, num(s.arrive), num(s.serve))
		} else {
			fmt.Fprintf(&w, "%s–%s (%s): %s req/s in, %s req/s out: ", dur(seconds(s.from)), dur(seconds(s.to)), label, num(s.arrive), num(s.serve))
		}
		switch {
		case last && b > 0 && rate < 0:
			emptySince = s.from + b/-rate
			fmt.Fprintf(&w, "the backlog drains at %s req/s and is empty after %s more.", num(-rate), dur(seconds(b/-rate)))
		case last && rate >= 0 && (b > 0 || rate > 0):
			emptySince = math.NaN()
			if p.Patience > 0 {
				fmt.Fprintf(&w, "no headroom (%s ≥ %s req/s): the backlog stays at the patience cap, and the excess gives up.", num(s.arrive), num(s.serve))
				break
			}
			fmt.Fprintf(&w, "no headroom (%s ≥ %s req/s), the backlog never drains.", num(s.arrive), num(s.serve))
		case last:
			fmt.Fprintf(&w, "the backlog stays empty.")
		case b == 0 && rate <= 0:
			fmt.Fprintf(&w, "no backlog. ")
		case rate == 0:
			fmt.Fprintf(&w, "the backlog stays at %s. ", backlog(b))
		case rate > 0 && b+rate*(s.to-s.from) > limit:
			full := s.from + (limit-b)/rate
			left := rate * (s.to - full)
			pr.Abandoned += left
			b, reached = limit, full
			emptySince = math.NaN()
			fmt.Fprintf(&w, "the backlog grows at %s req/s to the patience cap %s = %s req/s × %s at %s; past it, arrivals would wait longer than %s and give up (%s of them). ",
				num(rate), backlog(limit), num(s.serve), dur(p.Patience), dur(seconds(full)), dur(p.Patience), num(math.Round(left)))
		case rate > 0:
			b += rate * (s.to - s.from)
			emptySince = math.NaN()
			fmt.Fprintf(&w, "the backlog grows at %s req/s to %s. ", num(rate), backlog(b))
		case b+rate*(s.to-s.from) <= 0:
			emptySince = s.from + b/-rate
			fmt.Fprintf(&w, "the backlog drains at %s req/s and is empty after %s. ", num(-rate), dur(seconds(b/-rate)))
			b = 0
		default:
			b += rate * (s.to - s.from)
			fmt.Fprintf(&w, "the backlog drains at %s req/s to %s. ", num(-rate), backlog(b))
		}
		if !last && b > pr.PeakBacklog {
			pr.PeakBacklog, pr.PeakAt = b, seconds(reached)
		}
	}
	pr.DrainRate = p.finalMu() - p.Lambda
	pr.Never = p.Lambda >= p.finalMu() || math.IsNaN(emptySince)
	if !pr.Never && emptySince > end {
		pr.RecoveryTime = seconds(emptySince - end)
	}
	var head string
	switch {
	case pr.PeakBacklog > 0:
		head = fmt.Sprintf("Peak backlog %s requests, %s after the burst start. ", backlog(pr.PeakBacklog), dur(pr.PeakAt))
	default:
		head = "No backlog builds up. "
	}
	switch {
	case pr.Never:
		head += fmt.Sprintf("Never recovers: normal load %s req/s ≥ capacity %s req/s leaves no headroom. ", num(p.Lambda), num(p.finalMu()))
	default:
		head += fmt.Sprintf("Recovered %s after the burst end. ", dur(pr.RecoveryTime))
	}
	if pr.Abandoned > 0 {
		head += fmt.Sprintf("About %s requests give up after waiting %s. ", num(math.Round(pr.Abandoned)), dur(p.Patience))
	}
	pr.Explanation = head + w.String()
	return pr, nil
}

// num prints a rate or a count for people: at most three decimals, no
// trailing zeros (9.266666… → "9.267", 600 → "600").
func num(v float64) string { return strconv.FormatFloat(round3(v), 'f', -1, 64) }

func dur(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// backlog prints a number of requests for people: one decimal at most
// (54.2917 → "54.3", 600 → "600").
func backlog(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// Point is one point of a backlog timeline.
type Point struct {
	T       time.Duration // after the burst start
	Backlog float64       // requests
}

// maxPoints bounds a Timeline.
const maxPoints = 100_000

// Timeline samples the backlog every step from the burst start, adding the
// breakpoints (burst end, boost, peak, drained) so a chart shows the corners
// exactly. It ends one step after the backlog drained, or, when it never
// does, after the burst plus four burst lengths (or one burst length past a
// late boost).
func Timeline(p Params, step time.Duration) ([]Point, error) {
	pr, err := Predict(p)
	if err != nil {
		return nil, err
	}
	if step <= 0 {
		return nil, fmt.Errorf("predict: timeline: step must be > 0, got %v", step)
	}
	horizon := p.BurstLen + pr.RecoveryTime + step
	if pr.Never {
		horizon = 5 * p.BurstLen
		if p.BoostMu > 0 {
			horizon = max(horizon, p.BoostAt+p.BurstLen)
		}
	}
	if int64(horizon/step) > maxPoints {
		return nil, fmt.Errorf("predict: timeline: step %v gives more than %d points over %v", step, maxPoints, horizon)
	}
	if p.QuotaRate > 0 {
		return quotaTimeline(p, step, horizon), nil
	}
	if p.QueueLimit > 0 {
		return boundedTimeline(p, step, horizon), nil
	}
	ts := map[time.Duration]bool{p.BurstLen: true, pr.PeakAt: true, horizon: true}
	if p.BoostMu > 0 {
		ts[seconds(p.boostAt())] = true
	}
	if !pr.Never {
		ts[p.BurstLen+pr.RecoveryTime] = true
	}
	for t := time.Duration(0); t <= horizon; t += step {
		ts[t] = true
	}
	out := make([]Point, 0, len(ts))
	for t := range ts {
		if t >= 0 && t <= horizon {
			out = append(out, Point{T: t, Backlog: p.backlogAt(t.Seconds())})
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return cmp.Compare(a.T, b.T) })
	return out, nil
}
