// Package burst is the burst experiment (`surge burst`): for each
// multiplier k, one run of four phases — warmup (excluded), baseline,
// burst at k × baseline, recovery at baseline — after the target has
// settled; the prediction of the backlog model printed before each burst;
// recovery judged on arrival windows aligned to the burst's end and
// extended up to the recovery limit; and a results table with one row per
// multiplier (docs/method.md §3, §8).
package burst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// The burst experiment's defaults beyond docs/method.md §3's phase lengths.
const (
	DefaultRecoveryLimit = 10 * time.Minute // longest recovery watched, extension included
	DefaultSettleTimeout = 5 * time.Minute  // longest wait for the target to settle before a run
)

// The demo: `surge burst` with no target and no phase settings. Chosen so
// that the whole 2×/5×/10× experiment takes about three and a half
// minutes and tells the method's story: a baseline that meets the SLO by
// construction (six simulated replicas, ≈56 req/s of capacity, at 20
// req/s of short chat answers), a 2× burst that holds, a 5× burst that
// backlogs and recovers, a 10× burst that breaks. Every phase the story
// judges holds enough requests to be decided: the baseline's 400 and the
// 2× burst's 400 can show a p99 and a 99% goodput (368 are needed).
const (
	DemoBaselineRPS   = 20.0
	DemoWarmup        = 5 * time.Second
	DemoBaseline      = 20 * time.Second
	DemoBurst         = 10 * time.Second
	DemoRecovery      = 20 * time.Second
	DemoRecoveryLimit = 60 * time.Second
	DemoWindow        = 5 * time.Second
	DemoSettleTimeout = 30 * time.Second
	DemoReplicas      = 6
	DemoMaxTokensCap  = 64
	// DemoRecoveryMetric judges the demo's recovery on TTFT: in the
	// simulator, as in most chat workloads, completion time is dominated
	// by the answer's length, which hides a few seconds of queueing in
	// 5-second windows of ~25 requests.
	DemoRecoveryMetric = "ttft"
)

// Config is the burst experiment. Its YAML keys are the options' and its
// own; the options are recorded apart from it in the manifest.
type Config struct {
	Options        run.Options   `yaml:",inline" json:"-"`
	BaselineRPS    float64       `yaml:"baseline_rps" json:"baseline_rps"`       // the named baseline, requests/s
	Multipliers    []float64     `yaml:"multipliers" json:"multipliers"`         // burst = baseline × k, one run per k
	Warmup         time.Duration `yaml:"warmup" json:"warmup"`                   // excluded from results
	Baseline       time.Duration `yaml:"baseline" json:"baseline"`               // reference latency and goodput
	Burst          time.Duration `yaml:"burst" json:"burst"`                     // the spike
	Recovery       time.Duration `yaml:"recovery" json:"recovery"`               // planned recovery watch
	RecoveryLimit  time.Duration `yaml:"recovery_limit" json:"recovery_limit"`   // longest recovery watch, extension included
	Arrival        string        `yaml:"arrival" json:"arrival"`                 // arrival process of every phase
	Burstiness     float64       `yaml:"burstiness" json:"burstiness"`           // gamma shape
	RecoveryMetric string        `yaml:"recovery_metric" json:"recovery_metric"` // e2e (completion) or ttft
	CapacityRPS    float64       `yaml:"capacity_rps" json:"capacity_rps"`       // μ for the prediction (0 = estimate)
	BoostRPS       float64       `yaml:"boost_rps" json:"boost_rps"`             // prediction: capacity after a scale-up (0 = none)
	BoostAfter     time.Duration `yaml:"boost_after" json:"boost_after"`         // prediction: when the boost arrives, after the burst starts
	// QueueLimit is the target's admission limit for the prediction: it
	// rejects what finds this many requests waiting (0 = unknown; against
	// the simulator its max_waiting × replicas).
	QueueLimit    int           `yaml:"queue_limit" json:"queue_limit,omitempty"`
	SettleTimeout time.Duration `yaml:"settle_timeout" json:"settle_timeout"` // longest wait for the target to settle before each run
	Simulate      bool          `yaml:"simulate" json:"simulate"`             // run in virtual time against the engine model
	// Repeat is the runs per multiplier, each listing of it (--multipliers
	// 5,5 --repeat 3 is six runs of 5×); see Runs.
	Repeat int `yaml:"repeat" json:"repeat,omitempty"`

	// Demo is set when the demo defaults were applied.
	Demo bool `yaml:"-" json:"demo,omitempty"`
	// BaselineAuto is --baseline-rps auto: a capacity search runs first and
	// its suggestion becomes the baseline.
	BaselineAuto bool `yaml:"-" json:"baseline_auto,omitempty"`
}

