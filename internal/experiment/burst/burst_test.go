package burst

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment/capacity"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/workload"
)

// virtualBurst runs the burst experiment in virtual time and returns its runs.
func virtualBurst(t *testing.T, mutate func(*Config)) ([]Run, string, *exptest.SyncBuilder) {
	t.Helper()
	c := DefaultConfig()
	c.Simulate = true
	c.BaselineRPS = 5
	c.Options.Quiet = true
	c.Options.Timeout = 30 * time.Minute // no abandonment: the fluid model assumes every request waits
	c.Options.E2EDeadline = 30 * time.Second
	mutate(&c)
	env, out := exptest.Env(t, c.Options, true)
	d := exptest.Dir(t)
	runs, err := burstRuns(context.Background(), env, &c, d, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if _, err := writeReports(env, &c, d, runs, false, out); err != nil {
		t.Fatal(err)
	}
	return runs, d.Path(), out
}

// A burst above capacity builds a backlog that drains at μ − λ: the
// measured recovery agrees with the fluid model's prediction within 15%.
func TestBurstAboveCapacityMatchesPrediction(t *testing.T) {
	runs, _, out := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = time.Minute, 3*time.Minute, time.Minute, 5*time.Minute, 10*time.Minute
	})
	r := runs[0]
	if r.Prediction == nil || r.Prediction.Never {
		t.Fatalf("no prediction: %+v\n%s", r.Prediction, out)
	}
	rec := r.Result.Verdicts.Recovery
	if !rec.Recovered {
		t.Fatalf("not recovered: %s\n%s", rec.Message, out)
	}
	measured := rec.RecoveryTimeMs / 1000
	predicted := r.Prediction.RecoveryTime.Seconds()
	t.Logf("μ %.2f: predicted %.0f s, measured %.0f s (window %s)", r.Prediction.DrainRate+5, predicted, measured, 10*time.Second)
	// The measurement has the resolution of one window.
	if math.Abs(measured-predicted) > 0.15*predicted+10 {
		t.Fatalf("measured recovery %.0f s vs predicted %.0f s: more than 15%% apart", measured, predicted)
	}
	if predicted < 60 {
		t.Fatalf("the test needs a real backlog; predicted only %.0f s", predicted)
	}
}

// A burst below capacity builds no backlog and recovers at once.
func TestBurstBelowCapacityRecoversImmediately(t *testing.T) {
	runs, _, _ := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{1.2}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 30*time.Second, 3*time.Minute, time.Minute, 2*time.Minute, 2*time.Minute
	})
	r := runs[0]
	rec := r.Result.Verdicts.Recovery
	// Within a window or two: requests arriving just after the burst still
	// share the batch with the burst's own requests.
	if !rec.Recovered || rec.RecoveryTimeMs > 20_000 {
		t.Fatalf("recovery %+v; want recovered within two windows", rec.Message)
	}
	if r.Prediction == nil || r.Prediction.PeakBacklog != 0 || r.Prediction.RecoveryTime != 0 {
		t.Fatalf("prediction %+v", r.Prediction)
	}
}

// The seed's worked example (docs/method.md §8), through the same predict call the
// experiment makes.
func TestSeedExamplePrediction(t *testing.T) {
	c := DefaultConfig()
	c.BaselineRPS = 8
	c.Burst = time.Minute
	p, err := predict.Predict(predictParams(&c, 2.5, 10, false, false))
	if err != nil {
		t.Fatal(err)
	}
	if p.PeakBacklog != 600 || p.RecoveryTime != 300*time.Second {
		t.Fatalf("peak %.1f recovery %s; want 600, 5m0s", p.PeakBacklog, p.RecoveryTime)
	}
	c.BoostRPS = 16
	c.BoostAfter = time.Minute
	p, err = predict.Predict(predictParams(&c, 2.5, 10, false, false))
	if err != nil {
		t.Fatal(err)
	}
	if p.RecoveryTime != 75*time.Second {
		t.Fatalf("with μ→16: %s, want 75s", p.RecoveryTime)
	}
}

