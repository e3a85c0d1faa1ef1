package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/surge-bench/surge/internal/analyze"
)

// Bootstrap settings: the interval is of the difference of the medians
// of the per-run values, 95%, from this many resamples of each side.
const (
	bootstrapResamples = 2000
	bootstrapMinRuns   = 5 // per side; fewer runs get the range statement
)

// runSet is one side's per-run values; above[i] marks a value known only
// as a lower bound (the run's percentile was censored: > v).
type runSet struct {
	v     []float64
	above []bool
}

func (r runSet) censored() bool { return slices.Contains(r.above, true) }

// lo and hi bound the side's runs: every run lies in [lo, hi].
func (r runSet) lo() float64 { return slices.Min(r.v) }
func (r runSet) hi() float64 {
	if r.censored() {
		return math.Inf(1)
	}
	return slices.Max(r.v)
}

// confidence says whether the per-run values a (the reference's) and b
// differ beyond their run-to-run spread. Each value is one run's own
// figure (its P99, its goodput): they are compared as a distribution over
// runs, never averaged. With at least bootstrapMinRuns exact runs on each
// side it gives a bootstrap interval of median(b) − median(a); with
// fewer, or with censored runs (> x), it says whether the two ranges
// overlap (a censored run reaches up without bound). Empty when neither
// side has repeats. kind is the metric's unit, for the interval.
func confidence(kind string, a, b runSet) string {
	if len(a.v) < 2 || len(b.v) < 2 {
		if len(a.v) >= 2 || len(b.v) >= 2 {
			return "repeats on one side only: no confidence statement"
		}
		return ""
	}
	if a.lo() == a.hi() && b.lo() == b.hi() && a.lo() == b.lo() {
		return fmt.Sprintf("the same in every run (%d vs %d runs)", len(a.v), len(b.v))
	}
	if len(a.v) >= bootstrapMinRuns && len(b.v) >= bootstrapMinRuns && !a.censored() && !b.censored() {
		lo, hi := bootstrapDiff(a.v, b.v)
		verdict := "includes 0: not distinguishable"
		if lo > 0 || hi < 0 {
			verdict = "excludes 0: distinguishable"
		}
		return fmt.Sprintf("median difference 95%% CI [%s, %s] (bootstrap, %d vs %d runs): %s", fmtDelta(kind, lo), fmtDelta(kind, hi), len(a.v), len(b.v), verdict)
	}
	why := fmt.Sprintf("too few for an interval: --repeat %d gives one", bootstrapMinRuns)
	if a.censored() || b.censored() {
		why = "some runs only bound it (> x): no interval"
	}
	if b.lo() > a.hi() || b.hi() < a.lo() {
		return fmt.Sprintf("ranges do not overlap (%d vs %d runs; %s)", len(a.v), len(b.v), why)
	}
	return fmt.Sprintf("ranges overlap: not distinguishable with %d vs %d runs", len(a.v), len(b.v))
}

// bootstrapDiff returns the 2.5th and 97.5th percentiles of
// median(b*) − median(a*) over resamples a*, b* drawn with replacement,
// from a fixed seed (the same folders give the same interval).
func bootstrapDiff(a, b []float64) (lo, hi float64) {
	diff := func(d [][]float64) float64 { return analyze.MedianOfRuns(d[1]) - analyze.MedianOfRuns(d[0]) }
	return analyze.Bootstrap(rand.New(rand.NewPCG(1, 2)), bootstrapResamples, 0.95, diff, a, b)
}
