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
// errors are found before any file is created.
func (e *Env) Execute(ctx context.Context, spec Spec) (*Result, error) {
	o := &e.Opts
	if spec.Closed == nil {
		var err error
		if spec.Plan, err = o.SessionPlan(spec.Plan); err != nil {
			return nil, configErr(err)
		}
	}
	var arrivals []schedule.Arrival // none in a closed loop: users send when ready
	var lazy iter.Seq[schedule.Arrival]
	switch {
	case spec.Closed != nil:
	case e.streamsSchedule(spec):
		// Never held: made as the engine model reaches each arrival.
		var err error
		if lazy, err = schedule.Arrivals(spec.Plan, spec.Seed(o.Seed)); err != nil {
			return nil, configErr(err)
		}
	default:
		var err error
		if arrivals, err = schedule.Build(spec.Plan, spec.Seed(o.Seed)); err != nil {
			return nil, configErr(err)
		}
	}
	arrivals, shardErr := e.shardArrivals(spec, arrivals) // --shard (shard.go)
	if shardErr != nil {
		return nil, configErr(shardErr)
	}
	wcfg, err := o.WorkloadConfig()
	if err != nil {
		return nil, configErr(err)
	}
	wcfg.Sizing, wcfg.Dataset = e.Calibration.Sizing(), e.Dataset
	wcfg.Seed = spec.Seed(wcfg.Seed)
	if !e.Virtual {
		wcfg.Salt = uint64(time.Now().UnixNano())
	}
	if _, err := analyze.New(e.AnalyzeConfig(spec.Plan, spec.Exclude, spec.Recovery)); err != nil {
		return nil, configErr(err)
	}
	var sess *workload.Sessions
	if o.Sessions {
		if spec.Closed != nil {
			return nil, configErr(&field.Error{Field: "sessions", Message: "needs open-loop arrivals to start sessions; a closed loop (concurrency sweep) has none — use a rate sweep, run or burst"})
		}
		if sess, err = workload.NewSessions(wcfg, o.SessionConfig()); err != nil {
			return nil, configErr(err)
		}
	}

	if sess == nil {
		e.warnContext(arrivals, wcfg) // context.go
	}

	late, err := e.awaitStart(ctx) // --start-at (shard.go)
	if err != nil {
		return nil, err
	}
	w, err := spec.Dir.Records()
	if err != nil {
		return nil, &WriteError{spec.Dir.Path(), err}
	}
	if err := spec.Dir.Reserve(); err != nil {
		e.say("warning: no space set aside for the end of the run (%v): if the disk fills up, its last records and results may be lost", err)
	}
	watch := e.startWatch(ctx)                       // before the clock starts: the pods that exist now are not scaling events
	defer watch.Stop()                               // nil-safe, once: the timeline stops it when the run ends
	started := time.Now().Add(e.fleetLead(arrivals)) // workers get their jobs first (fleet.go)
	res := &Result{Spec: spec, Started: started, Simulated: e.Simulated, Virtual: e.Virtual, Plan: spec.Plan}
	res.shardArrivals, res.startLate = int64(len(arrivals)), late
	// A manifest first that says the run has not finished, with the plan
	// it is about to send: if the end of the run is never written (kill
	// -9, a full disk), the folder still says what was tested, and the
	// schedule accounts for every arrival (accounting.go).
	res.Partial, res.PartialCause, res.PartialWhy = true, record.PartialUnfinished, "not finished: the run is under way, or ended before it could write its results"
	pending := e.manifest(spec, res)
	pending.Finished = time.Time{}
	if err := spec.Dir.WriteManifest(pending); err != nil {
		w.Close()
		return nil, &WriteError{spec.Dir.Path(), err}
	}
	res.Partial, res.PartialCause, res.PartialWhy = false, "", ""
	e.budget.begin()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A full disk gives back the reserve, so that the records of the
	// requests in flight and the results still fit, and ends the run.
	var fullErr error // the write that found the disk full, when the reserve saved it
	w.OnFull(func(err error) bool {
		freed := spec.Dir.ReleaseReserve()
		if freed {
			fullErr = err
		}
		cancel(errDiskFull)
		return freed
	})
	var memUsed atomic.Uint64
	stopGuard := func() {}
	if !e.Virtual {
		stopGuard = guard(spec.Dir, pending, started, cancel, &memUsed) // guard.go: heartbeat, memory
	}
	defer stopGuard()
	// Records go to requests.jsonl as they come, and nowhere else: the
	// analysis reads the file once the run is over (analysis.go). Every
	// record carries its shard (shard.go).
	var runErr error
	if e.Virtual {
		sink := e.stampShard(func(r *record.Record) {
			if err := w.Write(r); err != nil {
				cancel(errWrite)
			}
		})
		runErr = e.executeVirtual(runCtx, spec, arrivals, lazy, wcfg, sess, sink, res)
	} else {
		stop, unusable := spec.Stop, (*judge.Unusable)(nil)
		if !o.NoEarlyStop && !e.Simulated {
			unusable = judge.NewUnusable()
			stop = stoppers(spec.Stop, unusable)
		}
		col := newCollector(arrivals, sess != nil, stop)
		sink := e.stampShard(func(r *record.Record) {
			if err := w.Write(r); err != nil {
				cancel(errWrite)
			}
			col.add(r)
		})
		runErr = e.executeLive(runCtx, spec, arrivals, wcfg, sess, started, sink, col, w, cancel, res)
		stopGuard()
		res.SimEvents = e.SimEvents(started)
		if unusable != nil && unusable.Tripped() {
			res.Unusable = res.StopWhy
		}
	}
	res.Elapsed = time.Since(started)
	closeErr := w.Close()
	writeErr := w.Err()
	if writeErr == nil && closeErr != nil {
		writeErr = closeErr
	}
	if writeErr == nil && errors.Is(context.Cause(runCtx), errWrite) {
		// requests.jsonl is fine: the failure was engine.csv's, which
		// executeLive returned.
		writeErr = runErr
		if writeErr == nil {
			writeErr = errors.New("requests.jsonl: write failed")
		}
	}
	cause := context.Cause(runCtx)
	res.Partial = writeErr != nil || ctx.Err() != nil || errors.Is(runErr, context.Canceled) || cause == errDiskFull || cause == errMemory
	if runErr != nil && !res.Partial {
		return nil, runErr
	}
	switch {
	case writeErr != nil && record.IsDiskFull(writeErr):
		res.PartialCause, res.PartialWhy = record.PartialDiskFull, "the disk filled up: "+writeErr.Error()
	case writeErr != nil:
		res.PartialCause, res.PartialWhy = record.PartialWriteError, "stopped by a write error: "+writeErr.Error()
	case cause == errDiskFull && fullErr != nil:
		res.PartialCause, res.PartialWhy = record.PartialDiskFull, "the disk filled up ("+fullErr.Error()+"): the run stopped there; the space it had set aside held the records of its requests in flight and its results"
	case cause == errMemory:
		res.PartialCause, res.PartialWhy = record.PartialMemory, "stopped near the memory limit: "+memoryWhy(memUsed.Load())
	case res.Partial:
		res.PartialCause, res.PartialWhy = record.PartialInterrupted, "interrupted (Ctrl-C) before the plan completed"
	}
	if res.StoppedAt > 0 {
		res.Plan = cutPlan(spec.Plan, res.StoppedAt)
	}
	acfg := e.AnalyzeConfig(res.Plan, spec.Exclude, spec.Recovery)
	// A budget's reason (below) never reads as an interruption: this is
	// the same before and after it.
	slo := o.SLO()
	slo.Interrupted = res.PartialCause.CutRequests()
	var phases []string
	for _, b := range res.Plan.Bounds() {
		phases = append(phases, b.Name)
	}
	source := analyze.EngineSourceResponse
	if res.Spans != nil {
		source = analyze.EngineSourceOTLP
	}
	st, err := newAnalysis(acfg, slo)
	if err != nil {
		return nil, err
	}
	st.engine = analyze.NewEngineTimings(phases, spec.Exclude, source)
	ax := newArrivalIndex(arrivals, lazy)
	defer ax.close()
	st.prompt, st.prefix = e.newPromptSizing(wcfg, ax), newPrefixAcc(wcfg, ax)
	res.Records = spec.Dir.RecordsSource()
	var t tally
	if err := res.Records.Each(func(r *record.Record) error { t.add(r); return st.add(r) }); err != nil {
		if writeErr == nil {
			return nil, fmt.Errorf("run: reading back the records: %w", err)
		}
		// The write failed: what the file holds, whole lines, is analysed.
	}
	if all := e.planArrivals(spec, arrivals, lazy); all != nil {
		end := int64(spec.Plan.Duration())
		if res.StoppedAt > 0 {
			end = int64(res.StoppedAt)
		}
		acc, err := t.settle(all, end, st.add)
		if err != nil {
			return nil, err
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
	res.Scaling = e.scalingTimeline(spec, res, watch)
	if spec.Finish != nil {
		spec.Finish(res)
	}
	res.Manifest = e.manifest(spec, res)
	if err := Save(spec.Dir, res); err != nil && writeErr == nil {
		writeErr = err
	}
	if writeErr == nil && fullErr != nil {
		writeErr = fullErr // the reserve saved the records; the disk is still full
	}
	if writeErr != nil {
		return res, &WriteError{spec.Dir.Path(), writeErr}
	}
	return res, nil
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
		Prompt: res.Prompt}
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
		PromptSizing: res.Prompt, HTTPClient: res.HTTPClient,
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
	return c
}
