package virtual

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// Config is what a virtual run needs besides its load.
type Config struct {
	Sim            sim.Config        // the engine model; validated by sim.NewCluster
	Timeout        time.Duration     // per-request timeout from the scheduled time; 0 = none
	ScrapeInterval time.Duration     // engine sample period; 0 = no samples
	Deadlines      analyze.Deadlines // records are judged (Good) with analyze.Judge; a zero field disables its clause
	Run            string            // run name: record IDs are Run-<seq>
	Profile        string            // every record's Profile
	// CountPrompt, when set, is the engine model's tokenizer: it counts a
	// request's prompt texts — its one prompt, or its messages' contents —
	// (e.g. sim.Config.PromptTokens), as a server counts what it receives.
	// Nil: the engine sees the request's intended PromptTokens.
	CountPrompt func(texts ...string) int
	// Blocks, when set, makes the prefix-cache block hashes of a request
	// as the engine's HTTP facade would (sim.PrefixHasher over the
	// rendered prompt), appended to dst. Used only when Sim's prefix cache
	// is on; it is called as each request is submitted, so a run holds the
	// hashes of the requests in the engine only.
	Blocks func(r *workload.Request, dst []uint64) []uint64
	// Gate, when set, may refuse arrivals of an open-loop run, asked as a
	// live run's budget is (see Gate); nil admits every arrival.
	Gate Gate
	// Sink, when set, receives each record of an open-loop run without a
	// Stopper or a Gate as the engine model makes it, in schedule order
	// (it must not keep the record), and Output.Records is nil: the run
	// then holds the requests in flight, not the run (sim.SimulateStream).
	// Otherwise — and with a Stopper or a Gate, which judge the whole
	// simulation before the run is cut — the records are in Output.Records.
	Sink func(*record.Record)
	// Shard and Shards are this generator's share of the schedule
	// (--shard I/N; zero Shards is one process): in Sessions, the seqs of
	// later turns and sub-requests (schedule.LaterSeqs), unique across
	// the shards.
	Shard, Shards int
}

// Gate lets the caller end an open-loop run at the first arrival it
// refuses, as a budget does in a live run: it is asked about each arrival
// in schedule order at its scheduled time, after being told (Done) of
// every request that finished before then. Once it refuses, no arrival
// from that one on is sent. Its state after the run is not the run's: the
// records of the final Output are.
type Gate interface {
	Admit(seq int64, at time.Duration, promptTokens, maxTokens int) bool
	Done(rec *record.Record)
}

// prefixCache reports whether requests carry block hashes.
func (c *Config) prefixCache() bool { return c.Blocks != nil && c.Sim.PrefixCache() }

// promptTokens is the prompt length the engine model sees for r: its
// text, and its images at sim.ImageTokens each.
func (c *Config) promptTokens(r *workload.Request) int {
	n := 0
	for _, im := range r.Images {
		n += sim.ImageTokens(im.Width, im.Height)
	}
	return n + c.textTokens(r)
}

// textTokens is the prompt length of r's text as the engine model counts it.
func (c *Config) textTokens(r *workload.Request) int {
	switch {
	case c.CountPrompt == nil:
		return r.PromptTokens
	case r.Messages != nil:
		texts := make([]string, len(r.Messages))
		for i, m := range r.Messages {
			texts[i] = m.Content
		}
		return c.CountPrompt(texts...)
	case r.Inputs != nil:
		// Each text is counted on its own, as a server tokenizes each
		// input of a batch; a rerank query once per document, as vLLM
		// scores each pair.
		n := 0
		for _, t := range r.Inputs {
			n += c.CountPrompt(t)
			if r.Prompt != "" {
				n += c.CountPrompt(r.Prompt)
			}
		}
		return n
	}
	return c.CountPrompt(r.Prompt)
}

