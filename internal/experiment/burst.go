package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// The burst experiment's defaults beyond METHOD §3's phase lengths.
const (
	DefaultRecoveryLimit = 10 * time.Minute // longest recovery watched, extension included
	DefaultSettleTimeout = 5 * time.Minute  // longest wait for the target to settle before a run
)

// The demo: `surge burst` with no target and no phase flags. Chosen so the
// whole 2×/5×/10× experiment takes about three minutes and the 5× and 10×
// bursts build a real backlog in the simulator (≈10 req/s of capacity).
const (
	DemoBaselineRPS   = 4.0
	DemoWarmup        = 5 * time.Second
	DemoBaseline      = 20 * time.Second
	DemoBurst         = 6 * time.Second
	DemoRecovery      = 20 * time.Second
	DemoRecoveryLimit = 75 * time.Second
	DemoWindow        = 5 * time.Second
	DemoSettleTimeout = 30 * time.Second
	// DemoRecoveryMetric judges the demo's recovery on TTFT: in the
	// simulator, as in most chat workloads, completion time is dominated
	// by the answer's length, which hides a few seconds of queueing in
	// 5-second windows of ~25 requests.
	DemoRecoveryMetric = "ttft"
)

// BurstConfig is the burst experiment (`surge burst`).
type BurstConfig struct {
	Options        `yaml:",inline"`
	BaselineRPS    float64       `yaml:"baseline_rps"`    // the named baseline, requests/s
	Multipliers    []float64     `yaml:"multipliers"`     // burst = baseline × k, one run per k
	Warmup         time.Duration `yaml:"warmup"`          // excluded from results
	Baseline       time.Duration `yaml:"baseline"`        // reference latency and goodput
	Burst          time.Duration `yaml:"burst"`           // the spike
	Recovery       time.Duration `yaml:"recovery"`        // planned recovery watch
	RecoveryLimit  time.Duration `yaml:"recovery_limit"`  // longest recovery watch, extension included
	Arrival        string        `yaml:"arrival"`         // arrival process of every phase
	Burstiness     float64       `yaml:"burstiness"`      // gamma shape
	RecoveryMetric string        `yaml:"recovery_metric"` // e2e (completion) or ttft
	CapacityRPS    float64       `yaml:"capacity_rps"`    // μ for the prediction (0 = estimate)
	BoostRPS       float64       `yaml:"boost_rps"`       // prediction: capacity after a scale-up (0 = none)
	BoostAfter     time.Duration `yaml:"boost_after"`     // prediction: when the boost arrives, after the burst starts
	SettleTimeout  time.Duration `yaml:"settle_timeout"`  // longest wait for the target to settle before each run
	Simulate       bool          `yaml:"simulate"`        // run in virtual time against the engine model

	// Demo is set when the demo defaults were applied.
	Demo bool `yaml:"-"`

	// BaselineAuto is --baseline-rps auto: a capacity search runs first and
	// its suggestion becomes the baseline (see autoBaseline).
	BaselineAuto   bool   `yaml:"-"`
	capacitySource string // where CapacityRPS came from, when not the flag
}

// DefaultBurstConfig has METHOD §3's defaults.
func DefaultBurstConfig() BurstConfig {
	return BurstConfig{
		Options:        DefaultOptions(),
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
	}
}

// RegisterFlags binds the flags of `surge burst`.
func (c *BurstConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.Var(baselineFlag{c}, "baseline-rps", "the named baseline in requests/s (must be sustainable; required with --target), or auto: run a capacity search first and use its suggestion")
	fs.Float64SliceVar(&c.Multipliers, "multipliers", c.Multipliers, "burst multipliers; each is a separate run at baseline × k")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "warmup phase at the baseline rate (excluded from results)")
	fs.DurationVar(&c.Baseline, "baseline", c.Baseline, "baseline phase: reference latency and goodput")
	fs.DurationVar(&c.Burst, "burst", c.Burst, "burst phase at baseline × k")
	fs.DurationVar(&c.Recovery, "recovery", c.Recovery, "planned recovery phase at the baseline rate")
	fs.DurationVar(&c.RecoveryLimit, "recovery-limit", c.RecoveryLimit, "keep watching recovery up to this long if not recovered in the planned window")
	fs.StringVar(&c.Arrival, "arrival", c.Arrival, "arrival process: constant, poisson, gamma")
	fs.Float64Var(&c.Burstiness, "burstiness", c.Burstiness, "gamma shape (with --arrival gamma)")
	fs.StringVar(&c.RecoveryMetric, "recovery-metric", c.RecoveryMetric, "latency judged for recovery: e2e (completion) or ttft")
	fs.Float64Var(&c.CapacityRPS, "capacity-rps", c.CapacityRPS, "the target's capacity μ in requests/s for the prediction (default: estimate)")
	fs.Float64Var(&c.BoostRPS, "boost-rps", c.BoostRPS, "prediction: capacity once a scale-up lands (0 = none)")
	fs.DurationVar(&c.BoostAfter, "boost-after", c.BoostAfter, "prediction: when the scale-up lands, after the burst starts")
	fs.DurationVar(&c.SettleTimeout, "settle-timeout", c.SettleTimeout, "longest wait for the target to return to baseline before each run")
	fs.BoolVar(&c.Simulate, "simulate", c.Simulate, "run the whole experiment in virtual time against the engine model (seconds, not minutes)")
	c.Options.RegisterFlags(fs)
}

