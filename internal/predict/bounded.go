package predict

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// maxRetries bounds Params.Retries, as the client bounds its own.
const maxRetries = 10

// Model names the model Params select, in a few words, for reports:
// "fluid backlog; gives up after 1m0s; queue limit 20, 2 retries after 3s".
func (p Params) Model() string {
	parts := []string{"fluid backlog"}
	if p.Patience > 0 {
		parts = append(parts, "gives up after "+dur(p.Patience))
	} else {
		parts = append(parts, "no timeout")
	}
	switch {
	case p.QueueLimit > 0 && p.Retries > 0:
		parts = append(parts, fmt.Sprintf("queue limit %s, %d %s after %s", num(p.QueueLimit), p.Retries, plural(p.Retries, "retry", "retries"), dur(p.RetryDelay)))
	case p.QueueLimit > 0:
		parts = append(parts, fmt.Sprintf("queue limit %s, no retries", num(p.QueueLimit)))
	default:
		parts = append(parts, "unbounded queue")
	}
	if p.QuotaRate > 0 {
		parts = append(parts, fmt.Sprintf("quota %s req/s, stock %s, gateway queue %s", num(p.QuotaRate), num(p.QuotaBurst), num(p.QuotaQueue)))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// boundedSteps bounds the number of steps predictBounded integrates.
const boundedSteps = 2_000_000

// predictBounded integrates the fluid model with a queue limit, whose
// rejections may come back as retries (package doc, "Rejections and
// retries"). The delayed retries make the arrival rate depend on the
// backlog's own past, so there is no closed form per segment: the model is
// stepped forward in time instead, every 10 ms (coarser for a long
// horizon), with each retry generation held in a ring buffer until its
// delay has passed.
func predictBounded(p Params) Prediction { return stepBounded(p, nil) }

// stepBounded is predictBounded, calling observe (when not nil) with the
// backlog after every step.
func stepBounded(p Params, observe func(t, backlog float64)) Prediction {
	pr := Prediction{Model: p.Model(), Params: p, DrainRate: p.finalMu() - p.Lambda}
	end := p.BurstLen.Seconds()
	segs := p.segments()
	last := p.lastChange()
	horizon, dt := boundedGrid(p, pr.DrainRate, last)
	q := newRetryQueue(p, dt)
	var b float64
	fullAt, emptyAt, seg := math.NaN(), math.NaN(), 0
	for i := 0; ; i++ {
		t := float64(i) * dt
		if t > horizon {
			break
		}
		for seg+1 < len(segs) && t >= segs[seg].to {
			seg++
		}
		s := segs[seg]
		inflow := q.arrive(i, s.arrive*dt)
		limit := p.QueueLimit
		giveUp := p.capOf(s) < limit // waiting past the timeout binds first
		if giveUp {
			limit = p.capOf(s)
		}
		b = math.Max(0, b+inflow-s.serve*dt)
		if excess := b - limit; excess > 0 && inflow > 0 {
			b = limit
			if math.IsNaN(fullAt) {
				fullAt = t + dt
			}
			q.turnAway(&pr, i, excess/inflow, giveUp, t < last)
		}
		if observe != nil {
			observe(t+dt, b)
		}
		if t < last && b > pr.PeakBacklog {
			pr.PeakBacklog, pr.PeakAt = b, seconds(t+dt)
		}
		switch {
		case b > 1e-9 || q.pending > 1e-9:
			emptyAt = math.NaN()
		case math.IsNaN(emptyAt):
			emptyAt = t + dt
		}
		if t >= last && !math.IsNaN(emptyAt) {
			break
		}
	}
	pr.Never = pr.DrainRate <= 0 || math.IsNaN(emptyAt)
	if !pr.Never && emptyAt > end {
		pr.RecoveryTime = seconds(emptyAt - end)
	}
	if pr.Never && pr.DrainRate > 0 {
		// Retries keep the queue at its limit past the horizon.
		pr.Rejected, pr.Abandoned = q.rejectedIn, q.abandonedIn
	}
	pr.Explanation = boundedExplanation(p, pr, fullAt)
	return pr
}

// boundedGrid is how far (horizon, seconds) and in what steps (dt) the
// bounded model is stepped, given its drain rate and the time of the last
// rate change.
func boundedGrid(p Params, drainRate, last float64) (horizon, dt float64) {
	// The backlog never exceeds the limit, so once the last rate change
	// has passed and the retries' cascade has died out (each full delay
	// turns fewer new arrivals away, down to none once the returning
	// retries and the normal load fit in μ) it drains within
	// QueueLimit / drain rate. The model steps until then, up to an hour
	// past the last change (Never beyond).
	delay := p.RetryDelay.Seconds()
	horizon = last + 3600 + float64(p.Retries+1)*delay
	if drainRate > 0 {
		horizon += p.QueueLimit / drainRate
	}
	dt = math.Max(0.01, horizon/boundedSteps)
	if delay > 0 {
		dt = math.Min(dt, delay/4)
	}
	return horizon, dt
}

// retryQueue holds the requests the bounded model turned away until their
// retry arrives, and counts those turned away for good.
type retryQueue struct {
	p     Params
	delay float64 // seconds between a rejection and its retry
	lag   int     // the delay in steps
	// ring[g][i%lag] holds the requests whose retry g (1..Retries)
	// arrives at step i.
	ring [][]float64
	in   []float64 // this step's arrivals: new ones (0), then each retry generation
	// pending are the requests turned away whose retry has not arrived.
	pending float64
	// rejectedIn and abandonedIn are those rejected and abandoned before
	// the last rate change.
	rejectedIn, abandonedIn float64
}

// newRetryQueue is an empty retry queue for steps of dt seconds.
func newRetryQueue(p Params, dt float64) *retryQueue {
	q := &retryQueue{p: p, delay: p.RetryDelay.Seconds()}
	q.lag = max(1, int(math.Round(q.delay/dt)))
	q.ring = make([][]float64, p.Retries+1)
	for g := 1; g <= p.Retries; g++ {
		q.ring[g] = make([]float64, q.lag)
	}
	q.in = make([]float64, p.Retries+1)
	return q
}

// arrive records step i's arrivals, fresh new ones and the retries due at
// this step, and returns their total.
func (q *retryQueue) arrive(i int, fresh float64) (inflow float64) {
	q.in[0] = fresh
	inflow = q.in[0]
	for g := 1; g <= q.p.Retries; g++ {
		q.in[g] = q.ring[g][i%q.lag]
		q.ring[g][i%q.lag] = 0
		inflow += q.in[g]
		q.pending -= q.in[g]
	}
	return inflow
}

// turnAway turns away the share of step i's arrivals (each generation
// alike) that the full queue cannot take: abandoned when the timeout binds
// (giveUp), else retried while retries are left, else rejected for good;
// before says the step is before the last rate change.
func (q *retryQueue) turnAway(pr *Prediction, i int, share float64, giveUp, before bool) {
	p := &q.p
	for g := 0; g <= p.Retries; g++ {
		turned := share * q.in[g]
		switch {
		case turned == 0:
		case giveUp:
			pr.Abandoned += turned
			if before {
				q.abandonedIn += turned
			}
		case g < p.Retries && (p.Patience == 0 || float64(g+1)*q.delay < p.Patience.Seconds()):
			// The client retries unless the wait would reach its
			// timeout (openai, "Retries").
			q.ring[g+1][(i+q.lag)%q.lag] += turned
			q.pending += turned
			pr.Retried += turned
		default:
			pr.Rejected += turned
			if before {
				q.rejectedIn += turned
			}
		}
	}
}

// boundedExplanation puts predictBounded's result in words.
func boundedExplanation(p Params, pr Prediction, fullAt float64) string {
	var w strings.Builder
	if pr.PeakBacklog > 0 {
		fmt.Fprintf(&w, "Peak backlog %s requests, %s after the burst start. ", num(math.Round(pr.PeakBacklog)), dur(pr.PeakAt))
	} else {
		w.WriteString("No backlog builds up. ")
	}
	if pr.Never {
		fmt.Fprintf(&w, "Never recovers: normal load %s req/s ≥ capacity %s req/s leaves no headroom. ", num(p.Lambda), num(p.finalMu()))
	} else {
		fmt.Fprintf(&w, "Recovered %s after the burst end. ", dur(pr.RecoveryTime))
	}
	fmt.Fprintf(&w, "The server admits at most %s waiting requests", num(p.QueueLimit))
	if p.Patience > 0 && p.Mu*p.Patience.Seconds() < p.QueueLimit {
		fmt.Fprintf(&w, ", but a request would wait longer than the %s timeout past %s (%s req/s × %s)", dur(p.Patience),
			num(math.Round(p.Mu*p.Patience.Seconds())), num(p.Mu), dur(p.Patience))
	}
	w.WriteString(". ")
	if math.IsNaN(fullAt) {
		w.WriteString("The backlog stays below it.")
		return w.String()
	}
	fmt.Fprintf(&w, "The queue is full %s after the burst start", dur(seconds(fullAt)))
	if pr.Retried > 0 {
		fmt.Fprintf(&w, "; rejected requests come back up to %d %s after %s each, %s extra attempts in all", p.Retries, plural(p.Retries, "time", "times"), dur(p.RetryDelay), num(math.Round(pr.Retried)))
	}
	w.WriteString(": ")
	var out []string
	if pr.Rejected > 0 {
		out = append(out, fmt.Sprintf("about %s requests are rejected for good", num(math.Round(pr.Rejected))))
	}
	if pr.Abandoned > 0 {
		out = append(out, fmt.Sprintf("about %s give up after waiting %s", num(math.Round(pr.Abandoned)), dur(p.Patience)))
	}
	if len(out) == 0 {
		out = append(out, "every rejected request is served on a retry")
	}
	w.WriteString(strings.Join(out, ", ") + ".")
	return w.String()
}

// boundedTimeline samples stepBounded's backlog every step up to horizon,
// and at the step where the queue first fills and where it empties.
func boundedTimeline(p Params, step, horizon time.Duration) []Point {
	out := []Point{{T: 0, Backlog: 0}}
	next := step
	prev := 0.0
	stepBounded(p, func(t, b float64) {
		at := seconds(t)
		if at > horizon {
			return
		}
		corner := (prev >= p.QueueLimit) != (b >= p.QueueLimit) || (prev > 0) != (b > 0)
		if at >= next || corner {
			out = append(out, Point{T: at, Backlog: b})
			for next <= at {
				next += step
			}
		}
		prev = b
	})
	return out
}
