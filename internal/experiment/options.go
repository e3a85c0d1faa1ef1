// Package experiment wires schedules, workloads, the load generator, the
// client, scraping, analysis and reports into the experiments surge offers:
// a single run of arbitrary phases (Run) and the burst experiment (Burst).
//
// Each run writes a run folder:
//
//	manifest.json   what was tested (no secrets)
//	requests.jsonl  one record per scheduled arrival, flushed as the run goes
//	engine.csv      scraped engine samples (when engine metrics are available)
//	timeseries.csv  per arrival window: rates, latency percentiles, in-flight, queue
//	summary.json    the full analysis (per phase, per window, recovery, vLLM bench names)
//
// A run executes either live — the open-loop load generator sending to an
// HTTP endpoint (a real one, or surge's simulator on a loopback port) — or in
// virtual time against the engine model (sim.Simulate), which produces the
// same records in a fraction of a second. Everything after the records is
// shared between the two.
//
// Capacity, Sweep and Soak run several load levels (or one long run) with
// the same Env.Execute, each level a run folder of its own, and add a level
// table (report.LevelTable) and XY charts to the top folder:
//
//   - Capacity: open-loop steps × growth, then bisection, judged by the SLO;
//     hopeless steps stop early (saturation.go); see CapacityConfig.
//   - Sweep: closed-loop users (ClosedLoop, concurrency sweeps only) or
//     open-loop rates; throughput by completion time (Measure), knee,
//     budget break, usable level and headroom; see SweepConfig.
//   - Soak: one long run in windows and a least-squares drift test per
//     window series (Trend); see SoakConfig.
package experiment

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// Defaults of the options common to every experiment.
const (
	DefaultModel          = "surge-sim"
	DefaultAPI            = "chat"
	DefaultAPIKeyEnv      = "OPENAI_API_KEY"
	DefaultTimeout        = 60 * time.Second
	DefaultProfile        = "chat"
	DefaultScrapeInterval = time.Second
	DefaultWindow         = analyze.DefaultWindow
)

// Options are the settings every experiment shares: what to test, how to
// reach it, what load to send and how to judge it. Each field is a flag
// (named in RegisterFlags) and a YAML field.
type Options struct {
	Target     string   `yaml:"target"`       // base URL including /v1; "" = in-process simulator
	Model      string   `yaml:"model"`        // model name sent in requests
	API        string   `yaml:"api"`          // chat or completions
	APIKeyEnv  string   `yaml:"api_key_env"`  // environment variable holding the API key
	APIKeyFile string   `yaml:"api_key_file"` // file holding the API key (wins over the variable)
	CACert     string   `yaml:"ca_cert"`      // PEM file of an extra root CA
	Insecure   bool     `yaml:"insecure"`     // skip TLS verification
	Headers    []string `yaml:"headers"`      // extra request headers, "Name: value"
	Stream     bool     `yaml:"stream"`       // stream responses (SSE)

	Timeout     time.Duration `yaml:"timeout"`       // per-request timeout
	Retries     int           `yaml:"retries"`       // bounded retries (0 = off)
	MaxInFlight int           `yaml:"max_in_flight"` // in-flight cap; beyond it arrivals are generator_drop
	Spin        time.Duration `yaml:"spin"`          // sleep-then-spin window for sub-ms send precision (0 = off)

	Profile      string `yaml:"profile"`       // workload profile: chat, rag, longgen
	PromptTokens int    `yaml:"prompt_tokens"` // fixed prompt length instead of the profile's distribution (0 = profile)
	OutputTokens int    `yaml:"output_tokens"` // fixed output length (max_tokens) instead of the profile's (0 = profile)
	IgnoreEOS    bool   `yaml:"ignore_eos"`    // ask the server to generate exactly max_tokens
	NoNonce      bool   `yaml:"no_nonce"`      // let prompts share prefixes (to test prefix caching)
	Seed         int64  `yaml:"seed"`          // seed of schedules, workload and simulator

	Out string `yaml:"out"` // output folder

	MetricsURL     string        `yaml:"metrics_url"`     // engine Prometheus endpoint
	MetricsPreset  string        `yaml:"metrics_preset"`  // vllm, sglang, tgi, llamacpp, sim ("" = auto)
	MetricOverride []string      `yaml:"metric"`          // logical=engine_name overrides
	ScrapeInterval time.Duration `yaml:"scrape_interval"` // engine scrape period

	Window       time.Duration `yaml:"window"`        // analysis window by arrival time
	TTFTDeadline time.Duration `yaml:"ttft_deadline"` // per-request deadline on TTFT from the scheduled arrival
	E2EDeadline  time.Duration `yaml:"e2e_deadline"`  // per-request deadline on completion from the scheduled arrival
	SLOTTFTP95   time.Duration `yaml:"slo_ttft_p95"`  // SLO clause: p95 TTFT from schedule (0 = not checked)
	SLOE2EP99    time.Duration `yaml:"slo_e2e_p99"`   // SLO clause: p99 completion from schedule (0 = not checked)
	SLOGoodput   float64       `yaml:"slo_goodput"`   // SLO clause: goodput ratio (0 = not checked)

	PrometheusAddr string `yaml:"prometheus_addr"` // expose live values for Prometheus here
	Quiet          bool   `yaml:"quiet"`           // no live view

	Deployment    string `yaml:"deployment"`     // manifest: serverless, dedicated, self-managed, …
	Hardware      string `yaml:"hardware"`       // manifest: GPU/accelerator, if known
	ServingConfig string `yaml:"serving_config"` // manifest: engine and its settings, if known

	Sim sim.Config `yaml:"sim"` // the in-process simulated engine (no --target)
}

