package scrape

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
)

// Errors of histogram and counter deltas; callers branch on them to mark a
// figure unknown.
var (
	// ErrReset means a cumulative value went down between the two samples:
	// the engine restarted (or its metrics were reset).
	ErrReset = errors.New("counter reset (engine restarted?)")
	// ErrLayout means the two snapshots have different bucket bounds.
	ErrLayout = errors.New("histogram bucket layout changed")
)

// Sub returns the histogram of the observations made between two snapshots
// of the same cumulative histogram: bucket-wise end − start. It returns
// ErrReset if any count or the sum decreased and ErrLayout if the bucket
// bounds differ.
func Sub(end, start Hist) (Hist, error) {
	if !slices.Equal(end.Bounds, start.Bounds) {
		return Hist{}, ErrLayout
	}
	d := Hist{Bounds: end.Bounds, Count: end.Count - start.Count, Sum: end.Sum - start.Sum}
	if d.Count < 0 || d.Sum < 0 {
		return Hist{}, ErrReset
	}
	if end.Counts != nil {
		d.Counts = make([]float64, len(end.Counts))
		for i := range end.Counts {
			d.Counts[i] = end.Counts[i] - start.Counts[i]
			if d.Counts[i] < 0 {
				return Hist{}, ErrReset
			}
		}
	}
	return d, nil
}

// Estimate is a quantile estimated from histogram buckets, in the
// histogram's unit (seconds for the latency histograms).
type Estimate struct {
	// Value is the estimate; NaN when unknown (no observations, no buckets).
	Value float64
	// Above is true when the quantile falls in the +Inf bucket: the true
	// value is greater than Value, the largest finite bucket bound.
	Above bool
	// AtMost is true when the quantile falls in the first bucket, whose
	// lower edge is not a bound the engine reported: the true value is at
	// most Value, the first bucket bound, and nothing finer is known.
	AtMost bool
}

// Known reports whether the estimate has a value.
func (e Estimate) Known() bool { return !math.IsNaN(e.Value) }

// String formats the estimate in seconds with 4 significant digits:
// "0.5312s", "> 10s", "≤ 0.3s" or "n/a".
func (e Estimate) String() string {
	if !e.Known() {
		return "n/a"
	}
	s := strconv.FormatFloat(e.Value, 'g', 4, 64) + "s"
	switch {
	case e.Above:
		return "> " + s
	case e.AtMost:
		return "≤ " + s
	}
	return s
}

func unknown() Estimate { return Estimate{Value: math.NaN()} }

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations in h
// the way Prometheus' histogram_quantile does: find the bucket holding rank
// q·Count and interpolate linearly between its lower and upper bound. Two
// buckets have only one bound and are not interpolated: a quantile in the
// +Inf bucket is reported as "> largest finite bound" (Above), and one in
// the first bucket as "≤ first bound" (AtMost; Prometheus would interpolate
// from an assumed 0, which turns waits of microseconds into a fraction of
// the bound). A first bound ≤ 0 is exact (a duration ≤ 0 is 0). The answer
// assumes observations spread evenly inside a bucket; it is never finer
// than the bucket layout.
func Quantile(h Hist, q float64) Estimate {
	n := len(h.Bounds)
	if n < 2 || len(h.Counts) != n || q < 0 || q > 1 || math.IsNaN(q) {
		return unknown()
	}
	total := h.Counts[n-1]
	if total <= 0 {
		return unknown()
	}
	rank := q * total
	b := sort.Search(n-1, func(i int) bool { return h.Counts[i] >= rank })
	if b == n-1 {
		return Estimate{Value: h.Bounds[n-2], Above: true}
	}
	if b == 0 {
		return Estimate{Value: h.Bounds[0], AtMost: h.Bounds[0] > 0}
	}
	lo, hi := h.Bounds[b-1], h.Bounds[b]
	c := h.Counts[b] - h.Counts[b-1]
	rank -= h.Counts[b-1]
	if c <= 0 {
		return Estimate{Value: hi}
	}
	return Estimate{Value: lo + (hi-lo)*(rank/c)}
}

// Stats summarises the observations of one histogram metric over an
// interval (a phase), from the delta of its cumulative snapshots.
type Stats struct {
	Metric       Metric   // the histogram metric
	FromNs, ToNs int64    // times of the two samples used (nearest to the interval's ends)
	Count        float64  // observations during the interval
	Mean         float64  // Δsum / Δcount, seconds; NaN when unknown
	P50          Estimate // the quantiles, by Quantile
	P95          Estimate
	P99          Estimate
	// Reason says why the figures are unknown ("" when they are known):
	// no samples, metric unavailable, counter reset, no observations.
	Reason string
}

// Known reports whether the interval's statistics could be computed.
func (s Stats) Known() bool { return s.Reason == "" }