// validate checks the fields that sim.NewCluster does not.
func (c *Config) validate(gen *workload.Generator) error {
	switch {
	case gen == nil:
		return &ConfigError{errors.New("virtual: no workload generator")}
	case c.Timeout < 0:
		return &ConfigError{fmt.Errorf("virtual: timeout: must be ≥ 0 (0 = none), got %v", c.Timeout)}
	case c.ScrapeInterval < 0:
		return &ConfigError{fmt.Errorf("virtual: scrape interval: must be ≥ 0 (0 = no samples), got %v", c.ScrapeInterval)}
	}
	return nil
}

// cluster returns a fresh engine model for one simulation.
func (c *Config) cluster() (*sim.Cluster, error) {
	cl, err := sim.NewCluster(c.Sim)
	if err != nil {
		return nil, &ConfigError{err}
	}
	return cl, nil
}

// ConfigError is a configuration that a virtual run cannot execute (an
// invalid engine model, a closed loop with mid-stream faults, no users…).
// Its message names the flag or field at fault. Open and Closed return no
// other errors than a ConfigError and the context's error.
type ConfigError struct{ Err error }

// Error returns the message of the underlying error.
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Stopper lets the caller end an open-loop run early, asked as a live run
// would ask it: once per whole second from CheckFrom on, having been given
// the records of every arrival scheduled before the horizon (see the
// package doc).
type Stopper interface {
	// CheckFrom is the first moment (since the run's start) at which Stop
	// may be asked; the first question comes at the first whole second
	// ≥ max(CheckFrom, 1 s).
	CheckFrom() time.Duration
	// Add gives the Stopper one judged, complete record, once, when the
	// horizon passes its arrival (in schedule order between two
	// questions); it must not keep or change the record.
	Add(rec *record.Record)
	// Stop reports why the schedule should end now, or "" to go on,
	// having been given every record scheduled before horizon.
	Stop(horizon time.Duration) (why string)
}

// Output is what a virtual run produced.
type Output struct {
	Records []record.Record // one per arrival, in schedule (Seq) order
	Engine  []scrape.Sample // engine samples every ScrapeInterval from 0, and one after the last event
	Events  []sim.Event     // the cluster's scaling milestones, in time order
	// QueueWaits holds the engine queue waits (admission − scheduled
	// time) of the admitted requests, by the phase of their arrival, each
	// phase's in a histogram fed as the requests are admitted, so that it
	// does not grow with the run (analyze.WaitHist). A phase none of whose
	// requests was admitted is absent.
	QueueWaits map[string]*analyze.WaitHist
	StoppedAt  time.Duration // when the Stopper ended the schedule; 0 = it did not
	StopWhy    string        // the Stopper's reason; "" = it did not stop
}

// batch is one simulated run, before conversion: the arrivals as sent, what
// the client observed of each, and what each request asked for and was
// labelled with.
type batch struct {
	arrivals []schedule.Arrival
	outs     []sim.Outcome
	tags     []tag // max_tokens and the labels of each request
}

// records converts every outcome into the Record the HTTP client would have
// written, judged against the deadlines.
func (c *Config) records(b *batch) []record.Record {
	recs := make([]record.Record, len(b.outs))
	for i := range b.outs {
		recs[i] = c.record(&b.arrivals[i], &b.outs[i], &b.tags[i])
		recs[i].Good = analyze.Judge(&recs[i], c.Deadlines)
	}
	return recs
}

