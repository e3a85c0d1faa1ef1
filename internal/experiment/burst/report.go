package burst

import (
	"cmp"
	"encoding/json"
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
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
)

// recovery is a recovery time as the results table shows it.
type recovery = report.Recovery

// burstNotReached says why a run cut short (the budget, Ctrl-C) has no
// burst phase — "burst not reached: stopped by the budget (…)" — or ""
// when the burst ran. Such a run says nothing about the burst: its
// recovery, verdict line and diagnosis say this instead.
func burstNotReached(res *run.Result) string {
	if res != nil && res.Unusable != "" {
		if _, ok := res.Analysis.Phase(schedule.PhaseBurst); !ok {
			return "burst not reached: " + res.Unusable
		}
	}
	if res == nil || !res.Partial {
		return ""
	}
	if _, ok := res.Analysis.Phase(schedule.PhaseBurst); ok {
		return ""
	}
	if res.PartialCause == record.PartialBudget {
		return "burst not reached: stopped by the budget, " + strings.TrimSpace(strings.TrimPrefix(res.PartialWhy, "budget:"))
	}
	return "burst not reached: " + cmp.Or(res.PartialWhy, "interrupted")
}

// measuredRecovery is the measured recovery of res as the results table
// shows it.
func measuredRecovery(res *run.Result, planned time.Duration) recovery {
	if nr := burstNotReached(res); nr != "" {
		return report.RecoveryNA(nr)
	}
	r := res.Verdicts.Recovery
	switch r.Outcome {
	case judge.Inconclusive:
		return report.RecoveryNA(r.Reason)
	case judge.Pass:
		rec := report.RecoveredAfter(r.RecoveryTimeMs / 1000)
		var notes []string
		if r.EarliestKnown && r.EarliestMs < r.RecoveryTimeMs {
			notes = append(notes, fmt.Sprintf("no slow window from %s on", fmtSeconds(r.EarliestMs/1000)))
		}
		if time.Duration(r.RecoveryTimeMs*1e6) > planned {
			notes = append(notes, fmt.Sprintf("beyond the planned window of %s (recovery was extended)", planned))
		}
		rec.Reason = strings.Join(notes, "; ")
		return rec
	}
	return report.NotRecoveredWithin(r.ObservedMs / 1000)
}

// predictedRecovery is the predicted recovery as the results table shows it.
func predictedRecovery(p *predict.Prediction, muSource string) recovery {
	switch {
	case p == nil && strings.HasPrefix(muSource, "μ unknown"):
		return report.RecoveryNA(muSource)
	case p == nil:
		return report.RecoveryNA("μ unknown: pass --capacity-rps")
	case p.Never:
		return report.NeverRecovers("baseline at or above capacity")
	}
	return report.RecoveredAfter(p.RecoveryTime.Seconds())
}

func recoveryText(r recovery) string {
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

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + " s" }

func printRun(w io.Writer, run *Run) {
	res := run.Result
	experiment.PrintPhases(w, res)
	fmt.Fprintf(w, "recovery (%s): %s", res.Verdicts.Recovery.Metric, recoveryText(run.Recovery))
	switch {
	case run.Prediction != nil:
		fmt.Fprintf(w, "; predicted %s (μ = %.2f req/s, %s)", recoveryText(predictedRecovery(run.Prediction, run.MuSource)), run.Mu, run.MuSource)
	case run.MuSource != "":
		fmt.Fprintf(w, "; no prediction (%s)", run.MuSource)
	}
	fmt.Fprintln(w)
	if note := abandonmentNote(run); note != "" {
		fmt.Fprintln(w, note)
	}
	fmt.Fprintln(w)
}

