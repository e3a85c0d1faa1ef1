package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/capacity"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

func newRunCmd() *cobra.Command {
	cfg := experiment.DefaultRunConfig()
	var file string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one experiment of arbitrary phases (open-loop arrivals)",
		Long: `Run one open-loop experiment: arrivals at fixed, pre-computed times,
independent of how fast the target answers. At the end surge prints, per
phase, offered/sent/successful RPS, goodput, TTFT from the schedule and from
the send, completion time, error/429/timeout rates, drops and schedule lag,
and writes the run folder (requests.jsonl, summary.json, results.md,
report.html, ...).

With no --target it runs against the built-in simulated engine.` + exitCodesRun,
		Example: `  # 30 s of Poisson arrivals at 5 req/s against the built-in simulator
  surge run

  # a vLLM server, 20 req/s for 2 minutes after a 30 s warmup, engine metrics scraped
  surge run --target http://127.0.0.1:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct \
    --rate 20 --duration 2m --warmup 30s --metrics-url http://127.0.0.1:8000/metrics

  # a weighted mix of profiles, each request labelled, every table split by profile
  surge run --mix chat=0.7,rag=0.2,longgen=0.1 --rate 5 --duration 20s

  # the same in virtual time against the engine model (instant)
  surge run --simulate --mix chat=0.7,rag=0.2,longgen=0.1 --rate 5 --duration 20s

  # replay ten minutes of a Mooncake trace, an hour into it, twice as fast:
  # requests with the same hash_ids share prompt prefixes (records: prefix_tokens)
  surge run --trace mooncake_trace.jsonl --trace-offset 1h --trace-window 10m --speed 2

  # the Azure LLM inference trace, as published (recognised by its header)
  surge run --trace AzureLLMInferenceTrace_conv.csv --trace-window 5m

  # real prompts: the first human turn of each ShareGPT conversation, shuffled by --seed
  surge run --dataset sharegpt.json --dataset-format sharegpt --rate 5 --duration 10s --max-tokens-cap 512

  # a budget: stop cleanly before 100,000 output tokens or $2 (prices in USD per million tokens);
  # the estimate is printed before, the spend after
  surge run --target URL --model M --rate 5 --duration 10m --max-output-tokens 100000 \
    --max-cost 2 --price-input 0.5 --price-output 1.5

  # phases from a YAML file (flags win over the file); it may define profiles
  # and a mix:  profiles: [{name: agent, prompt: "lognormal:median=6000,p95=30000",
  #             output: 300}]   mix: {chat: 0.6, agent: 0.4}
  surge run -f experiment.yaml

  # multi-turn sessions: 2 new sessions/s for a minute, 2–6 turns each,
  # about 3 s of thinking between an answer and the next turn
  surge run --sessions --rate 2 --duration 1m --session-turns uniform:min=2,max=6 \
    --think-time lognormal:median=3s,p95=15s --turn-tokens lognormal:median=150,p95=400

  # three separate runs (out/r/rep-1 … rep-3): each run's P99, the pooled row, the spread
  surge run --simulate --rate 8 --duration 1m --repeat 3 -o out/r

  # look before you send: the phases, arrivals and workload, nothing sent or written
  surge run -f experiment.yaml --dry-run`,
		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.fileFlag(&file)
	f.f64(&cfg.Rate, "rate", "rate", "arrivals per second (single phase)")
	f.dur(&cfg.Duration, "duration", "duration", "length of the measured phase (with --trace: default the whole trace ÷ --speed; shorter cuts it, e.g. --duration 10m)")
	f.str(&cfg.Arrival, "arrival", "arrival", "arrival process: constant, poisson, gamma, replay")
	f.f64(&cfg.Burstiness, "burstiness", "burstiness", "gamma shape: 1 = Poisson, < 1 burstier, > 1 smoother")
	f.str(&cfg.Trace, "trace", "trace", "replay arrivals from this trace, the whole of it unless --duration cuts it: surge's CSV or JSONL (offset_s/offset_ms/timestamp, prompt_tokens, output_tokens), the Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens) or Mooncake JSONL (timestamp, input_length, output_length, hash_ids: shared prompt blocks), recognised by header or keys; e.g. --trace prod.csv --speed 2")
	f.f64(&cfg.Speed, "speed", "speed", "replay speed factor (2 = twice as fast)")
	f.dur(&cfg.TraceOffset, "trace_offset", "trace-offset", "start the replay this far into the trace, in trace time (its first arrival is 0), e.g. --trace-offset 1h")
	f.dur(&cfg.TraceWindow, "trace_window", "trace-window", "replay only this long a slice of the trace from --trace-offset, in trace time before --speed (0 = to the end), e.g. --trace-offset 1h --trace-window 10m --speed 2 plays minutes 60-70 in 5 minutes")
	f.integer(&cfg.TraceBlockTokens, "trace_block_tokens", "trace-block-tokens", "prompt tokens per hash id of a Mooncake trace: requests sharing ids share those blocks of prompt text (0 = 512, the published traces' size)")
	f.dur(&cfg.Warmup, "warmup", "warmup", "warmup at the same rate before the measured phase (excluded from results)")
	f.f64(&cfg.BaselineRPS, "baseline_rps", "baseline-rps", "named baseline for phases given as multipliers (YAML)")
	f.boolean(&cfg.Simulate, "simulate", "simulate", "run in virtual time against the engine model (seconds, not the run's duration)")
	f.integer(&cfg.Repeat, "repeat", "repeat", experiment.RepeatUsage)
	f.options(&cfg.Options)
	var dry bool
	f.fs.BoolVar(&dry, "dry-run", false, dryRunUsage)
	ff := addFleetFlags(f.fs)
	cmd.RunE = experimentCmd{command: "run", flags: f, file: &file, config: &cfg, validate: cfg.Validate, options: &cfg.Options, simulate: &cfg.Simulate, fleet: ff,
		dryRun: &dry, planned: cfg.Planned,
		prepare: func(keys map[string]*yaml.Node) error {
			cfg.ConfigFile = file
			_, inFile := keys["duration"]
			cfg.DurationSet = inFile || f.set("duration")
			return phasesGiven(file, keys, f.set)
		},
		run: func(ctx context.Context, env *run.Env, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
			return experiment.Run(ctx, env, &cfg, d, w)
		}}.runE
	return cmd
}

