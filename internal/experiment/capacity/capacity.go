// Package capacity is the capacity search (`surge capacity`): open-loop
// steps of increasing offered rate, each a run judged by the SLO, growing
// until one fails and then bisecting to a tolerance; hopeless steps stop
// early (analyze.Hopeless). It finds the sustainable rate and suggests a
// burst baseline below it (docs/method.md §4).
package capacity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

// The capacity search's defaults (docs/method.md §4: at least ~1000 requests or
// 5–10 minutes per level, after 5–10 warmup requests).
const (
	DefaultStartRPS           = 1.0
	DefaultGrowth             = 2.0
	DefaultTolerance          = 0.05
	DefaultMaxSteps           = 20
	DefaultStepDuration       = time.Minute
	DefaultMaxStepDuration    = 10 * time.Minute
	DefaultMinRequests        = 1000
	DefaultWarmupRequests     = 10
	DefaultBaselineFraction   = 0.7
	DefaultLevelSettleTimeout = 2 * time.Minute
	// capacityMinRPS is the lowest rate the search steps down to when even
	// --start-rps fails.
	capacityMinRPS = 0.01
	// stepPhase names the measured phase of every capacity step.
	stepPhase = "step"
)

// ErrNoSustainableRate is returned when a search needed by another
// experiment (burst --baseline-rps auto) found no rate that meets the SLO.
var ErrNoSustainableRate = errors.New("capacity: no sustainable rate found")

// Config is the capacity search (`surge capacity`): open-loop
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
type Config struct {
	Options          run.Options   `yaml:",inline" json:"-"`
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
	Repeat           int           `yaml:"repeat"`            // whole searches, each into rep-k (repeat.go); 1 = one search

	// rep and repeats number the search among repeated ones (0 when
	// there is one): its steps run with rep's seed. Set on the copy of
	// the config each repeated search is given.
	rep, repeats int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Options:          run.DefaultOptions(),
		StartRPS:         DefaultStartRPS,
		Growth:           DefaultGrowth,
		Tolerance:        DefaultTolerance,
		MaxSteps:         DefaultMaxSteps,
		StepDuration:     DefaultStepDuration,
		MaxStepDuration:  DefaultMaxStepDuration,
		MinRequests:      DefaultMinRequests,
		WarmupRequests:   DefaultWarmupRequests,
		BaselineFraction: DefaultBaselineFraction,
		Arrival:          schedule.ArrivalPoisson,
		EarlyStop:        true,
		SettleTimeout:    DefaultLevelSettleTimeout,
		Repeat:           1,
	}
}

// Validate checks the search settings and that the options hold an SLO;
// each problem is a field.Error named by its YAML key.
func (c *Config) Validate() error {
	var errs field.Errors
	bad := errs.Add
	rate := func(flag string, v float64, zeroOK bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (!zeroOK && v == 0):
			bad(flag, "must be > 0 requests/s, got %g", v)
		case v > schedule.MaxRate:
			bad(flag, "%g requests/s is more than the load generator can schedule (at most %g/s)", v, float64(schedule.MaxRate))
		}
	}
	rate("start_rps", c.StartRPS, false)
	rate("max_rps", c.MaxRPS, true)
	if c.MaxRPS > 0 && c.MaxRPS < c.StartRPS {
		bad("max_rps", "must be ≥ --start-rps (%g), got %g", c.StartRPS, c.MaxRPS)
	}
	if !(c.Growth > 1) || math.IsInf(c.Growth, 0) {
		bad("growth", "must be > 1 so that the steps increase, got %g", c.Growth)
	}
	if !(c.Tolerance > 0 && c.Tolerance < 1) {
		bad("tolerance", "must be within (0, 1), got %g", c.Tolerance)
	}
	if c.MaxSteps < 2 {
		bad("max_steps", "must be ≥ 2, got %d", c.MaxSteps)
	}
	if c.StepDuration <= 0 {
		bad("step_duration", "must be > 0, got %s", c.StepDuration)
	}
	if c.MaxStepDuration < c.StepDuration {
		bad("max_step_duration", "must be ≥ --step-duration (%s), got %s", c.StepDuration, c.MaxStepDuration)
	}
	if c.MinRequests < 1 {
		bad("min_requests", "must be ≥ 1, got %d", c.MinRequests)
	}
	if c.WarmupRequests < 0 {
		bad("warmup_requests", "must be ≥ 0, got %d", c.WarmupRequests)
	}
	if !(c.BaselineFraction > 0 && c.BaselineFraction <= 1) {
		bad("baseline_fraction", "must be within (0, 1], got %g", c.BaselineFraction)
	}
	if c.Arrival != schedule.ArrivalPoisson && c.Arrival != schedule.ArrivalConstant {
		bad("arrival", "must be poisson or constant, got %q", c.Arrival)
	}
	if c.SettleTimeout < 0 {
		bad("settle_timeout", "must be ≥ 0, got %s", c.SettleTimeout)
	}
	errs.Merge("", experiment.ValidateRepeat(c.Repeat))
	if o := &c.Options; o.SLOTTFTP95 == 0 && o.SLOE2EP99 == 0 && o.SLOGoodput == 0 {
		bad("slo_ttft_p95", "--slo-ttft-p95, --slo-e2e-p99 and --slo-goodput are all 0: a capacity search needs at least one SLO clause to judge its steps")
	}
	return errs.Err()
}

