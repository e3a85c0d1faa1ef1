package otlp

import (
	"context"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// DefaultGrace is how long a finished record waits for its span. vLLM
// exports through OpenTelemetry's BatchSpanProcessor, which sends every
// OTEL_BSP_SCHEDULE_DELAY (5 s by default) or when 512 spans are queued:
// a span can follow its response by up to about 5 s plus the export.
const DefaultGrace = 7 * time.Second

// JoinStats counts the join of one run's records and spans.
type JoinStats struct {
	Joined    int64 `json:"joined"`    // records that got the engine's timing from a span
	Missing   int64 `json:"missing"`   // successful records whose span never came within the grace period (vLLM sends none for aborted requests)
	Unmatched int64 `json:"unmatched"` // spans whose trace id is no record's of this run: dropped
	Duplicate int64 `json:"duplicate"` // further spans for a record that already had one: dropped
	Late      int64 `json:"late"`      // spans that came after their record was written (or for a record that expected none)
	Dropped   int64 `json:"dropped"`   // spans beyond the cap (the run's request count): dropped
}

// Join pairs the records of one run with their spans. A finished record
// that expects a span (it succeeded and carries a trace id) is held until
// its span arrives or Grace has passed since it finished, then released to
// the sink; any other record is released at once. Each record is therefore
// released — written — exactly once, with whatever timing had arrived.
type Join struct {
	match func(id [16]byte) (seq int64, ok bool)
	limit int
	grace time.Duration
	sink  func(*record.Record)

	mu    sync.Mutex
	spans map[int64]Span // arrived before (or without) their record
	held  map[int64]*heldRecord
	order []int64 // held seqs in release-deadline order
	seen  map[int64]struct{}
	st    JoinStats
	empty chan struct{} // signalled when held drains
}

type heldRecord struct {
	rec      record.Record
	deadline time.Time
}

// NewJoin returns a Join for a run of at most limit records: match maps a
// trace id to the sequence number of the run's record (ok false for a
// trace id of no record of this run); sink receives every record once.
func NewJoin(match func([16]byte) (int64, bool), limit int, grace time.Duration, sink func(*record.Record)) *Join {
	return &Join{match: match, limit: max(limit, 1), grace: grace, sink: sink,
		spans: map[int64]Span{}, held: map[int64]*heldRecord{}, seen: map[int64]struct{}{}, empty: make(chan struct{}, 1)}
}

// expects reports whether rec should get a span: vLLM emits one for every
// request that finished in the engine, none for aborted ones.
func expects(rec *record.Record) bool {
	return rec.Outcome == record.OK && rec.TraceID != ""
}

// Add takes a finished record (the load generator's sink).
func (j *Join) Add(rec *record.Record) {
	j.expire(time.Now())
	j.mu.Lock()
	if sp, ok := j.spans[rec.Seq]; ok {
		delete(j.spans, rec.Seq)
		j.seen[rec.Seq] = struct{}{}
		j.st.Joined++
		j.mu.Unlock()
		sp.Apply(rec)
		j.sink(rec)
		return
	}
	if !expects(rec) {
		j.seen[rec.Seq] = struct{}{}
		j.mu.Unlock()
		j.sink(rec)
		return
	}
	j.held[rec.Seq] = &heldRecord{rec: *rec, deadline: time.Now().Add(j.grace)}
	j.order = append(j.order, rec.Seq)
	j.mu.Unlock()
}

// Offer takes a span (the receiver calls it).
func (j *Join) Offer(sp Span) {
	seq, ok := j.match(sp.TraceID)
	j.mu.Lock()
	if !ok {
		j.st.Unmatched++
		j.mu.Unlock()
		return
	}
	if h, ok := j.held[seq]; ok {
		delete(j.held, seq)
		j.seen[seq] = struct{}{}
		j.st.Joined++
		j.signalIfEmpty()
		j.mu.Unlock()
		sp.Apply(&h.rec)
		j.sink(&h.rec)
		return
	}
	_, waiting := j.spans[seq]
	_, released := j.seen[seq]
	switch {
	case waiting:
		j.st.Duplicate++
	case released:
		j.st.Late++
	case len(j.spans) >= j.limit:
		j.st.Dropped++
	default:
		j.spans[seq] = sp
	}
	j.mu.Unlock()
}

func (j *Join) signalIfEmpty() {
	if len(j.held) == 0 {
		select {
		case j.empty <- struct{}{}:
		default:
		}
	}
}

// expire releases, without engine timing, the held records whose grace
// has passed by now.
func (j *Join) expire(now time.Time) {
	var out []record.Record
	j.mu.Lock()
	for len(j.order) > 0 {
		seq := j.order[0]
		h, ok := j.held[seq]
		if ok && h.deadline.After(now) {
			break
		}
		j.order = j.order[1:]
		if ok {
			delete(j.held, seq)
			j.seen[seq] = struct{}{}
			j.st.Missing++
			out = append(out, h.rec)
		}
	}
	j.signalIfEmpty()
	j.mu.Unlock()
	for i := range out {
		j.sink(&out[i])
	}
}

// Run releases expired records until ctx is done (call it in a goroutine
// while the run goes, so that a quiet engine does not hold records).
func (j *Join) Run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			j.expire(now)
		}
	}
}

// Close waits until every held record has its span or its grace has
// passed (ctx cancelled: no longer), releases the rest without engine
// timing, and returns the counts. Spans still waiting for a record that
// never came count as late.
func (j *Join) Close(ctx context.Context) JoinStats {
	for {
		j.mu.Lock()
		if len(j.held) == 0 {
			break
		}
		var last time.Time
		for i := len(j.order) - 1; i >= 0; i-- {
			if h, ok := j.held[j.order[i]]; ok {
				last = h.deadline
				break
			}
		}
		j.mu.Unlock()
		t := time.NewTimer(time.Until(last))
		select {
		case <-j.empty:
		case <-t.C:
			j.expire(last)
		case <-ctx.Done():
			j.expire(time.Now().Add(j.grace + time.Hour))
		}
		t.Stop()
	}
	j.st.Late += int64(len(j.spans))
	clear(j.spans)
	st := j.st
	j.mu.Unlock()
	return st
}

// Report is what summary.json records of the OTLP receiver for one run.
type Report struct {
	Listen   string    `json:"listen"`   // the receiver's address
	GraceMs  float64   `json:"grace_ms"` // how long a finished request waited for its span, at most
	Receiver Stats     `json:"receiver"` // exports, malformed payloads and spans during the run
	Join     JoinStats `json:"join"`
}