// abandonmentNote says how many requests timed out against how many the
// model expected to give up (it caps the backlog at μ × timeout).
func abandonmentNote(run *Run) string {
	if run.Prediction == nil || run.Prediction.Never {
		return ""
	}
	timedOut, offered := outcomeIn(run, record.Timeout, schedule.PhaseBurst, schedule.PhaseRecovery)
	if offered == 0 || float64(timedOut) <= 0.01*float64(offered) {
		return ""
	}
	note := fmt.Sprintf("note: %d of %d requests (%.1f%%) timed out and were abandoned; the prediction let about %.0f give up (it caps the backlog at μ × the timeout: a request would not wait longer)",
		timedOut, offered, 100*float64(timedOut)/float64(offered), run.Prediction.Abandoned)
	if p := run.Prediction; p.Rejected > 0 {
		note += fmt.Sprintf(" and about %.0f rejected for good at the queue limit", p.Rejected)
	}
	return note + "."
}

// outcomeIn counts a run's requests with outcome o, and its offered
// arrivals, over the named phases.
func outcomeIn(run *Run, o record.Outcome, phases ...string) (n, offered int64) {
	for _, p := range run.Result.Analysis.Phases {
		if slices.Contains(phases, p.Name) {
			n += p.Outcomes[o]
			offered += p.Offered
		}
	}
	return n, offered
}

// queueLimitNote says when the target rejected a share of the burst with
// 429 while the prediction assumed an unbounded queue (it was not told the
// admission limit): its backlog and recovery are then too pessimistic, and
// retries were not modelled.
func queueLimitNote(run *Run) string {
	if run.Prediction == nil || run.Prediction.Params.QueueLimit > 0 {
		return ""
	}
	rejected, offered := outcomeIn(run, record.RateLimited, schedule.PhaseBurst)
	if offered == 0 || float64(rejected) <= 0.01*float64(offered) {
		return ""
	}
	return fmt.Sprintf("note: the target rejected %.1f%% of the burst with 429, but the prediction assumed an unbounded queue: give --queue-limit (the target's admission limit) to model the rejections and, with --retries, the retries.",
		100*float64(rejected)/float64(offered))
}

// diagCapacity is the μ a burst run knows and the fluid model's recovery
// with it, for the diagnosis.
func diagCapacity(r *Run) judge.DiagCapacity {
	dc := judge.DiagCapacity{Mu: r.Mu, Source: r.MuSource, PredictedRecoveryMs: math.NaN()}
	if p := r.Prediction; p != nil {
		dc.PredictedRecoveryMs = math.Inf(1)
		if !p.Never {
			dc.PredictedRecoveryMs = float64(p.RecoveryTime) / 1e6
		}
	}
	return dc
}

// runSummary is the block report.html shows above a multiplier's charts:
// μ, predicted against measured peak backlog and recovery, and the
// verdicts of each phase and overall. The Diagnosis is set by its own
// analysis.
func runSummary(c *Config, r *Run, window time.Duration) report.RunSummary {
	nan := math.NaN()
	res := r.Result
	s := report.RunSummary{Mu: nan, MuSource: r.MuSource, PredictedPeakBacklog: nan, PredictedRecoveryS: nan, MeasuredRecoveryS: nan}
	if r.Mu > 0 {
		s.Mu = r.Mu
	}
	if p := r.Prediction; p != nil {
		s.PredictedPeakBacklog = p.PeakBacklog
		if !p.Never {
			s.PredictedRecoveryS = p.RecoveryTime.Seconds()
		}
	}
	// The measured peak from the burst's start on: the baseline's own level
	// is not the burst's backlog.
	mt, mv, label := experiment.MeasuredBacklog(res)
	s.MeasuredPeakBacklog, s.MeasuredBacklogSource = nan, label
	burstStart := (r.BurstEnd - c.Burst).Seconds()
	for i, t := range mt {
		if t >= burstStart && finite(mv[i]) && (math.IsNaN(s.MeasuredPeakBacklog) || mv[i] > s.MeasuredPeakBacklog) {
			s.MeasuredPeakBacklog = mv[i]
		}
	}
	switch rec := r.Recovery; rec.State {
	case report.Recovered:
		s.MeasuredRecoveryS = rec.Seconds
	case report.NotRecovered:
		s.RecoveryNote = fmt.Sprintf("not recovered by the end of the run (> %s after the burst)", fmtSeconds(rec.Seconds))
	default:
		s.RecoveryNote = "measured recovery n/a: " + rec.Reason
	}
	switch p := r.Prediction; {
	case p == nil:
	case p.Never:
		s.RecoveryNote = strings.TrimPrefix(s.RecoveryNote+"; predicted never to recover (baseline at or above μ)", "; ")
		s.RecoveryLate = false
	default:
		late := recoveryLate(r, window)
		s.RecoveryLate = late != nil && *late
		if late == nil && r.Recovery.State == report.NotRecovered {
			s.RecoveryNote += "; not watched long enough to call it late"
		}
	}
	for _, name := range []string{schedule.PhaseBaseline, schedule.PhaseBurst, schedule.PhaseRecovery} {
		if v, ok := res.Verdicts.Phase(name); ok {
			s.Verdicts = append(s.Verdicts, clauseVerdicts(name, v)...)
		}
	}
	s.Verdicts = append(s.Verdicts, clauseVerdicts("overall", res.Verdicts.Overall)...)
	return s
}

