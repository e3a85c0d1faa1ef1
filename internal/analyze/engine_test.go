package analyze

import (
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// TestEngineTimings: percentiles by the phase of the arrival, missing
// counted, failures left out, the excluded warmup out of overall.
func TestEngineTimings(t *testing.T) {
	rec := func(phase string, queueMs int64, out record.Outcome) record.Record {
		r := record.New("x", 0, phase, 0)
		r.Outcome = out
		if queueMs >= 0 {
			r.EngineQueueNs = queueMs * 1e6
			r.EngineE2ENs = (queueMs + 100) * 1e6
		}
		return r
	}
	recs := []record.Record{
		rec("warmup", 1, record.OK),
		rec("baseline", 2, record.OK), rec("baseline", 4, record.OK), rec("baseline", -1, record.OK),
		rec("burst", 100, record.OK), rec("burst", 300, record.OK), rec("burst", 500, record.Timeout),
	}
	got := engineTimings(recs, []string{"warmup", "baseline", "burst"}, []string{"warmup"}, EngineSourceOTLP)
	b := got["baseline"]
	if b.OK != 3 || b.Timed != 2 || b.Missing != 1 || b.Queue.P50Ms != 2 || b.Queue.P99Ms != 4 || b.Queue.MeanMs != 3 {
		t.Errorf("baseline %+v", b)
	}
	if u := got["burst"]; u.OK != 2 || u.Queue.P50Ms != 100 || u.Queue.P95Ms != 300 || u.E2E.P99Ms != 400 || u.Prefill.Available {
		t.Errorf("burst %+v", u)
	}
	if o := got["overall"]; o.OK != 5 || o.Timed != 4 || o.Queue.Count != 4 {
		t.Errorf("overall %+v", o)
	}
	if got["burst"].Source != EngineSourceOTLP {
		t.Errorf("source %q", got["burst"].Source)
	}
	if engineTimings(recs[3:4], []string{"baseline"}, nil, EngineSourceOTLP) != nil {
		t.Error("timings without any engine time")
	}
}
