package sim

import (
	"errors"
	"fmt"
	"time"
)

// Never marks a time that was not reached (a request that never got a first
// token, for example). Real times are offsets ≥ 0 on the caller's clock.
const Never time.Duration = -1

// Request is what the engine needs to know about one request.
type Request struct {
	PromptTokens int  // prompt length in tokens (≥ 1)
	MaxTokens    int  // max_tokens; 0 = unset (the cap is then max_model_len − prompt)
	IgnoreEOS    bool // generate exactly the cap instead of a natural length
	// Blocks are the chained hashes of the prompt's full blocks
	// (PrefixHasher), for the prefix cache; nil = nothing to look up.
	// Submit copies them: the caller may reuse the slice.
	Blocks []uint64
	// PrefillOnly marks pooling work (embeddings, reranking): the request
	// generates no token and finishes when its prompt is prefilled.
	// MaxTokens must be 0 and IgnoreEOS false; its cap is 0, so it
	// reserves prompt_tokens KV tokens. It may be longer than
	// max_model_len (it may stand for a batch of inputs, each within it:
	// the caller checks them) but must fit kv_cache_tokens.
	PrefillOnly bool
}

// FaultKind names an injected fault.
type FaultKind int

// The faults the simulator can inject. Fault500 and Fault503 are answered
// at Submit and never enter the engine; the others are a plan that the
// caller (HTTP facade or Simulate) enacts on an otherwise normal stream.
const (
	FaultNone        FaultKind = iota // no fault
	Fault500                          // answer HTTP 500 instead of running the request
	Fault503                          // answer HTTP 503 instead of running the request
	FaultReset                        // reset the connection instead of sending token AtToken
	FaultMalformed                    // send token AtToken as a malformed SSE chunk (and end the stream)
	FaultStall                        // hold the stream for Delay before token AtToken
	FaultSlowHeaders                  // send the response headers Delay after the request arrived
)

var faultNames = [...]string{"none", "500", "503", "reset", "malformed", "stall", "slow_headers"}

// String returns the fault's short name (none, 500, 503, reset, malformed,
// stall, slow_headers).
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// FaultPlan is the fault decided for one request at Submit, deterministic
// from the seed and the order of submissions.
type FaultPlan struct {
	Kind FaultKind
	// AtToken is the 1-based index of the output token the fault strikes at
	// (reset, malformed, stall), uniform in [1, output length]; 0 otherwise,
	// and 0 for a prefill-only request (no output token: the fault strikes
	// at its answer).
	AtToken int
	// Delay is the stall length or the header delay; 0 otherwise.
	Delay time.Duration
}

// Ticket identifies a submitted request.
type Ticket struct {
	ID      uint64    // unique within a Cluster, from 1
	Replica int       // replica the router chose
	Fault   FaultPlan // injected fault, if any
}

// Result describes a finished request.
type Result struct {
	PromptTokens int
	OutputTokens int
	CachedTokens int           // prompt tokens served from the prefix cache (0 without one)
	FinishReason string        // "stop" (natural end) or "length" (reached the cap)
	Replica      int           // replica that served it
	QueueTime    time.Duration // admitted − arrived (time in the waiting queue)

	ArrivedAt    time.Duration // Submit time
	AdmittedAt   time.Duration // entered the running batch
	FirstTokenAt time.Duration // first output token
	DoneAt       time.Duration // last output token
}

// Observer follows one request. Its methods are called synchronously from
// Submit, Advance and the other Cluster methods, in time order. They may
// call Cancel (of any request) but nothing else on the Cluster.
type Observer interface {
	// Scheduled is called when the request leaves the waiting queue and
	// enters the running batch.
	Scheduled(now time.Duration)
	// Tokens is called once per output token with the total generated so
	// far; the first call (total 1) is the first token.
	Tokens(now time.Duration, total int)
	// Finished is called once when the last token has been generated (for
	// a prefill-only request, when its prefill completed: no Tokens call
	// precedes it). It is not called for a cancelled request.
	Finished(now time.Duration, res Result)
}

// ErrQueueFull is matched (errors.Is) by the *QueueFullError that Submit
// returns when the chosen replica's waiting queue is full.
var ErrQueueFull = errors.New("sim: waiting queue full")