// clauseVerdicts lists an SLO verdict's clauses with the measured value,
// its sample and the reason it did not pass as the detail (the clause
// names the limit).
func clauseVerdicts(scope string, v judge.Verdict) []report.Verdict {
	out := experiment.SLOVerdicts(scope, v)
	for i, c := range v.Clauses {
		d := c.Value() + " (n=" + strconv.FormatInt(c.Samples+c.Censored, 10) + ")"
		if c.Reason != "" {
			d += ": " + c.Reason
		}
		out[i].Detail = d
	}
	return out
}

// predictedBacklog is the prediction's backlog curve, in seconds since the
// run's start; nil without a prediction.
func predictedBacklog(c *Config, r *Run) (t, v report.Series) {
	if r.Prediction == nil || r.Mu <= 0 {
		return nil, nil
	}
	params := r.Prediction.Params
	if params.Mu <= 0 { // a summary.json from before the prediction kept its parameters
		params = predictParams(c, r.K, r.Mu, false, false)
	}
	pts, err := predict.Timeline(params, time.Second)
	if err != nil {
		return nil, nil
	}
	start := (r.BurstEnd - c.Burst).Seconds()
	for _, p := range pts {
		t = append(t, start+p.T.Seconds())
		v = append(v, p.Backlog)
	}
	return t, v
}