// The run folders and the results table carry every docs/method.md §13 column.
func TestBurstWritesFoldersAndEveryColumn(t *testing.T) {
	_, dir, out := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{2, 4}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, time.Minute, 20*time.Second, time.Minute, 2*time.Minute
	})
	// The terminal shows the tables under results.md's heading (command
	// and target), without results.md's legend, which it points to.
	term := out.String()
	if !strings.Contains(term, "\nsurge burst: engine model in virtual time (--simulate) — one row per multiplier") || strings.Contains(term, "# surge results") ||
		strings.Contains(term, "## Legend") || !strings.Contains(term, "Column meanings: the legend in "+filepath.Join(dir, "results.md")) {
		t.Errorf("terminal tables:\n%s", term)
	}
	for _, f := range []string{"results.md", "results.csv", "results.json", "report.html",
		"burst-2x/manifest.json", "burst-2x/requests.jsonl", "burst-2x/summary.json", "burst-2x/timeseries.csv", "burst-2x/engine.csv",
		"burst-4x/requests.jsonl"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	header := strings.SplitN(string(csv), "\n", 2)[0]
	for _, col := range []string{"offered_rps", "sent_rps", "completed_rps", "arrivals_ok_ratio", "goodput_rps", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms",
		"completion_p50_ms", "completion_p95_ms", "completion_p99_ms", "queue_wait_p50_ms", "rejection_rate", "timeout_rate", "recovery_s", "samples"} {
		if !strings.Contains(header, col) {
			t.Errorf("results.csv lacks column %s: %s", col, header)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and one row per multiplier, got %d lines", len(lines))
	}
	// every scheduled arrival has exactly one record
	var n int
	seen := map[int64]bool{}
	err = record.ReadFile(filepath.Join(dir, "burst-2x", "requests.jsonl"), func(r *record.Record) error {
		if seen[r.Seq] {
			t.Errorf("seq %d twice", r.Seq)
		}
		seen[r.Seq] = true
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("records %d: %v", n, err)
	}
	var sum rundir.Summary
	b, _ := os.ReadFile(filepath.Join(dir, "burst-2x", "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Records != int64(n) || sum.Analysis == nil || !sum.Analysis.Recovery.Measured || sum.Verdicts == nil {
		t.Fatalf("summary: records %d analysis %v", sum.Records, sum.Analysis != nil)
	}
}

func TestBurstConfigErrorsNameTheFlag(t *testing.T) {
	cases := map[string]exptest.ConfigCase[Config]{
		"zero multiplier":     {Mutate: func(c *Config) { c.Multipliers = []float64{2, 0} }, Want: "--multipliers: each must be > 0, got 0"},
		"negative multiplier": {Mutate: func(c *Config) { c.Multipliers = []float64{-1} }, Want: "--multipliers: each must be > 0, got -1"},
		"zero burst":          {Mutate: func(c *Config) { c.Burst = 0 }, Want: "--burst: must be > 0, got 0s"},
		"zero baseline phase": {Mutate: func(c *Config) { c.Baseline = 0 }, Want: "--baseline: must be > 0, got 0s"},
		"no baseline rps":     {Mutate: func(c *Config) { c.BaselineRPS = 0; c.Options.Target = "http://127.0.0.1:1/v1" }, Want: "--baseline-rps: required with --target"},
		"short limit":         {Mutate: func(c *Config) { c.RecoveryLimit = time.Second }, Want: "--recovery-limit: must be ≥ --recovery"},
		"bad metric":          {Mutate: func(c *Config) { c.RecoveryMetric = "p99" }, Want: `--recovery-metric: must be e2e or ttft, got "p99"`},
		"burst out of reach": {Mutate: func(c *Config) { c.BaselineRPS, c.Multipliers = 200_000, []float64{2, 10} },
			Want: "--multipliers: 10 × the baseline 200000 = 2e+06 requests/s is more than the load generator can schedule"},
		"baseline out of reach": {Mutate: func(c *Config) { c.BaselineRPS = 2e6 }, Want: "--baseline-rps: 2e+06 requests/s is more than the load generator can schedule"},
	}
	exptest.ConfigErrors(t, func() Config { c := DefaultConfig(); c.BaselineRPS = 5; return c }, (*Config).Validate, cases)
}

// Above the simulator's capacity the experiment warns loudly.
func TestBaselineAboveCapacityWarns(t *testing.T) {
	_, _, out := virtualBurst(t, func(c *Config) {
		c.BaselineRPS = 30
		c.Multipliers = []float64{1.1}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 0, 20*time.Second, 5*time.Second, 10*time.Second, 10*time.Second
	})
	if !strings.Contains(out.String(), "WARNING: the baseline 30.00 req/s is at or above the estimated capacity") {
		t.Fatalf("no warning:\n%s", out)
	}
}

// Against a target of unknown capacity, μ is measured from the completion
// rate while the burst's backlog was being served: it must match the
// simulator's saturated throughput.
func TestMeasuredMuMatchesCapacity(t *testing.T) {
	runs, _, _ := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 30*time.Second, 2*time.Minute, time.Minute, 3*time.Minute, 5*time.Minute
	})
	r := runs[0]
	burstStart := 30*time.Second + 2*time.Minute
	done, err := analyze.DoneOK(r.Result.Records, 0)
	if err != nil {
		t.Fatal(err)
	}
	mu, ok := analyze.MeasuredCapacity(r.Result.Analysis, done, burstStart, r.BurstEnd)
	if !ok {
		t.Fatal("no μ measured from a 3× burst over a half-loaded simulator")
	}
	c := DefaultConfig()
	want, err := simCapacity(c.Options)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measured μ %.2f req/s, saturated capacity %.2f req/s", mu, want)
	if math.Abs(mu-want) > 0.1*want {
		t.Fatalf("measured μ %.2f, want %.2f ± 10%%", mu, want)
	}
	// A burst below capacity builds no backlog and says nothing about μ.
	runs, _, _ = virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{1.2}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 30*time.Second, 2*time.Minute, time.Minute, time.Minute, time.Minute
	})
	if done, err = analyze.DoneOK(runs[0].Result.Records, 0); err != nil {
		t.Fatal(err)
	}
	if mu, ok := analyze.MeasuredCapacity(runs[0].Result.Analysis, done, burstStart, runs[0].BurstEnd); ok {
		t.Fatalf("μ %.2f measured from a burst below capacity", mu)
	}
}