// DefaultConfig has docs/method.md §3's defaults.
func DefaultConfig() Config {
	return Config{
		Options:        run.DefaultOptions(),
		Multipliers:    []float64{2, 5, 10},
		Warmup:         schedule.DefaultWarmup,
		Baseline:       schedule.DefaultBaseline,
		Burst:          schedule.DefaultBurst,
		Recovery:       schedule.DefaultRecovery,
		RecoveryLimit:  DefaultRecoveryLimit,
		Arrival:        schedule.ArrivalPoisson,
		Burstiness:     1,
		RecoveryMetric: "e2e",
		SettleTimeout:  DefaultSettleTimeout,
		Repeat:         1,
	}
}

// ApplyDemo fills in the demo's settings when there is no target: the
// built-in simulator with short phases, for every key the user did not set
// (as set reports). With Simulate only the baseline gets a default.
func (c *Config) ApplyDemo(set func(key string) bool) {
	if c.Options.Target != "" {
		return
	}
	if !set("baseline_rps") && !c.BaselineAuto && c.BaselineRPS == 0 {
		c.BaselineRPS = DemoBaselineRPS
	}
	if c.Simulate {
		return
	}
	c.Demo = true
	def := func(key string, apply func()) {
		if !set(key) {
			apply()
		}
	}
	def("warmup", func() { c.Warmup = DemoWarmup })
	def("baseline", func() { c.Baseline = DemoBaseline })
	def("burst", func() { c.Burst = DemoBurst })
	def("recovery", func() { c.Recovery = DemoRecovery })
	def("recovery_limit", func() { c.RecoveryLimit = max(DemoRecoveryLimit, c.Recovery) })
	def("window", func() { c.Options.Window = DemoWindow })
	def("settle_timeout", func() { c.SettleTimeout = DemoSettleTimeout })
	def("recovery_metric", func() { c.RecoveryMetric = DemoRecoveryMetric })
	if !c.Options.Sim.Autoscale { // the autoscaler's own replica bounds decide then
		def("sim.replicas", func() { c.Options.Sim.Replicas = DemoReplicas })
	}
	def("max_tokens_cap", func() { c.Options.MaxTokensCap = DemoMaxTokensCap })
}

// Validate checks the burst settings (not the options); each problem is a
// field.Error named by its YAML key.
func (c *Config) Validate() error {
	var errs field.Errors
	bad := errs.Add
	// With --baseline-rps auto the capacity search sets it before the runs.
	if !c.BaselineAuto && (c.BaselineRPS <= 0 || math.IsNaN(c.BaselineRPS) || math.IsInf(c.BaselineRPS, 0)) {
		if c.Options.Target != "" && c.BaselineRPS == 0 {
			bad("baseline_rps", "required with --target: the sustainable request rate the bursts multiply (find it with surge capacity, or pass --baseline-rps auto)")
		} else {
			bad("baseline_rps", "must be a number of requests/s > 0 (or auto), got %g", c.BaselineRPS)
		}
	}
	if len(c.Multipliers) == 0 {
		bad("multipliers", "give at least one, e.g. 2,5,10")
	}
	baselineOK := c.BaselineRPS > 0 && !math.IsInf(c.BaselineRPS, 0)
	if baselineOK && c.BaselineRPS > schedule.MaxRate {
		bad("baseline_rps", "%g requests/s is more than the load generator can schedule (at most %g/s)", c.BaselineRPS, float64(schedule.MaxRate))
		baselineOK = false
	}
	for _, k := range c.Multipliers {
		switch {
		case !(k > 0) || math.IsInf(k, 0):
			bad("multipliers", "each must be > 0, got %g", k)
		case baselineOK && k*c.BaselineRPS > schedule.MaxRate:
			// Found here, before the run folder is created, rather than when
			// the burst's schedule is built.
			bad("multipliers", "%g × the baseline %g = %g requests/s is more than the load generator can schedule (at most %g/s)",
				k, c.BaselineRPS, k*c.BaselineRPS, float64(schedule.MaxRate))
		}
	}
	for _, d := range []struct {
		key  string
		v    time.Duration
		zero bool
	}{{"warmup", c.Warmup, true}, {"baseline", c.Baseline, false}, {"burst", c.Burst, false}, {"recovery", c.Recovery, false}} {
		if d.v < 0 || (!d.zero && d.v == 0) {
			bad(d.key, "must be > 0, got %s", d.v)
		}
	}
	if c.RecoveryLimit < c.Recovery {
		bad("recovery_limit", "must be ≥ --recovery (%s), got %s", c.Recovery, c.RecoveryLimit)
	}
	if c.Arrival != schedule.ArrivalConstant && c.Arrival != schedule.ArrivalPoisson && c.Arrival != schedule.ArrivalGamma {
		bad("arrival", "must be constant, poisson or gamma, got %q", c.Arrival)
	}
	if c.RecoveryMetric != "e2e" && c.RecoveryMetric != "ttft" {
		bad("recovery_metric", "must be e2e or ttft, got %q", c.RecoveryMetric)
	}
	if c.CapacityRPS < 0 {
		bad("capacity_rps", "must be ≥ 0, got %g", c.CapacityRPS)
	}
	if c.BoostRPS < 0 {
		bad("boost_rps", "must be ≥ 0, got %g", c.BoostRPS)
	}
	if c.QueueLimit < 0 {
		bad("queue_limit", "must be ≥ 0 requests (0 = unknown), got %d", c.QueueLimit)
	}
	if c.SettleTimeout < 0 {
		bad("settle_timeout", "must be ≥ 0, got %s", c.SettleTimeout)
	}
	errs.Merge("", experiment.ValidateRepeat(c.Repeat))
	return errs.Err()
}

