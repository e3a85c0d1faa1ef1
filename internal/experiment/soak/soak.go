// Package soak is `surge soak`: one long open-loop run reported in windows
// of arrival time, with a drift test (judge.TestDrift) on the window
// series of p95 latency, failure rate and engine KV-cache usage
// (docs/method.md §4).
package soak

import (
	"context"
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
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
)

// The soak's defaults (docs/method.md §4: about an hour, reporting drift).
const (
	DefaultSoakDuration   = time.Hour
	DefaultSoakWarmup     = 2 * time.Minute
	DefaultSoakWindow     = time.Minute
	DefaultSoakSimRate    = 5.0 // against the built-in simulator, when --rate is not given
	DefaultDriftLatency   = 0.20
	DefaultDriftErrorRate = 0.01
	DefaultDriftKV        = 0.10
	DefaultDriftConf      = 0.95
	soakPhase             = "soak"
)

// Config is a soak test (`surge soak`): a long constant open-loop load
// reported in windows of arrival time (--window, 1 min by default), with a
// drift test on each window series:
//
//   - p95 TTFT and p95 completion from the scheduled arrival (ms);
//   - the failure rate (errors + 429 + timeouts + drops over offered);
//   - the engine's KV-cache usage (mean of the samples in the window), when
//     engine metrics are scraped.
//
// For each series y over the windows' mid-times x (hours since the soak
// began) surge fits a least-squares line (analyze.FitTrend) and calls it drifting
// when both hold: the slope's Confidence interval excludes zero, and the
// fitted change over the soak, slope × (x_last − x_first), is at least
// DriftLatency of the series' mean for latencies, DriftErrorRate (absolute)
// for the failure rate or DriftKV (absolute) for KV usage. The second rule
// keeps a statistically significant but harmless drift — and the
// optimism of a test that treats consecutive windows as independent — from
// raising an alarm. A series needs at least judge.MinDriftWindows windows with values
// (judge.TestDrift).
type Config struct {
	Options        run.Options   `yaml:",inline" json:"-"`
	Rate           float64       `yaml:"rate"`             // arrivals/s
	Duration       time.Duration `yaml:"duration"`         // measured soak
	Warmup         time.Duration `yaml:"warmup"`           // excluded, at the same rate
	Arrival        string        `yaml:"arrival"`          // poisson or constant
	Confidence     float64       `yaml:"confidence"`       // of the slope's interval
	DriftLatency   float64       `yaml:"drift_latency"`    // relative change of a p95 over the soak that counts as drift
	DriftErrorRate float64       `yaml:"drift_error_rate"` // absolute change of the failure rate that counts as drift
	DriftKV        float64       `yaml:"drift_kv"`         // absolute change of KV-cache usage (0..1) that counts as drift
	Simulate       bool          `yaml:"simulate"`         // virtual time against the engine model
}

// DefaultConfig returns the defaults; the analysis window is 1 minute.
func DefaultConfig() Config {
	c := Config{
		Options:        run.DefaultOptions(),
		Duration:       DefaultSoakDuration,
		Warmup:         DefaultSoakWarmup,
		Arrival:        schedule.ArrivalPoisson,
		Confidence:     DefaultDriftConf,
		DriftLatency:   DefaultDriftLatency,
		DriftErrorRate: DefaultDriftErrorRate,
		DriftKV:        DefaultDriftKV,
	}
	c.Options.Window = DefaultSoakWindow
	return c
}