// record converts one outcome. The client is ideal: it sends and connects at
// the scheduled time, so every lag is zero and every time is the engine's.
func (c *Config) record(a *schedule.Arrival, out *sim.Outcome, t *tag) record.Record {
	rec := record.New(c.Run+"-"+strconv.FormatInt(a.Seq, 10), a.Seq, a.Phase, int64(a.At))
	rec.Profile, rec.MaxTokens, rec.Inputs, rec.Attempts = c.Profile, t.maxTokens(), t.inputs(), 1
	t.label(&rec)
	rec.SentNs, rec.ConnNs = int64(a.At), int64(a.At)
	if !out.Throttled { // the gateway's 429 never reached a replica
		rec.Replica = "r" + strconv.Itoa(out.Ticket.Replica)
	}
	at := func(d time.Duration) int64 {
		if d == sim.Never {
			return record.None
		}
		return int64(d)
	}
	rec.DoneNs = at(out.DoneAt)
	if c.Sim.HasGateway() {
		c.gateway(&rec, out)
	}
	switch {
	case out.Rejected:
		rec.Status, rec.Outcome, rec.Error = 429, record.RateLimited, "status 429"
		rec.HeadersNs = rec.DoneNs
		if out.RetryAfter > 0 {
			rec.RetryAfterNs = int64(out.RetryAfter)
		}
		return rec
	case out.Failed, out.Status == http.StatusBadRequest: // a fault's 500/503, or a request the engine refuses (too long)
		rec.Status, rec.Outcome, rec.Error = out.Status, record.HTTPError, "status "+strconv.Itoa(out.Status)
		rec.HeadersNs = rec.DoneNs
		return rec
	}
	rec.Status = out.Status
	if out.Status != 0 {
		rec.HeadersNs = int64(a.At + out.GatewayWait)
	}
	rec.FirstTokenNs = at(out.FirstTokenAt)
	if rec.Inputs > 0 && !out.TimedOut && !out.StreamFailed { // one JSON answer: its arrival is the first piece
		rec.FirstTokenNs, rec.FirstTextNs = rec.DoneNs, rec.DoneNs
	}
	rec.FirstChunkNs = rec.FirstTokenNs
	rec.OutputTokens, rec.PromptTokens, rec.Chunks = out.OutputTokens, out.PromptTokens, out.OutputTokens
	switch {
	case out.TimedOut:
		rec.Outcome, rec.Error = record.Timeout, "timeout after "+c.Timeout.String()
		rec.DoneNs = int64(a.At + c.Timeout)
		return rec
	case out.StreamFailed:
		rec.Outcome, rec.Error = record.StreamError, "stream broken (injected fault)"
		return rec
	}
	rec.Outcome, rec.UsageFromServer = record.OK, true
	rec.CachedTokens = out.CachedTokens
	if out.OutputTokens >= 2 {
		rec.ITLMaxNs = int64(out.MaxGap)
		rec.TPOTNs = (rec.DoneNs - rec.FirstTokenNs) / int64(out.OutputTokens-1)
	}
	if b := int64(c.Deadlines.Token); b > 0 && out.OutputTokens >= 1 {
		// The engine model decodes at an even pace: token i comes at
		// first + i × TPOT, so the latest of its time − i × budget is
		// the first token's, or the last one's when TPOT exceeds it.
		rec.SmoothNs = rec.FirstTokenNs
		if rec.TPOTNs != record.None && rec.TPOTNs > b {
			rec.SmoothNs += int64(out.OutputTokens-1) * (rec.TPOTNs - b)
		}
	}
	return rec
}

// gateway puts what the simulator's gateway announces into rec, as the
// HTTP simulator's headers would: its buckets (on every answer that had
// headers: not one that timed out while held, nor a 400 the engine
// refused before the gateway), a 429's Retry-After in whole seconds, and
// the wait of a request it let through (unless gateway_headers is none).
func (c *Config) gateway(rec *record.Record, out *sim.Outcome) {
	if out.Throttled {
		rec.RateLimit = RateLimitOf(&out.Quota)
		if out.RetryAfter > 0 {
			out.RetryAfter = time.Duration(math.Ceil(out.RetryAfter.Seconds())) * time.Second
		}
		return
	}
	if out.Status == 0 || out.Status == http.StatusBadRequest {
		return
	}
	rec.RateLimit = RateLimitOf(&out.Quota)
	if c.Sim.GatewayHeaders != "none" {
		rec.GatewayNs = int64(out.GatewayWait)
	}
}

// RateLimitOf is what a client reads from the rate-limit headers of a
// gateway's answer a.
func RateLimitOf(a *sim.Admission) record.RateLimit {
	l := record.NoRateLimit
	if b := a.Buckets[sim.BucketRequests]; b.On {
		l.LimitRequests, l.RemainingRequests, l.ResetRequestsNs = b.Limit, b.Remaining, int64(b.Reset)
	}
	if b := a.Buckets[sim.BucketTokensMinute]; b.On {
		l.LimitTokens, l.RemainingTokens, l.ResetTokensNs = b.Limit, b.Remaining, int64(b.Reset)
	}
	if b := a.Buckets[sim.BucketTokensDay]; b.On {
		l.LimitTokensDay, l.RemainingTokensDay, l.ResetTokensDayNs = b.Limit, b.Remaining, int64(b.Reset)
	}
	return l
}

