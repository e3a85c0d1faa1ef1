package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
)

func newSimCmd() *cobra.Command {
	cfg := sim.DefaultConfig()
	var addr, file, model, otlpEndpoint string
	var verbose, timings bool
	var startDelay time.Duration
	var f *flags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve the simulated inference engine (OpenAI-compatible, with vLLM metrics)",
		Long: `Serve surge's simulated inference engine: a continuous-batching model in
the spirit of vLLM's scheduler (FCFS waiting queue, a running batch of at most
--max-num-seqs, a KV-cache budget, chunked prefill), with optional admission
control (429), replicas with an autoscaler, and fault injection.

It speaks the OpenAI API (POST /v1/chat/completions and /v1/completions,
streaming and not; GET /v1/models, /health), exposes Prometheus metrics with
vLLM's names on /metrics and its scaling events on /sim/events. Every
response names its replica in the X-Surge-Replica header. It honours stop,
temperature, seed, tools and response_format (json_schema, json_object);
--quirk makes it misbehave on purpose (docs/checks.md).

The defaults serve about 10 requests/s of a 500-token-prompt, 150-token-answer
chat workload per replica — roughly an 8B model on one GPU.`,
		Example: `  surge sim --addr 127.0.0.1:18000
  curl -N http://127.0.0.1:18000/v1/chat/completions -d '{"model":"surge-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}'

  # two replicas, a 429 limit of 50 waiting requests, 1% of streams reset
  surge sim --replicas 2 --max-waiting 50 --fault-reset 0.01

  # an endpoint that buffers its streams and never reports usage (surge check's
  # streaming.incremental and usage checks fail against it)
  surge sim --quirk buffered-stream --quirk no-usage

  # a server that takes 2 s to listen, then scales from zero on its first
  # request (the cold start surge coldstart measures)
  surge sim --start-delay 2s --autoscale --min-replicas 0 --scale-request-delay 0s \
    --node-ready-delay 0s --container-ready-delay 500ms --model-ready-delay 3s

  # per-request engine timing, as vLLM sends it, joined by surge run
  surge sim --otlp-traces-endpoint http://127.0.0.1:4318/v1/traces &
  surge run --target http://127.0.0.1:8000/v1 --otlp-listen 127.0.0.1:4318`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := f.apply(file, &cfg); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return f.explain(err)
			}
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelDebug
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			opts := []simhttp.Option{simhttp.WithModel(model)}
			if otlpEndpoint != "" {
				if u, err := url.Parse(otlpEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return &exitError{exitUsage, fmt.Errorf("--otlp-traces-endpoint: must be an http:// or https:// URL, got %q", otlpEndpoint)}
				}
				opts = append(opts, simhttp.WithSpanExport(otlpEndpoint, 0, nil))
			}
			if timings {
				opts = append(opts, simhttp.WithTimings())
			}
			if startDelay < 0 {
				return &exitError{exitUsage, fmt.Errorf("--start-delay: must be ≥ 0, got %v", startDelay)}
			}
			select { // a process that starts slowly: nothing listens yet
			case <-time.After(startDelay):
			case <-cmd.Context().Done():
				return nil
			}
			srv, base, err := simhttp.Listen(cmd.Context(), addr, cfg, logger, opts...)
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("--addr %s: %w", addr, err)}
			}
			defer srv.Close()
			root := strings.TrimSuffix(base, "/v1")
			fmt.Fprintf(cmd.OutOrStdout(), "surge sim: serving model %q at %s (OpenAI-compatible)\n", model, base)
			fmt.Fprintf(cmd.OutOrStdout(), "  metrics: %s/metrics   events: %s/sim/events   health: %s/health\n", root, root, root)
			replicas := fmt.Sprintf("%d replica(s)", cfg.Replicas)
			if cfg.ScalesFromZero() {
				replicas = "0 replicas (scales from zero)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "  %s, max_num_seqs %d, max_waiting %d (0 = unbounded); Ctrl-C to stop\n", replicas, cfg.MaxNumSeqs, cfg.MaxWaiting)
			if len(cfg.Quirks) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "  quirks on: %s\n", strings.Join(cfg.Quirks, ", "))
			}
			<-cmd.Context().Done()
			fmt.Fprintln(cmd.OutOrStdout(), "surge sim: stopped")
			return nil
		},
	}
	f = newFlags(cmd.Flags())
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8000", "address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().StringVar(&model, "model", "surge-sim", "the one model name the simulator serves (others get 404)")
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML file of simulator settings (same names as the flags, with _)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every request (never its content)")
	cmd.Flags().StringVar(&otlpEndpoint, "otlp-traces-endpoint", "", "send vLLM-style llm_request spans (OTLP/HTTP protobuf, batched every 5 s) to this URL, e.g. http://127.0.0.1:4318/v1/traces")
	cmd.Flags().BoolVar(&timings, "timings", false, "answer with llama.cpp's timings object (prompt_ms, predicted_ms) like llama-server")
	cmd.Flags().DurationVar(&startDelay, "start-delay", 0, "wait this long before listening, like a server that loads before it opens its port (for surge coldstart)")
	f.simulator("", &cfg)
	return cmd
}
