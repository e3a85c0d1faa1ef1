package scrape

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

// Spec says where a logical metric is found in an engine's exposition.
type Spec struct {
	// Names are the engine metric (family) names to look for, in order; the
	// first one present in a scrape wins. A counter name is also tried with
	// its "_total" suffix added or removed.
	Names []string
	// Percent marks a gauge exported as 0..100 rather than 0..1 (kv_usage);
	// the value is divided by 100.
	Percent bool
	// Optional marks a metric that some versions of the engine do not export;
	// its absence is logged at info level instead of as a warning.
	Optional bool
	// Why, for an Optional metric, says in that note why it may be absent;
	// empty means "recent builds removed it".
	Why string
	// CountNames, for a histogram metric, reads it from two cumulative
	// counters instead of a histogram (Triton's latency counters): the sum
	// is the counter in Names times SumScale (to seconds), the count the
	// first of CountNames present. Such a histogram has no buckets: a phase
	// gets its mean, Δsum / Δcount, and no quantiles.
	CountNames []string
	// SumScale converts the sum counter of a CountNames metric to seconds
	// (1e-6 for microseconds); 0 means 1.
	SumScale float64
}

// Preset maps surge's logical metrics to the metric names of one engine.
// A logical metric absent from Specs is not exported by that engine at all.
type Preset struct {
	Name  string
	Specs map[Metric]Spec
}

// PresetAuto is the preset name that picks, at the first successful scrape,
// the known preset whose metrics the endpoint exports most of.
const PresetAuto = "auto"

// DefaultPreset is the preset used when Config.Preset is empty.
const DefaultPreset = PresetAuto