// Validate checks the soak settings; each problem is a field.Error named
// by its YAML key.
func (c *Config) Validate() error {
	var errs field.Errors
	bad := errs.Add
	switch {
	case c.Rate == 0 && c.Options.Target != "":
		bad("rate", "required with --target: the constant load to hold (find a sustainable one with surge capacity)")
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate <= 0:
		bad("rate", "must be > 0 requests/s, got %g", c.Rate)
	case c.Rate > schedule.MaxRate:
		bad("rate", "%g requests/s is more than the load generator can schedule (at most %g/s)", c.Rate, float64(schedule.MaxRate))
	}
	if c.Duration <= 0 {
		bad("duration", "must be > 0, got %s", c.Duration)
	} else if w := c.Options.Window; w > 0 && c.Duration < judge.MinDriftWindows*w {
		bad("duration", "must hold at least %d windows of --window %s for a trend test, got %s", judge.MinDriftWindows, w, c.Duration)
	}
	if c.Warmup < 0 {
		bad("warmup", "must be ≥ 0, got %s", c.Warmup)
	}
	if c.Arrival != schedule.ArrivalPoisson && c.Arrival != schedule.ArrivalConstant {
		bad("arrival", "must be poisson or constant, got %q", c.Arrival)
	}
	if !(c.Confidence > 0.5 && c.Confidence < 1) {
		bad("confidence", "must be within (0.5, 1), got %g", c.Confidence)
	}
	if !(c.DriftLatency > 0) || math.IsInf(c.DriftLatency, 0) {
		bad("drift_latency", "must be > 0 (a fraction, e.g. 0.2), got %g", c.DriftLatency)
	}
	if !(c.DriftErrorRate > 0 && c.DriftErrorRate <= 1) {
		bad("drift_error_rate", "must be within (0, 1], got %g", c.DriftErrorRate)
	}
	if !(c.DriftKV > 0 && c.DriftKV <= 1) {
		bad("drift_kv", "must be within (0, 1], got %g", c.DriftKV)
	}
	return errs.Err()
}

// Window is one window of the soak.
type Window struct {
	analyze.WindowResult
	KVUsage float64       // mean KV-cache usage over the window's engine samples; NaN without any
	Verdict judge.Verdict // the SLO over the window alone
}

// Result is a soak's windows, trends and verdict.
type Result struct {
	Verdict string        `json:"verdict"` // stable, drifting or inconclusive
	Trends  []judge.Drift `json:"trends"`
	Windows []Window      `json:"-"`
	Result  *run.Result   `json:"-"`
	Window  time.Duration `json:"window_ns"`
	Partial bool          `json:"partial"`

	rerendered []string // surge report: the files it could not use, for the notes
}

// soakWindows picks the analysis windows of the soak phase, adds the
// engine's KV-cache usage and judges each by the SLO.
func soakWindows(res *run.Result, slo judge.SLO) []Window {
	var out []Window
	for _, w := range res.Analysis.Windows {
		if w.Phase != soakPhase {
			continue
		}
		sw := Window{WindowResult: w, KVUsage: math.NaN(), Verdict: slo.Check(&w.Stats)}
		var sum float64
		var n int
		for _, s := range res.Engine {
			t := float64(s.TNs) / 1e6
			if t < w.StartMs || t >= w.EndMs {
				continue
			}
			if v, ok := s.Value(scrape.KVUsage); ok && finite(v) {
				sum += v
				n++
			}
		}
		if n > 0 {
			sw.KVUsage = sum / float64(n)
		}
		out = append(out, sw)
	}
	return out
}

// soakTrends tests every series of the windows.
func soakTrends(c *Config, wins []Window, soakStartMs float64) []judge.Drift {
	mk := func(metric, unit string, thr float64, rel bool, get func(*Window) float64) judge.Series {
		s := judge.Series{Metric: metric, Unit: unit, Threshold: thr, Relative: rel}
		for i := range wins {
			w := &wins[i]
			s.X = append(s.X, ((w.StartMs+w.EndMs)/2-soakStartMs)/3.6e6)
			s.Y = append(s.Y, get(w))
		}
		return s
	}
	p95 := func(d func(*Window) analyze.Dist) func(*Window) float64 {
		return func(w *Window) float64 { return experiment.DistValue(d(w), analyze.Q95) }
	}
	series := []judge.Series{
		mk("p95 TTFT", "ms", c.DriftLatency, true, p95(func(w *Window) analyze.Dist { return w.Latency.TTFTSchedule })),
		mk("p95 completion", "ms", c.DriftLatency, true, p95(func(w *Window) analyze.Dist { return w.Latency.E2ESchedule })),
		mk("failure rate", "fraction", c.DriftErrorRate, false, func(w *Window) float64 {
			if w.Offered == 0 {
				return math.NaN()
			}
			return w.FailureRate
		}),
	}
	kv := mk("engine KV-cache usage", "fraction", c.DriftKV, false, func(w *Window) float64 { return w.KVUsage })
	var out []judge.Drift
	for _, s := range series {
		out = append(out, judge.TestDrift(s, c.Confidence))
	}
	t := judge.TestDrift(kv, c.Confidence)
	if t.Windows == 0 {
		t.Why, t.Text = "no engine metrics scraped (pass --metrics-url)", "engine KV-cache usage: not tested, no engine metrics scraped (pass --metrics-url)"
	}
	return append(out, t)
}

