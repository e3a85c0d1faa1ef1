package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/soak"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

func newSoakCmd() *cobra.Command {
	cfg := soak.DefaultConfig()
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
absolute). The verdict is "stable" or "drifting", with the numbers.` + exitCodesSoak,
		Example: `  # an hour against a real endpoint with vLLM metrics
  surge soak --target https://llm.example.com/v1 --model my-model --rate 6 \
    --metrics-url https://llm.example.com/metrics

  # what if the engine slowed down by half every hour? (virtual time)
  surge soak --simulate --rate 6 --slowdown-per-hour 0.5`,
		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.fileFlag(&file)
	f.f64(&cfg.Rate, "rate", "rate", "constant load in arrivals/s (required with --target; 5 against the built-in simulator)")
	f.dur(&cfg.Duration, "duration", "duration", "length of the soak (after the warmup)")
	f.dur(&cfg.Warmup, "warmup", "warmup", "warmup at the same rate (excluded)")
	f.str(&cfg.Arrival, "arrival", "arrival", "arrival process: poisson or constant")
	f.f64(&cfg.Confidence, "confidence", "confidence", "confidence of a trend's slope interval")
	f.f64(&cfg.DriftLatency, "drift_latency", "drift-latency", "a p95 latency drifts when its fitted change over the soak is at least this fraction of its mean")
	f.f64(&cfg.DriftErrorRate, "drift_error_rate", "drift-error-rate", "the failure rate drifts when its fitted change over the soak is at least this (absolute fraction)")
	f.f64(&cfg.DriftKV, "drift_kv", "drift-kv", "KV-cache usage drifts when its fitted change over the soak is at least this (absolute, 0..1)")
	f.boolean(&cfg.Simulate, "simulate", "simulate", "run the soak in virtual time against the engine model")
	f.options(&cfg.Options)
	var dry bool
	f.fs.BoolVar(&dry, "dry-run", false, dryRunUsage)
	cmd.RunE = experimentCmd{command: "soak", flags: f, file: &file, config: &cfg, validate: cfg.Validate, options: &cfg.Options, simulate: &cfg.Simulate,
		dryRun: &dry, planned: cfg.Planned,
		prepare: func(map[string]*yaml.Node) error { cfg.SimDefaults(); return nil },
		run: func(ctx context.Context, env *run.Env, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
			return soak.Soak(ctx, env, &cfg, d, w)
		}}.runE
	return cmd
}
