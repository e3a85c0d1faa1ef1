package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The arrival process names used in Phase.Arrival.
const (
	ArrivalConstant = "constant" // equal spacing 1/λ, first arrival at the phase start
	ArrivalPoisson  = "poisson"  // exponential gaps, mean 1/λ
	ArrivalGamma    = "gamma"    // gamma gaps with shape = burstiness, mean 1/λ
	ArrivalReplay   = "replay"   // offsets from a trace
	// ArrivalNone is a phase without arrivals: the drain of a sessions
	// run, where only the turns of sessions already started are sent.
	ArrivalNone = "none"
)

// DefaultArrival is the process of a phase whose Arrival is empty.
const DefaultArrival = ArrivalPoisson

// MaxRate is the highest rate a phase may ask for, in arrivals per second.
const MaxRate = 1e6

// Process is a synthetic arrival process for one phase. Next returns the
// offset of the next arrival from the phase start; successive calls never
// return a smaller offset. A Process is stateful: use a fresh one per phase.
type Process interface {
	Next(rng *rand.Rand) time.Duration
}

// Compile-time checks that the processes implement Process.
var (
	_ Process = (*Constant)(nil)
	_ Process = (*Poisson)(nil)
	_ Process = (*Gamma)(nil)
)

// NewProcess returns the synthetic process named kind (constant, poisson or
// gamma; "" means DefaultArrival) at rate arrivals/s. burstiness is the
// gamma shape and is ignored by the others. Replay is not a synthetic
// process; it is built from a Trace by Build.
func NewProcess(kind string, rate, burstiness float64) (Process, error) {
	if !(rate > 0) || rate > MaxRate {
		return nil, fmt.Errorf("schedule: rate: must be in (0, %g], got %g", float64(MaxRate), rate)
	}
	switch kind {
	case ArrivalConstant:
		return &Constant{Rate: rate}, nil
	case ArrivalPoisson, "":
		return &Poisson{Rate: rate}, nil
	case ArrivalGamma:
		if !(burstiness > 0) || math.IsInf(burstiness, 0) {
			return nil, fmt.Errorf("schedule: burstiness: must be > 0, got %g", burstiness)
		}
		return &Gamma{Rate: rate, Burstiness: burstiness}, nil
	default:
		return nil, fmt.Errorf("schedule: arrival: unknown process %q", kind)
	}
}

// Constant places arrival k at exactly k/Rate seconds after the phase start
// (k = 0, 1, …), rounded to the nearest nanosecond. It uses no randomness.
type Constant struct {
	Rate float64 // arrivals per second, > 0
	k    int64
}

// Next returns round(k·10⁹/Rate) ns for the k-th call (k from 0).
func (c *Constant) Next(*rand.Rand) time.Duration {
	at := toDuration(float64(c.k) * 1e9 / c.Rate)
	c.k++
	return at
}

// Poisson draws independent exponential gaps with mean 1/Rate seconds; the
// first arrival is one gap after the phase start.
type Poisson struct {
	Rate float64 // arrivals per second, > 0
	ns   float64 // offset of the previous arrival, in ns
}

// Next returns the previous offset plus an exponential gap.
func (p *Poisson) Next(rng *rand.Rand) time.Duration {
	p.ns += rng.ExpFloat64() / p.Rate * 1e9
	return toDuration(p.ns)
}

// Gamma draws independent gamma gaps with shape Burstiness and scale
// 1/(Rate·Burstiness) seconds: the mean gap stays 1/Rate and the
// coefficient of variation is 1/√Burstiness. Burstiness 1 gives exactly the
// Poisson process's draws.
type Gamma struct {
	Rate       float64 // arrivals per second, > 0
	Burstiness float64 // gamma shape, > 0
	ns         float64
}

// Next returns the previous offset plus a gamma gap.
func (g *Gamma) Next(rng *rand.Rand) time.Duration {
	g.ns += gammaFloat64(rng, g.Burstiness) / (g.Rate * g.Burstiness) * 1e9
	return toDuration(g.ns)
}

// gammaFloat64 draws from Gamma(shape, 1) with Marsaglia and Tsang's method
// (ACM TOMS 26(3), 2000); shape < 1 uses the boost
// Gamma(a) = Gamma(a+1)·U^(1/a). Shape 1 is the exponential distribution,
// drawn exactly like Poisson.Next so that burstiness 1 equals Poisson.
func gammaFloat64(rng *rand.Rand, shape float64) float64 {
	if shape == 1 {
		return rng.ExpFloat64()
	}
	if shape < 1 {
		u := rng.Float64()
		return gammaFloat64(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*(x*x)*(x*x) {
			return d * v
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// toDuration rounds ns to the nearest nanosecond, saturating at the largest
// Duration so that absurdly long gaps cannot overflow.
func toDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(math.Round(ns))
}
