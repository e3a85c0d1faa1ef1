package experiment

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
		tr, ok := fitTrend(x, y, 0.95)
		if !ok || tr.Slope != 2 || tr.Intercept != 1 || tr.SlopeSE != 0 || tr.P != 0 || !tr.Significant() {
			t.Fatalf("%+v", tr)
		}
	})
	t.Run("textbook example", func(t *testing.T) {
		// y = 0.5 + 1.2 x with residuals +0.3, −0.3, −0.3, +0.3: Sxx = 5,
		// RSS = 0.36, s² = 0.18, SE = √(0.18/5) = 0.18974, t = 6.3246,
		// t(0.975, 2) = 4.3027: CI 1.2 ± 0.8164.
		x := []float64{0, 1, 2, 3}
		y := []float64{0.8, 1.4, 2.6, 4.4}
		tr, ok := fitTrend(x, y, 0.95)
		if !ok {
			t.Fatal("not fitted")
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"slope", tr.Slope, 1.2}, {"intercept", tr.Intercept, 0.5}, {"se", tr.SlopeSE, 0.18974}, {"ci low", tr.CILow, 0.3836}, {"ci high", tr.CIHigh, 2.0164}, {"p", tr.P, 0.0241}} {
			if math.Abs(c.got-c.want) > 1e-3 {
				t.Errorf("%s = %.5f, want %.5f", c.name, c.got, c.want)
			}
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
			tr, _ := fitTrend(x, y, 0.95)
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
		for name, xy := range map[string][2][]float64{
			"two points":     {{0, 1}, {1, 2}},
			"same x":         {{1, 1, 1}, {1, 2, 3}},
			"NaN leaves two": {{0, 1, 2}, {1, math.NaN(), 3}},
			"empty":          {nil, nil},
		} {
			if _, ok := fitTrend(xy[0], xy[1], 0.95); ok {
				t.Errorf("%s: fitted", name)
			}
		}
	})
}