// singlePhaseKeys are the keys of `surge run` that describe one phase
// without a phases list.
var singlePhaseKeys = []string{"rate", "duration", "arrival", "burstiness", "trace", "speed", "trace_offset", "trace_window", "trace_block_tokens", "warmup"}

// phasesGiven refuses an experiment file for `surge run` that describes no
// load: no phases list, an empty one, or none of the single-phase keys —
// unless the command line sets one of those (a file of connection
// settings with --rate and --duration describes the load). Without this it
// would silently run the default 30 s at 5 req/s against the user's
// target. set reports whether the user set the flag of a key.
func phasesGiven(file string, keys map[string]*yaml.Node, set func(key string) bool) error {
	if file == "" {
		return nil
	}
	if n, ok := keys["phases"]; ok {
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			return usageErr("%s:%d: phases: the list is empty; give at least one phase (name, duration, rate or multiplier)", file, n.Line)
		}
		return nil
	}
	for _, k := range singlePhaseKeys {
		if _, ok := keys[k]; ok || set(k) {
			return nil
		}
	}
	return usageErr("%s: no phases: list them under phases:, or set rate and duration for a single phase", file)
}

// profileOrMix refuses a profile and a mix given together (flag or file):
// a mix names every profile it sends, so a profile beside it would be
// silently ignored.
func profileOrMix(f *flags, keys map[string]*yaml.Node, o *run.Options) error {
	if len(o.Mix) == 0 {
		return nil
	}
	pn, pFile := keys["profile"]
	mn, mFile := keys["mix"]
	pFlag, mFlag := f.set("profile"), f.set("mix")
	if !pFlag && !pFile {
		return nil
	}
	const why = "give --profile or --mix, not both (a mix names every profile it sends)"
	switch {
	case mFlag:
		return usageErr("--mix: %s", why)
	case mFile && pFlag:
		return usageErr("%s:%d: mix: %s", f.path, mn.Line, why)
	default:
		return usageErr("%s:%d: mix: give profile or mix, not both (a mix names every profile it sends; profile is on line %d)", f.path, mn.Line, pn.Line)
	}
}

