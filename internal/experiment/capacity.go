package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/schedule"
)

// The capacity search's defaults (METHOD §4: at least ~1000 requests or
// 5–10 minutes per level, after 5–10 warmup requests).
const (
	DefaultCapacityStartRPS        = 1.0
	DefaultCapacityGrowth          = 2.0
	DefaultCapacityTolerance       = 0.05
	DefaultCapacityMaxSteps        = 20
	DefaultCapacityStepDuration    = time.Minute
	DefaultCapacityMaxStepDuration = 10 * time.Minute
	DefaultCapacityMinRequests     = 1000
	DefaultCapacityWarmupRequests  = 10
	DefaultBaselineFraction        = 0.7
	DefaultLevelSettleTimeout      = 2 * time.Minute
	// capacityMinRPS is the lowest rate the search steps down to when even
	// --start-rps fails.
	capacityMinRPS = 0.01
	// stepPhase names the measured phase of every capacity step.
	stepPhase = "step"
)

// ErrNoSustainableRate is returned when a search needed by another
// experiment (burst --baseline-rps auto) found no rate that meets the SLO.
var ErrNoSustainableRate = errors.New("experiment: no sustainable rate found")

// CapacityConfig is the capacity search (`surge capacity`): open-loop
// steps of increasing offered rate, each judged by the SLO.
//
// The rates: StartRPS, then × Growth after every passing step until one
// fails (÷ Growth while even the first fails), then bisection between the
// highest passing rate lo and the lowest failing rate hi until
// hi − lo ≤ Tolerance × lo. Rates are rounded to three significant digits.
//
// Each step is a separate run: WarmupRequests / rate seconds of warmup at
// the step's rate (excluded), then a measured phase of MinRequests / rate
// seconds, at least StepDuration and at most MaxStepDuration. A step passes
// when the SLO (--slo-*) holds over its measured phase.
type CapacityConfig struct {
	Options          `yaml:",inline"`
	StartRPS         float64       `yaml:"start_rps"`         // first step's rate, requests/s
	Growth           float64       `yaml:"growth"`            // rate factor between steps before the first failure
	Tolerance        float64       `yaml:"tolerance"`         // bisection stops at (hi − lo) ≤ tolerance × lo
	MaxRPS           float64       `yaml:"max_rps"`           // highest rate tried (0 = no limit)
	MaxSteps         int           `yaml:"max_steps"`         // most steps
	StepDuration     time.Duration `yaml:"step_duration"`     // shortest measured phase of a step
	MaxStepDuration  time.Duration `yaml:"max_step_duration"` // longest measured phase of a step
	MinRequests      int           `yaml:"min_requests"`      // arrivals a step's measured phase aims for
	WarmupRequests   int           `yaml:"warmup_requests"`   // arrivals before the measured phase (excluded)
	BaselineFraction float64       `yaml:"baseline_fraction"` // suggested baseline = fraction × sustainable rate
	Arrival          string        `yaml:"arrival"`           // poisson or constant
	EarlyStop        bool          `yaml:"early_stop"`        // stop a hopeless step early
	SettleTimeout    time.Duration `yaml:"settle_timeout"`    // longest wait for the target to settle between steps (0 = none)
	Simulate         bool          `yaml:"simulate"`          // virtual time against the engine model
}

// DefaultCapacityConfig returns the defaults.
func DefaultCapacityConfig() CapacityConfig {
	return CapacityConfig{
		Options:          DefaultOptions(),
		StartRPS:         DefaultCapacityStartRPS,
		Growth:           DefaultCapacityGrowth,
		Tolerance:        DefaultCapacityTolerance,
		MaxSteps:         DefaultCapacityMaxSteps,
		StepDuration:     DefaultCapacityStepDuration,
		MaxStepDuration:  DefaultCapacityMaxStepDuration,
		MinRequests:      DefaultCapacityMinRequests,
		WarmupRequests:   DefaultCapacityWarmupRequests,
		BaselineFraction: DefaultBaselineFraction,
		Arrival:          schedule.ArrivalPoisson,
		EarlyStop:        true,
		SettleTimeout:    DefaultLevelSettleTimeout,
	}
}

