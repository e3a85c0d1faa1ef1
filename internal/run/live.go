package run

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/otlp"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/workload"
)

// executeLive runs the open-loop generator (or closed-loop users, or a
// coordinator's workers) against the HTTP target, scrapes the engine,
// drives the live view, asks the Stopper, and flushes records regularly so
// that a write error stops the run within a second (r.cancel is called
// with errWrite).
func (e *Env) executeLive(ctx context.Context, p *planned, sink loadgen.Sink, col *collector, r *running) error {
	o, spec, res, origin := &e.Opts, p.spec, r.res, r.started
	client, err := openai.New(e.ClientConfig(openai.MaxConnsFor(o.MaxInFlight)), origin)
	if err != nil {
		return configErr(err)
	}
	defer client.CloseIdle()
	if e.Fleet == nil { // a coordinator's workers each pick their own
		res.HTTPClient = client.TransportName()
	}
	sink, spans := e.joinSpans(p, client.TracePrefix(), sink) // --otlp-listen
	defer spans.detach()
	scr, err := e.startScrape(ctx, spec.Dir, origin)
	if err != nil {
		if !errors.As(err, new(*ConfigError)) {
			r.cancel(errWrite) // engine.csv could not be created
		}
		return err
	}
	defer scr.stop()
	sink, published := e.startPublish(spec, origin, sink) // --metrics-out, --web
	defer published.stop()
	lcfg, build, sink := e.loadConfig(p, sink)
	drv := e.driver(ctx, p, lcfg, client, build, sink, col, origin, res)

	ls := newLiveState(spec, drv.counters, origin, scr.scraper, col) // the live view, the exporter and the pushes
	src := live.Source(ls.status)
	e.current.Store(&src)
	defer e.current.Store(nil)
	view := e.startView(ls)
	defer view.stop()

	self := startSelf(origin, drv.counters) // the self-accuracy section
	tick := startTicker(ctx, r.w, r.cancel, col, origin, drv.stop)
	var interrupted atomic.Int64
	noted := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		interrupted.Store(int64(time.Since(origin)))
		close(noted)
	})
	runErr := drv.run()
	self.stop()
	res.self = self
	if !stopAfter() {
		<-noted // ctx was cancelled: wait until the moment is noted
	}
	res.Spans = spans.close(ctx, o.OTLPGrace)
	published.stop() // the last live values, before the run is no longer current
	tick.stop()
	res.StoppedAt, res.StopWhy = e.stopMoment(tick, time.Duration(interrupted.Load()), col)
	view.stop()
	scr.stop()
	res.Engine, res.Scrape = scr.result(spec.Dir)
	return runErr
}

// spanJoin is the join of engine spans to records (--otlp-listen): nil
// without one.
type spanJoin struct {
	e      *Env
	join   *otlp.Join
	before otlp.Stats
	stop   context.CancelFunc
}

// joinSpans makes finished records wait in the join for their engine
// spans, which then hands them on to sink, each once; without
// --otlp-listen sink is returned as it is.
func (e *Env) joinSpans(p *planned, tracePrefix [8]byte, sink loadgen.Sink) (loadgen.Sink, *spanJoin) {
	if e.spans == nil {
		return sink, nil
	}
	j := &spanJoin{e: e, join: e.spanJoin(tracePrefix, p.spec, p.arrivals, p.sess != nil, sink), before: e.spans.Stats()}
	e.spans.Attach(j.join)
	var ctx context.Context
	ctx, j.stop = context.WithCancel(context.Background())
	go j.join.Run(ctx)
	return j.join.Add, j
}

// close waits for the late spans — at most the grace period, less when
// every successful request has its span, at once on Ctrl-C — and reports
// the join; nil without one.
func (j *spanJoin) close(ctx context.Context, grace time.Duration) *otlp.Report {
	if j == nil {
		return nil
	}
	st := j.join.Close(ctx)
	return &otlp.Report{Listen: j.e.spans.Addr(), GraceMs: float64(grace) / 1e6, Receiver: j.e.spans.Stats().Sub(j.before), Join: st}
}

func (j *spanJoin) detach() {
	if j != nil {
		j.e.spans.Attach(nil)
		j.stop()
	}
}

// scraping is the engine-metrics scraper of a live run, streaming into
// engine.csv; its scraper is nil without --metrics-url.
type scraping struct {
	scraper *scrape.Scraper
	cancel  context.CancelFunc
	done    sync.WaitGroup
	csv     interface{ Close() error }
	hc      interface{ CloseIdleConnections() }
	once    sync.Once
}

