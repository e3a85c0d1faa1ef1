package analyze

import (
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Settings of MeasuredCapacity.
const (
	// capacityMinBacklogShare is the share of the burst's arrivals that must
	// have been waiting at the backlog's peak for it to say anything about
	// the capacity (below capacity only the few in prefill ever wait).
	capacityMinBacklogShare = 0.1
	// capacityMinInterval is the shortest backlog MeasuredCapacity measures
	// a completion rate over.
	capacityMinInterval = 5 * time.Second
	// capacitySaturatedShare is the share of the burst's arrival rate at
	// or above which a measured completion rate shows a target that kept
	// up, not its capacity.
	capacitySaturatedShare = 0.9
)

// MeasuredCapacity estimates the capacity μ (requests/s) of the target from
// a run whose burst built a backlog: while requests were waiting, the
// service completed them as fast as it could, so its completion rate then
// is μ. a is the run's analysis (its timeline and its baseline and burst
// phases, named by a.Settings or else "baseline" and "burst"); doneOK are
// the completion times (done, ns from the run origin, in any order) of the
// successful requests; burstStart and burstEnd bound the burst (offsets
// from the run origin).
//
// With waiting(t) the timeline's requests waiting for a first token at
// sample t (see the package documentation):
//
//	w̄    = mean of waiting(t) over the samples in the baseline phase  (requests)
//	θ    = max(2·w̄, w̄ + 3), the backlog threshold                      (requests)
//	t₁   = burstStart + the baseline's p50 e2e_send: one typical completion
//	       time after the burst began (earlier completions are baseline requests)
//	t₂   = the first sample t ≥ burstStart with t > burstEnd and waiting(t) ≤ θ:
//	       the backlog is back to its baseline level
//	peak = max waiting(t) over the samples burstStart ≤ t ≤ t₂             (requests)
//	μ    = #{doneOK in [t₁, t₂)} / (t₂ − t₁)                               (requests/s)
//
// ok is false, and μ 0, when that says nothing about μ: no baseline phase,
// no timeline or no timeline sample in the baseline; the backlog never fell
// back to θ after the burst (no t₂); no real backlog built (peak ≤ θ, or
// peak < capacityMinBacklogShare × the burst phase's offered requests, 0
// without a burst phase); it lasted less than capacityMinInterval
// (t₂ − t₁ < 5 s); no request completed in [t₁, t₂); or μ ≥ 90 % of the
// burst phase's offered rate: the target kept up (see MeasureCapacity).
func MeasuredCapacity(a *Result, doneOK []int64, burstStart, burstEnd time.Duration) (mu float64, ok bool) {
	c := MeasureCapacity(a, doneOK, burstStart, burstEnd)
	return c.Mu, c.OK
}

// NotSaturated is Capacity.Why when the target kept up with the burst.
const NotSaturated = "μ unknown: the burst did not saturate the target"

// Capacity is the outcome of MeasureCapacity: μ in requests/s when OK,
// else Why it says nothing about μ.
type Capacity struct {
	Mu  float64
	OK  bool
	Why string
}

// DoneOK returns the done times (ns, ascending) of the successful
// requests of recs that ended at or after fromNs: what MeasureCapacity
// counts for a burst starting at fromNs (it counts nothing earlier), read
// in one pass without keeping the records.
func DoneOK(recs record.Source, fromNs int64) ([]int64, error) {
	var done []int64
	err := recs.Each(func(r *record.Record) error {
		if r.Outcome == record.OK && r.DoneNs != record.None && r.DoneNs >= fromNs {
			done = append(done, r.DoneNs)
		}
		return nil
	})
	slices.Sort(done)
	return done, err
}

// MeasureCapacity is MeasuredCapacity with the reason when μ is unknown.
// Beyond MeasuredCapacity's conditions, a target that completed requests
// at capacitySaturatedShare (90 %) or more of the burst's arrival rate
// during the backlog was not saturated: its completion rate is what it was
// offered, not what it can do, and a prediction from it would be circular
// (μ ≥ the burst rate predicts no backlog at all). Why is then
// NotSaturated.
func MeasureCapacity(a *Result, doneOK []int64, burstStart, burstEnd time.Duration) Capacity {
	mu, ok := measuredCapacity(a, doneOK, burstStart, burstEnd)
	if !ok {
		return Capacity{Why: "μ unknown: the burst built no backlog to measure it from"}
	}
	burstName := a.Settings.BurstPhase
	if burstName == "" {
		burstName = defaultBurstPhase
	}
	if b, found := a.Phase(burstName); found && b.OfferedRPS > 0 && mu >= capacitySaturatedShare*b.OfferedRPS {
		return Capacity{Why: NotSaturated}
	}
	return Capacity{Mu: mu, OK: true}
}

func measuredCapacity(a *Result, doneOK []int64, burstStart, burstEnd time.Duration) (mu float64, ok bool) {
	if a == nil {
		return 0, false
	}
	baseName, burstName := a.Settings.BaselinePhase, a.Settings.BurstPhase
	if baseName == "" {
		baseName = defaultBaselinePhase
	}
	if burstName == "" {
		burstName = defaultBurstPhase
	}
	base, found := a.Phase(baseName)
	if !found || len(a.Timeline) == 0 {
		return 0, false
	}
	var sum, n float64
	for _, smp := range a.Timeline {
		if smp.TMs >= base.StartMs && smp.TMs < base.EndMs {
			sum += float64(smp.Waiting)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	threshold := max(2*sum/n, sum/n+3)
	t1 := burstStart + time.Duration(base.Latency.E2ESend.P50Ms*1e6)
	t2 := time.Duration(-1)
	peak := 0.0
	for _, smp := range a.Timeline {
		t := time.Duration(smp.TMs * 1e6)
		if t < burstStart {
			continue
		}
		peak = max(peak, float64(smp.Waiting))
		if t > burstEnd && float64(smp.Waiting) <= threshold {
			t2 = t
			break
		}
	}
	// A real backlog: at its peak a tenth of the burst's arrivals were
	// still waiting (below capacity only the few in prefill ever wait).
	burst, _ := a.Phase(burstName)
	if t2 < 0 || peak <= threshold || peak < capacityMinBacklogShare*float64(burst.Offered) || t2-t1 < capacityMinInterval {
		return 0, false
	}
	done := 0
	for _, d := range doneOK {
		if time.Duration(d) >= t1 && time.Duration(d) < t2 {
			done++
		}
	}
	if done == 0 {
		return 0, false
	}
	return float64(done) / (t2 - t1).Seconds(), true
}
