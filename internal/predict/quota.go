package predict

import (
	"fmt"
	"math"
	"time"
)

// predictQuota steps the model with a quota in front of the engine
// (package doc, "Quotas"): every 10 ms the token bucket refills at
// QuotaRate up to QuotaBurst, passes what waits at the gateway as far as
// its stock allows, turns away what the gateway's queue cannot hold, and
// the engine serves its own backlog at μ (with QueueLimit, if any). The
// backlog is the gateway's queue plus the engine's.
func predictQuota(p Params) Prediction { return stepQuota(p, nil) }

// stepQuota is predictQuota, calling observe (when not nil) with the
// backlog after every step.
func stepQuota(p Params, observe func(t, backlog float64)) Prediction {
	pr := Prediction{Model: p.Model(), Params: p}
	end := p.BurstLen.Seconds()
	segs := p.segments()
	last := p.lastChange()
	through := math.Min(p.QuotaRate, p.finalMu()) // what reaches completion in the end
	pr.DrainRate = through - p.Lambda
	horizon := last + 3600
	if pr.DrainRate > 0 {
		horizon += (p.QuotaQueue + p.QueueLimit + p.BurstRate*end) / pr.DrainRate
	}
	dt := math.Max(0.01, horizon/boundedSteps)
	stock := p.QuotaBurst // full: the baseline ran below the refill
	var gate, eng float64
	emptyAt, emptyStock, seg := math.NaN(), math.NaN(), 0
	var refused float64
	for i := 0; ; i++ {
		t := float64(i) * dt
		if t > horizon {
			break
		}
		for seg+1 < len(segs) && t >= segs[seg].to {
			seg++
		}
		s := segs[seg]
		stock = math.Min(p.QuotaBurst, stock+p.QuotaRate*dt)
		gate += s.arrive * dt
		pass := math.Min(gate, stock)
		stock -= pass
		gate -= pass
		if stock < 1e-9 && math.IsNaN(emptyStock) && t < last {
			emptyStock = t + dt
		}
		if excess := gate - p.QuotaQueue; excess > 0 {
			gate = p.QuotaQueue
			refused += excess
		}
		eng = math.Max(0, eng+pass-s.serve*dt)
		if p.QueueLimit > 0 && eng > p.QueueLimit {
			refused += eng - p.QueueLimit
			eng = p.QueueLimit
		}
		if observe != nil {
			observe(t+dt, gate+eng)
		}
		if b := gate + eng; t < last && b > pr.PeakBacklog {
			pr.PeakBacklog, pr.PeakAt = b, seconds(t+dt)
		}
		switch {
		case gate+eng > 1e-6:
			emptyAt = math.NaN()
		case math.IsNaN(emptyAt):
			emptyAt = t + dt
		}
		if t >= last && !math.IsNaN(emptyAt) {
			break
		}
	}
	pr.Rejected = refused
	pr.Never = pr.DrainRate <= 0 || math.IsNaN(emptyAt)
	if !pr.Never && emptyAt > end {
		pr.RecoveryTime = seconds(emptyAt - end)
	}
	pr.Explanation = quotaExplanation(p, pr, through, emptyStock)
	return pr
}

func quotaExplanation(p Params, pr Prediction, through, emptyStock float64) string {
	s := fmt.Sprintf("A quota passes %s req/s (its bucket holds %s requests when full)", num(p.QuotaRate), num(p.QuotaBurst))
	if p.QuotaRate < p.finalMu() {
		s += fmt.Sprintf(", below the engine's capacity %s req/s: the quota binds, and the backlog drains at the refill, %s − %s = %s req/s", num(p.finalMu()), num(through), num(p.Lambda), num(through-p.Lambda))
	} else {
		s += fmt.Sprintf(", above the engine's capacity %s req/s: the engine binds", num(p.finalMu()))
	}
	s += ". "
	if !math.IsNaN(emptyStock) {
		s += fmt.Sprintf("The burst empties the bucket after %s; ", dur(seconds(emptyStock)))
		if p.QuotaQueue > 0 {
			s += fmt.Sprintf("from then on requests wait at the gateway (up to %s) ", num(p.QuotaQueue))
		} else {
			s += "from then on the requests over quota are refused "
		}
		s += fmt.Sprintf("(%s refused in all). ", num(math.Round(pr.Rejected)))
	} else {
		s += "The burst does not empty the bucket. "
	}
	switch {
	case pr.Never:
		s += fmt.Sprintf("Never recovers: normal load %s req/s ≥ %s req/s.", num(p.Lambda), num(through))
	case pr.RecoveryTime > 0:
		s += fmt.Sprintf("Peak backlog %s requests; recovered %s after the burst end.", backlog(pr.PeakBacklog), dur(pr.RecoveryTime))
	default:
		s += "Nothing waits after the burst end."
	}
	return s
}

// quotaTimeline samples stepQuota's backlog every step up to horizon, and
// where it starts and stops being empty.
func quotaTimeline(p Params, step, horizon time.Duration) []Point {
	out := []Point{{T: 0, Backlog: 0}}
	next := step
	prev := 0.0
	stepQuota(p, func(t, b float64) {
		at := seconds(t)
		if at > horizon {
			return
		}
		if at >= next || (prev > 1e-6) != (b > 1e-6) {
			out = append(out, Point{T: at, Backlog: b})
			for next <= at {
				next += step
			}
		}
		prev = b
	})
	return out
}
