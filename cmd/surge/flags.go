package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// flags binds command-line flags to config fields and remembers which
// field (by YAML key) each flag sets, so that a field error names the flag
// the user typed — without parsing error text.
type flags struct {
	fs    *pflag.FlagSet
	byKey map[string]string // field path → flag name
	sim   map[string]bool   // field paths of simulator settings ("(sim: key)")
	file  *string           // the -f experiment file, when the command has one

	path string                // the file applied (apply), "" for none
	keys map[string]*yaml.Node // its top-level keys
}

func newFlags(fs *pflag.FlagSet) *flags {
	return &flags{fs: fs, byKey: map[string]string{}, sim: map[string]bool{}}
}

func (f *flags) bind(key, name string) {
	if _, ok := f.byKey[key]; !ok {
		f.byKey[key] = name
	}
}

func (f *flags) str(p *string, key, name, usage string) {
	f.fs.StringVar(p, name, *p, usage)
	f.bind(key, name)
}

func (f *flags) boolean(p *bool, key, name, usage string) {
	f.fs.BoolVar(p, name, *p, usage)
	f.bind(key, name)
}

func (f *flags) dur(p *time.Duration, key, name, usage string) {
	f.fs.DurationVar(p, name, *p, usage)
	f.bind(key, name)
}

func (f *flags) f64(p *float64, key, name, usage string) {
	f.fs.Float64Var(p, name, *p, usage)
	f.bind(key, name)
}

func (f *flags) integer(p *int, key, name, usage string) {
	f.fs.IntVar(p, name, *p, usage)
	f.bind(key, name)
}

// lengthValue is a token-length flag: a count or a distribution
// (workload.ParseDist).
type lengthValue struct{ p *workload.Length }

func (v lengthValue) String() string {
	if v.p == nil {
		return "0"
	}
	return v.p.String()
}
func (v lengthValue) Set(s string) error { return v.p.UnmarshalText([]byte(s)) }
func (lengthValue) Type() string         { return "tokens" }

// mixValue is the --mix flag: name=weight pairs (workload.ParseMix).
type mixValue struct{ p *workload.Mix }

func (v mixValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}
func (v mixValue) Set(s string) error { return v.p.UnmarshalText([]byte(s)) }
func (mixValue) Type() string         { return "profile=weight,..." }

func (f *flags) length(p *workload.Length, key, name, usage string) {
	f.fs.Var(lengthValue{p}, name, usage)
	f.bind(key, name)
}

// thinkValue is a think-time flag: a duration or a distribution of
// durations (workload.ParseThink).
type thinkValue struct{ p *workload.Think }

func (v thinkValue) String() string {
	if v.p == nil {
		return "0"
	}
	return v.p.String()
}
func (v thinkValue) Set(s string) error { return v.p.UnmarshalText([]byte(s)) }
func (thinkValue) Type() string         { return "duration|dist" }

// countValue is a count flag that also takes a distribution (turns).
type countValue struct{ lengthValue }

func (countValue) Type() string { return "count|dist" }

func (f *flags) strings(p *[]string, key, name, usage string) {
	f.fs.StringArrayVar(p, name, *p, usage)
	f.bind(key, name)
}

func (f *flags) floats(p *[]float64, key, name, usage string) {
	f.fs.Var(&listValue[float64]{p: p, parse: func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, kind: "numbers", eg: "2,5,10"}, name, usage)
	f.bind(key, name)
}

func (f *flags) ints(p *[]int, key, name, usage string) {
	f.fs.Var(&listValue[int]{p: p, parse: strconv.Atoi, kind: "whole numbers", eg: "1,2,4"}, name, usage)
	f.bind(key, name)
}

// listValue is a comma-separated list flag (repeatable: each use adds
// to the list after the first replaces the default), whose error says
// what a list looks like rather than quoting strconv.
type listValue[T int | float64] struct {
	p       *[]T
	parse   func(string) (T, error)
	kind    string // "numbers"
	eg      string // "2,5,10"
	changed bool
}

