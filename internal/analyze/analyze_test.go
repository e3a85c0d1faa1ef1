package analyze

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

func TestJudge(t *testing.T) {
	d := Deadlines{TTFT: 2 * s, E2E: 12 * s}
	tests := []struct {
		name string
		rec  func() *record.Record
		d    Deadlines
		want bool
	}{
		{"within both deadlines", func() *record.Record { return okRec(0, 10*ms, 500*ms, 3*s) }, d, true},
		{"exactly at both deadlines", func() *record.Record { return okRec(5*s, 0, 2*s, 12*s) }, d, true},
		{"deadlines run from the schedule, not the send", func() *record.Record { return okRec(0, 1900*ms, 2100*ms, 3*s) }, d, false},
		{"first token late", func() *record.Record { return okRec(0, 0, 2*s+1, 3*s) }, d, false},
		{"completion late", func() *record.Record { return okRec(0, 0, 1*s, 12*s+1) }, d, false},
		{"zero TTFT deadline disables the clause", func() *record.Record { return okRec(0, 0, 30*s, 31*s) }, Deadlines{E2E: 60 * s}, true},
		{"zero E2E deadline disables the clause", func() *record.Record { return okRec(0, 0, time.Second, 300*s) }, Deadlines{TTFT: 2 * s}, true},
		// sad paths
		{"status not 200", func() *record.Record { r := okRec(0, 0, 1*s, 2*s); r.Status = 203; return r }, d, false},
		{"outcome not ok", func() *record.Record { r := okRec(0, 0, 1*s, 2*s); r.Outcome = record.StreamError; return r }, d, false},
		{"no content token", func() *record.Record { r := okRec(0, 0, 1*s, 2*s); r.FirstTokenNs = record.None; return r }, d, false},
		{"no completion", func() *record.Record { r := okRec(0, 0, 1*s, 2*s); r.DoneNs = record.None; return r }, d, false},
		{"rate limited", func() *record.Record { return failRec(0, record.RateLimited) }, d, false},
		{"generator drop", func() *record.Record { return failRec(0, record.GeneratorDrop) }, d, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Judge(tc.rec(), tc.d); got != tc.want {
				t.Errorf("Judge = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Phases: burstPhases()}
	tests := []struct {
		name    string
		mod     func(c *Config)
		wantErr string // "" = valid
	}{
		{"burst experiment", func(c *Config) {}, ""},
		{"single phase, every knob set", func(c *Config) {
			c.Phases = []Phase{{Name: "steady", End: time.Minute}}
			c.Window, c.Timeout = 5*s, 60*s
			c.Recovery = RecoveryRule{Window: 30 * s, Tolerance: 0.2, Consecutive: 2, Metric: MetricTTFTSchedule}
		}, ""},
		// sad paths
		{"no phases", func(c *Config) { c.Phases = nil }, "analyze: config: phases: at least one phase is required"},
		{"empty name", func(c *Config) { c.Phases[1].Name = "" }, "phases[1]: name is empty"},
		{"duplicate name", func(c *Config) { c.Phases[2].Name = "baseline" }, `phases[2]: duplicate name "baseline"`},
		{"end before start", func(c *Config) { c.Phases[0].End = 0 }, `phases[0] "warmup": end 0s must be after start 0s`},
		{"negative start", func(c *Config) { c.Phases[0].Start = -s }, `phases[0] "warmup": start -1s is negative`},
		{"overlap", func(c *Config) { c.Phases[2].Start = 39 * s }, `phases: "burst" [39s, 50s) overlaps "baseline" [10s, 40s)`},
		{"negative rate", func(c *Config) { c.Phases[2].Rate = -1 }, `phases[2] "burst": rate -1 must be a finite number ≥ 0`},
		{"negative window", func(c *Config) { c.Window = -s }, "window: -1s must be > 0"},
		{"negative deadline", func(c *Config) { c.Deadlines = Deadlines{TTFT: -s} }, "deadlines.ttft: -1s is negative"},
		{"recovery on schedule lag", func(c *Config) { c.Recovery.Metric = metricScheduleLag }, `recovery.metric: "schedule_lag" is not a latency metric`},
		{"recovery on unknown metric", func(c *Config) { c.Recovery.Metric = "p99" }, `recovery.metric: "p99" is not a latency metric`},
		{"too many windows", func(c *Config) { c.Window = time.Millisecond }, "window: 1ms gives more than 60480 windows over the run's 1m50s"},
		{"too many recovery windows", func(c *Config) { c.Recovery.Window = time.Millisecond }, "recovery.window: 1ms gives more than 60480 windows"},
		{"too many timeline samples", func(c *Config) { c.SampleEvery = time.Microsecond }, "sample_every: 1µs gives more than 1048576 timeline samples"},
		{"negative consecutive", func(c *Config) { c.Recovery.Consecutive = -1 }, "recovery.consecutive: -1 must be ≥ 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			c.Phases = append([]Phase(nil), good.Phases...)
			tc.mod(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
			if _, nerr := New(c); nerr == nil {
				t.Fatalf("New accepted an invalid config")
			}
		})
	}
}

// A request belongs to the phase and window of its scheduled arrival, even
// when it completes in a later phase.
func TestMembershipByScheduledArrival(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	addAll(a,
		withPhase(okRec(39900*ms, 0, 5*s, 15*s), "baseline"),  // completes at 54.9 s, in recovery
		withPhase(okRec(40*s, 0, 100*ms, 200*ms), "burst"),    // first instant of the burst
		withPhase(okRec(49999*ms, 0, 11*s, 20*s), "burst"),    // first token and completion in recovery
		withPhase(okRec(50*s, 0, 100*ms, 200*ms), "baseline"), // mislabelled
		okRec(120*s, 0, 100*ms, 200*ms),                       // after the last phase
	)
	r := a.Result()
	for _, tc := range []struct {
		phase   string
		offered int64
	}{{"warmup", 0}, {"baseline", 1}, {"burst", 2}, {"recovery", 1}} {
		if got := mustPhase(t, r, tc.phase).Offered; got != tc.offered {
			t.Errorf("phase %s: offered %d, want %d", tc.phase, got, tc.offered)
		}
	}
	if got := mustPhase(t, r, "baseline").Latency.E2ESchedule.MaxMs; got != 15000 {
		t.Errorf("baseline e2e max = %v ms, want 15000 (the late completion stays in its arrival phase)", got)
	}
	if r.Anomalies.Unassigned != 1 || r.Anomalies.PhaseLabelMismatch != 1 {
		t.Errorf("anomalies = %+v, want 1 unassigned and 1 label mismatch", r.Anomalies)
	}
	if r.Overall.Offered != 4 {
		t.Errorf("overall offered = %d, want 4 (unassigned left out)", r.Overall.Offered)
	}
	// Windows are aligned to the burst end (50 s): [40, 50) holds both burst requests.
	counts := map[int64]int64{}
	for _, w := range r.Windows {
		counts[w.Index] = w.Offered
	}
	if counts[-2] != 1 || counts[-1] != 2 || counts[0] != 1 || counts[7] != 1 {
		t.Errorf("window offered counts = %v, want -2:1 -1:2 0:1 7:1", counts)
	}
	// A stray record far outside the run adds its window, not the gap before it.
	a.Add(okRec(240*time.Hour, 0, 100*ms, 200*ms))
	if n := len(a.Result().Windows); n != len(r.Windows)+1 {
		t.Errorf("%d windows after a record 10 days out, want %d", n, len(r.Windows)+1)
	}
}

// Goodput counts drops, timeouts and every failure in its denominator.
func TestGoodputDenominator(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "steady", End: 10 * s, Rate: 1}}, Timeout: 60 * s})
	for i := range 6 {
		a.Add(okRec(time.Duration(i)*s, 0, 300*ms, 2*s))
	}
	addAll(a,
		okRec(6*s, 0, 2500*ms, 4*s), // ok but late: success, not good
		failRec(7*s, record.GeneratorDrop),
		failRec(8*s, record.Timeout),
		failRec(9*s, record.RateLimited),
	)
	st := a.Result().Overall
	checks := []struct {
		name      string
		got, want float64
	}{
		{"offered", float64(st.Offered), 10},
		{"sent", float64(st.Sent), 9},
		{"succeeded", float64(st.Succeeded), 7},
		{"good", float64(st.Good), 6},
		{"offered rps", st.OfferedRPS, 1},
		{"sent rps", st.SentRPS, 0.9},
		{"completed rps (done in the phase: 10 s is outside)", st.CompletedRPS, 0.6},
		{"arrivals ok ratio", st.ArrivalsOKRatio, 0.7},
		{"goodput rps", st.GoodputRPS, 0.6},
		{"goodput ratio", st.GoodputRatio, 0.6},
		{"drop rate", st.DropRate, 0.1},
		{"timeout rate", st.TimeoutRate, 0.1},
		{"429 rate", st.RateLimitRate, 0.1},
		{"error rate", st.ErrorRate, 0},
		{"failure rate", st.FailureRate, 0.3},
		{"ttft samples (ok only)", float64(st.Latency.TTFTSchedule.Count), 7},
		{"lag samples (every sent)", float64(st.Latency.ScheduleLag.Count), 9},
		{"output tokens (ok only)", float64(st.OutputTokens), 77},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if st.Outcomes[record.GeneratorDrop] != 1 || st.Outcomes[record.OK] != 7 || st.Outcomes[record.HTTPError] != 0 {
		t.Errorf("outcomes = %v", st.Outcomes)
	}
	if len(st.Outcomes) != len(record.Outcomes)+1 {
		t.Errorf("outcomes has %d keys, want every outcome plus unknown", len(st.Outcomes))
	}
}

// Timeouts stay in the denominator: with 1% timeouts (not censored) the
// p99 is the slowest successful request, not the p99 of the successes.
func TestTimeoutsRankAboveSuccesses(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	a := mustNew(t, Config{Phases: []Phase{{Name: "steady", End: 1000 * s}}, Timeout: 60 * s})
	for i := 0; i < 985; i++ {
		a.Add(okRec(time.Duration(i)*ms, 0, 100*ms, 100*ms))
	}
	for i := 0; i < 5; i++ {
		a.Add(okRec(time.Duration(985+i)*ms, 0, 9*s, 9*s))
	}
	for i := 0; i < 10; i++ {
		r := record.New("t", int64(990+i), "steady", int64(time.Duration(990+i)*ms))
		r.SentNs, r.DoneNs, r.Outcome = r.ScheduledNs, r.ScheduledNs+int64(60*s), record.Timeout
		a.Add(&r)
	}
	d := a.Result().Overall.Latency.E2ESend
	if d.P99Censored || d.P99Ms < 8990 || d.P99Ms > 9010 {
		t.Fatalf("p99 = %.0f ms (censored %v); want 9 s: 1%% timeouts rank above the 5 slow successes", d.P99Ms, d.P99Censored)
	}
}

func TestCensoring(t *testing.T) {
	tests := []struct {
		name              string
		ok, timeouts      int
		p50, p95, p99     bool
		wantP99Text       string
		timeout           time.Duration
		wantP99LowerBound float64
	}{
		{"no timeouts", 100, 0, false, false, false, "99ms", 60 * s, 0},
		{"under 1%: the timeout ranks above all, p99 moves up one rank", 100, 1, false, false, false, "100ms", 60 * s, 0},
		{"exactly 1% is not more than 1%", 99, 1, false, false, false, "99ms", 60 * s, 0},
		{"over 1%", 100, 2, false, false, true, "> 60s", 60 * s, 60000},
		{"over 5%", 100, 6, false, true, true, "> 60s", 60 * s, 60000},
		{"over 50%", 1, 2, true, true, true, "> 60s", 60 * s, 60000},
		{"all timed out", 0, 3, true, true, true, "> 60s", 60 * s, 60000},
		{"timeout unknown: the largest observed value is the bound", 100, 2, false, false, true, "> 100ms", 0, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Phases: []Phase{{Name: "steady", End: 100 * s}}, Timeout: tc.timeout})
			for i := range tc.ok {
				a.Add(okRec(time.Duration(i)*100*ms, 0, time.Duration(i+1)*ms, time.Duration(i+1)*ms))
			}
			for i := range tc.timeouts {
				a.Add(failRec(time.Duration(i)*100*ms, record.Timeout))
			}
			d := a.Result().Overall.Latency.TTFTSchedule
			if d.P50Censored != tc.p50 || d.P95Censored != tc.p95 || d.P99Censored != tc.p99 {
				t.Errorf("censored p50/p95/p99 = %v/%v/%v, want %v/%v/%v", d.P50Censored, d.P95Censored, d.P99Censored, tc.p50, tc.p95, tc.p99)
			}
			if got := d.Text(Q99); got != tc.wantP99Text {
				t.Errorf("Text(Q99) = %q, want %q", got, tc.wantP99Text)
			}
			if tc.p99 && (d.P99Ms < tc.wantP99LowerBound || d.P99Ms > tc.wantP99LowerBound*1.001) {
				t.Errorf("censored P99Ms = %v, want the lower bound %v", d.P99Ms, tc.wantP99LowerBound)
			}
			if lag := a.Result().Overall.Latency.ScheduleLag; lag.P99Censored {
				t.Errorf("schedule lag must never be censored")
			}
		})
	}
}

