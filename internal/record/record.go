// Package record defines the Record — one line of requests.jsonl per scheduled
// arrival — and streams records to and from disk.
//
// A Record is the contract between the load generator, the analysis, merge
// and users' own scripts. All times are nanoseconds since the run's origin
// (one monotonic origin per run). A boundary that was never reached (a
// request dropped by the generator has no sent time; a failed request may
// have no first token) holds None in memory and is absent from the JSON line.
//
// A Record never holds prompt text, response text, API keys or headers.
package record

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// None marks a timestamp or duration that was not reached or not known.
const None int64 = -1

// Outcome classifies how a request ended.
type Outcome string

// The outcomes a Record can carry.
const (
	OK              Outcome = "ok"               // complete, valid response
	GeneratorDrop   Outcome = "generator_drop"   // the in-flight cap was full at the scheduled time; never sent
	RateLimited     Outcome = "rate_limited"     // HTTP 429
	HTTPError       Outcome = "http_error"       // any other non-2xx status
	Timeout         Outcome = "timeout"          // the per-request timeout expired
	ConnError       Outcome = "conn_error"       // could not connect or send
	StreamError     Outcome = "stream_error"     // reset mid-stream, malformed chunk, missing [DONE]
	InvalidResponse Outcome = "invalid_response" // 200 but the body is not a valid completion
	Cancelled       Outcome = "cancelled"        // the run was interrupted before the request finished
)

// Outcomes lists every outcome in a stable order, for tables.
var Outcomes = []Outcome{OK, GeneratorDrop, RateLimited, HTTPError, Timeout, ConnError, StreamError, InvalidResponse, Cancelled}

// Valid reports whether o is one of the known outcomes.
func (o Outcome) Valid() bool {
	for _, k := range Outcomes {
		if o == k {
			return true
		}
	}
	return false
}

// Cause is why an arrival of a coordinated run (--workers) ended without
// an answer for a reason outside the target and outside the load
// generator's own rules: the analysis reads it, never Error's text, to
// tell a lost worker's generator_drop from the in-flight cap's and its
// cancelled records from a Ctrl-C of the run.
type Cause string

// The causes a Record can carry (the empty Cause is none).
const (
	// CauseWorkerLost: the coordinator lost the worker that had the
	// arrival (its connection dropped, or it fell silent): cancelled when
	// the worker had it in flight, generator_drop when it was never sent.
	CauseWorkerLost Cause = "worker_lost"
	// CauseWorkerInterrupted: the worker that had the arrival was
	// interrupted on its own machine (Ctrl-C or SIGTERM there) and said so:
	// cancelled for its requests in flight (records it sent),
	// generator_drop for its arrivals not yet sent.
	CauseWorkerInterrupted Cause = "worker_interrupted"
	// CauseUnrecorded: never in a file. The analysis of a run that ended
	// without writing every record (killed, or its disk full) counts each
	// arrival that was due and has no line as a cancelled record with
	// this cause: offered, cut short by surge, not a failure of the target.
	CauseUnrecorded Cause = "unrecorded"
)

// Worker reports whether c is a worker's end (lost or interrupted).
func (c Cause) Worker() bool { return c == CauseWorkerLost || c == CauseWorkerInterrupted }

// SchemaVersion is the version of the run folder's files: every line of
// requests.jsonl, manifest.json, summary.json and results.json carries it
// as "schema_version". Version 1 is the layout before files carried one
// (read as 0); version 2 added partial_cause, arrivals and seen_ns. A
// field is renamed or removed only with a new version; docs/schema/ holds
// the JSON Schema of each file.
const SchemaVersion = 2

// linePrefix starts every line AppendJSON writes.
var linePrefix = `{"schema_version":` + strconv.Itoa(SchemaVersion) + `,"id":`

