package burst

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
)

// verdictPhases are the phases a burst's verdict block shows, in order.
var verdictPhases = []string{schedule.PhaseBaseline, schedule.PhaseBurst, schedule.PhaseRecovery}

// printVerdicts ends a burst experiment's terminal output: a line per
// multiplier, then why (the baselines that were not sustainable first).
func printVerdicts(w io.Writer, o *run.Options, runs []Run, why []string) {
	experiment.PrintVerdicts(w, "SLO "+experiment.SLOText(o)+"; measured vs limit", verdictLines(runs), why)
}

// verdictLines is a burst's closing verdict block: one line per
// multiplier with its overall SLO verdict (which decides the exit code),
// each phase's verdict, and the failing clauses of the phase that matters
// (focusPhase).
func verdictLines(runs []Run) []experiment.VerdictLine {
	var lines []experiment.VerdictLine
	for i := range runs {
		a := runs[i].Result.Analysis
		l := experiment.VerdictLine{Scope: fmtK(runs[i].K) + "×", Label: "overall", Pass: a.Verdict.Pass}
		for _, name := range verdictPhases {
			if p, ok := a.Phase(name); ok {
				l.Phases = append(l.Phases, experiment.PhaseVerdict{Name: name, Pass: p.SLO.Pass})
			}
		}
		if name, v, ok := focusPhase(a); ok {
			l.Detail = name + ": " + experiment.Clauses(v, true)
		}
		lines = append(lines, l)
	}
	return lines
}

// focusPhase picks the phase whose failing clauses a multiplier's verdict
// line shows: the burst, the phase under test, when it failed; else the
// first failing of baseline and recovery; else overall when it failed
// (only the whole run missed, e.g. on goodput summed over the phases).
// ok is false when every verdict held.
func focusPhase(a *analyze.Result) (string, analyze.Verdict, bool) {
	order := []string{schedule.PhaseBurst, schedule.PhaseBaseline, schedule.PhaseRecovery}
	for _, name := range order {
		if p, ok := a.Phase(name); ok && !p.SLO.Pass {
			return name, p.SLO, true
		}
	}
	if !a.Verdict.Pass {
		return "overall", a.Verdict, true
	}
	return "", analyze.Verdict{}, false
}

// baselineNotes explain baselines that already missed the SLO, first in
// the verdicts' notes: one sentence per distinct finding, naming the
// multipliers it holds for ("every run" when all share it), so that runs
// with the same baseline verdict do not repeat the same sentence.
func baselineNotes(runs []Run) []string {
	var order []string
	scopes := map[string][]string{}
	for i := range runs {
		b, ok := runs[i].Result.Analysis.Phase(schedule.PhaseBaseline)
		if !ok {
			continue
		}
		probs := baselineProblems(b)
		if len(probs) == 0 {
			continue
		}
		key := fmt.Sprintf("%s over %d requests", strings.Join(probs, "; "), b.Offered)
		if _, seen := scopes[key]; !seen {
			order = append(order, key)
		}
		scopes[key] = append(scopes[key], fmtK(runs[i].K)+"×")
	}
	var notes []string
	for _, key := range order {
		notes = append(notes, fmt.Sprintf("%s: the baseline phase already missed the SLO — %s; the baseline may not be sustainable, so the burst results overstate the burst's effect.", who(scopes[key], len(runs)), key))
	}
	return notes
}

// who names the multipliers a note holds for: "every run" when it holds
// for all of several.
func who(scopes []string, runs int) string {
	if runs > 1 && len(scopes) == runs {
		return "every run"
	}
	return strings.Join(scopes, ", ")
}

// minorBaselineNotes explain a baseline that failed the SLO without
// saying it was unsustainable (baselineProblems found nothing): only on
// completion time, or on goodput by a request or two. They follow
// baselineNotes, so that a "baseline FAIL" in the verdict block is never
// left unexplained.
func minorBaselineNotes(runs []Run) []string {
	var order []string
	scopes := map[string][]string{}
	for i := range runs {
		b, ok := runs[i].Result.Analysis.Phase(schedule.PhaseBaseline)
		if !ok || b.SLO.Pass || len(baselineProblems(b)) > 0 {
			continue
		}
		key := experiment.Clauses(b.SLO, true)
		if _, seen := scopes[key]; !seen {
			order = append(order, key)
		}
		scopes[key] = append(scopes[key], fmtK(runs[i].K)+"×")
	}
	var notes []string
	for _, key := range order {
		notes = append(notes, fmt.Sprintf("%s: the baseline missed only by long answers or a request or two (%s): not a sign of queueing.", who(scopes[key], len(runs)), key))
	}
	return notes
}

// meaning is what the exit code says about a burst experiment: 1 when the
// SLO failed over a whole run (warmup excluded) at any multiplier, naming
// them; a phase failing inside a run that held overall fails nothing.
func meaning(runs []Run) string {
	var failed []string
	for i := range runs {
		if !runs[i].Result.Analysis.Verdict.Pass {
			failed = append(failed, fmtK(runs[i].K)+"×")
		}
	}
	if len(failed) == 0 {
		return "the SLO held over every whole run"
	}
	return fmt.Sprintf("the SLO failed over the whole run at %s (the verdicts above say which clauses and by how much)", strings.Join(failed, ", "))
}

// lateSlack is how much later than predicted a measured recovery may come
// before it is called late: the recovery is measured to one window, and
// the fluid model is an optimistic bound, so only a clear miss counts.
const lateSlack = 1.25

// recoveryLate is whether run r recovered clearly later than predicted:
// later than predicted × lateSlack + one analysis window, or not
// recovered within that long. nil when either recovery is unknown, or the
// model predicts none. results.csv's recovery_late and report.html's LATE
// badge both come from here.
func recoveryLate(r *Run, window time.Duration) *bool {
	p := r.Prediction
	if p == nil || p.Never {
		return nil
	}
	limit := lateSlack*p.RecoveryTime.Seconds() + window.Seconds()
	var late bool
	switch r.Recovery.State {
	case report.Recovered:
		late = r.Recovery.Seconds > limit
	case report.NotRecovered:
		if r.Recovery.Seconds <= limit {
			return nil // not recovered, but not watched long enough to call it late
		}
		late = true
	default:
		return nil
	}
	return &late
}
