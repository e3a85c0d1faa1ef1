package experiment

import (
	"fmt"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/run"
)

// EngineTimingLines says what the engine's own per-request timing holds:
// the OTLP join's counts (how many successful requests got a span, how
// many are missing, what was dropped) and, per phase by arrival, the
// percentiles of engine queue, prefill, decode and e2e, labelled with
// their source. Empty when the run had neither spans nor timings.
func EngineTimingLines(res *run.Result) []string {
	var out []string
	if s := res.Spans; s != nil {
		j := s.Join
		line := fmt.Sprintf("engine spans (OTLP on %s): %d requests joined, %d successful without a span within %s (counted, not guessed)",
			s.Listen, j.Joined, j.Missing, analyze.FormatMs(s.GraceMs))
		if d := j.Unmatched + j.Duplicate + j.Late + j.Dropped + s.Receiver.Malformed; d > 0 {
			line += fmt.Sprintf("; ignored: %d unmatched, %d duplicate, %d late, %d over the cap, %d malformed payloads",
				j.Unmatched, j.Duplicate, j.Late, j.Dropped, s.Receiver.Malformed)
		}
		out = append(out, line)
	}
	if res.EngineTiming == nil {
		return out
	}
	pct := func(q analyze.QueueWait) string {
		if !q.Available {
			return "n/a"
		}
		return fmt.Sprintf("%s/%s/%s", analyze.FormatMs(q.P50Ms), analyze.FormatMs(q.P95Ms), analyze.FormatMs(q.P99Ms))
	}
	for _, ph := range res.Analysis.Phases {
		if ph.Excluded {
			continue
		}
		et, ok := res.EngineTiming[ph.Name]
		if !ok || et.Timed == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("engine timing %s, %s by arrival (p50/p95/p99, %d of %d ok): queue %s, prefill %s, decode %s, e2e %s",
			et.Source, ph.Name, et.Timed, et.OK, pct(et.Queue), pct(et.Prefill), pct(et.Decode), pct(et.E2E)))
	}
	return out
}

// noQueueConsequence completes the "queue wait (histogram) n/a" line: with
// no per-request engine queue either, load-induced latency is extra
// observed latency, not a measured queue.
func noQueueConsequence(res *run.Result) string {
	for _, et := range res.EngineTiming {
		if et.Queue.Available {
			return "; the per-request engine queue below is measured"
		}
	}
	return " — load-induced latency above is extra observed latency, not queue time"
}
