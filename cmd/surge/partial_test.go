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
	// 3-minute levels: enough requests (374, 709) to decide the budget.
	code, out, errOut := surge(t, "sweep", "--simulate", "--rates", "2,4,8", "--duration", "3m", "--max-requests", "1200", "-o", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"level 3 8rps: its measured phase was not reached (budget: 1200 requests sent", "usable level:          4rps", "usable so far 4rps  SLO PASS, sweep PARTIAL", "spent: 1,200 requests", "Stopped by the budget"} {
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

// Review 14, findings 6e and 6f (and the capacity side of 3): a capacity
// search cut by its budget says so — never "no step met the SLO", no
// suggested baseline, no SLO PASS as if final — and a stop in a step's
// warmup is not a crash.
func TestBudgetStopsCapacitySearch(t *testing.T) {
	cases := map[string]struct {
		budget string
		want   []string
	}{
		"in step 1's warmup": {"3", []string{"step  1:       1 req/s: its measured phase was not reached (budget: 3 requests sent", "Sustainable capacity: unknown — the search was cut short"}},
		"in step 1":          {"20", []string{"Sustainable capacity: unknown — the search was cut short (budget: 20 requests sent", "SLO PARTIAL  p95 TTFT", "; cut short: budget: 20 requests sent"}},
		"after a bracket": {"3000", []string{"Sustainable capacity: not final — the search was cut short (budget: 3000 requests sent",
			"highest passing so far 4 req/s  SLO PASS, search PARTIAL", "why: the search was cut short"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.budget == "3000" {
				// Searches several steps in virtual time (~3 s under
				// -race); the other two cases cut the search in step 1.
				skipVirtualUnderRace(t)
			}
			code, out, errOut := surge(t, "capacity", "--simulate", "--max-requests", tc.budget, "-o", filepath.Join(t.TempDir(), "c"))
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"no step met the SLO", "Suggested baseline", "SLO PASS  ", ": \n"} {
				if strings.Contains(out, bad) {
					t.Errorf("stdout says %q:\n%s", bad, out)
				}
			}
		})
	}
}

// Review 14, finding 9: capacity --repeat ends with the searches'
// combined answer — the median sustainable rate, its range, the
// suggested baseline from the median (not the last search's) — and a
// Verdicts block, one line per search and one for all of them.
func TestCapacityRepeatCombinedAnswer(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := filepath.Join(t.TempDir(), "cap")
	code, out, errOut := surge(t, "capacity", "--simulate", "--repeat", "3", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// The searches find 4.88, 5.5 and 5.25 req/s (seeds 1–3): the highest
	// steps shown to meet the SLO (steps whose 971 requests leave it
	// undecided count as not held).
	for _, want := range []string{
		"search 3 of 3: sustainable 5.25 req/s",
		"Sustainable capacity over 3 searches: median 5.25 req/s (searches 4.88, 5.5, 5.25; min 4.88, max 5.5",
		"Suggested baseline: 3.68 req/s (0.7 × the median), e.g. surge burst --baseline-rps 3.68 --capacity-rps 5.25",
		"\nVerdicts (", "  search 1        SLO PASS  sustainable 4.88 req/s", "  all 3 searches  SLO PASS  median sustainable 5.25 req/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "Suggested baseline"); n != 1 {
		t.Errorf("%d suggested baselines, want the combined one only:\n%s", n, out)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "combined: median sustainable 5.25 req/s") {
		t.Errorf("results.md lacks the combined answer:\n%s", md)
	}
}

// Review 14, finding 6d: a budget stop before the burst (in the warmup,
// in the baseline) says "burst not reached: stopped by the budget" in the
// verdict, the recovery and the diagnosis — not FAIL with n/a values,
// "the run had no arrivals" or "nothing to recover from".
func TestBudgetStopBeforeTheBurst(t *testing.T) {
	skipVirtualUnderRace(t)
	for _, budget := range []string{"100", "3000"} {
		t.Run(budget, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			code, out, errOut := surge(t, "burst", "--simulate", "--baseline-rps", "8", "--multipliers", "5", "--max-requests", budget, "-o", dir)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
			}
			nr := "burst not reached: stopped by the budget, " + budget + " requests sent (--max-requests " + budget + ")"
			for _, want := range []string{"5×  burst PARTIAL", "5×  not judged: " + nr, "recovery: " + nr} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"burst FAIL", "overall FAIL", "had no arrivals", "nothing to recover from"} {
				if strings.Contains(out, bad) {
					t.Errorf("stdout says %q:\n%s", bad, out)
				}
			}
		})
	}
}
