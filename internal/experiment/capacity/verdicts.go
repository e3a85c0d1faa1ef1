package capacity

import (
	"cmp"
	"fmt"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
)

// verdictLines is a capacity search's closing verdict block: the step that
// bounds the answer from below (the sustainable rate, every SLO clause as
// measured vs limit) and the one that bounds it from above (the lowest
// failing step, its failing clauses); without a passing step, the lowest
// step tried; a step surge could not send (generator-limited) instead of
// the failing one. The notes say why the search ended where it did.
func verdictLines(cr *Result) ([]experiment.VerdictLine, []string) {
	var lines []experiment.VerdictLine
	var sustainable, failing, lowest, limited *Step
	for i := range cr.Steps {
		st := &cr.Steps[i]
		if st.GeneratorLimited {
			limited = st
		}
		if st.Pass && st.Rate == cr.SustainableRPS && sustainable == nil {
			sustainable = st
		}
		if !st.Pass && st.Rate == cr.LowestFailingRPS && failing == nil {
			failing = st
		}
		if lowest == nil || st.Rate < lowest.Rate {
			lowest = st
		}
	}
	if sustainable != nil {
		l := stepLine("sustainable", sustainable)
		if cr.Partial { // the step passed, the search did not finish
			l.Scope = "highest passing so far " + experiment.FmtRate(sustainable.Rate) + " req/s"
			l.Status = "PASS, search PARTIAL"
		}
		lines = append(lines, l)
	}
	switch {
	case limited != nil:
		lines = append(lines, stepLine("could not send", limited))
	case failing != nil && cr.Bounded && failing.outcome() == judge.Inconclusive:
		lines = append(lines, stepLine("lowest undecided", failing))
	case failing != nil && cr.Bounded:
		lines = append(lines, stepLine("lowest failing", failing))
	case sustainable == nil && lowest != nil:
		lines = append(lines, stepLine("lowest tried", lowest))
	}
	if n := len(cr.Steps); cr.Partial && n > 0 && cr.Steps[n-1].Result != nil && cr.Steps[n-1].Result.Partial && &cr.Steps[n-1] != lowest {
		lines = append(lines, stepLine("cut short", &cr.Steps[n-1]))
	}
	var why []string
	if cr.Partial {
		why = append(why, fmt.Sprintf("the search was cut short (%s): its answer is not final", cmp.Or(cr.PartialWhy, "interrupted")))
	}
	if cr.Note != "" {
		why = append(why, cr.Note)
	}
	return lines, why
}

// stepLine is one step's verdict: all clauses when it passed, the failing
// ones (and why it stopped early) when it did not.
func stepLine(role string, st *Step) experiment.VerdictLine {
	l := experiment.VerdictLine{Scope: fmt.Sprintf("%s %s req/s", role, experiment.FmtRate(st.Rate)), Label: "SLO", Outcome: st.outcome()}
	if v := st.verdictText(); v != "PASS" && v != "FAIL" && v != "INCONCLUSIVE" {
		l.Status = v
	}
	l.Detail = experiment.Clauses(st.Verdict, !st.Pass)
	if st.StoppedEarly != "" {
		l.Detail = joinDetail(l.Detail, st.StoppedEarly)
	}
	if st.GeneratorLimited && st.Measure.GeneratorNote != "" {
		l.Detail = joinDetail(l.Detail, st.Measure.GeneratorNote)
	}
	if st.Result != nil && st.Result.Partial {
		l.Detail = joinDetail(l.Detail, "cut short: "+st.Result.PartialWhy)
	}
	return l
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// meaning is what the exit code says about a search: 0 when it found a
// sustainable rate (the failing steps above it are the search bracketing
// the answer, not a failure), 1 when it found none or surge itself could
// not send the load.
func meaning(cr *Result) string {
	switch {
	case cr.Partial:
		return fmt.Sprintf("the search was cut short (%s): its answer is not final", cmp.Or(cr.PartialWhy, "interrupted"))
	case cr.GeneratorLimited:
		return fmt.Sprintf("the search was cut short: surge could not send the load (generator-limited); the target's capacity is at least %s req/s, its limit unknown", experiment.FmtRate(cr.SustainableRPS))
	case cr.SustainableRPS == 0 && cr.Undecided:
		return "no step was shown to meet the SLO: the last step's requests were too few to decide it (raise --min-requests)"
	case cr.SustainableRPS == 0:
		return "no step met the SLO: no sustainable rate found"
	case cr.Bounded:
		return fmt.Sprintf("a sustainable rate was found: %s req/s (the failing steps above it bound the search; they do not fail the command)", experiment.FmtRate(cr.SustainableRPS))
	}
	return fmt.Sprintf("every step met the SLO: the sustainable rate is at least %s req/s", experiment.FmtRate(cr.SustainableRPS))
}