// plan is the soak's one run: the warmup, then the soak at the same rate.
func (c *Config) plan() schedule.Plan {
	var plan schedule.Plan
	if c.Warmup > 0 {
		plan.Phases = append(plan.Phases, schedule.Phase{Name: schedule.PhaseWarmup, Duration: c.Warmup, Rate: c.Rate, Arrival: c.Arrival})
	}
	plan.Phases = append(plan.Phases, schedule.Phase{Name: soakPhase, Duration: c.Duration, Rate: c.Rate, Arrival: c.Arrival})
	return plan
}

// Planned is the soak's one run, for --dry-run.
func (c *Config) Planned() ([]experiment.PlannedRun, error) {
	return []experiment.PlannedRun{{Name: "soak", Plan: c.plan(), Exclude: []string{schedule.PhaseWarmup}}}, nil
}

// Soak executes `surge soak` into dir: one run (warmup, then the soak),
// then the window table, the trends, soak.json and report.html.
func Soak(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
	if err := c.Validate(); err != nil {
		return experiment.Outcome{}, &run.ConfigError{Err: err}
	}
	experiment.Announce(w, env, "soak")
	fmt.Fprintf(w, "soak: %s req/s (%s) for %s after a %s warmup, windows of %s; writing %s\n", experiment.FmtRate(c.Rate), c.Arrival, c.Duration, c.Warmup, c.Options.Window, d.Path())
	res, err := env.Execute(ctx, run.Spec{Name: filepath.Base(d.Path()), Dir: d, Command: "soak", Plan: c.plan(), Exclude: []string{schedule.PhaseWarmup}, Experiment: c})
	if res == nil {
		return experiment.Outcome{}, err
	}
	experiment.PrintPhases(w, res)
	if err != nil {
		return experiment.Outcome{}, err
	}
	sr := &Result{Result: res, Window: env.Opts.Window, Partial: res.Partial}
	sr.Windows = soakWindows(res, env.Opts.SLO())
	sr.Trends = soakTrends(c, sr.Windows, float64(c.Warmup)/1e6)
	sr.Verdict = judge.DriftVerdict(sr.Trends)
	if err := writeReports(env, c, d, sr); err != nil {
		return experiment.Outcome{}, err
	}
	printEnd(w, &env.Opts, sr, d.Path())
	return experiment.Outcome{Verdict: soakOutcome(res, sr), Partial: res.Partial, Dir: d.Path(), Unusable: experiment.Unusable(res), Meaning: meaning(sr)}, nil
}

var soakWindowColumns = []report.Column{
	{Key: "window_start_s", Head: "from", Kind: report.KindSeconds, Desc: "start of the window of arrival time, seconds since the soak began (after the warmup)"},
	{Key: "window_end_s", Head: "to", Kind: report.KindSeconds, Desc: "end of the window, seconds since the soak began"},
	{Key: "offered_rps", Head: "offered/s", Kind: report.KindRPS},
	{Key: "completed_rps", Head: "completed/s", Kind: report.KindRPS, Desc: "ok requests whose completion fell in the window / its length"},
	{Key: "goodput_rps", Head: "goodput/s", Kind: report.KindRPS},
	{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.KindMs, Desc: "TTFT from the scheduled arrival, ms"},
	{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: report.KindMs},
	{Key: "ttft_p99_ms", Head: "TTFT p99", Kind: report.KindMs},
	{Key: "completion_p50_ms", Head: "compl p50", Kind: report.KindMs, Desc: "completion from the scheduled arrival, ms"},
	{Key: "completion_p95_ms", Head: "compl p95", Kind: report.KindMs},
	{Key: "completion_p99_ms", Head: "compl p99", Kind: report.KindMs},
	{Key: "failure_rate", Head: "fail %", Kind: report.KindRatio, Desc: "errors + 429 + timeouts + drops, % of offered"},
	{Key: "kv_usage", Head: "KV %", Kind: report.KindRatio, Desc: "mean engine KV-cache usage over the window (n/a without engine metrics)"},
	{Key: "samples", Head: "samples", Kind: report.KindCount},
}

