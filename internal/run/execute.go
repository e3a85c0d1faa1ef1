package run

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/kube"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/workload"
)

// WriteError is a failure to write the run folder (a full disk, a removed
// folder). The run stops within a second of it; every record written
// before it is a whole line of requests.jsonl, and the run is marked
// partial.
type WriteError struct {
	Dir string
	Err error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("run folder %s: %v (the run stopped; every record written so far is kept whole and the run is marked partial)", e.Dir, e.Err)
}
func (e *WriteError) Unwrap() error { return e.Err }

// errWrite is the cause with which a write failure cancels a run.
var errWrite = errors.New("run: write failed")

// errDiskFull and errMemory are the causes with which a full disk and a
// process near its memory limit end a run.
var (
	errDiskFull = errors.New("run: disk full")
	errMemory   = errors.New("run: memory limit near")
)

// flushEvery is how often a live run pushes its buffered records to disk,
// so that a write error is seen within a second.
const flushEvery = 500 * time.Millisecond

// Execute performs one run into spec.Dir and analyses it. When ctx is
// cancelled (Ctrl-C) the run stops, every record is flushed, the analysis
// of what ran is written and the Result is marked Partial. Configuration
// errors are found before any file is created. Its steps, in order:
// plan (the arrivals and the workload), open (the folder: records, the
// reserve, the manifest before the first arrival, the guard), send
// (virtual or live), close (the records, and why the run is partial),
// analyse (one pass over requests.jsonl, the accounting of the plan) and
// save.
func (e *Env) Execute(ctx context.Context, spec Spec) (*Result, error) {
	p, err := e.plan(spec)
	if err != nil {
		return nil, err
	}
	late, err := e.awaitStart(ctx) // --start-at (shard.go)
	if err != nil {
		return nil, err
	}
	r, err := e.open(ctx, p, late)
	if err != nil {
		return nil, err
	}
	defer r.cancel(nil)
	defer r.stopGuard()
	defer r.watch.Stop() // nil-safe, once: the timeline stops it when the run ends
	runErr := e.send(p, r)
	writeErr := r.close(ctx, runErr)
	if runErr != nil && !r.res.Partial {
		return nil, runErr
	}
	if err := e.analyse(p, r, writeErr); err != nil {
		return nil, err
	}
	res := r.res
	res.SelfAccuracy = e.selfAccuracy(res, res.self)
	res.Scaling = e.scalingTimeline(p.spec, res, r.watch)
	if p.spec.Finish != nil {
		p.spec.Finish(res)
	}
	res.Manifest = e.manifest(p.spec, res)
	e.pushPhases(p.spec, res) // --metrics-out
	if err := Save(p.spec.Dir, res); err != nil && writeErr == nil {
		writeErr = err
	}
	if writeErr == nil && r.fullErr != nil {
		writeErr = r.fullErr // the reserve saved the records; the disk is still full
	}
	if writeErr != nil {
		return res, &WriteError{p.spec.Dir.Path(), writeErr}
	}
	return res, nil
}

// planned is a run's plan made concrete before anything is written: its
// arrivals (held, or streamed in virtual time), its workload, its sessions.
type planned struct {
	spec     Spec
	arrivals []schedule.Arrival         // none in a closed loop, or when streamed
	lazy     iter.Seq[schedule.Arrival] // the streamed schedule of a virtual open loop
	wcfg     workload.Config
	sess     *workload.Sessions
}

// plan makes the arrivals and the workload of spec; every error is a
// configuration error, found before any file is created.
func (e *Env) plan(spec Spec) (*planned, error) {
	o := &e.Opts
	if spec.Closed == nil {
		var err error
		if spec.Plan, err = o.SessionPlan(spec.Plan); err != nil {
			return nil, configErr(err)
		}
	}
	p := &planned{spec: spec}
	var err error
	switch {
	case spec.Closed != nil: // users send when ready
	case e.streamsSchedule(spec): // never held: made as the engine model reaches each arrival
		p.lazy, err = schedule.Arrivals(spec.Plan, spec.Seed(o.Seed))
	default:
		p.arrivals, err = schedule.Build(spec.Plan, spec.Seed(o.Seed))
	}
	if err != nil {
		return nil, configErr(err)
	}
	if p.arrivals, err = e.shardArrivals(spec, p.arrivals); err != nil { // --shard (shard.go)
		return nil, configErr(err)
	}
	if p.wcfg, err = o.WorkloadConfig(); err != nil {
		return nil, configErr(err)
	}
	p.wcfg.Sizing, p.wcfg.Dataset = e.Calibration.Sizing(), e.Dataset
	p.wcfg.Seed = spec.Seed(p.wcfg.Seed)
	if !e.Virtual {
		p.wcfg.Salt = uint64(time.Now().UnixNano())
	}
	if _, err := analyze.New(e.AnalyzeConfig(spec.Plan, spec.Exclude, spec.Recovery)); err != nil {
		return nil, configErr(err)
	}
	if o.Sessions {
		if spec.Closed != nil {
			return nil, configErr(&field.Error{Field: "sessions", Message: "needs open-loop arrivals to start sessions; a closed loop (concurrency sweep) has none — use a rate sweep, run or burst"})
		}
		if p.sess, err = workload.NewSessions(p.wcfg, o.SessionConfig()); err != nil {
			return nil, configErr(err)
		}
	} else {
		e.warnContext(p.arrivals, p.wcfg) // context.go
	}
	return p, nil
}

