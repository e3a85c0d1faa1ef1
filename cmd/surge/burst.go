package main

import (
	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
)

func newBurstCmd() *cobra.Command {
	cfg := experiment.DefaultBurstConfig()
	var file string
	cmd := &cobra.Command{
		Use:   "burst",
		Short: "The burst experiment: 2x/5x/10x bursts over a named baseline, goodput and recovery time",
		Long: `Run the burst experiment. For each multiplier k (default 2, 5, 10) surge
makes a separate run of four phases — warmup (excluded), baseline, burst at
k × baseline, recovery at baseline — after waiting for the target to settle
back to baseline. It reports, per multiplier: offered, sent, successful and
goodput RPS, TTFT and completion P50/P95/P99, engine queue wait (when the
engine's metrics are scraped), 429/timeout/error/drop rates, and the recovery
time: how long after the burst ended the P99 latency was back within 10% of
the baseline's for three consecutive windows — next to what the backlog
model predicted.

With no --target, surge runs a ~3-minute demo against its built-in simulated
engine. With --simulate, the whole experiment runs in virtual time against
the engine model in seconds: a what-if tool for capacity planning.`,
		Example: `  # the demo: the built-in simulator, short phases, about 3 minutes
  surge burst

  # a real endpoint: a named, sustainable baseline of 8 req/s, vLLM metrics scraped
  OPENAI_API_KEY=... surge burst --target https://llm.example.com/v1 --model my-model \
    --baseline-rps 8 --metrics-url https://llm.example.com/metrics --metrics-preset vllm

  # what if: two replicas and a 429 limit of 50 waiting requests, in virtual time
  surge burst --simulate --baseline-rps 12 --replicas 2 --max-waiting 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.Flags(), file, &cfg); err != nil {
				return err
			}
			if file == "" {
				cfg.ApplyDemo(cmd.Flags().Changed)
			}
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			return runExperiment(cmd, "burst", &cfg.Options, cfg.Simulate, func(env *experiment.Env, dir string) (experiment.Outcome, error) {
				return experiment.Burst(cmd.Context(), env, &cfg, dir)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML experiment file (strict: unknown fields are errors)")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}
