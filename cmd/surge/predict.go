package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/predict"
)

func newPredictCmd() *cobra.Command {
	var p predict.Params
	var step time.Duration
	var asJSON bool
	var f *flags
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Predict a burst's backlog and recovery time with the fluid model (no load is sent)",
		Long: `Predict what a burst does to a service of capacity μ that normally sees
λ requests/s: during the burst the backlog grows at (burst rate − μ), after it
the backlog drains at (μ − λ). The recovery time is the backlog over the
drain rate; when λ ≥ μ the backlog never drains. An optional capacity boost
(a scale-up) changes μ from a given moment on.

Without --timeout the model assumes every request waits for its answer.
With --timeout T (what surge burst passes: its own --timeout) clients give
up after T, so the backlog still to be served is capped at μ × T and the
arrivals past it are counted as given up: a real backlog drains sooner.

With --queue-limit N the server admits at most N waiting requests (an
admission limit answering 429): arrivals past it are rejected. With
--retries R the client sends a rejected request again up to R times, each
after --retry-delay (the Retry-After hint): the retries are extra arrivals,
and they keep the queue full after the burst ends. The model is then
stepped forward in time (every 10 ms) instead of solved per interval.

With --quota-rps q and --quota-burst S a quota stands in front of the
engine (a managed endpoint's token bucket, in requests: a quota of 60,000
tokens a minute at 250 tokens a request is q = 4 and S = 240). The burst
spends its stock, then the gateway passes q req/s and holds the rest in
--gateway-queue (or refuses it). When q < μ the quota binds: the backlog
drains at q − λ.`,
		Example: `  # the worked example: μ 10, λ 8, 60 s at 20 req/s → 600 waiting, 300 s to recover
  surge predict --mu 10 --lambda 8 --burst-rps 20 --burst 60s

  # the same with capacity rising to 16 req/s when the burst ends → 75 s
  surge predict --mu 10 --lambda 8 --burst-rps 20 --burst 60s --boost-rps 16

  # clients that give up after 60 s: the backlog is capped at 9.14 × 60 = 548 → 107 s
  surge predict --mu 9.14 --lambda 4 --burst-rps 40 --burst 60s --timeout 60s

  # a queue of at most 100 and one retry after 5 s: recovery 64 s instead of 50 s
  surge predict --mu 10 --lambda 8 --burst-rps 20 --burst 60s --queue-limit 100 --retries 1 --retry-delay 5s

  # a quota of 4 req/s (stock 240) with a gateway queue of 50 binds before μ 28: 25 s
  surge predict --mu 28 --lambda 2 --burst-rps 10 --burst 60s --quota-rps 4 --quota-burst 240 --gateway-queue 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.Validate(); err != nil {
				return f.explain(err)
			}
			pr, err := predict.Predict(p)
			if err != nil {
				return f.explain(err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"peak_backlog": pr.PeakBacklog, "peak_at_s": pr.PeakAt.Seconds(), "drain_rps": pr.DrainRate,
					"recovery_s": pr.RecoveryTime.Seconds(), "never_recovers": pr.Never, "gave_up": pr.Abandoned,
					"rejected": pr.Rejected, "retried": pr.Retried, "model": pr.Model, "explanation": pr.Explanation,
				})
			}
			fmt.Fprintf(w, "peak backlog:   %.1f requests (%s after the burst starts)\n", pr.PeakBacklog, pr.PeakAt.Round(10*time.Millisecond))
			if pr.Never {
				fmt.Fprintf(w, "recovery:       never — normal load %.4g req/s is at or above capacity\n", p.Lambda)
			} else {
				fmt.Fprintf(w, "drain rate:     %.4g req/s\n", pr.DrainRate)
				fmt.Fprintf(w, "recovery time:  %s after the burst ends\n", pr.RecoveryTime.Round(10*time.Millisecond))
			}
			if p.Patience > 0 {
				fmt.Fprintf(w, "gave up:        %.0f requests (waited %s, the timeout)\n", pr.Abandoned, p.Patience)
			}
			if p.QueueLimit > 0 {
				fmt.Fprintf(w, "rejected:       %.0f requests for good (queue limit %g", pr.Rejected, p.QueueLimit)
				if p.Retries > 0 {
					fmt.Fprintf(w, "; %.0f retries sent", pr.Retried)
				}
				fmt.Fprintln(w, ")")
			}
			fmt.Fprintf(w, "model:          %s\n", pr.Model)
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
	p.BurstLen = time.Minute
	f = newFlags(cmd.Flags())
	f.f64(&p.Mu, "mu", "mu", "capacity μ in requests/s (required)")
	f.f64(&p.Lambda, "lambda", "lambda", "normal arrival rate λ in requests/s")
	f.f64(&p.BurstRate, "burst_rate", "burst-rps", "arrival rate during the burst, requests/s")
	f.dur(&p.BurstLen, "burst_len", "burst", "burst length")
	f.f64(&p.BoostMu, "boost_mu", "boost-rps", "capacity in requests/s once a scale-up lands (0 = none; the same name as surge burst's)")
	f.dur(&p.BoostAt, "boost_at", "boost-after", "when the scale-up lands, after the burst starts (0 = at the burst end; the same name as surge burst's)")
	f.dur(&p.Patience, "patience", "timeout", "clients give up after waiting this long (their timeout): the backlog is capped at μ × timeout (0 = requests never give up)")
	f.f64(&p.QueueLimit, "queue_limit", "queue-limit", "the server admits at most this many waiting requests and rejects the rest (0 = unbounded)")
	f.integer(&p.Retries, "retries", "retries", "a rejected request is sent again up to this many times (0..10; needs --queue-limit to have an effect)")
	f.dur(&p.RetryDelay, "retry_delay", "retry-delay", "the wait before each retry (the Retry-After hint; required with --retries)")
	f.f64(&p.QuotaRate, "quota_rate", "quota-rps", "a quota in front of the engine that refills at this many requests/s (its limit ÷ its window ÷ what a request costs; 0 = none)")
	f.f64(&p.QuotaBurst, "quota_burst", "quota-burst", "the requests the quota's bucket holds when full (its limit ÷ what a request costs; required with --quota-rps)")
	f.f64(&p.QuotaQueue, "quota_queue", "gateway-queue", "requests over quota that wait at the gateway instead of being refused (0 = refused at once)")
	cmd.Flags().DurationVar(&step, "step", 0, "also print the backlog timeline as CSV at this step (e.g. 10s)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the prediction as JSON")
	return cmd
}