// writeReports writes the top-level results table and report.html: the
// burst layout, one row per multiplier.
func writeReports(env *run.Env, c *Config, d *rundir.Dir, runs []Run, interrupted bool, w io.Writer) (experiment.Outcome, error) {
	out := experiment.Outcome{Verdict: judge.Pass, Dir: d.Path(), Partial: interrupted}
	t := report.Table{Title: "surge burst: " + env.TargetName(), Meta: append(experiment.HTMLMeta(env),
		report.KV{Key: "named baseline", Value: fmt.Sprintf("%.2f req/s", c.BaselineRPS)},
		report.KV{Key: "phases", Value: fmt.Sprintf("warmup %s (excluded), baseline %s, burst %s, recovery %s (watched up to %s)", c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit)},
		report.KV{Key: "recovery rule", Value: fmt.Sprintf("3 consecutive %s windows in which no more requests were slower than 1.1 × the baseline's P99 %s, or failed, than 1%% + the baseline's failure share allows (binomial test at 0.1%%; docs/metrics.md \"Recovery\")",
			judge.RecoveryWindowFor(c.BaselineRPS, env.Opts.Window), c.RecoveryMetric)},
	)}
	h := report.HTMLReport{Title: t.Title, Meta: t.Meta}
	slices.SortStableFunc(runs, func(a, b Run) int { return cmp.Compare(a.K, b.K) })
	anyOK := false
	why := baselineNotes(runs) // what explains the verdicts, first in the notes and in the terminal
	t.Notes = append(t.Notes, why...)
	for i := range runs {
		r := &runs[i]
		res := r.Result
		t.Rows = append(t.Rows, burstRow(env, c, r))
		scope := r.scope()
		for _, name := range verdictPhases {
			if v, ok := res.Verdicts.Phase(name); ok {
				t.Verdicts = append(t.Verdicts, experiment.SLOVerdicts(scope+" "+name, v)...)
			}
		}
		t.Verdicts = append(t.Verdicts, experiment.SLOVerdicts(scope+" overall", res.Verdicts.Overall)...)
		out.Verdict = judge.Worse(out.Verdict, runOutcome(r))
		if res.Analysis.Overall.Succeeded > 0 {
			anyOK = true
		}
		t.Notes = append(t.Notes, runNotes(r)...)
		charts, diag := runCharts(env, c, r)
		t.Diagnoses = append(t.Diagnoses, diag)
		h.Runs = append(h.Runs, charts)
		if pt, ok := experiment.ProfileTable(scope, res, &env.Opts, schedule.PhaseBurst); ok {
			h.Breakdowns = append(h.Breakdowns, pt)
		}
		h.Breakdowns = append(h.Breakdowns, experiment.SessionTables(scope+": sessions, per turn", res.Analysis)...)
		h.Breakdowns = append(h.Breakdowns, experiment.ScalingTables(scope, res)...)
	}
	pooledLines := pooledRows(env, c, &t, runs)
	if why := env.BudgetStop(); why != "" {
		t.Notes = append(t.Notes, "PARTIAL: the experiment was stopped by its budget ("+why+"); runs not listed did not happen.")
	} else if interrupted {
		t.Notes = append(t.Notes, "PARTIAL: the experiment was interrupted; runs not listed did not happen, and the last run is cut short.")
	}
	ht := t
	ht.Meta = nil // the page shows the same facts once, above the table
	h.Tables = []report.Table{ht}
	if err := experiment.WriteReports(d, t, h); err != nil {
		return out, err
	}
	out.Unusable = len(runs) > 0 && !anyOK
	for i := range runs {
		out.UnusableWhy = cmp.Or(out.UnusableWhy, runs[i].Result.Unusable)
	}
	out.Meaning = meaning(runs)
	fmt.Fprintln(w)
	report.WriteTerminalTables(w, report.Table{Title: t.Title + " — one row per multiplier; the burst phase by scheduled arrival", Rows: t.Rows, Omit: t.Omit, Spreads: t.Spreads},
		filepath.Join(d.Path(), "results.md"))
	printVerdicts(w, &env.Opts, runs, pooledLines, why)
	experiment.PrintDiagnoses(w, t.Diagnoses)
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(d.Path(), "results.md"), filepath.Join(d.Path(), "report.html"))
	return out, nil
}

// burstRow is the results table's row of one run: its burst phase, with
// the multiplier, the rates and the measured and predicted recovery.
func burstRow(env *run.Env, c *Config, r *Run) report.Row {
	row := experiment.Row(r.Result, &env.Opts, schedule.PhaseBurst)
	row.Multiplier = report.Val(r.K)
	row.BaselineRPS = report.Val(c.BaselineRPS)
	row.BurstRPS = report.Val(r.K * c.BaselineRPS)
	row.Recovery = r.Recovery
	row.PredictedRecovery = predictedRecovery(r.Prediction, r.MuSource)
	row.RecoveryLate = recoveryLate(r, env.Opts.Window)
	row.Mu, row.MuSource = report.Unavailable(r.MuSource), r.MuSource
	if r.Mu > 0 {
		row.Mu = report.Val(r.Mu)
	}
	row.Rep, row.Repeats = r.Rep, r.Repeats
	return row
}

