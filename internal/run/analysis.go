package run

import (
	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
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
	spend  Spend
	count  int64
}

// newAnalysis returns the accumulators of an analysis with cfg.
func newAnalysis(cfg analyze.Config) (*analysis, error) {
	an, err := analyze.New(cfg)
	if err != nil {
		return nil, err
	}
	return &analysis{an: an, sess: analyze.NewSessions(cfg)}, nil
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
	a.spend.Tally(r)
	return nil
}

// finish sets res's analysis from the accumulators.
func (a *analysis) finish(res *Result) {
	res.Recorded = a.count
	res.Analysis = a.an.Result()
	res.Analysis.Sessions = a.sess.Result()
	if res.Partial {
		res.Analysis.MarkPartial()
	}
}