// ApplyDemo fills in the demo's settings when there is no target: the
// built-in simulator with short phases (every field the user did not set,
// as changed reports). With --simulate only the baseline gets a default.
func (c *BurstConfig) ApplyDemo(changed func(name string) bool) {
	if c.Target != "" {
		return
	}
	if !changed("baseline-rps") && !c.BaselineAuto && c.BaselineRPS == 0 {
		c.BaselineRPS = DemoBaselineRPS
	}
	if c.Simulate {
		return
	}
	c.Demo = true
	set := func(flag string, apply func()) {
		if !changed(flag) {
			apply()
		}
	}
	set("warmup", func() { c.Warmup = DemoWarmup })
	set("baseline", func() { c.Baseline = DemoBaseline })
	set("burst", func() { c.Burst = DemoBurst })
	set("recovery", func() { c.Recovery = DemoRecovery })
	set("recovery-limit", func() { c.RecoveryLimit = max(DemoRecoveryLimit, c.Recovery) })
	set("window", func() { c.Window = DemoWindow })
	set("settle-timeout", func() { c.SettleTimeout = DemoSettleTimeout })
	set("recovery-metric", func() { c.RecoveryMetric = DemoRecoveryMetric })
}

// Validate checks the burst settings; errors name the flag.
func (c *BurstConfig) Validate() error {
	var errs []string
	bad := func(flag, format string, a ...any) { errs = append(errs, "--"+flag+": "+fmt.Sprintf(format, a...)) }
	// With --baseline-rps auto the capacity search sets it before the runs.
	if !c.BaselineAuto && (c.BaselineRPS <= 0 || math.IsNaN(c.BaselineRPS) || math.IsInf(c.BaselineRPS, 0)) {
		if c.Target != "" {
			bad("baseline-rps", "required with --target: the sustainable request rate the bursts multiply (find it with a short surge run, or pass --capacity-rps to be warned when it is too high)")
		} else {
			bad("baseline-rps", "must be > 0, got %g", c.BaselineRPS)
		}
	}
	if len(c.Multipliers) == 0 {
		bad("multipliers", "give at least one, e.g. 2,5,10")
	}
	for _, k := range c.Multipliers {
		if !(k > 0) || math.IsInf(k, 0) {
			bad("multipliers", "each must be > 0, got %g", k)
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
		zero bool
	}{{"warmup", c.Warmup, true}, {"baseline", c.Baseline, false}, {"burst", c.Burst, false}, {"recovery", c.Recovery, false}} {
		if d.v < 0 || (!d.zero && d.v == 0) {
			bad(d.flag, "must be > 0, got %s", d.v)
		}
	}
	if c.RecoveryLimit < c.Recovery {
		bad("recovery-limit", "must be ≥ --recovery (%s), got %s", c.Recovery, c.RecoveryLimit)
	}
	if c.Arrival != schedule.ArrivalConstant && c.Arrival != schedule.ArrivalPoisson && c.Arrival != schedule.ArrivalGamma {
		bad("arrival", "must be constant, poisson or gamma, got %q", c.Arrival)
	}
	if c.RecoveryMetric != "e2e" && c.RecoveryMetric != "ttft" {
		bad("recovery-metric", "must be e2e or ttft, got %q", c.RecoveryMetric)
	}
	if c.CapacityRPS < 0 {
		bad("capacity-rps", "must be ≥ 0, got %g", c.CapacityRPS)
	}
	if c.BoostRPS < 0 {
		bad("boost-rps", "must be ≥ 0, got %g", c.BoostRPS)
	}
	if c.SettleTimeout < 0 {
		bad("settle-timeout", "must be ≥ 0, got %s", c.SettleTimeout)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// plan is the four phases of one run at multiplier k; the recovery phase
// is as long as the recovery limit, and ends early once recovered.
func (c *BurstConfig) plan(k float64) schedule.Plan {
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

// BurstInfo is what summary.json records about a burst run beyond the
// analysis, so that `surge report` can re-render it.
type BurstInfo struct {
	K                 float64             `json:"multiplier"`
	BaselineRPS       float64             `json:"baseline_rps"`
	Mu                float64             `json:"mu_rps"` // 0 = unknown
	MuSource          string              `json:"mu_source"`
	Prediction        *predict.Prediction `json:"prediction,omitempty"`
	BurstEndNs        int64               `json:"burst_end_ns"`
	PlannedRecoveryNs int64               `json:"planned_recovery_ns"`
	SettleNs          int64               `json:"settle_ns"`
	SettleNote        string              `json:"settle_note"`
}

// BurstRun is one multiplier's run and its verdicts.
type BurstRun struct {
	K          float64
	Result     *Result
	Prediction *predict.Prediction // nil when μ is unknown
	MuSource   string
	Settle     time.Duration
	SettleNote string
	Recovery   report.Recovery
	BurstEnd   time.Duration
}

// Burst executes the burst experiment into dir: one run folder per
// multiplier (dir/burst-<k>x/), then the results table and report.html at
// the top.
func Burst(ctx context.Context, env *Env, c *BurstConfig, dir string) (Outcome, error) {
	runs, err := burstRuns(ctx, env, c, dir)
	if err != nil {
		return Outcome{}, err
	}
	interrupted := ctx.Err() != nil
	for _, r := range runs {
		interrupted = interrupted || r.Result.Partial
	}
	return writeBurstReports(env, c, dir, runs, interrupted)
}

// burstRuns executes one run per multiplier and writes the run folders.
func burstRuns(ctx context.Context, env *Env, c *BurstConfig, dir string) ([]BurstRun, error) {
	if err := c.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	w := env.Stdout
	switch {
	case c.Demo:
		fmt.Fprintf(w, "surge burst — DEMO against the built-in simulated engine (%s).\n", env.BaseURL)
		fmt.Fprintf(w, "Short demo phases: warmup %s, baseline %s at %.0f req/s, burst %s, recovery %s (watched up to %s), windows of %s;\n"+
			"recovery judged on TTFT P99 (in the simulator completion time mostly reflects answer length).\n",
			c.Warmup, c.Baseline, c.BaselineRPS, c.Burst, c.Recovery, c.RecoveryLimit, c.Window)
		fmt.Fprintf(w, "Point it at your endpoint with: surge burst --target https://HOST/v1 --model NAME --baseline-rps R [--metrics-url URL]\n\n")
	case c.Simulate:
		fmt.Fprintf(w, "surge burst --simulate — virtual time against the engine model; no requests leave this process.\n\n")
	}

	if c.BaselineAuto && c.BaselineRPS == 0 {
		if err := autoBaseline(ctx, env, c, dir); err != nil {
			return nil, err
		}
	}
	mu, muSource := c.CapacityRPS, "--capacity-rps"
	if c.capacitySource != "" {
		muSource = c.capacitySource
	}
	if mu == 0 && env.Simulated {
		mu, muSource = estimateSimCapacity(env.Opts, c), "simulated engine, saturated run in virtual time"
	}
	if mu > 0 && c.BaselineRPS >= mu {
		fmt.Fprintf(w, "WARNING: the baseline %.2f req/s is at or above the estimated capacity μ = %.2f req/s (%s).\n"+
			"         A burst experiment needs a sustainable baseline: the backlog will never drain. Lower --baseline-rps.\n\n", c.BaselineRPS, mu, muSource)
	}

	ks := append([]float64(nil), c.Multipliers...)
	var runs []BurstRun
	var ref time.Duration // reference probe latency
	for i, k := range ks {
		if ctx.Err() != nil {
			break
		}
		name := "burst-" + fmtK(k) + "x"
		run := BurstRun{K: k, MuSource: muSource}
		if !env.Virtual {
			var err error
			run.Settle, run.SettleNote, ref, err = env.settle(ctx, c, ref, i == 0)
			if err != nil {
				return runs, err
			}
			fmt.Fprintf(w, "settle before %s: %s (%s)\n", name, run.Settle.Round(100*time.Millisecond), run.SettleNote)
		}
		burstStart := c.Warmup + c.Baseline
		run.BurstEnd = burstStart + c.Burst
		if mu > 0 {
			p, err := predict.Predict(predictParams(c, k, mu))
			if err == nil {
				run.Prediction = &p
				fmt.Fprintf(w, "%s: burst %.1f req/s (%s× %.1f) for %s; prediction with μ = %.2f req/s (%s): %s\n",
					name, k*c.BaselineRPS, fmtK(k), c.BaselineRPS, c.Burst, mu, muSource, p.Explanation)
			}
		} else {
			fmt.Fprintf(w, "%s: burst %.1f req/s (%s× %.1f) for %s; no prediction yet (capacity unknown: pass --capacity-rps)\n",
				name, k*c.BaselineRPS, fmtK(k), c.BaselineRPS, c.Burst)
		}
		spec := Spec{Name: name, Dir: filepath.Join(dir, name), Command: "burst", Plan: c.plan(k), Exclude: []string{schedule.PhaseWarmup},
			Extra: map[string]any{"multiplier": k, "burst": c}}
		rule := env.recoveryRule(c)
		plannedEnd := run.BurstEnd + c.Recovery
		spec.StopCheckFrom = plannedEnd
		win := env.Opts.Window
		spec.StopWhen = func(recs []record.Record, horizon time.Duration) bool {
			// Judge whole windows only: cut the horizon back to the last
			// window boundary (windows are aligned to the burst end), so a
			// recovery is never declared on a window partly observed.
			horizon = run.BurstEnd + (horizon-run.BurstEnd)/win*win
			if horizon <= plannedEnd {
				return false
			}
			cfg := env.analyzeConfig(spec.Plan, spec.Exclude)
			cfg.Recovery = rule
			r, err := analyzeRecords(cfg, recs, horizon)
			return err == nil && r.Recovery.Judged && r.Recovery.Recovered
		}
		res, err := env.executeBurst(ctx, spec, rule)
		if err != nil {
			return runs, err
		}
		if !env.Virtual && len(res.Engine) > 0 {
			// The engine observes queue time when a request finishes, so the
			// burst's queueing shows up as the backlog drains: take the
			// histogram delta from the burst start to the end of the run.
			last := res.Engine[len(res.Engine)-1].TNs
			res.EngineQ[schedule.PhaseBurst] = scrape.PhaseStats(res.Engine, scrape.QueueTime, int64(burstStart), last)
			res.setQueueWait()
		}
		run.Result = res
		run.Recovery = measuredRecovery(res.Analysis.Recovery, c.Recovery)
		if mu == 0 || c.CapacityRPS == 0 && !env.Simulated {
			// μ measured: the burst's completion rate, when a backlog built.
			if m, ok := measuredMu(res, burstStart, run.BurstEnd); ok {
				mu, muSource = m, "measured: completions/s during the "+fmtK(k)+"× burst"
				if c.BaselineRPS >= mu {
					fmt.Fprintf(w, "WARNING: the baseline %.2f req/s is at or above the capacity measured during this burst (μ ≈ %.2f req/s).\n"+
						"         The baseline is not sustainable: the backlog cannot drain. Lower --baseline-rps.\n", c.BaselineRPS, mu)
				}
				p, err := predict.Predict(predictParams(c, k, mu))
				if err == nil {
					run.Prediction, run.MuSource = &p, muSource+" (after the fact)"
				}
			}
		}
		res.Burst = &BurstInfo{K: k, BaselineRPS: c.BaselineRPS, Mu: mu, MuSource: run.MuSource, Prediction: run.Prediction,
			BurstEndNs: int64(run.BurstEnd), PlannedRecoveryNs: int64(c.Recovery), SettleNs: int64(run.Settle), SettleNote: run.SettleNote}
		if err := writeRunFiles(spec.Dir, res); err != nil {
			return runs, err
		}
		runs = append(runs, run)
		printBurstRun(w, &run, c)
		if res.Partial {
			break
		}
	}
	return runs, nil
}

func (e *Env) executeBurst(ctx context.Context, spec Spec, rule analyze.RecoveryRule) (*Result, error) {
	e.recovery = &rule
	defer func() { e.recovery = nil }()
	return e.Execute(ctx, spec)
}

func (e *Env) recoveryRule(c *BurstConfig) analyze.RecoveryRule {
	r := analyze.RecoveryRule{Window: e.Opts.Window}
	if c.RecoveryMetric == "ttft" {
		r.Metric = analyze.MetricTTFTSchedule
	} else {
		r.Metric = analyze.MetricE2ESchedule
	}
	return r
}

func predictParams(c *BurstConfig, k, mu float64) predict.Params {
	return predict.Params{Mu: mu, Lambda: c.BaselineRPS, BurstRate: k * c.BaselineRPS, BurstLen: c.Burst, BoostMu: c.BoostRPS, BoostAt: c.BoostAfter}
}

// measuredMu estimates the capacity μ from a run whose burst built a
// backlog: while requests were waiting, the service completed them as fast
// as it could, so its completion rate then is μ. The interval starts one
// typical baseline completion time after the burst began (earlier
// completions are still baseline requests) and ends when the client-side
// backlog (requests scheduled and still without a first token) fell back
// to its baseline level. It reports false when no real backlog built (at
// its peak fewer than a tenth of the burst's arrivals waited) or it lasted
// less than five seconds: that says nothing about μ.
func measuredMu(res *Result, burstStart, burstEnd time.Duration) (float64, bool) {
	a := res.Analysis
	base, ok := a.Phase(schedule.PhaseBaseline)
	if !ok || len(a.Timeline) == 0 {
		return 0, false
	}
	var sum, n float64
	for _, smp := range a.Timeline {
		if smp.TMs >= base.StartMs && smp.TMs < base.EndMs {
			sum += float64(smp.Waiting)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	threshold := max(2*sum/n, sum/n+3)
	t1 := burstStart + time.Duration(base.Latency.E2ESend.P50Ms*1e6)
	t2 := time.Duration(-1)
	peak := 0.0
	for _, smp := range a.Timeline {
		t := time.Duration(smp.TMs * 1e6)
		if t < burstStart {
			continue
		}
		peak = max(peak, float64(smp.Waiting))
		if t > burstEnd && float64(smp.Waiting) <= threshold {
			t2 = t
			break
		}
	}
	// A real backlog: at its peak a tenth of the burst's arrivals were
	// still waiting (below capacity only the few in prefill ever wait).
	burst, _ := a.Phase(schedule.PhaseBurst)
	if t2 < 0 || peak <= threshold || peak < 0.1*float64(burst.Offered) || t2-t1 < 5*time.Second {
		return 0, false
	}
	done := 0
	for _, d := range res.DoneOK {
		if time.Duration(d) >= t1 && time.Duration(d) < t2 {
			done++
		}
	}
	return float64(done) / (t2 - t1).Seconds(), done > 0
}

func measuredRecovery(r analyze.Recovery, planned time.Duration) report.Recovery {
	switch {
	case !r.Judged:
		return report.RecoveryNA(r.Reason)
	case r.Recovered:
		rec := report.RecoveredAfter(r.RecoveryTimeMs / 1000)
		if time.Duration(r.RecoveryTimeMs*1e6) > planned {
			rec.Reason = fmt.Sprintf("beyond the planned window of %s (recovery was extended)", planned)
		}
		return rec
	}
	return report.NotRecoveredWithin(r.ObservedMs / 1000)
}

func predictedRecovery(p *predict.Prediction) report.Recovery {
	switch {
	case p == nil:
		return report.RecoveryNA("capacity unknown: pass --capacity-rps")
	case p.Never:
		return report.NeverRecovers("baseline at or above capacity")
	}
	return report.RecoveredAfter(p.RecoveryTime.Seconds())
}

func recoveryText(r report.Recovery) string {
	switch r.State {
	case report.Recovered:
		s := "recovered " + fmtSeconds(r.Seconds) + " after the burst ended"
		if r.Reason != "" {
			s += ", " + r.Reason
		}
		return s
	case report.NotRecovered:
		return "did not recover within the planned window (watched " + fmtSeconds(r.Seconds) + " after the burst)"
	case report.NeverDrains:
		return "never recovers (" + r.Reason + ")"
	}
	return "n/a (" + r.Reason + ")"
}

func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + " s" }

func printBurstRun(w io.Writer, run *BurstRun, c *BurstConfig) {
	res := run.Result
	PrintPhases(w, res)
	fmt.Fprintf(w, "recovery (%s): %s", res.Analysis.Recovery.Metric, recoveryText(run.Recovery))
	if run.Prediction != nil {
		fmt.Fprintf(w, "; predicted %s (μ from %s)", recoveryText(predictedRecovery(run.Prediction)), run.MuSource)
	}
	fmt.Fprintln(w)
	if note := abandonmentNote(run); note != "" {
		fmt.Fprintln(w, note)
	}
	fmt.Fprintln(w)
}

// abandonmentNote explains a measured recovery faster than predicted: the
// fluid model assumes every request waits, but timed-out requests leave.
func abandonmentNote(run *BurstRun) string {
	if run.Prediction == nil || run.Prediction.Never {
		return ""
	}
	var timedOut, offered int64
	for _, p := range run.Result.Analysis.Phases {
		if p.Name == schedule.PhaseBurst || p.Name == schedule.PhaseRecovery {
			timedOut += p.Outcomes[record.Timeout]
			offered += p.Offered
		}
	}
	if offered == 0 || float64(timedOut) <= 0.01*float64(offered) {
		return ""
	}
	return fmt.Sprintf("note: %d of %d requests (%.1f%%) timed out and were abandoned; the prediction assumes every request waits, so it overstates the recovery time when requests give up.",
		timedOut, offered, 100*float64(timedOut)/float64(offered))
}

// estimateSimCapacity measures the simulated engine's capacity for the
// configured workload: a saturated run in virtual time, completions per
// second after the batch has filled.
func estimateSimCapacity(o Options, c *BurstConfig) float64 {
	prof, err := o.profile()
	if err != nil {
		return 0
	}
	gen, err := workload.New(workload.Config{Profile: prof, Seed: o.Seed, IgnoreEOS: o.IgnoreEOS})
	if err != nil {
		return 0
	}
	cfg := o.Sim
	cfg.Autoscale = false
	cfg.MaxWaiting = 0
	cfg.Fault500, cfg.Fault503, cfg.FaultReset, cfg.FaultMalformed, cfg.FaultStall, cfg.FaultSlowHeaders = 0, 0, 0, 0, 0, 0
	cl, err := sim.NewCluster(cfg)
	if err != nil {
		return 0
	}
	// Offer 3× a generous guess for 120 s; count completions in [60 s, 120 s).
	const total, from = 120 * time.Second, 60 * time.Second
	rate := 40.0 * float64(max(1, cfg.Replicas))
	n := int(rate * total.Seconds())
	in := make([]sim.Arrival, n)
	for i := range in {
		a := schedule.Arrival{Seq: int64(i), At: time.Duration(float64(i) / rate * 1e9)}
		r := gen.Generate(a)
		in[i] = sim.Arrival{At: a.At, Req: sim.Request{PromptTokens: r.PromptTokens, MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS}}
	}
	outs := sim.Simulate(cl, in, 0, 0, nil)
	done := 0
	for _, o := range outs {
		if o.DoneAt != sim.Never && o.DoneAt >= from && o.DoneAt < total && !o.Failed && !o.Rejected {
			done++
		}
	}
	return float64(done) / (total - from).Seconds()
}

// baselineProblems lists the baseline phase's SLO clauses that say the
// service was not keeping up: TTFT, or goodput short by more than a couple
// of requests (one late answer in a short baseline of 80 requests already
// misses a 99% goodput clause, and says nothing about sustainability). A
// completion-time clause can fail at any load when answers are long, and
// says nothing about queueing.
func baselineProblems(p analyze.PhaseResult) []string {
	var out []string
	for _, c := range p.SLO.Clauses {
		switch {
		case c.Pass:
		case c.Name == analyze.ClauseTTFTP95:
			out = append(out, c.Text)
		case c.Name == analyze.ClauseGoodputRatio:
			missing := (c.Limit - c.Measured) * float64(p.Offered)
			if missing > max(2, 0.01*float64(p.Offered)) {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

func fmtK(k float64) string { return strconv.FormatFloat(k, 'f', -1, 64) }

// writeBurstReports writes the top-level results table and report.html.
func writeBurstReports(env *Env, c *BurstConfig, dir string, runs []BurstRun, interrupted bool) (Outcome, error) {
	out := Outcome{SLOPass: true, Dir: dir, Partial: interrupted}
	t := report.Table{Title: "surge burst: " + env.TargetName(), Meta: append(HTMLMeta(env),
		report.KV{Key: "named baseline", Value: fmt.Sprintf("%.2f req/s", c.BaselineRPS)},
		report.KV{Key: "phases", Value: fmt.Sprintf("warmup %s (excluded), baseline %s, burst %s, recovery %s (watched up to %s)", c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit)},
		report.KV{Key: "recovery rule", Value: fmt.Sprintf("P99 %s within 10%% of the baseline's for 3 consecutive %s windows, failures no higher", c.RecoveryMetric, env.Opts.Window)},
	)}
	h := report.HTMLReport{Title: t.Title, Meta: t.Meta}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].K < runs[j].K })
	anyOK := false
	for i := range runs {
		r := &runs[i]
		res := r.Result
		row := Row(res, &env.Opts, schedule.PhaseBurst)
		row.Multiplier = report.Val(r.K)
		row.BaselineRPS = report.Val(c.BaselineRPS)
		row.BurstRPS = report.Val(r.K * c.BaselineRPS)
		row.Recovery = r.Recovery
		row.PredictedRecovery = predictedRecovery(r.Prediction)
		t.Rows = append(t.Rows, row)
		scope := fmtK(r.K) + "×"
		t.Verdicts = append(t.Verdicts, sloVerdicts(scope+" overall", res.Analysis.Verdict)...)
		if b, ok := res.Analysis.Phase(schedule.PhaseBaseline); ok {
			if probs := baselineProblems(b); len(probs) > 0 {
				t.Notes = append(t.Notes, fmt.Sprintf("%s: the baseline phase already missed the SLO (%s; %d requests) — the baseline may not be sustainable, so the burst results overstate the burst's effect.",
					scope, strings.Join(probs, "; "), b.Offered))
			}
		}
		if !res.Analysis.Verdict.Pass {
			out.SLOPass = false
		}
		if res.Analysis.Overall.Succeeded > 0 {
			anyOK = true
		}
		if res.Scrape.State != "" && len(res.Engine) == 0 {
			t.Notes = append(t.Notes, scope+": no engine metrics — latency growth is extra observed latency, not measured queue time")
		}
		if note := abandonmentNote(r); note != "" {
			t.Notes = append(t.Notes, scope+": "+note)
		}
		if r.Settle > 0 || r.SettleNote != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: settled in %s before the run (%s)", scope, r.Settle.Round(100*time.Millisecond), r.SettleNote))
		}
		charts := Charts(res, &env.Opts, fmt.Sprintf("burst %s× (%.1f req/s over a %.1f req/s baseline)", fmtK(r.K), r.K*c.BaselineRPS, c.BaselineRPS))
		charts.Markers = append(charts.Markers, report.Marker{Kind: report.MarkerBurstEnd, T: r.BurstEnd.Seconds()})
		if ar := res.Analysis.Recovery; ar.Recovered {
			charts.Markers = append(charts.Markers, report.Marker{Kind: report.MarkerRecovered, T: r.BurstEnd.Seconds() + ar.RecoveryTimeMs/1000})
		}
		if r.Prediction != nil && !r.Prediction.Never {
			charts.Markers = append(charts.Markers, report.Marker{Kind: report.MarkerPredictedRecovery, T: r.BurstEnd.Seconds() + r.Prediction.RecoveryTime.Seconds()})
		}
		h.Runs = append(h.Runs, charts)
	}
	if interrupted {
		t.Notes = append(t.Notes, "PARTIAL: the experiment was interrupted; runs not listed did not happen, and the last run is cut short.")
	}
	ht := t
	ht.Meta = nil // the page shows the same facts once, above the table
	h.Tables = []report.Table{ht}
	if err := writeReports(dir, t, h); err != nil {
		return out, err
	}
	out.Unusable = len(runs) > 0 && !anyOK
	fmt.Fprintf(env.Stdout, "\nResults (one row per multiplier; the burst phase by scheduled arrival):\n\n")
	report.WriteMarkdown(env.Stdout, report.Table{Rows: t.Rows})
	fmt.Fprintf(env.Stdout, "\nreports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
	return out, nil
}
