// Package sweep is `surge sweep`: a concurrency sweep (closed-loop users,
// labelled as such) or a rate sweep (open loop), one run per level, with
// throughput measured by completion time, the throughput knee, the
// latency-budget break, the usable level and the headroom between them
// (docs/method.md §4).
package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

// The sweep's defaults (docs/method.md §4).
const (
	DefaultDuration           = 5 * time.Minute
	DefaultWarmup             = 10 * time.Second
	DefaultKneeThreshold      = 0.10
	DefaultTTFTBudget         = 2 * time.Second
	DefaultTPOTBudget         = 100 * time.Millisecond
	DefaultSettleTimeout      = 2 * time.Minute // longest wait for the target to settle between levels
	levelPhase                = "level"
	sweepRecommendedSamples   = 1000
	sweepLogAxisMinLevelRatio = 8.0 // levels spanning more than this are charted on a log axis
)

// DefaultConcurrency are the closed-loop levels when none are given.
var DefaultConcurrency = []int{1, 4, 16, 64}

// Config is a concurrency sweep (closed loop) or a rate sweep (open
// loop): `surge sweep`. Every level is a separate run of Warmup (excluded)
// then Duration, with the same seed, so every level sends the same
// sequence of requests.
//
// Per level: throughput by completion time (see experiment.Measure), TTFT, TPOT, ITL
// and completion percentiles, errors. Then:
//
//   - throughput knee: the last level k whose next level raises output
//     tokens/s by less than KneeThreshold (x_{k+1} < x_k · (1 + threshold)):
//     from level k+1 on, more load buys no more throughput;
//   - latency-budget break: the first level whose p95 TTFT (from the
//     scheduled arrival) exceeds TTFTBudget or whose p95 TPOT exceeds
//     TPOTBudget (a percentile that is unknown or has no samples fails), or
//     whose failures (non-ok outcomes) exceed the goodput SLO's budget,
//     1 − Options.SLOGoodput of its requests;
//   - usable level: the level before the first of (level k+1, the break);
//   - headroom: the distance between the knee and the break.
type Config struct {
	Options       run.Options   `yaml:",inline" json:"-"`
	Concurrency   []int         `yaml:"concurrency"`    // closed-loop users per level
	Rates         []float64     `yaml:"rates"`          // open-loop arrivals/s per level
	Duration      time.Duration `yaml:"duration"`       // measured time per level
	Warmup        time.Duration `yaml:"warmup"`         // excluded time before each level
	Arrival       string        `yaml:"arrival"`        // open loop: poisson or constant
	KneeThreshold float64       `yaml:"knee_threshold"` // relative throughput gain below which the knee is reached
	TTFTBudget    time.Duration `yaml:"ttft_budget"`    // p95 TTFT budget
	TPOTBudget    time.Duration `yaml:"tpot_budget"`    // p95 TPOT budget
	SettleTimeout time.Duration `yaml:"settle_timeout"` // longest wait for the target to settle between levels (0 = none)
	Simulate      bool          `yaml:"simulate"`       // virtual time against the engine model
}

// DefaultConfig returns the defaults (levels unset: see Levels).
func DefaultConfig() Config {
	return Config{
		Options:       run.DefaultOptions(),
		Duration:      DefaultDuration,
		Warmup:        DefaultWarmup,
		Arrival:       schedule.ArrivalPoisson,
		KneeThreshold: DefaultKneeThreshold,
		TTFTBudget:    DefaultTTFTBudget,
		TPOTBudget:    DefaultTPOTBudget,
		SettleTimeout: DefaultSettleTimeout,
	}
}

// closed reports whether the sweep is a concurrency (closed-loop) sweep.
func (c *Config) closed() bool { return len(c.Rates) == 0 }

// Levels returns the levels as numbers: users, or arrivals/s.
func (c *Config) Levels() []float64 {
	if !c.closed() {
		return append([]float64(nil), c.Rates...)
	}
	users := c.Concurrency
	if len(users) == 0 {
		users = DefaultConcurrency
	}
	out := make([]float64, len(users))
	for i, u := range users {
		out[i] = float64(u)
	}
	return out
}