// Percentiles are nearest-rank: the ceil(q·N)-th smallest value.
func TestPercentileNearestRank(t *testing.T) {
	tests := []struct {
		name          string
		valuesUs      []int64
		p50, p95, p99 float64 // ms
		mean, max     float64
		std           float64
	}{
		// N = 60: 0.99·60 = 59.4 → rank 60 (rounding would give 59).
		{"sixty values", seq64(1, 60), 0.030, 0.057, 0.060, 0.0305, 0.060, 0.017318102282486654},
		{"one value", []int64{1234}, 1.234, 1.234, 1.234, 1.234, 1.234, 0},
		{"ten values", seq64(1, 10), 0.005, 0.010, 0.010, 0.0055, 0.010, 0.0028722813232690143},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Phases: []Phase{{Name: "p", End: time.Hour}}})
			for i, us := range tc.valuesUs {
				d := time.Duration(us) * time.Microsecond
				a.Add(okRec(time.Duration(i)*s, 0, d, d))
			}
			d := a.Result().Overall.Latency.TTFTSend
			if !near(d.P50Ms, tc.p50) || !near(d.P95Ms, tc.p95) || !near(d.P99Ms, tc.p99) {
				t.Errorf("p50/p95/p99 = %v/%v/%v ms, want %v/%v/%v", d.P50Ms, d.P95Ms, d.P99Ms, tc.p50, tc.p95, tc.p99)
			}
			if !near(d.StdMs, tc.std) {
				t.Errorf("std = %v ms, want %v", d.StdMs, tc.std)
			}
			if !near(d.MeanMs, tc.mean) || !near(d.MaxMs, tc.max) || d.Count != int64(len(tc.valuesUs)) {
				t.Errorf("mean/max/count = %v/%v/%d, want %v/%v/%d", d.MeanMs, d.MaxMs, d.Count, tc.mean, tc.max, len(tc.valuesUs))
			}
		})
	}
	// Large values: within 0.1 % above the true order statistic, never below.
	a := mustNew(t, Config{Phases: []Phase{{Name: "p", End: time.Hour}}})
	for i := 1; i <= 1000; i++ {
		d := time.Duration(i) * 10 * ms
		a.Add(okRec(time.Duration(i)*s, 0, d, d))
	}
	d := a.Result().Overall.Latency.E2ESend
	for _, c := range []struct{ got, exact float64 }{{d.P50Ms, 5000}, {d.P95Ms, 9500}, {d.P99Ms, 9900}} {
		if c.got < c.exact || c.got > c.exact*1.001 {
			t.Errorf("percentile %v ms, want within [%v, %v]", c.got, c.exact, c.exact*1.001)
		}
	}
}

