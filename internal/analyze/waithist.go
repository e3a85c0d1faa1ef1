package analyze

import (
	"math/big"
	"time"
)

// WaitHist accumulates one phase's engine queue waits as they happen: for
// the engine model (virtual time), each admitted request's admission time
// minus its arrival. The waits go into a histogram of the analysis's
// geometry (µs, 1 µs … 1 h, 3 significant digits) with their count,
// exact sum and maximum beside it, so it holds a fixed size whatever the
// run's length, and two merge losslessly (Merge). Its zero value is empty;
// a nil *WaitHist has no observations.
//
// Its summary (QueueWait) is the one of the other percentiles of surge
// (docs/metrics.md "Percentiles"): the mean exact, pX the nearest rank
// r = ⌈p·n⌉ taken from the histogram, the highest value equivalent to the
// r-th smallest wait (truncated to µs) or the exact maximum, whichever is
// lower — never below the true order statistic's µs and at most 0.1 %
// above it.
type WaitHist struct {
	m     metricAcc // µs
	sumNs u128      // Σ waits, ns, exact
}

// Add records one wait. A negative wait counts as 0 and one above an
// hour as an hour (the histogram's range).
func (w *WaitHist) Add(d time.Duration) {
	d = min(max(d, 0), time.Hour)
	w.m.add(int64(d/time.Microsecond), false)
	w.sumNs.add(u128{lo: uint64(d)})
}

// Merge adds src's waits to w, as if each had been added to w.
func (w *WaitHist) Merge(src *WaitHist) {
	if src == nil {
		return
	}
	w.m.merge(&src.m, false)
	w.sumNs.add(src.sumNs)
}

// Count is the number of waits recorded.
func (w *WaitHist) Count() int64 {
	if w == nil || w.m.h == nil {
		return 0
	}
	return w.m.h.TotalCount()
}

// QueueWait summarises the waits in ms: not Available, with Reason "no
// observations", when there are none.
func (w *WaitHist) QueueWait() QueueWait {
	n := w.Count()
	if n == 0 {
		return QueueWait{Reason: "no observations"}
	}
	d := w.m.dist(0, 0, 0)
	mean, _ := new(big.Float).Quo(new(big.Float).SetInt(w.sumNs.big()), big.NewFloat(float64(n)*1e6)).Float64()
	return QueueWait{Available: true, Count: float64(n), MeanMs: mean, P50Ms: d.P50Ms, P95Ms: d.P95Ms, P99Ms: d.P99Ms}
}