func (v *listValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	parts := make([]string, len(*v.p))
	for i, x := range *v.p {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (v *listValue[T]) Set(s string) error {
	var out []T
	for _, part := range strings.Split(s, ",") {
		x, err := v.parse(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("want %s separated by commas, e.g. %s; %q is not one", v.kind, v.eg, strings.TrimSpace(part))
		}
		out = append(out, x)
	}
	if v.changed {
		out = append(*v.p, out...)
	}
	*v.p, v.changed = out, true
	return nil
}

// Append, Replace and GetSlice make it a pflag.SliceValue, so that a
// YAML file's values and the command line's merge item by item.
func (v *listValue[T]) Append(s string) error {
	x, err := v.parse(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want %s, e.g. %s; %q is not one", v.kind, v.eg, s)
	}
	*v.p = append(*v.p, x)
	return nil
}

func (v *listValue[T]) Replace(items []string) error {
	out := make([]T, 0, len(items))
	for _, s := range items {
		x, err := v.parse(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want %s, e.g. %s; %q is not one", v.kind, v.eg, s)
		}
		out = append(out, x)
	}
	*v.p = out
	return nil
}

func (v *listValue[T]) GetSlice() []string {
	out := make([]string, len(*v.p))
	for i, x := range *v.p {
		out[i] = fmt.Sprint(x)
	}
	return out
}

func (v *listValue[T]) Type() string {
	if v.kind == "numbers" {
		return "numbers"
	}
	return "ints"
}

func (f *flags) value(v pflag.Value, key, name, usage string) {
	f.fs.Var(v, name, usage)
	f.bind(key, name)
}

// fileFlag adds -f, the YAML experiment file.
func (f *flags) fileFlag(p *string) {
	f.fs.StringVarP(p, "file", "f", "", "YAML experiment file (strict: unknown fields are errors; flags win over it)")
	f.file = p
}

// apply reads the YAML file at path into dst (applyConfigFile: strict,
// flags win) and remembers its keys, so that a field error about a value
// the file set names the file, line and key rather than a flag the user
// did not type.
func (f *flags) apply(path string, dst any) (map[string]*yaml.Node, error) {
	keys, err := applyConfigFile(f.fs, path, dst)
	if err == nil && path != "" {
		f.path, f.keys = path, keys
	}
	return keys, err
}

// fromFile returns the node of the value the file gives the field path
// key ("rate", "sim.max_num_seqs"), if it gives one.
func (f *flags) fromFile(key string) (*yaml.Node, bool) {
	parts := strings.Split(key, ".")
	n, ok := f.keys[parts[0]]
	for _, p := range parts[1:] {
		if !ok || n.Kind != yaml.MappingNode {
			return nil, false
		}
		ok = false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				n, ok = n.Content[i+1], true
				break
			}
		}
	}
	return n, ok
}

// set reports whether the user set the flag of the field key.
func (f *flags) set(key string) bool {
	name, ok := f.byKey[key]
	return ok && f.fs.Changed(name)
}

