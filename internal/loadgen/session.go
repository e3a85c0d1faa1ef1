package loadgen

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// Conversation is one multi-turn session as the session driver sees it
// (workload.Conversation is one). The driver calls it from the session's
// own goroutine only.
type Conversation interface {
	// Turns is the number of turns the session is planned to have (≥ 1).
	Turns() int
	// Turn returns the requests of turn (1-based): the turn itself first,
	// then its fan-out sub-requests, all sent at once.
	Turn(turn int) []workload.Request
	// Answered tells the conversation that turn ended ok with the
	// server's count of output tokens, before the next turn is built.
	Answered(turn, outputTokens int)
	// Think draws the think time before turn (≥ 2).
	Think(turn int) time.Duration
}

// SessionFunc starts the session of an arrival.
type SessionFunc func(a *schedule.Arrival) Conversation

// SessionPlan is what the session driver needs of the plan.
type SessionPlan struct {
	// Phases label each later turn by the phase of the moment it became
	// ready (a first turn carries its arrival's phase).
	Phases []schedule.PhaseBounds
	// End is the plan's end: a turn that becomes ready at or after it is
	// not sent, and its session ends there (cut).
	End time.Duration
	// Ended, when set, is called once per session as it ends, with its
	// arrival's seq and the number of records it produced (each reaches
	// the sink before Ended is called).
	Ended func(seq int64, records int)
	// Shard and Shards are this generator's share of the schedule
	// (--shard I/N): the arrivals are those whose Seq mod Shards is Shard,
	// and later turns and sub-requests take the seqs schedule.LaterSeqs
	// gives, unique across the generators. Zero Shards is one process.
	Shard, Shards int
}

// Sessions is the session driver: each scheduled arrival starts a session
// on schedule, whatever the target does (open loop at the session level);
// inside a session each turn is sent when the previous turn has been
// answered and a think time has passed (closed loop by nature).
//
//	turn 1 ready = the arrival's scheduled time
//	turn k ready = done of turn k−1 (the latest of its requests) + think time
//
// A turn's records carry ScheduledNs = its ready time and the phase of
// that moment, so schedule lag and TTFT from schedule mean for a turn what
// they mean for an arrival. The first turn's record takes its arrival's
// Seq (Seq ↔ arrival holds for first turns); every later turn and every
// fan-out sub-request takes the next Seq above the arrivals', in the order
// they are sent — with shards (SessionPlan.Shards), the next above them
// that names this shard (schedule.LaterSeqs), so that no two shards send
// the same Seq.
//
// A session ends after its last turn; after a turn any of whose requests
// did not end ok (an error, a timeout, a generator_drop at the in-flight
// cap: the conversation cannot go on without its answer); when its next
// turn would become ready at or after the plan's end (SessionPlan.End) or
// after Stop; and on Ctrl-C (requests in flight end as cancelled, turns
// not yet ready get no record). A cut session is visible in its records:
// fewer turns than their SessionTurns.
type Sessions struct {
	pacer
	cfg    Config
	target Target
	start  SessionFunc
	sink   Sink
	seq    atomic.Int64 // the next later seq
	step   int64        // between later seqs: 1, or the number of shards

	// Counters are updated as the run goes (every turn and sub-request
	// counts as an arrival).
	Counters Counters
}

// NewSessions returns a session driver.
func NewSessions(cfg Config, origin time.Time, t Target, start SessionFunc, sink Sink) *Sessions {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	return &Sessions{pacer: newPacer(origin, cfg.Spin), cfg: cfg, target: t, start: start, sink: sink}
}

// Stop ends the run early: no session starts and no turn is sent after
// this moment; requests in flight run to completion.
func (s *Sessions) Stop() { s.halt() }

// Run starts a session for each arrival (sorted by At) on schedule and
// returns when every session has ended. Cancelling ctx stops everything
// and cancels the requests in flight; Run still waits for their records.
func (s *Sessions) Run(ctx context.Context, arrivals []schedule.Arrival, plan SessionPlan) error {
	next, step := schedule.LaterSeqs(arrivals, plan.Shard, plan.Shards)
	s.seq.Store(next)
	s.step = step
	var wg sync.WaitGroup
	s.pace(ctx, arrivals, func(a *schedule.Arrival) {
		wg.Add(1)
		go s.session(ctx, &wg, *a, &plan)
	})
	wg.Wait()
	return ctx.Err()
}

func (s *Sessions) session(ctx context.Context, wg *sync.WaitGroup, a schedule.Arrival, plan *SessionPlan) {
	defer wg.Done()
	conv := s.start(&a)
	records := 0
	if plan.Ended != nil {
		defer func() { plan.Ended(a.Seq, records) }()
	}
	ready, phase := a.At, a.Phase
	for turn := 1; ; turn++ {
		recs := s.turn(ctx, conv, turn, &a, ready, phase)
		records += len(recs)
		last := int64(0)
		for i := range recs {
			if recs[i].Outcome != record.OK {
				return
			}
			last = max(last, recs[i].DoneNs)
		}
		conv.Answered(turn, recs[0].OutputTokens)
		if turn >= conv.Turns() {
			return
		}
		ready = time.Duration(last) + conv.Think(turn+1)
		if ready >= plan.End {
			return
		}
		if s.sleepUntil(ctx, s.origin.Add(ready)) != nil || s.stopped() {
			return
		}
		phase = schedule.PhaseNameAt(plan.Phases, ready)
	}
}

// turn sends the requests of one turn at once and returns their finished
// records (each already handed to the sink).
func (s *Sessions) turn(ctx context.Context, conv Conversation, turn int, a *schedule.Arrival, ready time.Duration, phase string) []record.Record {
	reqs := conv.Turn(turn)
	recs := make([]record.Record, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		seq := a.Seq
		if turn > 1 || i > 0 {
			seq = s.seq.Add(s.step) - s.step
		}
		req, rec := &reqs[i], &recs[i]
		req.Seq = seq
		*rec = record.New(requestID(s.cfg.RunID, seq), seq, phase, int64(ready))
		rec.Profile = s.cfg.Profile
		rec.MaxTokens = req.MaxTokens
		req.Label(rec)
		s.Counters.Offered.Add(1)
		n := s.Counters.InFlight.Add(1)
		if n > int64(s.cfg.MaxInFlight) {
			s.Counters.InFlight.Add(-1)
			rec.Outcome = record.GeneratorDrop
			rec.Error = "in-flight cap " + strconv.Itoa(s.cfg.MaxInFlight) + " reached"
			s.Counters.Dropped.Add(1)
			s.sink(rec)
			continue
		}
		s.Counters.notePeak(n) // only a request that is sent counts
		send := func() {
			s.Counters.Sent.Add(1)
			s.target.Do(ctx, req, rec)
			s.Counters.InFlight.Add(-1)
			finish(&s.cfg, &s.Counters, rec)
			s.sink(rec)
		}
		if i == len(reqs)-1 {
			send() // the last on the session's goroutine: one goroutine fewer
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); send() }()
	}
	wg.Wait()
	return recs
}
