package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/deploy/grafana"
)

// promQuery runs an instant query (at, or now when zero) and returns its
// vector: the samples' labels and values.
func promQuery(t *testing.T, expr string, at time.Time) ([]map[string]string, []float64) {
	t.Helper()
	q := url.Values{"query": {expr}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64))
	}
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	promGet(t, "/api/v1/query?"+q.Encode(), &resp)
	if resp.Status != "success" {
		t.Fatalf("%s: %s %s", expr, resp.Status, resp.Error)
	}
	var ls []map[string]string
	var vs []float64
	for _, r := range resp.Data.Result {
		v, err := strconv.ParseFloat(r.Value[1].(string), 64)
		if err != nil {
			t.Fatalf("%s: value %v", expr, r.Value)
		}
		ls, vs = append(ls, r.Metric), append(vs, v)
	}
	return ls, vs
}

// promRange runs a range query over [from, to] at a 1 s step and returns
// the number of series and an error from Prometheus (its parser's, for
// an expression it cannot parse).
func promRange(t *testing.T, expr string, from, to time.Time) (int, error) {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix()+1, 10)}, "step": {"1"}}
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	promGet(t, "/api/v1/query_range?"+q.Encode(), &resp)
	if resp.Status != "success" {
		return 0, fmt.Errorf("%s", resp.Error)
	}
	return len(resp.Data.Result), nil
}