// runNotes is the notes of one run, each prefixed with its scope.
func runNotes(r *Run) []string {
	res, scope := r.Result, r.scope()
	var notes []string
	if why := experiment.EngineReason(res.Scrape, scrape.QueueTime); why != "" && !res.Virtual {
		notes = append(notes, scope+": engine queue wait n/a ("+why+") — latency growth is extra observed latency, not measured queue time")
	}
	for _, line := range experiment.EngineTimingLines(res) {
		notes = append(notes, scope+": "+line)
	}
	if note := abandonmentNote(r); note != "" {
		notes = append(notes, scope+": "+note)
	}
	if p := r.Prediction; p != nil && p.Model != "" {
		notes = append(notes, scope+": predicted with the "+p.Model+" model (docs/method.md §8)")
	}
	if note := queueLimitNote(r); note != "" {
		notes = append(notes, scope+": "+note)
	}
	for _, n := range experiment.ClientNotes(res) {
		notes = append(notes, scope+": "+n)
	}
	if n := experiment.ShardNote(res); n != "" {
		notes = append(notes, scope+": "+n)
	}
	if n := experiment.WorkerSummary(res); n != "" { // --workers
		notes = append(notes, scope+": "+n)
	}
	for _, p := range r.Problems {
		notes = append(notes, scope+": re-rendered without "+p)
	}
	if r.Settle > 0 || r.SettleNote != "" {
		notes = append(notes, fmt.Sprintf("%s: settled in %s before the run (%s)", scope, r.Settle.Round(100*time.Millisecond), r.SettleNote))
	}
	return notes
}

// runCharts is the report page's charts of one run, with the burst's end
// and its recovery (measured and predicted) marked, and its diagnosis.
func runCharts(env *run.Env, c *Config, r *Run) (report.RunCharts, report.Diagnosis) {
	res, scope := r.Result, r.scope()
	charts := experiment.Charts(res, &env.Opts, fmt.Sprintf("burst %s (%.1f req/s over a %.1f req/s baseline)", scope, r.K*c.BaselineRPS, c.BaselineRPS))
	charts.Markers = append(charts.Markers, report.Marker{Kind: report.MarkerBurstEnd, T: r.BurstEnd.Seconds()})
	if ar := res.Verdicts.Recovery; ar.Recovered {
		charts.Markers = append(charts.Markers, report.Marker{Kind: report.MarkerRecovered, T: r.BurstEnd.Seconds() + ar.RecoveryTimeMs/1000})
	}
	if r.Prediction != nil && !r.Prediction.Never {
		charts.Markers = append(charts.Markers, report.Marker{Kind: report.MarkerPredictedRecovery, T: r.BurstEnd.Seconds() + r.Prediction.RecoveryTime.Seconds()})
	}
	sum := runSummary(c, r, env.Opts.Window)
	charts.Summary = &sum
	charts.MeasuredBacklogT, charts.MeasuredBacklog, charts.MeasuredBacklogLabel = experiment.MeasuredBacklog(res)
	charts.PredictedBacklogT, charts.PredictedBacklog = predictedBacklog(c, r)
	diag := experiment.DiagnoseWith(scope, res, diagCapacity(r))
	if nr := burstNotReached(res); nr != "" && res.Unusable == "" {
		diag = report.Diagnosis{Scope: scope, Mode: judge.ModeNotJudged, Summary: nr}
	}
	charts.Summary = experiment.WithDiagnosis(charts.Summary, diag)
	return charts, diag
}

// RecoveryRule is the recovery rule a burst run's manifest records (the
// zero rule when it records none), for re-rendering one burst-<k>x folder.
func RecoveryRule(r *run.Reloaded) analyze.RecoveryRule {
	if c, ok := decodeConfig(r); ok {
		return c.RecoveryRule()
	}
	return analyze.RecoveryRule{}
}

