package experiment

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

// RunConfig is one experiment of arbitrary phases (`surge run`). Either
// Phases (usually from a YAML file) or the single-phase flags describe the
// load.
type RunConfig struct {
	Options     run.Options      `yaml:",inline" json:"-"`
	BaselineRPS float64          `yaml:"baseline_rps"` // the named baseline that phase multipliers refer to
	Phases      []schedule.Phase `yaml:"phases"`

	Rate       float64       `yaml:"rate"`       // single phase: arrivals/s
	Duration   time.Duration `yaml:"duration"`   // single phase: length
	Arrival    string        `yaml:"arrival"`    // single phase: constant, poisson, gamma, replay
	Burstiness float64       `yaml:"burstiness"` // single phase: gamma shape
	Trace      string        `yaml:"trace"`      // single phase: replay this trace (CSV or JSONL)
	Speed      float64       `yaml:"speed"`      // single phase: replay speed factor
	Warmup     time.Duration `yaml:"warmup"`     // single phase: warmup at the same rate, excluded
	Simulate   bool          `yaml:"simulate"`   // run in virtual time against the engine model
	Repeat     int           `yaml:"repeat"`     // runs of the plan (repeat.go); 1 = one run, the usual layout

	// Single phase: replay the trace from this far into it, for this long
	// (trace time, before Speed; 0 = to the end), with prompt blocks of
	// this many tokens (Mooncake hash ids; 0 = 512). See schedule.Phase.
	TraceOffset      time.Duration `yaml:"trace_offset"`
	TraceWindow      time.Duration `yaml:"trace_window"`
	TraceBlockTokens int           `yaml:"trace_block_tokens"`

	// DurationSet says Duration was given (flag or file); without it a
	// replay runs the whole trace (schedule.FitTrace).
	DurationSet bool `yaml:"-"`

	// ConfigFile is the YAML file the config came from; replay trace paths
	// are relative to its folder.
	ConfigFile string `yaml:"-"`
}

// DefaultRunConfig is a 30 s Poisson run at 5 requests/s.
func DefaultRunConfig() RunConfig {
	return RunConfig{Options: run.DefaultOptions(), Rate: 5, Duration: 30 * time.Second, Arrival: schedule.ArrivalPoisson, Burstiness: 1, Repeat: 1}
}

// Plan turns the configuration into a schedule plan and the phases it
// excludes.
func (c *RunConfig) Plan() (schedule.Plan, []string, error) {
	p, exclude, _, err := c.PlanNotes()
	return p, exclude, err
}

// PlanNotes is Plan with the notes to print before the run starts: how a
// replayed trace was fitted to its phase (schedule.FitTrace).
func (c *RunConfig) PlanNotes() (schedule.Plan, []string, []string, error) {
	p := schedule.Plan{BaselineRPS: c.BaselineRPS, Phases: slices.Clone(c.Phases)}
	var exclude []string
	if len(p.Phases) == 0 {
		main := schedule.Phase{Name: "main", Duration: c.Duration, Rate: c.Rate, Arrival: c.Arrival, Burstiness: c.Burstiness, TraceFile: c.Trace, Speed: c.Speed,
			TraceOffset: c.TraceOffset, TraceWindow: c.TraceWindow, TraceBlockTokens: c.TraceBlockTokens}
		if c.Arrival == schedule.ArrivalReplay || c.Trace != "" {
			main.Arrival, main.Rate = schedule.ArrivalReplay, 0
		}
		if c.Arrival != schedule.ArrivalGamma {
			main.Burstiness = 0
		}
		if c.Warmup > 0 {
			w := main
			w.Name, w.Duration = schedule.PhaseWarmup, c.Warmup
			p.Phases = append(p.Phases, w)
			exclude = append(exclude, schedule.PhaseWarmup)
		}
		p.Phases = append(p.Phases, main)
	} else {
		for _, ph := range p.Phases {
			if ph.Name == schedule.PhaseWarmup {
				exclude = append(exclude, ph.Name)
			}
		}
	}
	dir := "."
	if c.ConfigFile != "" {
		dir = filepath.Dir(c.ConfigFile)
	}
	if err := p.LoadTraces(dir); err != nil {
		if len(c.Phases) == 0 {
			return p, nil, nil, flagPhaseError(err, c.Warmup > 0)
		}
		return p, nil, nil, err
	}
	var notes []string
	for i := range p.Phases {
		ph := &p.Phases[i]
		explicit := c.DurationSet // single phase: --duration given
		if len(c.Phases) > 0 {
			explicit = ph.Duration > 0 // phases from a file: a duration given
		}
		if len(c.Phases) == 0 && ph.Name == schedule.PhaseWarmup {
			continue // the warmup replays the trace's first --warmup
		}
		notes = append(notes, schedule.FitTrace(ph, explicit)...)
	}
	if err := p.Validate(); err != nil {
		if len(c.Phases) == 0 {
			return p, nil, nil, flagPhaseError(err, c.Warmup > 0)
		}
		return p, nil, nil, err
	}
	if len(exclude) == len(p.Phases) {
		return p, nil, nil, &field.Error{Field: "phases", Message: "only a warmup phase, which the results leave out: add a phase to measure (any name but warmup)"}
	}
	return p, exclude, notes, nil
}