// QueueFullError is admission control's refusal (HTTP 429).
type QueueFullError struct {
	Replica    int           // replica whose queue was full
	Waiting    int           // its waiting requests
	RetryAfter time.Duration // estimated time for the queue to drain, whole seconds, ≥ 1 s
}

// Error implements error.
func (e *QueueFullError) Error() string {
	return fmt.Sprintf("sim: replica %d: waiting queue full (%d waiting), retry after %v", e.Replica, e.Waiting, e.RetryAfter)
}

// Is makes errors.Is(err, ErrQueueFull) true.
func (e *QueueFullError) Is(target error) bool { return target == ErrQueueFull }

// The kinds of scaling events.
const (
	EventScaleTrigger      = "scale_trigger"      // threshold held for scale_up_hold
	EventCapacityRequested = "capacity_requested" // a new replica was requested
	EventNodeReady         = "node_ready"         // its node is ready
	EventContainerReady    = "container_ready"    // its container is running
	EventModelReady        = "model_ready"        // model loaded; it receives requests from now on
	EventFirstServed       = "first_served"       // it admitted its first request into its batch
	EventScaleDown         = "scale_down"         // an idle replica was removed
)

// Event is a scaling milestone.
type Event struct {
	At      time.Duration `json:"at"`
	Kind    string        `json:"kind"`
	Replica int           `json:"replica"`
	Detail  string        `json:"detail,omitempty"`
}

// Snapshot is the state of the cluster at one instant.
type Snapshot struct {
	At               time.Duration
	Waiting          int           // requests in waiting queues (ready replicas, and the one starting when scaled from zero)
	Running          int           // sequences in running batches
	KVUsage          float64       // reserved KV tokens / capacity over ready replicas, 0..1
	ReadyReplicas    int           // replicas that receive requests
	StartingReplicas int           // replicas requested but not yet model_ready
	OldestWaiting    time.Duration // age of the oldest waiting request; 0 if none
	Replicas         []ReplicaStats

	// Cumulative counters since the Cluster was created.
	Submitted        uint64 // Submit calls that passed CheckRequest
	Rejected         uint64 // ErrQueueFull answers
	Failed           uint64 // Fault500 and Fault503 answers
	Admitted         uint64 // entered a running batch
	Finished         uint64 // completed normally
	FinishedStop     uint64 // of Finished, with finish reason "stop"
	FinishedLength   uint64 // of Finished, with finish reason "length"
	Cancelled        uint64 // cancelled while waiting or running
	PromptTokens     uint64 // prompt tokens processed, those served from the prefix cache included (as vLLM counts them)
	CachedTokens     uint64 // of PromptTokens, served from the prefix cache
	QueriedTokens    uint64 // prompt tokens of the requests looked up in the prefix cache (0 without one)
	GenerationTokens uint64 // output tokens generated
	Steps            uint64 // engine steps completed
}

// ReplicaStats is one replica's part of a Snapshot.
type ReplicaStats struct {
	Index            int
	State            string // "ready" or "starting"
	Awaiting         string // for a starting replica, the next milestone (an Event kind)
	Waiting          int
	Running          int
	KVReservedTokens int           // reserved by running sequences (gates admission)
	KVUsedTokens     int           // prompt tokens prefilled + tokens generated by running sequences
	KVCapacityTokens int           // kv_cache_tokens
	KVUsage          float64       // KVReservedTokens / KVCapacityTokens
	OldestWaiting    time.Duration // age of its oldest waiting request; 0 if none
	Admitted         uint64
	Finished         uint64
	Steps            uint64
}

// ImagePatch is the side of the square of pixels that one image token
// covers: a vision encoder's patch after merging (Qwen2-VL's 14-pixel
// patches merged 2×2). An image of W×H pixels costs ⌈W/28⌉·⌈H/28⌉ prompt
// tokens, prefilled like text.
const ImagePatch = 28

// ImageTokens is the prompt tokens of an image of w×h pixels.
func ImageTokens(w, h int) int {
	return ((w + ImagePatch - 1) / ImagePatch) * ((h + ImagePatch - 1) / ImagePatch)
}