// Rerender re-analyses a burst experiment's folder from the files each
// burst-<k>x run holds (manifest.json, requests.jsonl, engine.csv,
// summary.json) and writes the derived files again: each run's
// timeseries.csv and summary.json (run.Reloaded.Save), the top-level
// results.md/.csv/.json and report.html. It returns the experiment's
// outcome, as a fresh burst's. Nothing is sent.
func Rerender(path string, w io.Writer) (experiment.Outcome, error) {
	paths, err := rundir.Folders(path, "burst-*x")
	if err != nil {
		return experiment.Outcome{}, err
	}
	if len(paths) == 0 {
		return experiment.Outcome{}, &run.ConfigError{Err: fmt.Errorf("report: %s holds no burst-<k>x run folders", path)}
	}
	d, err := rundir.Reopen(path, "surge report")
	if err != nil {
		return experiment.Outcome{}, err
	}
	if n := d.StaleNote(); n != "" {
		fmt.Fprintln(w, n)
	}
	defer d.Close()
	var rr rerendered
	for _, rd := range paths {
		name := filepath.Base(rd)
		reps, _ := rundir.Folders(rd, "rep-*")
		if rundir.IsRun(rd) || len(reps) == 0 {
			if err := rr.add(rd, name, func() (*rundir.Dir, error) { return d.Existing(name) }, 0, 0); err != nil {
				return experiment.Outcome{}, err
			}
			continue
		}
		parent, err := d.Existing(name)
		if err != nil {
			return experiment.Outcome{}, err
		}
		for i, rp := range reps { // burst-<k>x/rep-<i>: repeated runs of k
			rn := filepath.Base(rp)
			if err := rr.add(rp, name+"/"+rn, func() (*rundir.Dir, error) { return parent.Existing(rn) }, i+1, len(reps)); err != nil {
				return experiment.Outcome{}, err
			}
		}
	}
	for _, p := range rr.problems {
		fmt.Fprintln(w, "WARNING: "+p)
	}
	if len(rr.runs) == 0 {
		return experiment.Outcome{}, &run.ConfigError{Err: fmt.Errorf("report: %s: no burst-<k>x run could be re-rendered (%d problems above)", path, len(rr.problems))}
	}
	out, err := writeReports(rr.env, rr.cfg, d, rr.runs, rr.partial, w)
	if err != nil {
		return out, err
	}
	fmt.Fprintf(w, "re-rendered %s\n", path)
	if len(rr.problems) > 0 {
		fmt.Fprintf(w, "with %s (above, and in the notes of results.md): the reports lack what those files held\n", experiment.Count(len(rr.problems), "warning"))
	}
	return out, nil
}

// rerendered is what Rerender re-rendered so far: the runs, the target
// and settings the reports name, and what could not be used.
type rerendered struct {
	runs     []Run
	env      *run.Env
	cfg      *Config
	problems []string // what could not be used, one line per file, for the terminal
	partial  bool
}

// add re-renders the run folder rd (name as the notes call it), its
// folder opened by open; rep and repeats number it among repeats. A run
// that cannot be re-analysed is a problem, not an error.
func (rr *rerendered) add(rd, name string, open func() (*rundir.Dir, error), rep, repeats int) error {
	r, err := run.Reload(rd)
	if err != nil {
		rr.problems = append(rr.problems, fmt.Sprintf("%s: not rendered: %v", name, err))
		return nil
	}
	c, ok := decodeConfig(r)
	if !ok {
		c = configFromPlan(r)
		if len(r.Experiment) > 0 {
			r.Problems = append(r.Problems, "manifest.json: no burst settings — the phases and baseline are taken from the plan, the recovery rule is the default")
		}
	}
	b := r.Summary.Burst
	if b == nil {
		folder := name
		if repeats > 0 {
			folder = filepath.Base(filepath.Dir(rd))
		}
		b = burstFromPlan(r.Plan, folder)
		if r.Summary.Analysis != nil || len(r.Dir.Summary) > 0 {
			r.Problems = append(r.Problems, "summary.json: no burst section — the prediction and μ are unknown")
		}
	}
	sub, err := open()
	if err != nil {
		return err
	}
	res, err := r.Result(sub, c.RecoveryRule())
	if err != nil {
		rr.problems = append(rr.problems, fmt.Sprintf("%s: not rendered: %v", name, err))
		return nil
	}
	if err := r.Save(sub, res); err != nil {
		return err
	}
	if res.Spec.Rep > 0 { // the manifest's own number
		rep = res.Spec.Rep
	}
	if rr.env == nil || r.Dir.Manifest.Target != "" { // the target as a manifest names it
		rr.env, rr.cfg = r.Env, c
	}
	for _, p := range r.Problems {
		rr.problems = append(rr.problems, name+": "+p)
	}
	rr.runs = append(rr.runs, Run{K: b.K, Rep: rep, Repeats: repeats, Result: res, Prediction: b.Prediction, Mu: b.Mu, MuSource: b.MuSource,
		Settle: time.Duration(b.SettleNs), SettleNote: b.SettleNote, BurstEnd: time.Duration(b.BurstEndNs),
		Recovery: measuredRecovery(res, time.Duration(b.PlannedRecoveryNs)), Problems: r.Problems})
	rr.partial = rr.partial || res.Partial
	return nil
}

