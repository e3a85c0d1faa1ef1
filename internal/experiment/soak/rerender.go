package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

// Rerender re-analyses a soak's folder, read back by run.Reload, and
// writes its derived files again in the soak layout — the window and drift
// tables, soak.json, results.* and report.html — printing what a fresh
// soak prints at its end (the drift lines and the verdicts). Every file it
// could not use is a WARNING first, and a note under the drift table.
// Nothing is sent.
func Rerender(r *run.Reloaded, w io.Writer) (experiment.Outcome, error) {
	c, note := rerenderConfig(r)
	problems := slices.Clone(r.Problems)
	if note != "" {
		problems = append(problems, note)
	}
	for _, p := range problems {
		fmt.Fprintln(w, "WARNING: "+p)
	}
	r.Env.Opts.Window = c.Options.Window // the windows of the drift test
	d, err := rundir.Reopen(r.Dir.Path, "surge report")
	if err != nil {
		return experiment.Outcome{}, err
	}
	if n := d.StaleNote(); n != "" {
		fmt.Fprintln(w, n)
	}
	defer d.Close()
	res, err := r.Result(d, analyze.RecoveryRule{})
	if err != nil {
		return experiment.Outcome{}, err
	}
	if err := r.Save(d, res); err != nil {
		return experiment.Outcome{}, err
	}
	sr := &Result{Result: res, Window: c.Options.Window, Partial: res.Partial}
	sr.Windows = soakWindows(res, r.Env.Opts.SLO())
	sr.Trends = soakTrends(c, sr.Windows, float64(c.Warmup)/1e6)
	if r.Dir.EngineAbsent && (!r.SummaryOK || slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, "engine.csv: ") })) {
		// The KV-cache series is untested because the file is gone, not
		// because the soak was run without --metrics-url.
		for i := range sr.Trends {
			if t := &sr.Trends[i]; t.Windows == 0 && t.Metric == "engine KV-cache usage" {
				t.Why = "engine.csv is missing (whether the soak scraped is in the WARNING above)"
				t.Text = t.Metric + ": not tested, " + t.Why
			}
		}
	}
	sr.Verdict = judge.DriftVerdict(sr.Trends)
	for _, p := range problems {
		sr.rerendered = append(sr.rerendered, "re-rendered without "+p)
	}
	if err := writeReports(r.Env, c, d, sr); err != nil {
		return experiment.Outcome{}, err
	}
	experiment.PrintPhases(w, res)
	printEnd(w, &r.Env.Opts, sr, d.Path())
	fmt.Fprintf(w, "re-rendered %s\n", d.Path())
	if len(problems) > 0 {
		fmt.Fprintf(w, "with %s (above, and in the notes of results.md): the reports lack what those files held\n", experiment.Count(len(problems), "warning"))
	}
	return experiment.Outcome{Verdict: soakOutcome(res, sr), Partial: res.Partial, Dir: d.Path(), Unusable: experiment.Unusable(res), Meaning: meaning(sr)}, nil
}

// rerenderConfig is the soak's settings as its manifest recorded them
// or, when it records none, as the plan and soak.json tell (the rate,
// durations and window), the drift thresholds the defaults; then the
// note says so (a WARNING, and a note under the drift table).
func rerenderConfig(r *run.Reloaded) (*Config, string) {
	c := DefaultConfig()
	if len(r.Experiment) > 0 && json.Unmarshal(r.Experiment, &c) == nil && c.Rate > 0 {
		c.Options = r.Env.Opts
		return &c, ""
	}
	c = DefaultConfig()
	c.Options = r.Env.Opts
	c.Warmup = 0
	for _, p := range r.Plan.Phases {
		switch p.Name {
		case schedule.PhaseWarmup:
			c.Warmup = p.Duration
		case soakPhase:
			c.Rate, c.Duration = p.Rate, p.Duration
		}
	}
	window, from := DefaultSoakWindow, "the soak's default"
	var prev struct {
		Window time.Duration `json:"window_ns"`
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir.Path, "soak.json")); err == nil && json.Unmarshal(b, &prev) == nil && prev.Window > 0 {
		window, from = prev.Window, "soak.json's"
	} else if w := c.Options.Window; w != run.DefaultWindow { // set, so the manifest's options said it
		window, from = w, "manifest.json's"
	}
	c.Options.Window = window
	return &c, fmt.Sprintf("manifest.json: no soak settings — the rate and durations are taken from the plan, the window of %s is %s, the drift thresholds and confidence are the defaults", window, from)
}