// exitCodes ends an experiment's --help: what 0 and 1 mean for this
// command (its Outcome.Meaning says the same at the end of a run), then
// the codes every command shares.
func exitCodes(zero, one string) string {
	return "\n\n" + wrap("Exit codes: 0 "+zero+"; 1 "+one+", or the run was interrupted or stopped by its budget (its files are marked partial); "+
		"2 usage or configuration error, or the output folder is in use or not empty; "+
		"3 the target was unusable (no request succeeded); "+
		"4 anything else, e.g. the run folder could not be written (disk full) — the run stops within a second and keeps every record written so far; "+
		"5 ran, and nothing failed, but a verdict was INCONCLUSIVE: its sample could not decide it (too few requests, or an interval across the limit; the verdicts say why).", 78)
}

// The exit codes of each experiment command.
var (
	exitCodesRoot     = exitCodes("ran, and the command's verdict held (each command's --help says what that is)", "ran, and its verdict failed")
	exitCodesRun      = exitCodes("ran, and the SLO held over the whole run (the warmup excluded; a phase may fail inside a run that held)", "the SLO failed over the whole run")
	exitCodesBurst    = exitCodes("the burst phase held the SLO at every multiplier (the phase under test decides; the baseline and recovery verdicts are shown beside it)", "the burst phase failed the SLO at some multiplier")
	exitCodesCapacity = exitCodes("a sustainable rate was found (the failing steps above it bound the search; they do not fail the command)", "no step met the SLO, or surge could not send the load (generator-limited)")
	exitCodesSweep    = exitCodes("a usable level was found (levels past the knee or the latency-budget break are findings, not a failure)", "no level stayed within the latency budget, or surge could not send the load")
	exitCodesSoak     = exitCodes("the SLO held over the soak and no series drifted (an inconclusive drift test fails nothing)", "the SLO failed over the soak or a series drifted")
)

// wrap breaks text into lines of at most width columns, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		l := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case n+1+l > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += l
	}
	return b.String()
}

// network replaces the real network when set: the command-line tests run
// whole commands in virtual time (testing/synctest) over an in-memory one.
var network run.Network

// experimentCmd is what an experiment command needs to run: its config, flags and function.
type experimentCmd struct {
	command  string
	flags    *flags
	file     *string                                // the -f file
	config   any                                    // the struct the flags and the file fill
	validate func() error                           // the config's Validate
	options  *run.Options                           // the config's options
	simulate *bool                                  // the config's --simulate (nil: none)
	prepare  func(keys map[string]*yaml.Node) error // after the file, before Validate (nil: none)
	run      experimentFunc
	dryRun   *bool                                   // the command's --dry-run (nil: none)
	planned  func() ([]experiment.PlannedRun, error) // the runs --dry-run shows
	fleet    *fleetFlags                             // --workers (worker.go; nil: not offered)
}

