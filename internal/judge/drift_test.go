package judge

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
)

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
			st := TestDrift(Series{Metric: "m", Unit: "ms", X: x, Y: tc.y, Threshold: tc.thr, Relative: tc.rel}, 0.95)
			if st.Tested != tc.tested || st.Drifting != tc.drifting {
				t.Fatalf("tested %v drifting %v: %s", st.Tested, st.Drifting, st.Text)
			}
		})
	}
}

// A change past the threshold whose interval includes 0 is stable, and the
// line says why (the soak once printed "-20.4% … threshold 20% → stable"
// with no reason).
func TestDriftStableSaysWhy(t *testing.T) {
	x := []float64{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75}
	// Noise around 1000 ms with a fitted change of about −25 %, far from
	// significant.
	y := []float64{1400, 600, 1500, 500, 1300, 700, 1000, 600}
	d := TestDrift(Series{Metric: "p95 TTFT", Unit: "ms", X: x, Y: y, Threshold: 0.2, Relative: true}, 0.95)
	if d.Trend.Significant() || math.Abs(d.Relative) < 0.2 || d.Drifting {
		t.Fatalf("fixture: want a big, not significant change: %+v", d)
	}
	if want := "→ stable: the change reaches the threshold, but the CI includes 0 (not significant)"; !strings.HasSuffix(d.Text, want) {
		t.Errorf("text %q\nwant it to end %q", d.Text, want)
	}
}

// Series on dyadic numbers fit exactly (no rounding, SE = 0, p = 0 or 1),
// so every number in the text is computed by hand: eight windows a quarter
// of an hour apart, x = 0, 0.25, …, 1.75 h, so x_last − x_first = 1.75 h.
func TestDriftText(t *testing.T) {
	x := []float64{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75}
	line := func(a, b float64) []float64 { // y = a + b·i at x = i/4
		y := make([]float64, len(x))
		for i := range y {
			y[i] = a + b*float64(i)
		}
		return y
	}
	nan := math.NaN()
	cases := []struct {
		name string
		s    Series
		want Drift // Metric, Unit, Threshold and IsRel are checked from s; Trend is not compared
	}{
		// slope 64 ms per quarter hour = 256 ms/h; change 256 × 1.75 = 448 ms;
		// mean 1000 + 64·3.5 = 1224 ms; 448 / 1224 = +36.6 % ≥ 20 %.
		{"latency drifting up", Series{Metric: "p95 completion", Unit: "ms", X: x, Y: line(1000, 64), Threshold: 0.2, Relative: true},
			Drift{Windows: 8, Tested: true, Change: 448, Relative: 448.0 / 1224, Drifting: true,
				Text: "p95 completion: +256ms per hour (95% CI 256ms to 256ms, p = 0, 8 windows); fitted change over the soak +448ms (+36.6% of its mean 1.22s); drift threshold 20% of the mean → DRIFTING up"}},
		// mean 2000 − 224 = 1776 ms; −448 / 1776 = −25.2 %.
		{"latency drifting down", Series{Metric: "p95 TTFT", Unit: "ms", X: x, Y: line(2000, -64), Threshold: 0.2, Relative: true},
			Drift{Windows: 8, Tested: true, Change: -448, Relative: -448.0 / 1776, Drifting: true,
				Text: "p95 TTFT: -256ms per hour (95% CI -256ms to -256ms, p = 0, 8 windows); fitted change over the soak -448ms (-25.2% of its mean 1.78s); drift threshold 20% of the mean → DRIFTING down"}},
		// slope 32 ms/h, change 56 ms, mean 1028 ms: 5.4 % < 20 %.
		{"significant but small", Series{Metric: "p95 TTFT", Unit: "ms", X: x, Y: line(1000, 8), Threshold: 0.2, Relative: true},
			Drift{Windows: 8, Tested: true, Change: 56, Relative: 56.0 / 1028,
				Text: "p95 TTFT: +32ms per hour (95% CI 32ms to 32ms, p = 0, 8 windows); fitted change over the soak +56ms (+5.4% of its mean 1.03s); drift threshold 20% of the mean → stable: a significant trend, but the change is under the threshold"}},
		// slope (1/256) / (1/4) = 1/64 = 1.5625 points/h; change 1.75/64 = 2.734375 points ≥ 1.
		{"failure rate drifting up", Series{Metric: "failure rate", Unit: "fraction", X: x, Y: line(1.0/128, 1.0/256), Threshold: 0.01},
			Drift{Windows: 8, Tested: true, Change: 1.75 / 64, Drifting: true,
				Text: "failure rate: +1.56% per hour (95% CI 1.56% to 1.56%, p = 0, 8 windows); fitted change over the soak +2.73%; drift threshold 1% → DRIFTING up"}},
		{"change exactly at the threshold drifts", Series{Metric: "failure rate", Unit: "fraction", X: x, Y: line(1.0/128, 1.0/256), Threshold: 1.75 / 64},
			Drift{Windows: 8, Tested: true, Change: 1.75 / 64, Drifting: true,
				Text: "failure rate: +1.56% per hour (95% CI 1.56% to 1.56%, p = 0, 8 windows); fitted change over the soak +2.73%; drift threshold 2.73% → DRIFTING up"}},
		{"failure rate flat", Series{Metric: "failure rate", Unit: "fraction", X: x, Y: line(1.0/64, 0), Threshold: 0.01},
			Drift{Windows: 8, Tested: true,
				Text: "failure rate: +0% per hour (95% CI 0% to 0%, p = 1, 8 windows); fitted change over the soak +0%; drift threshold 1% → stable: the CI includes 0 (not significant) and the change is under the threshold"}},
		// The change runs from the first to the last window with a value:
		// 256 ms/h × (1.5 − 0.25) h = 320 ms; mean 1000 + 64·3.5 = 1224 ms.
		{"empty windows at both ends", Series{Metric: "p95 completion", Unit: "ms", X: x, Y: []float64{nan, 1064, 1128, 1192, 1256, 1320, 1384, nan}, Threshold: 0.2, Relative: true},
			Drift{Windows: 6, Tested: true, Change: 320, Relative: 320.0 / 1224, Drifting: true,
				Text: "p95 completion: +256ms per hour (95% CI 256ms to 256ms, p = 0, 6 windows); fitted change over the soak +320ms (+26.1% of its mean 1.22s); drift threshold 20% of the mean → DRIFTING up"}},

		// Sad paths.
		{"relative with a zero mean never drifts", Series{Metric: "m", Unit: "ms", X: x, Y: line(-14, 4), Threshold: 0.2, Relative: true},
			Drift{Windows: 8, Tested: true, Change: 28,
				Text: "m: +16ms per hour (95% CI 16ms to 16ms, p = 0, 8 windows); fitted change over the soak +28ms (+0.0% of its mean 0ms); drift threshold 20% of the mean → stable: a significant trend, but the change is under the threshold"}},
		{"five windows", Series{Metric: "m", Unit: "ms", X: x, Y: []float64{1, 2, 3, nan, 4, nan, 5, nan}, Threshold: 0.2, Relative: true},
			Drift{Windows: 5, Why: "only 5 windows with values (need 6)", Text: "m: not tested, only 5 windows with values (need 6)"}},
		{"no windows", Series{Metric: "engine KV-cache usage", Unit: "fraction", X: x, Y: line(nan, 0), Threshold: 0.1},
			Drift{Why: "only 0 windows with values (need 6)", Text: "engine KV-cache usage: not tested, only 0 windows with values (need 6)"}},
		{"all windows at one time", Series{Metric: "m", Unit: "ms", X: make([]float64, 8), Y: line(1000, 64), Threshold: 0.2, Relative: true},
			Drift{Windows: 8, Why: "no spread in time", Text: "m: not tested, no spread in time"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := TestDrift(tc.s, 0.95)
			want := tc.want
			want.Metric, want.Unit, want.Threshold, want.IsRel = tc.s.Metric, tc.s.Unit, tc.s.Threshold, tc.s.Relative
			if got.Tested {
				want.Trend = got.Trend
			}
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if !got.Tested && got.Trend != (analyze.Trend{}) {
				t.Errorf("untested series has a trend: %+v", got.Trend)
			}
		})
	}
}

