package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// capacityEnv prepares a virtual-time environment for c.
func capacityEnv(t *testing.T, o Options) (*Env, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	env, err := Prepare(context.Background(), o, true, &out, quietLogger(), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env, &out
}

// queueingSLO judges steps on queueing only: p95 TTFT ≤ 2 s and 99% of
// requests with their first token within 2 s, no completion clause. The
// chat profile's longest answers take over 12 s even on an idle simulator
// step time, so the default completion SLO measures answer length, not
// capacity.
func queueingSLO(o *Options) {
	o.Quiet = true
	o.SLOE2EP99 = 0
	o.E2EDeadline = 10 * time.Minute
	o.Timeout = 10 * time.Minute
}

// On the simulator in virtual time the search finds the engine's capacity
// μ — measured the way the burst prediction measures it, from a saturated
// run — within 10%, from below and from above.
func TestCapacityFindsSimulatorCapacity(t *testing.T) {
	cases := []struct {
		name  string
		start float64
	}{
		{"growing from 1 req/s", 1},
		{"shrinking from 40 req/s", 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultCapacityConfig()
			c.Simulate = true
			c.StartRPS = tc.start
			queueingSLO(&c.Options)
			env, out := capacityEnv(t, c.Options)
			mu := estimateSimCapacity(env.Opts, nil)
			dir := t.TempDir()
			res, err := Capacity(context.Background(), env, &c, dir)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var cr CapacityResult
			b, err := os.ReadFile(filepath.Join(dir, "capacity.json"))
			if err != nil || json.Unmarshal(b, &cr) != nil {
				t.Fatalf("capacity.json: %v\n%s", err, b)
			}
			t.Logf("μ = %.2f req/s; sustainable %.2f, lowest failing %.2f, %d steps", mu, cr.SustainableRPS, cr.LowestFailingRPS, len(cr.Steps))
			if mu < 8 || mu > 11 {
				t.Fatalf("the simulator's μ is %.2f; the test assumes ≈ 9.3", mu)
			}
			if !res.SLOPass || !cr.Bounded || !cr.Converged {
				t.Fatalf("outcome %+v, result %+v\n%s", res, cr, out)
			}
			if d := math.Abs(cr.SustainableRPS-mu) / mu; d > 0.10 {
				t.Fatalf("sustainable %.2f req/s is %.0f%% from μ %.2f\n%s", cr.SustainableRPS, 100*d, mu, out)
			}
			if want := roundRate(0.7 * cr.SustainableRPS); cr.BaselineRPS != want {
				t.Errorf("suggested baseline %.3f, want %.3f", cr.BaselineRPS, want)
			}
			if cr.LowestFailingRPS-cr.SustainableRPS > c.Tolerance*cr.SustainableRPS {
				t.Errorf("bracket [%g, %g] wider than the tolerance", cr.SustainableRPS, cr.LowestFailingRPS)
			}
			// Steps far above capacity are stopped early.
			stopped := 0
			for _, s := range cr.Steps {
				if s.Rate > 1.3*mu && s.StoppedEarly == "" {
					t.Errorf("step %s at %.3g req/s ran to its end", s.Name, s.Rate)
				}
				if s.StoppedEarly != "" {
					stopped++
				}
				if _, err := os.Stat(filepath.Join(dir, s.Name, "requests.jsonl")); err != nil {
					t.Errorf("step folder: %v", err)
				}
			}
			if stopped == 0 {
				t.Error("no step was stopped early")
			}
			for _, f := range []string{"results.md", "results.csv", "results.json", "report.html"} {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
			html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
			if n := bytes.Count(html, []byte(`class="xychart"`)); n != 2 {
				t.Errorf("report.html has %d XY charts, want 2", n)
			}
			if !strings.Contains(out.String(), "Sustainable capacity: ") || !strings.Contains(out.String(), "Suggested baseline: ") {
				t.Errorf("summary missing:\n%s", out)
			}
		})
	}
}

// A step stopped early in virtual time ends like a live one: no arrival
// at or after the stop is sent, and the plan is cut there.
func TestHopelessStepStopsInVirtualTime(t *testing.T) {
	c := DefaultCapacityConfig()
	c.Simulate = true
	queueingSLO(&c.Options)
	env, out := capacityEnv(t, c.Options)
	st, err := runCapacityStep(context.Background(), env, &c, t.TempDir(), 1, 30)
	if err != nil {
		t.Fatal(err)
	}
	res := st.Result
	if st.StoppedEarly == "" || res.StoppedAt == 0 || st.Pass {
		t.Fatalf("a step at 3× capacity was not stopped: %+v\n%s", st, out)
	}
	if got := res.Plan.Duration(); got != res.StoppedAt {
		t.Errorf("plan cut at %s, stopped at %s", got, res.StoppedAt)
	}
	n := 0
	err = record.ReadFile(filepath.Join(res.Spec.Dir, "requests.jsonl"), func(r *record.Record) error {
		n++
		if time.Duration(r.ScheduledNs) >= res.StoppedAt {
			t.Errorf("seq %d scheduled at %s, after the stop at %s", r.Seq, time.Duration(r.ScheduledNs), res.StoppedAt)
		}
		return nil
	})
	if err != nil || int64(n) != res.Records {
		t.Fatalf("%d records (%d written): %v", n, res.Records, err)
	}
}

// synthetic records: one every gap from 0 to end, waiting ttft(t) for the
// first token.
func syntheticRecords(gap, end time.Duration, ttft func(t time.Duration) time.Duration, good func(t time.Duration) bool) []record.Record {
	var recs []record.Record
	for t, i := time.Duration(0), int64(0); t < end; t, i = t+gap, i+1 {
		r := record.New("x", i, stepPhase, int64(t))
		r.SentNs = int64(t)
		r.FirstTokenNs = int64(t + ttft(t))
		r.DoneNs = r.FirstTokenNs + int64(time.Second)
		r.Outcome, r.Status, r.Good = record.OK, 200, good(t)
		recs = append(recs, r)
	}
	return recs
}

func TestHopelessCheck(t *testing.T) {
	always := func(time.Duration) bool { return true }
	flat := func(time.Duration) time.Duration { return 300 * time.Millisecond }
	growing := func(t time.Duration) time.Duration { return 500*time.Millisecond + t/2 } // backlog builds up
	h := hopelessCheck{StepStart: 0, Planned: 1000, Goodput: 0.99, LimitMs: 2000}
	cases := []struct {
		name    string
		recs    []record.Record
		horizon time.Duration
		check   hopelessCheck
		want    string // substring; "" = not hopeless
	}{
		{"steady below capacity", syntheticRecords(100*time.Millisecond, 30*time.Second, flat, always), 30 * time.Second, h, ""},
		{"growing backlog above the limit", syntheticRecords(100*time.Millisecond, 30*time.Second, growing, always), 30 * time.Second, h, "over-saturated"},
		{"growing but still under the limit", syntheticRecords(100*time.Millisecond, 2*time.Second, growing, always), 2 * time.Second, h, ""},
		{"growing, limit from the deadline", syntheticRecords(100*time.Millisecond, 30*time.Second, growing, always), 30 * time.Second,
			hopelessCheck{Planned: 1000, LimitMs: 60_000}, ""},
		{"goodput budget spent", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, func(t time.Duration) bool { return t%(400*time.Millisecond) != 0 }), 5 * time.Second, h,
			"goodput can no longer reach 99%: 13 of the 1000 planned"},
		{"goodput budget not yet spent", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, func(t time.Duration) bool { return t != 0 }), 5 * time.Second, h, ""},
		{"warmup failures do not count", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, func(t time.Duration) bool { return t >= 2*time.Second }), 5 * time.Second,
			hopelessCheck{StepStart: 2 * time.Second, Planned: 1000, Goodput: 0.99, LimitMs: 2000}, ""},
		{"too few records", syntheticRecords(time.Second, 5*time.Second, growing, always), 5 * time.Second, hopelessCheck{Planned: 5, LimitMs: 100}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.check.judge(tc.recs, tc.horizon)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("judge = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGeneratorCheck(t *testing.T) {
	mk := func(n int, gap, lagPer time.Duration) (sched, sent []int64) {
		for i := range n {
			s := int64(i) * int64(gap)
			sched, sent = append(sched, s), append(sent, s+int64(i)*int64(lagPer))
		}
		return
	}
	cases := []struct {
		name    string
		n       int
		lagPer  time.Duration // lag added per arrival: a generator falling behind
		lagP99  float64
		limited bool
		want    string
	}{
		{"keeps up", 200, 0, 1, false, ""},
		{"falls behind", 200, time.Millisecond, 1, true, "it sent"},
		{"lag only", 200, 0, 250, true, "schedule lag p99 250ms"},
		{"too few sends", 10, 5 * time.Millisecond, 500, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sched, sent := mk(tc.n, 10*time.Millisecond, tc.lagPer)
			m := Measure{LagP99Ms: tc.lagP99}
			m.generatorCheck(sched, sent)
			if m.GeneratorLimited != tc.limited || !strings.Contains(m.GeneratorNote, tc.want) {
				t.Fatalf("limited %v note %q", m.GeneratorLimited, m.GeneratorNote)
			}
			if tc.limited && !strings.Contains(m.GeneratorNote, "not the target's") {
				t.Errorf("note does not say whose limit it is: %q", m.GeneratorNote)
			}
		})
	}
}