func vllmSpecs() map[Metric]Spec {
	return map[Metric]Spec{
		Waiting: {Names: []string{"vllm:num_requests_waiting"}},
		Running: {Names: []string{"vllm:num_requests_running"}},
		// vLLM's "_perc" gauges are fractions 0..1 despite the name. The
		// V1 engine renamed gpu_cache_usage_perc to kv_cache_usage_perc.
		KVUsage:          {Names: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
		QueueTime:        {Names: []string{"vllm:request_queue_time_seconds"}},
		TTFT:             {Names: []string{"vllm:time_to_first_token_seconds"}},
		E2E:              {Names: []string{"vllm:e2e_request_latency_seconds"}},
		PromptTokens:     {Names: []string{"vllm:prompt_tokens_total"}},
		GenerationTokens: {Names: []string{"vllm:generation_tokens_total"}},
		Success:          {Names: []string{"vllm:request_success_total"}},
	}
}

// tritonSpecs maps NVIDIA Triton Inference Server's metrics (port 8002,
// /metrics; docs/user_guide/metrics.md) and its TensorRT-LLM backend's
// batch-manager gauges (tensorrtllm_backend README, "Triton metrics").
// Triton's latencies are cumulative counters in microseconds, not
// histograms: a phase's mean queue wait is Δnv_inference_queue_duration_us
// / Δnv_inference_request_success. The TensorRT-LLM backend takes requests
// off Triton's queue at once and queues them itself, so its waiting gauge
// wins over Triton's pending count where both exist.
func tritonSpecs() map[Metric]Spec {
	return map[Metric]Spec{
		Waiting: {Names: []string{`nv_trt_llm_request_metrics{request_type="waiting"}`, "nv_inference_pending_request_count"}},
		// TensorRT-LLM only: requests the batch manager holds (active), or
		// those scheduled in the last iteration.
		Running:   {Names: []string{`nv_trt_llm_request_metrics{request_type="active"}`, `nv_trt_llm_request_metrics{request_type="scheduled"}`}, Optional: true},
		KVUsage:   {Names: []string{`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}`}, Optional: true},
		QueueTime: {Names: []string{"nv_inference_queue_duration_us"}, CountNames: []string{"nv_inference_request_success"}, SumScale: 1e-6},
		E2E:       {Names: []string{"nv_inference_request_duration_us"}, CountNames: []string{"nv_inference_request_success"}, SumScale: 1e-6},
		Success:   {Names: []string{"nv_inference_request_success"}},
		// No token counters and no TTFT in Triton's own metrics
		// (nv_inference_first_response_histogram_ms is off by default and
		// counts responses, not tokens).
	}
}

// The DigitalOcean names are those of its Insights telemetry reference,
// https://docs.digitalocean.com/products/insights/reference/telemetry/ (one
// page per product, generated 19 Nov 2026), scraped from whatever serves
// them as Prometheus text.
const (
	// doRequestDuration is Serverless Inference's request-duration
	// histogram (seconds; _bucket, _count: .../telemetry/serverless-inference/),
	// labelled http.response.status.code, http.route,
	// serverless_inference.model.name, serverless_inference.provider,
	// serverless_inference.status and resource.urn.
	doRequestDuration = "do.serverless_inference.http_request_duration"
	// doPoolInstances is a PLACEHOLDER, not a name from DigitalOcean's
	// reference: the Droplet Autoscale page (.../telemetry/droplet-autoscale/)
	// lists do.droplet_autoscale_pool.average_cpu_utilization, but no
	// instance-count metric could be read from it. The name follows the
	// Monitoring API's "Get Droplet Autoscale Pool Current Size" endpoint,
	// /v2/monitoring/metrics/droplet_autoscale/current_instances.
	doPoolInstances = "do.droplet_autoscale_pool.current_instances"
)

// digitaloceanSpecs maps DigitalOcean's Insights telemetry. Each name is
// listed as DigitalOcean spells it (UTF-8, with dots) and as an exporter
// escapes it for surge, whose Accept header asks for text format 0.0.4
// without escaping=allow-utf-8: dots in metric and label names become
// underscores (prometheus/common model.UnderscoreEscaping).
//
// Not read, because no logical metric means the same: Dedicated
// Inference's GPU gauges (do.dedicated_inference.gpu_occupancy, a
// percentage; gpu_tensor_utilization, a fraction; gpu_vram_free;
// gpu_junction_temperature, gpu_memory_temperature;
// .../telemetry/dedicated-inference/) and Inference Router's
// do.inference_router.cache_hit_requests_total (.../telemetry/inference-router/).
// The parts of those pages that could be read list no queue, batch,
// KV-cache, token or TTFT series (where a Dedicated Inference deployment's
// own vLLM metrics are reachable, the vllm preset reads them).
func digitaloceanSpecs() map[Metric]Spec {
	return map[Metric]Spec{
		// Only the status-200 series: a 429 or 5xx is answered before or
		// instead of the model, in a fraction of a success's time, and
		// would pull the engine's latency down exactly when the service
		// is overloaded. Summed over routes, models and providers.
		E2E: {Names: []string{
			doRequestDuration + `{http.response.status.code="200"}`,
			escaped(doRequestDuration) + `{` + escaped("http.response.status.code") + `="200"}`,
		}},
		// Droplets in the autoscale pool, summed over pools.
		Replicas: {Names: []string{doPoolInstances, escaped(doPoolInstances)}, Optional: true,
			Why: "only a Droplet autoscale pool exports it, and its name is a placeholder: name the real one with --metric replicas=NAME"},
	}
}

// escaped is a metric or label name as an exporter sends it to a scraper
// that does not accept UTF-8 names.
func escaped(name string) string { return model.EscapeName(name, model.UnderscoreEscaping) }

// presets lists the built-in presets. The order is the tie-break order of
// auto-detection: sim only wins over vllm when surge_sim_replicas is present.
//
// The names are the best known as of 2025–2026 (vLLM 0.6–0.10 V0/V1 engines,
// SGLang 0.4–0.5, TGI 2–3, llama.cpp server with --metrics); engines rename
// metrics between versions, hence alternatives, auto-detection and
// --metric overrides.
var presets = []Preset{
	{Name: "vllm", Specs: vllmSpecs()},
	{Name: "sim", Specs: func() map[Metric]Spec {
		s := vllmSpecs()
		s[Replicas] = Spec{Names: []string{"surge_sim_replicas"}}
		s[ReplicasStarting] = Spec{Names: []string{"surge_sim_replicas_starting"}}
		return s
	}()},
	{Name: "sglang", Specs: map[Metric]Spec{
		Waiting: {Names: []string{"sglang:num_queue_reqs"}},
		Running: {Names: []string{"sglang:num_running_reqs"}},
		KVUsage: {Names: []string{"sglang:token_usage"}},
		// Older SGLang releases have no queue-time histogram.
		QueueTime:        {Names: []string{"sglang:queue_time_seconds"}, Optional: true},
		TTFT:             {Names: []string{"sglang:time_to_first_token_seconds"}},
		E2E:              {Names: []string{"sglang:e2e_request_latency_seconds"}},
		PromptTokens:     {Names: []string{"sglang:prompt_tokens_total"}},
		GenerationTokens: {Names: []string{"sglang:generation_tokens_total"}},
		// No success counter: sglang:num_requests_total counts every
		// finished request, aborted ones included.
	}},
	{Name: "tgi", Specs: map[Metric]Spec{
		Waiting:   {Names: []string{"tgi_queue_size"}},
		Running:   {Names: []string{"tgi_batch_current_size"}},
		QueueTime: {Names: []string{"tgi_request_queue_duration"}},
		E2E:       {Names: []string{"tgi_request_duration"}},
		// TGI exports token counts as per-request histograms; their _sum
		// is the cumulative total.
		PromptTokens:     {Names: []string{"tgi_request_input_length"}},
		GenerationTokens: {Names: []string{"tgi_request_generated_tokens"}},
		Success:          {Names: []string{"tgi_request_success"}},
		// No KV-cache gauge and no TTFT histogram in TGI.
	}},
	{Name: "llamacpp", Specs: map[Metric]Spec{
		Waiting: {Names: []string{"llamacpp:requests_deferred"}},
		Running: {Names: []string{"llamacpp:requests_processing"}},
		// Removed from /metrics in recent llama.cpp builds.
		KVUsage:          {Names: []string{"llamacpp:kv_cache_usage_ratio"}, Optional: true},
		PromptTokens:     {Names: []string{"llamacpp:prompt_tokens_total"}},
		GenerationTokens: {Names: []string{"llamacpp:tokens_predicted_total"}},
		// No latency histograms and no success counter in llama.cpp.
	}},
	{Name: "triton", Specs: tritonSpecs()},
	{Name: "digitalocean", Specs: digitaloceanSpecs()},
}

// PresetNames lists the accepted preset names, auto first.
func PresetNames() []string {
	out := []string{PresetAuto}
	for _, p := range presets {
		out = append(out, p.Name)
	}
	return out
}

// LookupPreset returns a copy of the built-in preset with the given name.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p.clone(), true
		}
	}
	return Preset{}, false
}