// warnSimulatorOnly writes one line to w when target is set and
// simulator flags were given: they configure the built-in simulator only,
// and would otherwise be ignored without a word.
func (f *flags) warnSimulatorOnly(w io.Writer, target string) {
	if target == "" {
		return
	}
	var names []string
	for key := range f.sim {
		if name, ok := f.byKey[key]; ok && f.fs.Changed(name) {
			names = append(names, "--"+name)
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	verb := "applies"
	if len(names) > 1 {
		verb = "apply"
	}
	fmt.Fprintf(w, "warning: %s %s to the built-in simulator only; ignored with --target\n", strings.Join(names, ", "), verb)
}

// explain turns a configuration error into a usage error (exit 2) that
// names, for each field error, the flag that sets it — "--rate: must be
// > 0" — or, when the value came from the YAML file (the flag not given),
// the file, line and key — "exp.yaml:3: rate: must be > 0" — and for a
// setting only a YAML file has, the file and key.
func (f *flags) explain(err error) error {
	var ce *run.ConfigError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	es, ok := field.As(err)
	if !ok {
		return &exitError{exitUsage, err}
	}
	var lines []string
	for _, e := range es {
		lines = append(lines, f.line(e))
	}
	return &exitError{exitUsage, errors.New(strings.Join(lines, "\n"))}
}

func (f *flags) line(e *field.Error) string {
	name, ok := f.byKey[e.Field]
	if ok && !f.fs.Changed(name) {
		if n, in := f.fromFile(e.Field); in {
			return fmt.Sprintf("%s:%d: %s: %s", f.path, n.Line, e.Field, e.Message)
		}
	}
	switch {
	case ok && f.sim[e.Field]:
		return fmt.Sprintf("--%s (sim: %s): %s", name, strings.TrimPrefix(e.Field, "sim."), f.simFlags(e.Field, e.Message))
	case ok:
		return fmt.Sprintf("--%s: %s", name, e.Message)
	case e.Field == "":
		return e.Message
	case f.path != "":
		return fmt.Sprintf("%s: %s: %s", f.path, e.Field, e.Message)
	case f.file != nil && *f.file != "":
		return fmt.Sprintf("%s: %s: %s", *f.file, e.Field, e.Message)
	}
	return e.Field + ": " + e.Message
}

// simRef matches what a simulator message calls another setting: a
// snake_case key ("min_replicas") or a switch turned on ("autoscale: true").
var simRef = regexp.MustCompile(`\b[a-z][a-z0-9]*(_[a-z0-9]+)+\b|\b[a-z]+: true\b`)

// simFlags rewrites, in the message of a simulator flag the user typed,
// the other simulator settings it names into their flags, as the user
// would type them: "needs autoscale: true" → "needs --autoscale",
// "≥ min_replicas (2)" → "≥ --min-replicas (2)".
func (f *flags) simFlags(field, msg string) string {
	prefix := field[:strings.LastIndex(field, ".")+1]
	return simRef.ReplaceAllStringFunc(msg, func(ref string) string {
		key := prefix + strings.TrimSuffix(ref, ": true")
		if name, ok := f.byKey[key]; ok && f.sim[key] {
			return "--" + name
		}
		return ref
	})
}

// options binds the flags every experiment shares.
func (f *flags) options(o *run.Options) {
	f.target(o)
	f.boolean(&o.Stream, "stream", "stream", "stream responses (needed for TTFT and ITL)")
	f.integer(&o.Retries, "retries", "retries", "retries after 429/5xx/connection errors, honouring Retry-After (0 = off; every attempt is counted)")
	f.integer(&o.MaxInFlight, "max_in_flight", "max-in-flight", "in-flight cap; an arrival beyond it is recorded as generator_drop, never delayed")
	f.dur(&o.Spin, "spin", "spin", "spin this long before each arrival for sub-millisecond send precision (costs a core; 0 = off)")
	f.str(&o.HTTPClient, "http_client", "http-client", "HTTP client: auto (surge's own HTTP/1.1 client for http:// without a proxy, Go's net/http otherwise), surge (surge's own, http and https) or go (net/http: HTTP/2, proxies)")
	f.str(&o.GatewayTiming, "gateway_timing", "gateway-timing", "how a gateway in front of the engine announces its own wait and the upstream's time: auto (the first of these a response carries), off, kong, envoy, litellm, server-timing, or header:WAIT / header:TOTAL,UPSTREAM (your gateway's headers; a bare number is ms, or write a unit: 12ms, 0.012s)")
	f.str(&o.Profile, "profile", "profile", "workload profile: "+strings.Join(workload.Names(), ", ")+", or one defined under profiles: in the -f file")
	f.value(mixValue{&o.Mix}, "mix", "mix", "send a weighted mix of profiles instead of one, each request labelled with its profile and every table split by profile, e.g. --mix chat=0.7,rag=0.2,longgen=0.1 (weights ≥ 0, normalised; profiles built in or defined under profiles: in the -f file; not with --profile)")
	f.length(&o.PromptTokens, "prompt_tokens", "prompt-tokens", "prompt length in tokens, replacing the profile's distribution (with --mix: every profile's): a count (200) or a distribution — uniform:min=100,max=400, normal:mean=500,sd=120, lognormal:median=800,p95=6000, empirical:FILE (a tokens,count CSV from your logs); 0 = the profile's")
	f.length(&o.OutputTokens, "output_tokens", "output-tokens", "output length (max_tokens) in tokens, replacing the profile's distribution (with --mix: every profile's): a count or a distribution as for --prompt-tokens (max_tokens = each draw); 0 = the profile's")
	f.value(countValue{lengthValue{&o.Inputs}}, "inputs", "inputs", "with --api embeddings or rerank: texts per request (embeddings) or documents per query (rerank), a count or a distribution as for --prompt-tokens, each text of the prompt length; 0 = 1 for embeddings, 8 for rerank")
	f.integer(&o.QueryTokens, "query_tokens", "query-tokens", "with --api rerank: the query's length in tokens (0 = 32)")
	f.value(countValue{lengthValue{&o.Images}}, "images", "images", "images per request beside the text (chat, responses, messages): a count or a distribution, e.g. --images 2 or uniform:min=1,max=4; generated locally, inline as base64; 0 = none")
	f.str(&o.ImageSize, "image_size", "image-size", "the images' size in pixels, WIDTHxHEIGHT (default 512x512)")
	f.str(&o.ImageFormat, "image_format", "image-format", "the images' format: png (default) or jpeg")
	f.boolean(&o.IgnoreEOS, "ignore_eos", "ignore-eos", "ask the server to generate exactly max_tokens (vLLM and the simulator honour it)")
	f.str(&o.PromptCalibration, "prompt_calibration", "prompt-calibration", "size prompts in the target's own tokens, measured before the first run: auto (/tokenize where the server has it, else probe requests), tokenize, probe, or off (surge's 4-bytes-per-token estimate); e.g. --prompt-tokens 200 --prompt-calibration probe")
	f.boolean(&o.NoNonce, "no_nonce", "no-nonce", "let prompts share prefixes (to test prefix caching; by default every prompt is unique); with --dataset: send the rows verbatim")
	f.integer(&o.SharedPrefix, "shared_prefix", "shared-prefix", "start every prompt with the same text of this many tokens (a common system prompt a prefix cache can reuse), then the per-request nonce and a unique body; the prompt keeps its drawn length, e.g. --shared-prefix 2000 --prompt-tokens 2500 (0 = none: every prompt unique from its first token)")
	f.str(&o.Dataset, "dataset", "dataset", "send real prompts from this file instead of synthetic ones (needs --dataset-format), e.g. --dataset ShareGPT_V3.json --dataset-format sharegpt; each record keeps the row number (dataset_row), never the text")
	f.str(&o.DatasetFormat, "dataset_format", "dataset-format", "format of --dataset: sharegpt (JSON array or JSONL of conversations; the first human turn), openai-jsonl (one chat request body per line: messages, tools, tool_choice, response_format, max_tokens), prompts-jsonl ({\"prompt\": …} per line); for --api embeddings texts-jsonl ({\"text\": …} or {\"texts\": […]} per line), for --api rerank rerank-jsonl ({\"query\": …, \"documents\": […]} per line)")
	f.str(&o.DatasetSample, "dataset_sample", "dataset-sample", "order of the dataset's rows, seeded by --seed: shuffle (every row once per pass, without replacement), random (with replacement), sequential (file order)")
	f.integer(&o.MaxTokensCap, "max_tokens_cap", "max-tokens-cap", "cap every request's max_tokens, a dataset row's or the profile's draw, e.g. --max-tokens-cap 512 (0 = no cap beyond the profile's)")
	f.boolean(&o.Sessions, "sessions", "sessions", "each arrival starts a multi-turn session: turn 1 is the profile's prompt, every later turn resends the conversation so far plus a new user message after the answer and a think time (sessions start open-loop, turns are closed-loop; docs/sessions.md); e.g. --sessions --session-turns uniform:min=2,max=6 --think-time 2s")
	f.value(countValue{lengthValue{&o.SessionTurns}}, "session_turns", "session-turns", "turns per session with --sessions: a count or a distribution (uniform:min=2,max=6, …)")
	f.value(thinkValue{&o.ThinkTime}, "think_time", "think-time", "think time after an answer before the next turn, with --sessions: a duration (2s; 0 = none) or a distribution of durations — uniform:min=1s,max=5s, lognormal:median=2s,p95=20s, normal:mean=3s,sd=1s")
	f.length(&o.TurnTokens, "turn_tokens", "turn-tokens", "tokens of each later user message (and fan-out sub-task) with --sessions: a count or a distribution as for --prompt-tokens")
	f.integer(&o.Fanout, "fanout", "fanout", "with --sessions, each turn also sends this many parallel sub-requests (branches 1..K) sharing the turn's conversation, each with its own short sub-task; the next turn waits for all (0 = none)")
	f.dur(&o.SessionDrain, "session_drain", "session-drain", "with --sessions, a phase \"drain\" after the plan: no session starts in it, sessions already started may still send turns (without it, no turn is sent after the plan ends); e.g. --session-drain 1m")
	f.fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of schedules, workload and simulator (same seed, same run)")
	f.bind("seed", "seed")
	f.fs.StringVarP(&o.Out, "out", "o", o.Out, "output folder (default out/<command>-<date>-<time>-<id>; an existing non-empty one is refused without --force)")
	f.bind("out", "out")
	f.boolean(&o.Force, "force", "force", "reuse a non-empty --out folder: surge's files and run folders in it are replaced")
	f.str(&o.MetricsURL, "metrics_url", "metrics-url", "engine Prometheus endpoint to scrape (e.g. http://host:8000/metrics)")
	f.str(&o.MetricsPreset, "metrics_preset", "metrics-preset", "engine metric names: vllm, sglang, tgi, llamacpp, triton (Triton / TensorRT-LLM), sim, digitalocean (DigitalOcean Insights metrics exported to Prometheus) (default: detect; e.g. --metrics-url http://host:8002/metrics --metrics-preset triton)")
	f.strings(&o.MetricOverride, "metric", "metric", "override one engine metric name, logical=name (e.g. waiting=my_queue_len; repeatable)")
	f.dur(&o.ScrapeInterval, "scrape_interval", "scrape-interval", "engine metrics scrape period")
	f.dur(&o.Window, "window", "window", "analysis window by arrival time")
	f.dur(&o.TTFTDeadline, "ttft_deadline", "ttft-deadline", "per-request deadline: first content token within this of the scheduled arrival")
	f.dur(&o.E2EDeadline, "e2e_deadline", "e2e-deadline", "per-request deadline: completion within this of the scheduled arrival")
	f.dur(&o.TPOTDeadline, "tpot_deadline", "tpot-deadline", "per-request deadline: time per output token within this too (DistServe's goodput), e.g. 100ms; 0 = not a clause")
	f.dur(&o.TokenDeadline, "token_deadline", "token-deadline", "smooth goodput's per-token budget: token i is due at --ttft-deadline + i × this from the scheduled arrival, and a request counts when every token was on time; reported beside goodput, e.g. 50ms; 0 = off")
	f.dur(&o.SLOTTFTP95, "slo_ttft_p95", "slo-ttft-p95", "SLO: p95 TTFT from schedule at most this (0 = not checked)")
	f.dur(&o.SLOE2EP99, "slo_e2e_p99", "slo-e2e-p99", "SLO: p99 completion from schedule at most this (0 = not checked)")
	f.f64(&o.SLOGoodput, "slo_goodput", "slo-goodput", "SLO: goodput at least this fraction of offered (0 = not checked)")
	f.str(&o.PrometheusAddr, "prometheus_addr", "prometheus-addr", "serve live run values as Prometheus metrics on this address (e.g. 127.0.0.1:9099)")
	f.strings(&o.MetricsOut, "metrics_out", "metrics-out", "push live values and per-phase results while runs go: prometheus-rw=URL (Prometheus remote-write, e.g. prometheus-rw=http://127.0.0.1:9090/api/v1/write) or otlp=URL (OTLP metrics over HTTP, e.g. otlp=http://127.0.0.1:4318); repeatable; a failing endpoint is warned about and never slows the run")
	f.str(&o.Web, "web", "web", "serve a live page of the run on this address while it goes: its charts, phase, SLO clauses and in-flight count, updated every second; it becomes the final report.html when the command ends (a port alone, e.g. 8080, listens on loopback; name an interface, e.g. 0.0.0.0:8080, to serve others)")
	f.str(&o.OTLPListen, "otlp_listen", "otlp-listen", "receive the engine's OTLP trace spans here and join them to requests by trace id (e.g. 127.0.0.1:4318 with vllm serve --otlp-traces-endpoint http://127.0.0.1:4318/v1/traces); gRPC and HTTP on one port")
	f.dur(&o.OTLPGrace, "otlp_grace", "otlp-grace", "how long a finished request waits for its span (vLLM exports every 5 s)")
	f.fs.BoolVarP(&o.Quiet, "quiet", "q", o.Quiet, "no live view")
	f.bind("quiet", "quiet")
	f.fs.BoolVar(&o.NoEarlyStop, "no-early-stop", o.NoEarlyStop, "run the whole plan even when the first requests all fail by a cause no load explains (unreachable, not an inference endpoint, …); by default the command stops within seconds and exits 3")
	f.bind("no-early-stop", "no_early_stop")
	f.str(&o.Deployment, "deployment", "deployment", "recorded in the manifest: serverless, dedicated, self-managed, …")
	f.str(&o.Hardware, "hardware", "hardware", "recorded in the manifest: accelerator type and count, if known")
	f.str(&o.ServingConfig, "serving_config", "serving-config", "recorded in the manifest: engine version and settings, if known")
	f.str(&o.WatchK8s, "watch_k8s", "watch-k8s", "the autoscaling timeline of a live run: watch these pods (and the nodes, when you may list them) through kubectl during each run, NAMESPACE/SELECTOR, e.g. --watch-k8s llm/app=vllm; each new pod's milestones from created to first request served go to scaling.json and the report (needs kubectl on PATH; without it the run carries on without a timeline)")
	f.str(&o.ReplicaHeader, "replica_header", "replica-header", "response header naming the replica or pod that answered, by pod name or IP (IP:port too), for the first request each new pod served (default X-Surge-Replica, the simulator's; e.g. X-Upstream-Addr from a proxy's $upstream_addr)")
	f.budget(o)
	f.simulator("sim.", &o.Sim)
	f.shard(o)
}

// shard binds the static-shard flags (run.Options, shard.go).
func (f *flags) shard(o *run.Options) {
	f.str(&o.Shard, "shard", "shard", "send only shard I of N of the schedule: every process computes the whole schedule from the same --seed and sends the arrivals (with --sessions: whole sessions) whose seq mod N is I, into its own folder; join the N folders with surge merge. auto/N takes I from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), e.g. --shard 1/4, --shard auto/4")
	f.str(&o.StartAt, "start_at", "start-at", "wait until this wall-clock time (RFC 3339) before the first run's origin, so that shards on several machines start together (with synchronised clocks, e.g. NTP); a time already past starts at once and says how late, e.g. --start-at 2026-12-02T10:00:00Z (not with --simulate)")
}

// budget binds the budget and price flags (run.Options, budget.go): unset
// means no limit, so that --max-requests 0 is an error, not "none".
func (f *flags) budget(o *run.Options) {
	f.value(optInt{&o.MaxRequests}, "max_requests", "max-requests", "budget for the whole command (every run of an experiment shares it): send at most this many requests, then stop cleanly — no new arrivals, requests in flight finish, the run and its report are marked partial with the reason, later runs are not started (exit 1), e.g. --max-requests 500")
	f.value(optInt{&o.MaxOutputTokens}, "max_output_tokens", "max-output-tokens", "budget for the whole command: at most this many output tokens; each request's max_tokens is reserved before it is sent, so the run stops before the budget would be passed (as --max-requests), e.g. --max-output-tokens 100000")
	f.value(optFloat{&o.MaxCost}, "max_cost", "max-cost", "budget for the whole command in USD at --price-input and --price-output (both required): each request's prompt and max_tokens are reserved before it is sent (as --max-output-tokens), e.g. --max-cost 5 --price-input 0.5 --price-output 1.5")
	f.value(optFloat{&o.PriceInput}, "price_input", "price-input", "price of input (prompt) tokens, USD per million: prices the estimate printed before the experiment and the spend after (no budget needed), and --max-cost")
	f.value(optFloat{&o.PriceOutput}, "price_output", "price-output", "price of output tokens, USD per million (as --price-input)")
}

// optInt is an optional integer flag: nil until given.
type optInt struct{ p **int64 }

func (v optInt) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatInt(**v.p, 10)
}
func (v optInt) Set(s string) error {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil {
		return errors.New("must be a whole number")
	}
	*v.p = &n
	return nil
}
func (optInt) Type() string { return "n" }

// optFloat is an optional number flag: nil until given.
type optFloat struct{ p **float64 }

func (v optFloat) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatFloat(**v.p, 'f', -1, 64)
}
func (v optFloat) Set(s string) error {
	x, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	if err != nil {
		return errors.New("must be a number (USD)")
	}
	*v.p = &x
	return nil
}
func (optFloat) Type() string { return "usd" }