// plan is the four phases of one run at multiplier k; the recovery phase
// is as long as the recovery limit, and ends early once recovered.
func (c *Config) plan(k float64) schedule.Plan {
	ph := func(name string, d time.Duration, mult float64) schedule.Phase {
		p := schedule.Phase{Name: name, Duration: d, Multiplier: mult, Arrival: c.Arrival}
		if c.Arrival == schedule.ArrivalGamma {
			p.Burstiness = c.Burstiness
		}
		return p
	}
	p := schedule.Plan{BaselineRPS: c.BaselineRPS}
	if c.Warmup > 0 {
		p.Phases = append(p.Phases, ph(schedule.PhaseWarmup, c.Warmup, 1))
	}
	p.Phases = append(p.Phases, ph(schedule.PhaseBaseline, c.Baseline, 1), ph(schedule.PhaseBurst, c.Burst, k), ph(schedule.PhaseRecovery, c.RecoveryLimit, 1))
	return p
}

// Planned is the runs the experiment would make, one per multiplier, for
// --dry-run. With --baseline-rps auto there is no plan to show: the
// baseline comes from a capacity search, which sends requests.
func (c *Config) Planned() ([]experiment.PlannedRun, error) {
	if c.BaselineAuto {
		var errs field.Errors
		errs.Add("baseline_rps", "auto is found by a capacity search, which sends requests: --dry-run needs a rate in requests/s")
		return nil, errs.Err()
	}
	var out []experiment.PlannedRun
	for _, r := range c.Runs() {
		note := fmt.Sprintf("recovery is planned for %s and watched up to %s (--recovery-limit); it ends once recovered, so fewer arrivals may be sent", c.Recovery, c.RecoveryLimit)
		out = append(out, experiment.PlannedRun{Name: r.Folder(), Plan: c.plan(r.K), Exclude: []string{schedule.PhaseWarmup}, Notes: []string{note}, Rep: r.Rep})
	}
	return out, nil
}

// PlannedBurst is one run of the experiment: multiplier K, rep Rep of
// Repeats (both 0 when K has a single run).
type PlannedBurst struct {
	K            float64
	Rep, Repeats int
}

// Folder is the run's folder: burst-<k>x, or burst-<k>x/rep-<i> when k
// has several runs.
func (p PlannedBurst) Folder() string {
	name := "burst-" + fmtK(p.K) + "x"
	if p.Repeats > 1 {
		return name + "/" + experiment.RepDir(p.Rep)
	}
	return name
}

