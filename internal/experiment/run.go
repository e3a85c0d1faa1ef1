package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
	"github.com/surge-bench/surge/internal/workload"
)

// Env is a prepared target: where requests go and where engine metrics come
// from. Build it with Prepare and Close it when done.
type Env struct {
	Opts       Options
	BaseURL    string // "" in virtual time
	MetricsURL string
	Preset     string
	Simulated  bool // the target is surge's simulator
	Virtual    bool // runs execute in virtual time (sim.Simulate)
	KeySource  string
	Version    string
	Stdout     io.Writer
	Logger     *slog.Logger

	key      string
	server   *simhttp.Server
	recovery *analyze.RecoveryRule // the recovery rule of the run under way
}

// Prepare resolves the target. With no --target it starts the simulated
// engine in-process on a loopback port (or, when virtual is true, prepares
// to run in virtual time against the engine model).
func Prepare(ctx context.Context, o Options, virtual bool, stdout io.Writer, logger *slog.Logger, version string) (*Env, error) {
	if err := o.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	e := &Env{Opts: o, Stdout: stdout, Logger: logger, Version: version, MetricsURL: o.MetricsURL, Preset: o.MetricsPreset}
	switch {
	case virtual:
		if o.Target != "" {
			return nil, &ConfigError{errors.New("--simulate runs against the engine model in virtual time; it cannot be combined with --target")}
		}
		e.Simulated, e.Virtual = true, true
		e.KeySource = "none"
	case o.Target == "":
		srv, base, err := simhttp.Listen(ctx, "127.0.0.1:0", o.Sim, logger, simhttp.WithModel(o.Model))
		if err != nil {
			return nil, fmt.Errorf("experiment: start the simulator: %w", err)
		}
		e.server, e.BaseURL, e.Simulated = srv, base, true
		e.MetricsURL = strings.TrimSuffix(base, "/v1") + "/metrics"
		e.Preset = "sim"
		e.KeySource = "none"
	default:
		e.BaseURL = strings.TrimRight(o.Target, "/")
		envName := o.APIKeyEnv
		if envName == DefaultAPIKeyEnv {
			envName = "" // the default variable may be unset: endpoints without auth
		}
		key, src, err := openai.LoadAPIKey(envName, o.APIKeyFile)
		if err != nil {
			return nil, &ConfigError{err}
		}
		e.key, e.KeySource = key, src
		if e.KeySource == "" {
			e.KeySource = "none"
		}
	}
	return e, nil
}

// Close stops the in-process simulator, if any.
func (e *Env) Close() error {
	if e.server != nil {
		return e.server.Close()
	}
	return nil
}

// TargetName describes the target for reports (never with credentials).
func (e *Env) TargetName() string {
	switch {
	case e.Virtual:
		return "engine model in virtual time (--simulate)"
	case e.Simulated:
		return "in-process simulator at " + e.BaseURL
	}
	return redactURL(e.BaseURL)
}

// SimSnapshot returns the in-process simulator's state, when there is one.
func (e *Env) SimSnapshot() (sim.Snapshot, bool) {
	if e.server == nil {
		return sim.Snapshot{}, false
	}
	return e.server.Snapshot(), true
}

// ConfigError marks an error in the user's configuration (exit code 2).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Spec describes one run.
type Spec struct {
	Name    string        // run name, e.g. "burst-5x"; also the folder name under Dir
	Dir     string        // the run folder
	Command string        // the surge command, for the manifest
	Plan    schedule.Plan // phases
	Exclude []string      // phases left out of the overall aggregate (warmup)
	Extra   any           // more configuration for the manifest

	// StopWhen, when set, is asked about once a second, from StopCheckFrom
	// on, whether the schedule can end early. It sees the records of every
	// arrival scheduled before horizon — all of them finished, so that no
	// slow request still in flight is missing from what it judges. When it
	// returns true, no further arrival is sent; requests in flight finish,
	// and the last phase ends at the moment of the stop.
	StopWhen      func(recs []record.Record, horizon time.Duration) bool
	StopCheckFrom time.Duration
	// StopInVirtualTime also applies StopWhen in virtual time: the run is
	// simulated, StopWhen is asked once per virtual second as it would be
	// live, and on a stop the arrivals from the stop on are removed and the
	// run simulated again (see virtualstop.go).
	StopInVirtualTime bool

	// Closed, when set, runs closed-loop users instead of the open-loop
	// schedule (concurrency sweeps only; see closed.go). Plan must then be
	// closedPlan(*Closed): it only names the phases for the analysis.
	Closed *ClosedLoop
}

