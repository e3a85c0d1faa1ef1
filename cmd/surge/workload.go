package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/burst"
	"github.com/surge-bench/surge/internal/experiment/capacity"
	"github.com/surge-bench/surge/internal/experiment/soak"
	"github.com/surge-bench/surge/internal/experiment/sweep"
	"github.com/surge-bench/surge/internal/logfit"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/workload"
)

func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Look at a workload before sending it, or fit one to production logs",
		Long: `Look before you send: "surge workload inspect" prints the shape of the
requests a run would send — counts, prompt and output token percentiles,
their ratio, histograms, sessions, shared prefixes — without sending any;
"surge workload fit" turns production request logs into a workload the other
commands accept.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newInspectCmd(), newFitCmd())
	return cmd
}

// DefaultInspectCount is how many requests `surge workload inspect` draws.
const DefaultInspectCount = 10_000

// inspectConfig is what `surge workload inspect` reads from a file: the
// options every experiment shares (the workload among them), and any
// other key of an experiment file, which it ignores — so that the file of
// a run, a burst or a sweep can be inspected as it is.
type inspectConfig struct {
	Options run.Options          `yaml:",inline"`
	Other   map[string]yaml.Node `yaml:",inline"`
}

// experimentKeys are the YAML keys of every experiment's own settings:
// keys an inspected file may hold besides the options.
func experimentKeys() []string {
	var keys []string
	for _, c := range []any{experiment.RunConfig{}, burst.Config{}, capacity.Config{}, sweep.Config{}, soak.Config{}} {
		t := reflect.TypeOf(c)
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name != "" && name != "-" {
				keys = append(keys, name)
			}
		}
	}
	return keys
}

// inspectHidden are the shared flags that do not shape the workload; they
// are accepted (a run's command line can be inspected as it is) but left
// out of --help.
var inspectHidden = []string{"target", "model", "api", "api-key-env", "api-key-file", "ca-cert", "insecure", "header", "stream",
	"timeout", "retries", "max-in-flight", "spin", "prompt-calibration", "out", "force", "metrics-url", "metrics-preset", "metric",
	"scrape-interval", "window", "ttft-deadline", "e2e-deadline", "slo-ttft-p95", "slo-e2e-p99", "slo-goodput", "prometheus-addr", "metrics-out", "web",
	"otlp-listen", "otlp-grace", "quiet", "deployment", "hardware", "serving-config", "watch-k8s", "replica-header"}

func newInspectCmd() *cobra.Command {
	cfg := inspectConfig{Options: run.DefaultOptions()}
	var file string
	count := DefaultInspectCount
	cmd := &cobra.Command{
		Use:   "inspect [FILE]",
		Short: "Print the shape of a workload: token percentiles, ratio, histograms, sessions, shared prefixes",
		Long: `Print what a run would send, before a single request leaves: the number of
requests drawn, p50/p90/p95/p99/max and mean of the intended prompt tokens and of
max_tokens, their output/prompt ratio (of the medians and of the totals),
the profiles, sessions and turns, the share of prompt tokens in prefixes
shared with other requests, and a histogram of each length in log-spaced
(half-octave) bins.

