package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
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

With no --target it runs against the built-in simulated engine.`,
		Example: `  # 30 s of Poisson arrivals at 5 req/s against the built-in simulator
  surge run

  # a vLLM server, 20 req/s for 2 minutes after a 30 s warmup, engine metrics scraped
  surge run --target http://127.0.0.1:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct \
    --rate 20 --duration 2m --warmup 30s --metrics-url http://127.0.0.1:8000/metrics

  # phases from a YAML file (flags win over the file)
  surge run -f experiment.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.Flags(), file, &cfg); err != nil {
				return err
			}
			cfg.ConfigFile = file
			return runExperiment(cmd, "run", &cfg.Options, false, func(env *experiment.Env, dir string) (experiment.Outcome, error) {
				return experiment.Run(cmd.Context(), env, &cfg, dir)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML experiment file (strict: unknown fields are errors)")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}

// runExperiment prepares the target, runs fn and maps the outcome to an exit code.
func runExperiment(cmd *cobra.Command, command string, o *experiment.Options, virtual bool, fn func(*experiment.Env, string) (experiment.Outcome, error)) error {
	ctx := cmd.Context()
	stdout := cmd.OutOrStdout()
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	dir := o.Out
	if dir == "" {
		dir = filepath.Join("out", command+"-"+time.Now().Format("20060102-150405"))
	}
	// Ctrl-C ends the run, but the run folder and reports are still written:
	// the experiment sees the cancellation, while preparing and reporting use
	// a context that outlives it.
	env, err := experiment.Prepare(context.WithoutCancel(ctx), *o, virtual, stdout, logger, toolVersion())
	if err != nil {
		return classify(err)
	}
	defer env.Close()
	out, err := fn(env, dir)
	if err != nil {
		return classify(err)
	}
	switch {
	case out.Partial:
		fmt.Fprintln(stdout, "Interrupted: the results above are partial (marked so in every file).")
		return &exitError{exitSLO, errSilent}
	case out.Unusable:
		return &exitError{exitTarget, errSilent}
	case !out.SLOPass:
		return &exitError{exitSLO, errSilent}
	}
	return nil
}

func classify(err error) error {
	var ce *experiment.ConfigError
	if errors.As(err, &ce) {
		return &exitError{exitUsage, err}
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, experiment.ErrNoSustainableRate) {
		return &exitError{exitSLO, err} // burst --baseline-rps auto found no rate that meets the SLO
	}
	return &exitError{exitInternal, err}
}
