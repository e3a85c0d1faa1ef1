package experiment

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

// RepeatSettleTimeout is the longest `surge run --repeat` waits for the
// target to settle before each run (the settle Gate).
const RepeatSettleTimeout = 2 * time.Minute

// runRepeated is `surge run --repeat N`: N runs of the plan into
// d/rep-1 … d/rep-N (each a normal run folder with its own reports), the
// settle gate before each live one, then d's results table — one row per
// run, the pooled row, the spread lines — and report.html.
func runRepeated(ctx context.Context, env *run.Env, c *RunConfig, plan schedule.Plan, exclude []string, d *rundir.Dir, w io.Writer) (Outcome, error) {
	n := c.Repeat
	gate := &Gate{Env: env, Timeout: RepeatSettleTimeout, Out: w}
	var results []*run.Result
	for k := 1; k <= n && ctx.Err() == nil; k++ {
		if !env.Virtual {
			waited, note, err := gate.Wait(ctx)
			if err != nil {
				return Outcome{}, err
			}
			fmt.Fprintf(w, "settle before rep %d: %s (%s)\n", k, waited.Round(100*time.Millisecond), note)
		}
		sub, err := d.Sub(RepDir(k))
		if err != nil {
			return Outcome{}, err
		}
		fmt.Fprintf(w, "rep %d of %d (seed %d): writing %s\n", k, n, env.Opts.Seed+int64(k-1), sub.Path())
		res, err := env.Execute(ctx, run.Spec{Name: filepath.Base(d.Path()) + "-" + RepDir(k), Dir: sub, Command: "run", Plan: plan, Exclude: exclude, Experiment: c, Rep: k, Repeats: n})
		if res == nil {
			return Outcome{}, err
		}
		PrintPhases(w, res)
		if err != nil {
			return Outcome{}, err
		}
		if err := writeRunReports(env, res, nil); err != nil {
			return Outcome{}, err
		}
		results = append(results, res)
		if res.Partial {
			break
		}
	}
	return writeRepeatReports(env, d, results, n, ctx.Err() != nil, w)
}

// RepeatRow is the results row of one run of `surge run --repeat`: its
// measured phase, or its measured phases together when there are several.
func RepeatRow(res *run.Result, o *run.Options) report.Row {
	var measured []string
	for _, ph := range res.Analysis.Phases {
		if !ph.Excluded {
			measured = append(measured, ph.Name)
		}
	}
	var r report.Row
	if len(measured) == 1 {
		r = Row(res, o, measured[0])
	} else {
		r = OverallRow(res, o)
	}
	NoBurst(&r)
	return r
}

