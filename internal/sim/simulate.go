package sim

import (
	"errors"
	"net/http"
	"slices"
	"time"
)

// Arrival is one request submitted at At (virtual time) by Simulate.
type Arrival struct {
	At  time.Duration
	Req Request
}

// Outcome is what a client would have observed of one arrival in Simulate.
// Times are on the virtual clock; Never marks a boundary not reached.
type Outcome struct {
	Ticket     Ticket
	Rejected   bool          // 429 from admission control
	RetryAfter time.Duration // the 429's retry hint
	Failed     bool          // answered 500 or 503 (fault injection)
	// Status is the HTTP status the client saw: 200 for a stream (headers
	// go out on arrival, or Delay later with slow headers), 400, 429, 500
	// or 503; 0 if it timed out before the headers.
	Status int
	// StreamFailed is set when the stream broke: a reset or a malformed
	// chunk at Ticket.Fault.AtToken (the tokens before it were delivered).
	StreamFailed bool
	Fault        FaultKind // fault applied (FaultNone for a normal request)
	TimedOut     bool      // cancelled at ScheduledAt + timeout

	ScheduledAt  time.Duration // the arrival time
	AdmittedAt   time.Duration // entered the running batch
	FirstTokenAt time.Duration // first token as the client saw it
	DoneAt       time.Duration // completion, failure or timeout as the client saw it
	OutputTokens int           // tokens the client received
	PromptTokens int           // prompt tokens (usage), for requests that ran
	CachedTokens int           // of PromptTokens, served from the prefix cache
	FinishReason string        // "stop" or "length" for complete responses
	MaxGap       time.Duration // longest gap between consecutive tokens; 0 with < 2 tokens
	Replica      int           // replica that served (or refused) it

	// The gateway's part (Config.HasGateway): Throttled is a 429 from the
	// gateway (over quota, its queue full or none), GatewayWait the time
	// the request waited in its queue, Quota its buckets after the
	// request, as the rate-limit headers say them.
	Throttled   bool
	GatewayWait time.Duration
	Quota       Admission
}

// simReq follows one arrival through Simulate; it is its Observer.
type simReq struct {
	st       *simState
	o        *Outcome
	deadline time.Duration // Never without a timeout
	floor    time.Duration // tokens are not visible to the client before this
	last     time.Duration // last visible token
	inEngine bool
	resolved bool
	gated    bool // waited at the gateway: counted unresolved from its arrival
}

type simState struct {
	c          *Cluster
	gw         *Gateway // nil: no gateway
	unresolved int
	buf        []uint64 // block hashes of the arrival being submitted
}

// BlocksFunc appends the prefix-cache block hashes (PrefixHasher) of
// arrival i's prompt to dst and returns the result.
type BlocksFunc func(i int, dst []uint64) []uint64

func (q *simReq) Scheduled(now time.Duration) { q.o.AdmittedAt = now }

func (q *simReq) Tokens(now time.Duration, total int) {
	if q.resolved {
		return
	}
	f := q.o.Ticket.Fault
	if (f.Kind == FaultReset || f.Kind == FaultMalformed) && total >= f.AtToken {
		q.o.StreamFailed = true
		q.o.DoneAt = now
		q.resolve()
		q.inEngine = false
		q.st.c.Cancel(now, q.o.Ticket.ID)
		return
	}
	if f.Kind == FaultStall && total == f.AtToken {
		q.floor = max(q.floor, now+f.Delay)
	}
	vt := max(now, q.floor)
	if q.deadline != Never && vt > q.deadline {
		return // the timeout will end it
	}
	if total == 1 {
		q.o.FirstTokenAt = vt
	} else {
		q.o.MaxGap = max(q.o.MaxGap, vt-q.last)
	}
	q.last = vt
	q.o.OutputTokens = total
}

func (q *simReq) Finished(now time.Duration, res Result) {
	q.inEngine = false
	if q.resolved {
		return
	}
	q.o.PromptTokens, q.o.CachedTokens = res.PromptTokens, res.CachedTokens
	vt := max(now, q.floor)
	if q.deadline != Never && vt > q.deadline {
		return
	}
	q.o.DoneAt = vt
	q.o.FinishReason = res.FinishReason
	q.resolve()
}

func (q *simReq) resolve() {
	q.resolved = true
	q.st.unresolved--
}

// timeout ends the request at its deadline d.
func (q *simReq) timeout(d time.Duration) {
	q.o.TimedOut = true
	q.o.DoneAt = d
	if q.o.Fault == FaultSlowHeaders && q.floor > d {
		q.o.Status = 0 // no headers yet
	}
	if q.inEngine {
		q.inEngine = false
		q.st.c.Cancel(d, q.o.Ticket.ID)
	}
	q.resolve()
}

