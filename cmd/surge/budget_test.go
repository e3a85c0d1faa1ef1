package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/experiment/burst"
)

// Bad budgets exit 2 naming the flag; a price alone is accepted (it
// prices the estimate), shown in --dry-run.
func TestBudgetFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		code int
		want string // in stderr (exit 2) or stdout (exit 0)
	}{
		"zero requests":      {[]string{"--max-requests", "0"}, 2, "--max-requests: must be ≥ 1 request"},
		"negative tokens":    {[]string{"--max-output-tokens", "-1"}, 2, "--max-output-tokens: must be ≥ 1 token"},
		"zero cost":          {[]string{"--max-cost", "0", "--price-input", "1", "--price-output", "1"}, 2, "--max-cost: must be > 0 USD"},
		"cost without price": {[]string{"--max-cost", "5", "--price-output", "1.5"}, 2, "--price-input: required with --max-cost"},
		"not a number":       {[]string{"--max-requests", "many"}, 2, "--max-requests: must be a whole number"},
		"negative price":     {[]string{"--price-input", "-2"}, 2, "--price-input: must be a price"},
		"price alone": {[]string{"--price-input", "0.5", "--price-output", "1.5"}, 0,
			"planned: ~92 requests, ~60.8 k input + ≤ 16.1 k output tokens (max_tokens; answers that end sooner cost less), est. ≤ $0.0546 at $0.50/$1.50 per M"},
		"tokens only": {[]string{"--max-output-tokens", "500"}, 0, "budget: --max-output-tokens 500 for the whole command"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"run", "--simulate", "--rate", "10", "--duration", "10s", "--dry-run"}, tc.args...)
			code, out, errOut := surge(t, args...)
			got := out
			if tc.code != 0 {
				got = errOut
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\nstdout: %s\nstderr: %s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
	_, out, _ := surge(t, "run", "--simulate", "--rate", "10", "--duration", "10s", "--dry-run", "--price-input", "0.5", "--price-output", "1.5")
	if !strings.Contains(out, "at $0.50/$1.50 per M") {
		t.Errorf("no priced estimate in:\n%s", out)
	}
}

// A budget reached in the first of three bursts: the run is partial with
// the reason (manifest, results.json rows), the later multipliers are not
// started and say so, the spend is printed, nothing says PASS overall,
// and the exit code is 1.
func TestBudgetStopsBurst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	code, out, errOut := surge(t, "burst", "--simulate", "--multipliers", "2,5,10", "--max-requests", "1500", "--price-input", "0.5", "--price-output", "1.5", "-q", "-o", dir)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	why := "budget: 1500 requests sent (--max-requests 1500)"
	for _, want := range []string{
		"planned: ~", "est. ≤ $",
		"burst-5x and later: not started (" + why + ")",
		"spent: 1,500 requests,",
		"Stopped by the budget",
		"exit 1: stopped by the budget",
		"burst PARTIAL",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "burst PASS") || strings.Contains(out, "overall PASS") {
		t.Errorf("a partial run says PASS:\n%s", out)
	}
	var m struct {
		Partial    bool   `json:"partial"`
		PartialWhy string `json:"partial_why"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "burst-2x", "manifest.json"))
	if err != nil || json.Unmarshal(b, &m) != nil || !m.Partial || m.PartialWhy != why {
		t.Fatalf("manifest: %v %+v", err, m)
	}
	if _, err := os.Stat(filepath.Join(dir, "burst-5x")); !os.IsNotExist(err) {
		t.Errorf("burst-5x was started: %v", err)
	}
	var res struct {
		Meta []struct{ Key, Value string } `json:"meta"`
		Rows []map[string]any              `json:"rows"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil || json.Unmarshal(b, &res) != nil || len(res.Rows) != 1 {
		t.Fatalf("results.json: %v, %d rows", err, len(res.Rows))
	}
	if res.Rows[0]["partial"] != true || res.Rows[0]["partial_reason"] != why {
		t.Errorf("row partial %v %v", res.Rows[0]["partial"], res.Rows[0]["partial_reason"])
	}
	meta := map[string]string{}
	for _, kv := range res.Meta {
		meta[kv.Key] = kv.Value
	}
	if !strings.HasPrefix(meta["spent"], "1,500 requests,") || !strings.Contains(meta["spent"], "at $0.50/$1.50 per M") ||
		meta["budget"] != "--max-requests 1500: stopped the command — "+why {
		t.Errorf("meta spent %q, budget %q", meta["spent"], meta["budget"])
	}
}

