package experiment

import (
	"sort"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/sim"
)

// virtualStopAt asks spec.StopWhen what a live run would have asked it: at
// each virtual second t from spec.StopCheckFrom to the end of the plan, the
// records of every arrival scheduled before the horizon — the scheduled
// time of the first arrival not finished by t — all of which had finished
// by t. It returns the first t at which StopWhen said stop.
//
// The records come from a simulation of the whole plan. That is exact for
// the ones StopWhen sees: a request that finished by t cannot have been
// affected by arrivals after t.
func virtualStopAt(spec Spec, arrivals []schedule.Arrival, outs []sim.Outcome, recs []record.Record) (time.Duration, bool) {
	if len(arrivals) == 0 {
		return 0, false
	}
	// doneBy[i] = the latest end among arrivals[0..i]: arrival i is past
	// the horizon at t exactly when doneBy[i] > t.
	doneBy := make([]time.Duration, len(outs))
	var m time.Duration
	for i := range outs {
		end := outs[i].DoneAt
		if end == sim.Never {
			end = time.Duration(1<<63 - 1)
		}
		m = max(m, end, arrivals[i].At)
		doneBy[i] = m
	}
	end := spec.Plan.Duration()
	// A live run checks on whole seconds of its ticker.
	first := max(spec.StopCheckFrom.Truncate(time.Second), time.Second)
	if first < spec.StopCheckFrom {
		first += time.Second
	}
	for t := first; t < end; t += time.Second {
		n := sort.Search(len(doneBy), func(i int) bool { return doneBy[i] > t })
		horizon := time.Duration(1<<63 - 1)
		if n < len(arrivals) {
			horizon = arrivals[n].At
		}
		if spec.StopWhen(recs[:n], horizon) {
			return t, true
		}
	}
	return 0, false
}
