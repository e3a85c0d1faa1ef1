package capacity

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// capacityEnv prepares a virtual-time environment for o.
func capacityEnv(t *testing.T, o run.Options) (*run.Env, *exptest.SyncBuilder) {
	t.Helper()
	return exptest.Env(t, o, true)
}

// simMu is the simulator's capacity μ for the options' workload, measured
// by raising the load until the engine queues (sim.Capacity).
func simMu(t *testing.T, o run.Options) float64 {
	t.Helper()
	prof, err := o.WorkloadProfile()
	if err != nil {
		t.Fatal(err)
	}
	gen, err := workload.New(workload.Config{Profile: prof, Seed: o.Seed})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Capacity(o.Sim, func(i int) sim.Request {
		r := gen.Generate(schedule.Arrival{Seq: int64(i)})
		return sim.Request{PromptTokens: r.PromptTokens, MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS}
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.RPS
}

// queueingSLO judges steps on queueing only: p95 TTFT ≤ 2 s and 99% of
// requests with their first token within 2 s, no completion clause. The
// chat profile's longest answers take over 12 s even on an idle simulator
// step time, so the default completion SLO measures answer length, not
// capacity.
func queueingSLO(o *run.Options) {
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
			c := DefaultConfig()
			c.Simulate = true
			c.StartRPS = tc.start
			queueingSLO(&c.Options)
			env, out := capacityEnv(t, c.Options)
			mu := simMu(t, env.Opts)
			d := exptest.Dir(t)
			dir := d.Path()
			res, err := Capacity(context.Background(), env, &c, d, out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var cr Result
			b, err := os.ReadFile(filepath.Join(dir, "capacity.json"))
			if err != nil || json.Unmarshal(b, &cr) != nil {
				t.Fatalf("capacity.json: %v\n%s", err, b)
			}
			t.Logf("μ = %.2f req/s; sustainable %.2f, lowest failing %.2f, %d steps", mu, cr.SustainableRPS, cr.LowestFailingRPS, len(cr.Steps))
			if mu < 8 || mu > 11 {
				t.Fatalf("the simulator's μ is %.2f; the test assumes ≈ 9.3", mu)
			}
			if res.Verdict != judge.Pass || !cr.Bounded || !cr.Converged {
				t.Fatalf("outcome %+v, result %+v\n%s", res, cr, out)
			}
			if d := math.Abs(cr.SustainableRPS-mu) / mu; d > 0.10 {
				t.Fatalf("sustainable %.2f req/s is %.0f%% from μ %.2f\n%s", cr.SustainableRPS, 100*d, mu, out)
			}
			if want := experiment.RoundRate(0.7 * cr.SustainableRPS); cr.BaselineRPS != want {
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
	c := DefaultConfig()
	c.Simulate = true
	queueingSLO(&c.Options)
	env, out := capacityEnv(t, c.Options)
	st, err := runStep(context.Background(), env, &c, exptest.Dir(t), 1, 30)
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
	err = record.ReadFile(filepath.Join(res.Spec.Dir.Path(), "requests.jsonl"), func(r *record.Record) error {
		n++
		if time.Duration(r.ScheduledNs) >= res.StoppedAt {
			t.Errorf("seq %d scheduled at %s, after the stop at %s", r.Seq, time.Duration(r.ScheduledNs), res.StoppedAt)
		}
		return nil
	})
	if err != nil || int64(n) != res.Count() {
		t.Fatalf("%d records (%d written): %v", n, res.Count(), err)
	}
}

// A capacity folder's results.md keeps the capacity layout in its detail
// table too: one row per step, headed "step" (not "chat / step-01-30rps"
// in the workload column); its sent rate is the step table's and CSV's
// (here n/a: virtual time has no load generator), not the offered rate;
// and a stopped step's verdict reads plainly.
func TestCapacityResultsLayout(t *testing.T) {
	c := DefaultConfig()
	c.Simulate = true
	queueingSLO(&c.Options)
	env, out := capacityEnv(t, c.Options)
	d := exptest.Dir(t)
	st, err := runStep(context.Background(), env, &c, d, 1, 30)
	if err != nil || st.StoppedEarly == "" {
		t.Fatalf("step not stopped early (%v): %+v\n%s", err, st, out)
	}
	again := *st // a second row, so that the step column varies
	again.Index, again.Name = 2, "step-02-30rps"
	if err := WriteReports(env, &c, d, &Result{Steps: []Step{*st, again}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(d.Path(), "results.md"))
	md := string(b)
	rows, err := csv.NewReader(exptest.Open(t, filepath.Join(d.Path(), "results.csv"))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("results.csv: %v, %d lines", err, len(rows))
	}
	if i := slices.Index(rows[0], "achieved_send_rps"); i < 0 || rows[1][i] != "n/a" {
		t.Fatalf("achieved_send_rps column %d: %v", i, rows)
	}
	if strings.Contains(md, "chat / ") || !strings.Contains(md, "| step    ") {
		t.Errorf("detail table not in the step layout:\n%s", md)
	}
	// The detail table's Load row: step, offered, sent.
	re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(st.Name) + ` +\| +[0-9.]+ \| +(\S+) \|( +[0-9.]+ \|){4}$`)
	if m := re.FindStringSubmatch(md); m == nil || m[1] != "n/a" {
		t.Errorf("detail table's sent for %s = %v, want n/a like the CSV:\n%s", st.Name, m, md)
	}
	if strings.Contains(md, "not hopeless") || !regexp.MustCompile(`FAIL +`+regexp.QuoteMeta(st.Name)+` +ran to the end +stopped after`).MatchString(md) {
		t.Errorf("stopped step's verdict:\n%s", md)
	}
}

func TestCapacityConfigErrorsNameTheFlag(t *testing.T) {
	cases := map[string]exptest.ConfigCase[Config]{
		"zero start":         {Mutate: func(c *Config) { c.StartRPS = 0 }, Want: "--start-rps: must be > 0"},
		"unreachable start":  {Mutate: func(c *Config) { c.StartRPS = 2e6 }, Want: "--start-rps: 2e+06 requests/s is more than the load generator can schedule"},
		"max below start":    {Mutate: func(c *Config) { c.StartRPS, c.MaxRPS = 5, 2 }, Want: "--max-rps: must be ≥ --start-rps (5), got 2"},
		"growth not growing": {Mutate: func(c *Config) { c.Growth = 1 }, Want: "--growth: must be > 1"},
		"zero tolerance":     {Mutate: func(c *Config) { c.Tolerance = 0 }, Want: "--tolerance: must be within (0, 1)"},
		"one step":           {Mutate: func(c *Config) { c.MaxSteps = 1 }, Want: "--max-steps: must be ≥ 2"},
		"zero step":          {Mutate: func(c *Config) { c.StepDuration = 0 }, Want: "--step-duration: must be > 0"},
		"max step too short": {Mutate: func(c *Config) { c.MaxStepDuration = time.Second }, Want: "--max-step-duration: must be ≥ --step-duration"},
		"no requests":        {Mutate: func(c *Config) { c.MinRequests = 0 }, Want: "--min-requests: must be ≥ 1"},
		"fraction above 1":   {Mutate: func(c *Config) { c.BaselineFraction = 1.5 }, Want: "--baseline-fraction: must be within (0, 1]"},
		"gamma arrivals":     {Mutate: func(c *Config) { c.Arrival = "gamma" }, Want: `--arrival: must be poisson or constant, got "gamma"`},
		"no SLO": {Mutate: func(c *Config) { c.Options.SLOTTFTP95, c.Options.SLOE2EP99, c.Options.SLOGoodput = 0, 0, 0 },
			Want: "a capacity search needs at least one SLO clause"},
	}
	exptest.ConfigErrors(t, DefaultConfig, (*Config).Validate, cases)
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestCapacityEndToEndAgainstHTTPSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	t.Parallel()
	c := DefaultConfig()
	c.Options = exptest.LiveOptions()
	// Four replicas (μ ≈ 37 req/s) from 20 req/s: 2 s steps of 40+
	// requests, enough to decide a 90% goodput (36 all good show it);
	// the TTFT deadline of 1 s makes goodput fail once requests queue.
	c.StartRPS, c.Growth, c.MaxSteps = 20, 2, 3
	c.StepDuration, c.MaxStepDuration, c.MinRequests, c.WarmupRequests = 2*time.Second, 2*time.Second, 1, 2
	c.SettleTimeout = 0
	o := &c.Options
	o.Sim.Replicas = 4
	o.SLOTTFTP95, o.SLOE2EP99, o.SLOGoodput, o.TTFTDeadline = 0, 0, 0.9, time.Second
	o.Timeout = 2 * time.Second // an overloaded step drains within 2 s
	env, out := exptest.Env(t, c.Options, false)
	d := exptest.Dir(t)
	dir := d.Path()
	start := time.Now()
	res, err := Capacity(context.Background(), env, &c, d, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("capacity search in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if res.Partial || res.Unusable {
		t.Fatalf("outcome %+v", res)
	}
	exptest.Files(t, dir, "results.md", "results.csv", "results.json", "report.html", "capacity.json")
	var cr Result
	b, _ := os.ReadFile(filepath.Join(dir, "capacity.json"))
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Steps) < 2 {
		t.Fatalf("capacity.json: %v, %d steps", err, len(cr.Steps))
	}
	switch {
	case cr.SustainableRPS < 20:
		t.Errorf("sustainable %.2f req/s: four replicas of the simulator hold 20 req/s easily", cr.SustainableRPS)
	case cr.GeneratorLimited:
		// A loaded machine (CI under -race on 2 cores) may not send the
		// upper steps on time: the search must then stop there and say
		// the capacity is a lower bound, not find a failing rate.
		if cr.LowestFailingRPS != 0 || !strings.Contains(cr.Note, "at least") {
			t.Errorf("generator-limited search: lowest failing %.2f, note %q; want no failing rate and a lower bound", cr.LowestFailingRPS, cr.Note)
		}
		t.Logf("the generator could not keep up on this machine: %s", cr.Note)
	case cr.LowestFailingRPS == 0:
		t.Errorf("sustainable %.2f req/s, no failing rate: four replicas fail at 80", cr.SustainableRPS)
	}
	for _, s := range cr.Steps {
		exptest.Files(t, filepath.Join(dir, s.Name), "manifest.json", "requests.jsonl", "summary.json", "engine.csv")
		if s.Rate <= 20 && s.GeneratorLimited {
			t.Errorf("%s: the generator could not send %g req/s: %s", s.Name, s.Rate, s.Measure.GeneratorNote)
		}
		if n := s.Measure.CompletedOK; n == 0 {
			t.Errorf("%s: nothing completed", s.Name)
		}
	}
	if !strings.Contains(out.String(), "Sustainable capacity") {
		t.Errorf("no summary:\n%s", out)
	}
}

// A step at a low, fast rate whose failures (20 % HTTP 500) exceed the
// goodput SLO's budget (95 %: 5 %) does not pass and is not a capacity.
func TestStepFailuresBeyondGoodputBudgetFail(t *testing.T) {
	c := DefaultConfig()
	c.Simulate = true
	c.Options.Sim.Fault500 = 0.2
	c.Options.SLOGoodput = 0.95
	env, out := capacityEnv(t, c.Options)
	st, err := runStep(context.Background(), env, &c, exptest.Dir(t), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := &st.Measure.Phase
	t.Logf("failures %.1f%% of %d", 100*float64(p.Offered-p.Succeeded)/float64(p.Offered), p.Offered)
	if fr := float64(p.Offered-p.Succeeded) / float64(p.Offered); fr < 0.1 {
		t.Fatalf("the test needs failures above the 5%% budget, got %.1f%%", 100*fr)
	}
	if st.Pass {
		t.Fatalf("a step with %.1f%% failures passed a 95%% goodput SLO: %+v\n%s", 100*p.FailureRate, st.Verdict, out)
	}
}

// Every column of a capacity folder's results.csv is in docs/metrics.md.
func TestColumnsDocumented(t *testing.T) {
	var keys []string
	for _, c := range allColumns {
		keys = append(keys, c.Key)
	}
	exptest.Documented(t, keys)
}

// TestCapacityStopsAtAQuota: against a managed endpoint whose quota is
// far below the engine's capacity (120 requests a minute), the search
// stops at the quota and says so, with the account's capacity at test
// time and the bucket that bound, instead of calling the quota the
// service's capacity.
func TestCapacityStopsAtAQuota(t *testing.T) {
	c := DefaultConfig()
	c.Simulate = true
	c.Options.PromptTokens, c.Options.OutputTokens = workload.FixedLength(200), workload.FixedLength(50)
	c.Options.Sim.QuotaRequestsPerMinute = 120
	env, out := capacityEnv(t, c.Options)
	d := exptest.Dir(t)
	if _, err := Capacity(context.Background(), env, &c, d, out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"The search stopped at a quota, not at the service's capacity", "Account capacity at test time: ", "bound by requests per minute"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
}