// target binds the flags that say where requests go and how they get
// there, and the per-request timeout: every experiment's and surge check's.
func (f *flags) target(o *run.Options) {
	f.endpoint(o)
	f.dur(&o.Timeout, "timeout", "timeout", "per-request timeout (a timed-out request is a failure)")
}

// endpoint binds where requests go and how they get there (surge
// coldstart bounds its probes otherwise).
func (f *flags) endpoint(o *run.Options) {
	f.str(&o.Target, "target", "target", "base URL of the OpenAI-compatible API, including /v1 (default: the built-in simulator)")
	f.str(&o.Model, "model", "model", "model name to request")
	f.str(&o.API, "api", "api", "API to call: chat (/v1/chat/completions), completions (/v1/completions), responses (/v1/responses, OpenAI's Responses API), messages (/v1/messages, Anthropic's Messages API: x-api-key and anthropic-version headers), embeddings (/v1/embeddings: --inputs texts a request) or rerank (/v1/rerank: a query and --inputs documents)")
	f.str(&o.APIKeyEnv, "api_key_env", "api-key-env", "environment variable that holds the API key (never pass a key as a flag)")
	f.str(&o.APIKeyFile, "api_key_file", "api-key-file", "file that holds the API key")
	f.str(&o.CACert, "ca_cert", "ca-cert", "PEM file with the CA of a private endpoint")
	f.boolean(&o.Insecure, "insecure", "insecure", "skip TLS certificate verification")
	f.strings(&o.Headers, "headers", "header", "extra request header \"Name: value\" (repeatable; values are never logged)")
}

