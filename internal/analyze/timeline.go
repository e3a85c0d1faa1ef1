package analyze

import (
	"math"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// maxTimelineSamples bounds the timeline's memory (12 days at the default
// 1 s step).
const maxTimelineSamples = 1 << 20

// timelineTail is how long after the last phase end the timeline follows
// requests still waiting or in flight, at least; the per-request timeout
// when it is longer. Records reaching further are clipped and counted in
// Anomalies.TimelineClipped.
const timelineTail = 10 * time.Minute

const noTime = math.MaxInt64

// Sample is one point of the client-side timeline.
type Sample struct {
	TMs                float64 `json:"t_ms"`                  // sample time, ms from the run origin
	InFlight           int64   `json:"in_flight"`             // requests with sent ≤ t < done
	Waiting            int64   `json:"waiting"`               // requests scheduled ≤ t still waiting for their first content token
	OldestWaitingAgeMs float64 `json:"oldest_waiting_age_ms"` // t − scheduled of the oldest of them; 0 if none
}

// timeline accumulates, per sample index j (time j·step), the waiting and
// in-flight counts as difference arrays and the oldest waiting scheduled
// time as range minima. All four slices have the same length.
type timeline struct {
	step       int64
	limit      int64   // sample indexes are < limit
	waitMin    []int64 // min scheduled over finite waits covering sample j
	openMin    []int64 // min scheduled over open-ended waits starting at sample j
	waitDiff   []int64
	flightDiff []int64
}

func newTimeline(step, endNs int64) *timeline {
	return &timeline{step: step, limit: min(maxTimelineSamples, endNs/step+1)}
}

func (t *timeline) grow(n int64) {
	for int64(len(t.waitMin)) < n {
		t.waitMin = append(t.waitMin, noTime)
		t.openMin = append(t.openMin, noTime)
		t.waitDiff = append(t.waitDiff, 0)
		t.flightDiff = append(t.flightDiff, 0)
	}
}

// span returns the sample indexes [js, je) with start ≤ j·step < end
// (je = -1 for an open end), clipped to the timeline bound.
func (t *timeline) span(start, end int64, open bool) (js, je int64, clipped bool) {
	js = max(0, ceilDiv(start, t.step))
	if js >= t.limit {
		return 0, 0, true
	}
	if open {
		return js, -1, false
	}
	je = ceilDiv(end, t.step)
	if je > t.limit {
		je, clipped = t.limit, true
	}
	return js, max(js, je), clipped
}

// add accounts rec and returns 1 if it had to be clipped, else 0.
func (t *timeline) add(rec *record.Record) (clipped int64) {
	const none = record.None
	// Waiting: from the scheduled arrival to the first content token, or to
	// the end of a request that never got one. Drops never wait.
	end, open := rec.FirstTokenNs, false
	switch {
	case end != none:
	case rec.DoneNs != none:
		end = rec.DoneNs
	case rec.Outcome == record.GeneratorDrop:
		end = rec.ScheduledNs
	default:
		open = true
	}
	js, je, c := t.span(rec.ScheduledNs, end, open)
	if c {
		clipped = 1
	}
	switch {
	case open && !c:
		t.grow(js + 1)
		t.openMin[js] = min(t.openMin[js], rec.ScheduledNs)
		t.waitDiff[js]++
	case !open && js < je:
		t.grow(min(je+1, t.limit))
		t.waitDiff[js]++
		if je < t.limit {
			t.waitDiff[je]--
		}
		for j := js; j < je; j++ {
			t.waitMin[j] = min(t.waitMin[j], rec.ScheduledNs)
		}
	}
	// In flight: from sent to done; a sent request that never ended stays in
	// flight until the end of the timeline.
	if rec.SentNs == none {
		return clipped
	}
	js, je, c = t.span(rec.SentNs, rec.DoneNs, rec.DoneNs == none)
	if c {
		clipped = 1
	}
	switch {
	case je < 0 && !c:
		t.grow(js + 1)
		t.flightDiff[js]++
	case js < je:
		t.grow(min(je+1, t.limit))
		t.flightDiff[js]++
		if je < t.limit {
			t.flightDiff[je]--
		}
	}
	return clipped
}

func (t *timeline) merge(b *timeline) {
	t.grow(int64(len(b.waitMin)))
	for j := range b.waitMin {
		t.waitMin[j] = min(t.waitMin[j], b.waitMin[j])
		t.openMin[j] = min(t.openMin[j], b.openMin[j])
		t.waitDiff[j] += b.waitDiff[j]
		t.flightDiff[j] += b.flightDiff[j]
	}
}

// samples returns the timeline from t = 0 through at least endNs.
func (t *timeline) samples(endNs int64) []Sample {
	n := int64(len(t.waitMin))
	if endNs >= 0 {
		n = max(n, min(endNs/t.step+1, t.limit))
	}
	out := make([]Sample, n)
	var waiting, flight int64
	openOldest := int64(noTime)
	for j := range n {
		oldest := int64(noTime)
		if j < int64(len(t.waitMin)) {
			waiting += t.waitDiff[j]
			flight += t.flightDiff[j]
			openOldest = min(openOldest, t.openMin[j])
			oldest = t.waitMin[j]
		}
		oldest = min(oldest, openOldest)
		at := j * t.step
		s := Sample{TMs: nsToMs(at), InFlight: flight, Waiting: waiting}
		if oldest != noTime {
			s.OldestWaitingAgeMs = nsToMs(at - oldest)
		}
		out[j] = s
	}
	return out
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }
