package virtual

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// errSessionFaults refuses the faults the session loop does not enact.
var errSessionFaults = errors.New("sessions in virtual time do not model mid-stream faults (--fault-reset, --fault-malformed, --fault-stall, --fault-slow-headers): run them against the HTTP simulator (without --simulate)")

// Sessions runs multi-turn sessions against the engine model in virtual
// time, with the rules of the live session driver (docs/sessions.md): each
// arrival starts a session at its scheduled time; each later turn is
// submitted at the previous turn's end (the latest of its requests) plus a
// think time, with its fan-out sub-requests; a session ends after its last
// turn, after a turn any of whose requests did not end ok, or when its next
// turn would be ready at or after end. A turn's scheduled and sent time is
// its ready time, its phase that of the moment (phases), its seq its
// arrival's for a first turn and the next above the arrivals' otherwise, in
// send order (with Config.Shards, the next that names this shard:
// schedule.LaterSeqs). A request not complete at send + Timeout is cancelled then.
// The client is ideal, as in Open: no in-flight cap, no lag. Mid-stream
// faults are not modelled (a *ConfigError).
//
// With a Stopper (stop may be nil) it is asked as a live run asks it: at
// each whole second from CheckFrom on, with the records of every arrival
// scheduled before the horizon — the first arrival whose session has not
// ended — all finished. When it gives a reason, that moment becomes the
// end: no session starts and no turn is sent from then on.
func Sessions(ctx context.Context, cfg Config, sess *workload.Sessions, arrivals []schedule.Arrival, phases []schedule.PhaseBounds, end time.Duration, stop Stopper) (*Output, error) {
	if f := cfg.Sim; f.FaultReset+f.FaultMalformed+f.FaultStall+f.FaultSlowHeaders > 0 {
		return nil, &ConfigError{errSessionFaults}
	}
	if cfg.Sim.HasGateway() {
		return nil, &ConfigError{errors.New("sessions in virtual time do not model the gateway's quotas (--quota-*): run them against the HTTP simulator (without --simulate)")}
	}
	if sess == nil {
		return nil, &ConfigError{errors.New("virtual: no sessions")}
	}
	cl, err := cfg.cluster()
	if err != nil {
		return nil, err
	}
	r := &sessRun{cfg: &cfg, sess: sess, c: cl, arrivals: arrivals, phases: phases, end: end, stop: stop, checkAt: -1}
	if stop != nil {
		from := stop.CheckFrom()
		r.checkAt = max(from.Truncate(time.Second), time.Second)
		if r.checkAt < from {
			r.checkAt += time.Second
		}
	}
	r.seq, r.step = schedule.LaterSeqs(arrivals, cfg.Shard, cfg.Shards)
	samples, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(r.all, func(a, b *sessReq) int { return cmp.Compare(a.a.Seq, b.a.Seq) })
	b := &batch{arrivals: make([]schedule.Arrival, len(r.all)), outs: make([]sim.Outcome, len(r.all)), tags: make([]tag, len(r.all))}
	for i, q := range r.all {
		b.arrivals[i], b.outs[i], b.tags[i] = q.a, q.out, tagOf(&q.req)
	}
	out := cfg.output(b, samples, cl)
	out.StoppedAt, out.StopWhy = r.stoppedAt, r.stopWhy
	return out, nil
}