// Planned is the runs `surge run` would make, for --dry-run and the
// estimate: one, or with --repeat N the N reps rep-1 … rep-N, each with
// its own seed.
func (c *RunConfig) Planned() ([]PlannedRun, error) {
	plan, exclude, notes, err := c.PlanNotes()
	if err != nil {
		return nil, err
	}
	if c.Repeat < 2 {
		return []PlannedRun{{Name: "run", Plan: plan, Exclude: exclude, Notes: notes}}, nil
	}
	out := make([]PlannedRun, c.Repeat)
	for k := range out {
		out[k] = PlannedRun{Name: RepDir(k + 1), Plan: plan, Exclude: exclude, Notes: notes, Rep: k + 1}
	}
	return out, nil
}

// flagPhaseError renames the field of an error in the phases that the
// single-phase keys built — phases[i].rate of the main phase is the key
// rate, the warmup's duration is warmup — so that the command line names
// the flag the user set.
func flagPhaseError(err error, warmup bool) error {
	fe, ok := field.As(err)
	if !ok || len(fe) != 1 {
		return err
	}
	main := "phases[0]"
	if warmup {
		main = "phases[1]"
	}
	f := *fe[0]
	switch {
	case strings.HasPrefix(f.Field, main+"."):
		f.Field = strings.TrimPrefix(f.Field, main+".")
	case warmup && f.Field == "phases[0].duration":
		f.Field = "warmup"
	case warmup && strings.HasPrefix(f.Field, "phases[0]."):
		f.Field = strings.TrimPrefix(f.Field, "phases[0].")
	default:
		return err
	}
	return field.WithText(err.Error(), &f)
}

// Validate checks the configuration: the options and the plan it makes.
func (c *RunConfig) Validate() error {
	var errs field.Errors
	errs.Merge("", c.Options.Validate())
	errs.Merge("", ValidateRepeat(c.Repeat))
	if _, _, err := c.Plan(); err != nil {
		errs.Merge("", err)
	}
	return errs.Err()
}

// Run executes `surge run`: one run of the configured phases into d, then
// the per-phase summary on w and the reports in the run folder.
func Run(ctx context.Context, env *run.Env, c *RunConfig, d *rundir.Dir, w io.Writer) (Outcome, error) {
	plan, exclude, notes, err := c.PlanNotes()
	if err != nil {
		return Outcome{}, &run.ConfigError{Err: err}
	}
	Announce(w, env, "run")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	shown, err := env.Opts.SessionPlan(plan) // with the drain Execute adds
	if err != nil {
		return Outcome{}, &run.ConfigError{Err: err}
	}
	if c.Repeat > 1 {
		fmt.Fprintf(w, "surge run: %d phase(s), %s in all, %d times (--repeat); writing %s/rep-1 … rep-%d\n", len(shown.Phases), schedule.ShowDuration(shown.Duration()), c.Repeat, d.Path(), c.Repeat)
		return runRepeated(ctx, env, c, plan, exclude, d, w)
	}
	fmt.Fprintf(w, "surge run: %d phase(s), %s in all; writing %s\n", len(shown.Phases), schedule.ShowDuration(shown.Duration()), d.Path())
	res, err := env.Execute(ctx, run.Spec{Name: filepath.Base(d.Path()), Dir: d, Command: "run", Plan: plan, Exclude: exclude, Experiment: c})
	if res == nil {
		return Outcome{}, err
	}
	PrintPhases(w, res)
	if err != nil {
		return Outcome{}, err
	}
	return runEnd(w, env, res, nil)
}

