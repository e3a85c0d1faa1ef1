package analyze

import (
	"math"
	"testing"
)

func vals(xs ...float64) []RunValue {
	out := make([]RunValue, len(xs))
	for i, x := range xs {
		out[i] = RunValue{V: x}
	}
	return out
}

// Five runs: min/median/max by hand, a bootstrap interval that is the
// same for the same seed, lies within the runs' range and contains the
// median.
func TestSpreadBootstrapFiveRuns(t *testing.T) {
	v := vals(812, 1020, 905, 640, 1310)
	s := SpreadOf(v, 7)
	if s.N != 5 || s.Min != 640 || s.Median != 905 || s.Max != 1310 {
		t.Fatalf("n %d min %g median %g max %g, want 5, 640, 905 (the 3rd smallest), 1310", s.N, s.Min, s.Median, s.Max)
	}
	if !s.CI || s.CILevel != 0.95 || s.Resample != spreadResamples {
		t.Fatalf("no 95%% interval: %+v", s)
	}
	if !(s.CILow <= s.Median && s.Median <= s.CIHigh) || s.CILow < s.Min || s.CIHigh > s.Max {
		t.Errorf("interval [%g, %g] does not hold the median %g within [%g, %g]", s.CILow, s.CIHigh, s.Median, s.Min, s.Max)
	}
	if s.CILow == s.CIHigh {
		t.Errorf("interval [%g, %g] is a point: the resampling did nothing", s.CILow, s.CIHigh)
	}
	again := SpreadOf(v, 7)
	if again.CILow != s.CILow || again.CIHigh != s.CIHigh {
		t.Errorf("not deterministic: [%g, %g] then [%g, %g]", s.CILow, s.CIHigh, again.CILow, again.CIHigh)
	}
	// By hand: a resample's median (3rd smallest of 5 draws) is below 812
	// only if 3 of 5 draws are 640: P = Σ_{j≥3} C(5,j)(1/5)^j(4/5)^(5−j)
	// ≈ 5.8% > 2.5%, so the 2.5% quantile is 640; the 97.5% quantile is
	// 1310 by symmetry (3 draws of 1310: 5.8%).
	if s.CILow != 640 || s.CIHigh != 1310 {
		t.Errorf("interval [%g, %g], want [640, 1310]", s.CILow, s.CIHigh)
	}
	// A wider sample gives an interval narrower than its range.
	w := SpreadOf(vals(10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 1)
	if !(w.CILow > 10 && w.CIHigh < 20 && w.CILow <= w.Median && w.Median <= w.CIHigh) {
		t.Errorf("11 runs: interval [%g, %g] around median %g", w.CILow, w.CIHigh, w.Median)
	}
}

func TestSpreadWithoutInterval(t *testing.T) {
	cases := map[string]struct {
		in     []RunValue
		median float64
		why    string
	}{
		"four runs":        {vals(4, 1, 3, 2), 2, "fewer than 5 runs"},
		"a lower bound":    {append(vals(1, 2, 3, 4), RunValue{V: 60000, Bound: true}), 3, "some runs' values are lower bounds only"},
		"a run with none":  {append(vals(1, 2, 3, 4), RunValue{V: math.NaN()}), 2, "fewer than 5 runs"},
		"no value at all":  {[]RunValue{{V: math.NaN()}}, math.NaN(), "no run has a value"},
		"two runs, median": {vals(9, 7), 7, "fewer than 5 runs"},
	}
	for name, c := range cases {
		s := SpreadOf(c.in, 1)
		if s.CI || s.NoCI != c.why {
			t.Errorf("%s: ci %v (%q), want none because %q", name, s.CI, s.NoCI, c.why)
		}
		if !(s.Median == c.median || math.IsNaN(c.median) && math.IsNaN(s.Median)) {
			t.Errorf("%s: median %g, want %g", name, s.Median, c.median)
		}
	}
}

// The median of an even number of runs is one run's value (nearest
// rank), never the mean of the middle two: that would average two runs'
// percentiles.
func TestMedianOfRunsNearestRank(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{{[]float64{24, 23}, 23}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2}, {[]float64{7}, 7}} {
		if got := MedianOfRuns(tc.v); got != tc.want {
			t.Errorf("MedianOfRuns(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