// configFromPlan is the burst settings of a run whose manifest does not
// record them (missing, or from an older surge): the phases and the
// baseline rate as the plan (or the records) give them, the rest defaults.
func configFromPlan(r *run.Reloaded) *Config {
	c := DefaultConfig()
	c.Options = r.Env.Opts
	for _, p := range r.Plan.Phases {
		switch p.Name {
		case schedule.PhaseWarmup:
			c.Warmup = p.Duration
		case schedule.PhaseBaseline:
			c.Baseline, c.BaselineRPS = p.Duration, p.Rate
		case schedule.PhaseBurst:
			c.Burst = p.Duration
		case schedule.PhaseRecovery:
			c.Recovery = p.Duration
			c.RecoveryLimit = max(c.RecoveryLimit, p.Duration)
		}
	}
	return &c
}

// burstFromPlan is what summary.json would have said about a burst run,
// as far as the plan tells: the multiplier (from the folder's name
// burst-<k>x, else burst rate / baseline rate), the burst's end and the
// planned recovery; no prediction, μ unknown.
func burstFromPlan(p schedule.Plan, folder string) *rundir.BurstInfo {
	b := &rundir.BurstInfo{MuSource: "μ unknown: summary.json has no burst section"}
	var at time.Duration
	var base, burst float64
	for _, ph := range p.Phases {
		at += ph.Duration
		switch ph.Name {
		case schedule.PhaseBaseline:
			base = ph.Rate
		case schedule.PhaseBurst:
			burst = ph.Rate
			b.BurstEndNs = int64(at)
		case schedule.PhaseRecovery:
			b.PlannedRecoveryNs = int64(ph.Duration)
		}
	}
	b.BaselineRPS = base
	if k, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(folder, "burst-"), "x"), 64); err == nil && k > 0 {
		b.K = k
	} else if base > 0 {
		b.K = roundK(burst / base)
	}
	return b
}

// roundK rounds a multiplier measured from rates to two decimals.
func roundK(k float64) float64 { return math.Round(k*100) / 100 }