// runE is the RunE of an experiment command: apply the -f file (flags
// win), let the command fill its defaults, validate, and run.
func (x experimentCmd) runE(cmd *cobra.Command, _ []string) error {
	keys, err := x.flags.apply(*x.file, x.config)
	if err != nil {
		return err
	}
	if err := emptyTarget(x.flags, keys, x.options); err != nil {
		return err
	}
	flagsWinOverTarget(cmd.ErrOrStderr(), x.flags, keys, x.options, x.simulate)
	if parseOnly(cmd.Context()) {
		return nil // surge k8s job checks the file with this very parser (k8s.go)
	}
	if x.prepare != nil {
		if err := x.prepare(keys); err != nil {
			return err
		}
	}
	if err := profileOrMix(x.flags, keys, x.options); err != nil {
		return err
	}
	if err := x.validate(); err != nil {
		return x.flags.explain(err)
	}
	virtual := x.simulate != nil && *x.simulate
	if err := x.fleet.check(x.flags, x.options, virtual); err != nil {
		return err
	}
	if w := experiment.PriceWarning(x.options.Budget); w != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), w)
	}
	if x.dryRun != nil && *x.dryRun {
		return dryRun(cmd, x, virtual)
	}
	if x.planned != nil {
		// The estimate before: the planned runs' requests and tokens (and
		// cost, with prices). Capacity searches and sweeps have no plan
		// before they run: their steps depend on the results.
		if err := run.Check(*x.options, virtual); err != nil {
			return classify(x.flags, err)
		}
		if runs, err := x.planned(); err != nil {
			// burst --baseline-rps auto: the runs depend on a search.
			fmt.Fprintln(cmd.OutOrStdout(), "planned: no estimate before the experiment: its runs depend on what it measures first")
		} else if err := run.CheckMemory(*x.options, virtual, plansOf(runs)); err != nil {
			return classify(x.flags, err)
		} else if err := experiment.PrintEstimate(cmd.OutOrStdout(), x.options, runs); err != nil {
			return classify(x.flags, err)
		}
	}
	return runExperiment(cmd, x.flags, x.command, x.options, virtual, x.run, x.fleet)
}

// dryRun validates as a run would, then prints the planned runs and their
// workload: no target is prepared, no folder created, nothing sent.
func dryRun(cmd *cobra.Command, x experimentCmd, virtual bool) error {
	if err := run.Check(*x.options, virtual); err != nil {
		return classify(x.flags, err)
	}
	runs, err := x.planned()
	if err != nil {
		return x.flags.explain(err)
	}
	if err := run.CheckMemory(*x.options, virtual, plansOf(runs)); err != nil {
		return classify(x.flags, err)
	}
	if err := experiment.DryRun(cmd.OutOrStdout(), x.command, x.options, virtual, runs); err != nil {
		return classify(x.flags, err)
	}
	return nil
}

// dryRunUsage is the help of --dry-run.
const dryRunUsage = "validate and print the plan (phases, rates, expected and scheduled arrivals) and the workload of exactly those arrivals; send nothing, write nothing"

// experimentFunc runs one experiment into d, printing on w.
type experimentFunc func(ctx context.Context, env *run.Env, d *rundir.Dir, w io.Writer) (experiment.Outcome, error)

// runExperiment prepares the target, claims the run folder, runs fn and
// maps the outcome to an exit code. Every configuration error is found
// before the folder is created.
func runExperiment(cmd *cobra.Command, f *flags, command string, o *run.Options, virtual bool, fn experimentFunc, ff *fleetFlags) error {
	ctx := cmd.Context()
	stdout := cmd.OutOrStdout()
	logger := run.ConsoleLogger(cmd.ErrOrStderr())
	// Ctrl-C ends the run, but the run folder and reports are still written:
	// the experiment sees the cancellation, while preparing and reporting use
	// a context that outlives it.
	env, err := run.PrepareWith(context.WithoutCancel(ctx), *o, virtual, run.Setup{View: stdout, Logger: logger, Version: toolVersion(), Network: network, Interrupt: ctx})
	if err != nil {
		return classify(f, err)
	}
	defer env.Close()
	endFleet, err := ff.start(cmd, env) // --workers: wait for them before the folder is claimed
	if err != nil {
		return err
	}
	defer endFleet()
	path := o.Out
	if path == "" {
		path = rundir.DefaultPath("out", command, time.Now())
	}
	d, err := rundir.Create(path, rundir.Options{Force: o.Force, Owner: "surge " + command})
	if err != nil {
		return classify(f, err)
	}
	defer d.Close()
	env.SetRunID(filepath.Base(d.Path()))
	if u := env.WebURL(); u != "" {
		fmt.Fprintln(stdout, "live view:", u)
	}
	if n := d.StaleNote(); n != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), n)
	}
	out, err := fn(ctx, env, d, stdout)
	env.FinishWeb(filepath.Join(d.Path(), "report.html")) // the live page becomes the report
	if err != nil {
		return classify(f, err)
	}
	experiment.PrintSpend(stdout, env)
	env.FinishPush(stdout)
	switch {
	case out.Partial && env.BudgetStop() != "":
		fmt.Fprintln(stdout, "Stopped by the budget: the results above are partial (marked so in every file); no further run was started.")
		fmt.Fprintln(stdout, "exit 1: stopped by the budget (the files are marked partial)")
		return &exitError{exitSLO, errSilent}
	case out.Partial:
		fmt.Fprintln(stdout, "Interrupted: the results above are partial (marked so in every file).")
		fmt.Fprintln(stdout, "exit 1: interrupted (the files are marked partial)")
		return &exitError{exitSLO, errSilent}
	case out.Unusable:
		fmt.Fprintln(stdout, "exit 3: "+cmp.Or(out.UnusableWhy, "the target was unusable: no request succeeded")+" (--no-early-stop runs the whole plan anyway)")
		return &exitError{exitTarget, errSilent}
	case out.Verdict == judge.Fail:
		fmt.Fprintln(stdout, "exit 1: "+cmp.Or(out.Meaning, "an SLO failed (the verdicts above say which and by how much)"))
		return &exitError{exitSLO, errSilent}
	case out.Verdict == judge.Inconclusive:
		fmt.Fprintln(stdout, "exit 5: "+cmp.Or(out.Meaning, "no SLO failed, but one could not be decided on its sample (the verdicts above say which and why)"))
		return &exitError{exitUndecided, errSilent}
	}
	fmt.Fprintln(stdout, "exit 0: "+cmp.Or(out.Meaning, "every SLO held"))
	return nil
}