The workload comes from the same flags and YAML keys as surge run
(--profile, --prompt-tokens, --output-tokens, ...); FILE is an experiment
file as for -f (its other settings, phases or multipliers, are ignored).
Requests are generated in memory exactly as a run would generate them, then
dropped: nothing is sent, nothing is written, no prompt text is printed.
To see the requests of a planned experiment, with its schedule and a trace's
own lengths, use surge run --dry-run or surge burst --dry-run.`,
		Example: `  # the default chat profile
  surge workload inspect

  # lengths as known from logs: a long-tailed prompt and a tight output
  surge workload inspect --prompt-tokens lognormal:median=800,p95=6000 --output-tokens normal:mean=200,sd=40

  # the workload of an experiment file, 100,000 draws
  surge workload inspect experiment.yaml --count 100000`,
		Args: cobra.MaximumNArgs(1),
	}
	f := newFlags(cmd.Flags())
	f.fileFlag(&file)
	f.options(&cfg.Options)
	cmd.Flags().IntVar(&count, "count", count, "how many requests to draw, e.g. --count 100000")
	for _, name := range inspectHidden {
		if fl := cmd.Flags().Lookup(name); fl != nil {
			fl.Hidden = true
		}
	}
	for name := range f.sim {
		if fl := cmd.Flags().Lookup(f.byKey[name]); fl != nil && fl.Name != "seed" {
			fl.Hidden = true
		}
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			if file != "" {
				return usageErr("give the experiment file once: as FILE or as -f, not both")
			}
			file = args[0]
			f.file = &file
		}
		if count < 1 || count > maxInspectCount {
			return usageErr("--count: must be in [1, %d], got %d", maxInspectCount, count)
		}
		if _, err := f.apply(file, &cfg); err != nil {
			return err
		}
		known := experimentKeys()
		for key, n := range cfg.Other {
			if !slices.Contains(known, key) {
				return usageErr("%s:%d: unknown field %q", file, n.Line, key)
			}
		}
		o := &cfg.Options
		if err := o.Validate(); err != nil {
			return f.explain(err)
		}
		wcfg, sess, err := o.WorkloadPreview()
		if err != nil {
			return f.explain(err)
		}
		s, err := workload.Draw(wcfg, sess, count)
		if err != nil {
			return f.explain(err)
		}
		w := cmd.OutOrStdout()
		what := "requests"
		if sess != nil {
			what = "sessions (each answer assumed to fill its max_tokens)"
		}
		fmt.Fprintf(w, "surge workload inspect: %d %s drawn (seed %d); nothing is sent.\n", count, what, o.Seed)
		return s.WriteText(w, true)
	}
	return cmd
}

// maxInspectCount bounds --count (about 100 MB of work, not memory: the
// summary keeps one count per distinct length).
const maxInspectCount = 10_000_000

func newFitCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "fit LOGFILE",
		Short: "Fit a workload to production request logs: length histograms, rates, a config for surge run -f",
		Long: `Read production request logs — a CSV with a header row, or JSONL — and write a
workload the other commands accept. Only numeric columns are read, by name:
prompt tokens (prompt_tokens, input_tokens, ContextTokens, input_length,
usage.prompt_tokens, ...), output tokens (output_tokens, completion_tokens,
GeneratedTokens, output_length, usage.completion_tokens, ...) and, if there
is one, a timestamp (timestamp, time, ts, created, created_at, start_time:
seconds or an RFC 3339 / "2006-01-02 15:04:05" date-time; timestamp_ms and
offset_ms in milliseconds). Text columns (prompts, responses) are never
kept or printed; errors name file:line and the field only.

It prints the prompt and output percentiles and their ratio and, with
timestamps, the rate by minute: the suggested baseline is the median rate of
the log's full minutes (the load carried most of the time), the peak the
busiest minute, and their ratio the multiplier a burst test should include.
It writes into --out:

  prompt_tokens.csv, output_tokens.csv   tokens,count: --prompt-tokens empirical:FILE
  rate_by_minute.csv                      minute,start_s,requests,rps,partial (with timestamps)
  workload.yaml                           surge run -f: both distributions, rate = the baseline, 5m
  burst.yaml                              surge burst -f: baseline_rps and the peak multiplier (with timestamps)

The YAML files name the histograms beside them (a relative empirical:FILE in
an experiment file is read from the file's folder): they work from any
directory, and the folder can be moved. Exit 2 on bad input: a missing column, a negative or absurd count
(more than 2^20 tokens), no rows.`,
		Example: `  # fit the Azure LLM inference trace, then run it against the simulator
  surge workload fit AzureLLMInferenceTrace_conv.csv --out fitted
  surge workload inspect fitted/workload.yaml
  surge run -f fitted/workload.yaml --duration 1m

  # JSONL request logs with OpenAI usage objects
  surge workload fit requests.jsonl --out fitted`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVarP(&out, "out", "o", "fitted", "folder to write the fitted files into (created if needed; the files are replaced)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		fit, err := logfit.Read(args[0])
		if err != nil {
			return &exitError{exitUsage, err}
		}
		w := cmd.OutOrStdout()
		if err := fit.WriteText(w); err != nil {
			return err
		}
		files, err := fit.Write(out)
		if err != nil {
			return &exitError{exitInternal, fmt.Errorf("--out %s: %w", out, err)}
		}
		fmt.Fprintf(w, "wrote %s, %s", files.Prompt, files.Output)
		if files.RateByMinute != "" {
			fmt.Fprintf(w, ", %s", files.RateByMinute)
		}
		fmt.Fprintf(w, "\nrun it:   surge run -f %s\n", files.Run)
		if files.Burst != "" {
			fmt.Fprintf(w, "burst it: surge burst -f %s\n", files.Burst)
		}
		fmt.Fprintf(w, "look:     surge workload inspect %s\n", files.Run)
		return nil
	}
	return cmd
}
