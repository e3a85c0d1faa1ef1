package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/surge-bench/surge/internal/memnet"
	"github.com/surge-bench/surge/internal/record"
)

// writeLog writes a production-like request log CSV of n rows: a text
// column that must never be echoed, prompt tokens from {120, 480, 1900},
// output tokens from {16, 64}, one request every 0.5 s (2 req/s) except a
// minute of twice that.
func writeLog(t *testing.T, path string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	b.WriteString("timestamp,prompt,prompt_tokens,output_tokens\n")
	at := 1_748_779_200.0
	for i := range n {
		fmt.Fprintf(&b, "%.3f,\"SECRET prompt %d, do not echo\",%d,%d\n", at, i, []int{120, 480, 1900}[rng.IntN(3)], []int{16, 64}[rng.IntN(2)])
		step := 0.5
		if at-1_748_779_200 >= 60 && at-1_748_779_200 < 120 {
			step = 0.25
		}
		at += step
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// surge workload fit on a log CSV writes a workload.yaml that surge run -f
// accepts — from another working directory — and the run sends exactly
// the log's lengths: every prompt one of the log's three, every max_tokens
// one of its two.
func TestFitThenRun(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "prod.csv")
	writeLog(t, log, 400)
	code, stdout, stderr := surge(t, "workload", "fit", log, "--out", filepath.Join(dir, "fitted"))
	if code != exitOK {
		t.Fatalf("fit: exit %d: %s %s", code, stdout, stderr)
	}
	// 400 rows at 2/s with minute 1 at 4/s: minutes 120, 240, 40 (partial).
	for _, want := range []string{"400 requests", "suggested baseline 2 req/s", "peak 4 req/s at minute 1 = 2.00× the baseline", "surge run -f "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("fit output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, "SECRET") {
		t.Fatalf("the log's text was echoed:\n%s", stdout)
	}
	cfg := filepath.Join(dir, "fitted", "workload.yaml")
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	code, stdout, stderr = surge(t, "workload", "inspect", cfg, "--count", "3000")
	if code != exitOK || !strings.Contains(stdout, "requests: 3000") || !strings.Contains(stdout, "  1900 ") && !strings.Contains(stdout, " 1900\n") {
		t.Errorf("inspect of the fitted file: exit %d:\n%s%s", code, stdout, stderr)
	}
	synctest.Test(t, func(t *testing.T) {
		network = &memnet.Network{}
		defer func() { network = nil }()
		out := filepath.Join(dir, "run")
		var so, se bytes.Buffer
		code := cli(context.Background(), []string{"run", "-f", cfg, "--duration", "5s", "-q", "-o", out}, &so, &se)
		if !ran(code) {
			t.Fatalf("run -f %s: exit %d\n%s\n%s", cfg, code, so.String(), se.String())
		}
		n := 0
		if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
			n++
			if r.MaxTokens != 16 && r.MaxTokens != 64 {
				t.Errorf("max_tokens %d is not one of the log's (16, 64)", r.MaxTokens)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// 5 s at the fitted baseline of 2 req/s: about 10 arrivals.
		if n < 3 || n > 25 {
			t.Errorf("%d requests in 5 s at 2 req/s", n)
		}
	})
}

// Bad logs exit 2 naming file:line and the field.
func TestFitBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("prompt_tokens,output_tokens,text\n10,5,SECRET\n-4,5,SECRET\n"), 0o644)
	code, _, stderr := surge(t, "workload", "fit", bad, "--out", filepath.Join(dir, "o"))
	if code != exitUsage || !strings.Contains(stderr, bad+":3: prompt_tokens: must be ≥ 0, got -4") || strings.Contains(stderr, "SECRET") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "o")); !os.IsNotExist(err) {
		t.Errorf("a bad log wrote its --out folder: %v", err)
	}
	if code, _, stderr := surge(t, "workload", "fit"); code != exitUsage || !strings.Contains(stderr, "accepts 1 arg") {
		t.Errorf("no LOGFILE: exit %d, %q", code, stderr)
	}
}

