// Package loadgen drives a Target with open-loop arrivals (the default),
// multi-turn sessions started by open-loop arrivals (Sessions, see
// session.go), or closed-loop users (for concurrency sweeps only), and
// never hides its own failures.
//
// Open loop: every arrival time is fixed before the run starts (package
// schedule). The driver sleeps until the absolute time of the next arrival
// — never a relative sleep, so timer error does not accumulate — and then
// sends every arrival that is due. Each record carries both the scheduled
// and the actual send time; their difference is the schedule lag, and a lag
// that persists or grows means the generator fell behind.
//
// In-flight cap: an arrival that finds MaxInFlight requests already in
// flight is recorded as generator_drop at its scheduled time and is never
// sent late. Delaying it instead would let a slow target throttle its own
// load (coordinated omission).
//
// Every scheduled arrival whose time has come gets exactly one record, also
// when the run is interrupted: requests in flight at that moment end as
// cancelled, and arrivals not yet due get no record at all.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// DefaultMaxInFlight is the default in-flight cap: generous, so that it only
// bites when the target has effectively stopped answering.
const DefaultMaxInFlight = 10000

// Target performs one request. It fills rec's timestamps (ns since the run
// origin), status, outcome and token counts. It must honour ctx: when ctx is
// cancelled it returns promptly with the outcome cancelled.
type Target interface {
	Do(ctx context.Context, req *workload.Request, rec *record.Record)
}

// RequestFunc builds the request for an arrival. It runs on the request's
// own goroutine, so building a prompt does not delay the dispatcher.
type RequestFunc func(a *schedule.Arrival) workload.Request

// Sink receives every finished record. It is called from many goroutines at
// once and must be safe for that.
type Sink func(rec *record.Record)

// Config tunes a driver. The zero value means the defaults.
type Config struct {
	// MaxInFlight caps requests in flight; 0 means DefaultMaxInFlight.
	MaxInFlight int
	// Spin, when > 0, sleeps until Spin before each arrival and then spins
	// on the clock, for sub-millisecond send precision at the cost of a core.
	Spin time.Duration
	// RunID prefixes request ids ("<run>-<seq>").
	RunID string
	// Profile is copied into each record.
	Profile string
	// ProfileOf, when set, names the profile of an arrival instead of
	// Profile, so that an arrival dropped by the in-flight cap (never
	// built) carries the profile it would have had (a mix's choice). It
	// must be safe for concurrent use. A sent request's own label wins.
	ProfileOf func(*schedule.Arrival) string
	// Judge, when set, decides each finished record's Good flag (the
	// per-request deadline) before the record reaches the sink.
	Judge func(*record.Record) bool
	// Admit, when set, is asked before each arrival is offered (open
	// loop) or each request is built (closed loop); false ends the
	// schedule there, as Stop does: that arrival and every later one get
	// no record, and a closed-loop user sends no more. A budget's check
	// (package run). It must be safe for concurrent use.
	Admit func(a *schedule.Arrival) bool
}

// Counters are live totals, safe to read while a run goes.
type Counters struct {
	Offered   atomic.Int64 // arrivals whose scheduled time has come
	Sent      atomic.Int64 // handed to the target
	Completed atomic.Int64 // records finished (any outcome except drop)
	OK        atomic.Int64 // finished with outcome ok
	Cancelled atomic.Int64 // finished with outcome cancelled (an interrupt, not the target failing)
	Good      atomic.Int64 // finished within the per-request deadline
	Dropped   atomic.Int64 // generator_drop
	InFlight  atomic.Int64 // sent, not finished
	LagMaxNs  atomic.Int64 // largest schedule lag seen so far
	// PeakInFlight is the most requests in flight at once so far: what
	// the client held open (the self-accuracy section reports it).
	PeakInFlight atomic.Int64
}

// enter counts one more request in flight, and the peak; it returns the
// number in flight.
func (c *Counters) enter() int64 {
	n := c.InFlight.Add(1)
	c.notePeak(n)
	return n
}

