package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/predict"
)

func newPredictCmd() *cobra.Command {
	var p predict.Params
	var step time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Predict a burst's backlog and recovery time with the fluid model (no load is sent)",
		Long: `Predict what a burst does to a service of capacity μ that normally sees
λ requests/s: during the burst the backlog grows at (burst rate − μ), after it
the backlog drains at (μ − λ). The recovery time is the backlog over the
drain rate; when λ ≥ μ the backlog never drains. An optional capacity boost
(a scale-up) changes μ from a given moment on.

The model assumes every request waits for its answer; when clients time out
and leave, a real backlog drains faster.`,
		Example: `  # the worked example: μ 10, λ 8, 60 s at 20 req/s → 600 waiting, 300 s to recover
  surge predict --mu 10 --lambda 8 --burst-rps 20 --burst 60s

  # the same with capacity rising to 16 req/s when the burst ends → 75 s
  surge predict --mu 10 --lambda 8 --burst-rps 20 --burst 60s --boost-mu 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.Validate(); err != nil {
				return usageErr("%s", predictFlagError(err))
			}
			pr, err := predict.Predict(p)
			if err != nil {
				return usageErr("%s", predictFlagError(err))
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"peak_backlog": pr.PeakBacklog, "peak_at_s": pr.PeakAt.Seconds(), "drain_rps": pr.DrainRate,
					"recovery_s": pr.RecoveryTime.Seconds(), "never_recovers": pr.Never, "explanation": pr.Explanation,
				})
			}
			fmt.Fprintf(w, "peak backlog:   %.1f requests (%s after the burst starts)\n", pr.PeakBacklog, pr.PeakAt)
			if pr.Never {
				fmt.Fprintf(w, "recovery:       never — normal load %.4g req/s is at or above capacity\n", p.Lambda)
			} else {
				fmt.Fprintf(w, "drain rate:     %.4g req/s\n", pr.DrainRate)
				fmt.Fprintf(w, "recovery time:  %s after the burst ends\n", pr.RecoveryTime)
			}
			fmt.Fprintf(w, "\n%s\n", pr.Explanation)
			if step > 0 {
				pts, err := predict.Timeline(p, step)
				if err != nil {
					return usageErr("--step: %v", err)
				}
				fmt.Fprintln(w, "\nt_s,backlog")
				for _, pt := range pts {
					fmt.Fprintf(w, "%.3f,%.3f\n", pt.T.Seconds(), pt.Backlog)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&p.Mu, "mu", 0, "capacity μ in requests/s (required)")
	f.Float64Var(&p.Lambda, "lambda", 0, "normal arrival rate λ in requests/s")
	f.Float64Var(&p.BurstRate, "burst-rps", 0, "arrival rate during the burst, requests/s")
	f.DurationVar(&p.BurstLen, "burst", time.Minute, "burst length")
	f.Float64Var(&p.BoostMu, "boost-mu", 0, "capacity after a scale-up, requests/s (0 = none)")
	f.DurationVar(&p.BoostAt, "boost-at", 0, "when the scale-up lands, after the burst starts (0 = at the burst end)")
	f.DurationVar(&step, "step", 0, "also print the backlog timeline as CSV at this step (e.g. 10s)")
	f.BoolVar(&asJSON, "json", false, "print the prediction as JSON")
	return cmd
}

// predictFlagError names the flag of a predict.Params field error.
func predictFlagError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "predict: ")
	for field, flag := range map[string]string{"mu": "mu", "lambda": "lambda", "burst_rate": "burst-rps", "burst_len": "burst", "boost_mu": "boost-mu", "boost_at": "boost-at"} {
		if strings.HasPrefix(msg, field+": ") {
			return "--" + flag + ": " + strings.TrimPrefix(msg, field+": ")
		}
	}
	return msg
}
