package judge

import (
	"fmt"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
)

// Clause names of a sweep level's latency budget.
const (
	ClauseBudgetTTFT     = "budget_ttft_p95"
	ClauseBudgetTPOT     = "budget_tpot_p95"
	ClauseBudgetFailures = "budget_failures"
)

// Budget judges a sweep level's latency budget (docs/method.md §4): p95
// TTFT from the scheduled arrival within ttft, p95 TPOT within tpot, and
// — when goodput > 0 — the share of failed requests within 1 − goodput,
// each by its interval as an SLO clause is: a level whose sample cannot
// decide a clause is INCONCLUSIVE, neither within budget nor broken.
func Budget(s *analyze.Stats, ttft, tpot time.Duration, goodput float64) Verdict {
	v := Verdict{Outcome: Pass}
	t := latencyClause(ClauseTTFTP95, s.Latency.TTFTSchedule, analyze.Q95, durMs(ttft), s.Offered, false)
	t.Name = ClauseBudgetTTFT
	p := latencyClause(ClauseTTFTP95, s.Latency.TPOT, analyze.Q95, durMs(tpot), s.Offered, false)
	p.Name = ClauseBudgetTPOT
	if p.Samples == 0 && s.Offered > 0 {
		p.Reason = fmt.Sprintf("none of %d requests gave two tokens", s.Offered)
	}
	v.Clauses = append(v.Clauses, t, p)
	if goodput > 0 {
		v.Clauses = append(v.Clauses, failureClause(s, 1-goodput))
	}
	for _, c := range v.Clauses {
		v.Outcome = Worse(v.Outcome, c.Outcome)
	}
	return v
}

// failureClause judges "failed / offered ≤ allowed" by the share's
// Clopper–Pearson interval.
func failureClause(s *analyze.Stats, allowed float64) Clause {
	n := s.Offered
	failed := n - s.Succeeded
	lo, hi := analyze.ProportionCI(failed, n)
	c := Clause{Name: ClauseBudgetFailures, Limit: allowed, Measured: ratio(failed, n), Lo: lo, Hi: hi, Samples: n}
	switch {
	case n == 0:
		c.Outcome, c.Reason = Inconclusive, "no requests"
	case hi <= allowed:
		c.Outcome = Pass
	case lo > allowed:
		c.Outcome = Fail
		c.Reason = fmt.Sprintf("%s–%s with 95%% confidence", pct(lo), pct(hi))
	case failed == 0:
		c.Outcome, c.TooFew = Inconclusive, true
		c.Reason = fmt.Sprintf("none failed, which bounds the share only at ≤ %s; %d requests are needed", pct(hi), minForShare(1-allowed))
	default:
		c.Outcome = Inconclusive
		c.Reason = fmt.Sprintf("95%% interval %s–%s straddles the limit", pct(lo), pct(hi))
	}
	return c
}