// --baseline-rps auto runs the search first; the burst uses its suggestion
// as the baseline and its sustainable rate as μ for the prediction.
func TestBurstBaselineAuto(t *testing.T) {
	runs, dir, out := virtualBurst(t, func(c *Config) {
		c.BaselineAuto, c.BaselineRPS = true, 0
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 30*time.Second, time.Minute, 30*time.Second, 2*time.Minute, 4*time.Minute
	})
	var cr capacity.Result
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
	// The search's rate stands as --capacity-rps would: recorded as such in
	// the manifest, and never replaced by a μ measured during a burst.
	m, err := record.ReadManifest(filepath.Join(dir, "burst-3x", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Extra struct {
			Burst struct {
				CapacityRPS float64 `json:"capacity_rps"`
			} `json:"burst"`
		} `json:"extra"`
	}
	if b, err := json.Marshal(m.Config); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("manifest config: %v", err)
	}
	if rec.Extra.Burst.CapacityRPS != cr.SustainableRPS {
		t.Errorf("manifest capacity_rps %g, want the sustainable %g", rec.Extra.Burst.CapacityRPS, cr.SustainableRPS)
	}
}

// surge report reads the burst settings of a run folder written before
// the split (Go field names in the manifest) as well as of a new one.
func TestDecodeConfigOldAndNewManifests(t *testing.T) {
	want := DefaultConfig()
	want.BaselineRPS, want.Multipliers, want.RecoveryMetric, want.RecoveryLimit = 4, []float64{2, 5}, "ttft", 75*time.Second
	want.Warmup, want.Burst, want.CapacityRPS = 5*time.Second, 6*time.Second, 9.5
	newJSON, err := json.Marshal(experimentRecord{Multiplier: 2, Burst: &want})
	if err != nil {
		t.Fatal(err)
	}
	oldJSON := `{"multiplier": 2, "burst": {"Target": "", "Model": "", "Seed": 0, "BaselineRPS": 4, "Multipliers": [2, 5],
		"Warmup": 5000000000, "Baseline": 300000000000, "Burst": 6000000000, "Recovery": 300000000000, "RecoveryLimit": 75000000000,
		"Arrival": "poisson", "Burstiness": 1, "RecoveryMetric": "ttft", "CapacityRPS": 9.5, "BoostRPS": 0, "BoostAfter": 0,
		"SettleTimeout": 300000000000, "Simulate": false, "Demo": false, "BaselineAuto": false}}`
	for name, raw := range map[string]string{"new": string(newJSON), "before the split": oldJSON} {
		c, ok := decodeConfig(&run.Reloaded{Env: &run.Env{}, Experiment: json.RawMessage(raw)})
		if !ok {
			t.Fatalf("%s: not decoded", name)
		}
		if c.BaselineRPS != 4 || c.RecoveryMetric != "ttft" || c.RecoveryLimit != 75*time.Second || c.Warmup != 5*time.Second ||
			c.Burst != 6*time.Second || c.CapacityRPS != 9.5 || len(c.Multipliers) != 2 {
			t.Errorf("%s: decoded %+v", name, c)
		}
	}
	if _, ok := decodeConfig(&run.Reloaded{Env: &run.Env{}, Experiment: json.RawMessage(`{"step": 1}`)}); ok {
		t.Error("a manifest without a burst section decoded as a burst")
	}
}

