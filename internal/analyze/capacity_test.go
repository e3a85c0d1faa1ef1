package analyze

import (
	"testing"
	"time"
)

// A run sampled every second from 0 to 40 s: baseline [0, 10 s) with one
// request waiting and a median e2e_send of 1 s, burst [10 s, 20 s) of 100
// arrivals. waiting(t) is 1 except where overridden (seconds → requests).
func capacityRun(waiting map[int]int64) *Result {
	r := &Result{Phases: []PhaseResult{{Name: "baseline", StartMs: 0, EndMs: 10_000}, {Name: "burst", StartMs: 10_000, EndMs: 20_000}}}
	r.Phases[0].Latency.E2ESend.P50Ms = 1000
	r.Phases[1].Offered = 100
	for sec := 0; sec <= 40; sec++ {
		w, ok := waiting[sec]
		if !ok {
			w = 1
		}
		r.Timeline = append(r.Timeline, Sample{TMs: float64(sec) * 1000, Waiting: w})
	}
	return r
}

// every returns completion times (ns) every step in [from, to).
func every(step, from, to time.Duration) []int64 {
	var out []int64
	for t := from; t < to; t += step {
		out = append(out, int64(t))
	}
	return out
}

func TestMeasuredCapacity(t *testing.T) {
	// The backlog builds from the burst start (10 s), peaks at 40 at 18 s,
	// dips to θ or below at 15 s and at the burst end (20 s) — neither ends
	// it, as only a sample after the burst can — and is back at 4 at 25 s.
	backlog := map[int]int64{10: 5, 11: 20, 12: 30, 13: 30, 14: 30, 15: 3, 16: 30, 17: 30, 18: 40, 19: 30, 20: 2, 21: 20, 22: 20, 23: 20, 24: 20, 25: 4}
	// Baseline: w̄ = 1, θ = max(2·1, 1 + 3) = 4. t₁ = 10 s + 1 s = 11 s,
	// t₂ = 25 s; completions every 0.5 s put 28 in [11 s, 25 s) (11.0 in,
	// 25.0 out): μ = 28 / 14 s = 2 requests/s.
	uniform := every(500*time.Millisecond, 0, 40*time.Second)
	renamed := capacityRun(backlog)
	renamed.Phases[0].Name, renamed.Phases[1].Name = "base", "spike"
	renamed.Settings.BaselinePhase, renamed.Settings.BurstPhase = "base", "spike"
	slowBase := capacityRun(backlog)
	slowBase.Phases[0].Latency.E2ESend.P50Ms = 4000
	bigBurst := func(offered int64) *Result { r := capacityRun(backlog); r.Phases[1].Offered = offered; return r }
	short := func(drainedAt int) map[int]int64 {
		m := map[int]int64{10: 20}
		for s := 11; s < drainedAt; s++ {
			m[s] = 30
		}
		m[drainedAt] = 4
		return m
	}
	never := map[int]int64{}
	for s := 10; s <= 40; s++ {
		never[s] = 30
	}
	noBaseSamples := capacityRun(backlog)
	noBaseSamples.Phases[0].StartMs, noBaseSamples.Phases[0].EndMs = 50_000, 60_000
	noTimeline := capacityRun(backlog)
	noTimeline.Timeline = nil
	noNames := capacityRun(backlog)
	noNames.Phases[0].Name = "base"

	cases := []struct {
		name     string
		res      *Result
		doneOK   []int64
		burstEnd time.Duration
		wantMu   float64
		wantOK   bool
	}{
		{"backlog built and drained", capacityRun(backlog), uniform, 20 * time.Second, 2, true},
		{"phases named by the settings", renamed, uniform, 20 * time.Second, 2, true},
		// t₁ = 10 s + 4 s = 14 s: the 10 completions at 11 s are baseline
		// requests and do not count; 22 in [14 s, 25 s) → 22 / 11 s = 2.
		{"t1 after a typical baseline completion", slowBase, append(every(500*time.Millisecond, 0, 40*time.Second), every(time.Nanosecond, 11*time.Second, 11*time.Second+10)...), 20 * time.Second, 2, true},
		// Peak 40 ≥ 0.1 × 400 arrivals.
		{"peak exactly a tenth of the burst", bigBurst(400), uniform, 20 * time.Second, 2, true},
		// t₂ = 16 s, t₂ − t₁ = 5 s exactly; 10 completions in [11 s, 16 s).
		{"backlog of exactly 5 s", capacityRun(short(16)), uniform, 12 * time.Second, 2, true},
		{"completions in any order", capacityRun(backlog), reversed(uniform), 20 * time.Second, 2, true},

		// Sad paths.
		{"no backlog", capacityRun(nil), uniform, 20 * time.Second, 0, false},
		{"peak below a tenth of the burst", bigBurst(401), uniform, 20 * time.Second, 0, false},
		{"backlog shorter than 5 s", capacityRun(short(15)), uniform, 12 * time.Second, 0, false},
		{"backlog never drains", capacityRun(never), uniform, 20 * time.Second, 0, false},
		{"no completion while it drained", capacityRun(backlog), every(500*time.Millisecond, 0, 11*time.Second), 20 * time.Second, 0, false},
		{"no completions at all", capacityRun(backlog), nil, 20 * time.Second, 0, false},
		{"no baseline phase", noNames, uniform, 20 * time.Second, 0, false},
		{"no timeline sample in the baseline", noBaseSamples, uniform, 20 * time.Second, 0, false},
		{"no timeline", noTimeline, uniform, 20 * time.Second, 0, false},
		{"no result", nil, uniform, 20 * time.Second, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu, ok := MeasuredCapacity(tc.res, tc.doneOK, 10*time.Second, tc.burstEnd)
			if ok != tc.wantOK || !near(mu, tc.wantMu) {
				t.Fatalf("MeasuredCapacity = %g, %v; want %g, %v", mu, ok, tc.wantMu, tc.wantOK)
			}
		})
	}
}