// Simulate runs arrivals (sorted by At; it panics otherwise) through c in virtual time with no
// goroutines and returns one Outcome per arrival, in arrival order.
//
// A request whose completion (as the client sees it) would come after
// At + timeout (timeout > 0) is cancelled at that instant and reported
// TimedOut. Every sampleEvery (> 0, starting at 0, and once more after the
// last event) it calls onSample(t, c.Snapshot(t)); onSample may be nil.
//
// Faults are enacted as a client sees them: 500/503 fail at once; a reset
// or malformed chunk at token k delivers k−1 tokens, then the stream fails
// and the request is cancelled in the engine; a stall delays token k and
// every later token until Delay after token k was generated; slow headers
// hold every token until At + Delay. At equal times, engine events come
// first, then timeouts, then arrivals, then the sample.
func Simulate(c *Cluster, arrivals []Arrival, timeout, sampleEvery time.Duration, onSample func(time.Duration, Snapshot)) []Outcome {
	return SimulateBlocks(c, arrivals, nil, timeout, sampleEvery, onSample)
}

// SimulateBlocks is Simulate with the prompts' prefix-cache block hashes
// made by blocks (nil: none) as each arrival is submitted, into one
// reused buffer, so that a run of a million requests never holds them all.
func SimulateBlocks(c *Cluster, arrivals []Arrival, blocks BlocksFunc, timeout, sampleEvery time.Duration, onSample func(time.Duration, Snapshot)) []Outcome {
	for i := 1; i < len(arrivals); i++ {
		if arrivals[i].At < arrivals[i-1].At {
			panic("sim: Simulate: arrivals not sorted by At")
		}
	}
	out := make([]Outcome, len(arrivals))
	next := func(i int) (Arrival, bool) {
		if i < len(arrivals) {
			return arrivals[i], true
		}
		return Arrival{}, false
	}
	SimulateStream(c, next, blocks, timeout, sampleEvery, onSample, func(i int, o *Outcome) bool { out[i] = *o; return true })
	return out
}

// SimulateStream is SimulateBlocks over arrivals made one at a time:
// next(i) returns arrival i (i = 0, 1, …, sorted by At; it panics
// otherwise) until it returns false, and is called only when the
// simulation reaches the previous arrival's time. emit(i, o) receives each
// arrival's Outcome in arrival order, as soon as it and every earlier one
// are final; when emit returns false the simulation stops there. What it
// holds is the arrivals from the oldest not yet final to the latest
// submitted — the requests in flight — never the whole run, so a run of
// any length takes the memory of its concurrency. Outcomes are those
// Simulate returns, event for event.
func SimulateStream(c *Cluster, next func(i int) (Arrival, bool), blocks BlocksFunc, timeout, sampleEvery time.Duration, onSample func(time.Duration, Snapshot), emit func(i int, o *Outcome) bool) {
	st := &simState{c: c, gw: NewGateway(c.cfg)}
	sampleAt := Never
	if sampleEvery > 0 && onSample != nil {
		sampleAt = 0
	}
	// win holds arrivals base, base+1, …, n−1 (submitted, not yet
	// emitted); dl is the oldest arrival whose deadline may be pending.
	type slot struct {
		q  simReq
		o  Outcome
		at time.Duration
	}
	var win []*slot
	// held are the arrivals waiting at the gateway, in release order.
	type hold struct {
		s   *slot
		req Request
		at  time.Duration
	}
	var held []hold
	head, base, n, dl := 0, 0, 0, 0
	get := func(i int) *slot { return win[head+i-base] }
	pend, more := next(0)
	t := time.Duration(0)
	for {
		for dl < n && get(dl).q.resolved {
			dl++
		}
		// Final outcomes go out in order; a resolved request is never
		// touched again (its observer ignores late engine events).
		for base < dl {
			s := get(base)
			win[head] = nil
			head++
			base++
			if !emit(base-1, &s.o) {
				return
			}
		}
		if head > 1024 && head > len(win)/2 {
			win = append(win[:0], win[head:]...)
			head = 0
		}
		work, ok := c.NextEvent()
		if more && (!ok || pend.At < work) {
			work, ok = pend.At, true
		}
		if timeout > 0 && dl < n {
			if d := get(dl).at + timeout; !ok || d < work {
				work, ok = d, true
			}
		}
		if len(held) > 0 && (!ok || held[0].at < work) {
			work, ok = held[0].at, true
		}
		if !ok {
			break
		}
		t = max(work, t)
		if sampleAt != Never && sampleAt < t {
			t = sampleAt
		}
		c.Advance(t)
		for timeout > 0 && dl < n && get(dl).at+timeout <= t {
			if s := get(dl); !s.q.resolved {
				s.q.timeout(s.at + timeout)
			}
			dl++
		}
		for len(held) > 0 && held[0].at <= t {
			h := held[0]
			held = held[1:]
			if !h.s.q.resolved { // else it timed out at the gateway
				st.enter(&h.s.q, &h.s.o, h.req, h.at)
			}
		}
		for more && pend.At <= t {
			a := pend
			if blocks != nil && c.cfg.PrefixCache() {
				st.buf = blocks(n, st.buf[:0])
				a.Req.Blocks = st.buf
			}
			s := &slot{at: a.At}
			win = append(win, s)
			if release := st.submit(&s.q, &s.o, a, timeout); release > a.At {
				a.Req.Blocks = slices.Clone(a.Req.Blocks) // st.buf is the next arrival's
				held = append(held, hold{s, a.Req, release})
			}
			n++
			if pend, more = next(n); more && pend.At < a.At {
				panic("sim: Simulate: arrivals not sorted by At")
			}
		}
		if sampleAt != Never && sampleAt <= t {
			onSample(sampleAt, c.Snapshot(t))
			sampleAt += sampleEvery
		}
	}
	if sampleAt != Never {
		onSample(sampleAt, c.Snapshot(max(sampleAt, t)))
	}
	for base < n {
		s := get(base)
		base++
		if !emit(base-1, &s.o) {
			return
		}
	}
}