func (p Preset) clone() Preset {
	c := Preset{Name: p.Name, Specs: make(map[Metric]Spec, len(p.Specs))}
	for m, s := range p.Specs {
		s.Names = slices.Clone(s.Names)
		s.CountNames = slices.Clone(s.CountNames)
		c.Specs[m] = s
	}
	return c
}

// WithOverrides returns a copy of p where each overridden logical metric is
// looked up under the given name only (a trailing "%" marks a percent gauge).
// Overrides may add metrics the preset does not map.
func (p Preset) WithOverrides(overrides map[string]string) (Preset, error) {
	c := p.clone()
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m, ok := ParseMetric(k)
		if !ok {
			return Preset{}, fmt.Errorf("scrape: metric override %q: unknown logical metric (want one of %s)", k, metricList())
		}
		name, pct, err := overrideName(overrides[k])
		if err != nil {
			return Preset{}, fmt.Errorf("scrape: metric override \"%s=%s\": %w", k, overrides[k], err)
		}
		if pct && m != KVUsage {
			return Preset{}, fmt.Errorf("scrape: metric override \"%s=%s\": a %% suffix only applies to kv_usage", k, overrides[k])
		}
		c.Specs[m] = Spec{Names: []string{name}, Percent: pct}
	}
	return c, nil
}

// overrideName validates an override's metric name and strips a trailing
// "%" (percent marker).
func overrideName(v string) (name string, percent bool, err error) {
	name = strings.TrimSpace(v)
	if n, ok := strings.CutSuffix(name, "%"); ok {
		name, percent = n, true
	}
	if name == "" {
		return "", false, fmt.Errorf("empty metric name")
	}
	if !utf8.ValidString(name) {
		return "", false, fmt.Errorf("metric name is not valid UTF-8")
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || r == '"' || r == '{' || r == '}' || r == '='
	}); i >= 0 {
		return "", false, fmt.Errorf("metric name %q contains %q", name, name[i:i+1])
	}
	return name, percent, nil
}

// ParseOverrides parses --metric items of the form LOGICAL=NAME (for
// example "waiting=my_queue_len", or "kv_usage=my_kv_percent%" for a gauge
// exported as 0..100) into a map from logical metric name to engine metric
// name. Each item may also hold several comma-separated pairs.
func ParseOverrides(items []string) (map[string]string, error) {
	out := make(map[string]string)
	for _, item := range items {
		for pair := range strings.SplitSeq(item, ",") {
			pair = strings.TrimSpace(pair)
			if pair == "" {
				continue
			}
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok {
				return nil, fmt.Errorf("scrape: metric override %q: want LOGICAL=NAME, e.g. waiting=my_queue_len", pair)
			}
			if _, known := ParseMetric(k); !known {
				return nil, fmt.Errorf("scrape: metric override %q: unknown logical metric %q (want one of %s)", pair, k, metricList())
			}
			_, pct, err := overrideName(v)
			if err != nil {
				return nil, fmt.Errorf("scrape: metric override %q: %w", pair, err)
			}
			if pct && k != KVUsage.String() {
				return nil, fmt.Errorf("scrape: metric override %q: a %% suffix only applies to kv_usage", pair)
			}
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("scrape: metric override %q: %s given twice", pair, k)
			}
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}
