package experiment

import (
	"fmt"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
)

// Early stop of a hopeless capacity step. A step is hopeless when either
//
//  1. its goodput can no longer meet the SLO: with N arrivals planned in
//     the step and an SLO of goodput ≥ g, more than (1 − g)·N requests
//     already missed their deadline, so good/N < g whatever happens next;
//     or
//  2. the target is over-saturated, in the manner of GuideLLM's
//     over-saturation detector: over the step so far, both the number of
//     requests waiting for their first token (sampled at up to 40 instants)
//     and the TTFT from the scheduled arrival (one point per request; a
//     request that never got a first token counts with its end − scheduled,
//     a lower bound) grow — the lower bound of each least-squares slope's
//     95% confidence interval is above zero — and the fitted TTFT at the
//     horizon is already above the SLO's p95 TTFT limit (or the TTFT
//     deadline when the SLO has no TTFT clause). The backlog is growing and
//     the requests still to come will wait longer still.
//
// Both look only at requests whose whole schedule prefix has finished
// (Spec.StopWhen's horizon), so a slow request still in flight is never
// missing from the judgement.
const (
	saturationMinPoints  = 8  // points per series before a slope is trusted
	saturationMaxSamples = 40 // backlog samples over the step
	saturationConfidence = 0.95
)

// hopelessCheck judges a step of the run. StepStart is the measured phase's
// start; Planned its planned arrivals.
type hopelessCheck struct {
	StepStart time.Duration
	Planned   int
	Goodput   float64 // SLO goodput ratio; 0 = not checked
	LimitMs   float64 // TTFT above which an over-saturated step is hopeless
}

// judge returns why the step is hopeless, or "".
func (h hopelessCheck) judge(recs []record.Record, horizon time.Duration) string {
	from := int64(h.StepStart)
	if g := h.Goodput; g > 0 && h.Planned > 0 {
		var bad int
		for i := range recs {
			if recs[i].ScheduledNs >= from && !recs[i].Good {
				bad++
			}
		}
		if float64(bad) > (1-g)*float64(h.Planned)+1e-9 {
			return fmt.Sprintf("goodput can no longer reach %.4g%%: %d of the %d planned requests already missed the deadline", 100*g, bad, h.Planned)
		}
	}
	if why, ok := overSaturated(recs, h.StepStart, horizon, h.LimitMs); ok {
		return why
	}
	return ""
}

// waitEnd is when a request stopped waiting for its first token.
func waitEnd(r *record.Record) int64 {
	switch {
	case r.FirstTokenNs != record.None:
		return r.FirstTokenNs
	case r.DoneNs != record.None:
		return r.DoneNs
	}
	return r.ScheduledNs // a generator drop never waited
}

// overSaturated applies the over-saturation test to the records scheduled
// in [from, horizon).
func overSaturated(recs []record.Record, from, horizon time.Duration, limitMs float64) (string, bool) {
	if horizon <= from || limitMs <= 0 {
		return "", false
	}
	// TTFT from the scheduled arrival, one point per request.
	var tx, ty []float64
	for i := range recs {
		r := &recs[i]
		if r.ScheduledNs < int64(from) || r.ScheduledNs >= int64(horizon) || r.Outcome == record.GeneratorDrop {
			continue
		}
		tx = append(tx, float64(r.ScheduledNs)/1e9)
		ty = append(ty, float64(waitEnd(r)-r.ScheduledNs)/1e6)
	}
	if len(tx) < saturationMinPoints {
		return "", false
	}
	// Requests waiting for their first token, sampled over [from, horizon).
	// waiting(t) = #{scheduled ≤ t} − #{wait end ≤ t}, as every wait ends
	// at or after its start.
	starts, ends := make([]int64, len(recs)), make([]int64, len(recs))
	for i := range recs {
		starts[i], ends[i] = recs[i].ScheduledNs, max(waitEnd(&recs[i]), recs[i].ScheduledNs)
	}
	slices.Sort(starts)
	slices.Sort(ends)
	upTo := func(v []int64, t int64) int {
		n, _ := slices.BinarySearch(v, t+1)
		return n
	}
	span := horizon - from
	step := max(span/saturationMaxSamples, 100*time.Millisecond)
	var bx, by []float64
	for t := from; t < horizon; t += step {
		n := upTo(starts, int64(t)) - upTo(ends, int64(t))
		bx, by = append(bx, t.Seconds()), append(by, float64(n))
	}
	if len(bx) < saturationMinPoints {
		return "", false
	}
	tt, ok1 := fitTrend(tx, ty, saturationConfidence)
	bt, ok2 := fitTrend(bx, by, saturationConfidence)
	if !ok1 || !ok2 || tt.CILow <= 0 || bt.CILow <= 0 {
		return "", false
	}
	now := tt.At(horizon.Seconds())
	if now <= limitMs {
		return "", false
	}
	return fmt.Sprintf("over-saturated: requests waiting for a first token grow by %.2f/s (95%% CI %.2f to %.2f) and TTFT from the schedule by %s per second, now about %s (limit %s)",
		bt.Slope, bt.CILow, bt.CIHigh, analyze.FormatMs(tt.Slope), analyze.FormatMs(now), analyze.FormatMs(limitMs)), true
}