// stepDuration is the measured phase of a step at rate.
func (c *Config) stepDuration(rate float64) time.Duration {
	d := time.Duration(float64(c.MinRequests) / rate * float64(time.Second))
	return min(max(d, c.StepDuration), c.MaxStepDuration)
}

// stepPlan is the plan of a step at rate: warmup requests, then the step.
func (c *Config) stepPlan(rate float64) schedule.Plan {
	var p schedule.Plan
	if c.WarmupRequests > 0 {
		w := time.Duration(float64(c.WarmupRequests) / rate * float64(time.Second))
		p.Phases = append(p.Phases, schedule.Phase{Name: schedule.PhaseWarmup, Duration: max(w, time.Millisecond), Rate: rate, Arrival: c.Arrival})
	}
	p.Phases = append(p.Phases, schedule.Phase{Name: stepPhase, Duration: c.stepDuration(rate), Rate: rate, Arrival: c.Arrival})
	return p
}

// Step is one step of the search.
type Step struct {
	Index            int                `json:"index"` // 1-based, in the order run
	Name             string             `json:"name"`  // folder name: step-NN-<rate>rps
	Rate             float64            `json:"rate_rps"`
	Duration         time.Duration      `json:"planned_duration_ns"`
	Pass             bool               `json:"pass"`
	StoppedEarly     string             `json:"stopped_early,omitempty"` // why the step was stopped as hopeless
	GeneratorLimited bool               `json:"generator_limited"`
	Measure          experiment.Measure `json:"measure"`
	Verdict          judge.Verdict
	Result           *run.Result `json:"-"`
	notReached       bool        // cut (budget, Ctrl-C) before its measured phase
}

// verdictText is PASS, FAIL, INCONCLUSIVE (its sample could not decide
// the SLO: the search does not count it as held), GENERATOR-LIMITED or
// PARTIAL.
func (s *Step) verdictText() string {
	switch {
	case s.Result != nil && s.Result.Partial:
		return "PARTIAL"
	case s.GeneratorLimited:
		return "GENERATOR-LIMITED"
	case s.Pass:
		return "PASS"
	case s.StoppedEarly == "" && s.Verdict.Outcome == judge.Inconclusive:
		return "INCONCLUSIVE"
	}
	return "FAIL"
}

// outcome is the step's verdict as a judge.Outcome (verdictText).
func (s *Step) outcome() judge.Outcome {
	switch s.verdictText() {
	case "PASS":
		return judge.Pass
	case "INCONCLUSIVE":
		return judge.Inconclusive
	}
	return judge.Fail
}

// outcome decides a search's exit code: PASS when it found a sustainable
// rate, INCONCLUSIVE when it stopped at a step too small to decide
// before finding one, FAIL otherwise.
func (cr *Result) outcome() judge.Outcome {
	switch {
	case cr.SustainableRPS > 0 && !cr.GeneratorLimited:
		return judge.Pass
	case cr.Undecided && !cr.GeneratorLimited:
		return judge.Inconclusive
	}
	return judge.Fail
}

// lowestUndecided says whether the step at LowestFailingRPS was
// INCONCLUSIVE rather than failing: the search counts it as not held.
func (cr *Result) lowestUndecided() bool {
	for i := range cr.Steps {
		if st := &cr.Steps[i]; !st.Pass && st.Rate == cr.LowestFailingRPS {
			return st.outcome() == judge.Inconclusive
		}
	}
	return false
}

