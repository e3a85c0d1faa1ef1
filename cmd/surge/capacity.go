package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/capacity"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

func newCapacityCmd() *cobra.Command {
	cfg := capacity.DefaultConfig()
	var file string
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Find the highest offered rate that still meets the SLO, and a baseline below it",
		Long: `Search the sustainable capacity: open-loop steps of increasing offered rate
(--start-rps, × --growth until a step fails the SLO, then bisection between
the highest passing and the lowest failing rate to --tolerance). Each step is
a separate run of --warmup-requests (excluded) and then --min-requests
arrivals, at least --step-duration and at most --max-step-duration, judged by
the SLO (--slo-ttft-p95, --slo-e2e-p99, --slo-goodput). A hopeless step —
goodput already out of reach, or the backlog and TTFT growing together — is
stopped early (--early-stop=false to run every step to its end).

It prints the sustainable rate and a suggested baseline (--baseline-fraction
of it), and writes one run folder per step (DIR/step-NN-<rate>rps/), the step
table (results.md/.csv/.json), capacity.json and report.html.

If the load generator itself cannot keep a step's schedule (it sends below
95% of the rate, or its schedule lag p99 exceeds 100 ms), surge says so and
stops: that is surge's limit on this machine, not the target's.` + exitCodesCapacity,
		Example: `  # in virtual time against the engine model: seconds
  surge capacity --simulate

  # a real endpoint, shorter steps, a stricter TTFT SLO
  surge capacity --target https://llm.example.com/v1 --model my-model \
    --start-rps 2 --min-requests 600 --step-duration 1m --slo-ttft-p95 1s

  # five whole searches (out/cap/rep-1 … rep-5): how much the sustainable rate varies
  surge capacity --simulate --repeat 5 -o out/cap`,
		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.fileFlag(&file)
	f.f64(&cfg.StartRPS, "start_rps", "start-rps", "offered rate of the first step, requests/s")
	f.f64(&cfg.Growth, "growth", "growth", "rate factor between steps until one fails (then bisection)")
	f.f64(&cfg.Tolerance, "tolerance", "tolerance", "stop bisecting when the lowest failing rate is within this fraction above the highest passing one")
	f.f64(&cfg.MaxRPS, "max_rps", "max-rps", "highest rate to try (0 = no limit)")
	f.integer(&cfg.MaxSteps, "max_steps", "max-steps", "most steps in the search")
	f.dur(&cfg.StepDuration, "step_duration", "step-duration", "shortest measured phase of a step (a step lasts --min-requests / rate, within --step-duration and --max-step-duration)")
	f.dur(&cfg.MaxStepDuration, "max_step_duration", "max-step-duration", "longest measured phase of a step")
	f.integer(&cfg.MinRequests, "min_requests", "min-requests", "requests a step's measured phase aims for (docs/method.md §4: ~1000)")
	f.integer(&cfg.WarmupRequests, "warmup_requests", "warmup-requests", "requests at the step's rate before it is measured (excluded)")
	f.f64(&cfg.BaselineFraction, "baseline_fraction", "baseline-fraction", "suggested baseline = this fraction of the sustainable rate")
	f.str(&cfg.Arrival, "arrival", "arrival", "arrival process of every step: poisson or constant")
	f.boolean(&cfg.EarlyStop, "early_stop", "early-stop", "stop a hopeless step early (goodput out of reach, or backlog and TTFT growing)")
	f.boolean(&cfg.Simulate, "simulate", "simulate", "run the search in virtual time against the engine model (seconds, not minutes)")
	f.dur(&cfg.SettleTimeout, "settle_timeout", "settle-timeout", "longest wait for the target to return to idle between steps (0 = do not wait)")
	f.integer(&cfg.Repeat, "repeat", "repeat", "run the whole search this many times, each into DIR/rep-k with the settle gate before it and rep k seeded with --seed + k − 1; DIR's table has each search's sustainable step, the pooled row and the spread of the sustainable rates (min/median/max, a 95% bootstrap interval from 5 searches)")
	f.options(&cfg.Options)
	cmd.RunE = experimentCmd{command: "capacity", flags: f, file: &file, config: &cfg, validate: cfg.Validate, options: &cfg.Options, simulate: &cfg.Simulate, fleet: addFleetFlags(f.fs),
		run: func(ctx context.Context, env *run.Env, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
			return capacity.Capacity(ctx, env, &cfg, d, w)
		}}.runE
	return cmd
}
