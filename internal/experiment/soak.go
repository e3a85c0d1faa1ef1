package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
)

// The soak's defaults (METHOD §4: about an hour, reporting drift).
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
	soakMinWindows        = 6 // windows a trend needs to be tested
)

// Soak verdicts.
const (
	SoakStable       = "stable"
	SoakDrifting     = "drifting"
	SoakInconclusive = "inconclusive"
)

// SoakConfig is a soak test (`surge soak`): a long constant open-loop load
// reported in windows of arrival time (--window, 1 min by default), with a
// drift test on each window series:
//
//   - p95 TTFT and p95 completion from the scheduled arrival (ms);
//   - the failure rate (errors + 429 + timeouts + drops over offered);
//   - the engine's KV-cache usage (mean of the samples in the window), when
//     engine metrics are scraped.
//
// For each series y over the windows' mid-times x (hours since the soak
// began) surge fits a least-squares line (see Trend) and calls it drifting
// when both hold: the slope's Confidence interval excludes zero, and the
// fitted change over the soak, slope × (x_last − x_first), is at least
// DriftLatency of the series' mean for latencies, DriftErrorRate (absolute)
// for the failure rate or DriftKV (absolute) for KV usage. The second rule
// keeps a statistically significant but harmless drift — and the
// optimism of a test that treats consecutive windows as independent — from
// raising an alarm. A series needs at least 6 windows with values.
type SoakConfig struct {
	Options        `yaml:",inline"`
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

// DefaultSoakConfig returns the defaults; the analysis window is 1 minute.
func DefaultSoakConfig() SoakConfig {
	c := SoakConfig{
		Options:        DefaultOptions(),
		Duration:       DefaultSoakDuration,
		Warmup:         DefaultSoakWarmup,
		Arrival:        schedule.ArrivalPoisson,
		Confidence:     DefaultDriftConf,
		DriftLatency:   DefaultDriftLatency,
		DriftErrorRate: DefaultDriftErrorRate,
		DriftKV:        DefaultDriftKV,
	}
	c.Window = DefaultSoakWindow
	return c
}

// RegisterFlags binds the flags of `surge soak`.
func (c *SoakConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&c.Rate, "rate", c.Rate, "constant load in arrivals/s (required with --target; 5 against the built-in simulator)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of the soak (after the warmup)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "warmup at the same rate (excluded)")
	fs.StringVar(&c.Arrival, "arrival", c.Arrival, "arrival process: poisson or constant")
	fs.Float64Var(&c.Confidence, "confidence", c.Confidence, "confidence of a trend's slope interval")
	fs.Float64Var(&c.DriftLatency, "drift-latency", c.DriftLatency, "a p95 latency drifts when its fitted change over the soak is at least this fraction of its mean")
	fs.Float64Var(&c.DriftErrorRate, "drift-error-rate", c.DriftErrorRate, "the failure rate drifts when its fitted change over the soak is at least this (absolute fraction)")
	fs.Float64Var(&c.DriftKV, "drift-kv", c.DriftKV, "KV-cache usage drifts when its fitted change over the soak is at least this (absolute, 0..1)")
	fs.BoolVar(&c.Simulate, "simulate", c.Simulate, "run the soak in virtual time against the engine model")
	c.Options.RegisterFlags(fs)
}

// Validate checks the soak settings; errors name the flag.
func (c *SoakConfig) Validate() error {
	var errs []string
	bad := func(flag, format string, a ...any) { errs = append(errs, "--"+flag+": "+fmt.Sprintf(format, a...)) }
	switch {
	case c.Rate == 0 && c.Target != "":
		bad("rate", "required with --target: the constant load to hold (find a sustainable one with surge capacity)")
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate <= 0:
		bad("rate", "must be > 0 requests/s, got %g", c.Rate)
	case c.Rate > schedule.MaxRate:
		bad("rate", "%g requests/s is more than the load generator can schedule (at most %g/s; run shards for more)", c.Rate, float64(schedule.MaxRate))
	}
	if c.Duration <= 0 {
		bad("duration", "must be > 0, got %s", c.Duration)
	} else if c.Window > 0 && c.Duration < soakMinWindows*c.Window {
		bad("duration", "must hold at least %d windows of --window %s for a trend test, got %s", soakMinWindows, c.Window, c.Duration)
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
		bad("drift-latency", "must be > 0 (a fraction, e.g. 0.2), got %g", c.DriftLatency)
	}
	if !(c.DriftErrorRate > 0 && c.DriftErrorRate <= 1) {
		bad("drift-error-rate", "must be within (0, 1], got %g", c.DriftErrorRate)
	}
	if !(c.DriftKV > 0 && c.DriftKV <= 1) {
		bad("drift-kv", "must be within (0, 1], got %g", c.DriftKV)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// SoakTrend is the drift test of one window series.
type SoakTrend struct {
	Metric    string  `json:"metric"` // e.g. "p95 completion"
	Unit      string  `json:"unit"`   // of the series: ms, fraction
	Windows   int     `json:"windows"`
	Tested    bool    `json:"tested"`
	Why       string  `json:"why,omitempty"` // why not tested
	Trend     Trend   `json:"trend"`         // slope in unit per hour
	Change    float64 `json:"change"`        // fitted change over the soak, in unit
	Relative  float64 `json:"relative"`      // change / mean (latencies); 0 otherwise
	Threshold float64 `json:"threshold"`     // what counts as drift: relative (latencies) or absolute
	IsRel     bool    `json:"threshold_is_relative"`
	Drifting  bool    `json:"drifting"`
	Text      string  `json:"text"`
}

// soakSeries is one window series before the trend test.
type soakSeries struct {
	metric, unit string
	x, y         []float64 // hours since the soak start; values
	threshold    float64
	relative     bool
}

// testDrift applies the drift rule to s.
func testDrift(s soakSeries, conf float64) SoakTrend {
	st := SoakTrend{Metric: s.metric, Unit: s.unit, Threshold: s.threshold, IsRel: s.relative}
	for i := range s.y {
		if finiteF(s.y[i]) {
			st.Windows++
		}
	}
	if st.Windows < soakMinWindows {
		st.Why = fmt.Sprintf("only %d windows with values (need %d)", st.Windows, soakMinWindows)
		st.Text = s.metric + ": not tested, " + st.Why
		return st
	}
	tr, ok := fitTrend(s.x, s.y, conf)
	if !ok {
		st.Why = "no spread in time"
		st.Text = s.metric + ": not tested, " + st.Why
		return st
	}
	st.Tested, st.Trend = true, tr
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range s.x {
		if finiteF(s.y[i]) {
			lo, hi = math.Min(lo, s.x[i]), math.Max(hi, s.x[i])
		}
	}
	st.Change = tr.Slope * (hi - lo)
	big := math.Abs(st.Change) >= s.threshold
	if s.relative {
		if tr.MeanY > 0 {
			st.Relative = st.Change / tr.MeanY
		}
		big = math.Abs(st.Relative) >= s.threshold
	}
	st.Drifting = tr.Significant() && big
	f := func(v float64) string { return fmtUnit(v, s.unit) }
	verdict := "stable"
	switch {
	case st.Drifting && st.Change > 0:
		verdict = "DRIFTING up"
	case st.Drifting:
		verdict = "DRIFTING down"
	case tr.Significant():
		verdict = "stable (a significant but small trend)"
	}
	rel := ""
	if s.relative {
		rel = fmt.Sprintf(" (%+.1f%% of its mean %s)", 100*st.Relative, f(tr.MeanY))
	}
	thr := f(s.threshold)
	if s.relative {
		thr = fmt.Sprintf("%g%% of the mean", 100*s.threshold)
	}
	st.Text = fmt.Sprintf("%s: %s per hour (%g%% CI %s to %s, p = %.2g, %d windows); fitted change over the soak %s%s; drift threshold %s → %s",
		s.metric, signed(f(tr.Slope), tr.Slope), 100*conf, f(tr.CILow), f(tr.CIHigh), tr.P, st.Windows, signed(f(st.Change), st.Change), rel, thr, verdict)
	return st
}

func signed(s string, v float64) string {
	if v >= 0 && !strings.HasPrefix(s, "+") {
		return "+" + s
	}
	return s
}

func fmtUnit(v float64, unit string) string {
	switch unit {
	case "ms":
		if math.Abs(v) >= 1000 {
			return fmt.Sprintf("%.3gs", v/1000)
		}
		return fmt.Sprintf("%.3gms", v)
	case "fraction":
		return fmt.Sprintf("%.3g%%", 100*v)
	}
	return fmt.Sprintf("%.3g", v)
}

// SoakWindow is one window of the soak.
type SoakWindow struct {
	analyze.WindowResult
	KVUsage float64 // mean KV-cache usage over the window's engine samples; NaN without any
}

// SoakResult is a soak's windows, trends and verdict.
type SoakResult struct {
	Verdict string        `json:"verdict"` // stable, drifting or inconclusive
	Trends  []SoakTrend   `json:"trends"`
	Windows []SoakWindow  `json:"-"`
	Result  *Result       `json:"-"`
	Window  time.Duration `json:"window_ns"`
	Partial bool          `json:"partial"`
}

// soakWindows picks the analysis windows of the soak phase and adds the
// engine's KV-cache usage.
func soakWindows(res *Result) []SoakWindow {
	var out []SoakWindow
	for _, w := range res.Analysis.Windows {
		if w.Phase != soakPhase {
			continue
		}
		sw := SoakWindow{WindowResult: w, KVUsage: math.NaN()}
		var sum float64
		var n int
		for _, s := range res.Engine {
			t := float64(s.TNs) / 1e6
			if t < w.StartMs || t >= w.EndMs {
				continue
			}
			if v, ok := s.Value(scrape.KVUsage); ok && finiteF(v) {
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
func soakTrends(c *SoakConfig, wins []SoakWindow, soakStartMs float64) []SoakTrend {
	mk := func(metric, unit string, thr float64, rel bool, get func(*SoakWindow) float64) soakSeries {
		s := soakSeries{metric: metric, unit: unit, threshold: thr, relative: rel}
		for i := range wins {
			w := &wins[i]
			s.x = append(s.x, ((w.StartMs+w.EndMs)/2-soakStartMs)/3.6e6)
			s.y = append(s.y, get(w))
		}
		return s
	}
	p95 := func(d func(*SoakWindow) analyze.Dist) func(*SoakWindow) float64 {
		return func(w *SoakWindow) float64 { return distValue(d(w), analyze.Q95) }
	}
	series := []soakSeries{
		mk("p95 TTFT", "ms", c.DriftLatency, true, p95(func(w *SoakWindow) analyze.Dist { return w.Latency.TTFTSchedule })),
		mk("p95 completion", "ms", c.DriftLatency, true, p95(func(w *SoakWindow) analyze.Dist { return w.Latency.E2ESchedule })),
		mk("failure rate", "fraction", c.DriftErrorRate, false, func(w *SoakWindow) float64 {
			if w.Offered == 0 {
				return math.NaN()
			}
			return w.FailureRate
		}),
	}
	kv := mk("engine KV-cache usage", "fraction", c.DriftKV, false, func(w *SoakWindow) float64 { return w.KVUsage })
	var out []SoakTrend
	for _, s := range series {
		out = append(out, testDrift(s, c.Confidence))
	}
	t := testDrift(kv, c.Confidence)
	if t.Windows == 0 {
		t.Why, t.Text = "no engine metrics scraped (pass --metrics-url)", "engine KV-cache usage: not tested, no engine metrics scraped (pass --metrics-url)"
	}
	return append(out, t)
}

// soakVerdict is drifting when any series drifts, stable when at least
// one was tested and none drifts.
func soakVerdict(trends []SoakTrend) string {
	tested := false
	for _, t := range trends {
		if t.Drifting {
			return SoakDrifting
		}
		tested = tested || t.Tested
	}
	if tested {
		return SoakStable
	}
	return SoakInconclusive
}

// Soak executes `surge soak` into dir: one run (warmup, then the soak),
// then the window table, the trends, soak.json and report.html.
func Soak(ctx context.Context, env *Env, c *SoakConfig, dir string) (Outcome, error) {
	if err := c.Validate(); err != nil {
		return Outcome{}, &ConfigError{err}
	}
	w := env.Stdout
	if env.Simulated && !env.Virtual {
		fmt.Fprintf(w, "No --target: running against surge's built-in simulated engine at %s.\n", env.BaseURL)
	}
	if c.Simulate {
		fmt.Fprintf(w, "surge soak --simulate — virtual time against the engine model; no requests leave this process.\n")
	}
	fmt.Fprintf(w, "soak: %s req/s (%s) for %s after a %s warmup, windows of %s; writing %s\n", fmtRate(c.Rate), c.Arrival, c.Duration, c.Warmup, c.Window, dir)
	var plan schedule.Plan
	if c.Warmup > 0 {
		plan.Phases = append(plan.Phases, schedule.Phase{Name: schedule.PhaseWarmup, Duration: c.Warmup, Rate: c.Rate, Arrival: c.Arrival})
	}
	plan.Phases = append(plan.Phases, schedule.Phase{Name: soakPhase, Duration: c.Duration, Rate: c.Rate, Arrival: c.Arrival})
	res, err := env.Execute(ctx, Spec{Name: filepath.Base(dir), Dir: dir, Command: "soak", Plan: plan, Exclude: []string{schedule.PhaseWarmup}, Extra: c})
	if err != nil {
		return Outcome{}, err
	}
	PrintPhases(w, res)
	sr := &SoakResult{Result: res, Window: env.Opts.Window, Partial: res.Partial}
	sr.Windows = soakWindows(res)
	sr.Trends = soakTrends(c, sr.Windows, float64(c.Warmup)/1e6)
	sr.Verdict = soakVerdict(sr.Trends)
	if err := writeSoakReports(env, c, dir, sr); err != nil {
		return Outcome{}, err
	}
	fmt.Fprintf(w, "\ndrift over %d windows of %s:\n", len(sr.Windows), c.Window)
	for _, t := range sr.Trends {
		fmt.Fprintln(w, "  "+t.Text)
	}
	fmt.Fprintf(w, "verdict: %s\nSLO (overall): %s\nreports: %s  %s\n", strings.ToUpper(sr.Verdict), verdictWord(res.Analysis.Verdict.Pass),
		filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
	return Outcome{SLOPass: res.Analysis.Verdict.Pass && sr.Verdict != SoakDrifting, Partial: res.Partial, Dir: dir, Unusable: unusable(res)}, nil
}

var soakWindowColumns = []report.LevelColumn{
	{Key: "window", Head: "window", Kind: report.LevelText, Desc: "arrival-time window, minutes since the soak began"},
	{Key: "offered_rps", Head: "offered/s", Kind: report.LevelRPS},
	{Key: "success_rps", Head: "ok/s", Kind: report.LevelRPS},
	{Key: "goodput_rps", Head: "goodput/s", Kind: report.LevelRPS},
	{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.LevelMs, Desc: "TTFT from the scheduled arrival, ms"},
	{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: report.LevelMs},
	{Key: "ttft_p99_ms", Head: "TTFT p99", Kind: report.LevelMs},
	{Key: "completion_p50_ms", Head: "compl p50", Kind: report.LevelMs, Desc: "completion from the scheduled arrival, ms"},
	{Key: "completion_p95_ms", Head: "compl p95", Kind: report.LevelMs},
	{Key: "completion_p99_ms", Head: "compl p99", Kind: report.LevelMs},
	{Key: "failure_rate", Head: "fail %", Kind: report.LevelRatio, Desc: "errors + 429 + timeouts + drops, % of offered"},
	{Key: "kv_usage", Head: "KV %", Kind: report.LevelRatio, Desc: "mean engine KV-cache usage over the window (n/a without engine metrics)"},
	{Key: "samples", Head: "samples", Kind: report.LevelCount},
}

var soakTrendColumns = []report.LevelColumn{
	{Key: "metric", Head: "series", Kind: report.LevelText},
	{Key: "windows", Head: "windows", Kind: report.LevelCount},
	{Key: "slope_per_hour", Head: "slope/h", Kind: report.LevelNumber, Desc: "least-squares slope per hour, in the series' unit (ms, or a fraction)"},
	{Key: "ci_low", Head: "CI low", Kind: report.LevelNumber, Desc: "confidence interval of the slope (--confidence)"},
	{Key: "ci_high", Head: "CI high", Kind: report.LevelNumber},
	{Key: "p", Head: "p", Kind: report.LevelNumber, Desc: "two-sided p-value of a zero slope (Student's t, n − 2 degrees of freedom)"},
	{Key: "change", Head: "change", Kind: report.LevelNumber, Desc: "fitted change over the soak, in the series' unit"},
	{Key: "relative_change", Head: "change %", Kind: report.LevelRatio, Desc: "change / mean (latencies)"},
	{Key: "verdict", Head: "verdict", Kind: report.LevelText},
}

func writeSoakReports(env *Env, c *SoakConfig, dir string, sr *SoakResult) error {
	o := &env.Opts
	res := sr.Result
	title := "surge soak: " + env.TargetName()
	meta := append(HTMLMeta(env),
		report.KV{Key: "load", Value: fmt.Sprintf("%s req/s %s for %s after %s warmup", fmtRate(c.Rate), c.Arrival, c.Duration, c.Warmup)},
		report.KV{Key: "verdict", Value: sr.Verdict},
		report.KV{Key: "drift rule", Value: fmt.Sprintf("slope's %g%% CI excludes 0 and the fitted change over the soak ≥ %g%% of the mean (p95 latencies), ≥ %g points (failure rate), ≥ %g points (KV usage)",
			100*c.Confidence, 100*c.DriftLatency, 100*c.DriftErrorRate, 100*c.DriftKV)},
	)
	soakStart := float64(c.Warmup) / 1e6
	wt := report.LevelTable{Title: title + " — windows", Meta: meta, Columns: soakWindowColumns}
	for i := range sr.Windows {
		w := &sr.Windows[i]
		ttft, e2e := distOpts(w.Latency.TTFTSchedule), distOpts(w.Latency.E2ESchedule)
		kv := report.Unavailable("no engine metrics")
		if finiteF(w.KVUsage) {
			kv = report.Val(w.KVUsage)
		}
		wt.Rows = append(wt.Rows, []report.LevelCell{
			report.TextCell(fmt.Sprintf("%.1f–%.1f min", (w.StartMs-soakStart)/60000, (w.EndMs-soakStart)/60000)),
			num(w.OfferedRPS), num(w.SuccessRPS), num(w.GoodputRPS),
			report.NumCell(ttft[0]), report.NumCell(ttft[1]), report.NumCell(ttft[2]),
			report.NumCell(e2e[0]), report.NumCell(e2e[1]), report.NumCell(e2e[2]),
			num(w.FailureRate), report.NumCell(kv), num(float64(w.Offered)),
		})
	}
	tt := report.LevelTable{Title: "Drift: verdict " + strings.ToUpper(sr.Verdict), Columns: soakTrendColumns}
	for _, t := range sr.Trends {
		cell := func(v float64) report.LevelCell {
			if !t.Tested {
				return report.NumCell(report.Unavailable(t.Why))
			}
			return num(v)
		}
		rel := report.NumCell(report.Unavailable("absolute threshold"))
		if t.IsRel && t.Tested {
			rel = num(t.Relative)
		}
		v := "not tested"
		switch {
		case t.Drifting:
			v = "DRIFTING"
		case t.Tested:
			v = "stable"
		}
		tt.Rows = append(tt.Rows, []report.LevelCell{report.TextCell(t.Metric + " (" + t.Unit + ")"), num(float64(t.Windows)),
			cell(t.Trend.Slope), cell(t.Trend.CILow), cell(t.Trend.CIHigh), cell(t.Trend.P), cell(t.Change), rel, report.TextCell(v)})
		tt.Notes = append(tt.Notes, t.Text)
	}
	tt.Notes = append(tt.Notes, "The trend test treats windows as independent; under load they are not, so its interval is optimistic — hence the minimum change as well.")
	if res.Partial {
		tt.Notes = append(tt.Notes, "PARTIAL: the soak was interrupted; the trends cover what ran.")
	}
	results := report.Table{Title: "Results table (METHOD §13)"}
	row := Row(res, o, soakPhase)
	row.Recovery, row.PredictedRecovery = report.RecoveryNA(report.ReasonNoBurst), report.RecoveryNA(report.ReasonNoBurst)
	results.Rows = []report.Row{row}
	results.Verdicts = sloVerdicts("soak", res.Analysis.Verdict)
	h := report.LevelReport{
		HTMLReport: report.HTMLReport{Title: title, Meta: meta, Tables: []report.Table{results}, Runs: []report.RunCharts{Charts(res, o, "the soak over time")}},
		Levels:     []report.LevelTable{tt, withoutMeta(wt)},
		Charts:     soakCharts(sr, soakStart),
	}
	if err := writeJSON(filepath.Join(dir, "soak.json"), sr); err != nil {
		return err
	}
	return writeLevelReports(dir, wt, []report.LevelTable{tt}, &results, h)
}

// soakCharts plot each series over the soak with its fitted line.
func soakCharts(sr *SoakResult, soakStartMs float64) []report.XYChart {
	var x []float64
	for _, w := range sr.Windows {
		x = append(x, ((w.StartMs+w.EndMs)/2-soakStartMs)/60000)
	}
	series := func(get func(*SoakWindow) float64, scale float64) []float64 {
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
			{Label: "p95 TTFT", X: x, Y: series(func(w *SoakWindow) float64 { return distValue(w.Latency.TTFTSchedule, analyze.Q95) }, 1)},
			{Label: "p95 completion", X: x, Y: series(func(w *SoakWindow) float64 { return distValue(w.Latency.E2ESchedule, analyze.Q95) }, 1)},
			fit("p95 TTFT", 1), fit("p95 completion", 1),
		}}
	errs := report.XYChart{Title: "Failure rate over the soak", XLabel: "minutes since the soak began", YLabel: "% of offered",
		Series: []report.XYSeries{
			{Label: "failures", X: x, Y: series(func(w *SoakWindow) float64 { return w.FailureRate }, 100)},
			fit("failure rate", 100),
		}}
	charts := []report.XYChart{lat, errs}
	kv := series(func(w *SoakWindow) float64 { return w.KVUsage }, 100)
	for _, v := range kv {
		if finiteF(v) {
			charts = append(charts, report.XYChart{Title: "Engine KV-cache usage over the soak", XLabel: "minutes since the soak began", YLabel: "% of the KV cache",
				Series: []report.XYSeries{{Label: "KV usage", X: x, Y: kv}, fit("engine KV-cache usage", 100)}})
			break
		}
	}
	return charts
}
