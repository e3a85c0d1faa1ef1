package main

import (
	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/experiment"
)

func newSoakCmd() *cobra.Command {
	cfg := experiment.DefaultSoakConfig()
	var file string
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "A long constant load reported in windows, with a drift verdict",
		Long: `Hold a constant open-loop load (--rate, Poisson by default) for --duration
(default 1 h) after a --warmup, and report it in windows of arrival time
(--window, default 1 min). Then test each window series for drift — p95
TTFT, p95 completion, the failure rate and, when engine metrics are scraped,
the engine's KV-cache usage: a least-squares slope whose confidence interval
(--confidence) excludes zero and whose fitted change over the soak is large
enough (--drift-latency of the mean; --drift-error-rate, --drift-kv
absolute). The verdict is "stable" or "drifting", with the numbers.

Exit code 1 when it drifts or the SLO fails.`,
		Example: `  # an hour against a real endpoint with vLLM metrics
  surge soak --target https://llm.example.com/v1 --model my-model --rate 6 \
    --metrics-url https://llm.example.com/metrics

  # what if the engine slowed down by half every hour? (virtual time)
  surge soak --simulate --rate 6 --slowdown-per-hour 0.5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.Flags(), file, &cfg); err != nil {
				return err
			}
			if cfg.Target == "" && cfg.Rate == 0 {
				cfg.Rate = experiment.DefaultSoakSimRate
			}
			if err := cfg.Validate(); err != nil {
				return usageErr("%v", err)
			}
			return runExperiment(cmd, "soak", &cfg.Options, cfg.Simulate, func(env *experiment.Env, dir string) (experiment.Outcome, error) {
				return experiment.Soak(cmd.Context(), env, &cfg, dir)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML experiment file (strict: unknown fields are errors)")
	cfg.RegisterFlags(cmd.Flags())
	return cmd
}