// Runs is the experiment's runs in the order they are made: Repeat rounds,
// each the multipliers in their listed order — so that drift of the
// target over the experiment spreads over every multiplier instead of
// landing on the last one. A multiplier gets Repeat runs per listing:
// --multipliers 2,5,5 --repeat 3 is 3 runs of 2× and 6 of 5×, in
// burst-5x/rep-1 … rep-6 (a duplicate is a repeat, never an overwrite).
func (c *Config) Runs() []PlannedBurst {
	_, counts := experiment.RepeatCounts(c.Multipliers, c.Repeat)
	done := map[float64]int{}
	var out []PlannedBurst
	for range max(1, c.Repeat) {
		for _, k := range c.Multipliers {
			done[k]++
			p := PlannedBurst{K: k}
			if counts[k] > 1 {
				p.Rep, p.Repeats = done[k], counts[k]
			}
			out = append(out, p)
		}
	}
	return out
}

// RecoveryRule is the rule recovery is judged by: P99 of the chosen
// latency within 10% of the baseline's for three consecutive windows,
// each window long enough at the baseline rate to be decided
// (judge.RecoveryWindowFor): at 2 req/s a 10 s window holds 20 requests,
// too few to tell a window as at baseline from one 10% slow.
func (c *Config) RecoveryRule() analyze.RecoveryRule {
	r := analyze.RecoveryRule{Window: judge.RecoveryWindowFor(c.BaselineRPS, c.Options.Window)}
	if c.RecoveryMetric == "ttft" {
		r.Metric = analyze.MetricTTFTSchedule
	} else {
		r.Metric = analyze.MetricE2ESchedule
	}
	return r
}

// Run is one multiplier's run and its verdicts.
type Run struct {
	K          float64
	Rep        int // the run among Repeats runs of K (1..Repeats); 0 when K has one run
	Repeats    int
	Result     *run.Result
	Prediction *predict.Prediction // nil when μ is unknown
	Mu         float64             // the capacity the prediction used, req/s; 0 = unknown
	MuSource   string              // where Mu came from, or why it is unknown
	Settle     time.Duration
	SettleNote string
	Recovery   recovery
	BurstEnd   time.Duration
	// Problems are the files `surge report` found missing or unreadable
	// in the run's folder, and what the reports lack for them.
	Problems []string
}

// Burst executes the burst experiment into d: one run folder per
// multiplier (burst-<k>x/), then the results table and report.html at the
// top, with a summary on w.
func Burst(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
	runs, err := burstRuns(ctx, env, c, d, w)
	if err != nil {
		return experiment.Outcome{}, err
	}
	interrupted := ctx.Err() != nil || env.BudgetStop() != "" // a budget stop: the later multipliers did not run
	for _, r := range runs {
		interrupted = interrupted || r.Result.Partial
	}
	return writeReports(env, c, d, runs, interrupted, w)
}

// capacityInfo is μ and where it came from.
type capacityInfo struct {
	mu     float64 // 0 = unknown
	source string
}