// check asks the Stopper at t; on a reason, t becomes the end.
func (r *sessRun) check(t time.Duration) {
	for r.ended < len(r.started) && r.started[r.ended].over {
		r.ended++
	}
	horizon := time.Duration(1<<63 - 1)
	if r.ended < len(r.arrivals) {
		horizon = r.arrivals[r.ended].At
	}
	var recs []record.Record
	for _, q := range r.all {
		if q.a.At < horizon && !q.fed {
			t := tagOf(&q.req)
			rec := r.cfg.record(&q.a, &q.out, &t)
			rec.Good = analyze.Judge(&rec, r.cfg.Deadlines)
			recs = append(recs, rec)
			q.fed = true
		}
	}
	slices.SortFunc(recs, func(a, b record.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range recs {
		r.stop.Add(&recs[i])
	}
	if why := r.stop.Stop(horizon); why != "" {
		r.stoppedAt, r.stopWhy, r.end = t, why, t
		r.stop = nil
		for _, w := range r.wakes {
			w.s.over = true
		}
		r.wakes = r.wakes[:0]
	}
}

// vsession is one session in flight.
type vsession struct {
	conv    *workload.Conversation
	a       schedule.Arrival
	turn    int
	pending int        // requests of the turn still streaming
	reqs    []*sessReq // the turn's requests
	over    bool       // the session has ended
}

// sessReq follows one request of a session; it is its sim.Observer.
type sessReq struct {
	inflight
	a   schedule.Arrival // Seq, ready time and phase
	req workload.Request // labels and max_tokens (messages dropped once sent)
	s   *vsession
	run *sessRun
	fed bool // given to the Stopper
}

func (q *sessReq) Finished(now time.Duration, res sim.Result) {
	if q.finish(now, res) {
		q.run.fin = append(q.run.fin, q)
	}
}

// turnWake is a session whose next turn is ready at a moment.
type turnWake struct {
	at time.Duration
	n  int64 // tie-break: the order the wakes were made
	s  *vsession
}

type wakeHeap []turnWake

func (h wakeHeap) Len() int { return len(h) }
func (h wakeHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].n < h[j].n
}
func (h wakeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)   { *h = append(*h, x.(turnWake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// sessRun is the state of one virtual sessions run.
type sessRun struct {
	cfg      *Config
	sess     *workload.Sessions
	c        *sim.Cluster
	arrivals []schedule.Arrival
	phases   []schedule.PhaseBounds
	end      time.Duration

	next   int   // arrivals[:next] have started their session
	seq    int64 // the next seq of a later turn or sub-request
	step   int64 // between those seqs (schedule.LaterSeqs)
	all    []*sessReq
	active []*sessReq
	fin    []*sessReq
	wakes  wakeHeap
	nwake  int64

	started   []*vsession // by arrival, in arrival order
	ended     int         // started[:ended] are all over
	stop      Stopper
	checkAt   time.Duration // the next question to stop; -1 = none
	stoppedAt time.Duration
	stopWhy   string
	blocks    []uint64 // block hashes of the request being submitted (prefix cache)
}

func (r *sessRun) run(ctx context.Context) ([]scrape.Sample, error) {
	every := r.cfg.ScrapeInterval
	var samples []scrape.Sample
	var sampleAt, last time.Duration
	for ctx.Err() == nil {
		t, ok := r.nextAt()
		if !ok {
			break
		}
		if every > 0 && sampleAt < t {
			t = sampleAt
		}
		r.c.Advance(t)
		last = t
		// Completions first, then timeouts, then turns due.
		var ended []*sessReq
		ended = append(ended, r.fin...)
		r.fin = r.fin[:0]
		kept := r.active[:0]
		for _, q := range r.active {
			if q.timeOut(t) {
				r.c.Cancel(t, q.out.Ticket.ID)
				ended = append(ended, q)
			}
			if !q.done {
				kept = append(kept, q)
			}
		}
		r.active = kept
		for _, q := range ended {
			if q.s.pending--; q.s.pending == 0 {
				r.turnDone(q.s, t)
			}
		}
		for ; r.next < len(r.arrivals) && r.arrivals[r.next].At <= t && r.arrivals[r.next].At < r.end; r.next++ {
			a := r.arrivals[r.next]
			s := &vsession{conv: r.sess.Start(a), a: a, turn: 1}
			r.started = append(r.started, s)
			r.send(s, a.At)
		}
		for len(r.wakes) > 0 && r.wakes[0].at <= t {
			w := heap.Pop(&r.wakes).(turnWake)
			r.send(w.s, w.at)
		}
		if r.stop != nil && r.checkAt == t {
			r.check(t)
			r.checkAt += time.Second
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

// nextAt is the moment of the next thing to happen: an engine event, a
// deadline, an arrival or a turn becoming ready; false when nothing is left.
func (r *sessRun) nextAt() (time.Duration, bool) {
	t, ok := r.c.NextEvent()
	earlier := func(x time.Duration) {
		if !ok || x < t {
			t, ok = x, true
		}
	}
	for _, q := range r.active {
		if q.deadline != sim.Never {
			earlier(q.deadline)
		}
	}
	if r.next < len(r.arrivals) && r.arrivals[r.next].At < r.end {
		earlier(r.arrivals[r.next].At)
	}
	if len(r.wakes) > 0 {
		earlier(r.wakes[0].at)
	}
	if r.stop != nil && r.checkAt < r.end && ok {
		earlier(r.checkAt)
	}
	return t, ok
}

// turnDone moves session s on after its turn ended at t: the next turn at
// t + think time, unless the turn failed, it was the last or the next one
// would be ready at or after the end.
func (r *sessRun) turnDone(s *vsession, t time.Duration) {
	s.over = true
	for _, q := range s.reqs {
		if q.out.Status != http.StatusOK || q.out.TimedOut || q.out.Rejected || q.out.Failed {
			return
		}
	}
	s.conv.Answered(s.turn, s.reqs[0].out.OutputTokens)
	if s.turn >= s.conv.Turns() {
		return
	}
	s.turn++
	ready := t + s.conv.Think(s.turn)
	if ready >= r.end {
		return
	}
	s.over = false
	r.nwake++
	heap.Push(&r.wakes, turnWake{at: ready, n: r.nwake, s: s})
}

// send submits the requests of session s's current turn at t.
func (r *sessRun) send(s *vsession, t time.Duration) {
	reqs := s.conv.Turn(s.turn)
	s.reqs, s.pending = s.reqs[:0], 0
	phase := s.a.Phase
	if s.turn > 1 {
		phase = schedule.PhaseNameAt(r.phases, t)
	}
	for i := range reqs {
		seq := s.a.Seq
		if s.turn > 1 || i > 0 {
			seq = r.seq
			r.seq += r.step
		}
		req := reqs[i]
		sr := sim.Request{PromptTokens: r.cfg.promptTokens(&req), MaxTokens: req.MaxTokens, IgnoreEOS: req.IgnoreEOS, PrefillOnly: req.Inputs != nil}
		if r.cfg.prefixCache() {
			// Hashed at submit, from the messages about to be dropped; the
			// engine keeps its copy until the prefill is done.
			r.blocks = r.cfg.Blocks(&req, r.blocks[:0])
			sr.Blocks = r.blocks
		}
		req.Seq, req.Messages, req.Prompt = seq, nil, ""
		q := &sessReq{inflight: inflight{last: t, deadline: sim.Never}, a: schedule.Arrival{Seq: seq, At: t, Phase: phase}, req: req, s: s, run: r}
		q.out = sim.Outcome{ScheduledAt: t, AdmittedAt: sim.Never, FirstTokenAt: sim.Never, DoneAt: sim.Never, Replica: -1}
		r.all = append(r.all, q)
		s.reqs = append(s.reqs, q)
		tk, err := r.c.Submit(t, sr, q)
		q.out.Ticket, q.out.Fault, q.out.Replica = tk, tk.Fault.Kind, tk.Replica
		var qf *sim.QueueFullError
		switch {
		case errors.As(err, &qf):
			q.out.Rejected, q.out.Status, q.out.RetryAfter = true, http.StatusTooManyRequests, qf.RetryAfter
		case err != nil:
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
			s.pending++
			continue
		}
		q.out.DoneAt, q.done = t, true
	}
	if s.pending == 0 { // every request failed at once
		r.turnDone(s, t)
	}
}