// startScrape starts scraping --metrics-url into engine.csv.
func (e *Env) startScrape(ctx context.Context, dir *rundir.Dir, origin time.Time) (*scraping, error) {
	s := &scraping{}
	if e.MetricsURL == "" {
		return s, nil
	}
	o := &e.Opts
	csv, err := dir.EngineCSV()
	if err != nil {
		return nil, err
	}
	s.csv = csv
	overrides, _ := scrape.ParseOverrides(o.MetricOverride) // validated by Options.Validate
	hc := e.ScrapeClient()
	if hc != nil {
		s.hc = hc
	}
	s.scraper, err = scrape.New(scrape.Config{URL: e.MetricsURL, Preset: e.Preset, Overrides: overrides, Interval: o.ScrapeInterval, CSV: csv, Client: hc}, origin, e.Logger)
	if err != nil {
		csv.Close()
		return nil, configErr(err)
	}
	var sctx context.Context
	sctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		s.scraper.Run(sctx)
	}()
	return s, nil
}

// stop ends the scraping and closes engine.csv; once.
func (s *scraping) stop() {
	s.once.Do(func() {
		if s.cancel != nil {
			s.cancel()
			s.done.Wait()
		}
		if s.csv != nil {
			s.csv.Close()
		}
		if s.hc != nil {
			s.hc.CloseIdleConnections()
		}
	})
}

// result is the scraped samples and the scrape's status; engine.csv is
// removed when no scrape succeeded.
func (s *scraping) result(dir *rundir.Dir) ([]scrape.Sample, scrape.Status) {
	if s.scraper == nil {
		return nil, scrape.Status{State: scrape.StateDisabled, Reason: "no --metrics-url given"}
	}
	if !s.scraper.Available() {
		dir.RemoveEngineCSV()
	}
	return s.scraper.Samples(), s.scraper.Status()
}

// loadConfig is the load generator's configuration: the in-flight cap,
// the per-request judge, the request builder and, with a budget, the
// admission that reserves each request before it is sent (budget.go) —
// with the draws Generate will make for it; the shaper is a generator of
// its own, as closed-loop users ask at once.
func (e *Env) loadConfig(p *planned, sink loadgen.Sink) (loadgen.Config, func(*schedule.Arrival) workload.Request, loadgen.Sink) {
	o := &e.Opts
	pool := sync.Pool{New: func() any {
		g, _ := workload.New(p.wcfg) // validated by Execute
		return g
	}}
	build := func(a *schedule.Arrival) workload.Request {
		g := pool.Get().(*workload.Generator)
		r := g.Generate(*a)
		pool.Put(g)
		return r
	}
	d := o.Deadlines()
	labels, _ := workload.New(p.wcfg) // validated by Execute; only its ProfileName, which is safe for concurrent use
	lcfg := loadgen.Config{MaxInFlight: o.MaxInFlight, Spin: o.Spin, RunID: p.spec.Name, Profile: o.Profile, ProfileOf: labels.ProfileName,
		Judge: func(r *record.Record) bool { return analyze.Judge(r, d) }}
	if m := e.budget; m != nil && m.limited() {
		shaper, _ := workload.New(p.wcfg) // validated by Execute
		var mu sync.Mutex
		lcfg.Admit = func(a *schedule.Arrival) bool {
			mu.Lock()
			prompt, maxTok := shaper.Shape(*a)
			mu.Unlock()
			return m.admit(a.Seq, a.At, prompt, maxTok)
		}
		inner := sink
		sink = func(r *record.Record) {
			m.done(r)
			inner(r)
		}
	}
	return lcfg, build, sink
}

// drive is what sends a live run's requests: the open-loop schedule,
// closed-loop users (sweeps), sessions or a coordinator's workers.
type drive struct {
	counters *loadgen.Counters
	run      func() error
	stop     func() // ends the schedule early (the Stopper)
}