// classify maps an error to its exit code.
func classify(f *flags, err error) error {
	var ee *exitError
	var ce *run.ConfigError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &ce):
		if f != nil {
			return f.explain(err)
		}
		return &exitError{exitUsage, err}
	case errors.Is(err, rundir.ErrFolder):
		return &exitError{exitUsage, err}
	case errors.Is(err, run.ErrInterrupted):
		return &exitError{exitSLO, err} // as an interrupted run: nothing to trust
	case errors.Is(err, capacity.ErrNoSustainableRate):
		return &exitError{exitSLO, err} // burst --baseline-rps auto found no rate that meets the SLO
	}
	return &exitError{exitInternal, err}
}

// emptyTarget refuses a target given but empty (--target "", or
// target: "" in the file): an unset variable in a script would otherwise
// run against the built-in simulator and pass.
func emptyTarget(f *flags, keys map[string]*yaml.Node, o *run.Options) error {
	if o == nil || strings.TrimSpace(o.Target) != "" {
		return nil
	}
	const want = "omit it to use the built-in simulator, or give the endpoint's base URL, e.g. http://localhost:8000/v1"
	if f.fs.Changed("target") {
		return usageErr("--target: empty; %s", want)
	}
	if n, ok := keys["target"]; ok && n != nil {
		return usageErr("%s:%d: target: empty; %s", f.path, n.Line, want)
	}
	return nil
}

// flagsWinOverTarget resolves a file's target: against --simulate on the
// command line (or a file's simulate: against --target) as help says:
// the flag wins, and a line says so. Both given as flags stay an error
// (run.Env says which).
func flagsWinOverTarget(w io.Writer, f *flags, keys map[string]*yaml.Node, o *run.Options, simulate *bool) {
	if o == nil || simulate == nil || o.Target == "" || !*simulate {
		return
	}
	_, fileTarget := keys["target"]
	_, fileSimulate := keys["simulate"]
	switch {
	case f.fs.Changed("simulate") && !f.fs.Changed("target") && fileTarget:
		fmt.Fprintf(w, "--simulate wins over %s's target: (flags win over -f): the run is in virtual time against the engine model\n", f.path)
		o.Target = ""
	case f.fs.Changed("target") && !f.fs.Changed("simulate") && fileSimulate:
		fmt.Fprintf(w, "--target wins over %s's simulate: (flags win over -f): requests go to the target\n", f.path)
		*simulate = false
	}
}

// plansOf is the plans of the planned runs.
func plansOf(runs []experiment.PlannedRun) []schedule.Plan {
	out := make([]schedule.Plan, len(runs))
	for i, r := range runs {
		out[i] = r.Plan
	}
	return out
}
