package experiment

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// End-to-end runs of capacity, sweep and soak in real time against surge's
// simulator over loopback HTTP: small settings, generous bounds. The
// simulator answers briefly (about 16 tokens) with a batch of 4, so it
// saturates at a few requests per second.

func liveLevelOptions() Options {
	o := DefaultOptions()
	o.Quiet = true
	o.Timeout = 10 * time.Second
	o.Sim.OutputMean = 16
	o.Sim.MaxNumSeqs = 4
	o.ScrapeInterval = 100 * time.Millisecond
	return o
}

func liveEnv(t *testing.T, o Options) (*Env, *strings.Builder) {
	t.Helper()
	var out strings.Builder
	env, err := Prepare(context.Background(), o, false, &out, quietLogger(), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env, &out
}

func checkFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, f := range names {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
}

func TestCapacityEndToEndAgainstHTTPSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	t.Parallel()
	c := DefaultCapacityConfig()
	c.Options = liveLevelOptions()
	c.StartRPS, c.Growth, c.MaxSteps = 4, 2, 3
	c.StepDuration, c.MaxStepDuration, c.MinRequests, c.WarmupRequests = time.Second, 1500*time.Millisecond, 1, 2
	c.SettleTimeout = 0
	c.SLOTTFTP95, c.SLOE2EP99, c.SLOGoodput, c.TTFTDeadline = time.Second, 0, 0.9, time.Second
	c.Timeout = 2 * time.Second // an overloaded step drains within 2 s
	env, out := liveEnv(t, c.Options)
	dir := t.TempDir()
	start := time.Now()
	res, err := Capacity(context.Background(), env, &c, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("capacity search in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if res.Partial || res.Unusable {
		t.Fatalf("outcome %+v", res)
	}
	checkFiles(t, dir, "results.md", "results.csv", "results.json", "report.html", "capacity.json")
	var cr CapacityResult
	b, _ := os.ReadFile(filepath.Join(dir, "capacity.json"))
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Steps) < 2 {
		t.Fatalf("capacity.json: %v, %d steps", err, len(cr.Steps))
	}
	if cr.SustainableRPS < 4 || cr.LowestFailingRPS == 0 {
		t.Errorf("sustainable %.2f req/s, lowest failing %.2f: the simulator holds 4 req/s easily and fails at 16", cr.SustainableRPS, cr.LowestFailingRPS)
	}
	for _, s := range cr.Steps {
		checkFiles(t, filepath.Join(dir, s.Name), "manifest.json", "requests.jsonl", "summary.json", "engine.csv")
		if s.Rate <= 4 && s.GeneratorLimited {
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

func TestSweepEndToEndAgainstHTTPSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	t.Parallel()
	c := DefaultSweepConfig()
	c.Options = liveLevelOptions()
	c.Concurrency = []int{1, 2, 4}
	c.Duration, c.Warmup, c.SettleTimeout = 1500*time.Millisecond, 500*time.Millisecond, 0
	env, out := liveEnv(t, c.Options)
	dir := t.TempDir()
	res, err := Sweep(context.Background(), env, &c, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
	if res.Partial || res.Unusable {
		t.Fatalf("outcome %+v", res)
	}
	checkFiles(t, dir, "results.md", "results.csv", "results.json", "report.html", "sweep.json")
	rows, err := csv.NewReader(mustOpen(t, filepath.Join(dir, "results.csv"))).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("results.csv: %v, %d lines", err, len(rows))
	}
	var sr SweepResult
	b, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err := json.Unmarshal(b, &sr); err != nil || len(sr.Levels) != 3 {
		t.Fatalf("sweep.json: %v", err)
	}
	for _, lv := range sr.Levels {
		if lv.Measure.OutputTPS <= 0 || lv.Measure.CompletedOK == 0 {
			t.Errorf("%s: no throughput measured: %+v", lv.Name, lv.Measure)
		}
		checkFiles(t, filepath.Join(dir, "level-0"+string(rune('0'+lv.Index))+"-"+lv.Name), "requests.jsonl", "summary.json")
	}
	if g := sr.Levels[2].Measure.OutputTPS / sr.Levels[0].Measure.OutputTPS; g < 1.3 {
		t.Errorf("4 users give only ×%.2f the throughput of 1 on a batch of 4", g)
	}
}

func TestSoakEndToEndAgainstHTTPSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	t.Parallel()
	c := DefaultSoakConfig()
	c.Options = liveLevelOptions()
	c.Window = 500 * time.Millisecond
	c.Rate, c.Duration, c.Warmup = 5, 3*time.Second, 500*time.Millisecond
	env, out := liveEnv(t, c.Options)
	dir := t.TempDir()
	res, err := Soak(context.Background(), env, &c, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
	if res.Partial || res.Unusable {
		t.Fatalf("outcome %+v", res)
	}
	checkFiles(t, dir, "results.md", "results.csv", "results.json", "report.html", "soak.json", "requests.jsonl", "engine.csv")
	var sr SoakResult
	b, _ := os.ReadFile(filepath.Join(dir, "soak.json"))
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	if sr.Verdict != SoakStable && sr.Verdict != SoakDrifting {
		t.Errorf("verdict %q", sr.Verdict)
	}
	if len(sr.Trends) != 4 {
		t.Fatalf("%d trends", len(sr.Trends))
	}
	for _, tr := range sr.Trends {
		if !tr.Tested || tr.Windows < soakMinWindows {
			t.Errorf("%s not tested: %s", tr.Metric, tr.Text)
		}
	}
	rows, err := csv.NewReader(mustOpen(t, filepath.Join(dir, "results.csv"))).ReadAll()
	if err != nil || len(rows) < 1+soakMinWindows {
		t.Fatalf("results.csv: %v, %d lines", err, len(rows))
	}
	if !strings.Contains(out.String(), "verdict: ") {
		t.Errorf("no verdict printed:\n%s", out)
	}
}