// running is a run under way: its folder's records, its result so far,
// the context that ends it and what ended it.
type running struct {
	w         *record.Writer
	res       *Result
	started   time.Time
	runCtx    context.Context
	cancel    context.CancelCauseFunc
	watch     *kube.Watch
	stopGuard func()
	// fullErr is the write that found the disk full, when the reserve
	// saved the records; memUsed is the memory the guard stopped the
	// run at.
	fullErr error
	memUsed atomic.Uint64
}

// open claims the run's files: requests.jsonl, the reserve, and the
// manifest that says the run has not finished, with the plan it is about
// to send — if the end of the run is never written (kill -9, a full
// disk), the folder still says what was tested, and the schedule accounts
// for every arrival (accounting.go). A live run gets its guard (guard.go).
func (e *Env) open(ctx context.Context, p *planned, late time.Duration) (*running, error) {
	spec := p.spec
	w, err := spec.Dir.Records()
	if err != nil {
		return nil, &WriteError{spec.Dir.Path(), err}
	}
	if err := spec.Dir.Reserve(); err != nil {
		e.say("warning: no space set aside for the end of the run (%v): if the disk fills up, its last records and results may be lost", err)
	}
	r := &running{w: w, stopGuard: func() {}}
	r.watch = e.startWatch(ctx)                         // before the clock starts: the pods that exist now are not scaling events
	r.started = time.Now().Add(e.fleetLead(p.arrivals)) // workers get their jobs first (fleet.go)
	res := &Result{Spec: spec, Started: r.started, Simulated: e.Simulated, Virtual: e.Virtual, Plan: spec.Plan}
	res.shardArrivals, res.startLate = int64(len(p.arrivals)), late
	res.Partial, res.PartialCause, res.PartialWhy = true, record.PartialUnfinished, "not finished: the run is under way, or ended before it could write its results"
	pending := e.manifest(spec, res)
	pending.Finished = time.Time{}
	if err := spec.Dir.WriteManifest(pending); err != nil {
		w.Close()
		r.watch.Stop()
		return nil, &WriteError{spec.Dir.Path(), err}
	}
	res.Partial, res.PartialCause, res.PartialWhy = false, "", ""
	r.res = res
	e.budget.begin()
	r.runCtx, r.cancel = context.WithCancelCause(ctx)
	// A full disk gives back the reserve, so that the records of the
	// requests in flight and the results still fit, and ends the run.
	w.OnFull(func(err error) bool {
		freed := spec.Dir.ReleaseReserve()
		if freed {
			r.fullErr = err
		}
		r.cancel(errDiskFull)
		return freed
	})
	if !e.Virtual {
		r.stopGuard = guard(spec.Dir, pending, r.started, r.cancel, &r.memUsed) // heartbeat, memory
	}
	return r, nil
}

// send runs the schedule, virtual or live. Records go to requests.jsonl
// as they come, and nowhere else: the analysis reads the file once the
// run is over (analysis.go). Every record carries its shard (shard.go).
func (e *Env) send(p *planned, r *running) error {
	write := func(rec *record.Record) {
		if err := r.w.Write(rec); err != nil {
			r.cancel(errWrite)
		}
	}
	if e.Virtual {
		return e.executeVirtual(r.runCtx, p.spec, p.arrivals, p.lazy, p.wcfg, p.sess, e.stampShard(write), r.res)
	}
	stop, unusable := p.spec.Stop, (*judge.Unusable)(nil)
	if !e.Opts.NoEarlyStop && !e.Simulated {
		unusable = judge.NewUnusable("POST " + openai.Endpoint(e.BaseURL, e.Opts.API) + " (--api " + e.Opts.API + ")")
		stop = stoppers(p.spec.Stop, unusable)
	}
	col := newCollector(p.arrivals, p.sess != nil, stop)
	sink := e.stampShard(func(rec *record.Record) { write(rec); col.add(rec) })
	err := e.executeLive(r.runCtx, p, sink, col, r)
	r.stopGuard()
	r.res.SimEvents = e.SimEvents(r.started)
	if unusable != nil && unusable.Tripped() {
		r.res.Unusable = r.res.StopWhy
	}
	return err
}

