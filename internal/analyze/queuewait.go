package analyze

import (
	"math"
	"slices"
)

// QueueWait is the engine-measured queue wait of one phase, in ms: how long
// requests waited in the engine's queue before entering its running batch,
// as reported (summary.json's "engine_queue_wait", the results table's
// queue columns). From a real engine it comes from the engine's own
// queue-time histogram (P99Above when the p99 lies beyond its last finite
// bucket; PxxAtMost when a percentile lies inside the first bucket, where
// only its upper bound is known); from the engine model it is known per
// request (WaitHist: exact count and mean, percentiles to 0.1 %).
type QueueWait struct {
	Available bool    `json:"available"`        // false: no value; Reason says why
	Reason    string  `json:"reason,omitempty"` // why not available
	Count     float64 `json:"count"`            // observations
	MeanMs    float64 `json:"mean_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P99Above  bool    `json:"p99_above,omitempty"` // P99 is beyond the last finite bucket
	// P50AtMost, P95AtMost and P99AtMost mark a percentile that lies in the
	// histogram's first bucket: the value given is that bucket's bound, an
	// upper bound (the wait is at most that), not an estimate.
	P50AtMost bool `json:"p50_at_most,omitempty"`
	P95AtMost bool `json:"p95_at_most,omitempty"`
	P99AtMost bool `json:"p99_at_most,omitempty"`
}

// exactQueueWait summarises one phase's queue waits known exactly, given in
// seconds: for the engine model, each admitted request's admission time
// minus its arrival (requests never admitted have no wait). With the n
// waits sorted, v₀ ≤ … ≤ vₙ₋₁:
//
//	mean = (Σv / n) · 1000                                   (ms)
//	pX   = v_k · 1000,  k = ⌈p·n⌉ − 1 clamped to [0, n − 1]   (ms; p = 0.50, 0.95, 0.99)
//
// the same nearest-rank definition as every other percentile of surge, here
// without histogram rounding (waits are finite). Without waits it is not Available, with
// Reason "no observations". waits is not modified.
func exactQueueWait(waits []float64) QueueWait {
	if len(waits) == 0 {
		return QueueWait{Reason: "no observations"}
	}
	v := slices.Clone(waits)
	slices.Sort(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	q := func(p float64) float64 {
		k := int(math.Ceil(p*float64(len(v)))) - 1
		return v[max(0, min(k, len(v)-1))]
	}
	ms := func(s float64) float64 {
		if math.IsNaN(s) {
			return 0
		}
		return s * 1000
	}
	return QueueWait{Available: true, Count: float64(len(v)), MeanMs: ms(mean), P50Ms: ms(q(0.50)), P95Ms: ms(q(0.95)), P99Ms: ms(q(0.99))}
}
