package analyze

import "fmt"

// RecoveryWindow is one window's evidence for the recovery rule
// (docs/method.md §3): how many of its arrivals count, and how many of
// those were bad — slower than the threshold, or failed.
type RecoveryWindow struct {
	Index   int64   `json:"index"`    // k: the window covers [burst end + k·W, burst end + (k+1)·W); negative before the burst end
	StartMs float64 `json:"start_ms"` // from the run origin
	EndMs   float64 `json:"end_ms"`
	Phase   string  `json:"phase"`
	Offered int64   `json:"offered"`
	// Judged counts the arrivals the rule looks at: the ok requests with
	// a value of the metric, and the failed ones (errors, 429s,
	// timeouts, drops). Requests cancelled by surge, and ok ones without
	// the metric (an empty answer has no TTFT), are left out.
	Judged int64 `json:"judged"`
	// Bad counts the judged arrivals that were slower than the threshold
	// or failed; Slow is the slow ones, Failed the failed ones.
	Bad    int64 `json:"bad"`
	Slow   int64 `json:"slow"`
	Failed int64 `json:"failed"`
	// P99Ms is the window's p99 of the metric (nearest rank, timeouts
	// ranked above): shown beside the counts, not what decides.
	P99Ms       float64 `json:"p99_ms"`
	P99Censored bool    `json:"p99_censored"`
}

// Recovery is what the recovery rule needs of a burst run: the baseline's
// reference (its p99 of the metric and the threshold 1 + Tolerance above
// it, its share of bad requests), and the same counts for every window
// from the baseline's first to the last observed. internal/judge decides
// from it when the run recovered.
type Recovery struct {
	Measured bool   `json:"measured"`         // false when the rule cannot be applied (see Reason)
	Reason   string `json:"reason,omitempty"` // why not
	Metric   Metric `json:"metric"`
	// BaselineP99Ms is the baseline phase's p99 of the metric and
	// BaselineP99 its distribution's interval; ThresholdMs = BaselineP99Ms
	// × (1 + Tolerance).
	BaselineP99Ms   float64  `json:"baseline_p99_ms"`
	BaselineP99     Interval `json:"baseline_p99_ci"`
	BaselineSamples int64    `json:"baseline_samples"`
	ThresholdMs     float64  `json:"threshold_ms"`
	Tolerance       float64  `json:"tolerance"`
	// BaselineJudged, BaselineBad and BaselineFailed are the baseline
	// phase's counts, as a window's.
	BaselineJudged int64   `json:"baseline_judged"`
	BaselineBad    int64   `json:"baseline_bad"`
	BaselineFailed int64   `json:"baseline_failed"`
	Consecutive    int     `json:"consecutive"`
	ResolutionMs   float64 `json:"resolution_ms"` // the window length
	BurstEndMs     float64 `json:"burst_end_ms"`
	ObservedMs     float64 `json:"observed_ms"` // how long after the burst end the run observed
	BaselineMs     float64 `json:"baseline_ms"` // the baseline phase's length
	// Baseline holds the baseline phase's windows (the rule's reference
	// variation), Windows those from the burst end on (k ≥ 0) that start
	// before the run's end.
	Baseline []RecoveryWindow `json:"baseline_windows"`
	Windows  []RecoveryWindow `json:"windows"`
}

