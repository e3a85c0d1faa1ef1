package run

import (
	"iter"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
)

// analysis is every accumulator a run's records feed, in the one pass
// over its requests.jsonl that analyses it: at the end of the run
// (Execute) and when `surge report` reads the folder again
// (Reloaded.Result), so that both analyse the same file the same way.
// None keeps a record: what each keeps is bounded by the plan (phases,
// windows, histograms), by distinct values (token counts), or by what is
// rare (sessions, engine timings, rejections).
type analysis struct {
	an     *analyze.Analyzer
	sess   *analyze.SessionStats
	engine *analyze.EngineTimingStats // nil: not measured here
	prompt *promptAcc                 // nil: not measured here
	prefix *prefixAcc                 // nil: no shared prefix
	diag   *analyze.DiagTally
	spend  Spend
	count  int64
}

// newAnalysis returns the accumulators of an analysis with cfg.
func newAnalysis(cfg analyze.Config) (*analysis, error) {
	an, err := analyze.New(cfg)
	if err != nil {
		return nil, err
	}
	return &analysis{an: an, sess: analyze.NewSessions(cfg), diag: analyze.NewDiagTally(analyze.DoneFrom(cfg))}, nil
}

// add feeds one record to every accumulator.
func (a *analysis) add(r *record.Record) error {
	a.count++
	a.an.Add(r)
	a.sess.Add(r)
	if a.engine != nil {
		a.engine.Add(r)
	}
	if a.prompt != nil {
		a.prompt.add(r)
	}
	a.prefix.add(r)
	a.diag.Add(r)
	a.spend.Tally(r)
	return nil
}

// finish sets res's analysis from the accumulators.
func (a *analysis) finish(res *Result) {
	res.Recorded = a.count
	res.Diag = a.diag
	res.Analysis = a.an.Result()
	res.Analysis.Sessions = a.sess.Result()
	if res.Partial {
		res.Analysis.MarkPartial()
	}
}

// arrivalIndex finds the scheduled arrival of a record for the prompt
// accumulators: in the schedule's slice, or — a run that never held its
// schedule (Env.streamsSchedule) — in the lazy schedule, walked in step
// with the records, which such a run writes in schedule order.
type arrivalIndex struct {
	slice []schedule.Arrival
	next  func() (schedule.Arrival, bool) // nil: no lazy schedule
	stop  func()
	cur   schedule.Arrival
	ok    bool
}

func newArrivalIndex(slice []schedule.Arrival, lazy iter.Seq[schedule.Arrival]) *arrivalIndex {
	x := &arrivalIndex{slice: slice}
	if lazy != nil {
		x.next, x.stop = iter.Pull(lazy)
		x.cur, x.ok = x.next()
	}
	return x
}

// of is the arrival numbered seq; only its Seq is known when it is not
// found (a closed loop's users, a session's later turns, records out of
// schedule order in a lazy walk).
func (x *arrivalIndex) of(seq int64) schedule.Arrival {
	if s := x.slice; seq >= 0 && seq < int64(len(s)) && s[seq].Seq == seq {
		return s[seq]
	}
	for x.next != nil && x.ok && x.cur.Seq < seq {
		x.cur, x.ok = x.next()
	}
	if x.next != nil && x.ok && x.cur.Seq == seq {
		return x.cur
	}
	return schedule.Arrival{Seq: seq}
}

func (x *arrivalIndex) close() {
	if x.stop != nil {
		x.stop()
	}
}
