package analyze

import "math"

// VLLMBench is the overall result under the field names of vLLM's
// `vllm bench serve` JSON output, so users can cross-check the two tools.
// Meanings follow vLLM: TTFT and E2EL are measured from the send, over
// successful requests; throughputs divide by the benchmark's duration as
// vLLM measures it, from the first arrival to the last completion: from the
// start of the first non-excluded phase to its end or to the last ok
// completion of its requests, whichever is later (a burst's backlog drains
// after the last phase, and dividing by the phases alone would overstate
// the throughput). Differences, by design:
//   - request_goodput counts requests that met surge's per-request deadline
//     (from the scheduled arrival), vLLM's counts its own --goodput SLOs;
//   - percentiles are nearest-rank on an HDR histogram (vLLM interpolates);
//   - a p99 that more than 1 % timeouts make unknown is null, where vLLM
//     would print the p99 of the requests that happened to finish;
//   - surge records only each request's longest inter-token gap, so the
//     median/std/p99 of pooled ITL are null; mean_itl_ms is exact:
//     Σ(done − first token) / Σ(chunks − 1).
type VLLMBench struct {
	Duration             float64 `json:"duration"` // seconds
	Completed            int64   `json:"completed"`
	TotalInputTokens     int64   `json:"total_input_tokens"`
	TotalOutputTokens    int64   `json:"total_output_tokens"`
	RequestThroughput    float64 `json:"request_throughput"` // completed / duration, req/s
	RequestGoodput       float64 `json:"request_goodput"`    // good / duration, req/s
	OutputThroughput     float64 `json:"output_throughput"`  // output tokens / duration, tok/s
	TotalTokenThroughput float64 `json:"total_token_throughput"`

	MeanTTFTMs   float64  `json:"mean_ttft_ms"`
	MedianTTFTMs float64  `json:"median_ttft_ms"`
	StdTTFTMs    float64  `json:"std_ttft_ms"`
	P99TTFTMs    *float64 `json:"p99_ttft_ms"`

	MeanTPOTMs   float64  `json:"mean_tpot_ms"`
	MedianTPOTMs float64  `json:"median_tpot_ms"`
	StdTPOTMs    float64  `json:"std_tpot_ms"`
	P99TPOTMs    *float64 `json:"p99_tpot_ms"`

	MeanITLMs   float64  `json:"mean_itl_ms"`
	MedianITLMs *float64 `json:"median_itl_ms"`
	StdITLMs    *float64 `json:"std_itl_ms"`
	P99ITLMs    *float64 `json:"p99_itl_ms"`

	MeanE2ELMs   float64  `json:"mean_e2el_ms"`
	MedianE2ELMs float64  `json:"median_e2el_ms"`
	StdE2ELMs    float64  `json:"std_e2el_ms"`
	P99E2ELMs    *float64 `json:"p99_e2el_ms"`
}

// p99 returns d's P99, or nil when it is unknown or there are no samples.
func p99(d Dist) *float64 {
	if d.P99Censored || d.Count == 0 {
		return nil
	}
	v := d.P99Ms
	return &v
}

// VLLM returns the overall result under vLLM bench's field names.
func (r *Result) VLLM() VLLMBench {
	o := &r.Overall
	l := &o.Latency
	dur := r.benchSpanMs() / 1000
	per := func(n int64) float64 {
		if dur <= 0 {
			return 0
		}
		return float64(n) / dur
	}
	return VLLMBench{
		Duration:             dur,
		Completed:            o.Succeeded,
		TotalInputTokens:     o.PromptTokens,
		TotalOutputTokens:    o.OutputTokens,
		RequestThroughput:    per(o.Succeeded),
		RequestGoodput:       per(o.Good),
		OutputThroughput:     per(o.OutputTokens),
		TotalTokenThroughput: per(o.PromptTokens + o.OutputTokens),

		MeanTTFTMs: l.TTFTSend.MeanMs, MedianTTFTMs: l.TTFTSend.P50Ms, StdTTFTMs: l.TTFTSend.StdMs, P99TTFTMs: p99(l.TTFTSend),
		MeanTPOTMs: l.TPOT.MeanMs, MedianTPOTMs: l.TPOT.P50Ms, StdTPOTMs: l.TPOT.StdMs, P99TPOTMs: p99(l.TPOT),
		MeanITLMs:  o.ITLMeanPooledMs,
		MeanE2ELMs: l.E2ESend.MeanMs, MedianE2ELMs: l.E2ESend.P50Ms, StdE2ELMs: l.E2ESend.StdMs, P99E2ELMs: p99(l.E2ESend),
	}
}

// benchSpanMs is the span of the non-excluded phases, extended to the last
// ok completion of their requests, ms.
func (r *Result) benchSpanMs() float64 {
	start, end := math.Inf(1), math.Inf(-1)
	for _, p := range r.Phases {
		if !p.Excluded {
			start, end = min(start, p.StartMs), max(end, p.EndMs)
		}
	}
	if math.IsInf(start, 0) {
		return r.Overall.DurationMs
	}
	return max(end, r.Overall.LastDoneMs) - start
}
