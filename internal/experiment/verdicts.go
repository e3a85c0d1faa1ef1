package experiment

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/report"
)

// VerdictLine is one line of a command's closing verdict block: a scope
// (a multiplier, a capacity step, a sweep level, a soak, a run), whether
// it passed, the verdicts of its phases when they differ in meaning (a
// burst's baseline, burst and recovery), and the detail that explains the
// status: the SLO clauses with their measured values and limits.
type VerdictLine struct {
	Scope  string         // e.g. "5×", "sustainable 6.5 req/s", "usable c64"
	Label  string         // what Pass judges, e.g. "overall", "SLO", "budget", "drift"; "" for none
	Pass   bool           // the scope's verdict (decides the exit code where the command says so)
	Status string         // the status word when PASS/FAIL says too little, e.g. "DRIFTING", "GENERATOR-LIMITED"
	Phases []PhaseVerdict // per-phase verdicts shown after the status, in order
	Detail string         // measured vs limit, e.g. "burst: goodput 3.1% (limit 99%)"
	// Partial marks a scope whose run was cut short (Ctrl-C, a budget):
	// its status is never PASS, but PARTIAL — what ran held, but the plan
	// did not run to its end.
	Partial bool
	// Undecided marks a scope that did not pass only by clauses the
	// requests an interrupt cancelled decide (analyze.Verdict.Sure): with
	// Partial its status is PARTIAL, not FAIL.
	Undecided bool
}

// PhaseVerdict is one phase's PASS or FAIL in a VerdictLine (PARTIAL
// when Undecided).
type PhaseVerdict struct {
	Name      string
	Pass      bool
	Undecided bool
}

// LineOf is the VerdictLine of scope judged by v in a run partial or not.
func LineOf(scope, label string, v analyze.Verdict, partial bool) VerdictLine {
	return VerdictLine{Scope: scope, Label: label, Pass: v.Pass, Partial: partial, Undecided: !v.Pass && !v.Sure()}
}

// PrintVerdicts ends a command's terminal output with its verdicts: a
// heading naming what was checked (the SLO, a budget), one aligned line
// per scope — its status, its phases' statuses, and the detail (measured
// value against limit) — then the notes that explain them, each as
// "why: …", the first one first (a baseline that was not sustainable). It
// prints nothing without lines.
func PrintVerdicts(w io.Writer, heading string, lines []VerdictLine, why []string) {
	if len(lines) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("\nVerdicts")
	if heading != "" {
		b.WriteString(" (" + heading + ")")
	}
	b.WriteString(":\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		status := l.Status
		switch {
		case status == "" && l.Partial && (l.Pass || l.Undecided):
			status = "PARTIAL"
		case status == "":
			status = VerdictWord(l.Pass)
		}
		if l.Label != "" {
			status = l.Label + " " + status
		}
		var phases []string
		for _, p := range l.Phases {
			word := VerdictWord(p.Pass)
			if p.Undecided && !p.Pass {
				word = "PARTIAL"
			}
			phases = append(phases, p.Name+" "+word)
		}
		fmt.Fprintf(tw, "  %s\t%s\t", l.Scope, status)
		if len(phases) > 0 {
			fmt.Fprintf(tw, "%s\t", strings.Join(phases, "  "))
		}
		fmt.Fprintf(tw, "%s\n", l.Detail)
	}
	tw.Flush()
	// tabwriter pads the last cell of a line without a detail.
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
		}
	}
	for _, n := range why {
		fmt.Fprintf(w, "  why: %s\n", n)
	}
}

// Clauses lists the SLO clauses of v as measured vs limit, e.g. "p95
// TTFT > 60s (limit 2s); goodput 3.1% (limit 99%)": every clause, or only
// the failing ones.
func Clauses(v analyze.Verdict, failingOnly bool) string {
	var parts []string
	for _, c := range v.Clauses {
		if failingOnly && c.Pass {
			continue
		}
		parts = append(parts, ClauseText(c))
	}
	return strings.Join(parts, "; ")
}

// ClauseText is one SLO clause as measured vs limit (analyze.Clause.Brief).
func ClauseText(c analyze.Clause) string { return c.Brief() }

// RunVerdictLines is the verdict block of one run of arbitrary phases
// (`surge run`, a soak): a line per measured phase when there are several,
// then overall, each with every SLO clause as measured vs limit.
func RunVerdictLines(a *analyze.Result, partial bool) []VerdictLine {
	var lines []VerdictLine
	var measured []analyze.PhaseResult
	for _, p := range a.Phases {
		if !p.Excluded {
			measured = append(measured, p)
		}
	}
	if len(measured) > 1 {
		for _, p := range measured {
			l := LineOf(p.Name, "", p.SLO, partial)
			l.Detail = Clauses(p.SLO, false)
			lines = append(lines, l)
		}
	}
	l := LineOf("overall", "", a.Verdict, partial)
	l.Detail = Clauses(a.Verdict, false)
	return append(lines, l)
}

// Count is n and the noun, plural unless n is 1: "1 warning", "3 warnings".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// clauseStatus is one clause's status: FAIL, PASS, or PARTIAL for a
// clause that held in a run cut short (never PASS).
func clauseStatus(v analyze.Verdict, c analyze.Clause) report.VerdictStatus {
	switch {
	case c.Unknown && v.Partial:
		return report.VerdictPartial
	case c.Unknown:
		return report.VerdictUnknown
	case !c.Pass:
		return report.VerdictFail
	case v.Partial:
		return report.VerdictPartial
	}
	return report.VerdictPass
}

// SLOStatus is each clause of v by name, PASS or FAIL, for the slo_*
// columns of results.csv and results.json; a clause v did not check is
// absent (N/A).
func SLOStatus(v analyze.Verdict) map[string]report.VerdictStatus {
	out := map[string]report.VerdictStatus{}
	for _, c := range v.Clauses {
		out[c.Name] = clauseStatus(v, c)
	}
	return out
}
