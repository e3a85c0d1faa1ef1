package main

import (
	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
)

func newSweepCmd() *cobra.Command {
	cfg := experiment.DefaultSweepConfig()
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
(results.md/.csv/.json), sweep.json and report.html with the charts.`,
		Example: `  # the default concurrency sweep, in virtual time
  surge sweep --simulate --duration 2m

  # an open-loop rate sweep against a real endpoint
  surge sweep --target https://llm.example.com/v1 --model my-model --rates 2,4,8,16 --duration 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.Flags(), file, &cfg); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			return runExperiment(cmd, "sweep", &cfg.Options, cfg.Simulate, func(env *experiment.Env, dir string) (experiment.Outcome, error) {
				return experiment.Sweep(cmd.Context(), env, &cfg, dir)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML experiment file (strict: unknown fields are errors)")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}
