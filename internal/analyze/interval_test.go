package analyze

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveCDF sums every term by lgamma: slow, but plainly right.
func naiveCDF(n, k int64, p float64) float64 {
	s := 0.0
	for j := int64(0); j <= k; j++ {
		a, _ := math.Lgamma(float64(n) + 1)
		b, _ := math.Lgamma(float64(j) + 1)
		c, _ := math.Lgamma(float64(n-j) + 1)
		s += math.Exp(a - b - c + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return s
}

func TestBinomCDFAgreesWithTheSumOfItsTerms(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		n := 1 + rng.Int64N(3000)
		k := rng.Int64N(n + 1)
		p := []float64{0.01, 0.05, 0.5, 0.95, 0.99, rng.Float64()}[rng.IntN(6)]
		got, want := binomCDF(n, k, p), naiveCDF(n, k, p)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("binomCDF(%d, %d, %g) = %.12g, want %.12g", n, k, p, got, want)
		}
	}
}

func TestQuantileRanks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int64
		q      float64
		lo, hi int64
	}{
		// The textbook median interval of 10 values, [X(2), X(9)]:
		// P(B ≤ 1) = 11/1024 ≤ 2.5% < P(B ≤ 2) = 56/1024.
		{"median of 10", 10, 0.5, 2, 9},
		// P95 of 83: P(B ≥ 83) = 0.95^83 = 1.4% ≤ 2.5%, P(B ≥ 82) = 7.6%.
		{"p95 of 83", 83, 0.95, 75, 83},
		// A P99 has an upper bound only from 368 values: 0.99^367 =
		// 2.501% > 2.5% ≥ 0.99^368 = 2.476%.
		{"p99 of 70", 70, 0.99, 67, 71},
		{"p99 of 367", 367, 0.99, 359, 368},
		{"p99 of 368", 368, 0.99, 360, 368},
		{"one value", 1, 0.5, 0, 2},
		{"none", 0, 0.5, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := QuantileRanks(tc.n, tc.q)
			if lo != tc.lo || hi != tc.hi {
				t.Fatalf("QuantileRanks(%d, %g) = %d, %d; want %d, %d", tc.n, tc.q, lo, hi, tc.lo, tc.hi)
			}
			// The defining inequalities, checked directly.
			if lo >= 1 && naiveCDF(tc.n, lo-1, tc.q) > tail {
				t.Errorf("P(B ≤ lo−1) = %g > %g", naiveCDF(tc.n, lo-1, tc.q), tail)
			}
			if lo < tc.n && naiveCDF(tc.n, lo, tc.q) <= tail {
				t.Errorf("lo+1 would do: P(B ≤ lo) = %g", naiveCDF(tc.n, lo, tc.q))
			}
		})
	}
}

func TestProportionCI(t *testing.T) {
	for _, tc := range []struct {
		k, n   int64
		lo, hi float64
	}{
		{0, 10, 0, 1 - math.Pow(tail, 0.1)}, // 0.3085
		{10, 10, math.Pow(tail, 0.1), 1},    // 0.6915
		{5, 10, 0.187086, 0.812914},
		{400, 400, math.Pow(tail, 1.0/400), 1}, // 0.99082: 400 of 400 shows ≥ 99%
		{0, 0, 0, 1},
	} {
		lo, hi := ProportionCI(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 1e-6 || math.Abs(hi-tc.hi) > 1e-6 {
			t.Errorf("ProportionCI(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func BenchmarkQuantileRanksMillion(b *testing.B) {
	for b.Loop() {
		QuantileRanks(1_000_000, 0.99)
	}
}
