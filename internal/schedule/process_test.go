package schedule

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// offsets draws offsets from a fresh process until one reaches d.
func offsets(t *testing.T, kind string, rate, burstiness float64, d time.Duration, seed int64) []time.Duration {
	t.Helper()
	p, err := NewProcess(kind, rate, burstiness)
	if err != nil {
		t.Fatal(err)
	}
	rng := phaseRand(seed, "test")
	var out []time.Duration
	for {
		at := p.Next(rng)
		if at >= d {
			return out
		}
		out = append(out, at)
	}
}

func TestConstantExact(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		d    time.Duration
		want []time.Duration
	}{
		{"10/s for 1s excludes the end", 10, time.Second, []time.Duration{0, 100e6, 200e6, 300e6, 400e6, 500e6, 600e6, 700e6, 800e6, 900e6}},
		{"3/s rounds to the nearest ns", 3, time.Second, []time.Duration{0, 333333333, 666666667}},
		{"0.5/s", 0.5, 5 * time.Second, []time.Duration{0, 2e9, 4e9}},
		{"end just after an arrival", 4, 750*time.Millisecond + 1, []time.Duration{0, 250e6, 500e6, 750e6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := offsets(t, ArrivalConstant, tc.rate, 0, tc.d, 1)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("arrival %d at %d, want %d", i, got[i], tc.want[i])
				}
			}
			if n := constantCount(tc.rate, tc.d); n != int64(len(tc.want)) {
				t.Errorf("constantCount = %d, want %d", n, len(tc.want))
			}
		})
	}
}

func TestConstantNoDrift(t *testing.T) {
	// One hour at 7/s: arrival k is exactly round(k·10⁹/7) ns, with no
	// accumulated error.
	got := offsets(t, ArrivalConstant, 7, 0, time.Hour, 1)
	if len(got) != 7*3600 {
		t.Fatalf("count %d, want %d", len(got), 7*3600)
	}
	for k, at := range got {
		want := time.Duration(math.Round(float64(k) * 1e9 / 7))
		if at != want {
			t.Fatalf("arrival %d at %d, want %d", k, at, want)
		}
	}
}

func TestConstantCountProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		rate := math.Exp(rng.Float64()*12 - 4) // ~0.02 to ~3000 per second
		d := time.Duration(rng.Int64N(int64(20 * time.Second)))
		if d == 0 {
			continue
		}
		got := offsets(t, ArrivalConstant, rate, 0, d, 1)
		if n := constantCount(rate, d); n != int64(len(got)) {
			t.Fatalf("rate %g d %v: constantCount %d, process gave %d", rate, d, n, len(got))
		}
	}
}

// gapStats returns the count, mean and coefficient of variation of the
// gaps between successive offsets (the first gap measured from 0).
func gapStats(offs []time.Duration) (n int, mean, cv float64) {
	var sum, sumSq float64
	prev := time.Duration(0)
	for _, at := range offs {
		g := (at - prev).Seconds()
		sum += g
		sumSq += g * g
		prev = at
	}
	n = len(offs)
	mean = sum / float64(n)
	variance := sumSq/float64(n) - mean*mean
	return n, mean, math.Sqrt(variance) / mean
}

func TestPoissonAndGammaStatistics(t *testing.T) {
	const rate = 200.0
	const d = 1000 * time.Second // 200,000 expected arrivals
	tests := []struct {
		name       string
		kind       string
		burstiness float64
	}{
		{"poisson", ArrivalPoisson, 0},
		{"gamma 0.25 (bursty)", ArrivalGamma, 0.25},
		{"gamma 0.5", ArrivalGamma, 0.5},
		{"gamma 1 (poisson)", ArrivalGamma, 1},
		{"gamma 4 (smooth)", ArrivalGamma, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.burstiness
			if tc.kind == ArrivalPoisson {
				b = 1
			}
			offs := offsets(t, tc.kind, rate, tc.burstiness, d, 42)
			n, mean, cv := gapStats(offs)
			t.Logf("n=%d mean gap=%.6g s CV=%.4f", n, mean, cv)
			// Count: mean λD; a renewal process with gap CV c has count
			// variance ≈ λD·c² for long phases (c² = 1/b).
			lambdaD := rate * d.Seconds()
			if sd := math.Sqrt(lambdaD / b); math.Abs(float64(n)-lambdaD) > 4*sd {
				t.Errorf("count %d, want %.0f ± %.0f (4σ)", n, lambdaD, 4*sd)
			}
			// Mean gap 1/λ with standard error (1/λ)/√b/√n.
			if se := 1 / rate / math.Sqrt(b) / math.Sqrt(float64(n)); math.Abs(mean-1/rate) > 4*se {
				t.Errorf("mean gap %g s, want %g ± %g (4σ)", mean, 1/rate, 4*se)
			}
			// CV 1/√b. For gamma the sample variance has relative standard
			// error √((2 + 6/b)/n) (excess kurtosis 6/b); the CV half that.
			wantCV := 1 / math.Sqrt(b)
			relSE := 0.5 * math.Sqrt((2+6/b)/float64(n))
			if math.Abs(cv/wantCV-1) > 4*relSE {
				t.Errorf("CV %.4f, want %.4f ± %.1f%% (4σ)", cv, wantCV, 400*relSE)
			}
		})
	}
}

