package simhttp

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-bench/surge/internal/sim"
)

// The simulator's /metrics imitates the families of vLLM 0.32.0 that surge
// reads (docs/engines-vllm.md, checked against a recorded exposition in
// parity_test.go): the same names, types, help texts, label names and
// values, and histogram buckets. Every vllm: series carries engine="0" (one
// engine process; the replicas of the engine model are summed into it) and
// model_name.

// Bucket boundaries (seconds) of the latency histograms, as vLLM's.
var (
	// RequestLatencyBuckets are vLLM's buckets for queue time and
	// end-to-end latency.
	RequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// TTFTBuckets are vLLM's buckets for time to first token.
	TTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
)

// scalingKinds are the kinds of scaling events of the engine model; each
// gets a surge_sim_scaling_events_total series, zero until it happens.
var scalingKinds = []string{sim.EventScaleTrigger, sim.EventCapacityRequested, sim.EventNodeReady,
	sim.EventContainerReady, sim.EventModelReady, sim.EventFirstServed, sim.EventScaleDown}

// metrics are the series the simulator exposes at /metrics, in its own
// registry. Gauges and counters are read from the cluster's snapshot at
// scrape time (clusterCollector); the histograms are observed by the
// request observers, which run under the cluster lock and must not block
// (prometheus observations are lock-free atomics).
type metrics struct {
	reg       *prometheus.Registry
	queueTime prometheus.Observer
	ttft      prometheus.Observer
	e2e       prometheus.Observer
}

// vllmEngineLabel is the engine label vLLM puts on every per-engine series
// (its data-parallel rank); the simulator is one engine.
const vllmEngineLabel = "0"

// finishedReasons are the finished_reason values of
// vllm:request_success_total, all exported from the start as vLLM does.
var finishedReasons = []string{"stop", "length", "abort", "error", "repetition"}

func newMetrics(model string, s *Server) *metrics {
	lbl := prometheus.Labels{"engine": vllmEngineLabel, "model_name": model}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: lbl})
	}
	queue := hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", RequestLatencyBuckets)
	ttft := hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFTBuckets)
	e2e := hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", RequestLatencyBuckets)
	m := &metrics{reg: prometheus.NewRegistry(), queueTime: queue, ttft: ttft, e2e: e2e}
	m.reg.MustRegister(queue, ttft, e2e, newClusterCollector(model, s))
	return m
}

// clusterCollector reads the engine state once per scrape.
type clusterCollector struct {
	s                               *Server
	waiting, waitingBy, running, kv *prometheus.Desc
	prompt, generation, success     *prometheus.Desc
	cacheQueries, cacheHits         *prometheus.Desc
	ready, starting, scaling        *prometheus.Desc
}

func newClusterCollector(model string, s *Server) *clusterCollector {
	lbl := prometheus.Labels{"engine": vllmEngineLabel, "model_name": model}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, lbl)
	}
	own := func(name, help string, labels ...string) *prometheus.Desc { // surge_sim_*: no engine label
		return prometheus.NewDesc(name, help, labels, prometheus.Labels{"model_name": model})
	}
	return &clusterCollector{
		s:       s,
		waiting: d("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		waitingBy: d("vllm:num_requests_waiting_by_reason", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; "+
			"'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.", "reason"),
		running:      d("vllm:num_requests_running", "Number of requests in model execution batches."),
		kv:           d("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		prompt:       d("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		generation:   d("vllm:generation_tokens_total", "Number of generation tokens processed."),
		success:      d("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason"),
		cacheQueries: d("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
		cacheHits:    d("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
		ready:        own("surge_sim_replicas", "Replicas of the simulated engine ready to serve."),
		starting:     own("surge_sim_replicas_starting", "Replicas of the simulated engine requested but not yet ready."),
		scaling:      own("surge_sim_scaling_events_total", "Scaling milestones of the simulated autoscaler, by kind.", "kind"),
	}
}

// Describe implements prometheus.Collector.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.waiting, c.waitingBy, c.running, c.kv, c.prompt, c.generation, c.success, c.cacheQueries, c.cacheHits, c.ready, c.starting, c.scaling} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	snap, counts := c.s.scrapeState()
	g := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	n := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g(c.waiting, float64(snap.Waiting))
	// The engine model defers nothing: every waiting request waits for
	// capacity.
	ch <- prometheus.MustNewConstMetric(c.waitingBy, prometheus.GaugeValue, float64(snap.Waiting), "capacity")
	ch <- prometheus.MustNewConstMetric(c.waitingBy, prometheus.GaugeValue, 0, "deferred")
	g(c.running, float64(snap.Running))
	g(c.kv, snap.KVUsage)
	n(c.prompt, float64(snap.PromptTokens))
	n(c.generation, float64(snap.GenerationTokens))
	n(c.cacheQueries, float64(snap.QueriedTokens))
	n(c.cacheHits, float64(snap.CachedTokens))
	// vLLM 0.32 counts abort only for requests its engine aborts itself; a
	// request its client cancels is counted nowhere (not in any reason, nor
	// in the latency histograms; checked in e2e/vllm_test.go), and the
	// engine model aborts nothing itself. It has no internal errors and no
	// repetition detection either: those three stay 0.
	finished := map[string]uint64{"stop": snap.FinishedStop, "length": snap.FinishedLength}
	for _, r := range finishedReasons {
		n(c.success, float64(finished[r]), r)
	}
	g(c.ready, float64(snap.ReadyReplicas))
	g(c.starting, float64(snap.StartingReplicas))
	for _, k := range scalingKinds {
		n(c.scaling, float64(counts[k]), k)
	}
	for k, v := range counts { // kinds the model may add later
		if !slices.Contains(scalingKinds, k) {
			n(c.scaling, float64(v), k)
		}
	}
}