var soakTrendColumns = []report.Column{
	{Key: "metric", Head: "series", Kind: report.KindText},
	{Key: "windows", Head: "windows", Kind: report.KindCount},
	{Key: "slope_per_hour", Head: "slope/h", Kind: report.KindNumber, Desc: "least-squares slope per hour, in the series' unit (ms, or a fraction)"},
	{Key: "ci_low", Head: "CI low", Kind: report.KindNumber, Desc: "confidence interval of the slope (--confidence)"},
	{Key: "ci_high", Head: "CI high", Kind: report.KindNumber},
	{Key: "p", Head: "p", Kind: report.KindNumber, Desc: "two-sided p-value of a zero slope (Student's t, n − 2 degrees of freedom)"},
	{Key: "change", Head: "change", Kind: report.KindNumber, Desc: "fitted change over the soak, in the series' unit"},
	{Key: "relative_change", Head: "change %", Kind: report.KindRatio, Desc: "change / mean (latencies)"},
	{Key: "verdict", Head: "verdict", Kind: report.KindText},
}

// writeReports writes the window and trend tables, soak.json and
// report.html: the soak layout.
func writeReports(env *run.Env, c *Config, d *rundir.Dir, sr *Result) error {
	o := &env.Opts
	res := sr.Result
	title := "surge soak: " + env.TargetName()
	meta := append(experiment.HTMLMeta(env),
		report.KV{Key: "load", Value: fmt.Sprintf("%s req/s %s for %s after %s warmup", experiment.FmtRate(c.Rate), c.Arrival, c.Duration, c.Warmup)},
		report.KV{Key: "verdict", Value: sr.Verdict},
		report.KV{Key: "drift rule", Value: fmt.Sprintf("slope's %g%% CI excludes 0 and the fitted change over the soak ≥ %g%% of the mean (p95 latencies), ≥ %g points (failure rate), ≥ %g points (KV usage)",
			100*c.Confidence, 100*c.DriftLatency, 100*c.DriftErrorRate, 100*c.DriftKV)},
	)
	soakStart := float64(c.Warmup) / 1e6
	wt := report.Grid{Title: title + " — windows", Meta: meta, Columns: append(slices.Clip(soakWindowColumns), report.SLOColumns...)}
	for i := range sr.Windows {
		w := &sr.Windows[i]
		ttft, e2e := experiment.DistOpts(w.Latency.TTFTSchedule), experiment.DistOpts(w.Latency.E2ESchedule)
		kv := report.Unavailable("no engine metrics")
		if finite(w.KVUsage) {
			kv = report.Val(w.KVUsage)
		}
		wt.Rows = append(wt.Rows, append([]report.Cell{
			experiment.Num((w.StartMs - soakStart) / 1000), experiment.Num((w.EndMs - soakStart) / 1000),
			experiment.Num(w.OfferedRPS), experiment.Num(w.CompletedRPS), experiment.Num(w.GoodputRPS),
			report.NumCell(ttft[0]), report.NumCell(ttft[1]), report.NumCell(ttft[2]),
			report.NumCell(e2e[0]), report.NumCell(e2e[1]), report.NumCell(e2e[2]),
			experiment.Num(w.FailureRate), report.NumCell(kv), experiment.Num(float64(w.Offered)),
		}, report.SLOCells(experiment.SLOStatus(w.Verdict))...))
	}
	tt := report.Grid{Title: "Drift: verdict " + strings.ToUpper(sr.Verdict), Columns: soakTrendColumns}
	for _, t := range sr.Trends {
		cell := func(v float64) report.Cell {
			if !t.Tested {
				return report.NumCell(report.Unavailable(t.Why))
			}
			return experiment.Num(v)
		}
		rel := report.NumCell(report.Unavailable("absolute threshold"))
		if t.IsRel && t.Tested {
			rel = experiment.Num(t.Relative)
		}
		v := "not tested"
		switch {
		case t.Drifting:
			v = "DRIFTING"
		case t.Tested:
			v = "stable"
		}
		tt.Rows = append(tt.Rows, []report.Cell{report.TextCell(t.Metric + " (" + t.Unit + ")"), experiment.Num(float64(t.Windows)),
			cell(t.Trend.Slope), cell(t.Trend.CILow), cell(t.Trend.CIHigh), cell(t.Trend.P), cell(t.Change), rel, report.TextCell(v)})
		tt.Notes = append(tt.Notes, t.Text)
	}
	tt.Notes = append(tt.Notes, sr.rerendered...)
	tt.Notes = append(tt.Notes, "The trend test treats windows as independent; under load they are not, so its interval is optimistic — hence the minimum change as well.")
	if res.Partial {
		tt.Notes = append(tt.Notes, "PARTIAL: the soak was interrupted or stopped by its budget; the trends cover what ran.")
	}
	results := report.Table{Title: "Results table (docs/method.md §13)", Omit: report.BurstColumns}
	row := experiment.Row(res, o, soakPhase)
	experiment.NoBurst(&row)
	results.Rows = []report.Row{row}
	results.Verdicts = experiment.SLOVerdicts("soak", res.Verdicts.Overall)
	h := report.GridReport{
		HTMLReport: report.HTMLReport{Title: title, Meta: meta, Tables: []report.Table{results}, Runs: []report.RunCharts{experiment.Charts(res, o, "the soak over time")}},
		Levels:     []report.Grid{tt, experiment.WithoutMeta(wt)},
		Charts:     charts(sr, soakStart),
	}
	extra := []report.Grid{tt}
	if pt, ok := experiment.ProfileTable("", res, o, ""); ok {
		h.Breakdowns = append(h.Breakdowns, pt)
		extra = append(extra, pt)
	}
	st := experiment.ScalingTables("", res)
	h.Breakdowns = append(h.Breakdowns, st...)
	extra = append(extra, st...)
	if err := d.WriteJSON("soak.json", sr); err != nil {
		return err
	}
	return experiment.WriteLevelReports(d, wt, extra, &results, h)
}