// --dry-run prints the plan and the workload and sends and writes
// nothing: no run folder (neither --out nor the default out/), not one
// request to the target — not even the prompt-calibration probes.
func TestDryRunSendsAndWritesNothing(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	cwd := t.TempDir()
	t.Chdir(cwd)
	out := filepath.Join(cwd, "o")
	code, stdout, stderr := surge(t, "run", "--dry-run", "--target", srv.URL+"/v1", "--rate", "20", "--duration", "1m", "--warmup", "10s", "-o", out,
		"--prompt-tokens", "uniform:min=100,max=200")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	for _, want := range []string{"nothing is sent and nothing is written", "warmup (excl.)", "main", "1200.0", "requests: ", "prompt (intended)", "log-spaced bins"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the target", hits.Load())
	}
	ents, _ := os.ReadDir(cwd)
	if len(ents) != 0 {
		t.Errorf("the dry run wrote %v", ents)
	}
	// A burst: one plan per multiplier, the burst phase at k × baseline.
	code, stdout, stderr = surge(t, "burst", "--dry-run", "--target", srv.URL+"/v1", "--baseline-rps", "3", "--multipliers", "2,5")
	if code != exitOK || !strings.Contains(stdout, "burst-2x: 4 phase(s)") || !strings.Contains(stdout, "burst-5x: 4 phase(s)") || !strings.Contains(stdout, "15.00") {
		t.Errorf("burst dry run: exit %d\n%s%s", code, stdout, stderr)
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 || hits.Load() != 0 {
		t.Errorf("the burst dry run wrote %v or sent %d", ents, hits.Load())
	}
	// A replayed trace: its own lengths are what the dry run summarises.
	trace := filepath.Join(t.TempDir(), "trace.csv")
	os.WriteFile(trace, []byte("offset_s,prompt_tokens,output_tokens\n0,3000,7\n0.5,3000,7\n1,3000,9\n"), 0o644)
	code, stdout, stderr = surge(t, "run", "--dry-run", "--trace", trace)
	if code != exitOK || !strings.Contains(stdout, "requests: 3") || !strings.Contains(stdout, "    3000     3000     3000     3000     3000.0") ||
		!strings.Contains(stdout, "profile: replay") {
		t.Errorf("trace dry run: exit %d\n%s%s", code, stdout, stderr)
	}
	// Bad configuration still exits 2, before anything.
	for args, want := range map[string]string{
		"burst --dry-run --baseline-rps auto":         "--baseline-rps: auto is found by a capacity search",
		"run --dry-run --rate -1":                     "--rate: must be a finite number of arrivals/s >= 0",
		"run --dry-run --prompt-tokens uniform:max=3": "uniform: min and max: required",
	} {
		code, _, stderr := surge(t, strings.Fields(args)...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", args, code, stderr, want)
		}
	}
}

// A relative empirical:FILE or dataset in an experiment file is found
// beside the file, as a trace is, from any working directory; error lines
// still point at the file's own lines.
func TestEmpiricalPathRelativeToTheFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("hist.csv", "tokens,count\n700,3\n900,1\n")
	good := write("good.yaml", "rate: 2\nprompt_tokens: empirical:hist.csv\noutput_tokens: 'empirical:hist.csv'\n")
	bad := write("bad.yaml", "rate: 2\nprompt_tokens: \"empirical:hist.csv\"\nno_such_key: 1\n")
	write("prompts.jsonl", "{\"prompt\": \"hello there\"}\n{\"prompt\": \"general kenobi\"}\n")
	ds := write("ds.yaml", "dataset: prompts.jsonl\ndataset_format: prompts-jsonl\n")
	t.Chdir(t.TempDir())
	code, stdout, stderr := surge(t, "workload", "inspect", good, "--count", "400")
	if code != exitOK || !strings.Contains(stdout, "requests: 400") {
		t.Fatalf("inspect: exit %d:\n%s%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`prompt \(intended\)\s+700\s+900`).MatchString(stdout) {
		t.Errorf("the histogram beside the file was not used:\n%s", stdout)
	}
	code, stdout, stderr = surge(t, "workload", "inspect", ds, "--count", "10")
	if code != exitOK || !strings.Contains(stdout, "10 from dataset rows") {
		t.Errorf("inspect of a dataset named beside its file: exit %d:\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = surge(t, "workload", "inspect", bad)
	if code != exitUsage || !strings.Contains(stderr, "bad.yaml:3: unknown field \"no_such_key\"") {
		t.Errorf("exit %d, stderr %q: want the unknown key on line 3", code, stderr)
	}
}

// Every command ends with its verdicts and one line saying what its exit
// code means.
func TestVerdictsAndExitLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		line string
	}{
		// 2,000 requests well within the SLO: enough to decide every
		// clause; 20 are too few for a p99 or a 99% goodput.
		{[]string{"run", "--rate", "8", "--duration", "250s", "--output-tokens", "8", "-q", "-o", filepath.Join(dir, "ok")}, exitOK, "exit 0: every SLO held"},
		{[]string{"run", "--rate", "2", "--duration", "10s", "--slo-ttft-p95", "1ms", "-q", "-o", filepath.Join(dir, "fail")}, exitSLO, "exit 1: an SLO failed"},
		{[]string{"run", "--rate", "2", "--duration", "10s", "-q", "-o", filepath.Join(dir, "few")}, exitUndecided, "exit 5: no SLO failed, but one could not be decided on its sample"},
	} {
		code, out := runVirtual(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.line) || !strings.Contains(out, "Verdicts (SLO p95 TTFT ≤ 1ms") && !strings.Contains(out, "Verdicts (SLO p95 TTFT ≤ 2s") || !strings.Contains(out, "\n  overall  ") {
			t.Errorf("%v: exit %d, want %d and %q after the verdicts:\n%s", tc.args, code, tc.code, tc.line, out)
		}
	}
}
