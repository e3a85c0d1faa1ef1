// Package scrape reads an inference engine's Prometheus metrics during a run
// (--metrics-url), to see where requests wait inside the engine
// (docs/method.md §5), and turns them into per-phase figures.
//
// # Logical metrics and presets
//
// surge knows ten logical metrics (Metric): gauges waiting, running,
// kv_usage (fraction 0..1) and replicas; counters prompt_tokens,
// generation_tokens and success; histograms (seconds) queue_time, ttft and
// e2e. A Preset maps them to one engine's metric names; the names below are
// the best known (engines rename metrics between versions, so a Spec may
// list alternatives, the first one present wins):
//
//	logical            vllm (sim = vllm + surge_sim_replicas)          sglang                              tgi                           llamacpp
//	waiting            vllm:num_requests_waiting                       sglang:num_queue_reqs               tgi_queue_size                llamacpp:requests_deferred
//	running            vllm:num_requests_running                       sglang:num_running_reqs             tgi_batch_current_size        llamacpp:requests_processing
//	kv_usage           vllm:kv_cache_usage_perc | gpu_cache_usage_perc sglang:token_usage                  —                             llamacpp:kv_cache_usage_ratio (optional)
//	queue_time         vllm:request_queue_time_seconds                 sglang:queue_time_seconds (opt.)    tgi_request_queue_duration    —
//	ttft               vllm:time_to_first_token_seconds                sglang:time_to_first_token_seconds  —                             —
//	e2e                vllm:e2e_request_latency_seconds                sglang:e2e_request_latency_seconds  tgi_request_duration          —
//	prompt_tokens      vllm:prompt_tokens_total                        sglang:prompt_tokens_total          tgi_request_input_length      llamacpp:prompt_tokens_total
//	generation_tokens  vllm:generation_tokens_total                    sglang:generation_tokens_total      tgi_request_generated_tokens  llamacpp:tokens_predicted_total
//	success            vllm:request_success_total                      —                                   tgi_request_success           —
//
// triton (NVIDIA Triton Inference Server; nv_trt_llm_* from its TensorRT-LLM
// backend; a name may carry label matchers, family{label="value"}):
//
//	waiting     nv_trt_llm_request_metrics{request_type="waiting"} | nv_inference_pending_request_count
//	running     nv_trt_llm_request_metrics{request_type="active"} | {request_type="scheduled"} (optional)
//	kv_usage    nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"} (optional)
//	queue_time  nv_inference_queue_duration_us × 1e-6 over nv_inference_request_success (no buckets)
//	e2e         nv_inference_request_duration_us × 1e-6 over nv_inference_request_success (no buckets)
//	success     nv_inference_request_success
//
// digitalocean (DigitalOcean's Insights telemetry, names from
// https://docs.digitalocean.com/products/insights/reference/telemetry/, each
// also tried with dots escaped to underscores, as an exporter sends UTF-8
// names to a scraper that does not ask for them):
//
//	e2e       do.serverless_inference.http_request_duration{http.response.status.code="200"} (Serverless Inference)
//	replicas  do.droplet_autoscale_pool.current_instances (optional; a placeholder, not a name from the reference)
//
// Its GPU gauges (Dedicated Inference) and router cache hits have no
// logical metric and are not read.
//
// Triton's latencies are cumulative counters, not histograms: such a
// histogram metric (Spec.CountNames) is read as count = the count counter,
// sum = the sum counter × SumScale, without buckets, so a phase has its
// mean (Δsum/Δcount) and no quantiles.
//
// Preset "auto" (the default) picks, at the first successful scrape, the
// preset with the most metrics present. User overrides (--metric
// queue_time=NAME, see ParseOverrides) replace or add single names; a
// trailing "%" marks a kv_usage gauge exported as 0..100.
//
// # Reading one scrape
//
// The body is parsed with prometheus/common's text parser (UTF-8 names, so
// vLLM's "vllm:" colons are fine). A logical gauge or counter is the sum of
// its series over all label sets (e.g. vLLM's model_name and engine labels,
// or success's finished_reason), after the optional label Filter; NaN series
// are skipped. kv_usage is the mean over label sets instead (one value per
// engine in data-parallel deployments), divided by 100 when the Spec says
// percent, or — since a fraction cannot exceed 1 — from the first value
// above 1 onwards. A counter name is also tried with "_total" added or
// removed; a counter exported as a histogram (TGI's token counts) is read
// from its _sum. Histograms are summed bucket-wise over label sets (over the
// bounds all series share); a summary gives count and sum but no buckets.
//
// A sample's time is the midpoint between sending the request and reading
// the whole body, in nanoseconds since the run's origin.
//
// # Failures never fail the run
//
// If the first Attempts scrapes in a row fail (refused, 404, timeout, not
// Prometheus text), scraping stops with "engine metrics unavailable:
// <reason>; continuing without engine metrics". After a success, a failed
// scrape leaves a gap in the samples. At the first success, every mapped
// metric that is absent is reported once: "engine metrics: missing
// queue_time (looked for vllm:request_queue_time_seconds); renamed? use
// --metric queue_time=NAME". Without engine metrics, load-induced latency is
// "extra observed latency", never "queue time" (docs/method.md §5).
//
// # Per-phase histograms
//
// The engine's histograms are cumulative since it started. The
// observations made during a phase [from, to] are the bucket-wise
// difference of the snapshots nearest to its ends (Sub, PhaseStats):
//
//	Δc_i = c_i(to) − c_i(from)   cumulative count at upper bound le_i
//	N    = Δc_+Inf,  mean = Δsum / N   (seconds)
//
// Quantile q (Quantile) follows Prometheus' histogram_quantile: the rank
// r = q·N falls in the first bucket i with Δc_i ≥ r, and the estimate is
//
//	le_(i−1) + (le_i − le_(i−1)) · (r − Δc_(i−1)) / (Δc_i − Δc_(i−1))
//
// — linear interpolation, assuming observations spread evenly inside a
// bucket. Resolution is bounded by the bucket layout: the answer is never
// finer than the buckets. The two buckets with a single bound are not
// interpolated. A quantile in the first bucket (i = 0, where Prometheus
// assumes le_(−1) = 0) is reported as "≤ le_0" (Estimate.AtMost): vLLM's
// queue-time histogram has its first bound at 0.3 s, and waits of 0.03 ms
// interpolated from 0 read as p50/p95/p99 = 150/285/297 ms; the mean
// (Δsum / N) stays exact and is the better figure then. A quantile in the
// +Inf bucket is reported as
// "> le_max" (Estimate.Above). A decrease of any count or of the sum means
// the engine restarted between the samples (ErrReset): the phase's figures
// are unknown, not negative. A restart followed by more observations than
// before is not detectable. Since the two samples are up to half a scrape
// interval away from the phase's ends, phases should be many intervals long.
//
// # engine.csv
//
// One row per sample (CSVHeader), flushed as it is written: t_s (seconds
// since the origin, ms precision), the gauges, cumulative counters,
// histogram counts and sums, and the buckets as "le:count" lists; empty
// cells for unavailable metrics. ReadCSV reads it back.
package scrape
