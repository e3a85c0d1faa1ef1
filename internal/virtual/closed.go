package virtual

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// FailurePause is how long a virtual user of a closed loop waits after a
// request that failed at once (429, 500, 503, 400) before sending its next
// one. A live user is slowed by the network round trip; a virtual one is
// not, and without a pause it would send unboundedly many requests at one
// instant.
const FailurePause = 100 * time.Millisecond

// errClosedFaults refuses the faults the closed loop does not enact.
var errClosedFaults = errors.New("a closed-loop sweep in virtual time does not model mid-stream faults (--fault-reset, --fault-malformed, --fault-stall, --fault-slow-headers): run it against the HTTP simulator (without --simulate)")

// Closed runs a closed loop against the engine model in virtual time:
// loop.Users users each send their first request at 0 and their next one
// at the instant the previous one ended (FailurePause after one that failed
// at once), until loop.Warmup + loop.Duration; requests in flight then run
// to completion. Each request's scheduled and sent time is its send time,
// and its phase loop.PhaseAt(send time). A request not complete at send +
// Timeout is cancelled then. Mid-stream faults (reset, malformed chunk,
// stall, slow headers) are not modelled: a Config with any of them is a
// *ConfigError; 500 and 503 faults are.
//
// Closed returns a *ConfigError for an unusable configuration or loop and
// ctx's error, with no Output, when ctx is done before the loop ends.
func Closed(ctx context.Context, cfg Config, gen *workload.Generator, loop schedule.ClosedLoop) (*Output, error) {
	if f := cfg.Sim; f.FaultReset+f.FaultMalformed+f.FaultStall+f.FaultSlowHeaders > 0 {
		return nil, &ConfigError{errClosedFaults}
	}
	if cfg.Sim.HasGateway() {
		return nil, &ConfigError{errors.New("a closed-loop sweep in virtual time does not model the gateway's quotas (--quota-*): run it against the HTTP simulator (without --simulate)")}
	}
	if err := loop.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	if err := cfg.validate(gen); err != nil {
		return nil, err
	}
	cl, err := cfg.cluster()
	if err != nil {
		return nil, err
	}
	r := &closedRun{cfg: &cfg, loop: loop, gen: gen, c: cl, end: loop.Warmup + loop.Duration}
	samples, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	b := &batch{arrivals: make([]schedule.Arrival, len(r.all)), outs: make([]sim.Outcome, len(r.all)), tags: make([]tag, len(r.all))}
	for i, q := range r.all {
		b.arrivals[i], b.outs[i], b.tags[i] = q.a, q.out, q.tag
	}
	return cfg.output(b, samples, cl), nil
}

// closedReq follows one request of the closed loop; it is the request's
// sim.Observer.
type closedReq struct {
	inflight
	a    schedule.Arrival
	tag  tag // max_tokens and the request's labels
	user int
	run  *closedRun // where Finished reports
}

// Finished ends the request and hands its user back to the loop.
func (q *closedReq) Finished(now time.Duration, res sim.Result) {
	if q.finish(now, res) {
		q.run.fin = append(q.run.fin, q)
	}
}

// wake is a user due to send again at a moment (after a failure pause).
type wake struct {
	at   time.Duration
	user int
}

// closedRun is the state of one closed loop.
type closedRun struct {
	cfg  *Config
	loop schedule.ClosedLoop
	gen  *workload.Generator
	c    *sim.Cluster
	end  time.Duration // no request is sent from here on

	all    []*closedReq // every request, in send (Seq) order
	active []*closedReq // streaming, possibly finished since the last step
	fin    []*closedReq // finished during the last Advance, in order
	wakes  []wake       // users pausing after a failure
	blocks []uint64     // block hashes of the request being submitted (prefix cache)
}