// burstRuns executes one run per multiplier and writes the run folders.
func burstRuns(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) ([]Run, error) {
	if err := c.Validate(); err != nil {
		return nil, &run.ConfigError{Err: err}
	}
	switch {
	case c.Demo:
		fmt.Fprintf(w, "surge burst — DEMO against the built-in simulated engine (%s).\n", env.BaseURL)
		fmt.Fprintf(w, "Short demo phases: warmup %s, baseline %s at %.0f req/s, burst %s, recovery %s (watched up to %s), windows of %s;\n"+
			"%d simulated replicas, chat prompts with short answers (max_tokens ≤ %d); recovery judged on TTFT.\n",
			c.Warmup, c.Baseline, c.BaselineRPS, c.Burst, c.Recovery, c.RecoveryLimit, c.Options.Window, c.Options.Sim.Replicas, c.Options.MaxTokensCap)
		fmt.Fprintf(w, "Point it at your endpoint with: surge burst --target https://HOST/v1 --model NAME --baseline-rps R [--metrics-url URL]\n\n")
	case env.Virtual:
		experiment.Announce(w, env, "burst")
		fmt.Fprintln(w)
	}
	mu := capacityInfo{c.CapacityRPS, "--capacity-rps"}
	if c.BaselineAuto && c.BaselineRPS == 0 {
		var err error
		if mu, err = autoBaseline(ctx, env, c, d, w); err != nil {
			return nil, err
		}
	}
	if env.Opts.Sessions {
		// The backlog model counts single requests; a session sends
		// several turns spread over time. No prediction beats a wrong one.
		mu = capacityInfo{0, muSessions}
		fmt.Fprintf(w, "note: %s.\n\n", muSessions)
	}
	if mu.mu == 0 && env.Simulated && !env.Opts.Sessions {
		m, err := simCapacity(env.Opts)
		var ce *run.ConfigError
		switch {
		case errors.As(err, &ce):
			return nil, err
		case err != nil:
			// As for a real target of unknown capacity: the bursts run, with
			// no prediction until one of them measures μ.
			fmt.Fprintf(w, "note: μ unknown: %v.\n\n", err)
		default:
			mu = capacityInfo{m, "simulated engine, raised to saturation in virtual time"}
		}
	}
	if mu.mu > 0 && c.BaselineRPS >= mu.mu {
		fmt.Fprintf(w, "WARNING: the baseline %.2f req/s is at or above the estimated capacity μ = %.2f req/s (%s).\n"+
			"         A burst experiment needs a sustainable baseline: the backlog will never drain. Lower --baseline-rps.\n\n", c.BaselineRPS, mu.mu, mu.source)
	}

	if rw := c.RecoveryRule().Window; c.Baseline < analyze.DefaultConsecutive*rw {
		fmt.Fprintf(w, "note: the baseline (%s) is shorter than %d recovery windows of %s (at %.4g req/s a window must hold about 55 requests):\n"+
			"      recovery will be INCONCLUSIVE. Lengthen --baseline to at least %s.\n\n",
			c.Baseline, analyze.DefaultConsecutive, rw, c.BaselineRPS, analyze.DefaultConsecutive*rw)
	}

	var runs []Run
	gate := &experiment.Gate{Env: env, Timeout: c.SettleTimeout, Out: w}
	parents := map[float64]*rundir.Dir{} // burst-<k>x of a multiplier with several runs
	planned := c.Runs()
	for i, pb := range planned {
		if ctx.Err() != nil {
			break
		}
		if why := env.BudgetExhausted(); why != "" {
			fmt.Fprintf(w, "%s and later: not started (%s)\n", pb.Folder(), why)
			break
		}
		dir := d
		if pb.Repeats > 1 {
			if parents[pb.K] == nil {
				p, err := d.Sub("burst-" + fmtK(pb.K) + "x")
				if err != nil {
					return runs, err
				}
				parents[pb.K] = p
			}
			dir = parents[pb.K]
		}
		r, err := burstRun(ctx, env, c, dir, w, gate, pb, &mu)
		if r != nil {
			runs = append(runs, *r)
			printRun(w, r)
		}
		if err != nil {
			return runs, err
		}
		if why := r.Result.Unusable; why != "" {
			if i+1 < len(planned) {
				fmt.Fprintf(w, "%s and later: not started (%s)\n", planned[i+1].Folder(), why)
			}
			break
		}
		if r.Result.Partial {
			if why := env.BudgetStop(); why != "" && i+1 < len(planned) {
				fmt.Fprintf(w, "%s and later: not started (%s)\n", planned[i+1].Folder(), why)
			}
			break
		}
	}
	return runs, nil
}

// muSessions is why a sessions burst has no prediction.
const muSessions = "μ unknown to the backlog model with --sessions: it counts single requests, and each session sends several turns spread over time, so no recovery is predicted"