// DefaultOptions returns the defaults; METHOD.md §1 gives the deadlines and SLO.
func DefaultOptions() Options {
	return Options{
		Model:          DefaultModel,
		API:            DefaultAPI,
		APIKeyEnv:      DefaultAPIKeyEnv,
		Stream:         true,
		Timeout:        DefaultTimeout,
		MaxInFlight:    loadgen.DefaultMaxInFlight,
		Profile:        DefaultProfile,
		Seed:           1,
		ScrapeInterval: DefaultScrapeInterval,
		Window:         DefaultWindow,
		TTFTDeadline:   analyze.DefaultDeadlines.TTFT,
		E2EDeadline:    analyze.DefaultDeadlines.E2E,
		SLOTTFTP95:     analyze.DefaultSLO.TTFTP95,
		SLOE2EP99:      analyze.DefaultSLO.E2EP99,
		SLOGoodput:     analyze.DefaultSLO.GoodputRatio,
		Sim:            sim.DefaultConfig(),
	}
}

// RegisterFlags binds the common flags to o.
func (o *Options) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Target, "target", o.Target, "base URL of the OpenAI-compatible API, including /v1 (default: the built-in simulator)")
	fs.StringVar(&o.Model, "model", o.Model, "model name to request")
	fs.StringVar(&o.API, "api", o.API, "API to call: chat (/v1/chat/completions) or completions (/v1/completions)")
	fs.StringVar(&o.APIKeyEnv, "api-key-env", o.APIKeyEnv, "environment variable that holds the API key (never pass a key as a flag)")
	fs.StringVar(&o.APIKeyFile, "api-key-file", o.APIKeyFile, "file that holds the API key")
	fs.StringVar(&o.CACert, "ca-cert", o.CACert, "PEM file with the CA of a private endpoint")
	fs.BoolVar(&o.Insecure, "insecure", o.Insecure, "skip TLS certificate verification")
	fs.StringArrayVar(&o.Headers, "header", o.Headers, "extra request header \"Name: value\" (repeatable; values are never logged)")
	fs.BoolVar(&o.Stream, "stream", o.Stream, "stream responses (needed for TTFT and ITL)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "per-request timeout (a timed-out request is a failure)")
	fs.IntVar(&o.Retries, "retries", o.Retries, "retries after 429/5xx/connection errors, honouring Retry-After (0 = off; every attempt is counted)")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", o.MaxInFlight, "in-flight cap; an arrival beyond it is recorded as generator_drop, never delayed")
	fs.DurationVar(&o.Spin, "spin", o.Spin, "spin this long before each arrival for sub-millisecond send precision (costs a core; 0 = off)")
	fs.StringVar(&o.Profile, "profile", o.Profile, "workload profile: "+strings.Join(workload.Names(), ", "))
	fs.IntVar(&o.PromptTokens, "prompt-tokens", o.PromptTokens, "fixed prompt length in tokens, replacing the profile's distribution (0 = the profile's)")
	fs.IntVar(&o.OutputTokens, "output-tokens", o.OutputTokens, "fixed output length (max_tokens), replacing the profile's distribution (0 = the profile's)")
	fs.BoolVar(&o.IgnoreEOS, "ignore-eos", o.IgnoreEOS, "ask the server to generate exactly max_tokens (vLLM and the simulator honour it)")
	fs.BoolVar(&o.NoNonce, "no-nonce", o.NoNonce, "let prompts share prefixes (to test prefix caching; by default every prompt is unique)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of schedules, workload and simulator (same seed, same run)")
	fs.StringVarP(&o.Out, "out", "o", o.Out, "output folder (default out/<command>-<date>-<time>)")
	fs.StringVar(&o.MetricsURL, "metrics-url", o.MetricsURL, "engine Prometheus endpoint to scrape (e.g. http://host:8000/metrics)")
	fs.StringVar(&o.MetricsPreset, "metrics-preset", o.MetricsPreset, "engine metric names: vllm, sglang, tgi, llamacpp, sim (default: detect)")
	fs.StringArrayVar(&o.MetricOverride, "metric", o.MetricOverride, "override one engine metric name, logical=name (e.g. waiting=my_queue_len; repeatable)")
	fs.DurationVar(&o.ScrapeInterval, "scrape-interval", o.ScrapeInterval, "engine metrics scrape period")
	fs.DurationVar(&o.Window, "window", o.Window, "analysis window by arrival time")
	fs.DurationVar(&o.TTFTDeadline, "ttft-deadline", o.TTFTDeadline, "per-request deadline: first content token within this of the scheduled arrival")
	fs.DurationVar(&o.E2EDeadline, "e2e-deadline", o.E2EDeadline, "per-request deadline: completion within this of the scheduled arrival")
	fs.DurationVar(&o.SLOTTFTP95, "slo-ttft-p95", o.SLOTTFTP95, "SLO: p95 TTFT from schedule at most this (0 = not checked)")
	fs.DurationVar(&o.SLOE2EP99, "slo-e2e-p99", o.SLOE2EP99, "SLO: p99 completion from schedule at most this (0 = not checked)")
	fs.Float64Var(&o.SLOGoodput, "slo-goodput", o.SLOGoodput, "SLO: goodput at least this fraction of offered (0 = not checked)")
	fs.StringVar(&o.PrometheusAddr, "prometheus-addr", o.PrometheusAddr, "serve live run values as Prometheus metrics on this address (e.g. 127.0.0.1:9099)")
	fs.BoolVarP(&o.Quiet, "quiet", "q", o.Quiet, "no live view")
	fs.StringVar(&o.Deployment, "deployment", o.Deployment, "recorded in the manifest: serverless, dedicated, self-managed, …")
	fs.StringVar(&o.Hardware, "hardware", o.Hardware, "recorded in the manifest: accelerator type and count, if known")
	fs.StringVar(&o.ServingConfig, "serving-config", o.ServingConfig, "recorded in the manifest: engine version and settings, if known")
	o.Sim.RegisterFlags(fs)
}