// Validate checks the sweep settings; each problem is a field.Error
// named by its YAML key.
func (c *Config) Validate() error {
	var errs field.Errors
	bad := errs.Add
	if len(c.Concurrency) > 0 && len(c.Rates) > 0 {
		bad("concurrency", "give either --concurrency (closed loop) or --rates (open loop), not both")
	}
	if c.closed() && c.Options.Sessions {
		bad("sessions", "needs open-loop arrivals to start sessions; a concurrency sweep (closed loop) has none — sweep --rates instead")
	}
	if c.closed() && c.Options.Shard != "" { // refused before the first level runs
		bad("shard", "splits a schedule of arrivals, which a closed loop (a concurrency sweep) does not have: its users send when ready; use a rate sweep, run, burst or capacity")
	}
	flag := "concurrency"
	if !c.closed() {
		flag = "rates"
	}
	lv := c.Levels()
	for i, v := range lv {
		switch {
		case !c.closed() && (math.IsNaN(v) || math.IsInf(v, 0) || v <= 0):
			bad(flag, "each rate must be > 0 requests/s, got %g", v)
		case !c.closed() && v > schedule.MaxRate:
			bad(flag, "%g requests/s is more than the load generator can schedule (at most %g/s)", v, float64(schedule.MaxRate))
		case c.closed() && v < 1:
			bad(flag, "each level must be ≥ 1 user, got %g", v)
		case c.closed() && v > 100_000:
			bad(flag, "%g users is more than one generator should hold (at most 100000)", v)
		case i > 0 && v <= lv[i-1]:
			bad(flag, "levels must increase, got %s after %s", strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(lv[i-1], 'g', -1, 64))
		}
	}
	if c.Duration <= 0 {
		bad("duration", "must be > 0, got %s", c.Duration)
	}
	if c.Warmup < 0 {
		bad("warmup", "must be ≥ 0, got %s", c.Warmup)
	}
	if !c.closed() && c.Arrival != schedule.ArrivalPoisson && c.Arrival != schedule.ArrivalConstant {
		bad("arrival", "must be poisson or constant, got %q", c.Arrival)
	}
	if !(c.KneeThreshold > 0) || math.IsInf(c.KneeThreshold, 0) {
		bad("knee_threshold", "must be > 0 (a fraction, e.g. 0.1 for 10%%), got %g", c.KneeThreshold)
	}
	if c.TTFTBudget <= 0 {
		bad("ttft_budget", "must be > 0, got %s (a budget of zero can never hold)", c.TTFTBudget)
	}
	if c.TPOTBudget <= 0 {
		bad("tpot_budget", "must be > 0, got %s (a budget of zero can never hold)", c.TPOTBudget)
	}
	if c.SettleTimeout < 0 {
		bad("settle_timeout", "must be ≥ 0, got %s", c.SettleTimeout)
	}
	return errs.Err()
}

// levelName is "c16" for 16 users, "8rps" for 8 arrivals/s.
func (c *Config) levelName(v float64) string {
	if c.closed() {
		return "c" + strconv.FormatFloat(v, 'f', 0, 64)
	}
	return experiment.FmtRate(v) + "rps"
}

// Level is one level's run.
type Level struct {
	Index   int                `json:"index"`
	Name    string             `json:"name"`
	Level   float64            `json:"level"` // users or arrivals/s
	Measure experiment.Measure `json:"measure"`
	// Budget is the level's latency budget (judge.Budget): within it
	// (PASS), broken (FAIL), or undecided on its sample (INCONCLUSIVE).
	Budget           judge.Verdict `json:"budget"`
	BudgetWhy        string        `json:"budget_text,omitempty"` // the budget clauses, as measured
	GeneratorLimited bool          `json:"generator_limited"`
	Result           *run.Result   `json:"-"`
	notReached       bool          // cut (budget, Ctrl-C) before its measured phase
}