// burstRun settles the target, predicts and runs multiplier k. When μ was
// unknown and the burst built a backlog, μ is measured from it (and kept
// for the later multipliers).
func burstRun(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer, gate *experiment.Gate, pb PlannedBurst, mu *capacityInfo) (*Run, error) {
	k := pb.K
	name, folder := "burst-"+fmtK(k)+"x", "burst-"+fmtK(k)+"x"
	if pb.Repeats > 1 {
		name, folder = fmt.Sprintf("%s rep %d/%d (seed %d)", name, pb.Rep, pb.Repeats, env.Opts.Seed+int64(pb.Rep-1)), experiment.RepDir(pb.Rep)
	}
	r := &Run{K: k, Rep: pb.Rep, Repeats: pb.Repeats, Mu: mu.mu, MuSource: mu.source}
	if mu.mu == 0 && mu.source != muSessions {
		r.MuSource = "μ unknown: pass --capacity-rps"
	}
	if !env.Virtual {
		var err error
		if r.Settle, r.SettleNote, err = gate.Wait(ctx); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "settle before %s: %s (%s)\n", name, r.Settle.Round(100*time.Millisecond), r.SettleNote)
	}
	burstStart := c.Warmup + c.Baseline
	r.BurstEnd = burstStart + c.Burst
	if mu.mu > 0 {
		if p, err := predict.Predict(predictParams(c, k, mu.mu, env.Simulated, env.Virtual)); err == nil {
			r.Prediction = &p
			fmt.Fprintf(w, "%s: burst %.1f req/s (%s× %.1f) for %s; prediction with μ = %.2f req/s (%s), %s: %s\n",
				name, k*c.BaselineRPS, fmtK(k), c.BaselineRPS, c.Burst, mu.mu, mu.source, p.Model, p.Explanation)
		}
	} else if mu.source == muSessions {
		fmt.Fprintf(w, "%s: burst of %.1f sessions/s (%s× %.1f) for %s; no prediction with --sessions\n",
			name, k*c.BaselineRPS, fmtK(k), c.BaselineRPS, c.Burst)
	} else {
		fmt.Fprintf(w, "%s: burst %.1f req/s (%s× %.1f) for %s; no prediction yet (capacity unknown: pass --capacity-rps)\n",
			name, k*c.BaselineRPS, fmtK(k), c.BaselineRPS, c.Burst)
	}
	sub, err := d.Sub(folder)
	if err != nil {
		return nil, err
	}
	rule := c.RecoveryRule()
	stop := &recovered{env: env, burstEnd: r.BurstEnd, plannedEnd: r.BurstEnd + c.Recovery, window: env.Opts.Window, rule: rule, exclude: []string{schedule.PhaseWarmup}}
	spec := run.Spec{Name: "burst-" + fmtK(k) + "x", Dir: sub, Command: "burst", Plan: c.plan(k), Exclude: []string{schedule.PhaseWarmup},
		Experiment: experimentRecord{Multiplier: k, Burst: c}, Recovery: rule, Stop: stop, Rep: pb.Rep, Repeats: pb.Repeats, Multiplier: k}
	if pb.Repeats > 1 {
		spec.Name += "-" + experiment.RepDir(pb.Rep)
	}
	stop.plan = spec.Plan
	measuredMuWarning := ""
	spec.Finish = func(res *run.Result) {
		if !env.Virtual && len(res.Engine) > 0 {
			// The engine observes queue time when a request finishes, so the
			// burst's queueing shows up as the backlog drains: take the
			// histogram delta from the burst start to the end of the run.
			last := res.Engine[len(res.Engine)-1].TNs
			res.QueueWait[schedule.PhaseBurst] = run.QueueWaitOf(scrape.PhaseStats(res.Engine, scrape.QueueTime, int64(burstStart), last))
		}
		if mu.source != muSessions && (mu.mu == 0 || c.CapacityRPS == 0 && !env.Simulated) {
			// μ measured: the burst's completion rate, when a backlog built.
			var done []int64
			if d := res.Diag; d != nil && d.From() >= 0 && d.From() <= int64(burstStart) {
				done = d.DoneOK() // gathered by the run's pass over its records
			} else {
				done, _ = analyze.DoneOK(res.Records, int64(burstStart)) // a file that fails to read was reported by the analysis
			}
			mc := analyze.MeasureCapacity(res.Analysis, done, burstStart, r.BurstEnd)
			if !mc.OK && mu.mu == 0 && mc.Why == analyze.NotSaturated {
				// No prediction from a completion rate the burst's own
				// arrivals set: it would predict no backlog at all.
				r.MuSource = mc.Why
			}
			if m, ok := mc.Mu, mc.OK; ok {
				*mu = capacityInfo{m, "measured: completions/s during the " + fmtK(k) + "× burst"}
				r.Mu = m
				if c.BaselineRPS >= m {
					measuredMuWarning = fmt.Sprintf("WARNING: the baseline %.2f req/s is at or above the capacity measured during this burst (μ ≈ %.2f req/s).\n"+
						"         The baseline is not sustainable: the backlog cannot drain. Lower --baseline-rps.\n", c.BaselineRPS, m)
				}
				if p, err := predict.Predict(predictParams(c, k, m, env.Simulated, env.Virtual)); err == nil {
					r.Prediction, r.MuSource = &p, mu.source+" (after the fact)"
				}
			}
		}
		if base, ok := res.Analysis.Phase(schedule.PhaseBaseline); ok && r.Prediction != nil && !env.Simulated {
			// A managed endpoint announced its quota: predict with it,
			// after the fact (the limits are known only from its answers).
			p := r.Prediction.Params
			if headerQuota(&p, &base.Client.RateLimit, c.Options) {
				if pr, err := predict.Predict(p); err == nil {
					r.Prediction, r.MuSource = &pr, r.MuSource+"; quota from the baseline's rate-limit headers"
				}
			}
		}
		res.Burst = &rundir.BurstInfo{K: k, BaselineRPS: c.BaselineRPS, Mu: r.Mu, MuSource: r.MuSource, Prediction: r.Prediction,
			BurstEndNs: int64(r.BurstEnd), PlannedRecoveryNs: int64(c.Recovery), SettleNs: int64(r.Settle), SettleNote: r.SettleNote}
	}
	res, err := env.Execute(ctx, spec)
	if res == nil {
		return nil, err
	}
	fmt.Fprint(w, measuredMuWarning)
	r.Result = res
	r.Recovery = measuredRecovery(res, c.Recovery)
	return r, err
}

