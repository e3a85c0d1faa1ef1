package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Review 14, finding 3: a budget stop in a sweep level's warmup (before
// its measured phase) once crashed with exit 4 and no report. It is a
// partial sweep: exit 1, the level named as not reached, the levels done
// so far reported.
func TestBudgetStopInSweepWarmup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	code, out, errOut := surge(t, "sweep", "--simulate", "--rates", "2,4,8", "--duration", "1m", "--max-requests", "500", "-o", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"level 3 8rps: its measured phase was not reached (budget: 500 requests sent", "usable level:          4rps", "spent: 500 requests", "Stopped by the budget"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "measured phase was not reached") {
		t.Errorf("results.md does not say the level was not reached:\n%s", md)
	}
}

// Review 14, finding 6a: a run stopped by its budget once said PASS in
// results.md's clause lines, in results.json's slo_* fields and so in
// compare; a clause that held over what ran is PARTIAL there.
func TestBudgetStopNeverPasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pb")
	code, out, errOut := surge(t, "run", "--simulate", "--rate", "2", "--duration", "1m", "--slo-e2e-p99", "0", "--max-output-tokens", "5000", "-q", "-o", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{"results.md", "results.json", "results.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "PASS") || !strings.Contains(string(b), "PARTIAL") {
			t.Errorf("%s of a partial run says PASS, or not PARTIAL:\n%s", f, b)
		}
	}
}