// slo is the level's SLO verdict over its measured phase.
func (lv *Level) slo() judge.Verdict {
	if lv.Result == nil || lv.Result.Verdicts == nil {
		return judge.Verdict{}
	}
	v, _ := lv.Result.Verdicts.Phase(levelPhase)
	return v
}

// Findings are what a sweep concludes. Indexes refer to the levels;
// -1 means not reached within the levels tested.
type Findings struct {
	Knee          int     `json:"knee"`
	Break         int     `json:"break"`
	Usable        int     `json:"usable"`
	HeadroomRatio float64 `json:"headroom_ratio"` // load at the break / load at the knee; 0 when unknown
	Headroom      string  `json:"headroom"`
}

// findings finds the knee, the break, the usable level and the
// headroom from each level's load, throughput and budget verdict.
func findings(levels, tput []float64, budget []judge.Outcome, threshold float64, name func(float64) string) Findings {
	n := len(levels)
	f := Findings{Knee: -1, Break: -1, Usable: -1}
	for i := 0; i+1 < n; i++ {
		if tput[i+1] < tput[i]*(1+threshold) {
			f.Knee = i
			break
		}
	}
	for i := range n {
		if budget[i] == judge.Fail {
			f.Break = i
			break
		}
	}
	first := n // the first level not worth using
	if f.Knee >= 0 {
		first = f.Knee + 1
	}
	if f.Break >= 0 {
		first = min(first, f.Break)
	}
	// The usable level is the highest before it whose budget was shown
	// to hold: a level its sample could not decide is not usable.
	for f.Usable = first - 1; f.Usable >= 0 && budget[f.Usable] != judge.Pass; f.Usable-- {
	}
	switch {
	case n == 0:
		f.Headroom = "no levels"
	case f.Knee >= 0 && f.Break >= 0 && f.Break > f.Knee:
		f.HeadroomRatio = levels[f.Break] / levels[f.Knee]
		f.Headroom = fmt.Sprintf("throughput stops growing after %s, while the latency budget holds until %s breaks it: %.3g× the knee's load of headroom, none of it buying throughput",
			name(levels[f.Knee]), name(levels[f.Break]), f.HeadroomRatio)
	case f.Knee >= 0 && f.Break >= 0:
		f.Headroom = fmt.Sprintf("none: the latency budget breaks at %s, at or before the throughput knee (%s) — latency, not throughput, limits this service",
			name(levels[f.Break]), name(levels[f.Knee]))
	case f.Knee >= 0:
		f.HeadroomRatio = levels[n-1] / levels[f.Knee]
		f.Headroom = fmt.Sprintf("throughput stops growing after %s; the latency budget held at every level tested, up to %s (at least %.3g× the knee's load)",
			name(levels[f.Knee]), name(levels[n-1]), f.HeadroomRatio)
	case f.Break >= 0:
		f.Headroom = fmt.Sprintf("none: throughput still grew at every level, and the latency budget breaks at %s", name(levels[f.Break]))
	default:
		f.Headroom = fmt.Sprintf("unknown: neither the throughput knee nor the budget break was reached up to %s; test higher levels", name(levels[n-1]))
	}
	return f
}

// Result is a sweep's levels and findings.
type Result struct {
	Closed   bool     `json:"closed_loop"`
	Levels   []Level  `json:"levels"`
	Findings Findings `json:"findings"`
	Note     string   `json:"note,omitempty"`
	Partial  bool     `json:"partial"`
	// NotReached names the level a budget stop or Ctrl-C cut before its
	// measured phase began (in its warmup): it has no measurement, so it
	// is not among Levels.
	NotReached string `json:"not_reached,omitempty"`
}

