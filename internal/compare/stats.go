package compare

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Bootstrap settings: the interval is of the difference of the medians
// of the per-run values, 95%, from this many resamples of each side.
const (
	bootstrapResamples = 2000
	bootstrapMinRuns   = 5 // per side; fewer runs get the range statement
)

// confidence says whether the per-run values a (the reference's) and b
// differ beyond their run-to-run spread. Each value is one run's own
// figure (its P99, its goodput): they are compared as a distribution over
// runs, never averaged. With at least bootstrapMinRuns runs on each side
// it gives a bootstrap interval of median(b) − median(a); with fewer, it
// says whether the two ranges overlap. Empty when a side has no repeats.
func confidence(a, b []float64) string {
	if len(a) < 2 || len(b) < 2 {
		if len(a) >= 2 || len(b) >= 2 {
			return "repeats on one side only: no confidence statement"
		}
		return ""
	}
	if len(a) >= bootstrapMinRuns && len(b) >= bootstrapMinRuns {
		lo, hi := bootstrapDiff(a, b)
		verdict := "includes 0: not distinguishable"
		if lo > 0 || hi < 0 {
			verdict = "excludes 0: distinguishable"
		}
		return fmt.Sprintf("median difference 95%% CI [%s, %s] (bootstrap, %d vs %d runs): %s", fmtNum(lo), fmtNum(hi), len(a), len(b), verdict)
	}
	amin, amax := slices.Min(a), slices.Max(a)
	bmin, bmax := slices.Min(b), slices.Max(b)
	if bmin > amax || bmax < amin {
		return fmt.Sprintf("ranges do not overlap (%d vs %d runs; too few for an interval: --repeat %d gives one)", len(a), len(b), bootstrapMinRuns)
	}
	return fmt.Sprintf("ranges overlap: not distinguishable with %d vs %d runs", len(a), len(b))
}

// bootstrapDiff returns the 2.5th and 97.5th percentiles of
// median(b*) − median(a*) over resamples a*, b* drawn with replacement,
// from a fixed seed (the same folders give the same interval).
func bootstrapDiff(a, b []float64) (lo, hi float64) {
	r := rand.New(rand.NewPCG(1, 2))
	diffs := make([]float64, bootstrapResamples)
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	for i := range diffs {
		for j := range ra {
			ra[j] = a[r.IntN(len(a))]
		}
		for j := range rb {
			rb[j] = b[r.IntN(len(b))]
		}
		diffs[i] = median(rb) - median(ra)
	}
	slices.Sort(diffs)
	return diffs[int(0.025*float64(len(diffs)))], diffs[int(0.975*float64(len(diffs)))-1]
}

// median of v (v is reordered).
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