// Result is what a run produced.
type Result struct {
	Spec      Spec
	Analysis  *analyze.Result
	Scrape    scrape.Status
	Engine    []scrape.Sample
	EngineQ   map[string]scrape.Stats // engine queue-time stats per phase
	QueueWait map[string]QueueWait    // the same in ms, as reported (from EngineQ, or read back from summary.json)
	Burst     *BurstInfo              // the burst experiment's view of this run, when it is one
	Records   int64
	Partial   bool
	StoppedAt time.Duration // when StopWhen ended the schedule; 0 if it did not
	DoneOK    []int64       // completion times of the successful requests, ns, ascending
	Simulated bool          // the target was surge's simulator
	Plan      schedule.Plan // the plan as executed (the last phase cut at StoppedAt)
	Started   time.Time
	Elapsed   time.Duration
	SimEvents []sim.Event // scaling milestones (simulator only)
}

// Execute performs one run into spec.Dir and analyses it. When ctx is
// cancelled (Ctrl-C) the run stops, every record is flushed, the analysis of
// what ran is written and the Result is marked Partial.
func (e *Env) Execute(ctx context.Context, spec Spec) (*Result, error) {
	o := &e.Opts
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	var arrivals []schedule.Arrival // none in a closed loop: users send when ready
	if spec.Closed == nil {
		var err error
		if arrivals, err = schedule.Build(spec.Plan, o.Seed); err != nil {
			return nil, &ConfigError{err}
		}
	}
	prof, err := o.profile()
	if err != nil {
		return nil, &ConfigError{err}
	}
	wcfg := workload.Config{Profile: prof, Seed: o.Seed, Salt: uint64(time.Now().UnixNano()), NoNonce: o.NoNonce, IgnoreEOS: o.IgnoreEOS}
	if e.Virtual {
		wcfg.Salt = 0
	}
	if err := wcfg.Validate(); err != nil {
		return nil, &ConfigError{err}
	}

	if _, err := analyze.New(e.analyzeConfig(spec.Plan, spec.Exclude)); err != nil {
		return nil, &ConfigError{err}
	}
	w, err := record.Create(filepath.Join(spec.Dir, "requests.jsonl"))
	if err != nil {
		return nil, err
	}
	started := time.Now()
	res := &Result{Spec: spec, Started: started, Simulated: e.Simulated}
	man := e.manifest(spec, started)
	if err := record.WriteManifest(filepath.Join(spec.Dir, "manifest.json"), man); err != nil {
		w.Close()
		return nil, err
	}

	col := newCollector(arrivals)
	var writeErr error
	sink := func(r *record.Record) {
		if err := w.Write(r); err != nil {
			col.mu.Lock()
			if writeErr == nil {
				writeErr = err
			}
			col.mu.Unlock()
		}
		col.add(r)
	}

	var runErr error
	if e.Virtual {
		if spec.Closed != nil {
			runErr = e.executeClosedVirtual(ctx, spec, wcfg, sink, res)
		} else {
			runErr = e.executeVirtual(ctx, spec, arrivals, wcfg, sink, res)
		}
		res.Scrape = scrape.Status{State: scrape.StateOK, Preset: "sim", Samples: len(res.Engine)}
		if err := writeEngineCSV(filepath.Join(spec.Dir, "engine.csv"), res.Engine); err != nil && runErr == nil {
			runErr = err
		}
	} else {
		res.Engine, res.Scrape, res.StoppedAt, runErr = e.executeLive(ctx, spec, arrivals, wcfg, started, sink, col)
		if e.server != nil {
			res.SimEvents = e.server.Events()
		}
	}
	res.Elapsed = time.Since(started)
	if cerr := w.Close(); cerr != nil && writeErr == nil {
		writeErr = cerr
	}
	res.Records = w.Count()
	res.Partial = errors.Is(runErr, context.Canceled) || ctx.Err() != nil
	if runErr != nil && !res.Partial {
		return nil, runErr
	}
	if writeErr != nil {
		return nil, writeErr
	}
	res.Plan = spec.Plan
	if res.StoppedAt > 0 {
		res.Plan = cutPlan(spec.Plan, res.StoppedAt)
	}
	recs := col.records()
	res.Analysis, err = analyzeRecords(e.analyzeConfig(res.Plan, spec.Exclude), recs, 0)
	for i := range recs {
		if recs[i].Outcome == record.OK {
			res.DoneOK = append(res.DoneOK, recs[i].DoneNs)
		}
	}
	slices.Sort(res.DoneOK)
	if err != nil {
		return nil, err
	}
	if res.EngineQ == nil {
		res.EngineQ = map[string]scrape.Stats{}
		for _, b := range spec.Plan.Bounds() {
			res.EngineQ[b.Name] = scrape.PhaseStats(res.Engine, scrape.QueueTime, int64(b.Start), int64(b.End))
		}
	}
	res.setQueueWait()
	man.Finished = time.Now()
	man.Partial = res.Partial
	man.Config.(map[string]any)["plan"] = res.Plan // as executed: a recovery phase may have ended early
	if res.Partial {
		man.PartialWhy = "interrupted (Ctrl-C) before the plan completed"
	}
	if err := record.WriteManifest(filepath.Join(spec.Dir, "manifest.json"), man); err != nil {
		return nil, err
	}
	if err := writeRunFiles(spec.Dir, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Env) analyzeConfig(plan schedule.Plan, exclude []string) analyze.Config {
	o := &e.Opts
	var rule analyze.RecoveryRule
	if e.recovery != nil {
		rule = *e.recovery
	}
	var phases []analyze.Phase
	for _, b := range plan.Bounds() {
		ex := false
		for _, n := range exclude {
			ex = ex || n == b.Name
		}
		phases = append(phases, analyze.Phase{Name: b.Name, Start: b.Start, End: b.End, Rate: b.Rate, Excluded: ex})
	}
	return analyze.Config{
		Phases:    phases,
		Window:    o.Window,
		Deadlines: o.deadlines(),
		Timeout:   o.Timeout,
		SLO:       o.slo(),
		Recovery:  rule,
	}
}

func (e *Env) manifest(spec Spec, started time.Time) *record.Manifest {
	o := &e.Opts
	m := &record.Manifest{
		Tool: "surge", Version: e.Version, Command: spec.Command, RunID: spec.Name,
		Started: started, Target: e.TargetName(), Simulated: e.Simulated, VirtualTime: e.Virtual,
		Model: o.Model, API: o.API, KeySource: e.KeySource,
		Deployment: o.Deployment, Hardware: o.Hardware, Serving: o.ServingConfig,
		Workload: o.Profile, PromptSet: promptSet(o),
		Seed: o.Seed, MetricsURL: redactURL(e.MetricsURL),
		Config: map[string]any{"plan": spec.Plan, "options": redactedOptions(o), "extra": redactedExtra(spec.Extra)},
	}
	if o.NoNonce {
		m.CacheState = "shared prefixes (--no-nonce): prefix caching may flatter results"
	} else {
		m.CacheState = "unique prompts (per-request nonce): prefix cache defeated"
	}
	if e.Simulated {
		m.Deployment = "simulator"
		m.Hardware = "none (simulated engine)"
		b, _ := json.Marshal(o.Sim)
		m.Serving = "surge simulator " + string(b)
	}
	return m
}

func promptSet(o *Options) string {
	s := "synthetic (surge workload profile " + o.Profile
	if o.PromptTokens > 0 {
		s += fmt.Sprintf(", prompts fixed at %d tokens", o.PromptTokens)
	}
	if o.OutputTokens > 0 {
		s += fmt.Sprintf(", outputs fixed at %d tokens", o.OutputTokens)
	}
	return s + ")"
}

// redactedOptions is the options as recorded: header values and key file
// paths are not secrets by themselves, but header values may be.
func redactedOptions(o *Options) Options {
	c := *o
	c.Headers = nil
	for _, h := range o.Headers {
		name, _, _ := strings.Cut(h, ":")
		c.Headers = append(c.Headers, strings.TrimSpace(name)+": <redacted>")
	}
	c.Target = redactURL(c.Target)
	c.MetricsURL = redactURL(c.MetricsURL)
	return c
}

// setQueueWait derives the reported queue waits from the engine stats.
func (r *Result) setQueueWait() {
	r.QueueWait = map[string]QueueWait{}
	for name, st := range r.EngineQ {
		r.QueueWait[name] = queueWait(st, true)
	}
}

// redactedExtra is an experiment's configuration as the manifest records
// it: without its embedded Options, which are recorded separately and
// redacted (header values, URL credentials). Maps are handled recursively;
// any *XConfig that embeds Options is stripped the same way.
func redactedExtra(v any) any {
	if m, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[k] = redactedExtra(x)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return v
	}
	f, ok := rv.Elem().Type().FieldByName("Options")
	if !ok || !f.Anonymous || f.Type != reflect.TypeFor[Options]() {
		return v
	}
	x := reflect.New(rv.Elem().Type()).Elem()
	x.Set(rv.Elem())
	x.FieldByIndex(f.Index).SetZero()
	return x.Interface()
}

