package sweep

import (
	"fmt"

	"github.com/surge-bench/surge/internal/experiment"
)

// verdictLines is a sweep's closing verdict block: the usable level and
// the first level whose latency budget broke, each with the budget's
// clauses as measured vs limit; the headroom (knee against break) and the
// sweep's note are its why.
func verdictLines(sr *Result) ([]experiment.VerdictLine, []string) {
	f := &sr.Findings
	var lines []experiment.VerdictLine
	if f.Usable >= 0 {
		lines = append(lines, levelLine("usable", &sr.Levels[f.Usable]))
	}
	if f.Break >= 0 {
		lines = append(lines, levelLine("budget breaks at", &sr.Levels[f.Break]))
	}
	if f.Knee >= 0 {
		lines = append(lines, experiment.VerdictLine{Scope: "throughput knee " + sr.Levels[f.Knee].Name, Status: "KNEE",
			Detail: "more load after it adds too little throughput to be worth using"})
	}
	why := []string{"headroom: " + f.Headroom}
	if sr.Note != "" {
		why = append(why, sr.Note)
	}
	return lines, why
}

func levelLine(role string, lv *Level) experiment.VerdictLine {
	l := experiment.VerdictLine{Scope: role + " " + lv.Name, Label: "budget", Pass: lv.BudgetOK, Detail: lv.BudgetWhy}
	if lv.GeneratorLimited {
		l.Status = "GENERATOR-LIMITED"
	}
	return l
}

// meaning is what the exit code says about a sweep: 0 when a usable level
// was found (levels beyond the knee or the break are findings, not a
// failure), 1 when none was, or when the sweep's note says it could not
// be judged.
func meaning(sr *Result) string {
	switch {
	case sr.Note != "":
		return "surge could not send the load, so the sweep is unjudged: " + sr.Note
	case sr.Findings.Usable < 0:
		return "no level stayed within the latency budget: no usable level"
	}
	return fmt.Sprintf("a usable level was found: %s (levels past the knee or the budget break are findings, not a failure)", sr.Levels[sr.Findings.Usable].Name)
}
