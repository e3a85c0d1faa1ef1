package experiment

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/judge"

	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/run"
)

// The closing verdict block of `surge run`, on constructed results: one
// line for a single measured phase, a line per measured phase and overall
// when there are several (the excluded warmup never), every clause as
// measured vs limit; then the why notes.
func TestRunVerdictsGolden(t *testing.T) {
	o := run.DefaultOptions()
	pass := exptest.Verdict(exptest.TTFT(380, 2000, false, 600), exptest.E2E(10600, 12000, false, 600), exptest.Goodput(0.995, 0.99, 600))
	fail := exptest.Verdict(exptest.TTFT(2400, 2000, false, 600), exptest.E2E(60000, 12000, true, 600), exptest.Goodput(0.69, 0.99, 600))
	empty := exptest.Verdict(exptest.TTFT(0, 2000, false, 0), exptest.E2E(0, 12000, false, 0), exptest.Goodput(0, 0.99, 0))
	phase := func(name string, excluded bool, v judge.Verdict) judge.PhaseVerdict {
		return judge.PhaseVerdict{Name: name, Excluded: excluded, Verdict: v}
	}
	cases := []struct {
		name string
		v    judge.Verdicts
		why  []string
	}{
		{"verdicts-run-pass.txt", judge.Verdicts{Phases: []judge.PhaseVerdict{phase("warmup", true, fail), phase("main", false, pass)}, Overall: pass}, nil},
		{"verdicts-run-phases.txt", judge.Verdicts{Phases: []judge.PhaseVerdict{phase("warmup", true, pass), phase("steady", false, pass), phase("peak", false, fail), phase("idle", false, empty)}, Overall: fail},
			[]string{"a note that explains the verdicts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			PrintVerdicts(&b, "SLO "+SLOText(o.Judging)+"; measured vs limit", RunVerdictLines(&tc.v), tc.why)
			golden.Check(t, tc.name, []byte(b.String()))
		})
	}
}

// Without lines nothing is printed; a status word replaces PASS/FAIL.
func TestPrintVerdictsEdges(t *testing.T) {
	var b strings.Builder
	PrintVerdicts(&b, "x", nil, []string{"ignored"})
	if b.Len() != 0 {
		t.Errorf("no lines printed %q", b.String())
	}
	PrintVerdicts(&b, "", []VerdictLine{{Scope: "a", Label: "drift", Status: "DRIFTING"}, {Scope: "bb", Outcome: judge.Pass, Phases: []PhaseVerdict{{Name: "p", Outcome: judge.Fail}, {Name: "q", Outcome: judge.Inconclusive}}, Detail: "d"},
		{Scope: "c", Outcome: judge.Inconclusive, Partial: true}}, nil)
	want := "\nVerdicts:\n  a   drift DRIFTING\n  bb  PASS            p FAIL  q INCONCLUSIVE  d\n  c   PARTIAL\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// A failing goodput that one decimal would round onto its limit gets two.
func TestClauseText(t *testing.T) {
	for _, tc := range []struct {
		c    judge.Clause
		want string
	}{
		{exptest.Goodput(0.9896, 0.99, 900), "goodput 98.96% (limit 99%)"},
		{exptest.Goodput(0.9951, 0.99, 900), "goodput 99.5% (limit 99%)"},
		{exptest.Goodput(0, 0.99, 0), "goodput n/a (limit 99%)"},
		{exptest.TTFT(60000, 2000, true, 9), "p95 TTFT > 60s (limit 2s)"},
		{exptest.E2E(0, 12000, false, 0), "p99 completion n/a (limit 12s)"},
		{exptest.E2E(12400, 12000, false, 9), "p99 completion 12.4s (limit 12s)"},
	} {
		if got := tc.c.Short(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