// decodeConfig reads the burst settings a run's manifest recorded: under
// the JSON names of Config, or — in a run folder written before the
// experiments had packages of their own — under Go field names
// ("BaselineRPS", "RecoveryMetric", ...), which would otherwise decode as
// zero: a named baseline of 0 req/s and recovery judged on e2e.
func decodeConfig(r *run.Reloaded) (*Config, bool) {
	var rec struct {
		Burst json.RawMessage `json:"burst"`
	}
	if len(r.Experiment) == 0 || json.Unmarshal(r.Experiment, &rec) != nil {
		return nil, false
	}
	var c *Config
	if json.Unmarshal(rec.Burst, &c) != nil || c == nil {
		return nil, false
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(rec.Burst, &keys) == nil {
		if _, ok := keys["baseline_rps"]; !ok {
			if _, ok := keys["BaselineRPS"]; ok {
				var old legacyConfig
				if json.Unmarshal(rec.Burst, &old) != nil {
					return nil, false
				}
				old.apply(c)
			}
		}
	}
	c.Options = r.Env.Opts
	return c, true
}

// legacyConfig is what a manifest written before the split recorded under
// Go field names, for the fields whose JSON names differ by more than case
// (encoding/json matches "Warmup" to "warmup" on its own).
type legacyConfig struct {
	BaselineRPS    float64       `json:"BaselineRPS"`
	RecoveryLimit  time.Duration `json:"RecoveryLimit"`
	RecoveryMetric string        `json:"RecoveryMetric"`
	CapacityRPS    float64       `json:"CapacityRPS"`
	BoostRPS       float64       `json:"BoostRPS"`
	BoostAfter     time.Duration `json:"BoostAfter"`
	SettleTimeout  time.Duration `json:"SettleTimeout"`
	BaselineAuto   bool          `json:"BaselineAuto"`
}

func (o legacyConfig) apply(c *Config) {
	c.BaselineRPS, c.RecoveryLimit, c.RecoveryMetric = o.BaselineRPS, o.RecoveryLimit, o.RecoveryMetric
	c.CapacityRPS, c.BoostRPS, c.BoostAfter = o.CapacityRPS, o.BoostRPS, o.BoostAfter
	c.SettleTimeout, c.BaselineAuto = o.SettleTimeout, o.BaselineAuto
}

// scope names a run in verdicts and notes: "5×", or "5× rep 2" among
// repeats.
func (r *Run) scope() string {
	if r.Repeats > 1 {
		return fmt.Sprintf("%s× rep %d", fmtK(r.K), r.Rep)
	}
	return fmtK(r.K) + "×"
}

// pooledRows adds, for each multiplier with several runs, the pooled row
// (the runs' burst-phase records analysed together: analyze.Pool) after
// its runs' rows, its verdicts, and the spread lines of its runs' P99s,
// goodput and recovery times. runs are sorted by multiplier, each one's
// reps in order.
func pooledRows(env *run.Env, c *Config, t *report.Table, runs []Run) (lines []experiment.VerdictLine) {
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && runs[j].K == runs[i].K {
			j++
		}
		group := runs[i:j]
		i = j
		if len(group) < 2 || group[0].Repeats < 2 {
			continue
		}
		k := group[0].K
		scope := fmtK(k) + "×"
		var all []*run.Result
		for _, r := range group {
			all = append(all, r.Result)
		}
		whole, notes := experiment.WholeRuns(scope, all)
		t.Notes = append(t.Notes, notes...)
		if len(whole) < 2 {
			continue
		}
		var results []*run.Result
		var rows []report.Row
		for _, i := range whole {
			r := group[i]
			results = append(results, r.Result)
			for _, row := range t.Rows {
				if row.Rep == r.Rep && row.Multiplier.V == k && !row.Pooled {
					rows = append(rows, row)
				}
			}
		}
		t.Spreads = append(t.Spreads, experiment.Spreads(scope, rows, env.Opts.Seed)...)
		pooled, err := experiment.Pooled(env, results)
		if err != nil {
			t.Notes = append(t.Notes, scope+": no pooled row: "+err.Error())
			continue
		}
		row := experiment.Row(pooled, &env.Opts, schedule.PhaseBurst)
		experiment.PoolRow(&row, len(results), rows[0])
		row.Multiplier, row.BaselineRPS, row.BurstRPS = report.Val(k), report.Val(c.BaselineRPS), report.Val(k*c.BaselineRPS)
		row.Recovery = report.RecoveryNA(experiment.ReasonPooledRecovery)
		row.PredictedRecovery = report.RecoveryNA("pooled: the prediction is per run (see the runs' rows)")
		row.Mu, row.MuSource = report.Unavailable("pooled: μ is per run (see the runs' rows)"), "per run"
		t.Rows = append(t.Rows, row)
		t.Verdicts = append(t.Verdicts, experiment.SLOVerdicts(scope+" pooled overall", pooled.Verdicts.Overall)...)
		// the same line as a run's (verdictLines), for the runs merged
		pl := verdictLines([]Run{{K: k, Result: pooled}})
		pl[0].Scope = scope + " pooled"
		lines = append(lines, pl...)
	}
	return lines
}