func seq64(from, to int64) []int64 {
	var v []int64
	for i := from; i <= to; i++ {
		v = append(v, i)
	}
	return v
}

func TestVLLMFields(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "w", End: 10 * s, Excluded: true}, {Name: "m", Start: 10 * s, End: 20 * s}}, Timeout: 60 * s})
	a.Add(okRec(time.Second, 0, 1*s, 2*s)) // warmup: excluded
	for i := range 10 {
		// sent 100 ms late: vLLM's TTFT and E2EL are from the send
		a.Add(okRec(10*s+time.Duration(i)*s, 100*ms, 300*ms, 1100*ms))
	}
	a.Add(failRec(15*s, record.RateLimited))
	r := a.Result()
	v := r.VLLM()
	// vLLM's duration runs to the last completion: the last request ends
	// at 20.1 s, after the phase: 10.1 s, not the phase's 10 s.
	if v.Completed != 10 || !near(v.Duration, 10.1) || !near(v.RequestThroughput, 10/10.1) || !near(v.RequestGoodput, 10/10.1) {
		t.Errorf("completed/duration/throughput/goodput = %d/%v/%v/%v", v.Completed, v.Duration, v.RequestThroughput, v.RequestGoodput)
	}
	if v.TotalOutputTokens != 110 || !near(v.OutputThroughput, 110/10.1) || !near(v.TotalTokenThroughput, 1110/10.1) {
		t.Errorf("tokens = %d, output throughput %v, total %v", v.TotalOutputTokens, v.OutputThroughput, v.TotalTokenThroughput)
	}
	if !near(v.MeanTTFTMs, 200) || !hdrNear(v.MedianTTFTMs, 200) || v.P99TTFTMs == nil || !hdrNear(*v.P99TTFTMs, 200) {
		t.Errorf("ttft mean/median/p99 = %v/%v/%v, want 200 ms from the send", v.MeanTTFTMs, v.MedianTTFTMs, v.P99TTFTMs)
	}
	if !near(v.MeanE2ELMs, 1000) || !near(v.MeanTPOTMs, 80) || !near(v.MeanITLMs, 80) {
		t.Errorf("e2el/tpot/itl mean = %v/%v/%v, want 1000/80/80", v.MeanE2ELMs, v.MeanTPOTMs, v.MeanITLMs)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"duration":10.1,`, `"request_throughput":0.99`, `"median_ttft_ms":200,`,
		`"p99_itl_ms":null`, `"mean_e2el_ms":1000`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("vLLM JSON lacks %s: %s", key, b)
		}
	}
	// A censored p99 is null, not the p99 of whatever finished.
	addAll(a, failRec(12*s, record.Timeout), failRec(13*s, record.Timeout))
	if v := a.Result().VLLM(); v.P99TTFTMs != nil || v.P99E2ELMs != nil {
		t.Errorf("p99 with 2/12 timeouts = %v/%v, want null", v.P99TTFTMs, v.P99E2ELMs)
	}
}

// Windows are aligned to the burst end; their rates use the part inside the run.
// Windows start at each phase's start, so none holds two phases (a 10 s
// window from 25 s would put 5 s of burst into a "baseline" window); after
// the burst they count from its end, as the recovery rule needs.
func TestWindowsAlignedToPhases(t *testing.T) {
	phases := []Phase{
		{Name: "baseline", Start: 0, End: 30 * s},
		{Name: "burst", Start: 30 * s, End: 35 * s},
		{Name: "recovery", Start: 35 * s, End: 62 * s},
	}
	a := mustNew(t, Config{Phases: phases})
	for i := range 62 {
		a.Add(okRec(time.Duration(i)*s, 0, 100*ms, 200*ms))
	}
	ws := a.Result().Windows
	if len(ws) != 7 {
		t.Fatalf("got %d windows, want 7 (starts 0, 10, 20, 30, 35, 45, 55 s)", len(ws))
	}
	want := []struct {
		k            int64
		start        float64
		dur, offered float64
		phase        string
	}{
		{-4, 0, 10000, 10, "baseline"}, {-2, 20000, 10000, 10, "baseline"}, {-1, 30000, 5000, 5, "burst"},
		{0, 35000, 10000, 10, "recovery"}, {2, 55000, 7000, 7, "recovery"},
	}
	byK := map[int64]WindowResult{}
	for _, w := range ws {
		byK[w.Index] = w
	}
	for _, w := range want {
		got := byK[w.k]
		if got.StartMs != w.start || got.DurationMs != w.dur || float64(got.Offered) != w.offered || got.Phase != w.phase {
			t.Errorf("window %d = start %v dur %v offered %d phase %q, want %v %v %v %q",
				w.k, got.StartMs, got.DurationMs, got.Offered, got.Phase, w.start, w.dur, w.offered, w.phase)
		}
		if got.OfferedRPS != 1 {
			t.Errorf("window %d offered rps = %v, want 1", w.k, got.OfferedRPS)
		}
	}
}

// No window straddles a phase boundary, whatever the phase lengths, and
// the windows tile the run without gaps or overlaps, W/2 to 3W/2 long (a
// whole phase when it is shorter).
func TestWindowsNeverStraddlePhases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lengths []time.Duration // warmup, baseline, burst, recovery
		window  time.Duration
	}{
		{"demo", []time.Duration{5 * s, 20 * s, 8 * s, 30 * s}, 2 * s},
		{"odd lengths", []time.Duration{3 * s, 17 * s, 7 * s, 23 * s}, 2 * s},
		{"sliver merged", []time.Duration{4500 * ms, 10300 * ms, 5100 * ms, 20 * s}, 2 * s},
		{"phase shorter than a window", []time.Duration{1 * s, 25 * s, 3 * s, 40 * s}, 5 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{"warmup", "baseline", "burst", "recovery"}
			var phases []Phase
			var at time.Duration
			for i, l := range tc.lengths {
				phases = append(phases, Phase{Name: names[i], Start: at, End: at + l, Excluded: i == 0})
				at += l
			}
			a := mustNew(t, Config{Phases: phases, Window: tc.window, Recovery: RecoveryRule{Window: tc.window}})
			for ti := time.Duration(0); ti < at; ti += 100 * ms {
				a.Add(okRec(ti, 0, 10*ms, 20*ms))
			}
			ws := a.Result().Windows
			if ws[0].StartMs != 0 {
				t.Errorf("first window starts at %v ms, want 0 (the run's start)", ws[0].StartMs)
			}
			for i, w := range ws {
				if i > 0 && w.StartMs != ws[i-1].EndMs {
					t.Errorf("window %d starts at %v, the one before ends at %v", w.Index, w.StartMs, ws[i-1].EndMs)
				}
				for _, p := range phases[1:] {
					b := durMs(p.Start)
					if w.StartMs < b && b < w.EndMs {
						t.Errorf("window %d [%v, %v) ms straddles the start of %s at %v ms", w.Index, w.StartMs, w.EndMs, p.Name, b)
					}
				}
				short := false
				for _, p := range phases {
					short = short || (durMs(p.Start) == w.StartMs && durMs(p.End) == w.EndMs)
				}
				d, wm := w.EndMs-w.StartMs, durMs(tc.window)
				if !short && (d < wm/2 || d >= 1.5*wm) {
					t.Errorf("window %d is %v ms long, want [%v, %v)", w.Index, d, wm/2, 1.5*wm)
				}
				if w.Index == 0 && w.StartMs != durMs(phases[2].End) {
					t.Errorf("window 0 starts at %v, want the burst end %v", w.StartMs, durMs(phases[2].End))
				}
			}
		})
	}
}

func TestFormatMs(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0, "0ms"}, {0.42, "0.42ms"}, {1.5, "1.5ms"}, {81.23, "81.2ms"}, {812.4, "812ms"},
		{999.7, "1s"}, {1523, "1.52s"}, {12000, "12s"}, {60000, "60s"}, {125400, "125s"},
	}
	for _, tc := range tests {
		if got := FormatMs(tc.ms); got != tc.want {
			t.Errorf("FormatMs(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	if got := (Dist{}).String(); got != "p50 n/a  p95 n/a  p99 n/a  (n=0)" {
		t.Errorf("empty Dist = %q", got)
	}
}

func TestMergeRejects(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	b := mustNew(t, Config{Phases: burstPhases(), Window: 5 * s})
	if err := a.Merge(b); !errors.Is(err, errConfigMismatch) {
		t.Errorf("Merge of different windows = %v, want errConfigMismatch", err)
	}
	if err := a.Merge(a); err == nil {
		t.Errorf("Merge into itself succeeded")
	}
}

// summary.json's names are a contract: spot-check them.
func TestResultJSONNames(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases(), Timeout: 60 * s})
	a.Add(okRec(15*s, 0, 100*ms, 200*ms))
	b, err := json.Marshal(a.Result())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"phases":[{"name":"warmup"`, `"offered_rps":`, `"goodput_ratio":`, `"rate_limit_rate":`,
		`"ttft_schedule":{"count":`, `"p99_censored":false`, `"e2e_schedule":`, `"schedule_lag":`, `"conn_wait":`,
		`"recovery":{"measured":`, `"timeline":[{"t_ms":0,`, `"oldest_waiting_age_ms":`, `"outcomes":{"cancelled":0,`,
		`"p99_ci":{"lo_ms":`, `"percentile_definition":"nearest rank`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("result JSON lacks %s", key)
		}
	}
}