// Result is the outcome of a search.
type Result struct {
	Steps            []Step  `json:"steps"`
	SustainableRPS   float64 `json:"sustainable_rps"`    // highest passing rate; 0 if none passed
	LowestFailingRPS float64 `json:"lowest_failing_rps"` // 0 if none failed
	Bounded          bool    `json:"bounded"`            // a failing rate above the sustainable one was found
	// Undecided marks a search stopped by a step whose sample was too
	// small to decide the SLO (judge.Verdict.TooFew); Note says so.
	Undecided        bool    `json:"undecided,omitempty"`
	Converged        bool    `json:"converged"` // the bracket is within the tolerance
	BaselineRPS      float64 `json:"suggested_baseline_rps"`
	BaselineFraction float64 `json:"baseline_fraction"`
	Note             string  `json:"note,omitempty"` // why the search ended where it did
	GeneratorLimited bool    `json:"generator_limited"`
	Partial          bool    `json:"partial"`
	// PartialWhy is why a partial search was cut short (its last run's
	// reason: Ctrl-C, the budget); its answer is not final.
	PartialWhy string `json:"partial_why,omitempty"`
}

// Search runs the steps into d/step-NN-<rate>rps/, one after another,
// printing each on w.
func Search(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, &run.ConfigError{Err: err}
	}
	fmt.Fprintf(w, "capacity search: from %s req/s (× %g until the SLO fails, then bisection to %g%%), %s arrivals, up to %d steps; SLO: %s\n",
		experiment.FmtRate(c.StartRPS), c.Growth, 100*c.Tolerance, c.Arrival, c.MaxSteps, experiment.SLOText(c.Options.Judging))
	cr := &Result{BaselineFraction: c.BaselineFraction}
	var lo, hi float64 // highest passing, lowest failing (0 = none yet)
	rate := experiment.RoundRate(c.StartRPS)
	partial, err := experiment.Loop(ctx, env, w, c.SettleTimeout, "step", func(i int) (bool, bool, error) {
		st, err := runStep(ctx, env, c, d, i, rate)
		if err != nil {
			return false, false, err
		}
		if st.notReached {
			cr.PartialWhy = st.Result.PartialWhy
			fmt.Fprintf(w, "step %2d: %7s req/s: its measured phase was not reached (%s)\n", i, experiment.FmtRate(rate), st.Result.PartialWhy)
			return true, false, nil
		}
		cr.Steps = append(cr.Steps, *st)
		printStep(w, st)
		if why := st.Result.Unusable; why != "" {
			cr.Note = "the search stopped: " + why
			return false, false, nil
		}
		if st.Result.Partial {
			cr.PartialWhy = st.Result.PartialWhy
			return true, false, nil
		}
		if st.GeneratorLimited {
			cr.GeneratorLimited = true
			cr.Note = fmt.Sprintf("the search stopped at %s req/s: %s. The target's capacity is at least %s req/s; lower --max-rps, or spread the load over several generators.",
				experiment.FmtRate(rate), st.Measure.GeneratorNote, experiment.FmtRate(lo))
			return false, false, nil
		}
		if st.outcome() == judge.Inconclusive && st.Verdict.TooFew() {
			// A lower rate would have fewer requests still: the search
			// cannot go on, and says what would decide the step.
			cr.Note = fmt.Sprintf("the search stopped at %s req/s: its %d requests are too few to decide the SLO (see the step's clauses); raise --min-requests (or --max-step-duration, which caps a step's length)",
				experiment.FmtRate(rate), st.Measure.Phase.Offered)
			cr.Undecided = true
			return false, false, nil
		}
		if st.Pass {
			lo = max(lo, rate)
		} else if hi == 0 || rate < hi {
			hi = rate
		}
		next := nextRate(c, cr, rate, lo, hi)
		if next == 0 {
			return false, false, nil
		}
		if i == c.MaxSteps {
			cr.Note = fmt.Sprintf("stopped after --max-steps %d steps", c.MaxSteps)
			return false, false, nil
		}
		rate = next
		return false, true, nil
	})
	cr.Partial = cr.Partial || partial
	if cr.Partial && cr.PartialWhy == "" {
		cr.PartialWhy = cmp.Or(env.BudgetStop(), "interrupted (Ctrl-C)")
	}
	if err != nil {
		return cr, err
	}
	cr.SustainableRPS, cr.LowestFailingRPS = lo, hi
	cr.Bounded = hi > 0 && lo > 0
	cr.BaselineRPS = experiment.RoundRate(c.BaselineFraction * lo)
	if cr.Note == "" && !cr.Converged && cr.Bounded && !cr.Partial {
		cr.Note = fmt.Sprintf("the bracket [%s, %s] req/s is wider than --tolerance %g", experiment.FmtRate(lo), experiment.FmtRate(hi), c.Tolerance)
	}
	return cr, nil
}