// Sweep executes `surge sweep` into d: one run per level
// (level-NN-<level>/), then the level table, sweep.json and report.html,
// with a summary on w.
func Sweep(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
	if err := c.Validate(); err != nil {
		return experiment.Outcome{}, &run.ConfigError{Err: err}
	}
	if err := env.CheckBudget(c.closed()); err != nil {
		return experiment.Outcome{}, err
	}
	experiment.Announce(w, env, "sweep")
	kind := "closed loop (concurrent users; labelled as such: a slow target slows its own load)"
	if !c.closed() {
		kind = "open loop (" + c.Arrival + " arrivals)"
	}
	fmt.Fprintf(w, "sweep: %s, levels %s, %s warmup + %s per level; budget p95 TTFT ≤ %s, p95 TPOT ≤ %s; knee at < %g%% more throughput\n",
		kind, levelList(c), c.Warmup, c.Duration, c.TTFTBudget, c.TPOTBudget, 100*c.KneeThreshold)
	sr := &Result{Closed: c.closed()}
	levels := c.Levels()
	partial, err := experiment.Loop(ctx, env, w, c.SettleTimeout, "level", func(i int) (bool, bool, error) {
		lv, err := runLevel(ctx, env, c, d, i, levels[i-1])
		if err != nil {
			return false, false, err
		}
		if lv.notReached {
			sr.NotReached = fmt.Sprintf("level %d %s: its measured phase was not reached (%s); the levels before it are the sweep's results", i, lv.Name, lv.Result.PartialWhy)
			fmt.Fprintln(w, sr.NotReached)
			return true, false, nil
		}
		sr.Levels = append(sr.Levels, *lv)
		printLevel(w, lv)
		if lv.Result.Partial {
			return true, false, nil
		}
		if why := lv.Result.Unusable; why != "" {
			sr.Note = "the sweep stopped: " + why
			return false, false, nil
		}
		if lv.GeneratorLimited {
			sr.Note = fmt.Sprintf("the sweep stopped at %s: %s; higher rates are out of this generator's reach and the levels above were not run", lv.Name, lv.Measure.GeneratorNote)
			return false, false, nil
		}
		return false, i < len(levels), nil
	})
	sr.Partial = partial
	if err != nil {
		return experiment.Outcome{}, err
	}
	// Findings over the levels measured on the target (not a
	// generator-limited one).
	var lv, tput []float64
	var ok []judge.Outcome
	for _, l := range sr.Levels {
		if l.GeneratorLimited || l.Result.Partial {
			break
		}
		lv, tput, ok = append(lv, l.Level), append(tput, l.Measure.OutputTPS), append(ok, l.Budget.Outcome)
	}
	sr.Findings = findings(lv, tput, ok, c.KneeThreshold, c.levelName)
	if err := writeReports(env, c, d, sr); err != nil {
		return experiment.Outcome{}, err
	}
	printSummary(w, c, sr, d.Path())
	out := experiment.Outcome{Verdict: outcome(sr), Partial: sr.Partial, Dir: d.Path(), Meaning: meaning(sr)}
	var results []*run.Result
	for _, l := range sr.Levels {
		results = append(results, l.Result)
	}
	out.Unusable = len(sr.Levels) > 0 && !experiment.AnyOK(results...) && !sr.Partial
	out.UnusableWhy = experiment.UnusableWhy(results...)
	return out, nil
}

func levelList(c *Config) string {
	var s []string
	for _, v := range c.Levels() {
		s = append(s, c.levelName(v))
	}
	return strings.Join(s, ", ")
}

// runLevel runs level i (1-based) at v users or arrivals/s.
func runLevel(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, i int, v float64) (*Level, error) {
	name := fmt.Sprintf("level-%02d-%s", i, c.levelName(v))
	lv := &Level{Index: i, Name: c.levelName(v), Level: v}
	sub, err := d.Sub(name)
	if err != nil {
		return nil, err
	}
	spec := run.Spec{Name: name, Dir: sub, Command: "sweep", Exclude: []string{schedule.PhaseWarmup},
		Experiment: levelRecord{Level: v, Sweep: c}}
	if c.closed() {
		spec.Closed = &schedule.ClosedLoop{Users: int(v), Warmup: c.Warmup, Duration: c.Duration, Phase: levelPhase}
		spec.Plan = spec.Closed.Plan()
	} else {
		if c.Warmup > 0 {
			spec.Plan.Phases = append(spec.Plan.Phases, schedule.Phase{Name: schedule.PhaseWarmup, Duration: c.Warmup, Rate: v, Arrival: c.Arrival})
		}
		spec.Plan.Phases = append(spec.Plan.Phases, schedule.Phase{Name: levelPhase, Duration: c.Duration, Rate: v, Arrival: c.Arrival})
	}
	res, err := env.Execute(ctx, spec)
	if res == nil {
		return nil, err
	}
	lv.Result = res
	if err != nil {
		return lv, err
	}
	if _, ok := res.Analysis.Phase(levelPhase); !ok && res.Partial {
		lv.notReached = true
		return lv, nil
	}
	if lv.Measure, err = experiment.MeasureRun(res, levelPhase, c.closed()); err != nil {
		return nil, err
	}
	lv.GeneratorLimited = lv.Measure.GeneratorLimited
	lv.Budget = judge.Budget(&lv.Measure.Phase.Stats, c.TTFTBudget, c.TPOTBudget, c.Options.SLOGoodput)
	lv.BudgetWhy = experiment.Clauses(lv.Budget, false)
	return lv, nil
}