// experimentRecord is what a burst run's manifest records of the
// experiment: the multiplier and the burst settings.
type experimentRecord struct {
	Multiplier float64 `json:"multiplier"`
	Burst      *Config `json:"burst"`
}

// recovered ends a run's recovery phase once the analysis says it has
// recovered, judging whole windows only. It analyses the records as the
// horizon passes them (one Analyzer over the run's plan); a record
// scheduled at or after the planned end of the recovery waits until a
// judged horizon, cut back to a whole window, passes it — so what it
// holds is at most a window's worth of records plus what is in flight.
type recovered struct {
	env                  *run.Env
	plan                 schedule.Plan
	exclude              []string
	rule                 analyze.RecoveryRule
	burstEnd, plannedEnd time.Duration
	window               time.Duration

	an   *analyze.Analyzer // nil until the first record
	err  error             // the analysis configuration's error: never stops
	held []record.Record   // scheduled at or after plannedEnd, not yet analysed
}

// CheckFrom is the end of the planned recovery window.
func (s *recovered) CheckFrom() time.Duration { return s.plannedEnd }

// Add analyses r, or holds it when a later whole-window cut may still
// leave it out.
func (s *recovered) Add(r *record.Record) {
	if s.an == nil && s.err == nil {
		s.an, s.err = analyze.New(s.env.AnalyzeConfig(s.plan, s.exclude, s.rule))
	}
	if s.err != nil {
		return
	}
	// Every horizon judged is cut back to a window boundary past
	// plannedEnd (Stop), so a record scheduled before plannedEnd is below
	// all of them.
	if time.Duration(r.ScheduledNs) < s.plannedEnd {
		s.an.Add(r)
		return
	}
	s.held = append(s.held, *r)
}

// Stop says "recovered" once the recovery rule holds on the windows seen.
// The verdict is the one an analysis of the plan cut at the horizon (the
// records scheduled before it) gives: the windows after the cut are empty
// here, and an empty window never qualifies.
func (s *recovered) Stop(horizon time.Duration) string {
	// Judge whole windows only: cut the horizon back to the last window
	// boundary (windows are aligned to the burst end), so a recovery is
	// never declared on a window partly observed.
	horizon = s.burstEnd + (horizon-s.burstEnd)/s.window*s.window
	if horizon <= s.plannedEnd || s.an == nil {
		return ""
	}
	kept := s.held[:0]
	for i := range s.held {
		if time.Duration(s.held[i].ScheduledNs) < horizon {
			s.an.Add(&s.held[i])
		} else {
			kept = append(kept, s.held[i])
		}
	}
	clear(s.held[len(kept):])
	s.held = kept
	if judge.JudgeRecovery(s.an.Result(), nil).Recovered {
		return "recovered"
	}
	return ""
}

