// Package recordtest builds records for tests of the packages that read
// them (analyze, judge): a successful request with given latencies, a
// failed one of a given outcome.
package recordtest

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

var seq atomic.Int64

// OK is a successful request scheduled at sched, sent lag later, with its
// first token ttft and completion e2e after the scheduled arrival: 11
// tokens of a 100-token prompt, max_tokens 64, good by the default
// deadlines (first token within 2 s, completion within 12 s).
func OK(sched, lag, ttft, e2e time.Duration) *record.Record {
	n := seq.Add(1)
	r := record.New(fmt.Sprintf("r%d", n), n, "", int64(sched))
	r.SentNs = int64(sched + lag)
	r.ConnNs = r.SentNs + int64(time.Millisecond)
	r.HeadersNs = r.ConnNs + int64(time.Millisecond)
	r.FirstChunkNs = int64(sched + ttft)
	r.FirstTokenNs = int64(sched + ttft)
	r.DoneNs = int64(sched + e2e)
	r.Status = 200
	r.Outcome = record.OK
	r.PromptTokens, r.OutputTokens, r.MaxTokens, r.Chunks = 100, 11, 64, 11
	r.TPOTNs = (r.DoneNs - r.FirstTokenNs) / 10
	r.ITLMaxNs = r.TPOTNs * 2
	r.Attempts = 1
	r.Good = ttft <= 2*time.Second && e2e <= 12*time.Second
	return &r
}

// Fail is a failed request of outcome o scheduled at sched: a 429 after 5
// ms, a timeout after 60 s (no response headers), a 500 after 20 ms,
// other failures after 10 ms; a generator drop is never sent.
func Fail(sched time.Duration, o record.Outcome) *record.Record {
	n := seq.Add(1)
	r := record.New(fmt.Sprintf("f%d", n), n, "", int64(sched))
	r.Outcome = o
	switch o {
	case record.GeneratorDrop:
		return &r
	case record.RateLimited:
		r.Status = 429
		r.DoneNs = int64(sched + 5*time.Millisecond)
	case record.Timeout:
		r.DoneNs = int64(sched + 60*time.Second)
	case record.HTTPError:
		r.Status = 500
		r.DoneNs = int64(sched + 20*time.Millisecond)
	default:
		r.DoneNs = int64(sched + 10*time.Millisecond)
	}
	r.SentNs = int64(sched)
	r.Attempts = 1
	return &r
}
