package schedule

import "time"

// Burst describes the four-phase burst experiment of docs/method.md §3 for
// the tests (the experiment builds its own plan, internal/experiment/burst):
// warmup,
// baseline and recovery at BaselineRPS, the burst at Multiplier ×
// BaselineRPS. Zero durations take the Default* values.
type Burst struct {
	BaselineRPS float64       // the named baseline, arrivals/s
	Multiplier  float64       // the burst's multiple of the baseline, e.g. 2, 5, 10
	Warmup      time.Duration // 0 = DefaultWarmup
	Baseline    time.Duration // 0 = DefaultBaseline
	Burst       time.Duration // 0 = DefaultBurst
	Recovery    time.Duration // 0 = DefaultRecovery
	Arrival     string        // process for every phase; "" = DefaultArrival
	Burstiness  float64       // gamma shape, for Arrival == gamma
}

// Plan returns the burst experiment as a Plan with phases warmup, baseline,
// burst and recovery, rates given as multipliers of BaselineRPS (1, 1,
// Multiplier, 1). Validate the result before use.
func (b Burst) Plan() Plan {
	or := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	phase := func(name string, d time.Duration, mult float64) Phase {
		return Phase{Name: name, Duration: d, Multiplier: mult, Arrival: b.Arrival, Burstiness: b.Burstiness}
	}
	return Plan{
		BaselineRPS: b.BaselineRPS,
		Phases: []Phase{
			phase(PhaseWarmup, or(b.Warmup, DefaultWarmup), 1),
			phase(PhaseBaseline, or(b.Baseline, DefaultBaseline), 1),
			phase(PhaseBurst, or(b.Burst, DefaultBurst), b.Multiplier),
			phase(PhaseRecovery, or(b.Recovery, DefaultRecovery), 1),
		},
	}
}