// Record is the measurement of one scheduled arrival.
type Record struct {
	// Schema is the schema_version of the line it was read from (0 for a
	// line from before versions); AppendJSON always writes SchemaVersion.
	Schema int    `json:"schema_version"`
	ID     string `json:"id"`    // request id, unique within a run
	Seq    int64  `json:"seq"`   // sequence number in the schedule (0-based)
	Phase  string `json:"phase"` // phase of the scheduled arrival

	ScheduledNs  int64 `json:"scheduled_ns"`   // when the schedule wanted it sent
	SentNs       int64 `json:"sent_ns"`        // handed to the HTTP client; None for generator_drop
	ConnNs       int64 `json:"conn_ns"`        // connection acquired (httptrace GotConn)
	HeadersNs    int64 `json:"headers_ns"`     // response headers received
	FirstChunkNs int64 `json:"first_chunk_ns"` // first SSE data chunk of any kind
	FirstTokenNs int64 `json:"first_token_ns"` // first chunk carrying a token of any kind: text, reasoning or tool-call delta
	FirstTextNs  int64 `json:"first_text_ns"`  // first chunk carrying answer text (not reasoning, not a tool call)
	DoneNs       int64 `json:"done_ns"`        // response complete (or failure observed)

	Status  int     `json:"status"`  // HTTP status; 0 if none was received
	Outcome Outcome `json:"outcome"` // how it ended
	Good    bool    `json:"good"`    // the per-request deadline held (counts toward goodput)
	Error   string  `json:"error"`   // short classification detail; never content or secrets
	// Cause says what ended a generator_drop or cancelled record when it
	// was not this process's own in-flight cap or interruption: the
	// worker of a coordinated run that had the arrival was lost or
	// interrupted. Empty otherwise (absent from the line).
	Cause Cause `json:"cause"`

	PromptTokens int `json:"prompt_tokens"` // from server usage; 0 if unknown
	OutputTokens int `json:"output_tokens"` // from server usage (or counted chunks if no usage)
	MaxTokens    int `json:"max_tokens"`    // max_tokens requested
	// Inputs is the number of texts an embeddings request embedded, or
	// of documents a rerank request scored; 0 for the generating APIs.
	Inputs int `json:"inputs"`
	// RequestBytes is the size of the request body sent (the last
	// attempt's): what a burst of images puts on the network.
	RequestBytes    int  `json:"request_bytes"`
	Images          int  `json:"images"`            // images the request carried
	UsageFromServer bool `json:"usage_from_server"` // token counts came from the server's usage
	ReasoningTokens int  `json:"reasoning_tokens"`  // usage.completion_tokens_details.reasoning_tokens; 0 if not reported
	CachedTokens    int  `json:"cached_tokens"`     // prompt tokens served from the engine's cache, when it says

	ITLMaxNs int64 `json:"itl_max_ns"` // longest gap between content chunks; None if < 2 chunks
	TPOTNs   int64 `json:"tpot_ns"`    // (done − first token) / (output tokens − 1); None if < 2 tokens
	Chunks   int   `json:"chunks"`     // content chunks received
	// UnknownEvents counts the streamed events of a type the API's
	// grammar does not know (Responses, Messages): ignored, not errors.
	UnknownEvents int `json:"unknown_events"`
	// SmoothNs is the latest, over the content chunks, of chunk i's time
	// − (i − 1) × the per-token budget (--token-deadline): the first-token
	// time a stream steady at the budget would need to deliver every
	// chunk on time. None without a budget or content.
	SmoothNs int64 `json:"smooth_ns"`

	Attempts     int   `json:"attempts"`       // attempts made (1 without retries; conn_retries not counted)
	ConnRetries  int   `json:"conn_retries"`   // replays on a fresh connection after a reused one failed before any response byte
	RetryAfterNs int64 `json:"retry_after_ns"` // server's Retry-After hint; None if not given

	// Rate-limit headers of the last response (x-ratelimit-*); None if absent.
	RateLimit RateLimit `json:"ratelimit"`

	// The engine's own per-request timing (OTLP spans, llama.cpp timings,
	// TGI headers); None when the engine did not report it.
	EngineQueueNs   int64 `json:"engine_queue_ns"`
	EnginePrefillNs int64 `json:"engine_prefill_ns"`
	EngineDecodeNs  int64 `json:"engine_decode_ns"`
	EngineE2ENs     int64 `json:"engine_e2e_ns"`

	// A gateway's own account of the request, from its timing headers
	// (--gateway-timing): how long it held the request before passing it
	// upstream (its queue, rate limiter, auth, routing), and the
	// upstream's time to its response headers. None when not announced.
	GatewayNs  int64 `json:"gateway_ns"`
	UpstreamNs int64 `json:"upstream_ns"`

	// ServerTiming holds the W3C Server-Timing durations of the response
	// (a gateway's or router's own stages), in header order.
	ServerTiming []Timing `json:"server_timing"`

	TraceID string `json:"trace_id"` // W3C trace id sent in traceparent (32 hex digits)

	Replica string `json:"replica"` // the server replica that answered, when it says (simulator)
	Profile string `json:"profile"` // workload profile
	Shard   int    `json:"shard"`   // index of the generator (shard or worker) that sent it, Seq mod Distribution.Generators; 0 for one process

	// Where the request came from in the workload (never its text): the
	// dataset row, the session and turn, the fan-out branch, and how many
	// of its prompt tokens the workload meant to share with other requests.
	// Zero when it does not apply.
	DatasetRow   int   `json:"dataset_row"`   // 1-based row of the dataset (JSONL line, ShareGPT conversation)
	Session      int64 `json:"session"`       // 1-based session number (the Seq of its first arrival + 1)
	Turn         int   `json:"turn"`          // 1-based turn within the session
	SessionTurns int   `json:"session_turns"` // turns the session was planned to have (so a session cut short is visible from its records)
	Branch       int   `json:"branch"`        // fan-out sub-request of the turn, 1-based; 0 = the turn itself
	PrefixTokens int   `json:"prefix_tokens"` // intended prompt tokens shared with other requests (system prompt, earlier turns, trace hash blocks)
}

