package schedule

import (
	"fmt"
	"hash/fnv"
	"iter"
	"math"
	"math/rand/v2"
	"time"
)

// MaxArrivals is the most arrivals Build materialises (about 60 bytes each);
// longer schedules can be streamed with Arrivals.
const MaxArrivals = 20_000_000

// Arrival is one scheduled request.
type Arrival struct {
	Seq          int64         // 0-based position in the whole plan, in time order
	At           time.Duration // scheduled time since the run origin
	Phase        string        // the phase whose interval holds At
	PromptTokens int           // from a replay trace; 0 = unspecified
	OutputTokens int           // from a replay trace; 0 = unspecified
	// Blocks is the prompt's blocks of shared content, from a replay trace
	// that has them (Mooncake hash_ids); nil otherwise. It points into the
	// phase's trace and must not be modified.
	Blocks *Blocks
}

// Arrivals validates p and returns an iterator over its arrivals in time
// order, computed lazily from seed. Iterating twice yields the same
// arrivals. Use it instead of Build for schedules too long to hold in memory.
func Arrivals(p Plan, seed int64) (iter.Seq[Arrival], error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return func(yield func(Arrival) bool) {
		var seq int64
		var start time.Duration
		for i := range p.Phases {
			ph := &p.Phases[i]
			if !emitPhase(ph, p.BaselineRPS, seed, start, &seq, yield) {
				return
			}
			start += ph.Duration
		}
	}, nil
}

// emitPhase yields the arrivals of one phase starting at start; it reports
// false when the consumer stopped.
func emitPhase(ph *Phase, baseline float64, seed int64, start time.Duration, seq *int64, yield func(Arrival) bool) bool {
	emit := func(off time.Duration, prompt, output int, blocks *Blocks) bool {
		a := Arrival{Seq: *seq, At: start + off, Phase: ph.Name, PromptTokens: prompt, OutputTokens: output, Blocks: blocks}
		*seq++
		return yield(a)
	}
	if ph.kind() == ArrivalNone {
		return true
	}
	if ph.kind() == ArrivalReplay {
		for _, e := range ph.Trace.Entries {
			off := scaleOffset(e.Offset, ph.Speed)
			if off >= ph.Duration {
				break // sorted: the rest are outside the phase too
			}
			if !emit(off, e.PromptTokens, e.OutputTokens, e.Blocks) {
				return false
			}
		}
		return true
	}
	proc, err := NewProcess(ph.kind(), ph.rate(baseline), ph.Burstiness)
	if err != nil { // unreachable after Validate
		panic(err)
	}
	rng := phaseRand(seed, ph.Name)
	for {
		off := proc.Next(rng)
		if off >= ph.Duration {
			return true
		}
		if !emit(off, 0, 0, nil) {
			return false
		}
	}
}

// Build validates p and computes every arrival up front, in time order,
// deterministically from seed. It refuses plans expected to exceed
// MaxArrivals.
func Build(p Plan, seed int64) ([]Arrival, error) {
	all, err := Arrivals(p, seed)
	if err != nil {
		return nil, err
	}
	var expected float64
	for _, b := range p.Bounds() {
		expected += b.Expected
	}
	if expected > MaxArrivals {
		return nil, fmt.Errorf("schedule: plan: %.0f expected arrivals exceed the %d a plan may hold in memory: shorten the duration or lower the rate", expected, MaxArrivals)
	}
	// Room for the expectation plus 4 standard deviations of a Poisson count.
	out := make([]Arrival, 0, int(expected+4*math.Sqrt(expected))+1)
	for a := range all {
		out = append(out, a)
	}
	return out, nil
}

// phaseRand returns the random source of the phase named name under seed: a
// PCG seeded with splitmix64(seed) and splitmix64(FNV-1a(name)), so each
// phase has its own stream whatever the other phases are.
func phaseRand(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(splitmix64(uint64(seed)), splitmix64(h.Sum64()^0x9e3779b97f4a7c15)))
}

// splitmix64 is the finaliser of Steele, Lea and Flood's SplitMix64: a
// bijective mix that spreads nearby seeds across the 64-bit space.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