func predictParams(c *Config, k, mu float64, simulated, virtual bool) predict.Params {
	// Requests give up after the client's timeout: the model caps the
	// backlog that will be served at μ × timeout (predict, "Abandonment").
	p := predict.Params{Mu: mu, Lambda: c.BaselineRPS, BurstRate: k * c.BaselineRPS, BurstLen: c.Burst, BoostMu: c.BoostRPS, BoostAt: c.BoostAfter,
		Patience: c.Options.Timeout}
	switch sc := c.Options.Sim; {
	case c.QueueLimit > 0:
		p.QueueLimit = float64(c.QueueLimit)
	case simulated && sc.MaxWaiting > 0:
		// The simulator's admission bound is known: arrivals past it are
		// rejected (429).
		p.QueueLimit = float64(sc.MaxWaiting * max(1, sc.Replicas))
	}
	if sc := &c.Options.Sim; simulated && sc.HasGateway() {
		quotaParams(&p, sc, c.Options)
	}
	if p.QueueLimit > 0 && !virtual && c.Options.Retries > 0 && p.QuotaRate == 0 {
		// The client's retries send the rejected requests again after the
		// Retry-After hint; the simulator's is ⌈waiting / completion rate⌉
		// (sim, "Admission control"), which a full queue makes Q / μ, and
		// the model takes that for any target. Virtual time does not retry.
		p.Retries = c.Options.Retries
		p.RetryDelay = time.Duration(max(1, math.Ceil(p.QueueLimit/mu))) * time.Second
	}
	return p
}

// quotaParams gives p the simulator's gateway (sim.Gateway) in requests.
func quotaParams(p *predict.Params, sc *sim.Config, o run.Options) {
	quotaOf(p, [3]int64{int64(sc.QuotaRequestsPerMinute), int64(sc.QuotaTokensPerMinute), int64(sc.QuotaTokensPerDay)}, tokensPerRequest(o), float64(sc.GatewayQueue))
}

// headerQuota gives p the quota a real endpoint announced in the
// baseline's rate-limit headers (the largest limits seen: requests and
// tokens per minute, tokens per day), refusing what is over it (managed
// endpoints answer 429, they do not queue). False when the headers named
// no limit.
func headerQuota(p *predict.Params, rl *analyze.RateLimitStats, o run.Options) bool {
	return quotaOf(p, [3]int64{rl.LimitRequests, rl.LimitTokens, rl.LimitTokensDay}, tokensPerRequest(o), 0)
}

// tokensPerRequest is what a request costs a token quota: prompt +
// max_tokens, at the workload's means (0 when unknown).
func tokensPerRequest(o run.Options) float64 {
	prof, err := o.WorkloadProfile()
	if err != nil {
		return 0
	}
	return prof.Prompt.Mean() + min(prof.Output.Mean(), float64(prof.MaxTokens))
}

// quotaOf sets p's quota from the limits of the requests-per-minute,
// tokens-per-minute and tokens-per-day buckets (≤ 0: none): each bucket's
// refill and stock divided by what a request costs it (1 request, or
// tokens), the tightest binding. False when no bucket applies.
func quotaOf(p *predict.Params, limits [3]int64, tokens, queue float64) bool {
	windows, costs := [3]float64{60, 60, 86400}, [3]float64{1, tokens, tokens}
	rate, stock := math.Inf(1), math.Inf(1)
	for i, limit := range limits {
		if limit <= 0 || costs[i] <= 0 {
			continue
		}
		rate = min(rate, float64(limit)/windows[i]/costs[i])
		stock = min(stock, float64(limit)/costs[i])
	}
	if math.IsInf(rate, 1) || stock < 1 {
		return false
	}
	p.QuotaRate, p.QuotaBurst, p.QuotaQueue = rate, stock, queue
	return true
}

// simCapacity measures the simulated engine's capacity μ for the
// configured workload: the load is raised in virtual time until the
// engine holds a waiting queue, and μ is its completion rate then
// (sim.Capacity).
func simCapacity(o run.Options) (float64, error) {
	wcfg, err := o.WorkloadConfig()
	if err != nil {
		return 0, &run.ConfigError{Err: err}
	}
	gen, err := workload.New(wcfg)
	if err != nil {
		return 0, &run.ConfigError{Err: err}
	}
	res, err := sim.Capacity(o.Sim, func(i int) sim.Request {
		r := gen.Generate(schedule.Arrival{Seq: int64(i)})
		prompt := r.PromptTokens
		for _, im := range r.Images {
			prompt += sim.ImageTokens(im.Width, im.Height)
		}
		return sim.Request{PromptTokens: prompt, MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS, PrefillOnly: r.Inputs != nil}
	})
	if err != nil {
		return 0, fmt.Errorf("burst: the simulator's capacity: %w", err)
	}
	return res.RPS, nil
}

func fmtK(k float64) string { return strconv.FormatFloat(k, 'f', -1, 64) }