// budget checks p95 TTFT (from the schedule) and p95 TPOT against their
// budgets, and the level's failures against the goodput SLO's budget: with
// a goodput target g > 0, more than (1 − g) of the level's requests ending
// in anything but ok (connection errors, HTTP errors, timeouts, drops,
// cancellations) breaks it, however fast the rest were. An unknown
func printLevel(w io.Writer, lv *Level) {
	m := &lv.Measure
	p := &m.Phase
	verdict := "within budget"
	switch lv.Budget.Outcome {
	case judge.Fail:
		verdict = "BUDGET BROKEN"
	case judge.Inconclusive:
		verdict = "budget INCONCLUSIVE"
	}
	fmt.Fprintf(w, "level %2d %-8s %8.1f output tok/s %7.2f req/s  TTFT p95 %-7s TPOT p95 %-7s errors %.1f%%  %d requests  %s (%s)\n",
		lv.Index, lv.Name, m.OutputTPS, m.RequestRPS, p.Latency.TTFTSchedule.Text(analyze.Q95), p.Latency.TPOT.Text(analyze.Q95),
		100*p.FailureRate, p.Offered, verdict, lv.BudgetWhy)
	if m.GeneratorNote != "" {
		fmt.Fprintf(w, "         WARNING: %s\n", m.GeneratorNote)
	}
}

func printSummary(w io.Writer, c *Config, sr *Result, dir string) {
	f := &sr.Findings
	at := func(i int, none string) string {
		if i < 0 {
			return none
		}
		return sr.Levels[i].Name
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "throughput knee:       %s\n", at(f.Knee, "not reached (throughput still grew ≥ "+strconv.FormatFloat(100*c.KneeThreshold, 'g', -1, 64)+"% at every level)"))
	fmt.Fprintf(w, "latency budget breaks: %s\n", at(f.Break, "not reached (no level broke it)"))
	none := "none (the budget breaks at the first level)"
	if undecided := inconclusive(sr); len(undecided) > 0 && f.Break != 0 {
		none = "none shown: no level's budget was shown to hold (INCONCLUSIVE at " + strings.Join(undecided, ", ") + ")"
	}
	fmt.Fprintf(w, "usable level:          %s\n", at(f.Usable, none))
	switch {
	case sr.NotReached != "":
		fmt.Fprintln(w, "PARTIAL: "+sr.NotReached+".")
	case sr.Partial:
		fmt.Fprintln(w, "PARTIAL: the sweep was interrupted or stopped by its budget (the reason is in its last level's row).")
	}
	lines, why := verdictLines(sr) // the headroom and the note explain them
	experiment.PrintVerdicts(w, fmt.Sprintf("latency budget p95 TTFT ≤ %s, p95 TPOT ≤ %s, failures within the goodput SLO; SLO %s; measured vs limit", c.TTFTBudget, c.TPOTBudget, experiment.SLOText(c.Options.Judging)), lines, why)
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
}