// notePeak raises PeakInFlight to n.
func (c *Counters) notePeak(n int64) {
	for {
		peak := c.PeakInFlight.Load()
		if n <= peak || c.PeakInFlight.CompareAndSwap(peak, n) {
			return
		}
	}
}

func (c *Counters) noteLag(lag int64) {
	for {
		cur := c.LagMaxNs.Load()
		if lag <= cur || c.LagMaxNs.CompareAndSwap(cur, lag) {
			return
		}
	}
}

// pacer sends arrivals at their absolute times; Open and Sessions share it.
type pacer struct {
	origin time.Time
	spin   time.Duration
	stop   chan struct{}
	once   sync.Once
}

func newPacer(origin time.Time, spin time.Duration) pacer {
	return pacer{origin: origin, spin: spin, stop: make(chan struct{})}
}

func (p *pacer) halt() { p.once.Do(func() { close(p.stop) }) }

// stopped reports whether halt was called.
func (p *pacer) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// pace calls fn for every arrival (sorted by At) at its time, until the
// arrivals end, ctx is cancelled or halt is called. Interrupted or
// stopped while the generator may be behind, it still calls fn for the
// arrivals whose time has already come (sent with a cancelled context
// after Ctrl-C, they end as cancelled at once).
func (p *pacer) pace(ctx context.Context, arrivals []schedule.Arrival, fn func(*schedule.Arrival)) {
	due := func(i *int) {
		now := time.Since(p.origin)
		for ; *i < len(arrivals) && arrivals[*i].At <= now; *i++ {
			fn(&arrivals[*i])
		}
	}
	for i := 0; i < len(arrivals); {
		if p.sleepUntil(ctx, p.origin.Add(arrivals[i].At)) != nil || p.stopped() {
			due(&i)
			return
		}
		due(&i)
	}
}

// Open is the open-loop driver.
type Open struct {
	pacer
	cfg    Config
	target Target
	build  RequestFunc
	sink   Sink

	// Counters are updated as the run goes.
	Counters Counters
}

// Stop ends the schedule early: no arrival after this moment is sent or
// recorded, while requests already in flight run to completion. It is how an
// experiment ends a recovery phase once the target has recovered.
func (o *Open) Stop() { o.halt() }

// NewOpen returns an open-loop driver; times are measured from origin,
// which must be the same origin the target uses.
func NewOpen(cfg Config, origin time.Time, t Target, build RequestFunc, sink Sink) *Open {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	return &Open{pacer: newPacer(origin, cfg.Spin), cfg: cfg, target: t, build: build, sink: sink}
}

// Run sends arrivals (sorted by At) on schedule and returns when every
// request it sent has finished. Cancelling ctx stops the schedule and
// cancels the requests in flight; Run still waits for their records.
// It returns ctx's error if the run was interrupted.
func (o *Open) Run(ctx context.Context, arrivals []schedule.Arrival) error {
	var wg sync.WaitGroup
	o.pace(ctx, arrivals, func(a *schedule.Arrival) { o.dispatch(ctx, &wg, a) })
	wg.Wait()
	return ctx.Err()
}

func (o *Open) dispatch(ctx context.Context, wg *sync.WaitGroup, a *schedule.Arrival) {
	if o.cfg.Admit != nil && !o.cfg.Admit(a) {
		o.halt()
		return
	}
	o.Counters.Offered.Add(1)
	if o.Counters.InFlight.Load() >= int64(o.cfg.MaxInFlight) {
		rec := o.newRecord(a)
		rec.Outcome = record.GeneratorDrop
		rec.Error = "in-flight cap " + strconv.Itoa(o.cfg.MaxInFlight) + " reached"
		o.Counters.Dropped.Add(1)
		o.sink(&rec)
		return
	}
	o.Counters.enter()
	wg.Add(1)
	go func() {
		defer wg.Done()
		rec := o.newRecord(a)
		req := o.build(a)
		rec.MaxTokens = req.MaxTokens
		req.Label(&rec)
		o.Counters.Sent.Add(1)
		o.target.Do(ctx, &req, &rec)
		o.finish(&rec)
	}()
}

