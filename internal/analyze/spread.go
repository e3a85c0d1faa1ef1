package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The spread's bootstrap (docs/metrics.md "Spread over repeats").
const (
	// spreadBootstrapMin is the fewest runs that get a bootstrap interval:
	// below it an interval over resampled runs says little the values
	// themselves do not.
	spreadBootstrapMin = 5
	// spreadResamples is how many bootstrap resamples are drawn.
	spreadResamples = 10000
	// spreadLevel is the bootstrap interval's confidence level.
	spreadLevel = 0.95
)

// RunValue is one run's value of a metric (a P99, a recovery time, a
// goodput); Bound marks a lower bound only (a P99 censored by timeouts, a
// run that did not recover in the time it was watched).
type RunValue struct {
	V     float64
	Bound bool
}

// Spread is how one metric varied over repeated runs of one configuration:
// the run values in run order, their minimum, median and maximum, and —
// with at least spreadBootstrapMin runs and none of them a lower bound — a
// percentile-bootstrap interval of the median.
//
// Median is the nearest-rank median, the ⌈N/2⌉-th smallest value (as
// analyze's percentiles: a value one of the runs measured, never an average
// of two runs' values). The interval: draw spreadResamples resamples of N
// values with replacement from the N run values (a PCG generator seeded
// with the given seed, so the same values give the same interval), take
// each resample's nearest-rank median, and report the nearest-rank
// (1 − spreadLevel)/2 and (1 + spreadLevel)/2 quantiles of those medians.
// With lower bounds among the values Min, Median and Max are computed on
// the bounds as given (Bounds counts them) and there is no interval.
type Spread struct {
	Values   []RunValue `json:"values"`
	N        int        `json:"n"`
	Min      float64    `json:"min"`
	Median   float64    `json:"median"`
	Max      float64    `json:"max"`
	Bounds   int        `json:"bounds,omitempty"` // values that are lower bounds only
	CI       bool       `json:"ci"`               // the interval was computed
	CILow    float64    `json:"ci_low,omitempty"`
	CIHigh   float64    `json:"ci_high,omitempty"`
	CILevel  float64    `json:"ci_level,omitempty"`
	Resample int        `json:"resamples,omitempty"`
	// NoCI says why there is no interval, when there is none.
	NoCI string `json:"no_ci,omitempty"`
}

// SpreadOf is the spread of the run values vals (NaN values — a run with
// no such value — are left out), its bootstrap drawn from seed.
func SpreadOf(vals []RunValue, seed uint64) Spread {
	s := Spread{Values: vals}
	var xs []float64
	for _, v := range vals {
		if math.IsNaN(v.V) || math.IsInf(v.V, 0) {
			continue
		}
		xs = append(xs, v.V)
		if v.Bound {
			s.Bounds++
		}
	}
	s.N = len(xs)
	if s.N == 0 {
		s.Min, s.Median, s.Max = math.NaN(), math.NaN(), math.NaN()
		s.NoCI = "no run has a value"
		return s
	}
	slices.Sort(xs)
	s.Min, s.Max, s.Median = xs[0], xs[len(xs)-1], nearestRank(xs, 0.5)
	switch {
	case s.N < spreadBootstrapMin:
		s.NoCI = "fewer than 5 runs"
		return s
	case s.Bounds > 0:
		s.NoCI = "some runs' values are lower bounds only"
		return s
	}
	rng := rand.New(rand.NewPCG(seed, 0xb007_57a9))
	median := func(d [][]float64) float64 {
		slices.Sort(d[0])
		return nearestRank(d[0], 0.5)
	}
	s.CI, s.CILevel, s.Resample = true, spreadLevel, spreadResamples
	s.CILow, s.CIHigh = Bootstrap(rng, spreadResamples, spreadLevel, median, xs)
	return s
}

// Bootstrap is the percentile-bootstrap interval of stat at the given
// confidence level: it draws resamples of each sample, with replacement
// and of its own size, from r (samples in order, values in order), takes
// stat of each set of draws, and returns the nearest-rank (1 − level)/2
// and (1 + level)/2 quantiles of those statistics. stat may reorder the
// draws it is given. surge's spreads over repeats and surge compare's
// differences both use it.
func Bootstrap(r *rand.Rand, resamples int, level float64, stat func(draws [][]float64) float64, samples ...[]float64) (lo, hi float64) {
	stats := make([]float64, resamples)
	draws := make([][]float64, len(samples))
	for k, s := range samples {
		draws[k] = make([]float64, len(s))
	}
	for i := range stats {
		for k, s := range samples {
			for j := range draws[k] {
				draws[k][j] = s[r.IntN(len(s))]
			}
		}
		stats[i] = stat(draws)
	}
	slices.Sort(stats)
	return nearestRank(stats, (1-level)/2), nearestRank(stats, (1+level)/2)
}

// MedianOfRuns is the median of run values by nearest rank, the
// ⌈N/2⌉-th smallest: always one run's own value, never the mean of the
// middle two (which would average two runs' percentiles). SpreadOf,
// surge compare and surge coldstart all use it. v is not changed; NaN
// when it is empty.
func MedianOfRuns(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	xs := slices.Clone(v)
	slices.Sort(xs)
	return nearestRank(xs, 0.5)
}

// nearestRank is the q-quantile of sorted xs by nearest rank: the r-th
// smallest, r = ⌈q·N⌉, at least 1.
func nearestRank(xs []float64, q float64) float64 {
	r := int(math.Ceil(q*float64(len(xs)) - 1e-9))
	r = max(1, min(r, len(xs)))
	return xs[r-1]
}