var columns = []report.Column{
	{Key: "level", Head: "level", Kind: report.KindText, Desc: "cN = N concurrent users (closed loop); Nrps = N arrivals/s (open loop)"},
	{Key: "load", Head: "load", Kind: report.KindNumber, Desc: "users, or arrivals/s"},
	{Key: "request_rps", Head: "req/s", Kind: report.KindRPS, Desc: "successful requests completed in the measured phase / its length"},
	{Key: "output_tokens_per_s", Head: "out tok/s", Kind: report.KindRPS, Desc: "output tokens of those requests / length (the knee is on this)"},
	{Key: "total_tokens_per_s", Head: "total tok/s", Kind: report.KindRPS, Desc: "prompt + output tokens / length"},
	{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.KindMs, Desc: "TTFT from the scheduled arrival (closed loop: from the send), ms"},
	{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: report.KindMs},
	{Key: "ttft_p99_ms", Head: "TTFT p99", Kind: report.KindMs},
	{Key: "tpot_p50_ms", Head: "TPOT p50", Kind: report.KindMs, Desc: "(done − first token) / (output tokens − 1), ms"},
	{Key: "tpot_p95_ms", Head: "TPOT p95", Kind: report.KindMs},
	{Key: "tpot_p99_ms", Head: "TPOT p99", Kind: report.KindMs},
	{Key: "itl_mean_ms", Head: "ITL mean", Kind: report.KindMs, Desc: "mean gap between content chunks, pooled over requests, ms"},
	{Key: "itl_max_p50_ms", Head: "ITL max p50", Kind: report.KindMs, Desc: "distribution of each request's longest inter-token gap, ms"},
	{Key: "itl_max_p95_ms", Head: "ITL max p95", Kind: report.KindMs},
	{Key: "itl_max_p99_ms", Head: "ITL max p99", Kind: report.KindMs},
	{Key: "itl_max_max_ms", Head: "ITL max", Kind: report.KindMs, Desc: "the longest inter-token gap of the level, ms"},
	{Key: "completion_p50_ms", Head: "compl p50", Kind: report.KindMs, Desc: "completion from the scheduled arrival, ms"},
	{Key: "completion_p95_ms", Head: "compl p95", Kind: report.KindMs},
	{Key: "completion_p99_ms", Head: "compl p99", Kind: report.KindMs},
	{Key: "failure_rate", Head: "fail %", Kind: report.KindRatio, Desc: "errors + 429 + timeouts + drops, % of requests"},
	{Key: "samples", Head: "samples", Kind: report.KindCount},
	{Key: "budget", Head: "budget", Kind: report.KindText, Desc: "p95 TTFT and p95 TPOT within their budgets, and failures (non-ok outcomes) within the goodput SLO's budget, 1 − goodput target"},
	{Key: "marks", Head: "marks", Kind: report.KindText, Desc: "knee, budget break, usable level"},
}

func levelRow(lv *Level, f *Findings, i int) []report.Cell {
	m := &lv.Measure
	p := &m.Phase
	l := &p.Latency
	ttft, tpot, itl, e2e := experiment.DistOpts(l.TTFTSchedule), experiment.DistOpts(l.TPOT), experiment.DistOpts(l.ITLMax), experiment.DistOpts(l.E2ESchedule)
	itlMax, itlMean := report.Unavailable(report.ReasonNoSamples), report.Unavailable(report.ReasonNoSamples)
	if l.ITLMax.Count > 0 {
		itlMax = report.Val(l.ITLMax.MaxMs)
	}
	if p.ITLMeanPooledMs > 0 {
		itlMean = report.Val(p.ITLMeanPooledMs)
	}
	b := string(lv.Budget.Outcome)
	if lv.GeneratorLimited {
		b = "GENERATOR-LIMITED"
	}
	var marks []string
	if i == f.Knee {
		marks = append(marks, "knee")
	}
	if i == f.Break {
		marks = append(marks, "budget breaks")
	}
	if i == f.Usable {
		marks = append(marks, "usable")
	}
	return append([]report.Cell{
		report.TextCell(lv.Name), experiment.Num(lv.Level), experiment.Num(m.RequestRPS), experiment.Num(m.OutputTPS), experiment.Num(m.TotalTPS),
		report.NumCell(ttft[0]), report.NumCell(ttft[1]), report.NumCell(ttft[2]),
		report.NumCell(tpot[0]), report.NumCell(tpot[1]), report.NumCell(tpot[2]),
		report.NumCell(itlMean), report.NumCell(itl[0]), report.NumCell(itl[1]), report.NumCell(itl[2]), report.NumCell(itlMax),
		report.NumCell(e2e[0]), report.NumCell(e2e[1]), report.NumCell(e2e[2]),
		experiment.Num(p.FailureRate), experiment.Num(float64(p.Offered)), report.TextCell(b), report.TextCell(experiment.OrDash(strings.Join(marks, ", "))),
	}, report.SLOCells(experiment.SLOStatus(lv.slo()))...)
}