// close closes requests.jsonl and says whether and why the run is
// partial; it returns the write error, if any.
func (r *running) close(ctx context.Context, runErr error) (writeErr error) {
	res := r.res
	res.Elapsed = time.Since(r.started)
	closeErr := r.w.Close()
	writeErr = r.w.Err()
	if writeErr == nil && closeErr != nil {
		writeErr = closeErr
	}
	cause := context.Cause(r.runCtx)
	if writeErr == nil && errors.Is(cause, errWrite) {
		// requests.jsonl is fine: the failure was engine.csv's, which
		// executeLive returned.
		writeErr = cmp.Or(runErr, errors.New("requests.jsonl: write failed"))
	}
	res.Partial = writeErr != nil || ctx.Err() != nil || errors.Is(runErr, context.Canceled) || cause == errDiskFull || cause == errMemory
	switch {
	case writeErr != nil && record.IsDiskFull(writeErr):
		res.PartialCause, res.PartialWhy = record.PartialDiskFull, "the disk filled up: "+writeErr.Error()
	case writeErr != nil:
		res.PartialCause, res.PartialWhy = record.PartialWriteError, "stopped by a write error: "+writeErr.Error()
	case cause == errDiskFull && r.fullErr != nil:
		res.PartialCause, res.PartialWhy = record.PartialDiskFull, "the disk filled up ("+r.fullErr.Error()+"): the run stopped there; the space it had set aside held the records of its requests in flight and its results"
	case cause == errMemory:
		res.PartialCause, res.PartialWhy = record.PartialMemory, "stopped near the memory limit: "+memoryWhy(r.memUsed.Load())
	case res.Partial:
		res.PartialCause, res.PartialWhy = record.PartialInterrupted, "interrupted (Ctrl-C) before the plan completed"
	}
	return writeErr
}

// analyse reads requests.jsonl once into every accumulator, accounts for
// the plan's arrivals without a record, and fills the result's analysis,
// its spend and the engine's timing and queue wait.
func (e *Env) analyse(p *planned, r *running, writeErr error) error {
	spec, res := p.spec, r.res
	if res.StoppedAt > 0 {
		res.Plan = cutPlan(spec.Plan, res.StoppedAt)
	}
	// A budget's reason (below) never reads as an interruption: this is
	// the same before and after it.
	slo := e.Opts.SLO()
	slo.Interrupted = res.PartialCause.CutRequests()
	st, err := newAnalysis(e.AnalyzeConfig(res.Plan, spec.Exclude, spec.Recovery), slo)
	if err != nil {
		return err
	}
	var phases []string
	for _, b := range res.Plan.Bounds() {
		phases = append(phases, b.Name)
	}
	source := analyze.EngineSourceResponse
	if res.Spans != nil {
		source = analyze.EngineSourceOTLP
	}
	st.engine = analyze.NewEngineTimings(phases, spec.Exclude, source)
	ax := newArrivalIndex(p.arrivals, p.lazy)
	defer ax.close()
	st.prompt, st.prefix = e.newPromptSizing(p.wcfg, ax), newPrefixAcc(p.wcfg, ax)
	res.Records = spec.Dir.RecordsSource()
	var t tally
	if err := res.Records.Each(func(rec *record.Record) error { t.add(rec); return st.add(rec) }); err != nil && writeErr == nil {
		return fmt.Errorf("run: reading back the records: %w", err)
	} // a failed write: what the file holds, whole lines, is analysed
	if all := e.planArrivals(spec, p.arrivals, p.lazy); all != nil {
		end := int64(cmp.Or(res.StoppedAt, spec.Plan.Duration()))
		acc, err := t.settle(all, end, st.add)
		if err != nil {
			return err
		}
		res.Arrivals = &acc
	}
	var budgetWhy string
	if res.Spend, budgetWhy = e.budget.end(st.spend); budgetWhy != "" && !res.Partial {
		// The budget ended the schedule (budget.go): what ran is
		// analysed as run, and marked partial with the reason.
		res.Partial, res.PartialCause, res.PartialWhy = true, record.PartialBudget, budgetWhy
	}
	st.finish(res)
	res.Prompt, res.SharedPrefix = st.prompt.result(), st.prefix.result()
	res.EngineTiming = st.engine.Result()
	if res.QueueWait == nil {
		res.QueueWait = map[string]analyze.QueueWait{}
		for _, b := range spec.Plan.Bounds() {
			res.QueueWait[b.Name] = QueueWaitOf(scrape.PhaseStats(res.Engine, scrape.QueueTime, int64(b.Start), int64(b.End)))
		}
	}
	return nil
}

