package soak

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
)

func virtualSoak(t *testing.T, mutate func(*Config)) (*Result, experiment.Outcome, string) {
	t.Helper()
	c := DefaultConfig()
	c.Simulate, c.Options.Quiet = true, true
	c.Rate, c.Duration, c.Warmup = 5, 30*time.Minute, time.Minute
	mutate(&c)
	env, out := exptest.Env(t, c.Options, true)
	d := exptest.Dir(t)
	dir := d.Path()
	res, err := Soak(context.Background(), env, &c, d, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var sr Result
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

// results.csv gives each window's start and end as numbers of seconds
// since the soak began (not a text like "0.0–1.0 min"), one window after
// another.
func TestSoakWindowColumnsNumeric(t *testing.T) {
	_, res, _ := virtualSoak(t, func(c *Config) { c.Duration = 6 * time.Minute })
	rows, err := csv.NewReader(exptest.Open(t, filepath.Join(res.Dir, "results.csv"))).ReadAll()
	if err != nil || len(rows) != 7 {
		t.Fatalf("results.csv: %v, %d lines", err, len(rows))
	}
	if rows[0][0] != "window_start_s" || rows[0][1] != "window_end_s" {
		t.Fatalf("header %v", rows[0][:3])
	}
	for i, r := range rows[1:] {
		start, err1 := strconv.ParseFloat(r[0], 64)
		end, err2 := strconv.ParseFloat(r[1], 64)
		if err1 != nil || err2 != nil || start != float64(60*i) || end != float64(60*(i+1)) {
			t.Errorf("window %d: %q–%q, want %d–%d", i, r[0], r[1], 60*i, 60*(i+1))
		}
	}
}

func trendOf(sr *Result, metric string) judge.Drift {
	for _, t := range sr.Trends {
		if t.Metric == metric {
			return t
		}
	}
	return judge.Drift{}
}

// At a constant load the simulator is stationary: the soak says stable.
// When its engine slows by half per hour it says drifting, upward, on the
// latencies and the KV-cache usage, with a significant slope.
func TestSoakDrift(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("stable seed %d", seed), func(t *testing.T) {
			sr, res, out := virtualSoak(t, func(c *Config) { c.Options.Seed = seed })
			if sr.Verdict != judge.DriftStable || res.Verdict != judge.Pass {
				t.Fatalf("verdict %s, outcome %+v\n%s", sr.Verdict, res, out)
			}
			for _, tr := range sr.Trends {
				if !tr.Tested || tr.Windows != 30 {
					t.Errorf("%s: tested %v over %d windows, want 30", tr.Metric, tr.Tested, tr.Windows)
				}
			}
		})
		t.Run(fmt.Sprintf("slowing down seed %d", seed), func(t *testing.T) {
			sr, res, out := virtualSoak(t, func(c *Config) { c.Options.Seed, c.Options.Sim.SlowdownPerHour = seed, 0.5 })
			if sr.Verdict != judge.DriftDrifting || res.Verdict == judge.Pass {
				t.Fatalf("verdict %s, outcome %+v\n%s", sr.Verdict, res, out)
			}
			if tr := trendOf(sr, "p95 completion"); !tr.Drifting || tr.Trend.CILow <= 0 || tr.Change <= 0 {
				t.Errorf("not drifting up: %s", tr.Text)
			}
			// The engine holds more sequences as each takes longer.
			if tr := trendOf(sr, "engine KV-cache usage"); tr.Trend.CILow <= 0 {
				t.Errorf("no significant rise: %s", tr.Text)
			}
			if !strings.Contains(out, "drift DRIFTING") || !strings.Contains(out, "DRIFTING up") {
				t.Errorf("output does not say so:\n%s", out)
			}
		})
	}
}

func TestSoakConfigErrorsNameTheFlag(t *testing.T) {
	cases := map[string]exptest.ConfigCase[Config]{
		"no rate with target": {Mutate: func(c *Config) { c.Rate, c.Options.Target = 0, "http://127.0.0.1:1/v1" }, Want: "--rate: required with --target"},
		"negative rate":       {Mutate: func(c *Config) { c.Rate = -1 }, Want: "--rate: must be > 0"},
		"unreachable rate":    {Mutate: func(c *Config) { c.Rate = 3e6 }, Want: "--rate: 3e+06 requests/s is more than the load generator can schedule"},
		"too short":           {Mutate: func(c *Config) { c.Duration = 3 * time.Minute }, Want: "--duration: must hold at least 6 windows of --window 1m0s"},
		"bad confidence":      {Mutate: func(c *Config) { c.Confidence = 1 }, Want: "--confidence: must be within (0.5, 1)"},
		"zero drift":          {Mutate: func(c *Config) { c.DriftLatency = 0 }, Want: "--drift-latency: must be > 0"},
		"kv drift over 1":     {Mutate: func(c *Config) { c.DriftKV = 2 }, Want: "--drift-kv: must be within (0, 1]"},
	}
	exptest.ConfigErrors(t, func() Config { c := DefaultConfig(); c.Rate = 5; return c }, (*Config).Validate, cases)
}

func TestSoakEndToEndAgainstHTTPSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	t.Parallel()
	c := DefaultConfig()
	c.Options = exptest.LiveOptions()
	c.Options.Window = 500 * time.Millisecond
	c.Rate, c.Duration, c.Warmup = 5, 3*time.Second, 500*time.Millisecond
	env, out := exptest.Env(t, c.Options, false)
	d := exptest.Dir(t)
	dir := d.Path()
	res, err := Soak(context.Background(), env, &c, d, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
	if res.Partial || res.Unusable {
		t.Fatalf("outcome %+v", res)
	}
	exptest.Files(t, dir, "results.md", "results.csv", "results.json", "report.html", "soak.json", "requests.jsonl", "engine.csv")
	var sr Result
	b, _ := os.ReadFile(filepath.Join(dir, "soak.json"))
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	if sr.Verdict != judge.DriftStable && sr.Verdict != judge.DriftDrifting {
		t.Errorf("verdict %q", sr.Verdict)
	}
	if len(sr.Trends) != 4 {
		t.Fatalf("%d trends", len(sr.Trends))
	}
	for _, tr := range sr.Trends {
		if !tr.Tested || tr.Windows < judge.MinDriftWindows {
			t.Errorf("%s not tested: %s", tr.Metric, tr.Text)
		}
	}
	rows, err := csv.NewReader(exptest.Open(t, filepath.Join(dir, "results.csv"))).ReadAll()
	if err != nil || len(rows) < 1+judge.MinDriftWindows {
		t.Fatalf("results.csv: %v, %d lines", err, len(rows))
	}
	if !strings.Contains(out.String(), "  soak  drift ") {
		t.Errorf("no verdict printed:\n%s", out)
	}
}

// Every column of a soak folder's results.csv, and of its drift table, is
// in docs/metrics.md.
func TestColumnsDocumented(t *testing.T) {
	var keys []string
	for _, c := range append(append(slices.Clip(soakWindowColumns), report.SLOColumns...), soakTrendColumns...) {
		keys = append(keys, c.Key)
	}
	exptest.Documented(t, keys)
}
