package soak

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/run"
)

// printEnd ends a soak's terminal output: the drift test of each series,
// the verdicts, and where the reports are.
func printEnd(w io.Writer, o *run.Options, sr *Result, dir string) {
	fmt.Fprintf(w, "\ndrift over %d windows of %s:\n", len(sr.Windows), sr.Window)
	for _, t := range sr.Trends {
		fmt.Fprintln(w, "  "+t.Text)
	}
	experiment.PrintVerdicts(w, "SLO "+experiment.SLOText(o)+"; measured vs limit", verdictLines(o, sr), nil)
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
func verdictLines(o *run.Options, sr *Result) []experiment.VerdictLine {
	v := sr.Result.Analysis.Verdict // the warmup is excluded: the soak phase's
	first := experiment.LineOf("soak", "SLO", v, sr.Result.Partial)
	first.Detail = experiment.Clauses(v, false)
	lines := []experiment.VerdictLine{first}
	if n, detail := windowFailures(o, sr.Windows); n > 0 {
		lines[0].Label = "SLO overall"
		lines = append(lines, experiment.VerdictLine{Scope: "windows", Label: "SLO", Status: fmt.Sprintf("%d of %d FAIL", n, len(sr.Windows)), Detail: detail})
	}
	d := experiment.VerdictLine{Scope: "soak", Label: "drift", Pass: sr.Verdict != analyze.DriftDrifting, Status: strings.ToUpper(sr.Verdict)}
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
// failed, and says which clause failed in how many: "p99 completion in 7
// windows; goodput in 2 windows (slo_* per window in results.csv)".
func windowFailures(o *run.Options, wins []Window) (int, string) {
	slo := o.SLO()
	failed := 0
	byClause := map[string]int{}
	for i := range wins {
		if wins[i].Offered == 0 {
			continue
		}
		v := slo.Check(&wins[i].Stats)
		if v.Pass {
			continue
		}
		failed++
		for _, c := range v.Clauses {
			if !c.Pass {
				byClause[c.Name]++
			}
		}
	}
	var parts []string
	for _, name := range []string{analyze.ClauseTTFTP95, analyze.ClauseE2EP99, analyze.ClauseGoodputRatio} {
		if n := byClause[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s in %s", clauseName(name), experiment.Count(n, "window")))
		}
	}
	return failed, strings.Join(parts, "; ") + " (slo_* per window in results.csv)"
}

// clauseName is a clause as people read it.
func clauseName(c string) string {
	switch c {
	case analyze.ClauseTTFTP95:
		return "p95 TTFT"
	case analyze.ClauseE2EP99:
		return "p99 completion"
	}
	return "goodput"
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
func meaning(o *run.Options, sr *Result) string {
	slo := sr.Result.Analysis.Verdict.Pass
	drift := sr.Verdict == analyze.DriftDrifting
	windows := ""
	if n, _ := windowFailures(o, sr.Windows); n > 0 {
		windows = fmt.Sprintf(" over the whole soak (%d of %d windows missed it; the verdicts above say which clause)", n, len(sr.Windows))
	}
	switch {
	case slo && !drift && sr.Verdict != analyze.DriftInconclusive && windows != "":
		return "the SLO held" + windows + " and nothing drifted"
	case !slo && drift:
		return "the SLO failed and a metric drifted"
	case !slo:
		return "the SLO failed (the verdicts above say which and by how much)"
	case drift:
		return "a metric drifted over the soak"
	case sr.Verdict == analyze.DriftInconclusive:
		return "the SLO held; the drift test was inconclusive (no series could be tested)"
	}
	return "the SLO held and nothing drifted"
}