func (e *Env) driver(ctx context.Context, p *planned, lcfg loadgen.Config, client *openai.Client, build func(*schedule.Arrival) workload.Request,
	sink loadgen.Sink, col *collector, origin time.Time, res *Result) drive {
	spec := p.spec
	switch {
	case spec.Closed != nil:
		cl := spec.Closed
		labelled := func(r *record.Record) {
			r.Phase = cl.PhaseAt(time.Duration(r.ScheduledNs))
			sink(r)
		}
		gen := loadgen.NewClosed(lcfg, origin, client, build, labelled)
		return drive{counters: &gen.Counters, stop: func() {}, run: func() error {
			_, err := gen.Run(ctx, cl.Phase, cl.Users, 0, cl.Warmup+cl.Duration, 0)
			return err
		}}
	case p.sess != nil:
		start := func(a *schedule.Arrival) loadgen.Conversation { return p.sess.Start(*a) }
		gen := loadgen.NewSessions(lcfg, origin, client, start, sink)
		plan := loadgen.SessionPlan{Phases: spec.Plan.Bounds(), End: spec.Plan.Duration(), Ended: col.sessionEnded}
		plan.Shard, plan.Shards, _ = e.Opts.ShardOf() // later turns' seqs unique across shards (shard.go)
		return drive{counters: &gen.Counters, stop: gen.Stop, run: func() error { return gen.Run(ctx, p.arrivals, plan) }}
	case e.Fleet != nil:
		// Workers send the arrivals (fleet.go); their records come back here.
		gen := e.Fleet.Drive(e.fleetJob(spec, p.arrivals, p.wcfg, origin, lcfg), sink)
		return drive{counters: gen.Counters(), stop: gen.Stop, run: func() error {
			defer func() { res.Distributed = gen.Distribution() }()
			return gen.Run(ctx)
		}}
	default:
		gen := loadgen.NewOpen(lcfg, origin, client, build, sink)
		return drive{counters: &gen.Counters, stop: gen.Stop, run: func() error { return gen.Run(ctx, p.arrivals) }}
	}
}

// viewing is the live view's goroutine.
type viewing struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
}

func (e *Env) startView(ls *liveState) *viewing {
	v := &viewing{}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	if e.Live != nil {
		view := live.New(e.Live, time.Second, 5*time.Second)
		v.done.Add(1)
		go func() { defer v.done.Done(); view.Run(ctx, ls.status) }()
	}
	return v
}

func (v *viewing) stop() { v.once.Do(func() { v.cancel(); v.done.Wait() }) }

// ticker flushes the records twice a second (a write error cancels the
// run) and asks the Stopper once a second, ending the schedule with
// stopGen when it says so.
type ticker struct {
	cancel  context.CancelFunc
	done    sync.WaitGroup
	stopped atomic.Int64 // when the Stopper ended the schedule, since the origin
	why     atomic.Value // its reason
}

func startTicker(ctx context.Context, w *record.Writer, cancelRun context.CancelCauseFunc, col *collector, origin time.Time, stopGen func()) *ticker {
	t := &ticker{}
	tctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	t.done.Add(1)
	go func() {
		defer t.done.Done()
		flush := time.NewTicker(flushEvery)
		defer flush.Stop()
		check := time.NewTicker(time.Second)
		defer check.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-flush.C:
				if w.Flush() != nil {
					cancelRun(errWrite)
					return
				}
			case <-check.C:
				now := time.Since(origin)
				if col.stop == nil || now < col.stop.CheckFrom() || t.stopped.Load() != 0 {
					continue
				}
				if why := col.check(); why != "" {
					t.why.Store(why)
					t.stopped.Store(int64(now))
					stopGen()
				}
			}
		}
	}()
	return t
}

func (t *ticker) stop() { t.cancel(); t.done.Wait() }

// stopMoment is when the schedule ended before its plan did, and why: the
// Stopper's moment, the budget's refusal or the interruption (Ctrl-C, a
// write error), whichever came first; 0 when the plan ran to its end.
func (e *Env) stopMoment(t *ticker, interrupted time.Duration, col *collector) (time.Duration, string) {
	at := time.Duration(t.stopped.Load())
	why, _ := t.why.Load().(string)
	if b, ok := e.budget.refusedAt(); ok && (at == 0 || b < at) {
		at = b // the budget ended the schedule (budget.go)
	}
	if interrupted > 0 && (at == 0 || interrupted < at) {
		// Ctrl-C or a write error: the phases end here, so rates are over
		// the time that ran.
		at = interrupted
	}
	if at > 0 {
		// An arrival due at the very moment of the stop may have been sent:
		// the schedule ended just before the first arrival that was not.
		if first, ok := col.firstUnsent(); ok && first > at {
			at = first
		}
	}
	return at, why
}

