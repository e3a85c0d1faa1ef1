package scrape

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var inf = math.Inf(1)

func hist(bounds, counts []float64, sum float64) Hist {
	return Hist{Bounds: bounds, Counts: counts, Count: counts[len(counts)-1], Sum: sum}
}

func TestQuantile(t *testing.T) {
	// 85 observations: 20 in (0,0.3], 20 in (0.3,0.5], 40 in (0.5,1], 5 above 1.
	h := hist([]float64{0.3, 0.5, 1, inf}, []float64{20, 40, 80, 85}, 57)
	tests := []struct {
		name   string
		h      Hist
		q      float64
		want   float64
		above  bool
		atMost bool
	}{
		{"p10 first bucket from 0", h, 0.10, 0.3, false, true},
		{"p50 third bucket", h, 0.50, 0.5 + 0.5*2.5/40, false, false}, // rank 42.5: 2.5 of 40 into (0.5,1]
		{"exactly at a bound", h, 40.0 / 85, 0.5, false, false},
		{"p95 in +Inf", h, 0.95, 1, true, false},
		{"p99 in +Inf", h, 0.99, 1, true, false},
		{"q=0", h, 0, 0.3, false, true},
		{"q=1 in +Inf", h, 1, 1, true, false},
		{"everything below the first bound", hist([]float64{0.3, inf}, []float64{10, 10}, 1), 0.5, 0.3, false, true},
		{"first bound 0 (sglang)", hist([]float64{0, 0.001, inf}, []float64{1000, 1500, 1500}, 0.2), 0.5, 0, false, false},
		{"after the zero bucket", hist([]float64{0, 0.001, inf}, []float64{1000, 1500, 1500}, 0.2), 0.9, 0.001 * 350 / 500, false, false},
		{"empty middle bucket is skipped", hist([]float64{1, 2, 3, inf}, []float64{5, 5, 10, 10}, 15), 0.6, 2 + 1.0/5, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Quantile(tt.h, tt.q)
			if math.Abs(got.Value-tt.want) > 1e-12 || got.Above != tt.above || got.AtMost != tt.atMost {
				t.Errorf("Quantile(%v) = %+v, want %v (above %v, at most %v)", tt.q, got, tt.want, tt.above, tt.atMost)
			}
		})
	}
	unknownCases := map[string]struct {
		h Hist
		q float64
	}{
		"no observations":      {hist([]float64{0.3, inf}, []float64{0, 0}, 0), 0.5},
		"no buckets (summary)": {Hist{Count: 4, Sum: 2}, 0.5},
		"only +Inf":            {hist([]float64{inf}, []float64{4}, 2), 0.5},
		"q < 0":                {h, -0.1},
		"q > 1":                {h, 1.1},
		"q NaN":                {h, math.NaN()},
	}
	for name, c := range unknownCases {
		if got := Quantile(c.h, c.q); got.Known() {
			t.Errorf("%s: Quantile = %+v, want unknown", name, got)
		}
	}
}

// TestQuantileFirstBucketIsAnUpperBound is the case found against vLLM
// 0.32: 500 queue waits with a mean of 0.03 ms all fell in the first bucket
// (0, 0.3 s], and interpolating from an assumed lower bound of 0 gave
// p50/p95/p99 = 150/285/297 ms. Inside the first bucket the layout says only
// "at most 0.3 s", so that is the answer.
func TestQuantileFirstBucketIsAnUpperBound(t *testing.T) {
	bounds := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 20, 40, 80, 160, 640, 2560, 5120, 10240, 20480, inf}
	counts := make([]float64, len(bounds))
	for i := range counts {
		counts[i] = 500
	}
	d, err := Sub(hist(bounds, counts, 0.015), hist(bounds, make([]float64, len(bounds)), 0))
	if err != nil {
		t.Fatal(err)
	}
	st := DeltaStats(hist(bounds, make([]float64, len(bounds)), 0), d)
	for name, e := range map[string]Estimate{"p50": st.P50, "p95": st.P95, "p99": st.P99} {
		if e.Value != 0.3 || !e.AtMost || e.Above {
			t.Errorf("%s = %+v, want at most 0.3 s", name, e)
		}
		if got := e.String(); got != "≤ 0.3s" {
			t.Errorf("%s.String() = %q, want %q", name, got, "≤ 0.3s")
		}
	}
	if math.Abs(st.Mean-0.00003) > 1e-12 {
		t.Errorf("mean = %v, want 3e-05 (the mean stays exact)", st.Mean)
	}
	// One observation above the first bound moves the p99 out of it: the
	// p99 is then interpolated in (0.3, 0.5] as usual.
	counts2 := slices.Clone(counts)
	for i := 1; i < len(counts2); i++ {
		counts2[i] = 510
	}
	if e := Quantile(hist(bounds, counts2, 3), 0.99); e.AtMost || e.Value <= 0.3 || e.Value > 0.5 {
		t.Errorf("p99 with 10 of 510 above 0.3 s = %+v, want an interpolated value in (0.3, 0.5]", e)
	}
}

