package main

import (
	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
)

func newCapacityCmd() *cobra.Command {
	cfg := experiment.DefaultCapacityConfig()
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
stops: that is surge's limit on this machine, not the target's.`,
		Example: `  # in virtual time against the engine model: seconds
  surge capacity --simulate

  # a real endpoint, shorter steps, a stricter TTFT SLO
  surge capacity --target https://llm.example.com/v1 --model my-model \
    --start-rps 2 --min-requests 600 --step-duration 1m --slo-ttft-p95 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.Flags(), file, &cfg); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			return runExperiment(cmd, "capacity", &cfg.Options, cfg.Simulate, func(env *experiment.Env, dir string) (experiment.Outcome, error) {
				return experiment.Capacity(cmd.Context(), env, &cfg, dir)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML experiment file (strict: unknown fields are errors)")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}
