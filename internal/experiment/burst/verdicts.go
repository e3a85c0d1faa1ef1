package burst

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
)

// verdictPhases are the phases a burst's verdict block shows, in order.
var verdictPhases = []string{schedule.PhaseBaseline, schedule.PhaseBurst, schedule.PhaseRecovery}

// printVerdicts ends a burst experiment's terminal output: a line per
// run, the pooled lines of repeated multipliers, then why (the baselines
// that were not sustainable first).
func printVerdicts(w io.Writer, o *run.Options, runs []Run, pooled []experiment.VerdictLine, why []string) {
	experiment.PrintVerdicts(w, "SLO "+experiment.SLOText(o.Judging)+"; measured vs limit", append(verdictLines(runs), pooled...), why)
}

// verdictLines is a burst's closing verdict block: one line per
// multiplier with the verdict of its burst phase — the phase under test,
// which decides the exit code (runOutcome) — then its baseline's and
// recovery's, and the clauses that did not pass of the phase that
// matters (focusPhase), with their samples and reasons. The SLO over the
// whole run is in results.md's verdicts, not here: it mixes the burst
// with the calm around it, and its PASS would read as "the burst was
// fine".
func verdictLines(runs []Run) []experiment.VerdictLine {
	var lines []experiment.VerdictLine
	for i := range runs {
		v := runs[i].Result.Verdicts
		l := experiment.VerdictLine{Scope: runs[i].scope(), Label: "burst", Outcome: runOutcome(&runs[i]), Partial: runs[i].Result.Partial}
		for _, name := range verdictPhases {
			if name == schedule.PhaseBurst {
				continue
			}
			if pv, ok := v.Phase(name); ok {
				l.Phases = append(l.Phases, experiment.PhaseVerdict{Name: name, Outcome: pv.Outcome, Partial: pv.Partial})
			}
		}
		l.Detail = recoveryBrief(&runs[i])
		if name, fv, ok := focusPhase(v); ok {
			l.Detail = strings.TrimPrefix(l.Detail+"; "+name+": "+experiment.Clauses(fv, true), "; ")
		}
		if nr := burstNotReached(runs[i].Result); nr != "" {
			l.Status = "PARTIAL"
			if runs[i].Result.Unusable != "" {
				l.Status = "UNUSABLE"
			}
			if name, _, ok := focusPhase(v); ok && name != schedule.PhaseBurst {
				l.Detail = nr + "; " + l.Detail
			} else {
				l.Detail = nr
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// recoveryBrief is a run's recovery for its verdict line: "recovered
// 10s (predicted 12.4s)", "recovered 90s, LATE (predicted 46.7s)", "not
// recovered in 60s (predicted 69.6s)", "recovery inconclusive"; "" when
// the burst was not reached.
func recoveryBrief(r *Run) string {
	if burstNotReached(r.Result) != "" {
		return ""
	}
	secs := func(ms float64) string {
		if ms == 0 {
			return "0s"
		}
		return analyze.FormatMs(ms)
	}
	var s string
	switch rec := r.Recovery; rec.State {
	case report.Recovered:
		s = "recovered " + secs(rec.Seconds*1000)
	case report.NotRecovered:
		s = "not recovered in " + secs(rec.Seconds*1000)
	default:
		return "recovery inconclusive"
	}
	if late := recoveryLate(r, 0); late != nil && *late {
		s += ", LATE"
	}
	if p := r.Prediction; p != nil && !p.Never {
		s += " (predicted " + secs(float64(p.RecoveryTime)/1e6) + ")"
	} else if p != nil {
		s += " (predicted never)"
	}
	return s
}

// runOutcome is a burst run's verdict: its burst phase's, the phase
// under test (the whole run's when the burst was not reached).
func runOutcome(r *Run) judge.Outcome {
	if v, ok := r.Result.Verdicts.Phase(schedule.PhaseBurst); ok {
		return v.Outcome
	}
	return r.Result.Verdicts.Overall.Outcome
}

// focusPhase picks the phase whose clauses a multiplier's verdict line
// shows: the burst, the phase under test, when it did not pass; else the
// first of baseline and recovery that did not. ok is false when every
// phase passed.
func focusPhase(v *judge.Verdicts) (string, judge.Verdict, bool) {
	order := []string{schedule.PhaseBurst, schedule.PhaseBaseline, schedule.PhaseRecovery}
	for _, name := range order {
		if pv, ok := v.Phase(name); ok && pv.Outcome != judge.Pass {
			return name, pv, true
		}
	}
	return "", judge.Verdict{}, false
}

// baselineNotes explain baselines that missed the SLO, first in the
// verdicts' notes. The explanation comes from the evidence, not from how
// big the miss is: a baseline queued (its TTFT p95 clause failed, its
// TTFT from send p95 passed the TTFT deadline, or it ran at or above the
// capacity μ, or more than 1% of its arrivals timed out) — then it may
// not be sustainable, one sentence per distinct
// finding; otherwise its first tokens came in time below μ and the misses
// were long answers past the completion deadline, or failed requests —
// one sentence for every run that shares it, naming the multipliers
// ("every run" when all share it).
func baselineNotes(runs []Run) []string {
	var order []string
	scopes := map[string][]string{}
	var calm []int // runs whose baseline missed without queueing
	for i := range runs {
		b, ok := runs[i].Result.Analysis.Phase(schedule.PhaseBaseline)
		bv, _ := runs[i].Result.Verdicts.Phase(schedule.PhaseBaseline)
		if !ok || bv.Outcome != judge.Fail { // passed, or undecided (its sample, an interrupt's cancellations)
			continue
		}
		ev, queued := baselineQueued(&runs[i], b, bv)
		if !queued {
			calm = append(calm, i)
			continue
		}
		key := fmt.Sprintf("%s (%s)", failing(bv), ev)
		if _, seen := scopes[key]; !seen {
			order = append(order, key)
		}
		scopes[key] = append(scopes[key], runs[i].scope())
	}
	var notes []string
	for _, key := range order {
		notes = append(notes, fmt.Sprintf("%s: the baseline phase already missed the SLO with signs of queueing — %s; the baseline may not be sustainable, so the burst results overstate the burst's effect.", who(scopes[key], len(runs)), key))
	}
	if len(calm) > 0 {
		notes = append(notes, calmBaselineNote(runs, calm))
	}
	return notes
}

// baselineQueued says whether a baseline that missed the SLO shows
// queueing, and the evidence that does.
func baselineQueued(r *Run, b analyze.PhaseResult, v judge.Verdict) (string, bool) {
	var ev []string
	for _, c := range v.Clauses {
		if c.Name == judge.ClauseTTFTP95 && c.Outcome == judge.Fail {
			ev = append(ev, "its first tokens came late")
		}
	}
	deadline := r.Result.Analysis.Settings.TTFTDeadlineMs
	if t := b.Latency.TTFTSend; t.Count > 0 && deadline > 0 && t.P95Ms > deadline && len(ev) == 0 {
		ev = append(ev, "TTFT from send p95 "+t.Text(analyze.Q95)+" over the "+analyze.FormatMs(deadline)+" TTFT deadline")
	}
	if b.TimeoutRate > judge.DiagBacklogTimeoutShare {
		ev = append(ev, fmt.Sprintf("%.1f%% of its arrivals timed out", 100*b.TimeoutRate))
	}
	if r.Mu > 0 && b.OfferedRPS >= r.Mu {
		ev = append(ev, fmt.Sprintf("%s req/s offered at or above the capacity μ %s req/s", fmtRate(b.OfferedRPS), fmtRate(r.Mu)))
	}
	return strings.Join(ev, "; "), len(ev) > 0
}

// calmBaselineNote is the one sentence for the baselines that missed the
// SLO without queueing: their TTFT p95 against the deadline, their rate
// against μ, and how many of their requests missed — late answers
// (succeeded past the deadline) or failures — per multiplier.
func calmBaselineNote(runs []Run, idx []int) string {
	var scopes, ttfts, misses []string
	var late, failed, empty int64
	var rates, mus []float64
	var deadline, e2e float64
	many := false
	for _, i := range idx {
		r := &runs[i]
		b, _ := r.Result.Analysis.Phase(schedule.PhaseBaseline)
		set := r.Result.Analysis.Settings
		deadline, e2e = set.TTFTDeadlineMs, set.E2EDeadlineMs
		scopes = append(scopes, r.scope())
		ttfts = append(ttfts, b.Latency.TTFTSend.Text(analyze.Q95))
		late += b.Late()
		empty += b.Tokenless
		failed += b.Offered - b.Succeeded
		misses = append(misses, fmt.Sprintf("%d of %d", b.Offered-b.Good, b.Offered))
		many = many || float64(b.Offered-b.Good) > max(2, judge.DiagBacklogLateShare*float64(b.Offered))
		rates = append(rates, b.OfferedRPS)
		if r.Mu > 0 {
			mus = append(mus, r.Mu)
		}
	}
	cause := missCause(late, empty, failed, e2e)
	s := fmt.Sprintf("%s: the baseline missed the SLO by %s, not by queueing — its first tokens came in time (TTFT from send p95 %s, deadline %s) at %s req/s",
		who(scopes, len(runs)), cause, perRun(ttfts, scopes), analyze.FormatMs(deadline), rateRange(rates))
	if len(mus) == len(idx) {
		s += fmt.Sprintf(", below the capacity μ %s req/s", rateRange(mus))
	}
	per, missed := perRun(misses, scopes), "missed their deadline"
	if empty > 0 {
		missed = "were not good" // an empty answer missed no deadline
	}
	if many && late >= empty+failed {
		return s + fmt.Sprintf("; %s requests %s: the completion deadline is short for these answers (a longer --e2e-deadline, or shorter answers).", per, missed)
	}
	if many {
		return s + fmt.Sprintf("; %s requests %s.", per, missed)
	}
	return s + fmt.Sprintf("; %s requests %s, too few to say the baseline is not sustainable.", per, missed)
}

// missCause names why a calm baseline's requests missed, the most common
// reason first: answers that succeeded past the completion deadline
// (e2eMs), answers that carried no token (ok but empty, never good) and
// failed requests; the others follow as "a few" when there are any.
func missCause(late, empty, failed int64, e2eMs float64) string {
	type reason struct {
		n         int64
		main, few string
	}
	reasons := []reason{
		{late, fmt.Sprintf("long answers past the %s completion deadline", analyze.FormatMs(e2eMs)), "long answers"},
		{empty, "empty answers (ok, but the stream carried no token)", "empty answers"},
		{failed, "failed requests (see the failure columns)", "failed requests"},
	}
	slices.SortStableFunc(reasons, func(a, b reason) int { return cmp.Compare(b.n, a.n) })
	var few []string
	for _, r := range reasons[1:] {
		if r.n > 0 {
			few = append(few, r.few)
		}
	}
	if len(few) == 0 {
		return reasons[0].main
	}
	return reasons[0].main + ", and a few " + strings.Join(few, " and ")
}

// rateRange is one rate, or "lo–hi" when they differ.
func rateRange(v []float64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if fmtRate(lo) == fmtRate(hi) {
		return fmtRate(lo)
	}
	return fmtRate(lo) + "–" + fmtRate(hi)
}

func fmtRate(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// perRun is one value when every run shares it, else each value with its
// multiplier: "640ms", "653ms (2×), 640ms (5×)".
func perRun(v, scopes []string) string {
	if !slices.ContainsFunc(v, func(x string) bool { return x != v[0] }) {
		return v[0]
	}
	out := make([]string, len(v))
	for i := range v {
		out[i] = v[i] + " (" + scopes[i] + ")"
	}
	return strings.Join(out, ", ")
}

// who names the multipliers a note holds for: "every run" when it holds
// for all of several.
func who(scopes []string, runs int) string {
	if runs > 1 && len(scopes) == runs {
		return "every run"
	}
	return strings.Join(scopes, ", ")
}

// meaning is what the exit code says about a burst experiment: it is
// decided by the burst phase of each multiplier, the phase under test —
// 1 when it failed the SLO at any multiplier, naming them; 5 when none
// failed but one could not be decided on its sample; 0 when it held at
// every multiplier.
func meaning(runs []Run) string {
	var failed, undecided, held []string
	for i := range runs {
		switch runOutcome(&runs[i]) {
		case judge.Fail:
			failed = append(failed, runs[i].scope())
		case judge.Inconclusive:
			undecided = append(undecided, runs[i].scope())
		default:
			held = append(held, runs[i].scope())
		}
	}
	also := ""
	if len(held) > 0 {
		also = " (it held at " + strings.Join(held, ", ") + ")"
	}
	switch {
	case len(failed) > 0:
		return fmt.Sprintf("the burst phase failed the SLO at %s%s; the verdicts above say which clauses and by how much", strings.Join(failed, ", "), also)
	case len(undecided) > 0:
		return fmt.Sprintf("no burst phase failed the SLO, but at %s its sample could not decide it%s; the verdicts above say why", strings.Join(undecided, ", "), also)
	}
	return "the burst phase held the SLO at every multiplier"
}

// failing lists v's failing clauses as measured vs limit with their
// samples: "p99 completion 12.2s (limit 12s, n=83)".
func failing(v judge.Verdict) string {
	var parts []string
	for _, c := range v.Clauses {
		if c.Outcome == judge.Fail {
			parts = append(parts, fmt.Sprintf("%s %s (limit %s, n=%d)", c.Label(), c.Value(), c.LimitText(), c.Samples+c.Censored))
		}
	}
	return strings.Join(parts, ", ")
}

// lateSlack is how much later than predicted a measured recovery may come
// before it is called late: the recovery is measured to one window, and
// the fluid model is an optimistic bound, so only a clear miss counts.
const lateSlack = 1.25

// recoveryLate is whether run r recovered clearly later than predicted:
// even its earliest recovery time consistent with the windows (judge's
// EarliestMs) later than predicted × lateSlack + one window, or not
// recovered within that long. nil when either recovery is unknown, or the
// model predicts none. results.csv's recovery_late and report.html's LATE
// badge both come from here.
func recoveryLate(r *Run, window time.Duration) *bool {
	p := r.Prediction
	if p == nil || p.Never {
		return nil
	}
	var rec judge.Recovery
	if r.Result != nil && r.Result.Verdicts != nil {
		rec = r.Result.Verdicts.Recovery
	}
	if rec.ResolutionMs > 0 {
		window = time.Duration(rec.ResolutionMs * 1e6)
	}
	limit := lateSlack*p.RecoveryTime.Seconds() + window.Seconds()
	var late bool
	switch r.Recovery.State {
	case report.Recovered:
		earliest := r.Recovery.Seconds
		if rec.Recovered && rec.EarliestKnown { // the windows' uncertainty
			earliest -= (rec.RecoveryTimeMs - rec.EarliestMs) / 1000
		}
		late = earliest > limit
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
