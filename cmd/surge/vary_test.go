package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --vary max-waiting=0,20 reproduces the bounded-queue effect of a 5×
// burst at baseline 8 (issue 14: 1.58 good req/s with a limit of 20
// waiting requests against 0.48 without, recovery 10 s against 390 s):
// the comparison it writes has goodput higher and recovery shorter with
// the bounded queue, and names max-waiting as the one variable.
func TestVaryBoundedQueue(t *testing.T) {
	skipVirtualUnderRace(t)
	out := filepath.Join(t.TempDir(), "what-if")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "8", "--multipliers", "5", "--vary", "max-waiting=0,20", "-o", out)
	if !ran(code) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"## At a glance", "| max-waiting=20 ", "One variable differs: max-waiting (0 → 20)", "compare.md  " + filepath.Join(out, "compare.json")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"compare.md", "compare.json", "compare.html", "max-waiting-0/results.json", "max-waiting-20/burst-5x/manifest.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Review 14 finding 16: surge report on the what-if's folder points at
	// its compare.html and at a value's folder, not "holds no run".
	code, _, stderr = surge(t, "report", out)
	if want := "holds a comparison (written by surge compare or burst --vary): its report is already written — open " + filepath.Join(out, "compare.html"); code != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "surge report "+filepath.Join(out, "max-waiting-0")) {
		t.Errorf("surge report %s: exit %d, stderr %q; want 2 and %q", out, code, stderr, want)
	}
	page, err := os.ReadFile(filepath.Join(out, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Goodput per value of max-waiting", "Recovery per value of max-waiting", "<svg", "At a glance",
		"0 (unbounded)", "svg.xychart { max-width: 100%"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("compare.html lacks %q", want)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Variables []struct{ Name string } `json:"variables"`
		Rows      []struct {
			Key     string `json:"key"`
			Metrics []struct {
				Key     string `json:"key"`
				Folders []struct {
					Value *float64 `json:"value"`
				} `json:"folders"`
			} `json:"metrics"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Variables) != 1 || doc.Variables[0].Name != "max-waiting" {
		t.Errorf("variables %+v, want max-waiting alone", doc.Variables)
	}
	got := map[string][2]float64{}
	for _, r := range doc.Rows {
		if r.Key != "5×" {
			continue
		}
		for _, m := range r.Metrics {
			if len(m.Folders) == 2 && m.Folders[0].Value != nil && m.Folders[1].Value != nil {
				got[m.Key] = [2]float64{*m.Folders[0].Value, *m.Folders[1].Value}
			}
		}
	}
	g, rec := got["goodput_rps"], got["recovery_s"]
	t.Logf("goodput %.2f → %.2f req/s, recovery %.0f → %.0f s", g[0], g[1], rec[0], rec[1])
	if !(g[1] > g[0] && g[0] > 0) {
		t.Errorf("goodput %v: want higher with max-waiting 20", g)
	}
	if !(rec[1] < rec[0] && rec[1] > 0 || rec[1] == 0 && rec[0] > 0) {
		t.Errorf("recovery %v: want shorter with max-waiting 20", rec)
	}
}

// --vary's bad input: each a usage error (exit 2) with a message that
// names the problem, before any folder is written.
func TestVaryBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown knob", []string{"--simulate", "--vary", "max-wait=0,20"}, `--vary: unknown knob "max-wait"; the simulator settings it can vary: `},
		{"lists the knobs", []string{"--simulate", "--vary", "nope=1,2"}, "max-num-seqs, max-replicas, max-waiting, min-replicas, model-ready-delay"},
		{"without simulate", []string{"--vary", "max-waiting=0,20"}, "--vary: needs --simulate"},
		{"bad value", []string{"--simulate", "--vary", "max-waiting=0,-1"}, "--vary max-waiting=-1: must be ≥ 0 (0 = unbounded), got -1"},
		{"not a number", []string{"--simulate", "--vary", "replicas=1,two"}, "--vary replicas=two: "},
		{"not a duration", []string{"--simulate", "--vary", "model-ready-delay=10s,soon"}, "--vary model-ready-delay=soon: "},
		{"one value", []string{"--simulate", "--vary", "replicas=2"}, "--vary replicas: give two or more values"},
		{"cross-field", []string{"--simulate", "--autoscale", "--max-replicas", "2", "--vary", "replicas=1,3"}, "--vary replicas=3: must be within [min_replicas, max_replicas] = [1, 2]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			code, _, stderr := surge(t, append(append([]string{"burst", "-q", "--baseline-rps", "8", "--multipliers", "5"}, tc.args...), "-o", out)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was created", out)
			}
		})
	}
}

// Review 14 finding 2: --vary spends ONE budget across its values (the
// README's "for the whole command"), counts the real spend, says
// "stopped by the budget" rather than "interrupted", runs no further
// value, and its estimate before counts every value.
func TestVaryOneBudget(t *testing.T) {
	out := filepath.Join(t.TempDir(), "what-if")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "8", "--multipliers", "5",
		"--warmup", "20s", "--baseline", "60s", "--burst", "30s", "--recovery", "60s", "--recovery-limit", "2m",
		"--vary", "max-waiting=0,20,50", "--max-requests", "4000", "-o", out)
	if code != exitSLO {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"planned: ~8,274 requests", // 3 values × 2758
		"max-waiting=20: stopped by the budget",
		"max-waiting=50: not run — stopped by the budget",
		"spent: 4,000 requests",
		"budget --max-requests 4000: stopped the command",
		"exit 1: stopped by the budget",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, bad := range []string{"interrupted", "not reached"} {
		if strings.Contains(stdout, bad) {
			t.Errorf("stdout says %q:\n%s", bad, stdout)
		}
	}
	sent := 0
	for _, v := range []string{"0", "20"} {
		b, err := os.ReadFile(filepath.Join(out, "max-waiting-"+v, "burst-5x", "requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sent += strings.Count(string(b), "\n")
	}
	if sent != 4000 {
		t.Errorf("the values sent %d requests in all, want the budget's 4000", sent)
	}
	if _, err := os.Stat(filepath.Join(out, "max-waiting-50")); err == nil {
		t.Errorf("max-waiting-50 ran after the budget stopped the command")
	}
}

// Review 14 finding 13: with autoscale, min-replicas=0's cold start in
// the warmup scales the cluster to 2 replicas before the burst, which
// min-replicas=1 meets with 1: the comparison warns that the replica
// count differs too, not only the knob. max-waiting (no autoscaler) has
// no such warning.
func TestVaryWarnsReplicasAtBurst(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "mr")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "4", "--multipliers", "5", "--autoscale", "--vary", "min-replicas=0,1", "-o", out)
	if !ran(code) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	want := "WARNING: the bursts met different numbers of ready replicas (min-replicas=0: 2, min-replicas=1: 1)"
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	if doc := compareJSON(t, out); !strings.HasPrefix(doc.Statement, want) {
		t.Errorf("compare.json statement %q", doc.Statement)
	}
	code, stdout, _ = surge(t, "burst", "--simulate", "--baseline-rps", "8", "--multipliers", "5", "--warmup", "20s", "--baseline", "60s", "--burst", "30s", "--recovery", "60s", "--recovery-limit", "2m",
		"--vary", "max-waiting=0,20", "-o", filepath.Join(dir, "mw"))
	if !ran(code) || strings.Contains(stdout, "ready replicas") {
		t.Errorf("max-waiting: exit %d, a replica warning where none applies:\n%s", code, stdout)
	}
}
