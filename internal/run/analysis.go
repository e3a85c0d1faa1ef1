package run

import (
	"cmp"
	"iter"
	"math"
	"slices"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
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
	sends  *Sends
	spend  Spend
	count  int64
	slo    judge.SLO // what the run is judged by
}

// newAnalysis returns the accumulators of an analysis with cfg.
func newAnalysis(cfg analyze.Config, slo judge.SLO) (*analysis, error) {
	an, err := analyze.New(cfg)
	if err != nil {
		return nil, err
	}
	sends := &Sends{phases: cfg.Phases, spans: make([]analyze.GeneratorSpan, len(cfg.Phases))}
	return &analysis{an: an, sess: analyze.NewSessions(cfg), diag: analyze.NewDiagTally(analyze.DoneFrom(cfg)), sends: sends, slo: slo}, nil
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
	a.sends.add(r)
	a.spend.Tally(r)
	return nil
}

// finish sets res's analysis from the accumulators, and its verdicts
// (res.Engine, when scraped, must be set: the engine queue's drain is
// judged beside the latency's recovery).
func (a *analysis) finish(res *Result) {
	res.Recorded = a.count
	res.Diag, res.Sends = a.diag, a.sends
	res.Analysis = a.an.Result()
	res.Analysis.Sessions = a.sess.Result()
	res.Verdicts = judge.Run(res.Analysis, judge.Rules{SLO: a.slo, Partial: res.Partial, Engine: res.Engine})
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
	} else if len(s) > 0 {
		// A shard's arrivals (--shard) are every Nth seq, in order.
		if i, ok := slices.BinarySearchFunc(s, seq, func(a schedule.Arrival, seq int64) int { return cmp.Compare(a.Seq, seq) }); ok {
			return s[i]
		}
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

// Sends is the generator check's view of a run's sends (analyze.GeneratorSpan),
// gathered in the analysis pass: of every sent record, and of each
// phase's by scheduled time, so that a check over whole phases needs no
// pass of its own.
type Sends struct {
	phases []analyze.Phase
	spans  []analyze.GeneratorSpan // by phase, indexed like phases
	all    analyze.GeneratorSpan
	first  int64 // the earliest scheduled time of a send
}

func (s *Sends) add(r *record.Record) {
	if r.SentNs == record.None {
		return
	}
	if s.first = min(s.first, r.ScheduledNs); s.all == (analyze.GeneratorSpan{}) {
		s.first = r.ScheduledNs
	}
	s.all.Add(r.ScheduledNs, r.SentNs)
	for i := range s.phases {
		if p := &s.phases[i]; r.ScheduledNs >= int64(p.Start) && r.ScheduledNs < int64(p.End) {
			s.spans[i].Add(r.ScheduledNs, r.SentNs)
			break
		}
	}
}

// In is the span of the sends scheduled in [fromNs, toNs), when that is
// every send or exactly the union of some phases (phases cover what lies
// between them: a gap would hold sends of no phase); ok false otherwise.
func (s *Sends) In(fromNs, toNs int64) (sp analyze.GeneratorSpan, ok bool) {
	if s == nil {
		return sp, false
	}
	if fromNs <= s.first && toNs == math.MaxInt64 {
		return s.all, true
	}
	covered := []analyze.Phase{}
	for i, p := range s.phases {
		if int64(p.Start) >= fromNs && int64(p.End) <= toNs {
			sp.Merge(s.spans[i])
			covered = append(covered, p)
		} else if int64(p.End) > fromNs && int64(p.Start) < toNs {
			return sp, false // a phase cut by the range
		}
	}
	// The covered phases must tile [fromNs, toNs) without a gap.
	slices.SortFunc(covered, func(a, b analyze.Phase) int { return cmp.Compare(a.Start, b.Start) })
	at := fromNs
	for _, p := range covered {
		if int64(p.Start) != at {
			return sp, false
		}
		at = int64(p.End)
	}
	return sp, at == toNs
}
