package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/experiment/coldstart"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

// exitCodesColdstart ends surge coldstart's --help.
var exitCodesColdstart = "\n\n" + wrap("Exit codes: 0 every cycle reached steady warm latency; "+
	"1 a cycle did not become steady within --warm-max requests, every cycle was a warm start (no cold start measured), or Ctrl-C interrupted the measurement (the files hold what was measured); "+
	"2 usage or configuration error (e.g. --start-cmd without --target, --repeat above 1 without --idle), the target's port already in use before the start command ran, --model not served (a probe got 404 and GET /models does not list it: surge stops at once), or the output folder in use or not empty; "+
	"3 the target never became usable: the start command exited by itself (its exit status and log are named), or no successful token came within --start-timeout; "+
	"4 anything else.", 78)

func newColdstartCmd() *cobra.Command {
	o := run.DefaultOptions()
	o.PromptCalibration = calibrate.Off // probes are a fixed tiny request
	cfg := coldstart.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "coldstart",
		Short: "Measure a server's cold start apart from its warm latency",
		Long: `Measure the cold start of an inference server — what autoscaling pays every
time it adds a replica, or a request pays at a service scaled to zero — apart
from its warm latency, repeated to give a distribution.

With --start-cmd surge starts the server itself (sh -c, in its own process
group, its output to server.log in the run folder) and measures from that
instant: the first TCP connection --target's host:port accepts ("listen"), the
first token of the first successful tiny streamed request ("first token":
failed probes are retried every --poll; /v1/models answering is not enough),
and the first steady warm latency ("warm": --warm-window consecutive TTFTs
each within --warm-tolerance of their median, or 5 ms). Then it stops the
whole group (SIGTERM, SIGKILL after --stop-grace), waits for the port to
close, and starts the next cycle. Ctrl-C stops the server too and writes what
was measured.

Without --start-cmd the --target is an endpoint scaled to zero: surge measures
from the first request sent to its first token and to steady warm latency.
Between cycles it waits --idle so that the endpoint can scale back to zero;
with no --idle it measures one cycle. A cycle whose first token came within
twice the warm TTFT is marked a warm start (it had not scaled to zero) and is
left out of the spread. With no --target, the built-in simulator is measured; it
has a replica ready, so only --autoscale --min-replicas 0 makes it scale
from zero. A probe answered 404 while GET /models does not list --model
stops the measurement at once (exit 2): no retry serves a wrong model name.

coldstart.json and coldstart.md go to the run folder, with the console table:
each cycle, then min / median / max of each milestone. docs/metrics.md
("Cold start") defines the milestones and the warm rule.` + exitCodesColdstart,
		Example: `  # a vLLM server, three cold starts
  surge coldstart --target http://127.0.0.1:8000/v1 --model m \
    --start-cmd 'vllm serve /models/m --port 8000'

  # Ollama: listening is quick; the model loads on the first request
  surge coldstart --target http://127.0.0.1:11434/v1 --model llama3.2 \
    --start-cmd 'OLLAMA_HOST=127.0.0.1:11434 ollama serve' --repeat 5

  # a scale-to-zero endpoint that scales down after 5 idle minutes: three cycles
  surge coldstart --target https://llm.example.com/v1 --model m --api-key-env LLM_KEY \
    --idle 6m --repeat 3

  # the simulator scaling from zero, served by surge sim
  surge sim --addr 127.0.0.1:18000 --autoscale --min-replicas 0 --model-ready-delay 2s \
    --scale-down-idle 5s &
  surge coldstart --target http://127.0.0.1:18000/v1 --idle 8s --repeat 3`,
		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.endpoint(&o)
	f.fs.Lookup("target").Usage = "base URL of the OpenAI-compatible API, including /v1; with --start-cmd, the server the command starts (default: the built-in simulator)"
	f.str(&cfg.StartCmd, "start_cmd", "start-cmd", "command that starts the server (run with sh -c in its own process group, output to server.log; stopped after each cycle), e.g. 'vllm serve m --port 8000'; it is recorded in coldstart.json, so pass secrets through the environment, which it inherits")
	f.integer(&cfg.Repeat, "repeat", "repeat", fmt.Sprintf("cycles to measure (0 = %d with --start-cmd or --idle, else 1)", coldstart.DefaultRepeat))
	f.dur(&cfg.Idle, "idle", "idle", "scale from zero: wait between cycles, long enough for the endpoint to scale back to zero (needed for --repeat > 1)")
	f.dur(&cfg.StartTimeout, "start_timeout", "start-timeout", "most time from the start (or the first request) to the first successful token")
	f.dur(&cfg.StopGrace, "stop_grace", "stop-grace", "time the started server's process group has after SIGTERM before SIGKILL")
	f.dur(&cfg.Poll, "poll", "poll", "interval between connection attempts and between failed probes")
	f.integer(&cfg.WarmWindow, "warm_window", "warm-window", "warm rule: this many consecutive TTFTs…")
	f.f64(&cfg.WarmTolerance, "warm_tolerance", "warm-tolerance", "…each within this fraction of their median (or 5 ms) is steady warm latency")
	f.integer(&cfg.WarmMax, "warm_max", "warm-max", "most requests after the first token while waiting for steady latency; then the cycle is \"not steady\"")
	f.integer(&cfg.MaxTokens, "max_tokens", "max-tokens", "max_tokens of each probe request")
	f.fs.StringVarP(&o.Out, "out", "o", "", "output folder (default out/coldstart-<date>-<time>-<id>; an existing non-empty one is refused without --force)")
	f.bind("out", "out")
	f.boolean(&o.Force, "force", "force", "reuse a non-empty --out folder: surge's files in it are replaced")
	f.simulator("sim.", &o.Sim)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg.Target = o.Target
		if err := cfg.Validate(); err != nil {
			return f.explain(err)
		}
		if err := o.Validate(); err != nil {
			return f.explain(err)
		}
		f.warnSimulatorOnly(cmd.ErrOrStderr(), o.Target)
		return runColdstart(cmd, f, o, cfg)
	}
	return cmd
}

