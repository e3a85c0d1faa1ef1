package analyze

import (
	"fmt"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// The over-saturation test's settings (see OverSaturated).
const (
	saturationMinPoints     = 8                      // points per series before a slope is trusted
	saturationMaxSamples    = 40                     // backlog samples over the step, at most
	saturationMinSampleStep = 100 * time.Millisecond // backlog samples are at least this far apart
	saturationConfidence    = 0.95                   // of both slopes' intervals
)

// Hopeless judges whether a capacity step run so far can still pass, so
// that a step which cannot is stopped early. A step is hopeless when either
//
//  1. its goodput can no longer meet the SLO: with N = Planned arrivals
//     planned in the step and an SLO of goodput ≥ g (Goodput), more than
//     (1 − g)·N requests scheduled at or after StepStart already missed
//     their deadline (record.Good false), so good/N < g whatever happens
//     next; or
//  2. the target is over-saturated (OverSaturated with LimitMs).
//
// Both are meant to look only at requests whose whole schedule prefix has
// finished (the horizon given to Judge), so a slow request still in flight
// is never missing from the judgement. The zero value judges nothing.
type Hopeless struct {
	StepStart time.Duration // the measured phase's start, from the run origin
	Planned   int           // arrivals planned in the step; 0 = goodput not checked
	Goodput   float64       // SLO goodput ratio g (0..1); 0 = goodput not checked
	LimitMs   float64       // TTFT (ms) above which an over-saturated step is hopeless: the SLO's p95 TTFT limit, else the TTFT deadline; 0 = not checked
}

// Judge returns why the step is hopeless given the records so far, or ""
// when it may still pass. horizon bounds the records the over-saturation
// test looks at (those scheduled in [StepStart, horizon)); the goodput
// test counts every record scheduled at or after StepStart.
func (h Hopeless) Judge(recs []record.Record, horizon time.Duration) string {
	w := h.Watch()
	for i := range recs {
		w.Add(&recs[i])
	}
	return w.Judge(horizon)
}

// HopelessWatch is Hopeless fed with records as they come (Add) and asked
// at a horizon (Judge), as a live run's stop check asks it. It keeps the
// goodput count, the latest observation and, of each record that still
// waited for its first token at or after StepStart, its scheduled and wait
// end times (16 bytes): a step's own requests, never the run's.
type HopelessWatch struct {
	h    Hopeless
	bad  int
	last int64
	n    int
	pts  []satPoint
}

// satPoint is what the over-saturation test needs of one record.
type satPoint struct {
	sched, wait int64 // scheduled time and wait end (waitEnd), ns
	drop        bool  // a generator drop: no TTFT point
}

// Watch returns an empty HopelessWatch for h.
func (h Hopeless) Watch() *HopelessWatch { return &HopelessWatch{h: h} }

// StepStart is the watched step's start (Hopeless.StepStart).
func (w *HopelessWatch) StepStart() time.Duration { return w.h.StepStart }

// Add accounts one record; it does not keep r.
func (w *HopelessWatch) Add(r *record.Record) {
	from := int64(w.h.StepStart)
	end := waitEnd(r)
	w.n++
	w.last = max(w.last, r.ScheduledNs, end)
	if r.ScheduledNs >= from && !r.Good {
		w.bad++
	}
	if r.ScheduledNs >= from || end >= from {
		// A request whose wait ended before StepStart adds one to both
		// counts of every backlog sample: it changes none.
		w.pts = append(w.pts, satPoint{r.ScheduledNs, end, r.Outcome == record.GeneratorDrop && !r.Cause.Worker()})
	}
}

// Judge is Hopeless.Judge of the records added.
func (w *HopelessWatch) Judge(horizon time.Duration) string {
	h := w.h
	if g := h.Goodput; g > 0 && h.Planned > 0 {
		if float64(w.bad) > (1-g)*float64(h.Planned)+1e-9 {
			return fmt.Sprintf("goodput can no longer reach %.4g%%: %d of the %d planned requests already missed the deadline", 100*g, w.bad, h.Planned)
		}
	}
	if why, ok := overSaturated(w.pts, w.n, w.last, h.StepStart, horizon, h.LimitMs); ok {
		return why
	}
	return ""
}

// waitEnd is when a request stopped waiting for its first token: its first
// content token, else its end (done), else its scheduled time (a generator
// drop never waited).
func waitEnd(r *record.Record) int64 {
	switch {
	case r.FirstTokenNs != record.None:
		return r.FirstTokenNs
	case r.DoneNs != record.None:
		return r.DoneNs
	}
	return r.ScheduledNs // a generator drop never waited
}

// OverSaturated applies the over-saturation test, in the manner of
// GuideLLM's over-saturation detector, to the records scheduled in
// [from, horizon) (offsets from the run origin). It fits two least-squares
// lines (FitTrend, saturationConfidence):
//
//	TTFT:    one point per request (generator drops left out):
//	         x = scheduled (s), y = wait end − scheduled (ms), where the wait
//	         end is the first content token, or for a request that never got
//	         one its end (done) — then y is a lower bound
//	backlog: at t = from, from + Δ, from + 2Δ, … < horizon,
//	         Δ = max((horizon − from) / saturationMaxSamples, saturationMinSampleStep):
//	         x = t (s), y = waiting(t) = #{scheduled ≤ t} − #{max(wait end, scheduled) ≤ t}
//	         over every record (requests waiting for their first token)
//
// and reports the target over-saturated (ok true, why saying by how much)
// when all of these hold:
//
//	both series have at least saturationMinPoints points
//	the lower bound of both slopes' confidence intervals is > 0   (both grow)
//	the fitted TTFT at the horizon, a + b·horizon, is > limitMs
//
// The backlog is growing and the requests still to come will wait longer
// still. ok is false, and why "", when horizon ≤ from or limitMs ≤ 0.
func OverSaturated(recs []record.Record, from, horizon time.Duration, limitMs float64) (why string, ok bool) {
	var last int64
	pts := make([]satPoint, len(recs))
	for i := range recs {
		r := &recs[i]
		pts[i] = satPoint{r.ScheduledNs, waitEnd(r), r.Outcome == record.GeneratorDrop && !r.Cause.Worker()}
		last = max(last, r.ScheduledNs, pts[i].wait)
	}
	return overSaturated(pts, len(recs), last, from, horizon, limitMs)
}

// overSaturated is OverSaturated over the points of n records (those
// that can matter: any whose wait ended before from may be left out),
// last the latest scheduled or wait-end time of all n.
func overSaturated(pts []satPoint, n int, last int64, from, horizon time.Duration, limitMs float64) (why string, ok bool) {
	// Past the last observation nothing changes: a horizon beyond it (a
	// virtual run whose every arrival was sent passes "never") is the
	// moment after it, so the backlog samples stay bounded.
	if n > 0 && int64(horizon) > last {
		horizon = time.Duration(last) + 1
	}
	if horizon <= from || limitMs <= 0 {
		return "", false
	}
	// TTFT from the scheduled arrival, one point per request.
	var tx, ty []float64
	for _, p := range pts {
		if p.sched < int64(from) || p.sched >= int64(horizon) || p.drop {
			continue
		}
		tx = append(tx, float64(p.sched)/1e9)
		ty = append(ty, float64(p.wait-p.sched)/1e6)
	}
	if len(tx) < saturationMinPoints {
		return "", false
	}
	// Requests waiting for their first token, sampled over [from, horizon).
	// waiting(t) = #{scheduled ≤ t} − #{wait end ≤ t}, as every wait ends
	// at or after its start.
	starts, ends := make([]int64, len(pts)), make([]int64, len(pts))
	for i, p := range pts {
		starts[i], ends[i] = p.sched, max(p.wait, p.sched)
	}
	slices.Sort(starts)
	slices.Sort(ends)
	upTo := func(v []int64, t int64) int {
		n, _ := slices.BinarySearch(v, t+1)
		return n
	}
	span := horizon - from
	step := max(span/saturationMaxSamples, saturationMinSampleStep)
	var bx, by []float64
	for t := from; t < horizon; t += step {
		n := upTo(starts, int64(t)) - upTo(ends, int64(t))
		bx, by = append(bx, t.Seconds()), append(by, float64(n))
	}
	if len(bx) < saturationMinPoints {
		return "", false
	}
	tt, ok1 := FitTrend(tx, ty, saturationConfidence)
	bt, ok2 := FitTrend(bx, by, saturationConfidence)
	if !ok1 || !ok2 || tt.CILow <= 0 || bt.CILow <= 0 {
		return "", false
	}
	now := tt.At(horizon.Seconds())
	if now <= limitMs {
		return "", false
	}
	return fmt.Sprintf("over-saturated: requests waiting for a first token grow by %.2f/s (95%% CI %.2f to %.2f) and TTFT from the schedule by %s per second, now about %s (limit %s)",
		bt.Slope, bt.CILow, bt.CIHigh, FormatMs(tt.Slope), FormatMs(now), FormatMs(limitMs)), true
}
