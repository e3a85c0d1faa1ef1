package analyze

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTQuantile(t *testing.T) {
	cases := []struct {
		p, df, want float64
	}{
		{0.975, 1, 12.706},
		{0.975, 2, 4.303},
		{0.975, 10, 2.228},
		{0.975, 30, 2.042},
		{0.995, 5, 4.032},
		{0.95, 20, 1.725},
		{0.975, 1e6, 1.960},
		{0.025, 10, -2.228},
		{0.5, 7, 0},
	}
	for _, tc := range cases {
		if got := tQuantile(tc.p, tc.df); math.Abs(got-tc.want) > 0.001 {
			t.Errorf("t(%g, df %g) = %.4f, want %.3f", tc.p, tc.df, got, tc.want)
		}
		if tc.p != 0.5 {
			if back := tCDF(tQuantile(tc.p, tc.df), tc.df); math.Abs(back-tc.p) > 1e-9 {
				t.Errorf("tCDF(tQuantile(%g)) = %g", tc.p, back)
			}
		}
	}
}

func TestFitTrend(t *testing.T) {
	t.Run("exact line", func(t *testing.T) {
		x := []float64{0, 1, 2, 3, 4}
		y := []float64{1, 3, 5, 7, 9}
		tr, ok := FitTrend(x, y, 0.95)
		if !ok || tr.Slope != 2 || tr.Intercept != 1 || tr.SlopeSE != 0 || tr.P != 0 || !tr.Significant() {
			t.Fatalf("%+v", tr)
		}
		// ȳ = 5; a perfect fit has t = +Inf; At(10) = 1 + 2·10.
		if tr.N != 5 || tr.MeanY != 5 || !math.IsInf(tr.T, 1) || tr.At(10) != 21 || tr.Confidence != 0.95 {
			t.Fatalf("%+v", tr)
		}
	})
	t.Run("flat line", func(t *testing.T) {
		// Slope 0 and no residuals: nothing to test, p = 1, not significant.
		tr, ok := FitTrend([]float64{0, 1, 2}, []float64{4, 4, 4}, 0.95)
		if !ok || tr.Slope != 0 || tr.SlopeSE != 0 || tr.P != 1 || tr.T != 0 || tr.Significant() {
			t.Fatalf("%+v", tr)
		}
	})
	t.Run("textbook example", func(t *testing.T) {
		// y = 0.5 + 1.2 x with residuals +0.3, −0.3, −0.3, +0.3: Sxx = 5,
		// RSS = 0.36, s² = 0.18, SE = √(0.18/5) = 0.18974, t = 6.3246,
		// t(0.975, 2) = 4.3027: CI 1.2 ± 0.8164.
		x := []float64{0, 1, 2, 3}
		y := []float64{0.8, 1.4, 2.6, 4.4}
		tr, ok := FitTrend(x, y, 0.95)
		if !ok {
			t.Fatal("not fitted")
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"slope", tr.Slope, 1.2}, {"intercept", tr.Intercept, 0.5}, {"se", tr.SlopeSE, 0.18974}, {"ci low", tr.CILow, 0.3836}, {"ci high", tr.CIHigh, 2.0164}, {"p", tr.P, 0.0241}, {"t", tr.T, 6.3246}, {"mean y", tr.MeanY, 2.3}} {
			if math.Abs(c.got-c.want) > 1e-3 {
				t.Errorf("%s = %.5f, want %.5f", c.name, c.got, c.want)
			}
		}
	})
	t.Run("non-finite points are skipped", func(t *testing.T) {
		// The same exact line as above with a NaN, an Inf and a trailing x
		// without y: the three finite points fit y = 1 + 2x.
		x := []float64{0, 1, 2, math.Inf(1), 4, 5}
		y := []float64{1, math.NaN(), 5, 7, 9}
		tr, ok := FitTrend(x, y, 0.95)
		if !ok || tr.N != 3 || tr.Slope != 2 || tr.Intercept != 1 {
			t.Fatalf("%+v", tr)
		}
	})
	t.Run("noise without trend is rarely significant", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		significant := 0
		const trials = 400
		for range trials {
			var x, y []float64
			for i := range 30 {
				x, y = append(x, float64(i)), append(y, rng.NormFloat64())
			}
			tr, _ := FitTrend(x, y, 0.95)
			if tr.Significant() {
				significant++
			}
		}
		// 5% expected; 400 trials give a standard deviation of ~1.1 points.
		if rate := float64(significant) / trials; rate > 0.09 || rate < 0.02 {
			t.Fatalf("false positive rate %.3f, want ≈ 0.05", rate)
		}
	})
	t.Run("sad paths", func(t *testing.T) {
		for name, tc := range map[string]struct {
			x, y []float64
			n    int
		}{
			"two points":     {[]float64{0, 1}, []float64{1, 2}, 2},
			"same x":         {[]float64{1, 1, 1}, []float64{1, 2, 3}, 3},
			"NaN leaves two": {[]float64{0, 1, 2}, []float64{1, math.NaN(), 3}, 2},
			"y too short":    {[]float64{0, 1, 2}, []float64{1, 2}, 2},
			"empty":          {nil, nil, 0},
		} {
			tr, ok := FitTrend(tc.x, tc.y, 0.95)
			if ok {
				t.Errorf("%s: fitted", name)
			}
			if tr != (Trend{N: tc.n}) {
				t.Errorf("%s: %+v, want only N = %d", name, tr, tc.n)
			}
		}
	})
}