// Durations the histograms cannot hold are clamped and counted, not dropped.
func TestOutOfRangeDurations(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "p", End: 10 * s}}})
	early := okRec(1*s, 0, 100*ms, 200*ms)
	early.SentNs = early.ScheduledNs - int64(ms) // sent before its schedule
	late := okRec(2*s, 0, 100*ms, 2*time.Hour)
	addAll(a, early, late)
	r := a.Result()
	if r.Anomalies.NegativeDurations != 1 || r.Anomalies.OverRange != 2 {
		t.Fatalf("anomalies = %+v, want 1 negative (lag) and 2 over range (e2e from send and schedule)", r.Anomalies)
	}
	l := r.Overall.Latency
	if l.ScheduleLag.Count != 2 || l.ScheduleLag.MaxMs != 0 {
		t.Errorf("lag = %+v, want 2 samples with the negative one recorded as 0", l.ScheduleLag)
	}
	if l.E2ESchedule.MaxMs != 3.6e6 || l.E2ESchedule.Count != 2 {
		t.Errorf("e2e = %+v, want the 2 h completion clamped to 1 h", l.E2ESchedule)
	}
}

// Ctrl-C: requests cancelled in flight rank above every success, like
// timeouts, so the survivors alone never make a PASS. 100 fast successes
// and 10 requests cancelled in flight (9 %): P95 lies among the cancelled,
// unknown, at least the slowest success; the p95 TTFT clause fails. A
// request cancelled before it was sent is not censored.
func TestCancelledInFlightAreCensored(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "burst", End: 20 * s}}, Timeout: 60 * s})
	for i := range 100 {
		a.Add(okRec(time.Duration(i)*100*ms, 0, 300*ms, time.Second))
	}
	for i := range 10 {
		a.Add(failRec(10*s+time.Duration(i)*100*ms, record.Cancelled)) // sent, then cancelled
	}
	unsent := failRec(19*s, record.Cancelled)
	unsent.SentNs = record.None
	a.Add(unsent)
	r := a.Result()
	d := r.Overall.Latency.TTFTSchedule
	if r.Overall.CancelledInFlight != 10 {
		t.Errorf("cancelled in flight %d, want 10 (the unsent one is not)", r.Overall.CancelledInFlight)
	}
	if d.P50Censored || !d.P95Censored || !d.P99Censored || !d.Interrupted || d.CensorMs != 0 {
		t.Fatalf("ttft %+v: want P95 and P99 censored among the cancelled, no timeout bound", d)
	}
	if !hdrNear(d.P95Ms, 300) || d.Text(Q95) != "> 300ms" {
		t.Errorf("p95 %v %q, want the lower bound > 300ms", d.P95Ms, d.Text(Q95))
	}
	// Timeouts rank above the cancelled: with 3 more (113 in all), P95 (rank
	// 108) is still among the cancelled, P99 (rank 112) among the timeouts.
	for i := range 3 {
		a.Add(failRec(15*s+time.Duration(i)*100*ms, record.Timeout))
	}
	d = a.Result().Overall.Latency.TTFTSchedule
	if !d.P99Censored || d.CensorMs != 60_000 || d.Text(Q99) != "> 60s" || d.Text(Q95) != "> 300ms" {
		t.Errorf("with timeouts: p95 %q p99 %q (%+v)", d.Text(Q95), d.Text(Q99), d)
	}
}