func TestGammaOneIsPoisson(t *testing.T) {
	p := offsets(t, ArrivalPoisson, 50, 0, 100*time.Second, 7)
	g := offsets(t, ArrivalGamma, 50, 1, 100*time.Second, 7)
	if len(p) != len(g) {
		t.Fatalf("counts differ: poisson %d, gamma(1) %d", len(p), len(g))
	}
	for i := range p {
		if p[i] != g[i] {
			t.Fatalf("arrival %d: poisson %d, gamma(1) %d", i, p[i], g[i])
		}
	}
}

func TestGammaSamplerMoments(t *testing.T) {
	// Gamma(a, 1) has mean a and variance a.
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 200_000
	for _, a := range []float64{0.1, 0.3, 1, 2.5, 30} {
		var sum, sumSq float64
		for range n {
			x := gammaFloat64(rng, a)
			if x < 0 || math.IsNaN(x) {
				t.Fatalf("shape %g: draw %g", a, x)
			}
			sum += x
			sumSq += x * x
		}
		mean := sum / n
		variance := sumSq/n - mean*mean
		if se := math.Sqrt(a / n); math.Abs(mean-a) > 4*se {
			t.Errorf("shape %g: mean %g, want %g ± %g", a, mean, a, 4*se)
		}
		// Var(s²) ≈ (μ4 − σ⁴)/n = σ⁴(2 + 6/a)/n.
		if se := a * math.Sqrt((2+6/a)/n); math.Abs(variance-a) > 4*se {
			t.Errorf("shape %g: variance %g, want %g ± %g", a, variance, a, 4*se)
		}
	}
}

func TestNewProcessErrors(t *testing.T) {
	tests := []struct {
		name       string
		kind       string
		rate, b    float64
		wantErrStr string
	}{
		{"zero rate", ArrivalPoisson, 0, 0, "schedule: rate: must be in (0, 1e+06], got 0"},
		{"NaN rate", ArrivalConstant, math.NaN(), 0, "schedule: rate: must be in (0, 1e+06], got NaN"},
		{"huge rate", ArrivalConstant, 2e6, 0, "schedule: rate: must be in (0, 1e+06], got 2e+06"},
		{"gamma without burstiness", ArrivalGamma, 1, 0, "schedule: burstiness: must be > 0, got 0"},
		{"gamma negative burstiness", ArrivalGamma, 1, -1, "schedule: burstiness: must be > 0, got -1"},
		{"replay is not synthetic", ArrivalReplay, 1, 0, `schedule: arrival: unknown process "replay"`},
		{"unknown", "uniform", 1, 0, `schedule: arrival: unknown process "uniform"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewProcess(tc.kind, tc.rate, tc.b)
			if err == nil || err.Error() != tc.wantErrStr {
				t.Errorf("error %v, want %q", err, tc.wantErrStr)
			}
		})
	}
	if p, err := NewProcess("", 1, 0); err != nil {
		t.Errorf("default process: %v", err)
	} else if _, ok := p.(*Poisson); !ok {
		t.Errorf("default process is %T, want *Poisson", p)
	}
}

func TestToDurationSaturates(t *testing.T) {
	if got := toDuration(1e30); got != math.MaxInt64 {
		t.Errorf("toDuration(1e30) = %d", got)
	}
	// A tiny rate gives astronomically long gaps without overflowing.
	got := offsets(t, ArrivalPoisson, 1e-300, 0, time.Hour, 1)
	if len(got) != 0 {
		t.Errorf("got %d arrivals at rate 1e-300", len(got))
	}
}
