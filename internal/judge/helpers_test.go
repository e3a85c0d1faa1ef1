package judge

import (
	"fmt"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

var seq int64

// okRec is a successful request scheduled at sched, sent lag later, with its
// first token ttft and completion e2e after the scheduled arrival.
func okRec(sched, lag, ttft, e2e time.Duration) *record.Record {
	seq++
	r := record.New(fmt.Sprintf("r%d", seq), seq, "", int64(sched))
	r.SentNs = int64(sched + lag)
	r.ConnNs = r.SentNs + int64(ms)
	r.HeadersNs = r.ConnNs + int64(ms)
	r.FirstChunkNs = int64(sched + ttft)
	r.FirstTokenNs = int64(sched + ttft)
	r.DoneNs = int64(sched + e2e)
	r.Status = 200
	r.Outcome = record.OK
	r.PromptTokens, r.OutputTokens, r.MaxTokens, r.Chunks = 100, 11, 64, 11
	r.TPOTNs = (r.DoneNs - r.FirstTokenNs) / 10
	r.ITLMaxNs = r.TPOTNs * 2
	r.Attempts = 1
	r.Good = analyze.Judge(&r, analyze.DefaultDeadlines)
	return &r
}

// failRec is a failed request scheduled at sched.
func failRec(sched time.Duration, o record.Outcome) *record.Record {
	seq++
	r := record.New(fmt.Sprintf("f%d", seq), seq, "", int64(sched))
	r.Outcome = o
	switch o {
	case record.GeneratorDrop:
		return &r
	case record.RateLimited:
		r.Status = 429
		r.DoneNs = int64(sched + 5*ms)
	case record.Timeout:
		r.DoneNs = int64(sched + 60*s)
	case record.HTTPError:
		r.Status = 500
		r.DoneNs = int64(sched + 20*ms)
	default:
		r.DoneNs = int64(sched + 10*ms)
	}
	r.SentNs = int64(sched)
	r.Attempts = 1
	return &r
}

// srcOf streams recs; nil for none, as a run without records has no source.
func srcOf(recs []record.Record) record.Source {
	if recs == nil {
		return nil
	}
	return record.SliceSource(recs)
}

// sloOf is the run's verdicts under the default SLO.
func sloOf(r *analyze.Result) *Verdicts { return Run(r, Rules{SLO: DefaultSLO}) }