func (o *Open) newRecord(a *schedule.Arrival) record.Record {
	rec := record.New(requestID(o.cfg.RunID, a.Seq), a.Seq, a.Phase, int64(a.At))
	rec.Profile = o.cfg.Profile
	if o.cfg.ProfileOf != nil {
		rec.Profile = o.cfg.ProfileOf(a)
	}
	return rec
}

func (o *Open) finish(rec *record.Record) {
	o.Counters.InFlight.Add(-1)
	finish(&o.cfg, &o.Counters, rec)
	o.sink(rec)
}

func finish(cfg *Config, c *Counters, rec *record.Record) {
	c.Completed.Add(1)
	if cfg.Judge != nil {
		rec.Good = cfg.Judge(rec)
	}
	if rec.Good {
		c.Good.Add(1)
	}
	switch rec.Outcome {
	case record.OK:
		c.OK.Add(1)
	case record.Cancelled:
		c.Cancelled.Add(1)
	}
	if lag := rec.Lag(); lag != record.None {
		c.noteLag(lag)
	}
}

var errStopped = errors.New("loadgen: stopped")

// sleepUntil waits until t on the monotonic clock, or until ctx is done
// or halt is called.
func (p *pacer) sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if p.spin > 0 {
		d -= p.spin
	}
	if d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-p.stop:
			timer.Stop()
			return errStopped
		case <-timer.C:
		}
	}
	if p.spin > 0 {
		for time.Now().Before(t) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Let the request goroutines run: on one core a bare spin
			// starves them (measured: lag p99 22–30 ms instead of ~3 ms).
			runtime.Gosched()
		}
	}
	return ctx.Err()
}

func requestID(run string, seq int64) string {
	if run == "" {
		return strconv.FormatInt(seq, 10)
	}
	return run + "-" + strconv.FormatInt(seq, 10)
}

// Closed is the closed-loop driver: Users concurrent users, each sending
// its next request as soon as its previous one finished, for Duration. It
// exists for concurrency sweeps and its records say so: the phase is the
// caller's label (e.g. "c16") and the scheduled time of each request is the
// moment its user was ready to send, so schedule lag is ~0 by construction
// and TTFT-from-schedule equals TTFT-from-send.
type Closed struct {
	cfg    Config
	target Target
	build  RequestFunc
	sink   Sink
	origin time.Time

	// Counters are updated as the run goes.
	Counters Counters
}

// NewClosed returns a closed-loop driver.
func NewClosed(cfg Config, origin time.Time, t Target, build RequestFunc, sink Sink) *Closed {
	return &Closed{cfg: cfg, target: t, build: build, sink: sink, origin: origin}
}

// Run starts users at offset start (since origin) and stops starting new
// requests at start+d; it returns when every user's last request finished.
// seq numbers begin at firstSeq; it returns the next free seq.
func (c *Closed) Run(ctx context.Context, phase string, users int, start, d time.Duration, firstSeq int64) (int64, error) {
	if users < 1 {
		return firstSeq, fmt.Errorf("loadgen: closed loop: users must be ≥ 1, got %d", users)
	}
	var seq atomic.Int64
	seq.Store(firstSeq)
	end := start + d
	var wg sync.WaitGroup
	for u := 0; u < users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				now := time.Since(c.origin)
				if now >= end {
					return
				}
				a := schedule.Arrival{Seq: seq.Add(1) - 1, At: now, Phase: phase}
				if c.cfg.Admit != nil && !c.cfg.Admit(&a) {
					return
				}
				rec := record.New(requestID(c.cfg.RunID, a.Seq), a.Seq, phase, int64(now))
				rec.Profile = c.cfg.Profile
				req := c.build(&a)
				rec.MaxTokens = req.MaxTokens
				req.Label(&rec)
				c.Counters.Offered.Add(1)
				c.Counters.Sent.Add(1)
				c.Counters.enter()
				c.target.Do(ctx, &req, &rec)
				c.Counters.InFlight.Add(-1)
				finish(&c.cfg, &c.Counters, &rec)
				c.sink(&rec)
			}
		}()
	}
	wg.Wait()
	return seq.Load(), ctx.Err()
}