// writeReports writes the level table, sweep.json and report.html: the
// sweep layout.
func writeReports(env *run.Env, c *Config, d *rundir.Dir, sr *Result) error {
	o := &env.Opts
	title := "surge sweep: " + env.TargetName()
	loop := "closed loop: concurrent users, each sending when its previous request ended"
	if !c.closed() {
		loop = "open loop: " + c.Arrival + " arrivals at each rate"
	}
	meta := append(experiment.HTMLMeta(env),
		report.KV{Key: "levels", Value: loop},
		report.KV{Key: "per level", Value: fmt.Sprintf("%s warmup (excluded) + %s measured; the same request sequence (seed %d) at every level", c.Warmup, c.Duration, o.Seed)},
		report.KV{Key: "latency budget", Value: fmt.Sprintf("p95 TTFT ≤ %s, p95 TPOT ≤ %s", c.TTFTBudget, c.TPOTBudget)},
		report.KV{Key: "knee", Value: fmt.Sprintf("the next level adds < %g%% output tokens/s", 100*c.KneeThreshold)},
	)
	lt := report.Grid{Title: title, Meta: meta, Columns: append(slices.Clip(columns), report.SLOColumns...)}
	results := report.Table{Title: "Results table (docs/method.md §13), one row per level", Omit: report.BurstColumns, PhaseHead: "level"}
	h := report.GridReport{HTMLReport: report.HTMLReport{Title: title, Meta: meta}}
	f := &sr.Findings
	for i := range sr.Levels {
		lv := &sr.Levels[i]
		lt.Rows = append(lt.Rows, levelRow(lv, f, i))
		lt.Verdicts = append(lt.Verdicts, report.Verdict{Scope: lv.Name, Check: "latency budget", Status: experiment.Status(lv.Budget.Outcome), Detail: lv.BudgetWhy})
		if v := lv.slo(); len(v.Clauses) > 0 {
			lt.Verdicts = append(lt.Verdicts, report.Verdict{Scope: lv.Name, Check: "SLO", Status: experiment.Status(v.Outcome), Detail: experiment.Clauses(v, false)})
		}
		row := experiment.Row(lv.Result, o, levelPhase)
		experiment.NoBurst(&row)
		row.Phase = lv.Name
		results.Rows = append(results.Rows, row)
		h.Runs = append(h.Runs, experiment.Charts(lv.Result, o, "level "+lv.Name))
		results.Notes = append(results.Notes, experiment.LevelNotes(lv.Name, lv.Result)...)
		if n := lv.Measure.Phase.Offered; n < sweepRecommendedSamples && !lv.Result.Partial {
			lt.Notes = append(lt.Notes, fmt.Sprintf("%s: %d requests (docs/method.md §4 asks for ~%d or 5–10 minutes per level): its P99 rests on few values; lengthen --duration.", lv.Name, n, sweepRecommendedSamples))
		}
	}
	name := func(i int, none string) string {
		if i < 0 {
			return none
		}
		return sr.Levels[i].Name
	}
	lt.Notes = append([]string{
		"throughput knee: " + name(f.Knee, "not reached"),
		"latency budget breaks: " + name(f.Break, "not reached"),
		"usable level: " + name(f.Usable, "none"),
		"headroom: " + f.Headroom,
	}, lt.Notes...)
	if sr.Closed {
		lt.Notes = append(lt.Notes, "Closed loop: each user waits for its answer before sending again, so a slow target slows its own load; use it for the knee, and an open-loop capacity search for the sustainable rate.")
	}
	if sr.Note != "" {
		lt.Notes = append(lt.Notes, sr.Note)
	}
	if sr.NotReached != "" {
		lt.Notes = append(lt.Notes, "PARTIAL: "+sr.NotReached+".")
	} else if sr.Partial {
		lt.Notes = append(lt.Notes, "PARTIAL: the sweep was interrupted or stopped by its budget; the last level is cut short (the reason is in its row).")
	}
	return experiment.WriteLevelExperiment(d, "sweep.json", sr, lt, results, h, charts(c, sr))
}

