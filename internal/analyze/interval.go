package analyze

import "math"

// Confidence is the confidence level of every interval the analysis
// reports: two-sided, each tail at most (1 − Confidence)/2.
const Confidence = 0.95

// tail is the probability each side of an interval may miss.
const tail = (1 - Confidence) / 2

// Interval is the Confidence interval of one percentile, distribution-free
// (order statistics; see the package documentation): the true percentile of
// the population the sample came from lies in [LoMs, HiMs] with at least
// 95% probability, whatever its distribution.
//
// When the sample is too small for an upper bound (a P99 needs at least
// 367 values), or the upper rank lies among requests that timed out or
// were cancelled in flight, HiOpen is set and HiMs is 0: only the lower
// bound is known. When even the lower rank lies among them, LoCensored is
// set and LoMs is the bound the censored values exceed (the timeout, or
// the largest value recorded): the percentile is above LoMs.
type Interval struct {
	LoMs       float64 `json:"lo_ms"`
	HiMs       float64 `json:"hi_ms"`
	HiOpen     bool    `json:"hi_open,omitempty"`
	LoCensored bool    `json:"lo_censored,omitempty"`
}

// QuantileRanks are the ranks of the order statistics that bound the
// q-quantile of n values with Confidence: lo is the largest l ≥ 1 with
// P(B ≤ l − 1) ≤ tail and hi the smallest u ≤ n with P(B ≥ u) ≤ tail,
// where B ~ Binomial(n, q) counts the values below the true quantile.
// lo is 0 when no order statistic bounds it from below, hi is n + 1 when
// none bounds it from above.
func QuantileRanks(n int64, q float64) (lo, hi int64) {
	if n <= 0 {
		return 0, 1
	}
	// lo: P(B ≤ l−1) grows with l; find the largest l with it ≤ tail.
	if binomCDF(n, 0, q) > tail {
		lo = 0
	} else {
		a, b := int64(1), n // binomCDF(n, a−1) ≤ tail
		for a < b {
			m := a + (b-a+1)/2
			if binomCDF(n, m-1, q) <= tail {
				a = m
			} else {
				b = m - 1
			}
		}
		lo = a
	}
	// hi: P(B ≥ u) = 1 − P(B ≤ u−1) falls as u grows; the smallest u
	// with it ≤ tail.
	if binomSF(n, n, q) > tail {
		return lo, n + 1
	}
	a, b := int64(1), n // binomSF(n, b) ≤ tail
	for a < b {
		m := a + (b-a)/2
		if binomSF(n, m, q) <= tail {
			b = m
		} else {
			a = m + 1
		}
	}
	return lo, a
}

// ProportionCI is the Clopper–Pearson (exact) Confidence interval of a
// proportion of k successes in n trials: lo solves P(Bin(n, lo) ≥ k) =
// tail and hi solves P(Bin(n, hi) ≤ k) = tail. With n = 0 it is [0, 1].
func ProportionCI(k, n int64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	lo, hi = 0, 1
	if k > 0 { // P(B ≥ k) rises with p
		lo = bisect(func(p float64) bool { return binomSF(n, k, p) <= tail })
	}
	if k < n { // P(B ≤ k) falls with p
		hi = bisect(func(p float64) bool { return binomCDF(n, k, p) > tail })
	}
	return lo, hi
}

// BinomialSF is P(B ≥ k) for B ~ Binomial(n, p): how likely k or more
// of n requests are slow when each is slow with probability p.
func BinomialSF(n, k int64, p float64) float64 { return binomSF(n, k, p) }

// bisect returns the p in [0, 1] where ok turns from true to false (ok
// true below it), to about 1e-12.
func bisect(ok func(p float64) bool) float64 {
	a, b := 0.0, 1.0
	for range 60 {
		m := (a + b) / 2
		if ok(m) {
			a = m
		} else {
			b = m
		}
	}
	return (a + b) / 2
}

// binomSF is P(B ≥ k) for B ~ Binomial(n, p).
func binomSF(n, k int64, p float64) float64 {
	if k <= 0 {
		return 1
	}
	return 1 - binomCDF(n, k-1, p)
}

// binomCDF is P(B ≤ k) for B ~ Binomial(n, p), to double precision: the
// terms of the tail that holds k (the smaller sum) are summed from the
// one nearest the mean outward until they no longer change the sum.
func binomCDF(n, k int64, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n:
		return 1
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	if float64(k) <= float64(n)*p {
		return sumPMF(n, 0, k, p)
	}
	return max(0, 1-sumPMF(n, k+1, n, p))
}

// sumPMF is Σ P(B = j) for j in [a, b]. The terms fall on both sides of
// the mean, so it starts at the j in [a, b] nearest the mean (its term by
// lgamma) and walks away from it by the ratio P(j+1)/P(j) = (n − j)/(j +
// 1) · p/(1 − p), stopping once a term is below 1e-18 of the sum.
func sumPMF(n, a, b int64, p float64) float64 {
	s := min(max(int64(math.Round(float64(n)*p)), a), b)
	ln := func(x int64) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	t0 := math.Exp(ln(n) - ln(s) - ln(n-s) + float64(s)*math.Log(p) + float64(n-s)*math.Log1p(-p))
	if t0 == 0 {
		return 0 // the largest term underflows: so does the sum
	}
	r := p / (1 - p)
	sum := t0
	for j, t := s+1, t0; j <= b; j++ {
		t *= float64(n-j+1) / float64(j) * r
		sum += t
		if t < sum*1e-18 {
			break
		}
	}
	for j, t := s-1, t0; j >= a; j-- {
		t /= float64(n-j) / float64(j+1) * r
		sum += t
		if t < sum*1e-18 {
			break
		}
	}
	return min(sum, 1)
}