// Timing is one named duration of a Server-Timing header.
type Timing struct {
	Name  string `json:"name"`   // metric name, a safe token
	DurNs int64  `json:"dur_ns"` // its dur, in nanoseconds
}

// RateLimit holds the numeric x-ratelimit-* response headers (OpenAI's
// names: limit-requests, remaining-requests, reset-requests, and the same
// for tokens; DigitalOcean's -tokens-per-minute and -tokens-per-day).
// Every field is None when the header was absent.
type RateLimit struct {
	LimitRequests     int64 `json:"limit_requests"`
	LimitTokens       int64 `json:"limit_tokens"` // the minute's bucket where a provider also has a day's
	RemainingRequests int64 `json:"remaining_requests"`
	RemainingTokens   int64 `json:"remaining_tokens"`
	ResetRequestsNs   int64 `json:"reset_requests_ns"`
	ResetTokensNs     int64 `json:"reset_tokens_ns"`
	// The day's token bucket, where a provider has one beside the
	// minute's (x-ratelimit-*-tokens-per-day).
	LimitTokensDay     int64 `json:"limit_tokens_day"`
	RemainingTokensDay int64 `json:"remaining_tokens_day"`
	ResetTokensDayNs   int64 `json:"reset_tokens_day_ns"`
	// Unparsed counts the rate-limit headers present whose value was not
	// a number surge reads (garbage, negative, a unit it does not know):
	// counted, never kept.
	Unparsed int `json:"unparsed"`
}

// NoRateLimit is a RateLimit with every field None.
var NoRateLimit = RateLimit{None, None, None, None, None, None, None, None, None, 0}

// Seen reports whether any rate-limit header was present.
func (l RateLimit) Seen() bool { return l != NoRateLimit }

