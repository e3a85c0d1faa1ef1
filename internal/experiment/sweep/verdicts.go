package sweep

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
)

// verdictLines is a sweep's closing verdict block: the usable level and
// the first level whose latency budget broke, each with the budget's
// clauses as measured vs limit; beside the usable level's budget, its SLO
// verdict (the budget bounds p95 TTFT and TPOT, the SLO p99 completion and
// goodput too, so a level can be within budget and still miss the SLO),
// and the levels where the SLO fails; the headroom (knee against break)
// and the sweep's note are its why.
func verdictLines(sr *Result) ([]experiment.VerdictLine, []string) {
	f := &sr.Findings
	var lines []experiment.VerdictLine
	if f.Usable >= 0 {
		lv := &sr.Levels[f.Usable]
		lines = append(lines, levelLine("usable", lv))
		if v := lv.slo(); len(v.Clauses) > 0 {
			lines = append(lines, experiment.VerdictLine{Scope: "usable " + lv.Name, Label: "SLO", Outcome: v.Outcome,
				Detail: experiment.Clauses(v, false)})
		}
	}
	if undecided := inconclusive(sr); len(undecided) > 0 {
		lines = append(lines, experiment.VerdictLine{Scope: "budget undecided at", Status: strings.Join(undecided, ", "), Outcome: judge.Inconclusive,
			Detail: "their samples cannot show the budget held or broke (the levels' lines above say why); longer --duration decides them"})
	}
	if fails := sloFailing(sr); len(fails) > 0 {
		lines = append(lines, experiment.VerdictLine{Scope: "SLO fails at", Status: strings.Join(fails, ", "),
			Detail: fmt.Sprintf("%d of %d levels miss the SLO", len(fails), len(sr.Levels))})
	}
	if f.Break >= 0 {
		lines = append(lines, levelLine("budget breaks at", &sr.Levels[f.Break]))
	}
	if f.Knee >= 0 {
		lines = append(lines, experiment.VerdictLine{Scope: "throughput knee " + sr.Levels[f.Knee].Name, Status: "KNEE",
			Detail: "more load after it adds too little throughput to be worth using"})
	}
	why := []string{"headroom: " + f.Headroom}
	if sr.Partial {
		// What held, held; the sweep did not finish, so no PASS is final.
		for i := range lines {
			if lines[i].Status == "" && lines[i].Outcome == judge.Pass && strings.HasPrefix(lines[i].Scope, "usable ") {
				lines[i].Scope = strings.Replace(lines[i].Scope, "usable ", "usable so far ", 1)
				lines[i].Status = "PASS, sweep PARTIAL"
			}
		}
		why = append([]string{"the sweep was cut short (" + cmp.Or(sr.NotReached, "interrupted, or stopped by its budget") + "): its findings are over the levels done, not final"}, why...)
	}
	if sr.Note != "" {
		why = append(why, sr.Note)
	}
	return lines, why
}

// inconclusive names the levels whose budget their sample could not
// decide, in order of load.
func inconclusive(sr *Result) []string {
	var out []string
	for i := range sr.Levels {
		if lv := &sr.Levels[i]; lv.Budget.Outcome == judge.Inconclusive && !lv.GeneratorLimited {
			out = append(out, lv.Name)
		}
	}
	return out
}

// outcome decides a sweep's exit code: PASS when a usable level was
// found; INCONCLUSIVE when none was but no level broke the budget before
// the levels that could not be decided; FAIL otherwise.
func outcome(sr *Result) judge.Outcome {
	switch {
	case sr.Note != "":
		return judge.Fail
	case sr.Findings.Usable >= 0:
		return judge.Pass
	case len(inconclusive(sr)) > 0 && sr.Findings.Break != 0:
		return judge.Inconclusive
	}
	return judge.Fail
}

// sloFailing names the levels whose measured phase missed the SLO, in
// order of load.
func sloFailing(sr *Result) []string {
	var out []string
	for i := range sr.Levels {
		if v := sr.Levels[i].slo(); len(v.Clauses) > 0 && v.Outcome == judge.Fail {
			out = append(out, sr.Levels[i].Name)
		}
	}
	return out
}

func levelLine(role string, lv *Level) experiment.VerdictLine {
	l := experiment.VerdictLine{Scope: role + " " + lv.Name, Label: "budget", Outcome: lv.Budget.Outcome, Detail: lv.BudgetWhy}
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
	case sr.Findings.Usable < 0 && outcome(sr) == judge.Inconclusive:
		return "no level was shown to stay within the latency budget: the levels' samples could not decide it (a longer --duration decides them)"
	case sr.Findings.Usable < 0:
		return "no level stayed within the latency budget: no usable level"
	}
	lv := &sr.Levels[sr.Findings.Usable]
	slo := ""
	if v := lv.slo(); len(v.Clauses) > 0 && v.Outcome == judge.Fail {
		slo = "; it misses the SLO (" + experiment.Clauses(v, true) + "), a finding too: the budget decides a sweep's exit"
	}
	return fmt.Sprintf("a usable level was found: %s (levels past the knee or the budget break are findings, not a failure)%s", lv.Name, slo)
}
