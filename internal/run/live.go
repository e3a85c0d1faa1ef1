package run

import (
	"context"
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
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/workload"
)

// executeLive runs the open-loop generator (or closed-loop users) against
// the HTTP target, scrapes the engine, drives the live view, asks the
// Stopper, and flushes records regularly so that a write error stops the
// run within a second (cancel is called with errWrite).
func (e *Env) executeLive(ctx context.Context, spec Spec, arrivals []schedule.Arrival, wcfg workload.Config, sess *workload.Sessions, origin time.Time,
	sink loadgen.Sink, col *collector, w *record.Writer, cancel context.CancelCauseFunc, res *Result) error {
	o := &e.Opts
	client, err := openai.New(e.ClientConfig(openai.MaxConnsFor(o.MaxInFlight)), origin)
	if err != nil {
		return configErr(err)
	}
	defer client.CloseIdle()
	if e.Fleet == nil { // a coordinator's workers each pick their own
		res.HTTPClient = client.TransportName()
	}

	// Engine spans (--otlp-listen): finished records wait for theirs in
	// the join, which then hands them on to the sink, each once.
	var join *otlp.Join
	var spansBefore otlp.Stats
	if e.spans != nil {
		join = e.spanJoin(client.TracePrefix(), spec, arrivals, sess != nil, sink)
		sink = join.Add
		spansBefore = e.spans.Stats()
		e.spans.Attach(join)
		defer e.spans.Attach(nil)
		joinCtx, stopJoin := context.WithCancel(context.Background())
		defer stopJoin()
		go join.Run(joinCtx)
	}

	// Engine metrics, streamed into engine.csv as they are scraped.
	var scr *scrape.Scraper
	scrapeCtx, stopScrape := context.WithCancel(context.WithoutCancel(ctx))
	defer stopScrape()
	var scrapeDone sync.WaitGroup
	if e.MetricsURL != "" {
		csv, err := spec.Dir.EngineCSV()
		if err != nil {
			cancel(errWrite)
			return err
		}
		defer csv.Close()
		overrides, _ := scrape.ParseOverrides(o.MetricOverride) // validated by Options.Validate
		hc := e.ScrapeClient()
		if hc != nil {
			defer hc.CloseIdleConnections()
		}
		scr, err = scrape.New(scrape.Config{URL: e.MetricsURL, Preset: e.Preset, Overrides: overrides, Interval: o.ScrapeInterval, CSV: csv, Client: hc}, origin, e.Logger)
		if err != nil {
			return configErr(err)
		}
		scrapeDone.Add(1)
		go func() {
			defer scrapeDone.Done()
			scr.Run(scrapeCtx)
		}()
	}

	pool := sync.Pool{New: func() any {
		g, _ := workload.New(wcfg) // validated by Execute
		return g
	}}
	build := func(a *schedule.Arrival) workload.Request {
		g := pool.Get().(*workload.Generator)
		r := g.Generate(*a)
		pool.Put(g)
		return r
	}
	d := o.Deadlines()
	labels, _ := workload.New(wcfg) // validated by Execute; only its ProfileName, which is safe for concurrent use
	lcfg := loadgen.Config{MaxInFlight: o.MaxInFlight, Spin: o.Spin, RunID: spec.Name, Profile: o.Profile, ProfileOf: labels.ProfileName,
		Judge: func(r *record.Record) bool { return analyze.Judge(r, d) }}
	if m := e.budget; m != nil && m.limited() {
		// The budget reserves each request before it is sent (budget.go),
		// with the draws Generate will make for it; the shaper is a
		// generator of its own, as closed-loop users ask at once.
		shaper, _ := workload.New(wcfg) // validated by Execute
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
	// The driver: the open-loop schedule, or closed-loop users (sweeps).
	var counters *loadgen.Counters
	var drive func() error
	stopGen := func() {}
	if cl := spec.Closed; cl != nil {
		labelled := func(r *record.Record) {
			r.Phase = cl.PhaseAt(time.Duration(r.ScheduledNs))
			sink(r)
		}
		gen := loadgen.NewClosed(lcfg, origin, client, build, labelled)
		counters = &gen.Counters
		drive = func() error {
			_, err := gen.Run(ctx, cl.Phase, cl.Users, 0, cl.Warmup+cl.Duration, 0)
			return err
		}
	} else if sess != nil {
		start := func(a *schedule.Arrival) loadgen.Conversation { return sess.Start(*a) }
		gen := loadgen.NewSessions(lcfg, origin, client, start, sink)
		counters, stopGen = &gen.Counters, gen.Stop
		plan := loadgen.SessionPlan{Phases: spec.Plan.Bounds(), End: spec.Plan.Duration(), Ended: col.sessionEnded}
		plan.Shard, plan.Shards, _ = e.Opts.ShardOf() // later turns' seqs unique across shards (shard.go)
		drive = func() error { return gen.Run(ctx, arrivals, plan) }
	} else if e.Fleet != nil {
		// Workers send the arrivals (fleet.go); their records come back here.
		gen := e.Fleet.Drive(e.fleetJob(spec, arrivals, wcfg, origin, lcfg), sink)
		counters, stopGen = gen.Counters(), gen.Stop
		drive = func() error { defer func() { res.Distributed = gen.Distribution() }(); return gen.Run(ctx) }
	} else {
		gen := loadgen.NewOpen(lcfg, origin, client, build, sink)
		counters, stopGen = &gen.Counters, gen.Stop
		drive = func() error { return gen.Run(ctx, arrivals) }
	}

	// The live view and the exporter.
	ls := newLiveState(spec, counters, origin, scr, col)
	src := live.Source(ls.status)
	e.current.Store(&src)
	defer e.current.Store(nil)
	viewCtx, stopView := context.WithCancel(context.Background())
	var viewDone sync.WaitGroup
	if e.Live != nil {
		view := live.New(e.Live, time.Second, 5*time.Second)
		viewDone.Add(1)
		go func() { defer viewDone.Done(); view.Run(viewCtx, ls.status) }()
	}

	// Once a second: the Stopper; twice a second: flush the records.
	var watchDone sync.WaitGroup
	watchCtx, stopWatch := context.WithCancel(ctx)
	var stopped atomic.Int64
	var stopWhy atomic.Value
	watchDone.Add(1)
	go func() {
		defer watchDone.Done()
		flush := time.NewTicker(flushEvery)
		defer flush.Stop()
		check := time.NewTicker(time.Second)
		defer check.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-flush.C:
				if w.Flush() != nil {
					cancel(errWrite)
					return
				}
			case <-check.C:
				now := time.Since(origin)
				if col.stop == nil || now < col.stop.CheckFrom() || stopped.Load() != 0 {
					continue
				}
				if why := col.check(); why != "" {
					stopWhy.Store(why)
					stopped.Store(int64(now))
					stopGen()
				}
			}
		}
	}()
	var interrupted atomic.Int64
	noted := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		interrupted.Store(int64(time.Since(origin)))
		close(noted)
	})
	runErr := drive()
	if !stopAfter() {
		<-noted // ctx was cancelled: wait until the moment is noted
	}
	if join != nil {
		// The late spans: at most the grace period, less when every
		// successful request has its span; at once on Ctrl-C.
		st := join.Close(ctx)
		res.Spans = &otlp.Report{Listen: e.spans.Addr(), GraceMs: float64(o.OTLPGrace) / 1e6, Receiver: e.spans.Stats().Sub(spansBefore), Join: st}
	}
	stopWatch()
	watchDone.Wait()
	res.StoppedAt = time.Duration(stopped.Load())
	if why, ok := stopWhy.Load().(string); ok {
		res.StopWhy = why
	}
	if at, ok := e.budget.refusedAt(); ok && (res.StoppedAt == 0 || at < res.StoppedAt) {
		res.StoppedAt = at // the budget ended the schedule (budget.go)
	}
	if v := interrupted.Load(); v > 0 && (res.StoppedAt == 0 || time.Duration(v) < res.StoppedAt) {
		// Ctrl-C or a write error: the phases end here, so rates are over
		// the time that ran.
		res.StoppedAt = time.Duration(v)
	}
	if res.StoppedAt > 0 {
		// An arrival due at the very moment of the stop may have been sent:
		// the schedule ended just before the first arrival that was not.
		if at, ok := col.firstUnsent(); ok && at > res.StoppedAt {
			res.StoppedAt = at
		}
	}
	stopView()
	viewDone.Wait()
	stopScrape()
	scrapeDone.Wait()
	if scr == nil {
		res.Scrape = scrape.Status{State: scrape.StateDisabled, Reason: "no --metrics-url given"}
		return runErr
	}
	if !scr.Available() {
		spec.Dir.RemoveEngineCSV()
	}
	res.Engine, res.Scrape = scr.Samples(), scr.Status()
	return runErr
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