func reversed(v []int64) []int64 {
	out := make([]int64, len(v))
	for i := range v {
		out[len(v)-1-i] = v[i]
	}
	return out
}

// A completion rate at the burst's own arrival rate is not a capacity: the
// target kept up. With the backlog of TestMeasuredCapacity (μ = 2/s over
// [11 s, 25 s)), a burst offered at 2.1/s did not saturate it (2 ≥ 0.9 ×
// 2.1); one offered at 10/s did.
func TestMeasureCapacityNeedsSaturation(t *testing.T) {
	backlog := map[int]int64{10: 5, 11: 20, 12: 30, 13: 30, 14: 30, 15: 3, 16: 30, 17: 30, 18: 40, 19: 30, 20: 2, 21: 20, 22: 20, 23: 20, 24: 20, 25: 4}
	uniform := every(500*time.Millisecond, 0, 40*time.Second)
	for _, tc := range []struct {
		offeredRPS float64
		ok         bool
		why        string
	}{{2.1, false, NotSaturated}, {10, true, ""}} {
		r := capacityRun(backlog)
		r.Phases[1].OfferedRPS = tc.offeredRPS
		c := MeasureCapacity(r, uniform, 10*time.Second, 20*time.Second)
		if c.OK != tc.ok || c.Why != tc.why || (c.OK && c.Mu != 2) {
			t.Errorf("burst at %g/s: %+v, want ok %v %q", tc.offeredRPS, c, tc.ok, tc.why)
		}
		if mu, ok := MeasuredCapacity(r, uniform, 10*time.Second, 20*time.Second); ok != tc.ok || (ok && mu != 2) {
			t.Errorf("MeasuredCapacity at %g/s: %v %v", tc.offeredRPS, mu, ok)
		}
	}
}
