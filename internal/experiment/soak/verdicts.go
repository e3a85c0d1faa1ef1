package soak

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/run"
)

// printEnd ends a soak's terminal output: the drift test of each series,
// the verdicts, and where the reports are.
func printEnd(w io.Writer, o *run.Options, sr *Result, dir string) {
	fmt.Fprintf(w, "\ndrift over %d windows of %s:\n", len(sr.Windows), sr.Window)
	for _, t := range sr.Trends {
		fmt.Fprintln(w, "  "+t.Text)
	}
	experiment.PrintVerdicts(w, "SLO "+experiment.SLOText(o.Judging)+"; measured vs limit", verdictLines(sr), nil)
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(dir, "results.md"), filepath.Join(dir, "report.html"))
}

// verdictLines is a soak's closing verdict block: the SLO over the soak
// (the warmup excluded) (every clause, measured vs limit) and the drift verdict naming
// the series that drift (their slopes and changes are in the drift lines
// printed above it).
//
// The SLO over the whole soak can hold while some windows miss it (a p99
// over 20 minutes hides minutes that missed it): a line then says how many
// windows failed which clause.
func verdictLines(sr *Result) []experiment.VerdictLine {
	v := sr.Result.Verdicts.Overall // the warmup is excluded: the soak phase's
	first := experiment.LineOf("soak", "SLO", v)
	first.Detail = experiment.Clauses(v, false)
	lines := []experiment.VerdictLine{first}
	if n, detail := windowFailures(sr.Windows); n > 0 {
		lines[0].Label = "SLO overall"
		lines = append(lines, experiment.VerdictLine{Scope: "windows", Label: "SLO", Status: fmt.Sprintf("%d of %d FAIL", n, len(sr.Windows)), Detail: detail})
	}
	d := experiment.VerdictLine{Scope: "soak", Label: "drift", Outcome: judge.DriftOutcome(sr.Verdict), Status: strings.ToUpper(sr.Verdict)}
	var drifting, untested []string
	tested := 0
	for _, t := range sr.Trends {
		switch {
		case t.Drifting:
			drifting = append(drifting, t.Metric)
		case !t.Tested:
			untested = append(untested, t.Metric+" ("+t.Why+")")
		}
		if t.Tested {
			tested++
		}
	}
	switch {
	case len(drifting) > 0:
		d.Detail = fmt.Sprintf("%s drift%s (slope, interval and change in the drift lines above)", strings.Join(drifting, ", "), plural(len(drifting)))
	case tested > 0:
		d.Detail = fmt.Sprintf("no series drifts (%d tested)", tested)
	default:
		d.Detail = "no series could be tested: " + strings.Join(untested, ", ")
	}
	return append(lines, d)
}

// windowFailures counts the windows (with requests) whose own SLO check
// failed (an inconclusive window fails nothing), and says which clause
// failed in how many: "p99 completion in 7 windows; goodput in 2 windows
// (slo_* per window in results.csv)".
func windowFailures(wins []Window) (int, string) {
	failed := 0
	byClause := map[string]int{}
	for i := range wins {
		if wins[i].Offered == 0 {
			continue
		}
		v := wins[i].Verdict
		if v.Outcome != judge.Fail {
			continue
		}
		failed++
		for _, c := range v.Clauses {
			if c.Outcome == judge.Fail {
				byClause[c.Name]++
			}
		}
	}
	var parts []string
	for _, name := range []string{judge.ClauseTTFTP95, judge.ClauseE2EP99, judge.ClauseGoodputRatio} {
		if n := byClause[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s in %s", clauseName(name), experiment.Count(n, "window")))
		}
	}
	return failed, strings.Join(parts, "; ") + " (slo_* per window in results.csv)"
}

// clauseName is a clause as people read it.
func clauseName(c string) string { return judge.Clause{Name: c}.Label() }

// soakOutcome decides a soak's exit code: its SLO over the soak and the
// drift test together. An inconclusive drift test fails nothing, and
// decides nothing either: it is said in the verdicts.
func soakOutcome(res *run.Result, sr *Result) judge.Outcome {
	d := judge.DriftOutcome(sr.Verdict)
	if d == judge.Inconclusive {
		d = judge.Pass
	}
	return judge.Worse(res.Verdicts.Overall.Outcome, d)
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// meaning is what the exit code says about a soak: 1 when its SLO failed
// or a series drifted, 0 otherwise (an inconclusive drift test fails
// nothing, and says so).
func meaning(sr *Result) string {
	v := sr.Result.Verdicts.Overall.Outcome
	slo, undecided := v == judge.Pass, v == judge.Inconclusive
	drift := sr.Verdict == judge.DriftDrifting
	windows := ""
	if n, _ := windowFailures(sr.Windows); n > 0 {
		windows = fmt.Sprintf(" over the whole soak (%d of %d windows missed it; the verdicts above say which clause)", n, len(sr.Windows))
	}
	switch {
	case slo && !drift && sr.Verdict != judge.DriftInconclusive && windows != "":
		return "the SLO held" + windows + " and nothing drifted"
	case undecided && drift:
		return "a metric drifted over the soak; the SLO could not be decided on its sample"
	case undecided:
		return "no SLO clause failed, but one could not be decided on its sample (the verdicts above say which and why)"
	case !slo && drift:
		return "the SLO failed and a metric drifted"
	case !slo:
		return "the SLO failed (the verdicts above say which and by how much)"
	case drift:
		return "a metric drifted over the soak"
	case sr.Verdict == judge.DriftInconclusive:
		return "the SLO held; the drift test was inconclusive (no series could be tested)"
	}
	return "the SLO held and nothing drifted"
}
