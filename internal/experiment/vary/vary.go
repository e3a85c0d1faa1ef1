// Package vary is `surge burst --simulate --vary KNOB=v1,v2,…`: the whole
// burst experiment once per value of one simulator setting, in virtual
// time, each into its own burst experiment folder (OUT/<knob>-<value>/),
// then their comparison (package compare) into OUT — compare.md,
// compare.json and compare.html with a chart of goodput and recovery per
// value. Exactly one setting differs between the folders, so the
// comparison names it and nothing else: a what-if, one variable at a
// time.
package vary

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/compare"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/burst"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/sim"
)

// Variant is one value of the varied setting: the value as the user gave
// it and the simulator's configuration with it set.
type Variant struct {
	Value string
	Sim   sim.Config
}

// Config is a what-if: the knob (a simulator flag's name, max-waiting),
// its variants in the user's order, and the burst experiment to run with
// each.
type Config struct {
	Knob     string
	Variants []Variant
	Burst    burst.Config
}

// Values are the variants' values, in order.
func (c *Config) Values() []string {
	var out []string
	for _, v := range c.Variants {
		out = append(out, v.Value)
	}
	return out
}

// Folder is the folder of a variant inside OUT: <knob>-<value>.
func (c *Config) Folder(v Variant) string {
	return c.Knob + "-" + strings.NewReplacer("/", "_", `\`, "_", " ", "_").Replace(v.Value)
}

// Planned is the what-if's plan from one value's planned runs: the same
// runs once per value, each named inside its value's folder
// (max-waiting-20/burst-5x), so an estimate before counts every value.
// The arrivals do not depend on the simulator's settings: each value
// schedules the same ones.
func (c *Config) Planned(runs []experiment.PlannedRun) []experiment.PlannedRun {
	var out []experiment.PlannedRun
	for _, v := range c.Variants {
		for _, r := range runs {
			r.Name = c.Folder(v) + "/" + r.Name
			out = append(out, r)
		}
	}
	return out
}

// Burst runs c's burst experiment once per variant into d's sub-folders,
// each against the engine model in virtual time (env is the prepared base:
// its options, logger and version), then writes the comparison into d and
// prints its table on w. A variant whose run is interrupted ends the
// what-if; the variants run so far are still compared. The outcome holds
// when every variant's SLOs held.
func Burst(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
	if !env.Virtual {
		return experiment.Outcome{}, &run.ConfigError{Err: fmt.Errorf("--vary: needs --simulate: it runs the experiment once per value against the engine model in virtual time")}
	}
	fmt.Fprintf(w, "surge burst --vary %s: the burst experiment once per value (%s), in virtual time, into %s/%s-<value>/\n\n",
		c.Knob, strings.Join(c.Values(), ", "), d.Path(), c.Knob)
	out := experiment.Outcome{Verdict: judge.Pass, Unusable: true, Dir: d.Path()}
	var dirs []string
	var failed []string
	for i, v := range c.Variants {
		if ctx.Err() != nil {
			out.Partial = true
			break
		}
		if why := env.BudgetExhausted(); i > 0 && why != "" { // one budget for the whole command: a stop ends the what-if
			out.Partial = true
			fmt.Fprintf(w, "%s=%s: not run — stopped by the budget\n", c.Knob, v.Value)
			break
		}
		o := env.Opts
		o.Sim = v.Sim
		o.Sim.Seed = env.Opts.Sim.Seed
		o.Quiet = true
		venv, err := run.PrepareWith(context.WithoutCancel(ctx), o, true, run.Setup{Logger: env.Logger, Version: env.Version, Interrupt: ctx})
		if err != nil {
			return out, err
		}
		venv.ShareBudget(env) // the command's budget is spent across all the values, not afresh by each
		sub, err := d.Sub(c.Folder(v))
		if err != nil {
			venv.Close()
			return out, err
		}
		bc := c.Burst
		bc.Options = o
		var console bytes.Buffer // the experiment's own summary: in its results.md; shown here only if it fails
		res, err := burst.Burst(ctx, venv, &bc, sub, &console)
		venv.Close()
		if err != nil {
			w.Write(console.Bytes())
			return out, fmt.Errorf("--vary %s=%s: %w", c.Knob, v.Value, err)
		}
		dirs = append(dirs, sub.Path())
		out.Partial = out.Partial || res.Partial
		out.Unusable = out.Unusable && res.Unusable
		if out.Verdict = judge.Worse(out.Verdict, res.Verdict); res.Verdict != judge.Pass {
			failed = append(failed, c.Knob+"="+v.Value)
		}
		fmt.Fprintf(w, "%s=%s: %s  → %s\n", c.Knob, v.Value, verdict(res, env.BudgetStop()), filepath.Join(sub.Path(), "results.md"))
		for line := range strings.Lines(console.String()) { // its warnings and notes, which results.md may not hold
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "WARNING") || strings.HasPrefix(t, "note:") {
				fmt.Fprintf(w, "  %s\n", t)
			}
		}
		if res.Partial {
			out.Partial = true
			if env.BudgetStop() != "" {
				for _, rest := range c.Variants[i+1:] {
					fmt.Fprintf(w, "%s=%s: not run — stopped by the budget\n", c.Knob, rest.Value)
				}
			}
			break
		}
	}
	if len(dirs) < 2 {
		fmt.Fprintln(w, "\nfewer than two values ran: nothing to compare")
		return out, nil
	}
	cmp, err := compare.Folders(dirs)
	if err != nil {
		return out, err
	}
	var names []string
	for _, v := range c.Variants[:len(dirs)] {
		names = append(names, c.Knob+"="+v.Value)
	}
	if warn := replicaWarning(c, names, dirs); warn != "" {
		cmp.Statement = warn + " " + cmp.Statement
	}
	cmp.Lead = []report.Grid{cmp.Glance(names, GlanceKeys...)}
	if err := cmp.Write(d, Charts(c, cmp)); err != nil {
		return out, err
	}
	fmt.Fprintln(w)
	_ = cmp.WriteMarkdown(w) // the console fails quietly (surge burst … | head): the files are written
	fmt.Fprintf(w, "\nreports: %s  %s  %s\n", filepath.Join(d.Path(), "compare.md"), filepath.Join(d.Path(), "compare.json"), filepath.Join(d.Path(), "compare.html"))
	if len(failed) > 0 {
		out.Meaning = "the SLO failed at " + strings.Join(failed, ", ") + " (each value's results.md says which clauses)"
	} else {
		out.Meaning = "the SLO held at every value"
	}
	return out, nil
}

// GlanceKeys are the metrics of the what-if's short table: what a
// bounded queue or more replicas trade — goodput against rejections and
// timeouts, and the recovery.
var GlanceKeys = []string{"goodput_rps", "goodput_ratio", "ttft_p95_ms", "rejection_rate", "timeout_rate", "recovery_s"}

// verdict is a value's outcome in a word; budget is the command's
// budget stop ("" when it did not stop).
func verdict(o experiment.Outcome, budget string) string {
	switch {
	case o.Partial && budget != "":
		return "stopped by the budget (partial)"
	case o.Partial:
		return "interrupted"
	case o.Unusable:
		return "unusable (no request succeeded)"
	case o.Verdict == judge.Pass:
		return "SLO held"
	case o.Verdict == judge.Inconclusive:
		return "SLO inconclusive"
	}
	return "SLO failed"
}

// Charts are the what-if's charts: goodput and recovery time against the
// knob's value, one line per multiplier (the value axis is the values in
// their order when they are not numbers).
func Charts(c *Config, cmp *compare.Comparison) []report.XYChart {
	xs, numeric := xValues(c.Variants)
	labels := make([]string, len(c.Variants))
	special := ""
	for i, v := range c.Variants {
		labels[i] = v.Value
		if what, ok := zeroMeans[c.Knob]; ok {
			if f, err := strconv.ParseFloat(v.Value, 64); err == nil && f == 0 {
				// 0 is no point on the value axis (max-waiting 0 is no limit,
				// not a limit of 0): the values go by position, 0 labelled.
				labels[i], special, numeric = "0 ("+what+")", what, false
				for j := range xs {
					xs[j] = float64(j + 1)
				}
			}
		}
	}
	xlabel := c.Knob
	switch {
	case special != "":
		xlabel += " (values in the order given; 0 = " + special + ")"
	case !numeric:
		xlabel += " (values in the order given)"
	}
	good := report.XYChart{Title: "Goodput per value of " + c.Knob, Note: "requests/s within the per-request deadline, the burst phase by scheduled arrival", XLabel: xlabel, YLabel: "goodput (req/s)"}
	rec := report.XYChart{Title: "Recovery per value of " + c.Knob, Note: "seconds after the burst ended until P99 was back within 10% of the baseline's; a lower bound is drawn at its bound", XLabel: xlabel, YLabel: "recovery (s)"}
	if !numeric { // by position: ticked with the values, not 1, 1.5, 2
		good.XCategories, rec.XCategories = labels[:len(cmp.Folders)], labels[:len(cmp.Folders)]
	}
	for _, g := range cmp.Groups {
		gs := report.XYSeries{Label: g.Key + " goodput", X: xs[:len(cmp.Folders)], Labels: labels[:len(cmp.Folders)]}
		rs := report.XYSeries{Label: g.Key + " recovery", X: xs[:len(cmp.Folders)], Labels: labels[:len(cmp.Folders)]}
		for i := range cmp.Folders {
			gs.Y = append(gs.Y, value(cmp, g.Key, "goodput_rps", i))
			rs.Y = append(rs.Y, value(cmp, g.Key, "recovery_s", i))
		}
		good.Series = append(good.Series, gs)
		rec.Series = append(rec.Series, rs)
	}
	return []report.XYChart{good, rec}
}

// zeroMeans are the knobs whose 0 is not a number on their axis but a
// setting of its own.
var zeroMeans = map[string]string{"max-waiting": "unbounded", "prefix-block-tokens": "the default block size"}

// value is a metric's number for a chart: the value, else its bound,
// else NaN (a gap).
func value(cmp *compare.Comparison, row, key string, i int) float64 {
	s, ok := cmp.Value(row, key, i)
	switch {
	case !ok:
		return math.NaN()
	case s.Value != nil:
		return *s.Value
	case s.Lower != nil:
		return *s.Lower
	case s.Upper != nil:
		return *s.Upper
	}
	return math.NaN()
}

// xValues are the variants' values as numbers (durations in seconds),
// or their positions 1, 2, … when some value is not a number.
func xValues(vs []Variant) ([]float64, bool) {
	xs := make([]float64, len(vs))
	for i, v := range vs {
		if f, err := strconv.ParseFloat(v.Value, 64); err == nil {
			xs[i] = f
			continue
		}
		if d, err := time.ParseDuration(v.Value); err == nil {
			xs[i] = d.Seconds()
			continue
		}
		for j := range xs {
			xs[j] = float64(j + 1)
		}
		return xs, false
	}
	sorted := slices.IsSorted(xs)
	if !sorted { // a line through unsorted values would double back: plot in the order given
		for j := range xs {
			xs[j] = float64(j + 1)
		}
		return xs, false
	}
	return xs, true
}

// replicaWarning is the warning when the values' bursts met different
// numbers of ready replicas although the knob is not the replica count
// itself — min-replicas with autoscale, a scale-up hold: a cold start in
// the warmup can scale one value's cluster up before its burst, so the
// comparison weighs replicas too, not the knob alone (review 14, finding
// 13). "" when every value's bursts met the same number, or when the
// knob is replicas.
func replicaWarning(c *Config, names, dirs []string) string {
	if c.Knob == "replicas" {
		return ""
	}
	var each []string
	counts := map[string]bool{}
	for i, dir := range dirs {
		n, ok := replicasAtBurst(c.Variants[i].Sim, dir)
		if !ok {
			return ""
		}
		each = append(each, fmt.Sprintf("%s: %s", names[i], n))
		counts[n] = true
	}
	if len(counts) < 2 {
		return ""
	}
	return "WARNING: the bursts met different numbers of ready replicas (" + strings.Join(each, ", ") +
		"): the autoscaler had scaled some before the burst began, so the differences below are partly the replica count's, not " + c.Knob + "'s alone (each value's results.md and report.html show the scaling milestones)."
}

// replicasAtBurst is the number of replicas ready when the burst began in
// each run of a value's folder dir (burst-<k>x, or its rep-k): "2", or
// "2–3" when its runs differ; false when a run's summary cannot be read.
func replicasAtBurst(sc sim.Config, dir string) (string, bool) {
	runs, _ := filepath.Glob(filepath.Join(dir, "burst-*x", "summary.json"))
	reps, _ := filepath.Glob(filepath.Join(dir, "burst-*x", "rep-*", "summary.json"))
	runs = append(runs, reps...)
	if len(runs) == 0 {
		return "", false
	}
	lo, hi := math.MaxInt, math.MinInt
	for _, path := range runs {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		var s rundir.Summary
		if json.Unmarshal(b, &s) != nil || s.Analysis == nil {
			return "", false
		}
		start, found := time.Duration(0), false
		for _, p := range s.Analysis.Phases {
			if p.Name == s.Analysis.Settings.BurstPhase {
				start, found = time.Duration(p.StartMs*float64(time.Millisecond)), true
			}
		}
		if !found {
			return "", false // no burst: nothing it met
		}
		n := sc.Replicas
		if sc.ScalesFromZero() {
			n = 0
		}
		for _, e := range s.SimEvents {
			switch {
			case e.At > start:
			case e.Kind == sim.EventModelReady:
				n++
			case e.Kind == sim.EventScaleDown:
				n--
			}
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo == hi {
		return strconv.Itoa(lo), true
	}
	return strconv.Itoa(lo) + "–" + strconv.Itoa(hi), true
}