// New returns a Record with every optional time set to None.
func New(id string, seq int64, phase string, scheduledNs int64) Record {
	return Record{
		ID: id, Seq: seq, Phase: phase, ScheduledNs: scheduledNs,
		SentNs: None, ConnNs: None, HeadersNs: None, FirstChunkNs: None,
		FirstTokenNs: None, FirstTextNs: None, DoneNs: None, ITLMaxNs: None, TPOTNs: None, SmoothNs: None,
		RetryAfterNs: None, RateLimit: NoRateLimit,
		EngineQueueNs: None, EnginePrefillNs: None, EngineDecodeNs: None, EngineE2ENs: None,
		GatewayNs: None, UpstreamNs: None,
	}
}

// Sent reports whether the request left the generator.
func (r *Record) Sent() bool { return r.SentNs != None }

// TTFTSend is first content token − sent, or None.
func (r *Record) TTFTSend() int64 { return diff(r.FirstTokenNs, r.SentNs) }

// TTFTTextSend is first answer text − sent, or None.
func (r *Record) TTFTTextSend() int64 { return diff(r.FirstTextNs, r.SentNs) }

// ConnWait is connection acquired − sent (the client's own queue), or None.
func (r *Record) ConnWait() int64 { return diff(r.ConnNs, r.SentNs) }

// TTFTSchedule is first content token − scheduled arrival, or None.
func (r *Record) TTFTSchedule() int64 { return diff(r.FirstTokenNs, r.ScheduledNs) }

// E2ESend is done − sent, or None.
func (r *Record) E2ESend() int64 { return diff(r.DoneNs, r.SentNs) }

// E2ESchedule is done − scheduled arrival, or None.
func (r *Record) E2ESchedule() int64 { return diff(r.DoneNs, r.ScheduledNs) }

// Lag is the schedule lag, sent − scheduled, or None.
func (r *Record) Lag() int64 { return diff(r.SentNs, r.ScheduledNs) }

func diff(a, b int64) int64 {
	if a == None || b == None {
		return None
	}
	return a - b
}