// writeRepeatReports writes d's results.* and report.html of a repeated
// `surge run`: one row per run (rep k), the pooled row (their records
// analysed together), the spread lines, every run's charts; and prints
// the table, the verdicts and where the reports are. planned is the
// --repeat asked for (fewer results: interrupted).
func writeRepeatReports(env *run.Env, d *rundir.Dir, results []*run.Result, planned int, interrupted bool, w io.Writer) (Outcome, error) {
	o := &env.Opts
	out := Outcome{Verdict: judge.Pass, Dir: d.Path(), Partial: interrupted}
	t := report.Table{Title: "surge run: " + env.TargetName(), Meta: HTMLMeta(env), Omit: report.BurstColumns}
	t.Meta = append(t.Meta, report.KV{Key: "repeats", Value: fmt.Sprintf("%d runs of the same plan (rep k seeded with %d + k − 1), each in %s/rep-k", planned, o.Seed, d.Path())})
	h := report.HTMLReport{Title: t.Title}
	var lines []VerdictLine
	var rows []report.Row
	anyOK := false
	for _, res := range results {
		k := res.Spec.Rep
		scope := fmt.Sprintf("rep %d", k)
		row := RepeatRow(res, o)
		row.Rep, row.Repeats = k, len(results)
		rows = append(rows, row)
		t.Verdicts = append(t.Verdicts, SLOVerdicts(scope+" overall", res.Verdicts.Overall)...)
		l := LineOf(scope, "overall", res.Verdicts.Overall)
		l.Detail = Clauses(res.Verdicts.Overall, false)
		lines = append(lines, l)
		out.Verdict = judge.Worse(out.Verdict, res.Verdicts.Overall.Outcome)
		out.Partial = out.Partial || res.Partial
		anyOK = anyOK || res.Analysis.Overall.Succeeded > 0
		for _, n := range ClientNotes(res) {
			t.Notes = append(t.Notes, scope+": "+n)
		}
		if res.Partial {
			t.Notes = append(t.Notes, scope+": PARTIAL: "+res.PartialWhy+".")
		}
		diag := Diagnose(scope, res)
		t.Diagnoses = append(t.Diagnoses, diag)
		charts := Charts(res, o, scope)
		charts.Summary = WithDiagnosis(charts.Summary, diag)
		h.Runs = append(h.Runs, charts)
	}
	t.Rows = append(t.Rows, rows...)
	whole, notes := WholeRuns("run", results)
	t.Notes = append(t.Notes, notes...)
	if len(whole) > 1 {
		var wholeResults []*run.Result
		var wholeRows []report.Row
		for _, i := range whole {
			wholeResults, wholeRows = append(wholeResults, results[i]), append(wholeRows, rows[i])
		}
		if pooled, err := Pooled(env, wholeResults); err != nil {
			t.Notes = append(t.Notes, "no pooled row: "+err.Error())
		} else {
			row := RepeatRow(pooled, o)
			PoolRow(&row, len(wholeResults), wholeRows[0])
			t.Rows = append(t.Rows, row)
			t.Verdicts = append(t.Verdicts, SLOVerdicts("pooled overall", pooled.Verdicts.Overall)...)
			l := LineOf("pooled", "overall", pooled.Verdicts.Overall)
			l.Detail = Clauses(pooled.Verdicts.Overall, false)
			lines = append(lines, l)
		}
		t.Spreads = Spreads("run", wholeRows, o.Seed)
	}
	if len(results) < planned {
		t.Notes = append(t.Notes, fmt.Sprintf("PARTIAL: %d of %d runs happened; the last one may be cut short.", len(results), planned))
	}
	ht := t
	ht.Meta = nil
	h.Meta, h.Tables = t.Meta, []report.Table{ht}
	if err := WriteReports(d, t, h); err != nil {
		return out, err
	}
	out.Unusable = len(results) > 0 && !anyOK
	out.Meaning = fmt.Sprintf("the SLO held in every one of the %d runs", len(results))
	switch out.Verdict {
	case judge.Fail:
		out.Meaning = "the SLO failed in at least one run (the verdicts above say which)"
	case judge.Inconclusive:
		out.Meaning = "no run failed the SLO, but at least one could not be decided on its sample (the verdicts above say which and why)"
	}
	fmt.Fprintln(w)
	report.WriteTerminalTables(w, report.Table{Title: t.Title + " — one row per run, then the pooled row", Rows: t.Rows, Omit: t.Omit, Spreads: t.Spreads},
		filepath.Join(d.Path(), "results.md"))
	PrintVerdicts(w, "SLO "+SLOText(o.Judging)+"; measured vs limit", lines, nil)
	PrintDiagnoses(w, t.Diagnoses)
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(d.Path(), "results.md"), filepath.Join(d.Path(), "report.html"))
	return out, nil
}

// RerenderRepeats re-renders a repeated `surge run`'s folder from its
// rep-k run folders (each re-rendered in the single-run layout as
// RerenderRun does) and writes the folder's results table and report.html
// again. Nothing is sent.
func RerenderRepeats(path string, reps []string, w io.Writer) (Outcome, error) {
	d, err := rundir.Reopen(path, "surge report")
	if err != nil {
		return Outcome{}, err
	}
	if n := d.StaleNote(); n != "" {
		fmt.Fprintln(w, n)
	}
	defer d.Close()
	var results []*run.Result
	var env *run.Env
	for k, rp := range reps {
		r, err := run.Reload(rp)
		if err != nil {
			fmt.Fprintf(w, "WARNING: %s: not rendered: %v\n", filepath.Base(rp), err)
			continue
		}
		for _, p := range r.Problems {
			fmt.Fprintf(w, "WARNING: %s: %s\n", filepath.Base(rp), p)
		}
		sub, err := d.Existing(filepath.Base(rp))
		if err != nil {
			return Outcome{}, err
		}
		res, err := r.Result(sub, analyze.RecoveryRule{})
		if err != nil {
			fmt.Fprintf(w, "WARNING: %s: not rendered: %v\n", filepath.Base(rp), err)
			continue
		}
		if res.Spec.Rep == 0 {
			res.Spec.Rep = k + 1
		}
		if err := r.Save(sub, res); err != nil {
			return Outcome{}, err
		}
		if err := writeRunReports(r.Env, res, nil); err != nil {
			return Outcome{}, err
		}
		if env == nil {
			env = r.Env
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		return Outcome{}, &run.ConfigError{Err: fmt.Errorf("report: %s: no rep-k run could be re-rendered", path)}
	}
	out, err := writeRepeatReports(env, d, results, len(reps), false, w)
	if err != nil {
		return out, err
	}
	fmt.Fprintf(w, "re-rendered %s\n", path)
	return out, nil
}