// DeltaStats computes Stats from the snapshots at the start and the end of
// an interval.
func DeltaStats(start, end Hist) Stats {
	st := Stats{Mean: math.NaN(), P50: unknown(), P95: unknown(), P99: unknown()}
	d, err := Sub(end, start)
	if err != nil {
		st.Reason = err.Error()
		return st
	}
	st.Count = d.Count
	if d.Count <= 0 {
		st.Reason = "no observations"
		return st
	}
	st.Mean = d.Sum / d.Count
	st.P50, st.P95, st.P99 = Quantile(d, 0.50), Quantile(d, 0.95), Quantile(d, 0.99)
	return st
}

// Nearest returns the index of the sample whose time is closest to tNs
// (the earlier one on a tie), or -1 if samples is empty. Samples must be in
// time order.
func Nearest(samples []Sample, tNs int64) int {
	if len(samples) == 0 {
		return -1
	}
	i := sort.Search(len(samples), func(i int) bool { return samples[i].TNs >= tNs })
	switch {
	case i == 0:
		return 0
	case i == len(samples):
		return i - 1
	case tNs-samples[i-1].TNs <= samples[i].TNs-tNs:
		return i - 1
	}
	return i
}

// MaxIn is the largest value of gauge m over the samples taken in
// [fromNs, toNs) — a window's peak at the engine's own resolution — or,
// when no sample with m falls in it (scrapes sparser than the window),
// m in the sample nearest to fromNs. ok is false when neither has m.
// Samples must be in time order.
func MaxIn(samples []Sample, m Metric, fromNs, toNs int64) (v float64, ok bool) {
	i := sort.Search(len(samples), func(i int) bool { return samples[i].TNs >= fromNs })
	for ; i < len(samples) && samples[i].TNs < toNs; i++ {
		if x, has := samples[i].Value(m); has && (!ok || x > v) {
			v, ok = x, true
		}
	}
	if ok {
		return v, true
	}
	if j := Nearest(samples, fromNs); j >= 0 {
		return samples[j].Value(m)
	}
	return 0, false
}

// PhaseStats computes the statistics of histogram metric m (QueueTime, TTFT
// or E2E) for the interval [fromNs, toNs], from the samples nearest to its
// ends. The interval should be long compared with the scrape interval: the
// observations counted are those between the two samples, which may start
// or end up to half a scrape interval away from the phase boundaries.
func PhaseStats(samples []Sample, m Metric, fromNs, toNs int64) Stats {
	st := Stats{Metric: m, Mean: math.NaN(), P50: unknown(), P95: unknown(), P99: unknown()}
	i, j := Nearest(samples, fromNs), Nearest(samples, toNs)
	if i < 0 {
		st.Reason = "no engine samples"
		return st
	}
	st.FromNs, st.ToNs = samples[i].TNs, samples[j].TNs
	if i == j {
		st.Reason = "interval shorter than the scrape interval"
		return st
	}
	a, b := samples[i].Hist(m), samples[j].Hist(m)
	if a == nil || b == nil {
		st.Reason = m.String() + " not available"
		return st
	}
	d := DeltaStats(*a, *b)
	d.Metric, d.FromNs, d.ToNs = m, st.FromNs, st.ToNs
	return d
}

// CounterDelta returns the increase of counter metric m between the samples
// nearest to fromNs and toNs, and the seconds between those samples (for a
// rate). It returns ErrReset if the counter went down and a non-nil error if
// the metric or samples are unavailable.
func CounterDelta(samples []Sample, m Metric, fromNs, toNs int64) (delta, seconds float64, err error) {
	i, j := Nearest(samples, fromNs), Nearest(samples, toNs)
	if i < 0 || i == j {
		return math.NaN(), 0, errors.New("not enough engine samples")
	}
	a, okA := samples[i].Value(m)
	b, okB := samples[j].Value(m)
	if !okA || !okB {
		return math.NaN(), 0, errors.New(m.String() + " not available")
	}
	seconds = float64(samples[j].TNs-samples[i].TNs) / 1e9
	if b < a {
		return math.NaN(), seconds, ErrReset
	}
	return b - a, seconds, nil
}

// GaugeStats summarises a gauge over the samples in [fromNs, toNs].
type GaugeStats struct {
	N    int     // samples with the gauge available
	Mean float64 // NaN when N == 0
	Max  float64 // NaN when N == 0
	Last float64 // the latest value; NaN when N == 0
}

// Gauge summarises gauge metric m (for example Waiting) over the samples
// whose time lies in [fromNs, toNs]. The queue-depth time series itself is
// simply the samples' Waiting and Running fields.
func Gauge(samples []Sample, m Metric, fromNs, toNs int64) GaugeStats {
	g := GaugeStats{Mean: math.NaN(), Max: math.NaN(), Last: math.NaN()}
	sum := 0.0
	for i := range samples {
		s := &samples[i]
		if s.TNs < fromNs || s.TNs > toNs {
			continue
		}
		v, ok := s.Value(m)
		if !ok {
			continue
		}
		if g.N == 0 || v > g.Max {
			g.Max = v
		}
		g.N++
		sum += v
		g.Last = v
	}
	if g.N > 0 {
		g.Mean = sum / float64(g.N)
	}
	return g
}