// recovery measures the recovery rule's evidence on the recovery window
// series, aligned to the burst end.
func (a *Analyzer) recovery(r *Result) Recovery {
	rule := a.cfg.Recovery
	rec := Recovery{
		Metric: rule.Metric, Tolerance: rule.Tolerance, Consecutive: rule.Consecutive,
		ResolutionMs: durMs(rule.Window), Windows: []RecoveryWindow{}, Baseline: []RecoveryWindow{},
	}
	switch {
	case a.burst < 0:
		rec.Reason = fmt.Sprintf("no phase named %q: nothing to recover from", a.cfg.BurstPhase)
	case a.baseline < 0:
		rec.Reason = fmt.Sprintf("no phase named %q: no baseline to recover to", a.cfg.BaselinePhase)
	}
	if rec.Reason != "" {
		return rec
	}
	burstEnd := int64(a.cfg.Phases[a.burst].End)
	rec.BurstEndMs = nsToMs(burstEnd)
	rec.ObservedMs = nsToMs(a.runEnd - burstEnd)
	base := r.Phases[a.baseline]
	bd := base.Latency.Get(rule.Metric)
	switch {
	case bd.Count == 0 && bd.Censored > 0:
		rec.Reason = fmt.Sprintf("the %s phase's p99 %s is unknown: all %d of its requests were censored (%s)", base.Name, rule.Metric, bd.Censored, censorWhy(bd))
	case bd.Count == 0:
		rec.Reason = fmt.Sprintf("the %s phase has no %s samples", base.Name, rule.Metric)
	case bd.P99Censored:
		rec.Reason = fmt.Sprintf("the %s phase's p99 %s is unknown (%s): %s", base.Name, rule.Metric, bd.Text(Q99), censorWhy(bd))
	}
	if rec.Reason != "" {
		return rec
	}
	rec.Measured = true
	rec.BaselineP99Ms, rec.BaselineP99, rec.BaselineSamples = bd.P99Ms, bd.P99CI, bd.Count
	rec.ThresholdMs = bd.P99Ms * (1 + rule.Tolerance)
	threshold := int64(rec.ThresholdMs * 1000) // µs
	mi := metricIndex(rule.Metric)
	timeoutMs := durMs(a.cfg.Timeout)
	bp := a.cfg.Phases[a.baseline]
	rec.BaselineMs = durMs(bp.End - bp.Start)
	lo, hi := a.recov.index(int64(bp.Start)), a.recov.index(a.runEnd-1)
	for k := lo; k <= hi; k++ {
		start, end := a.recov.bounds(k)
		inBase := start >= int64(bp.Start) && end <= int64(bp.End)
		if !inBase && k < 0 {
			continue
		}
		w := RecoveryWindow{Index: k, StartMs: nsToMs(start), EndMs: nsToMs(end)}
		if pi := a.phaseOf(start); pi >= 0 {
			w.Phase = a.cfg.Phases[pi].Name
		}
		if ac := a.recov.accs[k]; ac != nil {
			w.count(ac, mi, threshold, timeoutMs)
		}
		if inBase {
			rec.Baseline = append(rec.Baseline, w)
			rec.BaselineJudged += w.Judged
			rec.BaselineBad += w.Bad
			rec.BaselineFailed += w.Failed
		}
		if k >= 0 {
			rec.Windows = append(rec.Windows, w)
		}
	}
	return rec
}

// count fills w from the window's accumulator: the ok values of metric mi
// above threshold (µs) are slow, every failure (not ok, not cancelled) is
// failed.
func (w *RecoveryWindow) count(ac *acc, mi int, threshold int64, timeoutMs float64) {
	o := &ac.outcomes
	w.Offered = ac.offered()
	w.Failed = w.Offered - o[slotOK] - o[slotCancelled]
	if h := ac.ruleOK.h; h != nil {
		n := h.TotalCount()
		w.Slow = n - countAtOrBelow(h, n, threshold, ac.ruleOK.max)
		w.Judged = n + w.Failed
	} else {
		w.Judged = w.Failed
	}
	w.Bad = w.Slow + w.Failed
	d := ac.m[mi].dist(ac.m[mi].timeouts, ac.m[mi].cancelled, timeoutMs)
	w.P99Ms, w.P99Censored = d.P99Ms, d.P99Censored
}

// countAtOrBelow is how many of h's n values are at most v (µs), as the
// percentiles read them (the highest equivalent value, or the exact
// maximum): the largest rank r whose value is ≤ v, by bisection.
func countAtOrBelow(h hist, n, v, maxV int64) int64 {
	at := func(r int64) int64 {
		x := h.ValueAtPercentilesSlice([]float64{(float64(r) - 0.25) / float64(n) * 100})[0]
		return min(x, maxV)
	}
	if n == 0 || at(1) > v {
		return 0
	}
	a, b := int64(1), n // at(a) ≤ v
	for a < b {
		m := a + (b-a+1)/2
		if at(m) <= v {
			a = m
		} else {
			b = m - 1
		}
	}
	return a
}

// censorWhy says what made a percentile of d unknown.
func censorWhy(d Dist) string {
	switch {
	case d.Interrupted && d.CensorMs > 0:
		return "too many timeouts and requests cancelled in flight"
	case d.Interrupted:
		return "too many requests cancelled in flight (interrupted)"
	}
	return "too many timeouts"
}