func promGet(t *testing.T, path string, into any) {
	t.Helper()
	resp, err := http.Get(os.Getenv("PROMETHEUS_URL") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A burst pushed to a real Prometheus (Debian's, remote-write receiver
// on) while it runs: afterwards PromQL returns, per phase, the goodput,
// completed requests and TTFT p95 of the run's summary.json, and the
// burst phase's agree with results.json within its rounding; and every
// expression of the Grafana dashboard runs, the surge panels' and the
// engine panels' (Prometheus scrapes the simulator's vLLM-named metrics)
// each returning data over the run.
func TestPushToPrometheus(t *testing.T) {
	prom := os.Getenv("PROMETHEUS_URL")
	if prom == "" {
		t.Skip("PROMETHEUS_URL not set; run through scripts/prometheus-e2e.sh")
	}
	// The simulator the script started, or vLLM (scripts/vllm-e2e.sh
	// around it, PROMETHEUS_SCRAPE=$VLLM_METRICS_URL), at a third of
	// what the tiny model on 2 CPU cores serves.
	target, model, metrics, base := os.Getenv("SIM_BASE_URL"), os.Getenv("SIM_MODEL"), strings.TrimSuffix(os.Getenv("SIM_BASE_URL"), "/v1")+"/metrics", "4"
	var shape []string
	if v := os.Getenv("VLLM_BASE_URL"); v != "" {
		target, model, metrics, base = v, os.Getenv("VLLM_MODEL"), os.Getenv("VLLM_METRICS_URL"), "1"
		shape = []string{"--prompt-tokens", "64", "--output-tokens", "32"} // within the tiny model's context
	}
	if target == "" {
		t.Fatal("neither SIM_BASE_URL nor VLLM_BASE_URL is set")
	}
	out := filepath.Join(t.TempDir(), "pushed")
	start := time.Now()
	cmd := exec.Command(surgeBin, append([]string{"burst", "--target", target, "--model", model,
		"--baseline-rps", base, "--multipliers", "3", "--warmup", "3s", "--baseline", "20s", "--burst", "8s", "--recovery", "15s", "--recovery-limit", "15s",
		"--max-tokens-cap", "64", "--metrics-url", metrics,
		"--metrics-out", "prometheus-rw=" + prom + "/api/v1/write", "-q", "-o", out}, shape...)...)
	b, err := cmd.CombinedOutput()
	end := time.Now()
	stdout := string(b)
	t.Logf("surge burst → %v\n%s", err, stdout)
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1 && ee.ExitCode() != 5) {
		t.Fatalf("surge burst: %v", err)
	}
	if !strings.Contains(stdout, "metrics pushed to prometheus-rw=") {
		t.Fatalf("no push summary:\n%s", stdout)
	}
	runID, run := filepath.Base(out), "burst-3x"
	sum := readSummary(t, filepath.Join(out, run, "summary.json"))
	sel := func(phase string) string { return fmt.Sprintf(`run_id=%q, run=%q, phase=%q`, runID, run, phase) }
	one := func(expr string) float64 {
		t.Helper()
		_, vs := promQuery(t, expr, time.Time{})
		if len(vs) != 1 {
			t.Fatalf("%s: %d series, want 1", expr, len(vs))
		}
		return vs[0]
	}
	phases := map[string]bool{}
	for _, p := range sum.Analysis.Phases {
		phases[p.Name] = true
		good := one(fmt.Sprintf("surge_phase_goodput_rps{%s}", sel(p.Name)))
		done := one(fmt.Sprintf("surge_phase_completed_requests{%s}", sel(p.Name)))
		t.Logf("| %-8s | goodput/s PromQL %.4f = summary.json %.4f | completed %v = %d |", p.Name, good, p.GoodputRPS, done, p.Succeeded)
		if good != p.GoodputRPS || done != float64(p.Succeeded) {
			t.Errorf("%s: PromQL goodput %v completed %v; summary.json %v and %d", p.Name, good, done, p.GoodputRPS, p.Succeeded)
		}
		if p.Latency.TTFTSchedule.Count > 0 {
			ttft := one(fmt.Sprintf(`surge_phase_ttft_seconds{%s, quantile="0.95"}`, sel(p.Name)))
			t.Logf("| %-8s | TTFT p95 PromQL %.6f s = summary.json %.3f ms |", p.Name, ttft, p.Latency.TTFTSchedule.P95Ms)
			if math.Abs(ttft*1e3-p.Latency.TTFTSchedule.P95Ms) > 1e-9 {
				t.Errorf("%s: PromQL TTFT p95 %v s; summary.json %v ms", p.Name, ttft, p.Latency.TTFTSchedule.P95Ms)
			}
		}
	}
	for _, want := range []string{"warmup", "baseline", "burst", "recovery"} {
		if !phases[want] {
			t.Errorf("summary.json lacks phase %s", want)
		}
	}
	// results.json's row of the burst is its burst phase, rounded.
	var res struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	readJSON(t, filepath.Join(out, "results.json"), &res)
	if len(res.Rows) != 1 {
		t.Fatalf("results.json: %d rows", len(res.Rows))
	}
	row := res.Rows[0]
	for _, c := range []struct {
		col, expr string
		scale     float64
	}{
		{"goodput_rps", fmt.Sprintf("surge_phase_goodput_rps{%s}", sel("burst")), 1},
		{"ttft_p95_ms", fmt.Sprintf(`surge_phase_ttft_seconds{%s, quantile="0.95"}`, sel("burst")), 1e3},
	} {
		var cell struct {
			Value *float64 `json:"value"`
		}
		if err := json.Unmarshal(row[c.col], &cell); err != nil || cell.Value == nil {
			t.Fatalf("results.json %s: %s (%v)", c.col, row[c.col], err)
		}
		got := one(c.expr) * c.scale
		t.Logf("| burst | results.json %s %v, PromQL %.4f |", c.col, *cell.Value, got)
		if math.Abs(got-*cell.Value) > 0.05+1e-9 {
			t.Errorf("results.json %s %v; PromQL %v", c.col, *cell.Value, got)
		}
	}
	// Every expression of the dashboard runs over the run, and returns data.
	d, err := grafana.Load()
	if err != nil {
		t.Fatal(err)
	}
	for where, e := range grafana.Expressions(d) {
		expr := grafana.Substitute(e, map[string]string{"run_id": runID, "run": ".*", "engine_job": "vllm"})
		n, err := promRange(t, expr, start, end.Add(2*time.Second))
		t.Logf("dashboard %-55s %d series", where, n)
		if err != nil {
			t.Errorf("dashboard %s: Prometheus refused %q: %v", where, expr, err)
		} else if n == 0 {
			t.Errorf("dashboard %s: no data for %q over the run", where, expr)
		}
	}
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, into)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
