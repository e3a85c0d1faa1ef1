package experiment

import (
	"fmt"
	"strings"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
)

// WorkerLines are a coordinated run's lines per worker (--workers): its
// arrivals and records, its schedule lag p99 — a slow worker shows here,
// marked when its p99 is more than twice the fastest's and SlowLagMarginMs
// above it —
// its clock offset, and why it was lost (or that it was interrupted on its
// machine); none for one process.
func WorkerLines(res *run.Result) []string {
	d := res.Distributed
	if d == nil || len(d.Each) == 0 {
		return nil
	}
	fastest := d.Each[0].LagP99Ms
	for _, g := range d.Each {
		fastest = min(fastest, g.LagP99Ms)
	}
	var out []string
	for _, g := range d.Each {
		slow := ""
		if slowWorker(d, g, fastest) {
			slow = " — SLOW: this worker fell behind its schedule more than the others"
		}
		out = append(out, fmt.Sprintf("worker %d %s (surge %s): %d of %s recorded by it, schedule lag p99 %.1f ms%s; clock offset %+.3f ms (RTT %.3f ms, drift %+.3f ms).",
			g.Index, g.Name, g.Version, g.Records, dueText(g), g.LagP99Ms, slow, float64(g.ClockOffsetNs)/1e6, float64(g.RTTNs)/1e6, float64(g.OffsetDriftNs)/1e6))
		switch {
		case g.Interrupted:
			out = append(out, fmt.Sprintf("worker %d %s INTERRUPTED: %s; it cancelled its %d requests in flight (its cancelled records), %d arrivals never sent (generator_drop records).", g.Index, g.Name, g.LostWhy, g.LostInFlight, g.LostUnsent))
		case g.Lost:
			out = append(out, fmt.Sprintf("worker %d %s LOST: %s; %d of its arrivals were in flight (cancelled records), %d never sent (generator_drop records).", g.Index, g.Name, g.LostWhy, g.LostInFlight, g.LostUnsent))
		}
	}
	return out
}

// WorkerSummary is WorkerLines in one line, for a run that is one row of
// a burst or capacity search's results.md: per worker its schedule lag
// p99, SLOW or LOST (with why); "" for one process.
func WorkerSummary(res *run.Result) string {
	d := res.Distributed
	if d == nil || len(d.Each) == 0 {
		return ""
	}
	fastest := d.Each[0].LagP99Ms
	for _, g := range d.Each {
		fastest = min(fastest, g.LagP99Ms)
	}
	parts := make([]string, 0, len(d.Each))
	for _, g := range d.Each {
		p := fmt.Sprintf("%s %d/%d recorded, lag p99 %.1f ms", g.Name, g.Records, due(g), g.LagP99Ms)
		if slowWorker(d, g, fastest) {
			p += " SLOW"
		}
		switch {
		case g.Interrupted:
			p += " INTERRUPTED (" + g.LostWhy + ")"
		case g.Lost:
			p += " LOST (" + g.LostWhy + ")"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%d workers: %s.", len(d.Each), strings.Join(parts, "; "))
}

// due is how many of g's arrivals were due: Due, or Arrivals for a
// manifest without it (the schedule ran to its end, or an older surge).
func due(g record.Generator) int64 {
	if g.Due > 0 && g.Due < g.Arrivals {
		return g.Due
	}
	return g.Arrivals
}

// dueText is "N arrivals", or "N arrivals due before the schedule was
// stopped (M planned)" when it was stopped early (Ctrl-C, a burst phase
// cut when the run recovered).
func dueText(g record.Generator) string {
	if d := due(g); d < g.Arrivals {
		return fmt.Sprintf("%d arrivals due before the schedule was stopped (%d planned)", d, g.Arrivals)
	}
	return fmt.Sprintf("%d arrivals", g.Arrivals)
}

// SlowLagMarginMs is how far (ms) a worker's schedule lag p99 must be
// above the fastest worker's, as well as twice it, to be marked SLOW: a
// few tens of ms between workers is a busy host's noise (the run's own
// lag note says so), not a worker that fell behind.
const SlowLagMarginMs = 50

func slowWorker(d *record.Distribution, g record.Generator, fastest float64) bool {
	return len(d.Each) > 1 && g.LagP99Ms > 2*fastest && g.LagP99Ms > fastest+SlowLagMarginMs
}
