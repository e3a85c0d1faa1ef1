package scrape

import (
	"math"
	"strings"
)

// Metric is one of surge's logical engine metrics. Presets map each to the
// names a particular engine exports.
type Metric int

// The logical metrics, in the order of engine.csv's columns.
const (
	Waiting          Metric = iota // gauge: requests waiting in the engine's queue
	Running                        // gauge: requests in the running batch
	KVUsage                        // gauge: KV-cache usage, fraction 0..1
	Replicas                       // gauge: serving replicas (optional; simulator, gateways)
	QueueTime                      // histogram, seconds: time in the waiting queue
	PromptTokens                   // counter: prompt (prefill) tokens processed
	GenerationTokens               // counter: generated tokens
	Success                        // counter: successfully finished requests, summed over labels
	TTFT                           // histogram, seconds: time to first token as the engine sees it
	E2E                            // histogram, seconds: end-to-end request latency as the engine sees it
	ReplicasStarting               // gauge: replicas requested but not yet serving (optional; simulator)

	numMetrics = int(ReplicasStarting) + 1
)

// Kind says how a logical metric behaves over time.
type Kind int

// The kinds of logical metrics.
const (
	KindGauge     Kind = iota // a level that goes up and down
	KindCounter               // cumulative, only grows until the engine restarts
	KindHistogram             // cumulative buckets, count and sum
)

var metricNames = [numMetrics]string{
	Waiting:          "waiting",
	Running:          "running",
	KVUsage:          "kv_usage",
	Replicas:         "replicas",
	QueueTime:        "queue_time",
	PromptTokens:     "prompt_tokens",
	GenerationTokens: "generation_tokens",
	Success:          "success",
	TTFT:             "ttft",
	E2E:              "e2e",
	ReplicasStarting: "replicas_starting",
}

var metricKinds = [numMetrics]Kind{
	Waiting: KindGauge, Running: KindGauge, KVUsage: KindGauge, Replicas: KindGauge, ReplicasStarting: KindGauge,
	QueueTime: KindHistogram, TTFT: KindHistogram, E2E: KindHistogram,
	PromptTokens: KindCounter, GenerationTokens: KindCounter, Success: KindCounter,
}

// Metrics lists every logical metric in a stable order.
func Metrics() []Metric {
	out := make([]Metric, numMetrics)
	for i := range out {
		out[i] = Metric(i)
	}
	return out
}

// String returns the logical name, as used in --metric overrides and CSV headers.
func (m Metric) String() string {
	if m < 0 || int(m) >= numMetrics {
		return "unknown"
	}
	return metricNames[m]
}

// Kind returns whether m is a gauge, a counter or a histogram.
func (m Metric) Kind() Kind { return metricKinds[m] }

// ParseMetric returns the logical metric with the given name.
func ParseMetric(name string) (Metric, bool) {
	for i, n := range metricNames {
		if n == name {
			return Metric(i), true
		}
	}
	return 0, false
}

func metricList() string { return strings.Join(metricNames[:], ", ") }

// Set is a set of logical metrics (a bitmask).
type Set uint32

// Has reports whether m is in the set.
func (s Set) Has(m Metric) bool { return s&(1<<uint(m)) != 0 }

// With returns the set plus m.
func (s Set) With(m Metric) Set { return s | 1<<uint(m) }

// Hist is a snapshot of a cumulative Prometheus histogram, summed over the
// label sets that matched. Bounds are the buckets' upper bounds in ascending
// order, the last one +Inf; Counts are the cumulative counts at each bound
// (Counts[len-1] == Count). A histogram read from a summary has Count and
// Sum but no buckets.
type Hist struct {
	Bounds []float64 // upper bounds (le), ascending, last +Inf; shared between samples, do not modify
	Counts []float64 // cumulative count of observations <= Bounds[i]
	Count  float64   // number of observations
	Sum    float64   // sum of observations (seconds for the latency histograms)
}

// Sample is one scrape of the engine: the logical metrics at time TNs.
// A metric absent from Has was not available in this scrape; its field is
// then NaN (gauges, counters) or the zero Hist.
type Sample struct {
	TNs int64 // nanoseconds since the run's origin (midpoint of the scrape's request)
	Has Set   // the metrics available in this sample

	Waiting          float64 // requests waiting, summed over label sets
	Running          float64 // requests running, summed over label sets
	KVUsage          float64 // KV-cache usage 0..1, mean over label sets (percent exporters normalised)
	Replicas         float64 // replicas, summed over label sets
	ReplicasStarting float64 // replicas starting, summed over label sets
	PromptTokens     float64 // cumulative prompt tokens
	GenerationTokens float64 // cumulative generated tokens
	Success          float64 // cumulative successful requests

	QueueTime Hist // engine queue time, seconds
	TTFT      Hist // engine time to first token, seconds
	E2E       Hist // engine end-to-end latency, seconds
}

// EmptySample returns a Sample at tNs with no metrics available.
func EmptySample(tNs int64) Sample {
	nan := math.NaN()
	return Sample{TNs: tNs, Waiting: nan, Running: nan, KVUsage: nan, Replicas: nan, ReplicasStarting: nan,
		PromptTokens: nan, GenerationTokens: nan, Success: nan}
}

// Value returns a gauge or counter metric and whether it is available.
// For a histogram metric it returns the observation count.
func (s *Sample) Value(m Metric) (float64, bool) {
	if !s.Has.Has(m) {
		return math.NaN(), false
	}
	switch m {
	case Waiting:
		return s.Waiting, true
	case Running:
		return s.Running, true
	case KVUsage:
		return s.KVUsage, true
	case Replicas:
		return s.Replicas, true
	case ReplicasStarting:
		return s.ReplicasStarting, true
	case PromptTokens:
		return s.PromptTokens, true
	case GenerationTokens:
		return s.GenerationTokens, true
	case Success:
		return s.Success, true
	case QueueTime, TTFT, E2E:
		return s.Hist(m).Count, true
	}
	return math.NaN(), false
}

// Hist returns the histogram snapshot of a histogram metric, or nil if m is
// not a histogram metric or not available.
func (s *Sample) Hist(m Metric) *Hist {
	if !s.Has.Has(m) {
		return nil
	}
	switch m {
	case QueueTime:
		return &s.QueueTime
	case TTFT:
		return &s.TTFT
	case E2E:
		return &s.E2E
	}
	return nil
}

func (s *Sample) set(m Metric, v float64) {
	switch m {
	case Waiting:
		s.Waiting = v
	case Running:
		s.Running = v
	case KVUsage:
		s.KVUsage = v
	case Replicas:
		s.Replicas = v
	case ReplicasStarting:
		s.ReplicasStarting = v
	case PromptTokens:
		s.PromptTokens = v
	case GenerationTokens:
		s.GenerationTokens = v
	case Success:
		s.Success = v
	default:
		return
	}
	s.Has = s.Has.With(m)
}

func (s *Sample) setHist(m Metric, h Hist) {
	switch m {
	case QueueTime:
		s.QueueTime = h
	case TTFT:
		s.TTFT = h
	case E2E:
		s.E2E = h
	default:
		return
	}
	s.Has = s.Has.With(m)
}