// soakCharts plot each series over the soak with its fitted line.
func charts(sr *Result, soakStartMs float64) []report.XYChart {
	var x []float64
	for _, w := range sr.Windows {
		x = append(x, ((w.StartMs+w.EndMs)/2-soakStartMs)/60000)
	}
	series := func(get func(*Window) float64, scale float64) []float64 {
		var y []float64
		for i := range sr.Windows {
			y = append(y, scale*get(&sr.Windows[i]))
		}
		return y
	}
	fit := func(metric string, scale float64) report.XYSeries {
		for _, t := range sr.Trends {
			if t.Metric == metric && t.Tested {
				y := make([]float64, len(x))
				for i := range x {
					y[i] = scale * t.Trend.At(x[i]/60)
				}
				return report.XYSeries{Label: metric + " trend", X: x, Y: y, Dash: true}
			}
		}
		return report.XYSeries{Label: metric + " trend (not tested)"}
	}
	lat := report.XYChart{Title: "p95 latency over the soak", Note: "per window of arrival time, with the fitted trend",
		XLabel: "minutes since the soak began", YLabel: "ms",
		Series: []report.XYSeries{
			{Label: "p95 TTFT", X: x, Y: series(func(w *Window) float64 { return experiment.DistValue(w.Latency.TTFTSchedule, analyze.Q95) }, 1)},
			{Label: "p95 completion", X: x, Y: series(func(w *Window) float64 { return experiment.DistValue(w.Latency.E2ESchedule, analyze.Q95) }, 1)},
			fit("p95 TTFT", 1), fit("p95 completion", 1),
		}}
	errs := report.XYChart{Title: "Failure rate over the soak", XLabel: "minutes since the soak began", YLabel: "% of offered",
		Series: []report.XYSeries{
			{Label: "failures", X: x, Y: series(func(w *Window) float64 { return w.FailureRate }, 100)},
			fit("failure rate", 100),
		}}
	charts := []report.XYChart{lat, errs}
	kv := series(func(w *Window) float64 { return w.KVUsage }, 100)
	for _, v := range kv {
		if finite(v) {
			charts = append(charts, report.XYChart{Title: "Engine KV-cache usage over the soak", XLabel: "minutes since the soak began", YLabel: "% of the KV cache",
				Series: []report.XYSeries{{Label: "KV usage", X: x, Y: kv}, fit("engine KV-cache usage", 100)}})
			break
		}
	}
	return charts
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// SimDefaults fills in the rate against the built-in simulator when none
// was given.
func (c *Config) SimDefaults() {
	if c.Options.Target == "" && c.Rate == 0 {
		c.Rate = DefaultSoakSimRate
	}
}