// clientConfig is the client configuration every request to the target
// uses — the run's and the settle gate's probes alike.
func (e *Env) clientConfig(maxConns int) openai.Config {
	o := &e.Opts
	c := openai.DefaultConfig()
	c.BaseURL, c.Model, c.API, c.Stream = e.BaseURL, o.Model, o.API, o.Stream
	c.APIKey = e.key
	c.Timeout, c.Retries = o.Timeout, o.Retries
	c.CACertFile, c.InsecureSkipVerify = o.CACert, o.Insecure
	c.MaxConns = maxConns
	if len(o.Headers) > 0 {
		c.Headers = map[string]string{}
		for _, h := range o.Headers {
			name, val, _ := strings.Cut(h, ":")
			c.Headers[strings.TrimSpace(name)] = strings.TrimSpace(val)
		}
	}
	return c
}

// executeLive runs the open-loop generator against the HTTP target.
func (e *Env) executeLive(ctx context.Context, spec Spec, arrivals []schedule.Arrival, wcfg workload.Config, origin time.Time, sink loadgen.Sink, col *collector) (samples []scrape.Sample, st scrape.Status, stoppedAt time.Duration, err error) {
	o := &e.Opts
	client, err := openai.New(e.clientConfig(min(o.MaxInFlight, 4096)), origin)
	if err != nil {
		return nil, scrape.Status{}, 0, &ConfigError{err}
	}
	defer client.CloseIdle()

	// Engine metrics.
	var scr *scrape.Scraper
	var csvFile *os.File
	scrapeCtx, stopScrape := context.WithCancel(context.WithoutCancel(ctx))
	var scrapeDone sync.WaitGroup
	if e.MetricsURL != "" {
		csvFile, err = os.Create(filepath.Join(spec.Dir, "engine.csv"))
		if err != nil {
			stopScrape()
			return nil, scrape.Status{}, 0, fmt.Errorf("experiment: %w", err)
		}
		overrides, err := scrape.ParseOverrides(o.MetricOverride)
		if err != nil {
			stopScrape()
			csvFile.Close()
			return nil, scrape.Status{}, 0, &ConfigError{err}
		}
		scr, err = scrape.New(scrape.Config{URL: e.MetricsURL, Preset: e.Preset, Overrides: overrides, Interval: o.ScrapeInterval, CSV: csvFile}, origin, e.Logger)
		if err != nil {
			stopScrape()
			csvFile.Close()
			return nil, scrape.Status{}, 0, &ConfigError{err}
		}
		scrapeDone.Add(1)
		go func() {
			defer scrapeDone.Done()
			scr.Run(scrapeCtx)
		}()
	}

	pool := sync.Pool{New: func() any {
		g, _ := workload.New(wcfg) // validated above
		return g
	}}
	build := func(a *schedule.Arrival) workload.Request {
		g := pool.Get().(*workload.Generator)
		r := g.Generate(*a)
		pool.Put(g)
		return r
	}
	d := o.deadlines()
	lcfg := loadgen.Config{MaxInFlight: o.MaxInFlight, Spin: o.Spin, RunID: spec.Name, Profile: o.Profile,
		Judge: func(r *record.Record) bool { return analyze.Judge(r, d) }}
	// The driver: the open-loop schedule, or closed-loop users (sweeps).
	var counters *loadgen.Counters
	var drive func() error
	stopGen := func() {}
	if spec.Closed != nil {
		cl := loadgen.NewClosed(lcfg, origin, client, build, closedSink(spec.Closed, sink))
		counters = &cl.Counters
		drive = func() error { return runClosed(ctx, cl, spec.Closed) }
	} else {
		gen := loadgen.NewOpen(lcfg, origin, client, build, sink)
		counters, stopGen = &gen.Counters, gen.Stop
		drive = func() error { return gen.Run(ctx, arrivals) }
	}

	// Live view and exporter.
	lv := newLiveState(spec, counters, origin, scr, col)
	viewCtx, stopView := context.WithCancel(context.Background())
	var viewDone sync.WaitGroup
	if !o.Quiet {
		view := live.New(e.Stdout, time.Second, 5*time.Second)
		viewDone.Add(1)
		go func() { defer viewDone.Done(); view.Run(viewCtx, lv.status) }()
	}
	if o.PrometheusAddr != "" {
		exp, err := live.Serve(o.PrometheusAddr, lv.status)
		if err != nil {
			stopView()
			stopScrape()
			return nil, scrape.Status{}, 0, &ConfigError{err}
		}
		defer exp.Close()
	}

	var stopDone sync.WaitGroup
	stopCtx, stopWatch := context.WithCancel(ctx)
	var stopped atomic.Int64
	if spec.StopWhen != nil {
		stopDone.Add(1)
		go func() {
			defer stopDone.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopCtx.Done():
					return
				case <-t.C:
				}
				now := time.Since(origin)
				if now < spec.StopCheckFrom {
					continue
				}
				recs, horizon := col.complete()
				if spec.StopWhen(recs, horizon) {
					stopped.Store(int64(now))
					stopGen()
					return
				}
			}
		}()
	}
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
	stopWatch()
	stopDone.Wait()
	stoppedAt = time.Duration(stopped.Load())
	if v := interrupted.Load(); v > 0 && (stoppedAt == 0 || time.Duration(v) < stoppedAt) {
		// Ctrl-C: the phases end here, so rates are over the time that ran.
		stoppedAt = time.Duration(v)
	}
	stopView()
	viewDone.Wait()
	stopScrape()
	scrapeDone.Wait()
	if csvFile != nil {
		csvFile.Close()
	}
	if scr == nil {
		return nil, scrape.Status{State: scrape.StateDisabled, Reason: "no --metrics-url given"}, stoppedAt, runErr
	}
	if !scr.Available() {
		os.Remove(filepath.Join(spec.Dir, "engine.csv"))
	}
	return scr.Samples(), scr.Status(), stoppedAt, runErr
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
	return live.Status{
		Run: l.spec.Name, Phase: phase, Elapsed: el, Total: l.total,
		Offered: l.rates[0], Sent: l.rates[1], OK: l.rates[2], Goodput: l.rates[3],
		InFlight: l.c.InFlight.Load(), Waiting: waiting, Drops: l.c.Dropped.Load(),
		P99:    l.col.recentP99(int64(el - liveWindow)),
		LagMax: time.Duration(l.c.LagMaxNs.Load()),
		Errors: l.c.Completed.Load() - l.c.OK.Load(),
	}
}

// liveWindow is the span of finished requests the live P99 describes.
const liveWindow = 10 * time.Second

func redactURL(s string) string { return record.RedactURL(s) }
