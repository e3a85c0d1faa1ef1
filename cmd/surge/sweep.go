package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/sweep"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

func newSweepCmd() *cobra.Command {
	cfg := sweep.DefaultConfig()
	var file string
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Concurrency or rate sweep: throughput knee, latency-budget break, usable level and headroom",
		Long: `Run the same requests (same seed) at increasing load levels, one run per
level: --concurrency 1,4,16,64 (closed loop: N users each sending when their
previous request ended — labelled as such) or --rates 2,4,8 (open loop).
Each level runs --warmup (excluded) and then --duration.

Per level: request rate and output/total tokens per second (by completion
time), TTFT, TPOT, inter-token gaps and completion P50/P95/P99, errors. Then
the throughput knee (the last level after which throughput grows less than
--knee-threshold), the latency-budget break (the first level whose p95 TTFT
exceeds --ttft-budget or p95 TPOT exceeds --tpot-budget), the usable level
(before the first of the two) and the headroom between them.

Writes one run folder per level (DIR/level-NN-<level>/), the level table
(results.md/.csv/.json), sweep.json and report.html with the charts.` + exitCodesSweep,
		Example: `  # the default concurrency sweep, in virtual time
  surge sweep --simulate --duration 2m

  # an open-loop rate sweep against a real endpoint
  surge sweep --target https://llm.example.com/v1 --model my-model --rates 2,4,8,16 --duration 5m`,
		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.fileFlag(&file)
	f.ints(&cfg.Concurrency, "concurrency", "concurrency", "closed-loop levels: concurrent users, increasing (default 1,4,16,64)")
	f.floats(&cfg.Rates, "rates", "rates", "open-loop levels: arrivals/s, increasing (instead of --concurrency)")
	f.dur(&cfg.Duration, "duration", "duration", "measured time per level (docs/method.md §4: ≥ ~1000 requests or 5–10 min)")
	f.dur(&cfg.Warmup, "warmup", "warmup", "warmup before each level, at the level's load (excluded)")
	f.str(&cfg.Arrival, "arrival", "arrival", "open-loop arrival process: poisson or constant")
	f.f64(&cfg.KneeThreshold, "knee_threshold", "knee-threshold", "throughput knee: the next level adds less than this fraction of output tokens/s")
	f.dur(&cfg.TTFTBudget, "ttft_budget", "ttft-budget", "latency budget: p95 TTFT (from the scheduled arrival) at most this")
	f.dur(&cfg.TPOTBudget, "tpot_budget", "tpot-budget", "latency budget: p95 TPOT at most this")
	f.dur(&cfg.SettleTimeout, "settle_timeout", "settle-timeout", "longest wait for the target to return to idle between levels (0 = do not wait)")
	f.boolean(&cfg.Simulate, "simulate", "simulate", "run the sweep in virtual time against the engine model")
	f.options(&cfg.Options)
	cmd.RunE = experimentCmd{command: "sweep", flags: f, file: &file, config: &cfg, validate: cfg.Validate, options: &cfg.Options, simulate: &cfg.Simulate,
		run: func(ctx context.Context, env *run.Env, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
			return sweep.Sweep(ctx, env, &cfg, d, w)
		}}.runE
	return cmd
}