func TestEstimateString(t *testing.T) {
	for _, c := range []struct {
		e    Estimate
		want string
	}{
		{Estimate{Value: 0.53125}, "0.5312s"},
		{Estimate{Value: 10, Above: true}, "> 10s"},
		{Estimate{Value: 0.3, AtMost: true}, "≤ 0.3s"},
		{unknown(), "n/a"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.e, got, c.want)
		}
	}
}

// Within one bucket, observations are assumed uniform: the q-quantile of N
// observations all in (lo, hi] is lo + (hi−lo)·q.
func TestQuantileUniformBucketProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		lo := r.Float64() * 10
		hi := lo + 0.001 + r.Float64()*10
		n := float64(1 + r.IntN(1000))
		h := hist([]float64{lo, hi, inf}, []float64{0, n, n}, 0)
		q := r.Float64()
		if got, want := Quantile(h, q).Value, lo+(hi-lo)*q; math.Abs(got-want) > 1e-9*(1+hi) {
			t.Fatalf("lo=%v hi=%v q=%v: %v, want %v", lo, hi, q, got, want)
		}
	}
}

// Quantiles never decrease with q.
func TestQuantileMonotoneProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bounds := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 5, 10, inf}
	for range 500 {
		counts := make([]float64, len(bounds))
		c := 0.0
		for i := range counts {
			c += float64(r.IntN(5))
			counts[i] = c
		}
		if c == 0 {
			continue
		}
		h := hist(bounds, counts, 1)
		prev := Estimate{Value: math.Inf(-1)}
		for q := 0.0; q <= 1; q += 0.01 {
			e := Quantile(h, q)
			if e.Value < prev.Value || (prev.Above && !e.Above) {
				t.Fatalf("counts %v: Quantile(%v) = %+v after %+v", counts, q, e, prev)
			}
			prev = e
		}
	}
}

func TestSub(t *testing.T) {
	b := []float64{0.3, 0.5, 1, inf}
	start := hist(b, []float64{10, 12, 15, 15}, 3)
	end := hist(b, []float64{30, 52, 95, 100}, 60)
	d, err := Sub(end, start)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Counts, []float64{20, 40, 80, 85}) || d.Count != 85 || d.Sum != 57 {
		t.Errorf("Sub = %+v", d)
	}
	for name, c := range map[string]struct {
		end, start Hist
		want       error
	}{
		"count went down":  {start, end, ErrReset},
		"one bucket down":  {hist(b, []float64{9, 52, 95, 100}, 60), start, ErrReset},
		"sum went down":    {hist(b, []float64{30, 52, 95, 100}, 2), start, ErrReset},
		"different bounds": {hist([]float64{0.3, 1, inf}, []float64{30, 95, 100}, 60), start, ErrLayout},
	} {
		if _, err := Sub(c.end, c.start); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
}

func TestDeltaStats(t *testing.T) {
	b := []float64{0.3, 0.5, 1, inf}
	start := hist(b, []float64{10, 12, 15, 15}, 3)
	end := hist(b, []float64{30, 52, 95, 100}, 60)
	st := DeltaStats(start, end)
	if !st.Known() || st.Count != 85 {
		t.Fatalf("stats = %+v", st)
	}
	if math.Abs(st.Mean-57.0/85) > 1e-12 {
		t.Errorf("mean = %v, want %v", st.Mean, 57.0/85)
	}
	if st.P50.Value != 0.53125 || st.P50.Above {
		t.Errorf("p50 = %+v, want 0.53125", st.P50)
	}
	if st.P95.String() != "> 1s" || st.P99.String() != "> 1s" {
		t.Errorf("p95, p99 = %s, %s, want > 1s", st.P95, st.P99)
	}

	reset := DeltaStats(end, start) // the engine restarted: counts went down
	if reset.Known() || reset.Reason != ErrReset.Error() || reset.P50.Known() || !math.IsNaN(reset.Mean) {
		t.Errorf("reset stats = %+v", reset)
	}
	idle := DeltaStats(end, end)
	if idle.Known() || idle.Reason != "no observations" || idle.Count != 0 {
		t.Errorf("idle stats = %+v", idle)
	}
}