// liveState turns the generator's counters into per-second rates.
type liveState struct {
	mu      sync.Mutex
	spec    Spec
	total   time.Duration
	c       *loadgen.Counters
	origin  time.Time
	scr     *scrape.Scraper
	last    time.Time
	ratesAt time.Duration // middle of the interval the rates describe
	bounds  []schedule.PhaseBounds
	col     *collector
	prev    [4]int64 // offered, sent, ok, good at the last tick
	rates   [4]float64
}

func newLiveState(spec Spec, c *loadgen.Counters, origin time.Time, scr *scrape.Scraper, col *collector) *liveState {
	return &liveState{spec: spec, bounds: spec.Plan.Bounds(), total: spec.Plan.Duration(), c: c, origin: origin, last: origin, scr: scr, col: col}
}

func (l *liveState) status() live.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	cur := [4]int64{l.c.Offered.Load(), l.c.Sent.Load(), l.c.OK.Load(), l.c.Good.Load()}
	if dt := now.Sub(l.last).Seconds(); dt >= 0.5 {
		for i := range cur {
			l.rates[i] = float64(cur[i]-l.prev[i]) / dt
			l.prev[i] = cur[i]
		}
		// The rates describe the interval just ended: label them with the
		// phase of its middle, not of this instant.
		l.ratesAt = l.last.Add(now.Sub(l.last) / 2).Sub(l.origin)
		l.last = now
	}
	phase := ""
	for _, b := range l.bounds {
		if l.ratesAt >= b.Start {
			phase = b.Name
		}
	}
	waiting := math.NaN()
	if l.scr != nil {
		if v, ok := l.scr.LastValue(scrape.Waiting); ok {
			waiting = v
		}
	}
	el := now.Sub(l.origin)
	ttft, e2e := l.col.recentLatency(int64(el - live.Window))
	return live.Status{
		Run: l.spec.Name, Phase: phase, Elapsed: el, Total: l.total,
		Offered: l.rates[0], Sent: l.rates[1], OK: l.rates[2], Goodput: l.rates[3],
		InFlight: l.c.InFlight.Load(), Waiting: waiting, Drops: l.c.Dropped.Load(),
		TTFTP95: ttft, P99: e2e,
		LagMax: time.Duration(l.c.LagMaxNs.Load()),
		// Cancelled requests (Ctrl-C, a lost or interrupted worker) are
		// an interrupt, not the target failing: counted apart.
		Errors:    l.c.Completed.Load() - l.c.OK.Load() - l.c.Cancelled.Load(),
		Cancelled: l.c.Cancelled.Load(),
		// Drops are failures of the goodput clause too (it is over offered
		// arrivals); cancelled requests are an interrupt, not judged.
		Good: l.c.Good.Load(), Judged: l.c.Completed.Load() - l.c.Cancelled.Load() + l.c.Dropped.Load(),
	}
}

// closedSpanCap bounds the spans a closed-loop or sessions run keeps
// waiting for their records (an open-loop run keeps at most one per
// scheduled arrival; a session's later turns number above the arrivals).
const closedSpanCap = 1 << 20

// spanJoin is the join of this run's records with the engine's spans: a
// span belongs to the run when its trace id carries the client's prefix
// and the sequence number of one of the run's requests (spanBounds).
func (e *Env) spanJoin(prefix [8]byte, spec Spec, arrivals []schedule.Arrival, sessions bool, sink loadgen.Sink) *otlp.Join {
	_, shards, _ := e.Opts.ShardOf()
	limit, n := spanBounds(arrivals, spec.Closed != nil || sessions, shards)
	match := func(id [16]byte) (int64, bool) {
		seq, ok := openai.SeqOfTraceID(prefix, id)
		return seq, ok && seq < n
	}
	return otlp.NewJoin(match, limit, e.Opts.OTLPGrace, sink)
}

// spanBounds are the spans a run's join holds at most (limit) and the
// seqs below which a span is one of the run's (below): an open loop's
// arrivals — a shard's are every Nth of the schedule, so the bound is
// the highest seq, not their count — or, in a closed loop or sessions
// run, closedSpanCap requests, times the shards, whose later turns number
// with a stride of N (schedule.LaterSeqs).
func spanBounds(arrivals []schedule.Arrival, unplanned bool, shards int) (limit int, below int64) {
	if unplanned {
		return closedSpanCap, int64(closedSpanCap) * int64(max(shards, 1))
	}
	for i := range arrivals {
		below = max(below, arrivals[i].Seq+1)
	}
	return len(arrivals), below
}