// A budget spent exactly by the first burst: it is whole (not partial),
// the second is not started, and the command is partial (exit 1, the
// results note the budget) — never exit 0 with a multiplier missing.
func TestBudgetSpentBetweenBursts(t *testing.T) {
	dir := t.TempDir()
	short := []string{"burst", "--simulate", "--warmup", "10s", "--baseline", "30s", "--burst", "10s", "--recovery", "30s", "--recovery-limit", "1m", "-q"}
	if code, out, _ := surge(t, append(short, "--multipliers", "2", "-o", filepath.Join(dir, "one"))...); code == exitUsage || code == exitInternal {
		t.Fatalf("exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "one", "burst-2x", "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(b), "\n")
	code, out, _ := surge(t, append(short, "--multipliers", "2,5", "--max-requests", strconv.Itoa(n), "-o", filepath.Join(dir, "two"))...)
	why := fmt.Sprintf("budget: %d requests sent (--max-requests %d)", n, n)
	if code != exitSLO || !strings.Contains(out, "burst-5x and later: not started ("+why+")") || !strings.Contains(out, "exit 1: stopped by the budget") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	md, err := os.ReadFile(filepath.Join(dir, "two", "results.md"))
	if err != nil || !strings.Contains(string(md), "PARTIAL: the experiment was stopped by its budget ("+why+")") {
		t.Errorf("results.md: %v\n%s", err, md)
	}
}

// The estimate of a repeated run counts every rep, each with its own seed
// (review finding 4): `run --repeat 3` plans exactly the requests its three
// reps send, and burst --dry-run shows each rep's seed and arrivals, the
// ones the rep then sends.
func TestEstimateCountsRepeats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	code, out, errOut := surge(t, "run", "--simulate", "--rate", "4", "--duration", "20s", "--repeat", "3", "-q", "-o", dir)
	if !ran(code) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	sent := 0
	for k := 1; k <= 3; k++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rep-%d", k), "requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sent += strings.Count(string(b), "\n")
	}
	if want := fmt.Sprintf("planned: ~%s requests,", thousands(sent)); !strings.Contains(out, want) {
		t.Errorf("the reps sent %d requests; the estimate is not %q:\n%s", sent, want, out)
	}

	short := []string{"burst", "--simulate", "--multipliers", "2", "--warmup", "10s", "--baseline", "20s", "--burst", "10s", "--recovery", "20s", "--recovery-limit", "30s", "--repeat", "2", "-q"}
	_, dry, _ := surge(t, append(short, "--dry-run")...)
	dir = filepath.Join(t.TempDir(), "b")
	if code, out, errOut := surge(t, append(short, "-o", dir)...); code == exitUsage || code == exitInternal {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for k := 1; k <= 2; k++ {
		b, err := os.ReadFile(filepath.Join(dir, "burst-2x", fmt.Sprintf("rep-%d", k), "requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		head := fmt.Sprintf("burst-2x/rep-%d: 4 phase(s), 1m10s in all; baseline %g req/s; seed %d\n", k, burst.DemoBaselineRPS, k)
		i := strings.Index(dry, head)
		if i < 0 {
			t.Fatalf("dry run lacks %q:\n%s", head, dry)
		}
		total := regexp.MustCompile(`\n  total .* (\d+)\n`).FindStringSubmatch(dry[i:])
		if n := strings.Count(string(b), "\n"); total == nil || total[1] != strconv.Itoa(n) {
			t.Errorf("rep %d sent %d requests; its dry-run total: %v", k, n, total)
		}
	}
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A run cut by its budget before any request completed (review14 finding
// 15): completed/s is n/a with the reason, on the console and in
// results.json — never 0.00 next to a goodput of 6.72/s — while a run the
// budget did not cut keeps its number.
func TestBudgetCutCompletedRate(t *testing.T) {
	completed := func(dir string) map[string]any {
		t.Helper()
		var res struct {
			Rows []map[string]any `json:"rows"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil || json.Unmarshal(b, &res) != nil || len(res.Rows) != 1 {
			t.Fatalf("results.json: %v, %d rows", err, len(res.Rows))
		}
		c, _ := res.Rows[0]["completed_rps"].(map[string]any)
		return c
	}
	dir := filepath.Join(t.TempDir(), "cut")
	code, out, _ := surge(t, "run", "--simulate", "--rate", "5", "--duration", "10s", "--max-requests", "10", "-o", dir)
	if code != exitSLO || !strings.Contains(out, "completed/s: the budget cut phase main at ") || !regexp.MustCompile(`\n +main +[0-9.]+ +[0-9.]+ +n/a `).MatchString(out) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if c := completed(dir); c["value"] != nil || !strings.HasPrefix(fmt.Sprint(c["reason"]), "the budget cut phase main") {
		t.Errorf("completed_rps of the cut run: %v", c)
	}
	dir = filepath.Join(t.TempDir(), "whole")
	if code, out, _ := surge(t, "run", "--simulate", "--rate", "5", "--duration", "10s", "--max-requests", "1000", "-o", dir); !ran(code) || strings.Contains(out, "completed/s: the budget cut") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if c := completed(dir); c["value"] == nil {
		t.Errorf("completed_rps of the whole run: %v", c)
	}
}

// One price without the other computes no cost; surge says so instead of
// leaving the price unused without a word (review14 finding 16).
func TestPriceAloneWarns(t *testing.T) {
	base := []string{"run", "--simulate", "--rate", "10", "--duration", "10s", "--dry-run"}
	for flag, want := range map[string]string{
		"--price-input":  "warning: --price-input is set without --price-output: no cost is computed",
		"--price-output": "warning: --price-output is set without --price-input: no cost is computed",
	} {
		code, out, errOut := surge(t, append(base, flag, "0.5")...)
		if code != exitOK || !strings.Contains(errOut, want) || strings.Contains(out, "est. ≤ $") {
			t.Errorf("%s alone: exit %d\nstdout: %s\nstderr: %s", flag, code, out, errOut)
		}
	}
	if _, _, errOut := surge(t, append(base, "--price-input", "0.5", "--price-output", "1.5")...); strings.Contains(errOut, "warning") {
		t.Errorf("both prices warn: %s", errOut)
	}
}

// The spend and the budget are numbers in manifest.json and results.json
// (review14 finding 16), not only the meta strings, and they agree with
// the records.
func TestBudgetNumbersInFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	if code, out, _ := surge(t, "run", "--simulate", "--rate", "2", "--duration", "1m", "--max-output-tokens", "5000", "--price-input", "0.5", "--price-output", "1.5", "-q", "-o", dir); code != exitSLO {
		t.Fatalf("exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var reqs, in, outTok int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			PromptTokens int64 `json:"prompt_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		reqs, in, outTok = reqs+1, in+r.PromptTokens, outTok+r.OutputTokens
	}
	type spent struct {
		Requests     int64    `json:"requests"`
		InputTokens  int64    `json:"input_tokens"`
		OutputTokens int64    `json:"output_tokens"`
		Cost         *float64 `json:"cost_usd"`
		PriceIn      *float64 `json:"price_input_usd_per_m"`
	}
	type budget struct {
		MaxOut  *int64 `json:"max_output_tokens"`
		MaxReq  *int64 `json:"max_requests"`
		Stopped bool   `json:"stopped"`
		Reason  string `json:"reason"`
	}
	check := func(where string, s spent, bu budget) {
		t.Helper()
		cost := (float64(in)*0.5 + float64(outTok)*1.5) / 1e6
		if s.Requests != reqs || s.InputTokens != in || s.OutputTokens != outTok || s.Cost == nil || math.Abs(*s.Cost-cost) > 1e-12 || s.PriceIn == nil || *s.PriceIn != 0.5 {
			t.Errorf("%s spent %+v, records %d requests, %d + %d tokens, $%g", where, s, reqs, in, outTok, cost)
		}
		if bu.MaxOut == nil || *bu.MaxOut != 5000 || bu.MaxReq != nil || !bu.Stopped || !strings.HasPrefix(bu.Reason, "budget: at the stop ") {
			t.Errorf("%s budget %+v", where, bu)
		}
	}
	var m struct {
		Spent  spent  `json:"spent"`
		Budget budget `json:"budget"`
	}
	if b, err = os.ReadFile(filepath.Join(dir, "manifest.json")); err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatal(err)
	}
	check("manifest", m.Spent, m.Budget)
	var res struct {
		Meta []struct {
			Key  string          `json:"key"`
			Data json.RawMessage `json:"data"`
		} `json:"meta"`
	}
	if b, err = os.ReadFile(filepath.Join(dir, "results.json")); err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatal(err)
	}
	var s spent
	var bu budget
	for _, kv := range res.Meta {
		switch kv.Key {
		case "spent":
			err = json.Unmarshal(kv.Data, &s)
		case "budget":
			err = json.Unmarshal(kv.Data, &bu)
		}
		if err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
	}
	check("results.json", s, bu)
}
