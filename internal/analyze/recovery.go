package analyze

import "fmt"

// RecoveryWindow is one window after the burst as the recovery rule saw it.
type RecoveryWindow struct {
	Index       int64   `json:"index"`    // k: the window covers [burst end + k·W, burst end + (k+1)·W)
	StartMs     float64 `json:"start_ms"` // from the run origin
	EndMs       float64 `json:"end_ms"`
	Offered     int64   `json:"offered"`
	Samples     int64   `json:"samples"` // values of the recovery metric
	P99Ms       float64 `json:"p99_ms"`
	P99Censored bool    `json:"p99_censored"`
	FailureRate float64 `json:"failure_rate"`
	Qualifies   bool    `json:"qualifies"`
}

// Recovery is the verdict of the recovery rule (docs/method.md §3) on a burst.
type Recovery struct {
	Judged              bool             `json:"judged"`           // false when the rule could not be applied (see Reason)
	Reason              string           `json:"reason,omitempty"` // why it was not judged
	Metric              Metric           `json:"metric"`
	BaselineP99Ms       float64          `json:"baseline_p99_ms"`
	ThresholdMs         float64          `json:"threshold_ms"` // baseline P99 × (1 + tolerance)
	BaselineFailureRate float64          `json:"baseline_failure_rate"`
	MaxFailureRate      float64          `json:"max_failure_rate"` // baseline failure rate + failure tolerance
	Consecutive         int              `json:"consecutive"`
	ResolutionMs        float64          `json:"resolution_ms"` // the window length: recovery time is a multiple of it
	BurstEndMs          float64          `json:"burst_end_ms"`
	ObservedMs          float64          `json:"observed_ms"` // how long after the burst end the run observed
	Recovered           bool             `json:"recovered"`
	RecoveryTimeMs      float64          `json:"recovery_time_ms"` // start of the first window of the qualifying run − burst end
	Windows             []RecoveryWindow `json:"windows"`
	Message             string           `json:"message"`
}

// recovery applies the recovery rule to windows (aligned to the burst end).
func (a *Analyzer) recovery(r *Result, windows []WindowResult) Recovery {
	rule := a.cfg.Recovery
	rec := Recovery{
		Metric:       rule.Metric,
		Consecutive:  rule.Consecutive,
		ResolutionMs: durMs(rule.Window),
		Windows:      []RecoveryWindow{},
	}
	switch {
	case a.burst < 0:
		rec.Reason = fmt.Sprintf("no phase named %q: nothing to recover from", a.cfg.BurstPhase)
	case a.baseline < 0:
		rec.Reason = fmt.Sprintf("no phase named %q: no baseline to recover to", a.cfg.BaselinePhase)
	}
	if rec.Reason != "" {
		rec.Message = "recovery not judged: " + rec.Reason
		return rec
	}
	burstEnd := int64(a.cfg.Phases[a.burst].End)
	rec.BurstEndMs = nsToMs(burstEnd)
	rec.ObservedMs = nsToMs(a.runEnd - burstEnd)
	base := r.Phases[a.baseline]
	bd := base.Latency.Get(rule.Metric)
	switch {
	case bd.Count == 0:
		rec.Reason = fmt.Sprintf("the %s phase has no %s samples", base.Name, rule.Metric)
	case bd.P99Censored:
		rec.Reason = fmt.Sprintf("the %s phase's p99 %s is unknown (%s): %s", base.Name, rule.Metric, bd.Text(Q99), censorWhy(bd))
	}
	if rec.Reason != "" {
		rec.Message = "recovery not judged: " + rec.Reason
		return rec
	}
	rec.Judged = true
	rec.BaselineP99Ms = bd.P99Ms
	rec.ThresholdMs = bd.P99Ms * (1 + rule.Tolerance)
	rec.BaselineFailureRate = base.FailureRate
	rec.MaxFailureRate = base.FailureRate + rule.FailureTolerance

	found, run := -1, 0
	for _, w := range windows {
		if w.Index < 0 || burstEnd+w.Index*int64(rule.Window) >= a.runEnd {
			continue
		}
		d := w.Latency.Get(rule.Metric)
		rw := RecoveryWindow{
			Index: w.Index, StartMs: w.StartMs, EndMs: w.EndMs, Offered: w.Offered,
			Samples: d.Count, P99Ms: d.P99Ms, P99Censored: d.P99Censored, FailureRate: w.FailureRate,
		}
		rw.Qualifies = w.Offered > 0 && d.Count > 0 && !d.P99Censored &&
			d.P99Ms <= rec.ThresholdMs && w.FailureRate <= rec.MaxFailureRate
		rec.Windows = append(rec.Windows, rw)
		if found >= 0 {
			continue
		}
		if rw.Qualifies {
			run++
		} else {
			run = 0
		}
		if run == rule.Consecutive {
			found = len(rec.Windows) - run
		}
	}
	if found >= 0 {
		first := rec.Windows[found]
		rec.Recovered = true
		rec.RecoveryTimeMs = first.StartMs - rec.BurstEndMs
		rec.Message = fmt.Sprintf("recovered %s after the burst ended: %d windows in a row from then on had p99 %s <= %s (baseline %s + %s) and failure rate <= %s (resolution %s)",
			FormatMs(rec.RecoveryTimeMs), rule.Consecutive, rule.Metric, FormatMs(rec.ThresholdMs),
			FormatMs(rec.BaselineP99Ms), pct(rule.Tolerance), pct(rec.MaxFailureRate), FormatMs(rec.ResolutionMs))
		return rec
	}
	rec.Message = fmt.Sprintf("did not recover within the planned window: observed %s after the burst ended (%d windows of %s) and no %d windows in a row had p99 %s <= %s with failure rate <= %s",
		FormatMs(rec.ObservedMs), len(rec.Windows), FormatMs(rec.ResolutionMs), rule.Consecutive, rule.Metric,
		FormatMs(rec.ThresholdMs), pct(rec.MaxFailureRate))
	return rec
}