// A worker's drops are known by the record's cause, not its error text:
// a drop with record.CauseWorkerLost or CauseWorkerInterrupted counts in
// WorkerLostDrops whatever its error says, and a drop without a cause is
// the in-flight cap's even when its error reads like a lost worker's.
func TestWorkerDropsByCause(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "steady", End: 10 * s, Rate: 1}}, Timeout: 60 * s})
	drop := func(err string, c record.Cause) {
		r := failRec(time.Second, record.GeneratorDrop)
		r.Error, r.Cause = err, c
		a.Add(r)
	}
	drop("anything", record.CauseWorkerLost)
	drop("worker quit interrupted at 1.0 s: Ctrl-C or SIGTERM on the worker (never sent)", record.CauseWorkerInterrupted)
	drop("worker w1 lost at 8.0 s: connection dropped (never sent)", "") // text alone: the cap's
	drop("in-flight cap 4 reached", "")
	o := a.Result().Overall
	if o.WorkerLostDrops != 2 || o.Outcomes[record.GeneratorDrop] != 4 {
		t.Fatalf("worker drops %d of %d, want 2 of 4", o.WorkerLostDrops, o.Outcomes[record.GeneratorDrop])
	}
}

// A request that timed out after its first token has a known TTFT: only
// its completion is censored (docs/method.md §7).
func TestTimeoutAfterFirstTokenKeepsItsTTFT(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "steady", End: 100 * s}}, Timeout: 60 * s})
	for i := range 958 {
		a.Add(okRec(time.Duration(i)*100*ms, 0, 40*ms, 2*s))
	}
	for i := range 42 {
		r := failRec(time.Duration(i)*100*ms, record.Timeout)
		if i >= 2 { // 40 of the 42 timeouts had their first token
			r.FirstTokenNs = r.ScheduledNs + int64(45*ms)
		}
		a.Add(r)
	}
	l := a.Result().Overall.Latency
	if d := l.TTFTSchedule; d.P95Censored || d.P99Censored || d.Count != 998 || d.Censored != 2 {
		t.Errorf("TTFT: count %d censored %d p95/p99 censored %v/%v; want 998 values, 2 censored, both known",
			d.Count, d.Censored, d.P95Censored, d.P99Censored)
	}
	if d := l.TTFTSchedule; !hdrNear(d.P99Ms, 45) {
		t.Errorf("TTFT p99 = %v ms, want 45 (the timeouts' first tokens)", d.P99Ms)
	}
	if d := l.E2ESchedule; !d.P99Censored || d.Censored != 42 || d.P99Ms != 60000 {
		t.Errorf("completion: p99 censored %v, censored %d, p99 %v; want censored at 60 s by all 42 timeouts", d.P99Censored, d.Censored, d.P99Ms)
	}
}