func TestDriftVerdict(t *testing.T) {
	stable := Drift{Tested: true}
	drifting := Drift{Tested: true, Drifting: true}
	untested := Drift{Why: "only 2 windows with values (need 6)"}
	cases := []struct {
		name   string
		drifts []Drift
		want   string
	}{
		{"one stable", []Drift{stable}, DriftStable},
		{"stable and untested", []Drift{untested, stable, untested}, DriftStable},
		{"one drifting among stable", []Drift{stable, drifting, stable}, DriftDrifting},
		{"drifting and untested", []Drift{untested, drifting}, DriftDrifting},
		// Sad paths.
		{"nothing tested", []Drift{untested, untested}, DriftInconclusive},
		{"no series", nil, DriftInconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DriftVerdict(tc.drifts); got != tc.want {
				t.Errorf("DriftVerdict = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFmtUnit(t *testing.T) {
	cases := []struct {
		v    float64
		unit string
		want string
	}{
		{812, "ms", "812ms"},
		{81.25, "ms", "81.2ms"},
		{999, "ms", "999ms"},
		{1000, "ms", "1s"},
		{1520, "ms", "1.52s"},
		{-1520, "ms", "-1.52s"},
		{0.015, "fraction", "1.5%"},
		{1, "fraction", "100%"},
		{0.1234, "", "0.123"},
		{1234, "req", "1.23e+03"},
	}
	for _, tc := range cases {
		if got := fmtUnit(tc.v, tc.unit); got != tc.want {
			t.Errorf("fmtUnit(%g, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	for _, tc := range []struct {
		s    string
		v    float64
		want string
	}{{"1.5%", 0.015, "+1.5%"}, {"0ms", 0, "+0ms"}, {"-3ms", -3, "-3ms"}, {"+2", 2, "+2"}} {
		if got := signed(tc.s, tc.v); got != tc.want {
			t.Errorf("signed(%q, %g) = %q, want %q", tc.s, tc.v, got, tc.want)
		}
	}
}

// soak.json's "trends" entries keep the field names experiment.SoakTrend
// wrote before the drift test moved here.
func TestDriftJSON(t *testing.T) {
	d := Drift{Metric: "p95 TTFT", Unit: "ms", Windows: 8, Tested: true, Change: 448, Relative: 0.5, Threshold: 0.2, IsRel: true, Drifting: true, Text: "x",
		Trend: analyze.Trend{N: 8, Slope: 256, Intercept: 1000, SlopeSE: 1, CILow: 250, CIHigh: 262, T: 256, P: 0.001, Confidence: 0.95, MeanY: 1224}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"metric":"p95 TTFT","unit":"ms","windows":8,"tested":true,` +
		`"trend":{"n":8,"slope":256,"intercept":1000,"slope_se":1,"ci_low":250,"ci_high":262,"p":0.001,"confidence":0.95,"mean_y":1224},` +
		`"change":448,"relative":0.5,"threshold":0.2,"threshold_is_relative":true,"drifting":true,"text":"x"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	d.Tested, d.Why = false, "no spread in time"
	if b, _ := json.Marshal(d); !json.Valid(b) || !strings.Contains(string(b), `"tested":false,"why":"no spread in time","trend"`) {
		t.Errorf("why missing or misplaced: %s", b)
	}
}