// simulator binds one flag per simulator setting, named as the kebab-case
// of its YAML key (--max-num-seqs, --step-base, ...); prefix is the
// settings' path in the config ("sim." inside the options, "" for surge
// sim). A flag already defined (the experiments' --seed) is left alone.
func (f *flags) simulator(prefix string, c *sim.Config) {
	add := func(key string, bind func(name string)) {
		name := strings.ReplaceAll(key, "_", "-")
		if f.fs.Lookup(name) != nil {
			return
		}
		bind(name)
		f.byKey[prefix+key] = name
		f.sim[prefix+key] = true
	}
	in := func(p *int, key, usage string) {
		add(key, func(n string) { f.fs.IntVar(p, n, *p, usage) })
	}
	du := func(p *time.Duration, key, usage string) {
		add(key, func(n string) { f.fs.DurationVar(p, n, *p, usage) })
	}
	fl := func(p *float64, key, usage string) {
		add(key, func(n string) { f.fs.Float64Var(p, n, *p, usage) })
	}
	add("seed", func(n string) {
		f.fs.Int64Var(&c.Seed, n, c.Seed, "sim: seed of natural output lengths and fault decisions")
	})
	in(&c.MaxNumSeqs, "max_num_seqs", "sim: most sequences in a replica's running batch")
	in(&c.MaxNumBatchedTokens, "max_num_batched_tokens", "sim: token budget per engine step, tokens (decodes + prefill chunks; ≥ max-num-seqs)")
	in(&c.KVCacheTokens, "kv_cache_tokens", "sim: KV-cache capacity per replica, tokens")
	in(&c.MaxModelLen, "max_model_len", "sim: limit of prompt + max_tokens per request, tokens (longer requests get 400)")
	du(&c.StepBase, "step_base", "sim: fixed duration of one engine step")
	du(&c.StepPerDecodeSeq, "step_per_decode_seq", "sim: step duration added per decoding sequence")
	du(&c.StepPerPrefillToken, "step_per_prefill_token", "sim: step duration added per prompt token prefilled")
	fl(&c.OutputMean, "output_mean", "sim: mean natural output length without ignore_eos, tokens (lognormal)")
	fl(&c.OutputSigma, "output_sigma", "sim: lognormal shape σ of the natural output length (0 = fixed)")
	in(&c.MaxWaiting, "max_waiting", "sim: waiting-queue limit per replica, requests; beyond it 429 with Retry-After (0 = unbounded)")
	in(&c.Replicas, "replicas", "sim: replicas ready at start")
	add("autoscale", func(n string) { f.fs.BoolVar(&c.Autoscale, n, c.Autoscale, "sim: enable the autoscaler") })
	in(&c.MinReplicas, "min_replicas", "sim: autoscaler floor, replicas; 0 = scale from zero (with --autoscale: no replica until the first request, which waits through the cold-start delays; back to zero after --scale-down-idle)")
	in(&c.MaxReplicas, "max_replicas", "sim: autoscaler ceiling, replicas (ready + starting)")
	fl(&c.ScaleUpWaiting, "scale_up_waiting", "sim: scale-up threshold, waiting requests per ready replica")
	du(&c.ScaleUpHold, "scale_up_hold", "sim: how long the scale-up threshold must hold continuously")
	du(&c.ScaleRequestDelay, "scale_request_delay", "sim: delay from scale trigger to capacity requested")
	du(&c.NodeReadyDelay, "node_ready_delay", "sim: delay from capacity requested to node ready")
	du(&c.ContainerReadyDelay, "container_ready_delay", "sim: delay from node ready to container ready")
	du(&c.ModelReadyDelay, "model_ready_delay", "sim: delay from container ready to model loaded (serving)")
	du(&c.ScaleDownIdle, "scale_down_idle", "sim: idle time before one replica is removed")
	fl(&c.Fault500, "fault_500", "sim: fraction of requests answered with HTTP 500 (0..1)")
	fl(&c.Fault503, "fault_503", "sim: fraction of requests answered with HTTP 503 (0..1)")
	fl(&c.FaultReset, "fault_reset", "sim: fraction of streams reset mid-stream (0..1)")
	fl(&c.FaultMalformed, "fault_malformed", "sim: fraction of streams with a malformed SSE chunk (0..1)")
	fl(&c.FaultStall, "fault_stall", "sim: fraction of streams that stall mid-stream (0..1)")
	du(&c.FaultStallDelay, "fault_stall_delay", "sim: length of an injected mid-stream stall")
	fl(&c.FaultSlowHeaders, "fault_slow_headers", "sim: fraction of responses with slow headers (0..1)")
	du(&c.FaultSlowHeadersDelay, "fault_slow_headers_delay", "sim: delay of slow response headers")
	in(&c.ReasoningTokens, "reasoning_tokens", "sim: the first N tokens of each chat answer are reasoning (vLLM \"reasoning\" deltas, usage reasoning_tokens), e.g. --reasoning-tokens 32")
	fl(&c.BytesPerToken, "bytes_per_token", "sim: density of the simulated tokenizer, bytes of text per prompt token (e.g. 2.5 for a tokenizer denser than surge's 4-byte estimate)")
	add("tokenize", func(n string) {
		f.fs.StringVar(&c.Tokenize, n, c.Tokenize, "sim: style of the /tokenize endpoint: vllm, llamacpp, or none (then clients calibrate with probe requests)")
	})
	in(&c.PrefixCacheTokens, "prefix_cache_tokens", "sim: prefix cache per replica, tokens: prompt blocks seen before are served from it and only the rest is prefilled; usage reports cached_tokens (0 = off), e.g. --shared-prefix 2000 --prefix-cache-tokens 200000")
	in(&c.PrefixBlockTokens, "prefix_block_tokens", "sim: prefix cache block size, tokens (only whole blocks match, as in vLLM)")
	if f.fs.Lookup("quirk") == nil { // the one setting whose flag is singular: it repeats
		f.fs.StringArrayVar(&c.Quirks, "quirk", c.Quirks, "sim: misbehave on purpose, as some endpoints and proxies do, to see surge check fail (repeatable): "+strings.Join(sim.QuirkNames(), ", ")+"; e.g. --quirk buffered-stream --quirk no-usage (the simulator served over HTTP: a --target is not affected)")
		f.byKey[prefix+"quirks"] = "quirk"
		f.sim[prefix+"quirks"] = true
	}
	in(&c.QuotaRequestsPerMinute, "quota_requests_per_minute", "sim: a gateway in front of the engine with this quota of requests per minute, a token bucket refilling continuously; over quota: 429 with x-ratelimit-*-requests headers and Retry-After (0 = none), e.g. --quota-requests-per-minute 600")
	in(&c.QuotaTokensPerMinute, "quota_tokens_per_minute", "sim: the gateway's quota of tokens per minute (prompt + max_tokens per request; x-ratelimit-*-tokens-per-minute headers; 0 = none)")
	in(&c.QuotaTokensPerDay, "quota_tokens_per_day", "sim: the gateway's quota of tokens per day (x-ratelimit-*-tokens-per-day headers; 0 = none)")
	in(&c.GatewayQueue, "gateway_queue", "sim: requests over quota that wait at the gateway for the buckets to refill, in order, instead of a 429 (0 = refuse at once)")
	add("gateway_headers", func(n string) {
		f.fs.StringVar(&c.GatewayHeaders, n, c.GatewayHeaders, "sim: how the gateway announces its wait: "+strings.Join(sim.GatewayHeaderStyles, ", ")+" (default server-timing)")
	})
	fl(&c.SlowdownPerHour, "slowdown_per_hour", "sim: engine steps get this much slower per hour since start (0.5 = 50% slower after 1 h; models a leak, for soak tests)")
}