// sweepCharts plot throughput and latency against the level, and
// throughput against latency.
func charts(c *Config, sr *Result) []report.XYChart {
	var x, out, total, ttft, tpot, e2e []float64
	var labels []string
	for i := range sr.Levels {
		lv := &sr.Levels[i]
		l := &lv.Measure.Phase.Latency
		x = append(x, lv.Level)
		labels = append(labels, lv.Name)
		out, total = append(out, lv.Measure.OutputTPS), append(total, lv.Measure.TotalTPS)
		ttft = append(ttft, experiment.DistValue(l.TTFTSchedule, analyze.Q95))
		tpot = append(tpot, experiment.DistValue(l.TPOT, analyze.Q95))
		e2e = append(e2e, experiment.DistValue(l.E2ESchedule, analyze.Q95))
	}
	xl := "concurrent users (closed loop)"
	if !c.closed() {
		xl = "offered arrivals/s (open loop)"
	}
	logX := len(x) > 1 && x[0] > 0 && x[len(x)-1]/x[0] >= sweepLogAxisMinLevelRatio
	f := &sr.Findings
	var marks []report.XYRule
	if f.Knee >= 0 {
		marks = append(marks, report.XYRule{Label: "knee " + sr.Levels[f.Knee].Name, Value: x[f.Knee]})
	}
	if f.Break >= 0 {
		marks = append(marks, report.XYRule{Label: "budget breaks " + sr.Levels[f.Break].Name, Value: x[f.Break]})
	}
	tputChart := report.XYChart{Title: "Throughput against load", Note: "by completion time within each level's measured phase",
		XLabel: xl, YLabel: "tokens/s", LogX: logX,
		Series: []report.XYSeries{{Label: "output tok/s", X: x, Y: out, Labels: labels}, {Label: "total tok/s", X: x, Y: total}}, VRules: marks}
	latChart := report.XYChart{Title: "Latency against load", Note: "p95; lower bounds where too many requests timed out",
		XLabel: xl, YLabel: "ms (log scale)", LogX: logX, LogY: true,
		Series: []report.XYSeries{{Label: "TTFT p95", X: x, Y: ttft}, {Label: "TPOT p95", X: x, Y: tpot}, {Label: "completion p95", X: x, Y: e2e}},
		HRules: []report.XYRule{
			{Label: "TTFT budget " + c.TTFTBudget.String(), Value: float64(c.TTFTBudget) / 1e6},
			{Label: "TPOT budget " + c.TPOTBudget.String(), Value: float64(c.TPOTBudget) / 1e6},
		}, VRules: marks}
	tradeoff := report.XYChart{Title: "Throughput against latency", Note: "one point per level, in order of load",
		XLabel: "output tokens/s", YLabel: "p95 ms (log scale)", LogY: true,
		Series: []report.XYSeries{{Label: "TTFT p95", X: out, Y: ttft, Labels: labels}, {Label: "TPOT p95", X: out, Y: tpot}},
		HRules: latChart.HRules}
	return []report.XYChart{tputChart, latChart, tradeoff}
}

// levelRecord is what a level's manifest records of the experiment.
type levelRecord struct {
	Level float64 `json:"level"`
	Sweep *Config `json:"sweep"`
}