// Every percentile carries its order-statistic interval; a P99 of 70
// values has no upper bound, and one beyond the recorded values is open.
func TestPercentileIntervals(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ok, timeouts      int
		p99Lo             float64
		p99Open, loCensor bool
		p95Lo, p95Hi      float64
	}{
		// 1..70 ms: P95 ranks 63..71 (71 > 70: open), P99 67..open.
		{"70 values", 70, 0, 67, true, false, 63, 0},
		// 1..1000 ms: P99 ranks 983..997, P95 936..964.
		{"1000 values", 1000, 0, 983, false, false, 936, 964},
		// 100 values and 10 timeouts (110): P95 ranks 100..109, P99
		// 106..111; the P99's lower rank lies among the timeouts, so it
		// is above the timeout.
		{"10% timeouts", 100, 10, 60000, true, true, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Phases: []Phase{{Name: "steady", End: 1000 * s}}, Timeout: 60 * s})
			for i := range tc.ok {
				a.Add(okRec(time.Duration(i)*ms, 0, time.Duration(i+1)*ms, time.Duration(i+1)*ms))
			}
			for i := range tc.timeouts {
				a.Add(failRec(time.Duration(i)*ms, record.Timeout))
			}
			d := a.Result().Overall.Latency.TTFTSchedule
			if !hdrNear(d.P99CI.LoMs, tc.p99Lo) || d.P99CI.HiOpen != tc.p99Open || d.P99CI.LoCensored != tc.loCensor {
				t.Errorf("p99 interval %+v, want lo %v open %v lo censored %v", d.P99CI, tc.p99Lo, tc.p99Open, tc.loCensor)
			}
			if !hdrNear(d.P95CI.LoMs, tc.p95Lo) || (tc.p95Hi > 0 && !hdrNear(d.P95CI.HiMs, tc.p95Hi)) {
				t.Errorf("p95 interval %+v, want [%v, %v]", d.P95CI, tc.p95Lo, tc.p95Hi)
			}
		})
	}
}