// When the simulator's μ cannot be measured (every request is longer than
// max_model_len) the bursts still run, without a prediction, as before.
func TestBurstRunsWhenSimCapacityFails(t *testing.T) {
	runs, _, out := virtualBurst(t, func(c *Config) {
		c.Options.PromptTokens = workload.FixedLength(9000) // > max_model_len 8192: the engine refuses every request
		c.Multipliers = []float64{2}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 0, 20*time.Second, 5*time.Second, 10*time.Second, 10*time.Second
	})
	if !strings.Contains(out.String(), "note: μ unknown: burst: the simulator's capacity: ") {
		t.Errorf("no note on μ:\n%s", out)
	}
	if len(runs) != 1 || runs[0].Prediction != nil {
		t.Fatalf("runs %d, want 1 without a prediction", len(runs))
	}
	if ok := runs[0].Result.Analysis.Overall.Succeeded; ok != 0 {
		t.Errorf("%d requests succeeded, want none (all refused)", ok)
	}
}

// A 5× burst over half the simulator's capacity: the burst row's
// completed/s (ok requests whose completion fell in the burst / its length)
// never exceeds what the target can complete, while the share of the
// burst's arrivals that succeeded is reported beside it. Counting successes
// by scheduled arrival ÷ phase length, as the table once did, gave ≈ 5 ×
// the baseline here: more than the capacity.
func TestBurstRowCompletedNeverAboveCapacity(t *testing.T) {
	mu, err := simCapacity(DefaultConfig().Options)
	if err != nil {
		t.Fatal(err)
	}
	runs, dir, out := virtualBurst(t, func(c *Config) {
		c.BaselineRPS = mu / 2
		c.Multipliers = []float64{5}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 30*time.Second, time.Minute, time.Minute, 5*time.Minute, 10*time.Minute
	})
	p, _ := runs[0].Result.Analysis.Phase("burst")
	byArrival := float64(p.Succeeded) / (p.EndMs - p.StartMs) * 1000
	t.Logf("μ %.2f req/s; burst offered %.2f, completed %.2f/s, arrivals ok %.1f%%, ok arrivals / length %.2f/s", mu, p.OfferedRPS, p.CompletedRPS, 100*p.ArrivalsOKRatio, byArrival)
	if byArrival <= 1.2*mu {
		t.Fatalf("the test needs a burst whose arrivals succeed at more than μ per second of the burst; got %.2f vs μ %.2f", byArrival, mu)
	}
	if p.CompletedRPS > 1.05*mu {
		t.Fatalf("burst completed %.2f/s, above the capacity %.2f req/s\n%s", p.CompletedRPS, mu, out)
	}
	if p.ArrivalsOKRatio < 0.99 {
		t.Fatalf("arrivals ok %.3f: every request waits in this setup", p.ArrivalsOKRatio)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	head, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	for i, h := range head {
		if h == "completed_rps" {
			v, err := strconv.ParseFloat(row[i], 64)
			if err != nil || v > 1.05*mu {
				t.Fatalf("results.csv completed_rps %q, want ≤ μ %.2f", row[i], mu)
			}
			return
		}
	}
	t.Fatalf("results.csv has no completed_rps column: %s", lines[0])
}

// The results table carries μ and its source; a μ unknown because the
// burst did not saturate the target gives no prediction and says so.
func TestResultsTableShowsMuAndSource(t *testing.T) {
	runs, dir, _ := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, time.Minute, 20*time.Second, time.Minute, 2*time.Minute
	})
	col := func(dir, key string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "results.csv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		head, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
		for i, h := range head {
			if h == key {
				return row[i]
			}
		}
		t.Fatalf("results.csv has no %s column: %s", key, lines[0])
		return ""
	}
	mu, err := simCapacity(DefaultConfig().Options)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := strconv.ParseFloat(col(dir, "mu_rps"), 64); err != nil || math.Abs(v-mu) > 0.01 {
		t.Errorf("mu_rps %q, want %.2f", col(dir, "mu_rps"), mu)
	}
	if src := col(dir, "mu_source"); !strings.Contains(src, "simulated engine") {
		t.Errorf("mu_source %q", src)
	}
	// The same run, had μ been measured from an unsaturated burst.
	r := runs[0]
	r.Prediction, r.Mu, r.MuSource = nil, 0, analyze.NotSaturated
	c := DefaultConfig()
	c.BaselineRPS = 5
	env, out := exptest.Env(t, c.Options, true)
	d := exptest.Dir(t)
	if _, err := writeReports(env, &c, d, []Run{r}, false, out); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(d.Path(), "results.md"))
	if col(d.Path(), "mu_rps") != "n/a" || !strings.Contains(string(md), analyze.NotSaturated) || strings.Contains(string(md), "predicted 0") {
		t.Errorf("mu_rps %q; results.md:\n%s", col(d.Path(), "mu_rps"), md)
	}
}