// nextRate is the rate of the step after one at rate, given the bracket
// so far — lo the highest passing rate, hi the lowest failing (0 =
// none): grow until a step fails, shrink until one passes, then bisect.
// 0 ends the search: cr notes why, or is marked converged.
func nextRate(c *Config, cr *Result, rate, lo, hi float64) float64 {
	next := 0.0
	switch {
	case hi == 0: // no failure yet: grow
		if c.MaxRPS > 0 && rate >= c.MaxRPS {
			cr.Note = fmt.Sprintf("every step up to --max-rps %s req/s met the SLO: the capacity is at least that", experiment.FmtRate(c.MaxRPS))
			break
		}
		next = rate * c.Growth
		if c.MaxRPS > 0 {
			next = min(next, c.MaxRPS)
		}
		if next > schedule.MaxRate {
			cr.Note = fmt.Sprintf("every step up to %s req/s met the SLO; the next would exceed what the generator can schedule", experiment.FmtRate(rate))
			next = 0
		}
	case lo == 0: // even the lowest rate tried fails: shrink
		next = rate / c.Growth
		if next < capacityMinRPS {
			cr.Note = fmt.Sprintf("even %s req/s fails the SLO: no sustainable rate found", experiment.FmtRate(rate))
			next = 0
		}
	case hi-lo <= c.Tolerance*lo:
		cr.Converged = true
	default:
		next = experiment.RoundRate((lo + hi) / 2)
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
	}
	return next
}

