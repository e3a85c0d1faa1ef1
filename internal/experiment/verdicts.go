package experiment

import (
	"fmt"
	"io"
	"strings"

	"github.com/surge-bench/surge/internal/report"
)

// PrintVerdicts ends a command's terminal output with its verdicts: one
// line per scope (a multiplier, a phase, "overall") holding PASS or FAIL
// and every SLO clause with its measured value and limit, then the notes
// that explain them (first, e.g. a baseline that was not sustainable). It
// prints nothing without verdicts.
func PrintVerdicts(w io.Writer, verdicts []report.Verdict, why []string) {
	if len(verdicts) == 0 {
		return
	}
	var scopes []string
	byScope := map[string][]report.Verdict{}
	for _, v := range verdicts {
		if _, ok := byScope[v.Scope]; !ok {
			scopes = append(scopes, v.Scope)
		}
		byScope[v.Scope] = append(byScope[v.Scope], v)
	}
	width := 0
	for _, s := range scopes {
		width = max(width, len([]rune(s)))
	}
	var b strings.Builder
	b.WriteString("\nVerdicts (SLO clauses: measured vs limit):\n")
	for _, s := range scopes {
		status := report.VerdictPass
		var clauses []string
		for _, v := range byScope[s] {
			if v.Status != report.VerdictPass {
				status = report.VerdictFail
			}
			d := strings.TrimSuffix(strings.TrimSuffix(v.Detail, ": pass"), ": FAIL") // the status says it
			clauses = append(clauses, d)
		}
		fmt.Fprintf(&b, "  %s%s  %s  %s\n", s, strings.Repeat(" ", width-len([]rune(s))), status, strings.Join(clauses, "; "))
	}
	for _, n := range why {
		fmt.Fprintf(&b, "  why: %s\n", n)
	}
	io.WriteString(w, b.String())
}