// streamsSchedule says whether the run never holds its schedule: an
// open loop in virtual time without sessions, a stop judged in virtual
// time or a budget, whose arrivals the engine model takes one at a time
// (virtual.OpenStream). Such a run is not bound by schedule.MaxArrivals.
// A shard (--shard) builds its schedule to keep its share and count it.
func (e *Env) streamsSchedule(spec Spec) bool {
	if _, n, err := e.Opts.ShardOf(); err != nil || n > 1 {
		return false
	}
	return e.Virtual && spec.Closed == nil && !e.Opts.Sessions && !(spec.Stop != nil && spec.StopInVirtualTime) && !e.budget.limited()
}

// planArrivals is every arrival of the run's plan for the accounting of
// what became of them, or nil where arrivals are not scheduled (a closed
// loop's users, sessions' later turns) or not all this process's (a
// coordinator's workers account for their own).
func (e *Env) planArrivals(spec Spec, arrivals []schedule.Arrival, lazy iter.Seq[schedule.Arrival]) iter.Seq[schedule.Arrival] {
	switch {
	case spec.Closed != nil || e.Opts.Sessions:
		return nil
	case lazy != nil:
		return lazy
	default:
		return slices.Values(arrivals)
	}
}

// Save writes a run's manifest.json, summary.json and timeseries.csv —
// each once — from its result. `surge report` writes the derived ones
// again with Reloaded.Save.
func Save(d *rundir.Dir, res *Result) error {
	if err := d.WriteManifest(res.Manifest); err != nil {
		return err
	}
	if err := d.WriteJSON("summary.json", res.summary()); err != nil {
		return err
	}
	if err := saveScaling(d, res.Scaling); err != nil {
		return err
	}
	return d.WriteFile("timeseries.csv", func(w io.Writer) error { return rundir.WriteTimeseries(w, res.Analysis, res.Engine) })
}

// summary is the run's summary.json.
func (res *Result) summary() rundir.Summary {
	return rundir.Summary{SchemaVersion: record.SchemaVersion, Run: res.Spec.Name, Partial: res.Partial, PartialCause: res.PartialCause, PartialWhy: res.PartialWhy, Arrivals: res.Arrivals, Records: res.Count(), Analysis: res.Analysis, Verdicts: res.Verdicts,
		VLLM: res.Analysis.VLLM(), Engine: res.Scrape, EngineWait: res.QueueWait, EngineTiming: res.EngineTiming, EngineSpans: res.Spans,
		SimEvents: res.SimEvents, Burst: res.Burst,
		Prompt: res.Prompt, SelfAccuracy: res.SelfAccuracy}
}

// QueueWaitOf turns the engine's queue-time histogram statistics of one
// phase into the reported queue wait, in ms.
func QueueWaitOf(st scrape.Stats) analyze.QueueWait {
	if !st.Known() {
		reason := st.Reason
		if reason == "" {
			reason = "n/a"
		}
		return analyze.QueueWait{Reason: reason}
	}
	ms := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v * 1000
	}
	return analyze.QueueWait{Available: true, Count: st.Count, MeanMs: ms(st.Mean),
		P50Ms: ms(st.P50.Value), P95Ms: ms(st.P95.Value), P99Ms: ms(st.P99.Value), P99Above: st.P99.Above,
		P50AtMost: st.P50.AtMost, P95AtMost: st.P95.AtMost, P99AtMost: st.P99.AtMost}
}

// AnalyzeConfig is the analysis of a plan under these options.
func (e *Env) AnalyzeConfig(plan schedule.Plan, exclude []string, rule analyze.RecoveryRule) analyze.Config {
	o := &e.Opts
	var phases []analyze.Phase
	for _, b := range plan.Bounds() {
		phases = append(phases, analyze.Phase{Name: b.Name, Start: b.Start, End: b.End, Rate: b.Rate, Excluded: slices.Contains(exclude, b.Name)})
	}
	return analyze.Config{
		Phases:    phases,
		Window:    o.Window,
		Deadlines: o.Deadlines(),
		Timeout:   o.Timeout,
		Recovery:  rule,
	}
}

