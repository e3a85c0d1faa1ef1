package analyze

import "github.com/surge-bench/surge/internal/record"

// Sources of per-request engine timing.
const (
	EngineSourceOTLP     = "per request (OTLP)"            // vLLM's llm_request spans
	EngineSourceResponse = "per request (engine response)" // llama.cpp's timings object, TGI's timing headers
)

// EngineTiming summarises the engine's own per-request timing of one
// phase, by the phase of the scheduled arrival (record.Phase), over the
// successful requests. Each distribution is exactQueueWait over the
// requests that carry that time (engine_queue_ns, engine_prefill_ns,
// engine_decode_ns, engine_e2e_ns); a request without it is counted in
// Missing, never guessed.
type EngineTiming struct {
	Source  string    `json:"source"`  // EngineSourceOTLP or EngineSourceResponse
	OK      int64     `json:"ok"`      // successful requests of the phase
	Timed   int64     `json:"timed"`   // of them, with any engine time
	Missing int64     `json:"missing"` // of them, with none
	Queue   QueueWait `json:"queue"`   // engine_queue_ns, ms
	Prefill QueueWait `json:"prefill"` // engine_prefill_ns, ms
	Decode  QueueWait `json:"decode"`  // engine_decode_ns, ms
	E2E     QueueWait `json:"e2e"`     // engine_e2e_ns, ms
}

// engineTimings returns the EngineTiming of every phase named in phases
// (in that order, by arrival) and of "overall" (every phase not in
// exclude), or nil when no record carries any engine time. It is
// NewEngineTimings fed with every record.
func engineTimings(recs []record.Record, phases, exclude []string, source string) map[string]EngineTiming {
	e := NewEngineTimings(phases, exclude, source)
	for i := range recs {
		e.Add(&recs[i])
	}
	return e.Result()
}

// EngineTimingStats accumulates engineTimings as records come (Add). The
// distributions are exact (exactQueueWait), so it keeps the engine's
// times of the successful requests that carry any — a run against an
// engine that reports none (most) keeps nothing.
type EngineTimingStats struct {
	source   string
	by       map[string]*engineAcc
	excluded map[string]bool
	any      bool
}

type engineAcc struct {
	ok, timed        int64
	q, pre, dec, e2e []float64
}

// NewEngineTimings returns an empty EngineTimingStats (see engineTimings).
func NewEngineTimings(phases, exclude []string, source string) *EngineTimingStats {
	e := &EngineTimingStats{source: source, by: map[string]*engineAcc{}, excluded: map[string]bool{}}
	for _, p := range phases {
		e.by[p] = &engineAcc{}
	}
	e.by["overall"] = &engineAcc{}
	for _, p := range exclude {
		e.excluded[p] = true
	}
	return e
}

// Add accounts one record; it does not keep r.
func (e *EngineTimingStats) Add(r *record.Record) {
	if r.Outcome != record.OK {
		return
	}
	timed := r.EngineQueueNs != record.None || r.EnginePrefillNs != record.None || r.EngineDecodeNs != record.None || r.EngineE2ENs != record.None
	e.any = e.any || timed
	add := func(dst *[]float64, ns int64) {
		if ns != record.None {
			*dst = append(*dst, float64(ns)/1e9)
		}
	}
	for i, a := range [2]*engineAcc{e.by[r.Phase], e.by["overall"]} {
		if a == nil || i == 1 && e.excluded[r.Phase] {
			continue
		}
		a.ok++
		if !timed {
			continue
		}
		a.timed++
		add(&a.q, r.EngineQueueNs)
		add(&a.pre, r.EnginePrefillNs)
		add(&a.dec, r.EngineDecodeNs)
		add(&a.e2e, r.EngineE2ENs)
	}
}

// Result is engineTimings of the records added.
func (e *EngineTimingStats) Result() map[string]EngineTiming {
	if !e.any {
		return nil
	}
	out := make(map[string]EngineTiming, len(e.by))
	for name, a := range e.by {
		out[name] = EngineTiming{Source: e.source, OK: a.ok, Timed: a.timed, Missing: a.ok - a.timed,
			Queue: exactQueueWait(a.q), Prefill: exactQueueWait(a.pre), Decode: exactQueueWait(a.dec), E2E: exactQueueWait(a.e2e)}
	}
	return out
}