// RegisterFlags binds the flags of `surge capacity`.
func (c *CapacityConfig) RegisterFlags(fs *pflag.FlagSet) {
	c.registerSearchFlags(fs)
	fs.BoolVar(&c.Simulate, "simulate", c.Simulate, "run the search in virtual time against the engine model (seconds, not minutes)")
	fs.DurationVar(&c.SettleTimeout, "settle-timeout", c.SettleTimeout, "longest wait for the target to return to idle between steps (0 = do not wait)")
	c.Options.RegisterFlags(fs)
}

func (c *CapacityConfig) registerSearchFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&c.StartRPS, "start-rps", c.StartRPS, "offered rate of the first step, requests/s")
	fs.Float64Var(&c.Growth, "growth", c.Growth, "rate factor between steps until one fails (then bisection)")
	fs.Float64Var(&c.Tolerance, "tolerance", c.Tolerance, "stop bisecting when the lowest failing rate is within this fraction above the highest passing one")
	fs.Float64Var(&c.MaxRPS, "max-rps", c.MaxRPS, "highest rate to try (0 = no limit)")
	fs.IntVar(&c.MaxSteps, "max-steps", c.MaxSteps, "most steps in the search")
	fs.DurationVar(&c.StepDuration, "step-duration", c.StepDuration, "shortest measured phase of a step (a step lasts --min-requests / rate, within --step-duration and --max-step-duration)")
	fs.DurationVar(&c.MaxStepDuration, "max-step-duration", c.MaxStepDuration, "longest measured phase of a step")
	fs.IntVar(&c.MinRequests, "min-requests", c.MinRequests, "requests a step's measured phase aims for (METHOD: ~1000)")
	fs.IntVar(&c.WarmupRequests, "warmup-requests", c.WarmupRequests, "requests at the step's rate before it is measured (excluded)")
	fs.Float64Var(&c.BaselineFraction, "baseline-fraction", c.BaselineFraction, "suggested baseline = this fraction of the sustainable rate")
	fs.StringVar(&c.Arrival, "arrival", c.Arrival, "arrival process of every step: poisson or constant")
	fs.BoolVar(&c.EarlyStop, "early-stop", c.EarlyStop, "stop a hopeless step early (goodput out of reach, or backlog and TTFT growing)")
}