// queueWaits returns the engine queue waits of the admitted requests by
// the phase of their arrival (Output.QueueWaits).
func queueWaits(b *batch) map[string]*analyze.WaitHist {
	m := map[string]*analyze.WaitHist{}
	for i := range b.outs {
		addWait(m, b.arrivals[i].Phase, &b.outs[i])
	}
	return m
}

// addWait records o's engine queue wait under phase when it was admitted.
func addWait(m map[string]*analyze.WaitHist, phase string, o *sim.Outcome) {
	if o.AdmittedAt == sim.Never {
		return
	}
	w := m[phase]
	if w == nil {
		w = &analyze.WaitHist{}
		m[phase] = w
	}
	w.Add(o.AdmittedAt - o.ScheduledAt - o.GatewayWait) // the engine's queue: from its arrival there, after the gateway
}

// output assembles the Output of a finished simulation.
func (c *Config) output(b *batch, samples []scrape.Sample, cl *sim.Cluster) *Output {
	return &Output{Records: c.records(b), Engine: samples, Events: cl.Events(), QueueWaits: queueWaits(b)}
}

// sampleMetrics are the metrics a simulator snapshot provides.
var sampleMetrics = []scrape.Metric{scrape.Waiting, scrape.Running, scrape.KVUsage, scrape.Replicas, scrape.ReplicasStarting, scrape.PromptTokens, scrape.GenerationTokens, scrape.Success}

// sample turns a simulator snapshot taken for time t into an engine
// sample, as if scraped at t.
func sample(t time.Duration, s sim.Snapshot) scrape.Sample {
	x := scrape.EmptySample(int64(t))
	x.Has = 0
	for _, m := range sampleMetrics {
		x.Has = x.Has.With(m)
	}
	x.Waiting, x.Running, x.KVUsage = float64(s.Waiting), float64(s.Running), s.KVUsage
	x.Replicas, x.ReplicasStarting = float64(s.ReadyReplicas), float64(s.StartingReplicas)
	x.PromptTokens, x.GenerationTokens, x.Success = float64(s.PromptTokens), float64(s.GenerationTokens), float64(s.Finished)
	return x
}

// inflight is what the ideal client observes of one request in the engine
// model, for the closed loop and sessions (their requests are the
// sim.Observers; Finished, which says where a finished request goes, is
// theirs).
type inflight struct {
	out      sim.Outcome
	last     time.Duration // the last token, for the longest gap
	deadline time.Duration // sim.Never without a timeout
	done     bool
}

// Scheduled notes the admission into the running batch.
func (f *inflight) Scheduled(now time.Duration) { f.out.AdmittedAt = now }

// Tokens notes the first token and the longest gap between tokens.
func (f *inflight) Tokens(now time.Duration, total int) {
	if f.done {
		return
	}
	if total == 1 {
		f.out.FirstTokenAt = now
	} else {
		f.out.MaxGap = max(f.out.MaxGap, now-f.last)
	}
	f.last, f.out.OutputTokens = now, total
}

// finish records the engine's result; false when the request had already
// ended (timed out).
func (f *inflight) finish(now time.Duration, res sim.Result) bool {
	if f.done {
		return false
	}
	f.out.DoneAt, f.out.PromptTokens, f.out.CachedTokens, f.out.FinishReason = now, res.PromptTokens, res.CachedTokens, res.FinishReason
	f.done = true
	return true
}

// timeOut ends the request at its deadline if that has come, and reports
// whether it did (the caller cancels it in the engine).
func (f *inflight) timeOut(t time.Duration) bool {
	if f.done || f.deadline == sim.Never || f.deadline > t {
		return false
	}
	f.out.TimedOut, f.out.DoneAt, f.done = true, f.deadline, true
	return true
}