func TestCapacityConfigErrorsNameTheFlag(t *testing.T) {
	cases := map[string]struct {
		mutate func(*CapacityConfig)
		want   string
	}{
		"zero start":         {func(c *CapacityConfig) { c.StartRPS = 0 }, "--start-rps: must be > 0"},
		"unreachable start":  {func(c *CapacityConfig) { c.StartRPS = 2e6 }, "--start-rps: 2e+06 requests/s is more than the load generator can schedule"},
		"max below start":    {func(c *CapacityConfig) { c.StartRPS, c.MaxRPS = 5, 2 }, "--max-rps: must be ≥ --start-rps (5), got 2"},
		"growth not growing": {func(c *CapacityConfig) { c.Growth = 1 }, "--growth: must be > 1"},
		"zero tolerance":     {func(c *CapacityConfig) { c.Tolerance = 0 }, "--tolerance: must be within (0, 1)"},
		"one step":           {func(c *CapacityConfig) { c.MaxSteps = 1 }, "--max-steps: must be ≥ 2"},
		"zero step":          {func(c *CapacityConfig) { c.StepDuration = 0 }, "--step-duration: must be > 0"},
		"max step too short": {func(c *CapacityConfig) { c.MaxStepDuration = time.Second }, "--max-step-duration: must be ≥ --step-duration"},
		"no requests":        {func(c *CapacityConfig) { c.MinRequests = 0 }, "--min-requests: must be ≥ 1"},
		"fraction above 1":   {func(c *CapacityConfig) { c.BaselineFraction = 1.5 }, "--baseline-fraction: must be within (0, 1]"},
		"gamma arrivals":     {func(c *CapacityConfig) { c.Arrival = "gamma" }, `--arrival: must be poisson or constant, got "gamma"`},
		"no SLO": {func(c *CapacityConfig) { c.SLOTTFTP95, c.SLOE2EP99, c.SLOGoodput = 0, 0, 0 },
			"a capacity search needs at least one SLO clause"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := DefaultCapacityConfig()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	c := DefaultCapacityConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// --baseline-rps auto runs the search first; the burst uses its suggestion
// as the baseline and its sustainable rate as μ for the prediction.
func TestBurstBaselineAuto(t *testing.T) {
	runs, dir, out := virtualBurst(t, func(c *BurstConfig) {
		c.BaselineAuto, c.BaselineRPS = true, 0
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 30*time.Second, time.Minute, 30*time.Second, 2*time.Minute, 4*time.Minute
	})
	var cr CapacityResult
	b, err := os.ReadFile(filepath.Join(dir, "capacity", "capacity.json"))
	if err != nil || json.Unmarshal(b, &cr) != nil || cr.SustainableRPS == 0 {
		t.Fatalf("capacity.json: %v %+v\n%s", err, cr, out)
	}
	r := runs[0]
	if r.Prediction == nil || !strings.Contains(r.MuSource, "capacity search") {
		t.Fatalf("μ source %q, prediction %+v", r.MuSource, r.Prediction)
	}
	if got := r.Prediction.DrainRate + cr.BaselineRPS; math.Abs(got-cr.SustainableRPS) > 1e-9 {
		t.Errorf("prediction used μ = %g, want the sustainable %g", got, cr.SustainableRPS)
	}
	p, _ := r.Result.Analysis.Phase("baseline")
	if math.Abs(p.Rate-cr.BaselineRPS) > 1e-9 {
		t.Errorf("baseline phase at %g req/s, want the suggestion %g", p.Rate, cr.BaselineRPS)
	}
}