// Validate checks the search settings; errors name the flag.
func (c *CapacityConfig) Validate() error {
	var errs []string
	bad := func(flag, format string, a ...any) { errs = append(errs, "--"+flag+": "+fmt.Sprintf(format, a...)) }
	rate := func(flag string, v float64, zeroOK bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (!zeroOK && v == 0):
			bad(flag, "must be > 0 requests/s, got %g", v)
		case v > schedule.MaxRate:
			bad(flag, "%g requests/s is more than the load generator can schedule (at most %g/s; run shards for more)", v, float64(schedule.MaxRate))
		}
	}
	rate("start-rps", c.StartRPS, false)
	rate("max-rps", c.MaxRPS, true)
	if c.MaxRPS > 0 && c.MaxRPS < c.StartRPS {
		bad("max-rps", "must be ≥ --start-rps (%g), got %g", c.StartRPS, c.MaxRPS)
	}
	if !(c.Growth > 1) || math.IsInf(c.Growth, 0) {
		bad("growth", "must be > 1 so that the steps increase, got %g", c.Growth)
	}
	if !(c.Tolerance > 0 && c.Tolerance < 1) {
		bad("tolerance", "must be within (0, 1), got %g", c.Tolerance)
	}
	if c.MaxSteps < 2 {
		bad("max-steps", "must be ≥ 2, got %d", c.MaxSteps)
	}
	if c.StepDuration <= 0 {
		bad("step-duration", "must be > 0, got %s", c.StepDuration)
	}
	if c.MaxStepDuration < c.StepDuration {
		bad("max-step-duration", "must be ≥ --step-duration (%s), got %s", c.StepDuration, c.MaxStepDuration)
	}
	if c.MinRequests < 1 {
		bad("min-requests", "must be ≥ 1, got %d", c.MinRequests)
	}
	if c.WarmupRequests < 0 {
		bad("warmup-requests", "must be ≥ 0, got %d", c.WarmupRequests)
	}
	if !(c.BaselineFraction > 0 && c.BaselineFraction <= 1) {
		bad("baseline-fraction", "must be within (0, 1], got %g", c.BaselineFraction)
	}
	if c.Arrival != schedule.ArrivalPoisson && c.Arrival != schedule.ArrivalConstant {
		bad("arrival", "must be poisson or constant, got %q", c.Arrival)
	}
	if c.SettleTimeout < 0 {
		bad("settle-timeout", "must be ≥ 0, got %s", c.SettleTimeout)
	}
	if c.SLOTTFTP95 == 0 && c.SLOE2EP99 == 0 && c.SLOGoodput == 0 {
		bad("slo-ttft-p95", "--slo-ttft-p95, --slo-e2e-p99 and --slo-goodput are all 0: a capacity search needs at least one SLO clause to judge its steps")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// stepDuration is the measured phase of a step at rate.
func (c *CapacityConfig) stepDuration(rate float64) time.Duration {
	d := time.Duration(float64(c.MinRequests) / rate * float64(time.Second))
	return min(max(d, c.StepDuration), c.MaxStepDuration)
}

// stepPlan is the plan of a step at rate: warmup requests, then the step.
func (c *CapacityConfig) stepPlan(rate float64) schedule.Plan {
	var p schedule.Plan
	if c.WarmupRequests > 0 {
		w := time.Duration(float64(c.WarmupRequests) / rate * float64(time.Second))
		p.Phases = append(p.Phases, schedule.Phase{Name: schedule.PhaseWarmup, Duration: max(w, time.Millisecond), Rate: rate, Arrival: c.Arrival})
	}
	p.Phases = append(p.Phases, schedule.Phase{Name: stepPhase, Duration: c.stepDuration(rate), Rate: rate, Arrival: c.Arrival})
	return p
}

// CapacityStep is one step of the search.
type CapacityStep struct {
	Index            int           `json:"index"` // 1-based, in the order run
	Name             string        `json:"name"`  // folder name: step-NN-<rate>rps
	Rate             float64       `json:"rate_rps"`
	Duration         time.Duration `json:"planned_duration_ns"`
	Pass             bool          `json:"pass"`
	StoppedEarly     string        `json:"stopped_early,omitempty"` // why the step was stopped as hopeless
	GeneratorLimited bool          `json:"generator_limited"`
	Measure          Measure       `json:"measure"`
	Verdict          analyze.Verdict
	Result           *Result `json:"-"`
}

// verdictText is PASS, FAIL, GENERATOR-LIMITED or PARTIAL.
func (s *CapacityStep) verdictText() string {
	switch {
	case s.Result != nil && s.Result.Partial:
		return "PARTIAL"
	case s.GeneratorLimited:
		return "GENERATOR-LIMITED"
	case s.Pass:
		return "PASS"
	}
	return "FAIL"
}

// CapacityResult is the outcome of a search.
type CapacityResult struct {
	Steps            []CapacityStep `json:"steps"`
	SustainableRPS   float64        `json:"sustainable_rps"`    // highest passing rate; 0 if none passed
	LowestFailingRPS float64        `json:"lowest_failing_rps"` // 0 if none failed
	Bounded          bool           `json:"bounded"`            // a failing rate above the sustainable one was found
	Converged        bool           `json:"converged"`          // the bracket is within the tolerance
	BaselineRPS      float64        `json:"suggested_baseline_rps"`
	BaselineFraction float64        `json:"baseline_fraction"`
	Note             string         `json:"note,omitempty"` // why the search ended where it did
	GeneratorLimited bool           `json:"generator_limited"`
	Partial          bool           `json:"partial"`
}

// capacitySearch runs the steps into dir/step-NN-<rate>rps/.
func capacitySearch(ctx context.Context, env *Env, c *CapacityConfig, dir string) (*CapacityResult, error) {
	if err := c.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	w := env.Stdout
	fmt.Fprintf(w, "capacity search: from %s req/s (× %g until the SLO fails, then bisection to %g%%), %s arrivals, up to %d steps; SLO: %s\n",
		fmtRate(c.StartRPS), c.Growth, 100*c.Tolerance, c.Arrival, c.MaxSteps, sloText(&c.Options))
	cr := &CapacityResult{BaselineFraction: c.BaselineFraction}
	var lo, hi float64 // highest passing, lowest failing (0 = none yet)
	rate := roundRate(c.StartRPS)
	var ref time.Duration
	for i := 1; i <= c.MaxSteps; i++ {
		if ctx.Err() != nil {
			cr.Partial = true
			break
		}
		if !env.Virtual && c.SettleTimeout > 0 {
			d, note, r, err := env.settle(ctx, &BurstConfig{SettleTimeout: c.SettleTimeout}, ref, i == 1)
			if err != nil {
				return cr, err
			}
			ref = r
			fmt.Fprintf(w, "settle before step %d: %s (%s)\n", i, d.Round(100*time.Millisecond), note)
		}
		st, err := runCapacityStep(ctx, env, c, dir, i, rate)
		if err != nil {
			return cr, err
		}
		cr.Steps = append(cr.Steps, *st)
		printCapacityStep(w, st)
		if st.Result.Partial {
			cr.Partial = true
			break
		}
		if st.GeneratorLimited {
			cr.GeneratorLimited = true
			cr.Note = fmt.Sprintf("the search stopped at %s req/s: %s. The target's capacity is at least %s req/s; lower --max-rps, or spread the load over several generators.",
				fmtRate(rate), st.Measure.GeneratorNote, fmtRate(lo))
			break
		}
		if st.Pass {
			lo = max(lo, rate)
		} else if hi == 0 || rate < hi {
			hi = rate
		}
		next := 0.0
		switch {
		case hi == 0: // no failure yet: grow
			if c.MaxRPS > 0 && rate >= c.MaxRPS {
				cr.Note = fmt.Sprintf("every step up to --max-rps %s req/s met the SLO: the capacity is at least that", fmtRate(c.MaxRPS))
				break
			}
			next = rate * c.Growth
			if c.MaxRPS > 0 {
				next = min(next, c.MaxRPS)
			}
			if next > schedule.MaxRate {
				cr.Note = fmt.Sprintf("every step up to %s req/s met the SLO; the next would exceed what the generator can schedule", fmtRate(rate))
				next = 0
			}
		case lo == 0: // even the lowest rate tried fails: shrink
			next = rate / c.Growth
			if next < capacityMinRPS {
				cr.Note = fmt.Sprintf("even %s req/s fails the SLO: no sustainable rate found", fmtRate(rate))
				next = 0
			}
		case hi-lo <= c.Tolerance*lo:
			cr.Converged = true
		default:
			next = roundRate((lo + hi) / 2)
			if !(next > lo && next < hi) {
				next = (lo + hi) / 2
			}
		}
		if next == 0 {
			break
		}
		if i == c.MaxSteps {
			cr.Note = fmt.Sprintf("stopped after --max-steps %d steps", c.MaxSteps)
		}
		rate = next
	}
	cr.SustainableRPS, cr.LowestFailingRPS = lo, hi
	cr.Bounded = hi > 0 && lo > 0
	cr.BaselineRPS = roundRate(c.BaselineFraction * lo)
	if cr.Note == "" && !cr.Converged && cr.Bounded {
		cr.Note = fmt.Sprintf("the bracket [%s, %s] req/s is wider than --tolerance %g", fmtRate(lo), fmtRate(hi), c.Tolerance)
	}
	return cr, nil
}

// runCapacityStep runs one step into dir/step-NN-<rate>rps.
func runCapacityStep(ctx context.Context, env *Env, c *CapacityConfig, dir string, i int, rate float64) (*CapacityStep, error) {
	plan := c.stepPlan(rate)
	name := fmt.Sprintf("step-%02d-%srps", i, fmtRate(rate))
	st := &CapacityStep{Index: i, Name: name, Rate: rate, Duration: plan.Phases[len(plan.Phases)-1].Duration}
	spec := Spec{Name: name, Dir: filepath.Join(dir, name), Command: "capacity", Plan: plan, Exclude: []string{schedule.PhaseWarmup},
		Extra: map[string]any{"step": i, "rate_rps": rate, "capacity": c}}
	var mu sync.Mutex
	var why string
	if c.EarlyStop {
		arrivals, err := schedule.Build(plan, env.Opts.Seed)
		if err != nil {
			return nil, &ConfigError{err}
		}
		var planned int
		for _, a := range arrivals {
			if a.Phase == stepPhase {
				planned++
			}
		}
		limit := float64(env.Opts.SLOTTFTP95.Milliseconds())
		if limit == 0 {
			limit = float64(env.Opts.TTFTDeadline.Milliseconds())
		}
		h := hopelessCheck{StepStart: plan.Bounds()[len(plan.Phases)-1].Start, Planned: planned, Goodput: env.Opts.SLOGoodput, LimitMs: limit}
		spec.StopCheckFrom = h.StepStart
		spec.StopInVirtualTime = true
		spec.StopWhen = func(recs []record.Record, horizon time.Duration) bool {
			w := h.judge(recs, horizon)
			if w != "" {
				mu.Lock()
				why = w
				mu.Unlock()
			}
			return w != ""
		}
	}
	res, err := env.Execute(ctx, spec)
	if err != nil {
		return nil, err
	}
	st.Result = res
	mu.Lock()
	// A stop decided while the last requests drained, after the schedule
	// had ended, changed nothing.
	if res.StoppedAt > 0 && res.StoppedAt < plan.Duration() {
		st.StoppedEarly = fmt.Sprintf("stopped after %s of %s: %s", (res.StoppedAt - spec.StopCheckFrom).Round(time.Second), st.Duration.Round(time.Second), why)
	}
	mu.Unlock()
	st.Measure, err = measure(res, stepPhase, false)
	if err != nil {
		return nil, err
	}
	st.Verdict = res.Analysis.Verdict
	st.GeneratorLimited = st.Measure.GeneratorLimited && !env.Virtual
	st.Pass = st.Verdict.Pass && st.StoppedEarly == "" && !res.Partial && !st.GeneratorLimited
	return st, nil
}

func sloText(o *Options) string {
	var parts []string
	if o.SLOTTFTP95 > 0 {
		parts = append(parts, "p95 TTFT ≤ "+o.SLOTTFTP95.String())
	}
	if o.SLOE2EP99 > 0 {
		parts = append(parts, "p99 completion ≤ "+o.SLOE2EP99.String())
	}
	if o.SLOGoodput > 0 {
		parts = append(parts, fmt.Sprintf("goodput ≥ %g%% of offered", 100*o.SLOGoodput))
	}
	return strings.Join(parts, ", ")
}

func printCapacityStep(w fileWriter, st *CapacityStep) {
	p := &st.Measure.Phase
	fmt.Fprintf(w, "step %2d: %7s req/s for %-8s → %-5s goodput %5.1f%%  p95 TTFT %-7s p99 completion %-7s %d requests\n",
		st.Index, fmtRate(st.Rate), st.Duration.Round(time.Second), st.verdictText(), 100*p.GoodputRatio,
		p.Latency.TTFTSchedule.Text(analyze.Q95), p.Latency.E2ESchedule.Text(analyze.Q99), p.Offered)
	for _, cl := range st.Verdict.Clauses {
		if !cl.Pass {
			fmt.Fprintf(w, "         %s\n", cl.Text)
		}
	}
	if st.StoppedEarly != "" {
		fmt.Fprintf(w, "         %s\n", st.StoppedEarly)
	}
	if st.Measure.GeneratorNote != "" {
		fmt.Fprintf(w, "         WARNING: %s\n", st.Measure.GeneratorNote)
	}
}

// Capacity executes `surge capacity` into dir: the search, then the step
// table, capacity.json and report.html.
func Capacity(ctx context.Context, env *Env, c *CapacityConfig, dir string) (Outcome, error) {
	if env.Simulated && !env.Virtual {
		fmt.Fprintf(env.Stdout, "No --target: running against surge's built-in simulated engine at %s.\n", env.BaseURL)
	}
	if c.Simulate {
		fmt.Fprintf(env.Stdout, "surge capacity --simulate — virtual time against the engine model; no requests leave this process.\n")
	}
	cr, err := capacitySearch(ctx, env, c, dir)
	if err != nil {
		return Outcome{}, err
	}
	if err := writeCapacityReports(env, c, dir, cr); err != nil {
		return Outcome{}, err
	}
	printCapacitySummary(env.Stdout, cr, dir)
	out := Outcome{SLOPass: cr.SustainableRPS > 0 && !cr.GeneratorLimited, Partial: cr.Partial, Dir: dir}
	anyOK := false
	for _, s := range cr.Steps {
		anyOK = anyOK || s.Result.Analysis.Overall.Succeeded > 0
	}
	out.Unusable = len(cr.Steps) > 0 && !anyOK && !cr.Partial
	return out, nil
}

func printCapacitySummary(w fileWriter, cr *CapacityResult, dir string) {
	fmt.Fprintln(w)
	switch {
	case cr.SustainableRPS == 0:
		fmt.Fprintln(w, "Sustainable capacity: none found — no step met the SLO.")
	case cr.Bounded:
		fmt.Fprintf(w, "Sustainable capacity: %s req/s (the highest step that met the SLO; the lowest failing step was %s req/s).\n",
			fmtRate(cr.SustainableRPS), fmtRate(cr.LowestFailingRPS))
	default:
		fmt.Fprintf(w, "Sustainable capacity: at least %s req/s (no step failed).\n", fmtRate(cr.SustainableRPS))
	}
	if cr.SustainableRPS > 0 {
		fmt.Fprintf(w, "Suggested baseline: %s req/s (%g × sustainable), e.g. surge burst --baseline-rps %s --capacity-rps %s\n",
			fmtRate(cr.BaselineRPS), cr.BaselineFraction, fmtRate(cr.BaselineRPS), fmtRate(cr.SustainableRPS))
	}
	if cr.Note != "" {
		fmt.Fprintln(w, "Note:", cr.Note)
	}
	if cr.Partial {
		fmt.Fprintln(w, "PARTIAL: the search was interrupted.")
	}
	fmt.Fprintf(w, "reports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
}

// capacityColumns are the step table's columns.
var capacityColumns = []report.LevelColumn{
	{Key: "step", Head: "step", Kind: report.LevelText},
	{Key: "rate_rps", Head: "rate", Kind: report.LevelRPS, Desc: "the step's offered rate (requests/s)"},
	{Key: "duration_s", Head: "measured", Kind: report.LevelSeconds, Desc: "length of the measured phase (cut short when stopped early)"},
	{Key: "offered_rps", Head: "offered/s", Kind: report.LevelRPS, Desc: "arrivals scheduled in the measured phase / its length"},
	{Key: "achieved_send_rps", Head: "sent/s", Kind: report.LevelRPS, Desc: "rate the generator actually sent at (n−1 over the span of send times)"},
	{Key: "success_rps", Head: "ok/s", Kind: report.LevelRPS, Desc: "successful requests by scheduled arrival / length"},
	{Key: "goodput_rps", Head: "goodput/s", Kind: report.LevelRPS, Desc: "requests within the per-request deadline / length"},
	{Key: "goodput_ratio", Head: "goodput %", Kind: report.LevelRatio},
	{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.LevelMs, Desc: "TTFT from the scheduled arrival, ms"},
	{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: report.LevelMs},
	{Key: "ttft_p99_ms", Head: "TTFT p99", Kind: report.LevelMs},
	{Key: "completion_p99_ms", Head: "compl p99", Kind: report.LevelMs, Desc: "completion from the scheduled arrival, ms"},
	{Key: "failure_rate", Head: "fail %", Kind: report.LevelRatio, Desc: "errors + 429 + timeouts + drops, % of offered"},
	{Key: "lag_p99_ms", Head: "lag p99", Kind: report.LevelMs, Desc: "schedule lag: sent − scheduled, ms"},
	{Key: "samples", Head: "samples", Kind: report.LevelCount},
	{Key: "verdict", Head: "verdict", Kind: report.LevelText, Desc: "SLO over the measured phase; GENERATOR-LIMITED = surge could not send the rate"},
	{Key: "note", Head: "note", Kind: report.LevelText},
}

func capacityRow(st *CapacityStep) []report.LevelCell {
	p := &st.Measure.Phase
	ttft := distOpts(p.Latency.TTFTSchedule)
	e2e := distOpts(p.Latency.E2ESchedule)
	achieved := report.Unavailable("too few sends to measure")
	if st.Measure.AchievedRPS > 0 {
		achieved = report.Val(st.Measure.AchievedRPS)
	}
	note := st.StoppedEarly
	if st.Measure.GeneratorNote != "" {
		note = strings.TrimSpace(note + " " + st.Measure.GeneratorNote)
	}
	return []report.LevelCell{
		report.TextCell(st.Name), num(st.Rate), num(p.DurationMs / 1000), num(p.OfferedRPS), report.NumCell(achieved),
		num(p.SuccessRPS), num(p.GoodputRPS), num(p.GoodputRatio), report.NumCell(ttft[0]), report.NumCell(ttft[1]), report.NumCell(ttft[2]),
		report.NumCell(e2e[2]), num(p.FailureRate), report.NumCell(distOpts(p.Latency.ScheduleLag)[2]), num(float64(p.Offered)),
		report.TextCell(st.verdictText()), report.TextCell(orDash(note)),
	}
}

func writeCapacityReports(env *Env, c *CapacityConfig, dir string, cr *CapacityResult) error {
	o := &env.Opts
	title := "surge capacity: " + env.TargetName()
	meta := append(HTMLMeta(env),
		report.KV{Key: "SLO", Value: sloText(o)},
		report.KV{Key: "search", Value: fmt.Sprintf("from %s req/s × %g, then bisection to %g%%; %s arrivals; steps of %d requests within [%s, %s] after %d warmup requests",
			fmtRate(c.StartRPS), c.Growth, 100*c.Tolerance, c.Arrival, c.MinRequests, c.StepDuration, c.MaxStepDuration, c.WarmupRequests)},
	)
	lt := report.LevelTable{Title: title + " — steps in the order run", Meta: meta, Columns: capacityColumns}
	results := report.Table{Title: "Results table (METHOD §13), one row per step", Meta: HTMLMeta(env)}
	h := report.LevelReport{HTMLReport: report.HTMLReport{Title: title, Meta: meta}}
	for i := range cr.Steps {
		st := &cr.Steps[i]
		lt.Rows = append(lt.Rows, capacityRow(st))
		scope := st.Name
		lt.Verdicts = append(lt.Verdicts, sloVerdicts(scope, st.Verdict)...)
		if st.StoppedEarly != "" {
			lt.Verdicts = append(lt.Verdicts, report.Verdict{Scope: scope, Check: "not hopeless", Status: report.VerdictFail, Detail: st.StoppedEarly})
		}
		row := Row(st.Result, o, stepPhase)
		row.Workload = o.Profile + " / " + st.Name
		row.Recovery, row.PredictedRecovery = report.RecoveryNA(report.ReasonNoBurst), report.RecoveryNA(report.ReasonNoBurst)
		results.Rows = append(results.Rows, row)
		h.Runs = append(h.Runs, Charts(st.Result, o, fmt.Sprintf("%s: %s req/s, %s", st.Name, fmtRate(st.Rate), st.verdictText())))
	}
	switch {
	case cr.SustainableRPS == 0:
		lt.Notes = append(lt.Notes, "Sustainable capacity: none found — no step met the SLO.")
	case cr.Bounded:
		lt.Notes = append(lt.Notes, fmt.Sprintf("Sustainable capacity: %s req/s (lowest failing step %s req/s). Suggested baseline: %s req/s (%g × sustainable).",
			fmtRate(cr.SustainableRPS), fmtRate(cr.LowestFailingRPS), fmtRate(cr.BaselineRPS), cr.BaselineFraction))
	default:
		lt.Notes = append(lt.Notes, fmt.Sprintf("Sustainable capacity: at least %s req/s (no step failed). Suggested baseline: %s req/s (%g × that).",
			fmtRate(cr.SustainableRPS), fmtRate(cr.BaselineRPS), cr.BaselineFraction))
	}
	if cr.Note != "" {
		lt.Notes = append(lt.Notes, cr.Note)
	}
	if cr.Partial {
		lt.Notes = append(lt.Notes, "PARTIAL: the search was interrupted; the last step is cut short.")
	}
	for i := range cr.Steps {
		st := &cr.Steps[i]
		if float64(c.MinRequests)/st.Rate > c.MaxStepDuration.Seconds() && st.StoppedEarly == "" {
			lt.Notes = append(lt.Notes, fmt.Sprintf("%s: %d requests, fewer than --min-requests %d because --max-step-duration %s binds: its P99 rests on fewer values.",
				st.Name, st.Measure.Phase.Offered, c.MinRequests, c.MaxStepDuration))
		}
	}
	return writeLevelExperiment(dir, "capacity.json", cr, lt, results, h, capacityCharts(o, cr))
}

// capacityCharts plot goodput and latency against the offered rate.
func capacityCharts(o *Options, cr *CapacityResult) []report.XYChart {
	idx := sortedBy(len(cr.Steps), func(i int) float64 { return cr.Steps[i].Rate })
	var x, offered, ok, good, ttft, e2e []float64
	for _, i := range idx {
		st := &cr.Steps[i]
		p := &st.Measure.Phase
		x = append(x, st.Rate)
		offered = append(offered, p.OfferedRPS)
		ok = append(ok, p.SuccessRPS)
		good = append(good, p.GoodputRPS)
		ttft = append(ttft, distValue(p.Latency.TTFTSchedule, analyze.Q95))
		e2e = append(e2e, distValue(p.Latency.E2ESchedule, analyze.Q99))
	}
	var marks []report.XYRule
	if cr.SustainableRPS > 0 {
		marks = append(marks, report.XYRule{Label: "sustainable " + fmtRate(cr.SustainableRPS), Value: cr.SustainableRPS})
	}
	if cr.LowestFailingRPS > 0 {
		marks = append(marks, report.XYRule{Label: "fails " + fmtRate(cr.LowestFailingRPS), Value: cr.LowestFailingRPS})
	}
	load := report.XYChart{Title: "Goodput against offered rate", Note: "by scheduled arrival, over each step's measured phase",
		XLabel: "offered rate of the step (requests/s)", YLabel: "requests/s",
		Series: []report.XYSeries{
			{Label: "offered", X: x, Y: offered, Dash: true},
			{Label: "successful", X: x, Y: ok},
			{Label: "goodput", X: x, Y: good},
		}, VRules: marks}
	lat := report.XYChart{Title: "Latency against offered rate", Note: "from the scheduled arrival; lower bounds where too many requests timed out",
		XLabel: "offered rate of the step (requests/s)", YLabel: "ms (log scale)", LogY: true,
		Series: []report.XYSeries{{Label: "TTFT p95", X: x, Y: ttft}, {Label: "completion p99", X: x, Y: e2e}}, VRules: marks}
	if o.SLOTTFTP95 > 0 {
		lat.HRules = append(lat.HRules, report.XYRule{Label: "SLO p95 TTFT " + o.SLOTTFTP95.String(), Value: float64(o.SLOTTFTP95.Milliseconds())})
	}
	if o.SLOE2EP99 > 0 {
		lat.HRules = append(lat.HRules, report.XYRule{Label: "SLO p99 completion " + o.SLOE2EP99.String(), Value: float64(o.SLOE2EP99.Milliseconds())})
	}
	return []report.XYChart{load, lat}
}

// autoBaseline runs the capacity search for `surge burst --baseline-rps
// auto` into dir/capacity and sets the burst's baseline to the suggestion
// and, unless --capacity-rps was given, μ to the sustainable rate.
func autoBaseline(ctx context.Context, env *Env, c *BurstConfig, dir string) error {
	cc := DefaultCapacityConfig()
	cc.Options, cc.Simulate = c.Options, c.Simulate
	cdir := filepath.Join(dir, "capacity")
	fmt.Fprintf(env.Stdout, "--baseline-rps auto: searching the sustainable capacity first (%s).\n", cdir)
	cr, err := capacitySearch(ctx, env, &cc, cdir)
	if err != nil {
		return err
	}
	if err := writeCapacityReports(env, &cc, cdir, cr); err != nil {
		return err
	}
	printCapacitySummary(env.Stdout, cr, cdir)
	if cr.SustainableRPS == 0 || cr.GeneratorLimited || cr.Partial {
		why := "no step met the SLO"
		switch {
		case cr.Partial:
			why = "the search was interrupted"
		case cr.GeneratorLimited:
			why = "the load generator could not reach the rates needed"
		}
		return fmt.Errorf("--baseline-rps auto: %s; see %s or pass --baseline-rps: %w", why, cdir, ErrNoSustainableRate)
	}
	c.BaselineRPS = cr.BaselineRPS
	if c.CapacityRPS == 0 {
		c.CapacityRPS = cr.SustainableRPS
		c.capacitySource = fmt.Sprintf("capacity search: sustainable %s req/s", fmtRate(cr.SustainableRPS))
	}
	fmt.Fprintf(env.Stdout, "burst baseline: %s req/s (%g × the sustainable %s req/s)\n\n", fmtRate(c.BaselineRPS), cc.BaselineFraction, fmtRate(cr.SustainableRPS))
	return nil
}