// Validate checks the options; errors name the flag.
func (o *Options) Validate() error {
	var errs []string
	bad := func(flag, format string, a ...any) {
		errs = append(errs, "--"+flag+": "+fmt.Sprintf(format, a...))
	}
	if o.Target != "" && !strings.HasPrefix(o.Target, "http://") && !strings.HasPrefix(o.Target, "https://") {
		bad("target", "must be an http:// or https:// URL, got %q", o.Target)
	}
	if o.API != "chat" && o.API != "completions" {
		bad("api", "must be chat or completions, got %q", o.API)
	}
	if o.Timeout <= 0 {
		bad("timeout", "must be > 0, got %s", o.Timeout)
	}
	if o.Retries < 0 || o.Retries > 10 {
		bad("retries", "must be 0..10, got %d", o.Retries)
	}
	if o.MaxInFlight < 1 {
		bad("max-in-flight", "must be ≥ 1, got %d", o.MaxInFlight)
	}
	if o.Spin < 0 || o.Spin > 10*time.Millisecond {
		bad("spin", "must be 0..10ms, got %s", o.Spin)
	}
	if _, err := workload.Lookup(o.Profile); err != nil {
		bad("profile", "unknown profile %q (have %s)", o.Profile, strings.Join(workload.Names(), ", "))
	}
	if o.PromptTokens < 0 || o.PromptTokens > 1_000_000 {
		bad("prompt-tokens", "must be 0..1000000, got %d", o.PromptTokens)
	}
	if o.OutputTokens < 0 || o.OutputTokens > 1_000_000 {
		bad("output-tokens", "must be 0..1000000, got %d", o.OutputTokens)
	}
	if o.ScrapeInterval < 100*time.Millisecond {
		bad("scrape-interval", "must be ≥ 100ms, got %s", o.ScrapeInterval)
	}
	if o.Window < 100*time.Millisecond {
		bad("window", "must be ≥ 100ms, got %s", o.Window)
	}
	if o.TTFTDeadline <= 0 {
		bad("ttft-deadline", "must be > 0, got %s", o.TTFTDeadline)
	}
	if o.E2EDeadline <= 0 {
		bad("e2e-deadline", "must be > 0, got %s", o.E2EDeadline)
	}
	if o.SLOTTFTP95 < 0 {
		bad("slo-ttft-p95", "must be ≥ 0, got %s", o.SLOTTFTP95)
	}
	if o.SLOE2EP99 < 0 {
		bad("slo-e2e-p99", "must be ≥ 0, got %s", o.SLOE2EP99)
	}
	if o.SLOGoodput < 0 || o.SLOGoodput > 1 {
		bad("slo-goodput", "must be within 0..1, got %g", o.SLOGoodput)
	}
	for _, h := range o.Headers {
		if name, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(name) == "" {
			bad("header", "must be \"Name: value\" (value not shown)")
		}
	}
	if o.Target == "" {
		o.Sim.Seed = o.Seed
		if err := o.Sim.Validate(); err != nil {
			errs = append(errs, SimFlagError(err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// SimFlagError rewrites a simulator config error "sim: max_num_seqs: …" to
// name the flag: "--max-num-seqs (sim: max_num_seqs): …".
func SimFlagError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "sim: ")
	if name, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(name, " ") {
		return "--" + strings.ReplaceAll(name, "_", "-") + " (sim: " + name + "): " + rest
	}
	return err.Error()
}

// profile is the workload profile with the fixed lengths applied.
func (o *Options) profile() (workload.Profile, error) {
	p, err := workload.Lookup(o.Profile)
	if err != nil {
		return p, err
	}
	if o.PromptTokens > 0 {
		p.Prompt = workload.Fixed(o.PromptTokens)
	}
	if o.OutputTokens > 0 {
		p.Output = workload.Fixed(o.OutputTokens)
		p.MaxTokens = o.OutputTokens
	}
	return p, p.Validate()
}

func (o *Options) deadlines() analyze.Deadlines {
	return analyze.Deadlines{TTFT: o.TTFTDeadline, E2E: o.E2EDeadline}
}

func (o *Options) slo() analyze.SLO {
	return analyze.SLO{TTFTP95: o.SLOTTFTP95, E2EP99: o.SLOE2EP99, GoodputRatio: o.SLOGoodput}
}