// ManifestConfig is the configuration a manifest records: the plan as
// executed, the options (redacted) and the experiment's own settings.
type ManifestConfig struct {
	Plan       schedule.Plan `json:"plan"`
	Options    Options       `json:"options"`
	Experiment any           `json:"extra"`
}

// LoadManifestConfig reads back a manifest's ManifestConfig, with the
// experiment's settings left as raw JSON for the experiment to decode.
func LoadManifestConfig(m *record.Manifest) (plan schedule.Plan, o Options, experiment json.RawMessage, err error) {
	var c struct {
		Plan       schedule.Plan   `json:"plan"`
		Options    Options         `json:"options"`
		Experiment json.RawMessage `json:"extra"`
	}
	// An option a manifest from an older surge lacks keeps its default
	// (an analysis window of 0 would otherwise break the analysis).
	c.Options = DefaultOptions()
	b, err := json.Marshal(m.Config)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return plan, o, nil, fmt.Errorf("run: manifest config: %w", err)
	}
	return c.Plan, c.Options, c.Experiment, nil
}

// SessionPlan is an open-loop plan as a run executes it: with --sessions
// and --session-drain the drain phase follows it, in which sessions
// already started may send turns and no session starts. The run
// (Execute) and what is shown of it (the banner, --dry-run) both take the
// plan from here. A *field.Error when the plan already has a phase named
// drain.
func (o *Options) SessionPlan(p schedule.Plan) (schedule.Plan, error) {
	if !o.Sessions || o.SessionDrain <= 0 {
		return p, nil
	}
	for _, ph := range p.Phases {
		if ph.Name == schedule.PhaseDrain {
			return p, &field.Error{Field: "session_drain", Message: "the plan already has a phase named " + schedule.PhaseDrain}
		}
	}
	p.Phases = append(slices.Clone(p.Phases), schedule.Phase{Name: schedule.PhaseDrain, Duration: o.SessionDrain, Arrival: schedule.ArrivalNone})
	return p, nil
}

