// Package judge decides: from the measurements of internal/analyze it
// computes every verdict surge reports — the SLO per phase and overall,
// a sweep level's latency budget, the recovery after a burst with the
// engine queue's drain beside it, a soak's drift, the diagnosis of a run and the early
// stop of an unusable target — as typed values that carry their
// evidence: the measured value, its sample, its interval, the rule's
// limit, and the reason when it did not pass. Renderers print these
// values; none decides anything itself.
//
// # Outcomes
//
// A clause PASSes when its 95 % interval (analyze.Interval for a
// percentile, analyze.ProportionCI for a share) lies within the limit,
// FAILs when it lies beyond it, and is INCONCLUSIVE otherwise, with the
// reason. A percentile ≤ limit needs an upper bound: from 368 values for
// a P99, 72 for a P95 (MinForUpperBound); a share ≥ limit from
// ln(0.025)/ln(limit) arrivals all good (368 for 99 %). Several clauses:
// FAIL over INCONCLUSIVE over PASS (Worse). A run cut short reports a
// verdict that did not fail as PARTIAL; a clause only the requests an
// interrupt cancelled decide is INCONCLUSIVE and marked Cancelled.
//
// # Recovery
//
// With n the window's judged requests and k its bad ones (slower than
// 1.1 × the baseline's P99, or failed: analyze.RecoveryWindow), and
// p₀ = RecoveryP99Share (0.01) + the baseline's failure share:
//
//	slow       P(Binomial(n, p₀) ≥ k) ≤ RecoveryAlpha (0.001)
//	recovered  not slow, and n ≥ MinJudged
//	undecided  not slow, n < MinJudged
//
// MinJudged is the smallest n at which a window whose bad share were
// max(RecoveryDetect, 3 p₀) (10 % at p₀ = 1 %) is called slow with even
// odds: 37 at the defaults. Recovered (PASS) at the first window that
// starts Consecutive (3) recovered windows; the earliest consistent time
// counts undecided windows as recovered; INCONCLUSIVE with only the
// earliest; FAIL when neither came while watched. A baseline whose own
// windows the test calls slow more than RecoveryBaselineNoise (one in ten)
// of the time is no reference: not judged; nor is a baseline shorter
// than Consecutive windows. A watch that ends inside a run of windows
// that are not slow, before it is Consecutive long, is INCONCLUSIVE: FAIL
// needs the last window watched to be slow. The queue's drain is the first
// scrape after the burst end from which the engine's waiting gauge stays
// at or below the baseline's highest for a window.
//
// # Causes before hypotheses (Diagnose, Unusable)
//
// A cause no load explains (analyze.Fault: unreachable, not authorized,
// not an inference endpoint, refused as invalid, protocol violation,
// quota; "no response" only when nothing was answered) at DiagCauseShare
// (5 %) of the judged arrivals is the diagnosis's mode before any mode of
// load, and then no hypothesis about load is offered. Unusable stops a
// live run whose first UnusableFirst (20) requests that ended — or
// UnusableMin (5) once UnusableAfter (10 s) of the schedule passed — all
// failed by such a cause.
//
// # Drift (TestDrift)
//
// A soak's window series (x = window mid-time in hours, y = e.g. p95
// completion in ms) drifts when the slope's interval (analyze.FitTrend)
// excludes 0 and the fitted change over the run, b·(x_last − x_first), is
// at least the series' threshold: a fraction of ȳ for latencies, an
// absolute amount for rates and usage. A series needs MinDriftWindows (6)
// windows with values; with none tested the drift is INCONCLUSIVE.
package judge
