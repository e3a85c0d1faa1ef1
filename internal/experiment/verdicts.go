package experiment

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
)

// VerdictLine is one line of a command's closing verdict block: a scope
// (a multiplier, a capacity step, a sweep level, a soak, a run), its
// outcome, the verdicts of its phases when they differ in meaning (a
// burst's baseline, burst and recovery), and the detail that explains the
// status: the SLO clauses with their measured values, limits, samples and
// the reasons of those that did not pass.
type VerdictLine struct {
	Scope   string        // e.g. "5×", "sustainable 6.5 req/s", "usable c64"
	Label   string        // what Outcome judges, e.g. "overall", "SLO", "budget", "drift"; "" for none
	Outcome judge.Outcome // the scope's verdict (decides the exit code where the command says so)
	Status  string        // the status word when the outcome says too little, e.g. "DRIFTING", "GENERATOR-LIMITED"
	Phases  []PhaseVerdict
	Detail  string // measured vs limit, e.g. "burst: goodput 3.1% (limit 99%, n=120): …"
	// Partial marks a scope whose run was cut short (Ctrl-C, a budget):
	// its status is never PASS, but PARTIAL unless it failed — what ran
	// held or could not be decided, but the plan did not run to its end.
	Partial bool
}

// PhaseVerdict is one phase's outcome in a VerdictLine.
type PhaseVerdict struct {
	Name    string
	Outcome judge.Outcome
	Partial bool
}

// Word is the status a line shows for an outcome: FAIL, PARTIAL for a
// cut run that did not fail, else PASS or INCONCLUSIVE.
func Word(o judge.Outcome, partial bool) string {
	switch {
	case o == judge.Fail:
		return "FAIL"
	case partial:
		return "PARTIAL"
	case o == "":
		return string(judge.Pass)
	}
	return string(o)
}

// OutcomeOf is PASS or FAIL.
func OutcomeOf(pass bool) judge.Outcome {
	if pass {
		return judge.Pass
	}
	return judge.Fail
}

// LineOf is the VerdictLine of scope judged by v.
func LineOf(scope, label string, v judge.Verdict) VerdictLine {
	return VerdictLine{Scope: scope, Label: label, Outcome: v.Outcome, Partial: v.Partial}
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
		if status == "" {
			status = Word(l.Outcome, l.Partial)
		}
		if l.Label != "" {
			status = l.Label + " " + status
		}
		var phases []string
		for _, p := range l.Phases {
			phases = append(phases, p.Name+" "+Word(p.Outcome, p.Partial))
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

// Clauses lists the SLO clauses of v as measured vs limit with their
// samples and reasons (judge.Clause.Brief): every clause, or only those
// that did not pass.
func Clauses(v judge.Verdict, unpassedOnly bool) string {
	var parts []string
	for _, c := range v.Clauses {
		if unpassedOnly && c.Outcome == judge.Pass {
			continue
		}
		parts = append(parts, c.Brief())
	}
	return strings.Join(parts, "; ")
}

// RunVerdictLines is the verdict block of one run of arbitrary phases
// (`surge run`, a soak): a line per measured phase when there are several,
// then overall, each with every SLO clause as measured vs limit.
func RunVerdictLines(v *judge.Verdicts) []VerdictLine {
	var lines []VerdictLine
	var measured []judge.PhaseVerdict
	for _, p := range v.Phases {
		if !p.Excluded {
			measured = append(measured, p)
		}
	}
	if len(measured) > 1 {
		for _, p := range measured {
			l := LineOf(p.Name, "", p.Verdict)
			l.Detail = Clauses(p.Verdict, false)
			lines = append(lines, l)
		}
	}
	l := LineOf("overall", "", v.Overall)
	l.Detail = Clauses(v.Overall, false)
	return append(lines, l)
}

// Count is n and the noun, plural unless n is 1: "1 warning", "3 warnings".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// clauseStatus is one clause's status: FAIL, INCONCLUSIVE, PASS, or
// PARTIAL for a clause that did not fail in a run cut short (never PASS).
func clauseStatus(v judge.Verdict, c judge.Clause) report.VerdictStatus {
	switch {
	case c.Outcome == judge.Fail:
		return report.VerdictFail
	case v.Partial:
		return report.VerdictPartial
	case c.Outcome == judge.Inconclusive:
		return report.VerdictInconclusive
	}
	return report.VerdictPass
}

// Status is an outcome as a report's verdict status.
func Status(o judge.Outcome) report.VerdictStatus {
	switch o {
	case judge.Pass:
		return report.VerdictPass
	case judge.Fail:
		return report.VerdictFail
	case judge.Inconclusive:
		return report.VerdictInconclusive
	}
	return report.VerdictUnknown
}

// SLOStatus is each clause of v by name, for the slo_* columns of
// results.csv and results.json; a clause v did not check is absent (N/A).
func SLOStatus(v judge.Verdict) map[string]report.VerdictStatus {
	out := map[string]report.VerdictStatus{}
	for _, c := range v.Clauses {
		out[c.Name] = clauseStatus(v, c)
	}
	return out
}