// submit starts arrival a: through the gateway, if there is one, and
// into the engine. It returns when the request enters the engine: a.At,
// or later when it waits at the gateway (the caller then calls enter at
// that time).
func (st *simState) submit(q *simReq, o *Outcome, a Arrival, timeout time.Duration) time.Duration {
	*o = Outcome{ScheduledAt: a.At, AdmittedAt: Never, FirstTokenAt: Never, DoneAt: Never, Replica: -1}
	*q = simReq{st: st, o: o, deadline: Never, floor: a.At}
	if timeout > 0 {
		q.deadline = a.At + timeout
	}
	if st.gw != nil {
		if st.c.cfg.CheckRequest(a.Req) == nil { // an invalid request is the engine's 400
			o.Quota = st.gw.Admit(a.At, st.c.cfg.Cost(a.Req))
		}
		switch adm := &o.Quota; {
		case adm.Refused:
			o.Rejected, o.Throttled, o.Status, o.RetryAfter, o.DoneAt = true, true, http.StatusTooManyRequests, adm.RetryAfter, a.At
			q.resolved = true
			return a.At
		case adm.Release > a.At:
			o.GatewayWait, q.floor, q.gated = adm.Release-a.At, adm.Release, true
			st.unresolved++
			return adm.Release
		}
	}
	st.enter(q, o, a.Req, a.At)
	return a.At
}

// enter submits the request to the engine at now.
func (st *simState) enter(q *simReq, o *Outcome, r Request, now time.Duration) {
	tk, err := st.c.Submit(now, r, q)
	o.Ticket, o.Fault, o.Replica = tk, tk.Fault.Kind, tk.Replica
	var qf *QueueFullError
	switch {
	case errors.As(err, &qf):
		o.Rejected, o.Status, o.RetryAfter, o.DoneAt = true, http.StatusTooManyRequests, qf.RetryAfter, now
		q.end()
	case err != nil: // invalid request
		o.Status, o.DoneAt, o.Replica = http.StatusBadRequest, now, -1
		q.end()
	case tk.Fault.Kind == Fault500 || tk.Fault.Kind == Fault503:
		o.Failed, o.DoneAt = true, now
		o.Status = http.StatusInternalServerError
		if tk.Fault.Kind == Fault503 {
			o.Status = http.StatusServiceUnavailable
		}
		q.end()
	default:
		o.Status = http.StatusOK
		q.inEngine = true
		if tk.Fault.Kind == FaultSlowHeaders {
			q.floor = now + tk.Fault.Delay
		}
		if !q.gated {
			st.unresolved++
		}
	}
}

// end resolves a request that never ran in the engine: one that waited
// at the gateway was counted unresolved from its arrival.
func (q *simReq) end() {
	if q.gated {
		q.resolve()
		return
	}
	q.resolved = true
}