// The token-level deadlines: a TPOT clause in the per-request deadline
// (DistServe), and smooth goodput — every token i by TTFT deadline + i ×
// budget — from the client's SmoothNs.
func TestTokenDeadlines(t *testing.T) {
	d := Deadlines{TTFT: 2 * s, E2E: 12 * s, TPOT: 50 * ms, Token: 40 * ms}
	fast := okRec(0, 0, 100*ms, time.Second) // TPOT 90 ms
	if Judge(fast, d) {
		t.Error("TPOT 90ms passed a 50ms TPOT clause")
	}
	d.TPOT = 100 * ms
	if !Judge(fast, d) {
		t.Error("TPOT 90ms failed a 100ms TPOT clause")
	}
	for _, tc := range []struct {
		smooth time.Duration
		want   bool
	}{{1500 * ms, true}, {2 * s, true}, {2001 * ms, false}} {
		r := okRec(0, 0, 100*ms, time.Second)
		r.SmoothNs = int64(tc.smooth)
		if got := smoothGood(r, d); got != tc.want {
			t.Errorf("smooth %v: %v, want %v", tc.smooth, got, tc.want)
		}
	}
	r := okRec(0, 0, 100*ms, time.Second)
	if smoothGood(r, d) {
		t.Error("smooth good without a SmoothNs")
	}
	a := mustNew(t, Config{Phases: []Phase{{Name: "p", End: 10 * s}}, Deadlines: d})
	for i := range 10 {
		r := okRec(time.Duration(i)*s, 0, 100*ms, time.Second)
		r.SmoothNs = r.ScheduledNs + int64(time.Duration(i)*500*ms) // 0, 0.5 s, … 4.5 s late
		a.Add(r)
	}
	if st := a.Result().Overall; st.SmoothGood != 5 || !near(st.SmoothGoodputRatio, 0.5) || st.Good != 10 {
		t.Errorf("smooth good %d (%.2f), good %d; want 5 (0.5), 10", st.SmoothGood, st.SmoothGoodputRatio, st.Good)
	}
}
