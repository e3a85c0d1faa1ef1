package experiment

import (
	"context"
	"errors"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// ArrivalClosed is the arrival process named in the plan of a closed-loop
// run: nothing is scheduled, users send when they are ready.
const ArrivalClosed = "closed"

// closedFailurePause is how long a virtual user waits after a request that
// failed at once (429, 500, 503, 400) before sending its next one. A live
// user is slowed by the network round trip; a virtual one is not, and
// without a pause it would send unboundedly many requests at one instant.
const closedFailurePause = 100 * time.Millisecond

// ClosedLoop is one closed-loop level. Closed loops exist only for
// concurrency sweeps (METHOD §2) and are labelled as such: Users concurrent
// users each send their next request as soon as the previous one ended,
// from the run's start until Warmup + Duration; requests in flight then run
// to completion. A request belongs to the phase of the moment its user
// sent it: warmup (excluded) before Warmup, Phase after. Its scheduled time
// is that moment, so schedule lag is zero by construction and TTFT from the
// schedule equals TTFT from the send.
type ClosedLoop struct {
	Users    int           `json:"users"`
	Warmup   time.Duration `json:"warmup"`
	Duration time.Duration `json:"duration"`
	Phase    string        `json:"phase"`
}

// closedPlan names the phases of a closed-loop run for the analysis and
// the manifest. It is never scheduled: its arrival process is "closed" and
// its rates are 0.
func closedPlan(cl ClosedLoop) schedule.Plan {
	var p schedule.Plan
	if cl.Warmup > 0 {
		p.Phases = append(p.Phases, schedule.Phase{Name: schedule.PhaseWarmup, Duration: cl.Warmup, Arrival: ArrivalClosed})
	}
	p.Phases = append(p.Phases, schedule.Phase{Name: cl.Phase, Duration: cl.Duration, Arrival: ArrivalClosed})
	return p
}

func (cl *ClosedLoop) phaseAt(t time.Duration) string {
	if t < cl.Warmup {
		return schedule.PhaseWarmup
	}
	return cl.Phase
}

// closedSink labels each record with the phase of its send time.
func closedSink(cl *ClosedLoop, sink loadgen.Sink) loadgen.Sink {
	return func(r *record.Record) {
		r.Phase = cl.phaseAt(time.Duration(r.ScheduledNs))
		sink(r)
	}
}

// runClosed drives the live closed loop for the whole level.
func runClosed(ctx context.Context, d *loadgen.Closed, cl *ClosedLoop) error {
	_, err := d.Run(ctx, cl.Phase, cl.Users, 0, cl.Warmup+cl.Duration, 0)
	return err
}

// vreq follows one request of the virtual closed loop; it is the
// request's sim.Observer.
type vreq struct {
	a        schedule.Arrival
	out      sim.Outcome
	maxTok   int
	user     int
	last     time.Duration
	deadline time.Duration // sim.Never without a timeout
	done     bool
	fin      *[]*vreq // where Finished reports
}

func (q *vreq) Scheduled(now time.Duration) { q.out.AdmittedAt = now }

func (q *vreq) Tokens(now time.Duration, total int) {
	if q.done {
		return
	}
	if total == 1 {
		q.out.FirstTokenAt = now
	} else {
		q.out.MaxGap = max(q.out.MaxGap, now-q.last)
	}
	q.last, q.out.OutputTokens = now, total
}

func (q *vreq) Finished(now time.Duration, res sim.Result) {
	if q.done {
		return
	}
	q.out.DoneAt, q.out.PromptTokens, q.out.FinishReason = now, res.PromptTokens, res.FinishReason
	q.done = true
	*q.fin = append(*q.fin, q)
}

// executeClosedVirtual runs a closed loop against the engine model in
// virtual time: each user submits its next request at the instant its
// previous one ended (closedFailurePause after one that failed at once).
// Timeouts are as in sim.Simulate: a request not complete at send +
// timeout is cancelled then. Mid-stream faults are not modelled here.
func (e *Env) executeClosedVirtual(ctx context.Context, spec Spec, wcfg workload.Config, sink loadgen.Sink, res *Result) error {
	o := &e.Opts
	cl := spec.Closed
	if f := o.Sim; f.FaultReset+f.FaultMalformed+f.FaultStall+f.FaultSlowHeaders > 0 {
		return &ConfigError{errors.New("a closed-loop sweep in virtual time does not model mid-stream faults (--fault-reset, --fault-malformed, --fault-stall, --fault-slow-headers): run it against the HTTP simulator (without --simulate)")}
	}
	if cl.Users < 1 {
		return &ConfigError{errors.New("closed loop: users must be ≥ 1")}
	}
	cluster, err := sim.NewCluster(o.Sim)
	if err != nil {
		return &ConfigError{err}
	}
	gen, err := workload.New(wcfg)
	if err != nil {
		return &ConfigError{err}
	}
	end := cl.Warmup + cl.Duration
	var (
		all    []*vreq
		active []*vreq
		fin    []*vreq
		wakes  []struct {
			at   time.Duration
			user int
		}
		seq int64
	)
	start := func(u int, t time.Duration) {
		if t >= end {
			return
		}
		a := schedule.Arrival{Seq: seq, At: t, Phase: cl.phaseAt(t)}
		seq++
		r := gen.Generate(a)
		q := &vreq{a: a, maxTok: r.MaxTokens, user: u, last: t, deadline: sim.Never, fin: &fin}
		q.out = sim.Outcome{ScheduledAt: t, AdmittedAt: sim.Never, FirstTokenAt: sim.Never, DoneAt: sim.Never, Replica: -1}
		all = append(all, q)
		tk, err := cluster.Submit(t, sim.Request{PromptTokens: r.PromptTokens, MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS}, q)
		q.out.Ticket, q.out.Fault, q.out.Replica = tk, tk.Fault.Kind, tk.Replica
		var qf *sim.QueueFullError
		switch {
		case errors.As(err, &qf):
			q.out.Rejected, q.out.Status, q.out.RetryAfter = true, 429, qf.RetryAfter
		case err != nil:
			q.out.Status, q.out.Replica = 400, -1
		case tk.Fault.Kind == sim.Fault500:
			q.out.Failed, q.out.Status = true, 500
		case tk.Fault.Kind == sim.Fault503:
			q.out.Failed, q.out.Status = true, 503
		default:
			q.out.Status = 200
			if o.Timeout > 0 {
				q.deadline = t + o.Timeout
			}
			active = append(active, q)
			return
		}
		q.out.DoneAt, q.done = t, true
		wakes = append(wakes, struct {
			at   time.Duration
			user int
		}{t + closedFailurePause, u})
	}
	for u := 0; u < cl.Users; u++ {
		start(u, 0)
	}
	var samples []scrape.Sample
	var sampleAt, last time.Duration
	for ctx.Err() == nil {
		t, ok := cluster.NextEvent()
		for _, q := range active {
			if q.deadline != sim.Never && (!ok || q.deadline < t) {
				t, ok = q.deadline, true
			}
		}
		for _, w := range wakes {
			if !ok || w.at < t {
				t, ok = w.at, true
			}
		}
		if !ok {
			break
		}
		if o.ScrapeInterval > 0 && sampleAt < t {
			t = sampleAt
		}
		cluster.Advance(t)
		last = t
		// Completions first, then timeouts, then users waking up.
		var restart []int
		for _, q := range fin {
			restart = append(restart, q.user)
		}
		fin = fin[:0]
		kept := active[:0]
		for _, q := range active {
			if !q.done && q.deadline != sim.Never && q.deadline <= t {
				q.out.TimedOut, q.out.DoneAt, q.done = true, q.deadline, true
				cluster.Cancel(t, q.out.Ticket.ID)
				restart = append(restart, q.user)
			}
			if !q.done {
				kept = append(kept, q)
			}
		}
		active = kept
		for _, u := range restart {
			start(u, t)
		}
		var later []struct {
			at   time.Duration
			user int
		}
		var due []int
		for _, w := range wakes {
			if w.at <= t {
				due = append(due, w.user)
			} else {
				later = append(later, w)
			}
		}
		wakes = later
		for _, u := range due {
			start(u, t)
		}
		if o.ScrapeInterval > 0 && sampleAt <= t {
			samples = append(samples, simSample(sampleAt, cluster.Snapshot(t)))
			sampleAt += o.ScrapeInterval
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.ScrapeInterval > 0 {
		samples = append(samples, simSample(sampleAt, cluster.Snapshot(max(sampleAt, last))))
	}
	arrivals := make([]schedule.Arrival, len(all))
	outs := make([]sim.Outcome, len(all))
	d := o.deadlines()
	for i, q := range all {
		arrivals[i], outs[i] = q.a, q.out
	}
	res.Engine, res.SimEvents = samples, cluster.Events()
	res.EngineQ = virtualQueueStats(spec.Plan.Bounds(), arrivals, outs)
	for i := range all {
		rec := virtualRecord(spec.Name, o.Profile, &arrivals[i], &outs[i], all[i].maxTok, o.Timeout)
		rec.Good = analyze.Judge(&rec, d)
		sink(&rec)
	}
	return nil
}