func (e *Env) manifest(spec Spec, res *Result) *record.Manifest {
	o := &e.Opts
	m := &record.Manifest{
		Tool: "surge", Version: e.Version, Command: spec.Command, RunID: spec.Name,
		Started: res.Started, Finished: res.Started.Add(res.Elapsed), Partial: res.Partial, PartialCause: res.PartialCause, PartialWhy: res.PartialWhy,
		Arrivals: res.Arrivals,
		Target:   e.TargetName(), Simulated: e.Simulated, VirtualTime: e.Virtual,
		Model: o.Model, API: o.API, KeySource: e.KeySource,
		Deployment: o.Deployment, Hardware: o.Hardware, Serving: o.ServingConfig,
		Workload: o.WorkloadName(), PromptSet: promptSet(o), Mix: manifestMix(o),
		Seed: spec.Seed(o.Seed), Rep: spec.Rep, Repeats: spec.Repeats, MetricsURL: record.RedactURL(e.MetricsURL),
		Config:       ManifestConfig{Plan: res.Plan, Options: redactedOptions(o), Experiment: spec.Experiment},
		PromptSizing: res.Prompt, HTTPClient: res.HTTPClient, GatewayTiming: e.gatewayTiming(),
	}
	if d := e.Dataset; d != nil {
		m.Workload = workload.ProfileDataset
		m.Dataset = &record.DatasetInfo{File: d.Path, Format: d.Format, Rows: d.Len(), Skipped: d.Skipped, Sampling: cmp.Or(o.DatasetSample, workload.SampleShuffle), SHA256: d.SHA256}
	}
	m.CacheState, m.SharedPrefix = CacheState(o, res.SharedPrefix), res.SharedPrefix
	switch {
	case e.Dataset != nil && o.NoNonce:
		m.CacheState = "dataset rows sent verbatim (--no-nonce): a repeated row may hit the prefix cache"
	case e.Dataset != nil:
		m.CacheState = "dataset rows with a per-request nonce before the first user message: a repeated row misses the prefix cache (system messages before it stay shared, as in production)"
	}
	m.Traces = replayedTraces(res.Plan) // traces.go
	m.Distributed = e.shardDistribution(res)
	if res.Distributed != nil {
		m.Distributed = res.Distributed // the workers (fleet.go)
	}
	if e.budget != nil && (o.Budgeted() || o.PriceInput != nil || o.PriceOutput != nil) {
		m.Spent = o.SpentRecord(res.Spend) // budget.go: the run's own spend
		why := ""
		if res.PartialCause == record.PartialBudget {
			why = res.PartialWhy
		}
		m.Budget = o.BudgetRecord(why)
	}
	if s := traceCacheState(m.Traces, o.NoNonce); s != "" {
		m.CacheState = s
	}
	if o.Sessions {
		m.CacheState = "multi-turn sessions: every later turn resends the conversation so far, so a prefix cache serves all of it but the last answer (replayed as synthetic text); "
		if o.SharedPrefix > 0 {
			m.CacheState += fmt.Sprintf("first turns share the %d-token prefix (--shared-prefix), unique after it (per-session nonce)", o.SharedPrefix)
		} else {
			m.CacheState += "first turns unique (per-session nonce)"
		}
		if o.NoNonce {
			m.CacheState += ", except with --no-nonce"
		}
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
	if o.Dataset != "" {
		s := fmt.Sprintf("dataset %s (%s, sampled %s; max_tokens from each row, else drawn from profile %s", o.Dataset, o.DatasetFormat, cmp.Or(o.DatasetSample, workload.SampleShuffle), o.Profile)
		if o.OutputTokens.IsSet() {
			s += " with output tokens " + o.OutputTokens.String()
		}
		if o.MaxTokensCap > 0 {
			s += fmt.Sprintf("; capped at %d", o.MaxTokensCap)
		}
		return s + ")"
	}
	s := "synthetic (surge workload profile " + o.Profile
	if len(o.Mix) > 0 {
		s = "synthetic (surge workload mix " + o.Mix.String()
	}
	if n := o.PromptTokens.Fixed(); n > 0 {
		s += fmt.Sprintf(", prompts fixed at %d tokens", n)
	} else if o.PromptTokens.IsSet() {
		s += ", prompt tokens " + o.PromptTokens.String()
	}
	if n := o.OutputTokens.Fixed(); n > 0 {
		s += fmt.Sprintf(", outputs fixed at %d tokens", n)
	} else if o.OutputTokens.IsSet() {
		s += ", output tokens " + o.OutputTokens.String()
	}
	if o.Sessions {
		s += fmt.Sprintf("; sessions of %s turns, think time %s, later user messages %s tokens", o.SessionTurns, o.ThinkTime, o.TurnTokens)
		if o.Fanout > 0 {
			s += fmt.Sprintf(", fan-out %d sub-requests per turn", o.Fanout)
		}
	}
	return s + ")"
}

// manifestMix is the mix as sent: every profile with its weight, share
// and distributions (the fixed lengths applied); nil without a mix.
func manifestMix(o *Options) []record.MixProfile {
	ws, err := o.WorkloadMix()
	if err != nil || len(ws) == 0 {
		return nil
	}
	sum := 0.0
	for _, w := range ws {
		sum += w.Weight
	}
	out := make([]record.MixProfile, 0, len(ws))
	for _, w := range ws {
		out = append(out, record.MixProfile{Name: w.Profile.Name, Weight: w.Weight, Share: w.Weight / sum,
			Prompt: w.Profile.Prompt.String(), Output: w.Profile.Output.String(), MaxTokens: w.Profile.MaxTokens})
	}
	return out
}

// redactedOptions is the options as recorded: header values and URL
// credentials are dropped, as they may be secrets.
func redactedOptions(o *Options) Options {
	c := *o
	c.Headers = nil
	for _, h := range o.Headers {
		name, _, _ := strings.Cut(h, ":")
		c.Headers = append(c.Headers, strings.TrimSpace(name)+": <redacted>")
	}
	c.Target = record.RedactURL(c.Target)
	c.MetricsURL = record.RedactURL(c.MetricsURL)
	c.MetricsOut = nil
	for _, m := range o.MetricsOut {
		kind, u, _ := strings.Cut(m, "=")
		c.MetricsOut = append(c.MetricsOut, kind+"="+record.RedactURL(u))
	}
	return c
}

// gatewayTiming is the gateway timing convention the user chose, for the
// manifest: "" when auto (nothing was asked for) or in virtual time.
func (e *Env) gatewayTiming() string {
	if e.Virtual || e.Opts.GatewayTiming == openai.GatewayAuto {
		return ""
	}
	return e.Opts.GatewayTiming
}