// runStep runs one step into d/step-NN-<rate>rps.
func runStep(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, i int, rate float64) (*Step, error) {
	plan := c.stepPlan(rate)
	name := fmt.Sprintf("step-%02d-%srps", i, experiment.FmtRate(rate))
	st := &Step{Index: i, Name: name, Rate: rate, Duration: plan.Phases[len(plan.Phases)-1].Duration}
	sub, err := d.Sub(name)
	if err != nil {
		return nil, err
	}
	spec := run.Spec{Name: name, Dir: sub, Command: "capacity", Plan: plan, Exclude: []string{schedule.PhaseWarmup},
		Experiment: stepRecord{Step: i, RateRPS: rate, Capacity: c}, Rep: c.rep, Repeats: c.repeats}
	var stop *hopeless
	if c.EarlyStop {
		arrivals, err := schedule.Build(plan, spec.Seed(env.Opts.Seed))
		if err != nil {
			return nil, &run.ConfigError{Err: err}
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
		stop = &hopeless{analyze.Hopeless{StepStart: plan.Bounds()[len(plan.Phases)-1].Start, Planned: planned, Goodput: env.Opts.SLOGoodput, LimitMs: limit}.Watch()}
		spec.Stop, spec.StopInVirtualTime = stop, true
	}
	res, err := env.Execute(ctx, spec)
	if res == nil {
		return nil, err
	}
	st.Result = res
	// A stop decided while the last requests drained, after the schedule
	// had ended, changed nothing.
	if stop != nil && res.StopWhy != "" && res.StoppedAt > 0 && res.StoppedAt < plan.Duration() {
		st.StoppedEarly = fmt.Sprintf("stopped after %s of %s: %s", (res.StoppedAt - stop.CheckFrom()).Round(time.Second), st.Duration.Round(time.Second), res.StopWhy)
	}
	if err != nil {
		return st, err
	}
	if _, ok := res.Analysis.Phase(stepPhase); !ok && res.Partial {
		st.notReached = true
		return st, nil
	}
	st.Measure, err = experiment.MeasureRun(res, stepPhase, false)
	if err != nil {
		return nil, err
	}
	st.Verdict = res.Verdicts.Overall
	st.GeneratorLimited = st.Measure.GeneratorLimited
	st.Pass = st.Verdict.Outcome == judge.Pass && st.StoppedEarly == "" && !res.Partial && !st.GeneratorLimited
	return st, nil
}

func printStep(w io.Writer, st *Step) {
	p := &st.Measure.Phase
	fmt.Fprintf(w, "step %2d: %7s req/s for %-8s → %-5s goodput %5.1f%%  p95 TTFT %-7s p99 completion %-7s %d requests\n",
		st.Index, experiment.FmtRate(st.Rate), st.Duration.Round(time.Second), st.verdictText(), 100*p.GoodputRatio,
		p.Latency.TTFTSchedule.Text(analyze.Q95), p.Latency.E2ESchedule.Text(analyze.Q99), p.Offered)
	for _, cl := range st.Verdict.Clauses {
		if cl.Outcome != judge.Pass {
			fmt.Fprintf(w, "         %s %s\n", cl.Outcome, cl.Brief())
		}
	}
	if st.StoppedEarly != "" {
		fmt.Fprintf(w, "         %s\n", st.StoppedEarly)
	}
	if st.Result != nil && st.Result.Partial {
		fmt.Fprintf(w, "         cut short: %s\n", st.Result.PartialWhy)
	}
	if st.Measure.GeneratorNote != "" {
		fmt.Fprintf(w, "         WARNING: %s\n", st.Measure.GeneratorNote)
	}
}

// Capacity executes `surge capacity` into d: the search, then the step
// table, capacity.json and report.html, and a summary on w.
func Capacity(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
	experiment.Announce(w, env, "capacity")
	if c.Repeat > 1 {
		return repeated(ctx, env, c, d, w)
	}
	cr, err := Search(ctx, env, c, d, w)
	if err != nil {
		return experiment.Outcome{}, err
	}
	if err := WriteReports(env, c, d, cr); err != nil {
		return experiment.Outcome{}, err
	}
	printEnd(w, &env.Opts, cr, d.Path())
	out := experiment.Outcome{Verdict: cr.outcome(), Partial: cr.Partial, Dir: d.Path(), Meaning: meaning(cr)}
	var results []*run.Result
	for _, s := range cr.Steps {
		results = append(results, s.Result)
	}
	out.Unusable = len(cr.Steps) > 0 && !experiment.AnyOK(results...) && !cr.Partial
	out.UnusableWhy = experiment.UnusableWhy(results...)
	return out, nil
}

// PrintSummary prints what the search found, its note and where the
// reports are.
func PrintSummary(w io.Writer, cr *Result, dir string) {
	printFound(w, cr)
	if cr.Note != "" {
		fmt.Fprintln(w, "Note:", cr.Note)
	}
	printPartial(w, cr)
	fmt.Fprintf(w, "reports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
}

// printFound prints the sustainable rate and the suggested baseline.
func printFound(w io.Writer, cr *Result) {
	fmt.Fprintln(w)
	if cr.Partial {
		fmt.Fprintln(w, partialFound(cr))
		return
	}
	switch {
	case cr.SustainableRPS == 0 && cr.Undecided:
		fmt.Fprintln(w, "Sustainable capacity: unknown — no step was shown to meet the SLO, and the last one had too few requests to decide it.")
	case cr.SustainableRPS == 0:
		fmt.Fprintln(w, "Sustainable capacity: none found — no step met the SLO.")
	case cr.Bounded && cr.lowestUndecided():
		fmt.Fprintf(w, "Sustainable capacity: %s req/s (the highest step that met the SLO; the lowest step above it that did not, %s req/s, was INCONCLUSIVE: its sample could not decide the SLO).\n",
			experiment.FmtRate(cr.SustainableRPS), experiment.FmtRate(cr.LowestFailingRPS))
	case cr.Bounded:
		fmt.Fprintf(w, "Sustainable capacity: %s req/s (the highest step that met the SLO; the lowest failing step was %s req/s).\n",
			experiment.FmtRate(cr.SustainableRPS), experiment.FmtRate(cr.LowestFailingRPS))
	default:
		fmt.Fprintf(w, "Sustainable capacity: at least %s req/s (no step failed).\n", experiment.FmtRate(cr.SustainableRPS))
	}
	if note := cr.quotaNote(); note != "" {
		fmt.Fprintln(w, note)
	}
	if cr.SustainableRPS > 0 {
		fmt.Fprintf(w, "Suggested baseline: %s req/s (%g × sustainable), e.g. surge burst --baseline-rps %s --capacity-rps %s, with this search's workload flags\n",
			experiment.FmtRate(cr.BaselineRPS), cr.BaselineFraction, experiment.FmtRate(cr.BaselineRPS), experiment.FmtRate(cr.SustainableRPS))
	}
}

// quotaNote says when the search stopped at a quota rather than at the
// service's capacity: the lowest failing step was throttled (a quota
// bucket was short, and 429s are at least half of the arrivals that
// missed the SLO's deadlines). It then gives the account's capacity at test time, the highest
// passing step's completions and tokens per minute, and the bucket that
// bound. "" otherwise.
func (cr *Result) quotaNote() string {
	var pass, fail *Step
	for i := range cr.Steps {
		st := &cr.Steps[i]
		switch {
		case st.Result == nil || st.Result.Analysis == nil:
		case st.Pass && st.Rate == cr.SustainableRPS:
			pass = st
		case !st.Pass && st.Rate == cr.LowestFailingRPS:
			fail = st
		}
	}
	if fail == nil {
		return ""
	}
	o := &fail.Result.Analysis.Overall
	text, _, ok := judge.Binding(&o.Client.RateLimit, 0)
	throttled := o.Outcomes[record.RateLimited]
	missed := o.Offered - int64(math.Round(o.GoodputRatio*float64(o.Offered)))
	if !ok || throttled == 0 || 2*throttled < missed {
		return ""
	}
	bucket := strings.TrimPrefix(text, "bound by ")
	bucket, _, _ = strings.Cut(bucket, ":")
	note := fmt.Sprintf("The search stopped at a quota, not at the service's capacity: %s req/s was throttled (%.1f%% of its arrivals got 429, %s).",
		experiment.FmtRate(fail.Rate), 100*o.RateLimitRate, text)
	if pass != nil {
		po := &pass.Result.Analysis.Overall
		tokensPerMin := 0.0
		if po.Succeeded > 0 {
			tokensPerMin = float64(po.PromptTokens+po.OutputTokens) / float64(po.Succeeded) * po.CompletedRPS * 60
		}
		note += fmt.Sprintf(" Account capacity at test time: %.2f req/s and %.0f tokens/min (prompt + output), bound by %s (a step also spends what the buckets held at its start: the refill alone may be lower).", po.CompletedRPS, tokensPerMin, bucket)
	}
	return note
}

// partialFound is what a search cut short found: never "no step met
// the SLO" when the budget or Ctrl-C stopped it, and no suggested
// baseline, which needs the search's answer.
func partialFound(cr *Result) string {
	why := cmp.Or(cr.PartialWhy, "interrupted")
	switch {
	case cr.SustainableRPS == 0 && cr.LowestFailingRPS == 0:
		return fmt.Sprintf("Sustainable capacity: unknown — the search was cut short (%s) before any step was judged. No suggested baseline.", why)
	case cr.SustainableRPS == 0:
		return fmt.Sprintf("Sustainable capacity: unknown — the search was cut short (%s); no step met the SLO before that (the lowest failing step was %s req/s). No suggested baseline.",
			why, experiment.FmtRate(cr.LowestFailingRPS))
	case cr.LowestFailingRPS > 0:
		return fmt.Sprintf("Sustainable capacity: not final — the search was cut short (%s). So far %s req/s met the SLO and %s req/s failed; no suggested baseline until a search finishes.",
			why, experiment.FmtRate(cr.SustainableRPS), experiment.FmtRate(cr.LowestFailingRPS))
	}
	return fmt.Sprintf("Sustainable capacity: not final — the search was cut short (%s). So far at least %s req/s (no step failed); no suggested baseline until a search finishes.",
		why, experiment.FmtRate(cr.SustainableRPS))
}

func printPartial(w io.Writer, cr *Result) {
	if cr.Partial {
		fmt.Fprintln(w, "PARTIAL: the search was interrupted or stopped by its budget (the reason is in its last step's row).")
	}
}

// printEnd ends `surge capacity`'s output: what the search found, the
// verdicts of the steps that bound it (the note on why the search ended
// there is their why), and where the reports are.
func printEnd(w io.Writer, o *run.Options, cr *Result, dir string) {
	printFound(w, cr)
	printPartial(w, cr)
	lines, why := verdictLines(cr)
	experiment.PrintVerdicts(w, "SLO "+experiment.SLOText(o.Judging)+"; measured vs limit", lines, why)
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
}

// columns are the step table's columns.
var columns = []report.Column{
	{Key: "step", Head: "step", Kind: report.KindText},
	{Key: "rate_rps", Head: "rate req/s", Kind: report.KindRPS, Desc: "the step's planned arrival rate"},
	{Key: "duration_s", Head: "measured", Kind: report.KindSeconds, Desc: "length of the measured phase (cut short when stopped early)"},
	{Key: "offered_rps", Head: "offered/s", Kind: report.KindRPS, Desc: "arrivals scheduled in the measured phase / its length"},
	{Key: "achieved_send_rps", Head: "sent/s", Kind: report.KindRPS, Desc: "rate the generator actually sent at (n−1 over the span of send times)"},
	{Key: "completed_rps", Head: "completed/s", Kind: report.KindRPS, Desc: "ok requests whose completion fell in the measured phase / its length"},
	{Key: "goodput_rps", Head: "goodput/s", Kind: report.KindRPS, Desc: "requests within the per-request deadline / length"},
	{Key: "goodput_ratio", Head: "goodput %", Kind: report.KindRatio},
	{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.KindMs, Desc: "TTFT from the scheduled arrival, ms"},
	{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: report.KindMs},
	{Key: "ttft_p99_ms", Head: "TTFT p99", Kind: report.KindMs},
	{Key: "completion_p99_ms", Head: "compl p99", Kind: report.KindMs, Desc: "completion from the scheduled arrival, ms"},
	{Key: "failure_rate", Head: "fail %", Kind: report.KindRatio, Desc: "errors + 429 + timeouts + drops, % of offered"},
	{Key: "lag_p99_ms", Head: "lag p99", Kind: report.KindMs, Desc: "schedule lag: sent − scheduled, ms"},
	{Key: "samples", Head: "samples", Kind: report.KindCount},
	{Key: "verdict", Head: "verdict", Kind: report.KindText, Desc: "SLO over the measured phase; GENERATOR-LIMITED = surge could not send the rate"},
	{Key: "note", Head: "note", Kind: report.KindText},
}

// columns with the SLO clauses' verdicts, in CSV and JSON only.
var allColumns = append(slices.Clip(columns), report.SLOColumns...)

// achievedRPS is the rate the generator sent the step at (n−1 over the
// span of send times), or n/a and why.
func achievedRPS(st *Step) report.Opt {
	switch {
	case st.Measure.AchievedRPS > 0:
		return report.Val(st.Measure.AchievedRPS)
	case st.Result.Virtual:
		return report.Unavailable("virtual time: no load generator")
	}
	return report.Unavailable("too few sends to measure")
}

func stepRow(st *Step) []report.Cell {
	p := &st.Measure.Phase
	ttft := experiment.DistOpts(p.Latency.TTFTSchedule)
	e2e := experiment.DistOpts(p.Latency.E2ESchedule)
	achieved := achievedRPS(st)
	note := st.StoppedEarly
	if st.Measure.GeneratorNote != "" {
		note = strings.TrimSpace(note + " " + st.Measure.GeneratorNote)
	}
	return append([]report.Cell{
		report.TextCell(st.Name), experiment.Num(st.Rate), experiment.Num(p.DurationMs / 1000), experiment.Num(p.OfferedRPS), report.NumCell(achieved),
		experiment.Num(p.CompletedRPS), experiment.Num(p.GoodputRPS), experiment.Num(p.GoodputRatio), report.NumCell(ttft[0]), report.NumCell(ttft[1]), report.NumCell(ttft[2]),
		report.NumCell(e2e[2]), experiment.Num(p.FailureRate), report.NumCell(experiment.DistOpts(p.Latency.ScheduleLag)[2]), experiment.Num(float64(p.Offered)),
		report.TextCell(st.verdictText()), report.TextCell(experiment.OrDash(note)),
	}, report.SLOCells(experiment.SLOStatus(st.Verdict))...)
}

// WriteReports writes the search's step table, capacity.json and
// report.html: the capacity layout.
func WriteReports(env *run.Env, c *Config, d *rundir.Dir, cr *Result) error {
	o := &env.Opts
	title := "surge capacity: " + env.TargetName()
	meta := append(experiment.HTMLMeta(env),
		report.KV{Key: "SLO", Value: experiment.SLOText(o.Judging)},
		report.KV{Key: "search", Value: fmt.Sprintf("from %s req/s × %g, then bisection to %g%%; %s arrivals; steps of %d requests within [%s, %s] after %d warmup requests",
			experiment.FmtRate(c.StartRPS), c.Growth, 100*c.Tolerance, c.Arrival, c.MinRequests, c.StepDuration, c.MaxStepDuration, c.WarmupRequests)},
	)
	lt := report.Grid{Title: title + " — steps in the order run", Meta: meta, Columns: allColumns}
	results := report.Table{Title: "Results table (docs/method.md §13), one row per step", Omit: report.BurstColumns, PhaseHead: "step"}
	h := report.GridReport{HTMLReport: report.HTMLReport{Title: title, Meta: meta}}
	for i := range cr.Steps {
		st := &cr.Steps[i]
		lt.Rows = append(lt.Rows, stepRow(st))
		scope := st.Name
		lt.Verdicts = append(lt.Verdicts, experiment.SLOVerdicts(scope, st.Verdict)...)
		if st.StoppedEarly != "" {
			lt.Verdicts = append(lt.Verdicts, report.Verdict{Scope: scope, Check: "ran to the end", Status: report.VerdictFail, Detail: st.StoppedEarly})
		}
		row := experiment.Row(st.Result, o, stepPhase)
		experiment.NoBurst(&row)
		row.Phase = st.Name
		row.SentRPS = achievedRPS(st) // the step table's sent/s, the same value or the same n/a
		results.Rows = append(results.Rows, row)
		results.Notes = append(results.Notes, experiment.LevelNotes(scope, st.Result)...)
		h.Runs = append(h.Runs, experiment.Charts(st.Result, o, fmt.Sprintf("%s: %s req/s, %s", st.Name, experiment.FmtRate(st.Rate), st.verdictText())))
	}
	switch {
	case cr.Partial:
		lt.Notes = append(lt.Notes, partialFound(cr))
	case cr.SustainableRPS == 0:
		lt.Notes = append(lt.Notes, "Sustainable capacity: none found — no step met the SLO.")
	case cr.Bounded:
		lt.Notes = append(lt.Notes, fmt.Sprintf("Sustainable capacity: %s req/s (lowest failing step %s req/s). Suggested baseline: %s req/s (%g × sustainable).",
			experiment.FmtRate(cr.SustainableRPS), experiment.FmtRate(cr.LowestFailingRPS), experiment.FmtRate(cr.BaselineRPS), cr.BaselineFraction))
	default:
		lt.Notes = append(lt.Notes, fmt.Sprintf("Sustainable capacity: at least %s req/s (no step failed). Suggested baseline: %s req/s (%g × that).",
			experiment.FmtRate(cr.SustainableRPS), experiment.FmtRate(cr.BaselineRPS), cr.BaselineFraction))
	}
	if cr.Note != "" {
		lt.Notes = append(lt.Notes, cr.Note)
	}
	if cr.Partial {
		lt.Notes = append(lt.Notes, "PARTIAL: the search was interrupted or stopped by its budget; the last step is cut short (the reason is in its row).")
	}
	for i := range cr.Steps {
		st := &cr.Steps[i]
		if float64(c.MinRequests)/st.Rate > c.MaxStepDuration.Seconds() && st.StoppedEarly == "" {
			lt.Notes = append(lt.Notes, fmt.Sprintf("%s: %d requests, fewer than --min-requests %d because --max-step-duration %s binds: its P99 rests on fewer values.",
				st.Name, st.Measure.Phase.Offered, c.MinRequests, c.MaxStepDuration))
		}
	}
	return experiment.WriteLevelExperiment(d, "capacity.json", cr, lt, results, h, charts(o, cr))
}

// capacityCharts plot goodput and latency against the offered rate.
func charts(o *run.Options, cr *Result) []report.XYChart {
	idx := experiment.SortedBy(len(cr.Steps), func(i int) float64 { return cr.Steps[i].Rate })
	var x, offered, ok, good, ttft, e2e []float64
	for _, i := range idx {
		st := &cr.Steps[i]
		p := &st.Measure.Phase
		x = append(x, st.Rate)
		offered = append(offered, p.OfferedRPS)
		ok = append(ok, p.CompletedRPS)
		good = append(good, p.GoodputRPS)
		ttft = append(ttft, experiment.DistValue(p.Latency.TTFTSchedule, analyze.Q95))
		e2e = append(e2e, experiment.DistValue(p.Latency.E2ESchedule, analyze.Q99))
	}
	var marks []report.XYRule
	if cr.SustainableRPS > 0 {
		marks = append(marks, report.XYRule{Label: "sustainable " + experiment.FmtRate(cr.SustainableRPS), Value: cr.SustainableRPS})
	}
	if cr.LowestFailingRPS > 0 {
		marks = append(marks, report.XYRule{Label: "fails " + experiment.FmtRate(cr.LowestFailingRPS), Value: cr.LowestFailingRPS})
	}
	load := report.XYChart{Title: "Goodput against offered rate", Note: "by scheduled arrival, over each step's measured phase",
		XLabel: "offered rate of the step (requests/s)", YLabel: "requests/s",
		Series: []report.XYSeries{
			{Label: "offered", X: x, Y: offered, Dash: true},
			{Label: "completed/s (by completion time)", X: x, Y: ok},
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

// stepRecord is what a step's manifest records of the experiment.
type stepRecord struct {
	Step     int     `json:"step"`
	RateRPS  float64 `json:"rate_rps"`
	Capacity *Config `json:"capacity"`
}

// hopeless stops a step that can no longer pass (analyze.Hopeless), fed
// the step's records as the horizon passes them.
type hopeless struct{ w *analyze.HopelessWatch }

// CheckFrom is the start of the step's measured phase.
func (s *hopeless) CheckFrom() time.Duration { return s.w.StepStart() }

// Add accounts one record below the horizon.
func (s *hopeless) Add(r *record.Record) { s.w.Add(r) }

// Stop says why the step is hopeless, or "".
func (s *hopeless) Stop(horizon time.Duration) string { return s.w.Judge(horizon) }