// AppendJSON appends r as one JSON object (no newline) to b. Fields at None
// and empty strings are left out. It does not allocate beyond growing b.
func (r *Record) AppendJSON(b []byte) []byte {
	b = append(b, linePrefix...)
	b = strconv.AppendQuote(b, r.ID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"phase":`...)
	b = strconv.AppendQuote(b, r.Phase)
	b = append(b, `,"scheduled_ns":`...)
	b = strconv.AppendInt(b, r.ScheduledNs, 10)
	b = appendOpt(b, "sent_ns", r.SentNs)
	b = appendOpt(b, "conn_ns", r.ConnNs)
	b = appendOpt(b, "headers_ns", r.HeadersNs)
	b = appendOpt(b, "first_chunk_ns", r.FirstChunkNs)
	b = appendOpt(b, "first_token_ns", r.FirstTokenNs)
	b = appendOpt(b, "first_text_ns", r.FirstTextNs)
	b = appendOpt(b, "done_ns", r.DoneNs)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"outcome":`...)
	b = strconv.AppendQuote(b, string(r.Outcome))
	b = append(b, `,"good":`...)
	b = strconv.AppendBool(b, r.Good)
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = strconv.AppendQuote(b, r.Error)
	}
	if r.Cause != "" {
		b = append(b, `,"cause":`...)
		b = strconv.AppendQuote(b, string(r.Cause))
	}
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(r.PromptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.OutputTokens), 10)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(r.MaxTokens), 10)
	b = append(b, `,"usage_from_server":`...)
	b = strconv.AppendBool(b, r.UsageFromServer)
	b = appendNonZero(b, "reasoning_tokens", r.ReasoningTokens)
	b = appendNonZero(b, "cached_tokens", r.CachedTokens)
	b = appendOpt(b, "itl_max_ns", r.ITLMaxNs)
	b = appendOpt(b, "tpot_ns", r.TPOTNs)
	b = appendOpt(b, "smooth_ns", r.SmoothNs)
	b = append(b, `,"chunks":`...)
	b = strconv.AppendInt(b, int64(r.Chunks), 10)
	b = appendNonZero(b, "unknown_events", r.UnknownEvents)
	b = appendNonZero(b, "inputs", r.Inputs)
	b = appendNonZero(b, "request_bytes", r.RequestBytes)
	b = appendNonZero(b, "images", r.Images)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = appendNonZero(b, "conn_retries", r.ConnRetries)
	b = appendOpt(b, "retry_after_ns", r.RetryAfterNs)
	if r.RateLimit.Seen() {
		l := &r.RateLimit
		b = append(b, `,"ratelimit":`...)
		n := len(b)
		b = appendOpt(b, "limit_requests", l.LimitRequests)
		b = appendOpt(b, "limit_tokens", l.LimitTokens)
		b = appendOpt(b, "remaining_requests", l.RemainingRequests)
		b = appendOpt(b, "remaining_tokens", l.RemainingTokens)
		b = appendOpt(b, "reset_requests_ns", l.ResetRequestsNs)
		b = appendOpt(b, "reset_tokens_ns", l.ResetTokensNs)
		b = appendOpt(b, "limit_tokens_day", l.LimitTokensDay)
		b = appendOpt(b, "remaining_tokens_day", l.RemainingTokensDay)
		b = appendOpt(b, "reset_tokens_day_ns", l.ResetTokensDayNs)
		b = appendNonZero(b, "unparsed", l.Unparsed)
		b[n] = '{' // replaces the first field's leading comma (Seen: there is one)
		b = append(b, '}')
	}
	b = appendOpt(b, "engine_queue_ns", r.EngineQueueNs)
	b = appendOpt(b, "engine_prefill_ns", r.EnginePrefillNs)
	b = appendOpt(b, "engine_decode_ns", r.EngineDecodeNs)
	b = appendOpt(b, "engine_e2e_ns", r.EngineE2ENs)
	b = appendOpt(b, "gateway_ns", r.GatewayNs)
	b = appendOpt(b, "upstream_ns", r.UpstreamNs)
	if len(r.ServerTiming) > 0 {
		b = append(b, `,"server_timing":[`...)
		for i, t := range r.ServerTiming {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = strconv.AppendQuote(b, t.Name)
			b = append(b, `,"dur_ns":`...)
			b = strconv.AppendInt(b, t.DurNs, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.TraceID != "" {
		b = append(b, `,"trace_id":`...)
		b = strconv.AppendQuote(b, r.TraceID)
	}
	if r.Replica != "" {
		b = append(b, `,"replica":`...)
		b = strconv.AppendQuote(b, r.Replica)
	}
	if r.Profile != "" {
		b = append(b, `,"profile":`...)
		b = strconv.AppendQuote(b, r.Profile)
	}
	b = append(b, `,"shard":`...)
	b = strconv.AppendInt(b, int64(r.Shard), 10)
	b = appendNonZero(b, "dataset_row", r.DatasetRow)
	if r.Session != 0 {
		b = append(b, `,"session":`...)
		b = strconv.AppendInt(b, r.Session, 10)
	}
	b = appendNonZero(b, "turn", r.Turn)
	b = appendNonZero(b, "session_turns", r.SessionTurns)
	b = appendNonZero(b, "branch", r.Branch)
	b = appendNonZero(b, "prefix_tokens", r.PrefixTokens)
	return append(b, '}')
}

func appendNonZero(b []byte, name string, v int) []byte {
	if v == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(v), 10)
}

func appendOpt(b []byte, name string, v int64) []byte {
	if v == None {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

// MarshalJSON implements json.Marshaler with the same encoding as AppendJSON.
func (r Record) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler; absent times become None.
func (r *Record) UnmarshalJSON(data []byte) error {
	type plain Record // no methods: avoids recursion
	p := plain(New("", 0, "", 0))
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*r = Record(p)
	if r.Outcome != "" && !r.Outcome.Valid() {
		return fmt.Errorf("unknown outcome %q", r.Outcome)
	}
	return nil
}
