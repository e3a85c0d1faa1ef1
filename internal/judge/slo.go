package judge

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
)

// Outcome is a judgement's result: PASS, FAIL, or INCONCLUSIVE when the
// sample cannot decide it (the reason says why).
type Outcome string

// The three outcomes.
const (
	Pass         Outcome = "PASS"
	Fail         Outcome = "FAIL"
	Inconclusive Outcome = "INCONCLUSIVE"
)

// Worse is the outcome of two judged together: FAIL over INCONCLUSIVE
// over PASS.
func Worse(a, b Outcome) Outcome {
	rank := func(o Outcome) int {
		switch o {
		case Fail:
			return 2
		case Inconclusive:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Clause names in a Verdict.
const (
	ClauseTTFTP95      = "ttft_p95"
	ClauseE2EP99       = "e2e_p99"
	ClauseGoodputRatio = "goodput_ratio"
)

// DefaultSLO is docs/method.md §1's example SLO: p95 TTFT ≤ 2 s, p99 E2E ≤ 12 s,
// goodput ≥ 99 % of offered. SLO's zero value has no clauses.
var DefaultSLO = SLO{TTFTP95: 2 * time.Second, E2EP99: 12 * time.Second, GoodputRatio: 0.99}

// SLO accepts or rejects a load level. Every clause is optional: a zero field
// is not checked.
type SLO struct {
	TTFTP95      time.Duration // p95 of TTFT from the scheduled arrival must be ≤ this
	E2EP99       time.Duration // p99 of completion from the scheduled arrival must be ≤ this
	GoodputRatio float64       // good / offered must be ≥ this (0…1)
	// Interrupted marks a run stopped by Ctrl-C: the requests surge
	// cancelled are not failures of the target. A clause they decide is
	// INCONCLUSIVE, not FAIL; one that fails whatever they would have
	// done still fails.
	Interrupted bool
}

// Clause is one SLO clause judged on one group of requests, with its
// evidence: the measured value, its 95% interval and sample, the limit,
// and the reason for an outcome other than PASS.
type Clause struct {
	Name  string  `json:"name"`  // ttft_p95, e2e_p99 or goodput_ratio
	Limit float64 `json:"limit"` // ms for latency clauses, a fraction for goodput_ratio
	// Measured is the point estimate (nearest rank, or good / offered),
	// a lower bound when Bound; Lo and Hi its Confidence interval (Hi
	// meaningless when HiOpen: nothing bounds it above).
	Measured float64 `json:"measured"`
	Bound    bool    `json:"bound,omitempty"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	HiOpen   bool    `json:"hi_open,omitempty"`
	Samples  int64   `json:"samples"`            // values behind Measured (offered arrivals for goodput_ratio)
	Censored int64   `json:"censored,omitempty"` // requests known only to exceed every value (timeouts, cancelled in flight)
	CensorMs float64 `json:"censor_ms,omitempty"`
	Outcome  Outcome `json:"outcome"`
	Reason   string  `json:"reason,omitempty"` // why FAIL or INCONCLUSIVE
	// Cancelled marks a clause the requests an interrupt cancelled
	// decide: INCONCLUSIVE for that reason, not the target's doing.
	Cancelled bool `json:"cancelled,omitempty"`
	// TooFew marks a clause INCONCLUSIVE because its sample is too small
	// ever to show it held (a p99 of fewer than 368 values, a 99%
	// goodput over fewer than 368 arrivals): more requests, not another
	// load, decide it.
	TooFew bool `json:"too_few,omitempty"`
}

// TooFew says whether v is undecided only because its sample is too
// small (Clause.TooFew): no clause failed, and every undecided one is
// too small to pass.
func (v Verdict) TooFew() bool {
	any := false
	for _, c := range v.Clauses {
		switch {
		case c.Outcome == Fail, c.Outcome == Inconclusive && !c.TooFew:
			return false
		case c.TooFew:
			any = true
		}
	}
	return any
}

// Verdict is an SLO's outcome for one group: FAIL when a clause failed,
// else INCONCLUSIVE when one could not be decided, else PASS (also with
// no clauses).
type Verdict struct {
	Outcome Outcome  `json:"outcome"`
	Clauses []Clause `json:"clauses"`
	// Partial marks the verdict of a run cut short (Ctrl-C, a budget):
	// what held over what ran is reported PARTIAL, never PASS.
	Partial bool `json:"partial,omitempty"`
}

// Passed says whether every clause passed.
func (v Verdict) Passed() bool { return v.Outcome == Pass }

// Failed says whether a clause failed, whatever the undecided ones.
func (v Verdict) Failed() bool { return v.Outcome == Fail }

// cancelledOnly says whether v is undecided only by clauses the requests
// an interrupt cancelled decide.
func (v Verdict) cancelledOnly() bool {
	any := false
	for _, c := range v.Clauses {
		if c.Outcome == Fail || c.Outcome == Inconclusive && !c.Cancelled {
			return false
		}
		any = any || c.Cancelled
	}
	return any
}

// Status is the word a verdict line shows: FAIL, INCONCLUSIVE, PASS, or
// PARTIAL for a cut run that did not fail.
func (v Verdict) Status() string {
	if v.Partial && v.Outcome != Fail {
		return "PARTIAL"
	}
	return string(v.Outcome)
}

// Check applies the SLO to the group s.
func (slo SLO) Check(s *analyze.Stats) Verdict {
	v := Verdict{Outcome: Pass, Clauses: []Clause{}}
	if slo.TTFTP95 > 0 {
		v.Clauses = append(v.Clauses, latencyClause(ClauseTTFTP95, s.Latency.TTFTSchedule, analyze.Q95, durMs(slo.TTFTP95), s.Offered, slo.Interrupted))
	}
	if slo.E2EP99 > 0 {
		v.Clauses = append(v.Clauses, latencyClause(ClauseE2EP99, s.Latency.E2ESchedule, analyze.Q99, durMs(slo.E2EP99), s.Offered, slo.Interrupted))
	}
	if slo.GoodputRatio > 0 {
		v.Clauses = append(v.Clauses, goodputClause(s, slo.GoodputRatio, slo.Interrupted))
	}
	for _, c := range v.Clauses {
		v.Outcome = Worse(v.Outcome, c.Outcome)
	}
	return v
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MinForUpperBound is the fewest values (recorded and censored) whose
// order statistics can bound the q-quantile from above: the smallest n
// with q^n ≤ (1 − Confidence)/2 — 6 for a P50, 72 for a P95, 368 for a
// P99. With fewer, a percentile clause can FAIL but never PASS.
func MinForUpperBound(q float64) int64 {
	return int64(math.Ceil(math.Log((1-analyze.Confidence)/2) / math.Log(q)))
}

// latencyClause judges "the q-quantile of d ≤ limitMs" by d's interval:
// FAIL when its lower bound is above the limit (or among timeouts that
// exceed it), PASS when its upper bound is within it, INCONCLUSIVE
// otherwise — too few values for an upper bound, an upper bound among
// the timeouts, an interval across the limit, or the requests an
// interrupt cancelled.
func latencyClause(name string, d analyze.Dist, q analyze.Quantile, limitMs float64, offered int64, interrupted bool) Clause {
	v, bound := d.Value(q)
	ci := interval(d, q)
	c := Clause{Name: name, Limit: limitMs, Measured: v, Bound: bound, Lo: ci.LoMs, Hi: ci.HiMs, HiOpen: ci.HiOpen,
		Samples: d.Count, Censored: d.Censored, CensorMs: d.CensorMs}
	label := "p" + strconv.Itoa(int(q))
	total := d.Count + d.Censored
	switch {
	case total == 0:
		c.Outcome = Inconclusive
		c.Reason = noSamples(name, offered)
	case ci.LoCensored && ci.LoMs > limitMs:
		c.Outcome = Fail
		c.Reason = fmt.Sprintf("%s put the %s above the %s timeout", censoredCount(d, offered), label, analyze.FormatMs(ci.LoMs))
	case ci.LoMs > limitMs:
		c.Outcome = Fail
		c.Reason = fmt.Sprintf("%s with 95%% confidence", intervalText(ci))
	case !ci.HiOpen && ci.HiMs <= limitMs:
		c.Outcome = Pass
	case interrupted && d.Interrupted:
		c.Outcome, c.Cancelled = Inconclusive, true
		c.Reason = "requests surge cut short (interrupted, or ended before they did) decide it"
	case ci.HiOpen && total < MinForUpperBound(float64(q)/100):
		c.Outcome, c.TooFew = Inconclusive, true
		c.Reason = fmt.Sprintf("a %s needs %d values to be bounded above", label, MinForUpperBound(float64(q)/100))
	case ci.HiOpen:
		c.Outcome = Inconclusive
		c.Reason = fmt.Sprintf("%s leave the %s unbounded above", censoredCount(d, offered), label)
	default:
		c.Outcome = Inconclusive
		c.Reason = fmt.Sprintf("95%% interval %s straddles the limit", intervalText(ci))
	}
	return c
}

// noSamples says why a latency clause has no values at all.
func noSamples(name string, offered int64) string {
	switch {
	case offered == 0:
		return "no requests"
	case name == ClauseTTFTP95:
		return fmt.Sprintf("none of %d requests got a first token", offered)
	}
	return fmt.Sprintf("none of %d requests completed", offered)
}

// censoredCount is "42 timeouts (4.1%)", the censored requests of d
// against the group's arrivals.
func censoredCount(d analyze.Dist, offered int64) string {
	what := "timeouts"
	if d.Interrupted && d.CensorMs == 0 {
		what = "requests cancelled in flight"
	} else if d.Interrupted {
		what = "timeouts and requests cancelled in flight"
	}
	if d.Censored == 1 {
		what = strings.Replace(strings.Replace(what, "timeouts", "timeout", 1), "requests", "request", 1)
	}
	if offered <= 0 {
		return fmt.Sprintf("%d %s", d.Censored, what)
	}
	return fmt.Sprintf("%d %s (%s)", d.Censored, what, pct(float64(d.Censored)/float64(offered)))
}

func interval(d analyze.Dist, q analyze.Quantile) analyze.Interval {
	switch q {
	case analyze.Q50:
		return d.P50CI
	case analyze.Q95:
		return d.P95CI
	}
	return d.P99CI
}

// intervalText is "1.2s–1.4s", or "≥ 1.2s" without an upper bound.
func intervalText(ci analyze.Interval) string {
	if ci.HiOpen {
		return "≥ " + analyze.FormatMs(ci.LoMs)
	}
	return analyze.FormatMs(ci.LoMs) + "–" + analyze.FormatMs(ci.HiMs)
}

// goodputClause judges "good / offered ≥ limit" by its Clopper–Pearson
// interval; in an interrupted run the requests surge cancelled count as
// not good, and a clause they could turn is INCONCLUSIVE.
func goodputClause(s *analyze.Stats, limit float64, interrupted bool) Clause {
	n, good := s.Offered, s.Good
	lo, hi := analyze.ProportionCI(good, n)
	c := Clause{Name: ClauseGoodputRatio, Limit: limit, Measured: s.GoodputRatio, Lo: lo, Hi: hi, Samples: n}
	cancelled := s.Outcomes[record.Cancelled]
	_, bestHi := analyze.ProportionCI(good+cancelled, n)
	switch {
	case n == 0:
		c.Outcome = Inconclusive
		c.Reason = "no requests"
	case lo >= limit:
		c.Outcome = Pass
	case hi < limit && !(interrupted && cancelled > 0 && bestHi >= limit):
		c.Outcome = Fail
		c.Reason = fmt.Sprintf("%s–%s with 95%% confidence", pct(lo), pct(hi))
	case hi < limit:
		c.Outcome, c.Cancelled = Inconclusive, true
		c.Reason = fmt.Sprintf("the %d requests surge cut short (interrupted, or ended before they did) decide it", cancelled)
	case good == n:
		c.Outcome, c.TooFew = Inconclusive, true
		c.Reason = fmt.Sprintf("all good bounds it only at ≥ %s; %d arrivals are needed", pct(lo), minForShare(limit))
	default:
		c.Outcome = Inconclusive
		c.Reason = fmt.Sprintf("95%% interval %s–%s straddles the limit", pct(lo), pct(hi))
	}
	return c
}

// minForShare is the fewest arrivals, all good, whose interval's lower
// bound reaches limit: (1 − Confidence)/2 ^ (1/n) ≥ limit.
func minForShare(limit float64) int64 {
	if limit >= 1 {
		return math.MaxInt64
	}
	return int64(math.Ceil(math.Log((1-analyze.Confidence)/2) / math.Log(limit)))
}

func pct(f float64) string {
	s := strconv.FormatFloat(f*100, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// Label is the clause's name for people: "p95 TTFT", "p99 completion",
// "goodput".
func (c Clause) Label() string {
	switch c.Name {
	case ClauseTTFTP95, ClauseBudgetTTFT:
		return "p95 TTFT"
	case ClauseBudgetTPOT:
		return "p95 TPOT"
	case ClauseE2EP99:
		return "p99 completion"
	case ClauseBudgetFailures:
		return "failures"
	}
	return "goodput"
}

// share says whether the clause is on a share (goodput, failures) rather
// than a latency.
func (c Clause) share() bool { return c.Name == ClauseGoodputRatio || c.Name == ClauseBudgetFailures }

// Value is the measured value for people: "2.5s", "> 60s" for a lower
// bound, "96.5%", "n/a" without samples.
func (c Clause) Value() string {
	if c.share() {
		if c.Samples == 0 {
			return "n/a"
		}
		if c.Name == ClauseBudgetFailures {
			return share(c.Measured, c.Limit, true)
		}
		return share(c.Measured, c.Limit, c.Measured >= c.Limit)
	}
	switch {
	case c.Samples == 0 && c.Censored == 0:
		return "n/a"
	case c.Bound:
		return "> " + analyze.FormatMs(c.Measured)
	}
	return analyze.FormatMs(c.Measured)
}

// LimitText is the limit for people: "2s", "99%".
func (c Clause) LimitText() string {
	if c.share() {
		return strconv.FormatFloat(100*c.Limit, 'g', 4, 64) + "%"
	}
	return analyze.FormatMs(c.Limit)
}

// Short is the clause as measured vs limit: "p95 TTFT 2.5s (limit 2s)",
// "p99 completion > 60s (limit 12s)", "goodput 96.5% (limit 99%)".
func (c Clause) Short() string {
	return fmt.Sprintf("%s %s (limit %s)", c.Label(), c.Value(), c.LimitText())
}

// Brief is the clause as measured vs limit with its sample, for a line
// that already says the outcome, and the reason when it did not pass:
// "p95 TTFT 1.5s (limit 2s, n=1,204)", "p99 completion > 60s (limit
// 12s, n=1,000): 42 timeouts (4.2%) put the p99 above the 60s timeout".
func (c Clause) Brief() string {
	s := fmt.Sprintf("%s %s (limit %s, n=%s)", c.Label(), c.Value(), c.LimitText(), analyze.Thousands(c.Samples+c.Censored))
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// share prints a fraction as a percentage with one decimal, or two when
// one would round a failing value onto its limit (98.96% shown as 99.0%
// against a 99% limit would read as a pass).
func share(v, limit float64, pass bool) string {
	s := strconv.FormatFloat(100*v, 'f', 1, 64)
	if !pass {
		if r, _ := strconv.ParseFloat(s, 64); r >= 100*limit {
			s = strconv.FormatFloat(100*v, 'f', 2, 64)
		}
	}
	return s + "%"
}