// run drives the loop to its end and returns the engine samples.
func (r *closedRun) run(ctx context.Context) ([]scrape.Sample, error) {
	every := r.cfg.ScrapeInterval
	for u := 0; u < r.loop.Users; u++ {
		r.start(u, 0)
	}
	var samples []scrape.Sample
	var sampleAt, last time.Duration
	for ctx.Err() == nil {
		t, ok := r.next()
		if !ok {
			break
		}
		if every > 0 && sampleAt < t {
			t = sampleAt
		}
		r.c.Advance(t)
		last = t
		// Completions first, then timeouts, then users waking up.
		var restart []int
		for _, q := range r.fin {
			restart = append(restart, q.user)
		}
		r.fin = r.fin[:0]
		kept := r.active[:0]
		for _, q := range r.active {
			if q.timeOut(t) {
				r.c.Cancel(t, q.out.Ticket.ID)
				restart = append(restart, q.user)
			}
			if !q.done {
				kept = append(kept, q)
			}
		}
		r.active = kept
		for _, u := range restart {
			r.start(u, t)
		}
		var later []wake
		var due []int
		for _, w := range r.wakes {
			if w.at <= t {
				due = append(due, w.user)
			} else {
				later = append(later, w)
			}
		}
		r.wakes = later
		for _, u := range due {
			r.start(u, t)
		}
		if every > 0 && sampleAt <= t {
			samples = append(samples, sample(sampleAt, r.c.Snapshot(t)))
			sampleAt += every
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if every > 0 {
		samples = append(samples, sample(sampleAt, r.c.Snapshot(max(sampleAt, last))))
	}
	return samples, nil
}

// next returns the moment of the next thing to happen: an engine event, a
// deadline or a user waking up; false when nothing is left.
func (r *closedRun) next() (time.Duration, bool) {
	t, ok := r.c.NextEvent()
	for _, q := range r.active {
		if q.deadline != sim.Never && (!ok || q.deadline < t) {
			t, ok = q.deadline, true
		}
	}
	for _, w := range r.wakes {
		if !ok || w.at < t {
			t, ok = w.at, true
		}
	}
	return t, ok
}

// start has user u send its next request at t, unless the loop has ended.
// A request refused or failed at once ends at t and the user pauses for
// FailurePause.
func (r *closedRun) start(u int, t time.Duration) {
	if t >= r.end {
		return
	}
	a := schedule.Arrival{Seq: int64(len(r.all)), At: t, Phase: r.loop.PhaseAt(t)}
	req := r.gen.Generate(a)
	q := &closedReq{inflight: inflight{last: t, deadline: sim.Never}, a: a, tag: tagOf(&req), user: u, run: r}
	q.out = sim.Outcome{ScheduledAt: t, AdmittedAt: sim.Never, FirstTokenAt: sim.Never, DoneAt: sim.Never, Replica: -1}
	r.all = append(r.all, q)
	sr := sim.Request{PromptTokens: r.cfg.promptTokens(&req), MaxTokens: req.MaxTokens, IgnoreEOS: req.IgnoreEOS, PrefillOnly: req.Inputs != nil}
	if r.cfg.prefixCache() {
		r.blocks = r.cfg.Blocks(&req, r.blocks[:0])
		sr.Blocks = r.blocks
	}
	tk, err := r.c.Submit(t, sr, q)
	q.out.Ticket, q.out.Fault, q.out.Replica = tk, tk.Fault.Kind, tk.Replica
	var qf *sim.QueueFullError
	switch {
	case errors.As(err, &qf):
		q.out.Rejected, q.out.Status, q.out.RetryAfter = true, http.StatusTooManyRequests, qf.RetryAfter
	case err != nil: // invalid request
		q.out.Status, q.out.Replica = http.StatusBadRequest, -1
	case tk.Fault.Kind == sim.Fault500:
		q.out.Failed, q.out.Status = true, http.StatusInternalServerError
	case tk.Fault.Kind == sim.Fault503:
		q.out.Failed, q.out.Status = true, http.StatusServiceUnavailable
	default:
		q.out.Status = http.StatusOK
		if r.cfg.Timeout > 0 {
			q.deadline = t + r.cfg.Timeout
		}
		r.active = append(r.active, q)
		return
	}
	q.out.DoneAt, q.done = t, true
	r.wakes = append(r.wakes, wake{t + FailurePause, u})
}
