package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func virtualSoak(t *testing.T, mutate func(*SoakConfig)) (*SoakResult, Outcome, string) {
	t.Helper()
	c := DefaultSoakConfig()
	c.Simulate, c.Quiet = true, true
	c.Rate, c.Duration, c.Warmup = 5, 30*time.Minute, time.Minute
	mutate(&c)
	var out strings.Builder
	env, err := Prepare(context.Background(), c.Options, true, &out, quietLogger(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	dir := t.TempDir()
	res, err := Soak(context.Background(), env, &c, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var sr SoakResult
	b, err := os.ReadFile(filepath.Join(dir, "soak.json"))
	if err != nil || json.Unmarshal(b, &sr) != nil {
		t.Fatalf("soak.json: %v\n%s", err, b)
	}
	for _, f := range []string{"results.md", "results.csv", "results.json", "report.html", "requests.jsonl", "summary.json", "timeseries.csv", "engine.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	return &sr, res, out.String()
}

func trendOf(sr *SoakResult, metric string) SoakTrend {
	for _, t := range sr.Trends {
		if t.Metric == metric {
			return t
		}
	}
	return SoakTrend{}
}

// At a constant load the simulator is stationary: the soak says stable.
// When its engine slows by half per hour it says drifting, upward, on the
// latencies and the KV-cache usage, with a significant slope.
func TestSoakDrift(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("stable seed %d", seed), func(t *testing.T) {
			sr, res, out := virtualSoak(t, func(c *SoakConfig) { c.Seed = seed })
			if sr.Verdict != SoakStable || !res.SLOPass {
				t.Fatalf("verdict %s, outcome %+v\n%s", sr.Verdict, res, out)
			}
			for _, tr := range sr.Trends {
				if !tr.Tested || tr.Windows != 30 {
					t.Errorf("%s: tested %v over %d windows, want 30", tr.Metric, tr.Tested, tr.Windows)
				}
			}
		})
		t.Run(fmt.Sprintf("slowing down seed %d", seed), func(t *testing.T) {
			sr, res, out := virtualSoak(t, func(c *SoakConfig) { c.Seed, c.Sim.SlowdownPerHour = seed, 0.5 })
			if sr.Verdict != SoakDrifting || res.SLOPass {
				t.Fatalf("verdict %s, outcome %+v\n%s", sr.Verdict, res, out)
			}
			if tr := trendOf(sr, "p95 completion"); !tr.Drifting || tr.Trend.CILow <= 0 || tr.Change <= 0 {
				t.Errorf("not drifting up: %s", tr.Text)
			}
			// The engine holds more sequences as each takes longer.
			if tr := trendOf(sr, "engine KV-cache usage"); tr.Trend.CILow <= 0 {
				t.Errorf("no significant rise: %s", tr.Text)
			}
			if !strings.Contains(out, "verdict: DRIFTING") || !strings.Contains(out, "DRIFTING up") {
				t.Errorf("output does not say so:\n%s", out)
			}
		})
	}
}

func TestTestDrift(t *testing.T) {
	x := make([]float64, 20)
	for i := range x {
		x[i] = float64(i) / 20 // one hour in 3-minute windows
	}
	series := func(f func(i int) float64) []float64 {
		y := make([]float64, len(x))
		for i := range y {
			y[i] = f(i)
		}
		return y
	}
	wobble := func(i int) float64 { return []float64{-1, 1, 0.5, -0.5}[i%4] }
	cases := []struct {
		name             string
		y                []float64
		thr              float64
		rel              bool
		tested, drifting bool
	}{
		{"flat with noise", series(func(i int) float64 { return 1000 + 30*wobble(i) }), 0.2, true, true, false},
		{"small significant rise", series(func(i int) float64 { return 1000 + 5*float64(i) + wobble(i) }), 0.2, true, true, false},
		{"large rise", series(func(i int) float64 { return 1000 + 30*float64(i) + 30*wobble(i) }), 0.2, true, true, true},
		{"large fall", series(func(i int) float64 { return 2000 - 30*float64(i) + 30*wobble(i) }), 0.2, true, true, true},
		{"error rate creeping up", series(func(i int) float64 { return 0.001 * float64(i) }), 0.01, false, true, true},
		{"error rate constant", series(func(int) float64 { return 0.02 }), 0.01, false, true, false},
		{"too few windows", append(series(func(int) float64 { return 1 })[:5], make([]float64, 15)...), 0.2, true, false, false},
	}
	cases[len(cases)-1].y = func() []float64 {
		y := series(func(int) float64 { return math.NaN() })
		for i := range 5 {
			y[i] = float64(i)
		}
		return y
	}()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := testDrift(soakSeries{metric: "m", unit: "ms", x: x, y: tc.y, threshold: tc.thr, relative: tc.rel}, 0.95)
			if st.Tested != tc.tested || st.Drifting != tc.drifting {
				t.Fatalf("tested %v drifting %v: %s", st.Tested, st.Drifting, st.Text)
			}
		})
	}
}

func TestSoakConfigErrorsNameTheFlag(t *testing.T) {
	cases := map[string]struct {
		mutate func(*SoakConfig)
		want   string
	}{
		"no rate with target": {func(c *SoakConfig) { c.Rate, c.Target = 0, "http://127.0.0.1:1/v1" }, "--rate: required with --target"},
		"negative rate":       {func(c *SoakConfig) { c.Rate = -1 }, "--rate: must be > 0"},
		"unreachable rate":    {func(c *SoakConfig) { c.Rate = 3e6 }, "--rate: 3e+06 requests/s is more than the load generator can schedule"},
		"too short":           {func(c *SoakConfig) { c.Duration = 3 * time.Minute }, "--duration: must hold at least 6 windows of --window 1m0s"},
		"bad confidence":      {func(c *SoakConfig) { c.Confidence = 1 }, "--confidence: must be within (0.5, 1)"},
		"zero drift":          {func(c *SoakConfig) { c.DriftLatency = 0 }, "--drift-latency: must be > 0"},
		"kv drift over 1":     {func(c *SoakConfig) { c.DriftKV = 2 }, "--drift-kv: must be within (0, 1]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := DefaultSoakConfig()
			c.Rate = 5
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