// runColdstart checks the port, claims the run folder, measures, and
// writes coldstart.json and coldstart.md — also after an error or Ctrl-C,
// with what was measured.
func runColdstart(cmd *cobra.Command, f *flags, o run.Options, cfg coldstart.Config) error {
	ctx := cmd.Context()
	w := cmd.OutOrStdout()
	// the built-in simulator has a replica ready unless told to scale
	// from zero: its cycles are warm starts, whatever --idle says
	warmSim := o.Target == "" && !o.Sim.ScalesFromZero()
	if err := coldstart.PortFree(ctx, cfg); err != nil {
		return &exitError{exitUsage, err}
	}
	o.Quiet = true
	logger := run.ConsoleLogger(cmd.ErrOrStderr())
	env, err := run.PrepareWith(context.WithoutCancel(ctx), o, false, run.Setup{Logger: logger, Version: toolVersion(), Network: network, Interrupt: ctx})
	if err != nil {
		return classify(f, err)
	}
	defer env.Close()
	if cfg.Target == "" {
		cfg.Target = env.BaseURL
	}
	path := o.Out
	if path == "" {
		path = rundir.DefaultPath("out", "coldstart", time.Now())
	}
	d, err := rundir.Create(path, rundir.Options{Force: o.Force, Owner: "surge coldstart"})
	if err != nil {
		return classify(f, err)
	}
	defer d.Close()
	const logName = "server.log"
	if cfg.StartCmd != "" {
		if cfg.Log, err = d.Log(logName); err != nil {
			return &exitError{exitInternal, err}
		}
		defer cfg.Log.Close()
		cfg.LogPath = d.Path() + "/" + logName
		fmt.Fprintf(w, "surge coldstart: %d cycles of sh -c %q, target %s, model %s (its output: %s)\n", cfg.Cycles(), cfg.StartCmd, cfg.Target, o.Model, cfg.LogPath)
	} else if warmSim {
		fmt.Fprintf(w, "surge coldstart: %d cycle(s) of %s, model %s\n", cfg.Cycles(), env.TargetName(), o.Model)
		fmt.Fprintf(w, "note: %s\n", simWarmNote)
	} else {
		fmt.Fprintf(w, "surge coldstart: %d cycle(s) of %s scaled from zero, model %s\n", cfg.Cycles(), env.TargetName(), o.Model)
	}
	rep, runErr := coldstart.Run(ctx, cfg, env.ClientConfig(2), w)
	rep.Version = toolVersion()
	if warmSim {
		rep.Note = simWarmNote
	}
	if cfg.StartCmd != "" {
		rep.Log = logName
	}
	code := coldstartCode(rep, runErr)
	rep.ExitCode = code
	fmt.Fprintln(w)
	_ = rep.WriteTable(w)
	if err := d.WriteJSON("coldstart.json", rep); err != nil {
		return &exitError{exitInternal, err}
	}
	if err := d.WriteFile("coldstart.md", rep.WriteMarkdown); err != nil {
		return &exitError{exitInternal, err}
	}
	files := "coldstart.json, coldstart.md"
	if cfg.StartCmd != "" {
		files += ", " + logName
	}
	fmt.Fprintf(w, "wrote %s (%s)\n", d.Path(), files)
	switch {
	case code == exitOK:
		fmt.Fprintln(w, "exit 0: every cycle reached steady warm latency")
		return nil
	case errors.Is(runErr, coldstart.ErrModel):
		fmt.Fprintln(w, "exit 2: the target does not serve --model (the message below names what it serves)")
		return &exitError{code, runErr}
	case runErr != nil && code == exitTarget:
		fmt.Fprintln(w, "exit 3: the target never became usable (the message below says why)")
		return &exitError{code, runErr}
	case runErr != nil:
		return &exitError{code, runErr}
	case rep.Interrupted:
		fmt.Fprintln(w, "exit 1: interrupted; the files hold the cycles measured")
	case rep.AllWarmStarts() && warmSim:
		fmt.Fprintln(w, "exit 1: no cold start measured: the built-in simulator has a replica ready; add --autoscale --min-replicas 0 to make it scale from zero")
	case rep.AllWarmStarts():
		fmt.Fprintln(w, "exit 1: no cold start measured: every cycle was a warm start (the endpoint had not scaled to zero when it began; "+
			"wait until it has, and between cycles make --idle longer than its scale-down time)")
	default:
		fmt.Fprintln(w, "exit 1: a cycle did not reach steady warm latency within --warm-max requests")
	}
	return &exitError{code, errSilent}
}

// simWarmNote says that the built-in simulator is not scaled from zero.
const simWarmNote = "the built-in simulator is not scaled from zero (it has a replica ready), so this measures no cold start; " +
	"add --autoscale --min-replicas 0 to make it scale from zero (its cold start: --scale-request-delay … --model-ready-delay)"

// coldstartCode is the exit code of a measurement (exitCodesColdstart).
func coldstartCode(rep *coldstart.Report, err error) int {
	var se *coldstart.StartError
	switch {
	case errors.Is(err, coldstart.ErrPortInUse), errors.Is(err, coldstart.ErrConfig), errors.Is(err, coldstart.ErrModel):
		return exitUsage
	case errors.As(err, &se), errors.Is(err, coldstart.ErrNotReady):
		return exitTarget
	case err != nil:
		return exitInternal
	case rep.Interrupted:
		return exitSLO
	}
	cold := false
	for _, c := range rep.Cycles {
		if c.WarmS == nil {
			return exitSLO
		}
		cold = cold || !c.WarmStart
	}
	if !cold {
		return exitSLO // every cycle a warm start: no cold start measured
	}
	return exitOK
}