func TestNearest(t *testing.T) {
	s := []Sample{{TNs: 0}, {TNs: 1000}, {TNs: 2000}}
	for _, c := range []struct {
		t    int64
		want int
	}{{-5, 0}, {0, 0}, {400, 0}, {500, 0}, {501, 1}, {1999, 2}, {5000, 2}} {
		if got := Nearest(s, c.t); got != c.want {
			t.Errorf("Nearest(%d) = %d, want %d", c.t, got, c.want)
		}
	}
	if Nearest(nil, 0) != -1 {
		t.Error("Nearest(nil) != -1")
	}
}

// samplesQ builds one sample per second with the given cumulative
// queue-time buckets (bounds 0.3, 0.5, 1, +Inf) and sums.
func samplesQ(counts [][]float64, sums []float64) []Sample {
	b := []float64{0.3, 0.5, 1, inf}
	out := make([]Sample, len(counts))
	for i := range counts {
		s := EmptySample(int64(i) * 1e9)
		if counts[i] != nil {
			s.setHist(QueueTime, hist(b, counts[i], sums[i]))
		}
		s.set(PromptTokens, float64(100*i))
		s.set(Waiting, float64(i%3))
		out[i] = s
	}
	return out
}

func TestPhaseStats(t *testing.T) {
	s := samplesQ([][]float64{
		{0, 0, 0, 0}, {10, 12, 15, 15}, {20, 30, 50, 55}, {30, 52, 95, 100}, {30, 52, 95, 100},
	}, []float64{0, 3, 30, 60, 60})

	st := PhaseStats(s, QueueTime, 1.4e9, 2.6e9) // nearest samples: 1 s and 3 s
	if st.FromNs != 1e9 || st.ToNs != 3e9 || st.Metric != QueueTime {
		t.Errorf("samples used %d..%d", st.FromNs, st.ToNs)
	}
	if st.Count != 85 || st.P50.Value != 0.53125 || st.P99.String() != "> 1s" {
		t.Errorf("stats = %+v", st)
	}

	for _, c := range []struct {
		name     string
		samples  []Sample
		m        Metric
		from, to int64
		reason   string
	}{
		{"no samples", nil, QueueTime, 0, 1e9, "no engine samples"},
		{"shorter than the scrape interval", s, QueueTime, 1.9e9, 2.2e9, "interval shorter than the scrape interval"},
		{"metric not scraped", s, TTFT, 0, 4e9, "ttft not available"},
		{"idle phase", s, QueueTime, 3e9, 4e9, "no observations"},
		{"engine restarted", samplesQ([][]float64{{10, 12, 15, 15}, {1, 1, 2, 2}}, []float64{3, 1}), QueueTime, 0, 1e9, ErrReset.Error()},
	} {
		st := PhaseStats(c.samples, c.m, c.from, c.to)
		if st.Known() || st.Reason != c.reason || st.P50.Known() {
			t.Errorf("%s: stats = %+v, want reason %q", c.name, st, c.reason)
		}
	}
}

func TestCounterDelta(t *testing.T) {
	s := samplesQ(make([][]float64, 4), make([]float64, 4))
	d, sec, err := CounterDelta(s, PromptTokens, 0.2e9, 2.9e9)
	if err != nil || d != 300 || sec != 3 {
		t.Errorf("CounterDelta = %v, %v, %v; want 300 over 3 s", d, sec, err)
	}
	s[3].PromptTokens = 50 // restarted: below the 100 at 1 s
	if _, _, err := CounterDelta(s, PromptTokens, 1e9, 3e9); !errors.Is(err, ErrReset) {
		t.Errorf("reset: err = %v", err)
	}
	if _, _, err := CounterDelta(s, Success, 0, 3e9); err == nil || err.Error() != "success not available" {
		t.Errorf("unavailable: err = %v", err)
	}
	if _, _, err := CounterDelta(s[:1], PromptTokens, 0, 3e9); err == nil {
		t.Error("one sample: no error")
	}
}

func TestGauge(t *testing.T) {
	s := samplesQ(make([][]float64, 6), make([]float64, 6)) // waiting 0,1,2,0,1,2
	g := Gauge(s, Waiting, 1e9, 4e9)                        // samples 1..4: 1,2,0,1
	if g.N != 4 || g.Max != 2 || g.Mean != 1 || g.Last != 1 {
		t.Errorf("Gauge = %+v", g)
	}
	if g := Gauge(s, Running, 0, 5e9); g.N != 0 || !math.IsNaN(g.Mean) || !math.IsNaN(g.Max) {
		t.Errorf("unavailable gauge = %+v", g)
	}
}