// runEnd writes the reports of a single run (notes added to results.md's)
// and ends its terminal output: sessions, prompt sizing, the verdicts, the
// diagnosis and where the reports are.
func runEnd(w io.Writer, env *run.Env, res *run.Result, notes []string) (Outcome, error) {
	PrintSessions(w, res.Analysis)
	if kv, notes := PromptMeta(res.Prompt); len(kv) > 0 {
		fmt.Fprintf(w, "%s: %s\n", kv[0].Key, kv[0].Value)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	if err := writeRunReports(env, res, notes); err != nil {
		return Outcome{}, err
	}
	dir := res.Spec.Dir.Path()
	out := Outcome{Verdict: res.Verdicts.Overall.Outcome, Partial: res.Partial, Dir: dir, Unusable: Unusable(res), UnusableWhy: res.Unusable}
	PrintVerdicts(w, "SLO "+SLOText(env.Opts.Judging)+"; measured vs limit", RunVerdictLines(res.Verdicts), nil)
	PrintDiagnoses(w, []report.Diagnosis{Diagnose("run", res)})
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
	if out.Unusable {
		fmt.Fprintln(w, "The target was unusable: no request succeeded. See the error classes above and requests.jsonl.")
	}
	return out, nil
}

// writeRunReports writes results.* and report.html of a single run, one
// row per measured phase in plan order, then their overall row when there
// are several: the run layout (no burst columns). notes come first among
// results.md's (a re-render's missing files).
func writeRunReports(env *run.Env, res *run.Result, notes []string) error {
	t := report.Table{Title: "surge " + res.Spec.Command + ": " + env.TargetName(), Meta: HTMLMeta(env), Omit: report.BurstColumns}
	measured := 0
	for _, ph := range res.Analysis.Phases {
		if !ph.Excluded {
			measured++
		}
	}
	for _, ph := range res.Analysis.Phases {
		if ph.Excluded {
			continue
		}
		row := Row(res, &env.Opts, ph.Name)
		NoBurst(&row)
		if measured > 1 { // the rows are phases, in plan order: name them; one phase is the run itself
			row.Phase = ph.Name
			v, _ := res.Verdicts.Phase(ph.Name)
			t.Verdicts = append(t.Verdicts, SLOVerdicts(ph.Name, v)...)
		}
		t.Rows = append(t.Rows, row)
	}
	if measured > 1 {
		t.Rows = append(t.Rows, OverallRow(res, &env.Opts))
	}
	t.Verdicts = append(t.Verdicts, SLOVerdicts("overall", res.Verdicts.Overall)...)
	t.Notes = append(t.Notes, notes...)
	t.Notes = append(t.Notes, ClientNotes(res)...)
	if n := ShardNote(res); n != "" { // shardnote.go
		t.Notes = append(t.Notes, n)
	}
	t.Notes = append(t.Notes, WorkerLines(res)...) // --workers (workers.go)
	if res.Partial {
		t.Notes = append(t.Notes, "PARTIAL: "+res.PartialWhy+".")
		t.Partial = &report.Partial{Cause: res.PartialCause, Why: res.PartialWhy, Arrivals: res.Arrivals}
	}
	t.Notes = append(t.Notes, EngineTimingLines(res)...)
	pkv, pnotes := PromptMeta(res.Prompt)
	t.Meta = append(t.Meta, pkv...)
	t.Notes = append(t.Notes, pnotes...)
	diag := Diagnose("run", res)
	t.Diagnoses = []report.Diagnosis{diag}
	charts := Charts(res, &env.Opts, res.Spec.Name)
	charts.Summary = WithDiagnosis(charts.Summary, diag)
	ht := t
	ht.Meta = nil
	h := report.HTMLReport{Title: t.Title, Meta: t.Meta, Tables: []report.Table{ht},
		Runs: []report.RunCharts{charts}}
	if pt, ok := ProfileTable("", res, &env.Opts, ""); ok {
		h.Breakdowns = append(h.Breakdowns, pt)
	}
	h.Breakdowns = append(h.Breakdowns, SessionTables("Sessions, per turn", res.Analysis)...)
	h.Breakdowns = append(h.Breakdowns, ScalingTables("", res)...)
	return WriteReports(res.Spec.Dir, t, h)
}

// RerenderRun re-analyses one run folder, read back by run.Reload, with
// the recovery rule of the experiment it belonged to (zero for none), and
// writes its derived files again in the single-run layout: summary.json
// (when it had one: run.Reloaded.Save), timeseries.csv, results.* and
// report.html. It prints what a fresh `surge run` prints — each file it
// could not use as a WARNING first, then the phases, the verdicts and the
// diagnosis — and returns the run's outcome. Nothing is sent to any
// target.
func RerenderRun(r *run.Reloaded, rule analyze.RecoveryRule, w io.Writer) (Outcome, error) {
	for _, p := range r.Problems {
		fmt.Fprintln(w, "WARNING: "+p)
	}
	d, err := rundir.Reopen(r.Dir.Path, "surge report")
	if err != nil {
		return Outcome{}, err
	}
	if n := d.StaleNote(); n != "" {
		fmt.Fprintln(w, n)
	}
	defer d.Close()
	res, err := r.Result(d, rule)
	if err != nil {
		return Outcome{}, err
	}
	if err := r.Save(d, res); err != nil {
		return Outcome{}, err
	}
	var notes []string
	for _, p := range r.Problems {
		notes = append(notes, "re-rendered without "+p)
	}
	PrintPhases(w, res)
	out, err := runEnd(w, r.Env, res, notes)
	if err != nil {
		return out, err
	}
	fmt.Fprintf(w, "re-rendered %s\n", r.Dir.Path)
	if len(r.Problems) > 0 {
		fmt.Fprintf(w, "with %s (above, and in the notes of results.md): the reports lack what those files held\n", Count(len(r.Problems), "warning"))
	}
	return out, nil
}