// Each multiplier gets a diagnosis: in the terminal right after the
// verdicts, in results.md and results.json — one that held, one that
// backlogged past the simulator's capacity.
func TestBurstDiagnosis(t *testing.T) {
	_, dir, out := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{1, 4}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, time.Minute, 20*time.Second, time.Minute, 3*time.Minute
	})
	term := out.String()
	v, d := strings.Index(term, "\nVerdicts"), strings.Index(term, "\nDiagnosis")
	if v < 0 || d < v {
		t.Fatalf("no diagnosis after the verdicts:\n%s", term)
	}
	for _, want := range []string{"  1×  " + judge.ModeHeld + ": ", "  4×  " + judge.ModeBacklogged + ": ", "suggests "} {
		if !strings.Contains(term[d:], want) {
			t.Errorf("terminal diagnosis lacks %q:\n%s", want, term[d:])
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	if !strings.Contains(string(md), "## Diagnosis") || !strings.Contains(string(md), "**4× backlogged**") {
		t.Errorf("results.md lacks the diagnosis:\n%s", md)
	}
	var doc struct {
		Diagnoses []struct {
			Scope, Mode string
			Hints       []struct{ Hypothesis, Evidence, Check string }
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Diagnoses) != 2 || doc.Diagnoses[0].Mode != judge.ModeHeld || doc.Diagnoses[1].Mode != judge.ModeBacklogged || len(doc.Diagnoses[1].Hints) == 0 {
		t.Errorf("results.json diagnoses: %+v", doc.Diagnoses)
	}
}

// The summary block of a burst above capacity: μ and its source, the
// prediction's peak backlog against the engine's measured one, recovery
// predicted against measured, late only when clearly later, verdicts of
// baseline, burst, recovery and overall, and the prediction's backlog
// curve starting at the burst.
func TestRunSummaryOfABurst(t *testing.T) {
	var cfg Config
	runs, dir, out := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, time.Minute, 30*time.Second, 3*time.Minute, 5*time.Minute
		cfg = *c
	})
	r := runs[0]
	s := runSummary(&cfg, &r, 10*time.Second)
	if s.Mu != r.Mu || !strings.Contains(s.MuSource, "simulated engine") {
		t.Errorf("μ %v (%s), want %v", s.Mu, s.MuSource, r.Mu)
	}
	if r.Prediction == nil || s.PredictedPeakBacklog != r.Prediction.PeakBacklog || s.PredictedPeakBacklog < 50 {
		t.Fatalf("predicted peak %v; prediction %+v\n%s", s.PredictedPeakBacklog, r.Prediction, out)
	}
	// Like with like: the engine's waiting queue against the model's
	// backlog (the running batch is in neither).
	if s.MeasuredBacklogSource != "engine waiting" || s.MeasuredPeakBacklog < 0.8*s.PredictedPeakBacklog || s.MeasuredPeakBacklog > 1.25*s.PredictedPeakBacklog {
		t.Errorf("measured peak %v (%s), predicted %v", s.MeasuredPeakBacklog, s.MeasuredBacklogSource, s.PredictedPeakBacklog)
	}
	if s.PredictedRecoveryS != r.Prediction.RecoveryTime.Seconds() || s.MeasuredRecoveryS != r.Recovery.Seconds || s.RecoveryLate {
		t.Errorf("recovery predicted %v measured %v late %v", s.PredictedRecoveryS, s.MeasuredRecoveryS, s.RecoveryLate)
	}
	scopes := map[string]int{}
	for _, v := range s.Verdicts {
		scopes[v.Scope]++
	}
	for _, sc := range []string{"baseline", "burst", "recovery", "overall"} {
		if scopes[sc] != 3 {
			t.Errorf("%d verdicts for %s, want one per SLO clause (3): %+v", scopes[sc], sc, s.Verdicts)
		}
	}
	late := r
	late.Recovery = report.RecoveredAfter(2*s.PredictedRecoveryS + 20)
	if !runSummary(&cfg, &late, 10*time.Second).RecoveryLate {
		t.Error("a recovery twice as long as predicted is not flagged late")
	}
	late.Recovery = report.NotRecoveredWithin(3 * s.PredictedRecoveryS)
	if ls := runSummary(&cfg, &late, 10*time.Second); !ls.RecoveryLate || !math.IsNaN(ls.MeasuredRecoveryS) || !strings.Contains(ls.RecoveryNote, "not recovered") {
		t.Errorf("not recovered: %+v", ls)
	}
	pt, pv := predictedBacklog(&cfg, &r)
	burstStart := (r.BurstEnd - cfg.Burst).Seconds()
	if len(pt) == 0 || pt[0] != burstStart || pv[0] != 0 || slices.Max(pv) != r.Prediction.PeakBacklog {
		t.Errorf("predicted backlog from %v (burst at %v), peak %v", pt[:1], burstStart, slices.Max(pv))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<div class="summary">`, `<th>recovery</th>`, `"id":"backlog"`, `"id":"completed"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
}

// A simulator that scales from zero (min_replicas 0): the burst runs, μ is
// that of the replica its first arrival starts, and report.html's timeline
// shows replica 0's cold-start milestones from the first arrival on.
func TestBurstScaleFromZeroTimeline(t *testing.T) {
	_, dir, out := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{3}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, time.Minute, 20*time.Second, time.Minute, 2*time.Minute
		s := &c.Options.Sim
		s.Autoscale, s.MinReplicas, s.MaxReplicas = true, 0, 2
	})
	if !strings.Contains(out.String(), "simulated engine, raised to saturation") {
		t.Errorf("μ not from the simulator:\n%s", out.String())
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scale trigger (replica 0)", "capacity requested (replica 0)", "model ready (replica 0)", "first served (replica 0)"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks the marker %q", want)
		}
	}
}
