// Package check verifies the behaviour production traffic depends on, one
// check at a time, before traffic is routed to an endpoint: streaming that
// really streams, usage that is sent and right, tool calls and structured
// output that parse, long prompts, stop/temperature/max_tokens/seed, and
// what errors and overload look like (docs/checks.md).
//
// Each API has its suite (Suite): chat and completions the checks above;
// the Responses and Messages APIs, embeddings and rerank suites of their
// own, whose checks are named after the API (messages.tools,
// rerank.order). Every suite opens with a gate (Check.Gate): the api
// check, or the API's "served" check; when it FAILs the rest SKIP.
//
// A Check sends a few requests through a Probe (a plain HTTP client that
// keeps every chunk and its arrival time in memory) and returns a Result:
// PASS, FAIL, WARN or SKIP with its evidence in a few words. Content —
// prompts, answers, tool arguments — never leaves memory: evidence names
// counts, lengths, times, statuses and field names only.
package check

import (
	"context"
	"time"

	"github.com/surge-bench/surge/internal/workload"
)

// Status is the verdict of one check.
type Status string

// The statuses, from best to worst for the exit code: a FAIL of a check
// that ran fails the command; WARN and SKIP do not.
const (
	Pass Status = "PASS"
	Warn Status = "WARN" // works, with a caveat the user should know
	Skip Status = "SKIP" // not run or not applicable; Evidence says why
	Fail Status = "FAIL"
)

// Groups of checks, in the order they run. --only, --skip and --require
// take a group name or a check's full name.
const (
	GroupAPI        = "api"
	GroupStreaming  = "streaming"
	GroupUsage      = "usage"
	GroupTools      = "tools"
	GroupStructured = "structured"
	GroupContext    = "context"
	GroupSampling   = "sampling"
	GroupErrors     = "errors"
	// The suites of the other APIs are one group each, named for the API.
	GroupResponses  = APIResponses
	GroupMessages   = APIMessages
	GroupEmbeddings = APIEmbeddings
	GroupRerank     = APIRerank
)

// Names of the checks (group.check). The simulator quirk that breaks each
// one is in the comment; the tests run every check both ways.
const (
	CheckAPI                 = "api"                   // is it an OpenAI API; is the model served
	CheckStreamIncremental   = "streaming.incremental" // buffered-stream
	CheckStreamLong          = "streaming.long"        // a long generation ends with [DONE]
	CheckStreamKeepAlive     = "streaming.keepalive"   // close-after-response
	CheckUsageStream         = "usage.stream"          // no-usage
	CheckUsageCount          = "usage.count"           // usage = counted content chunks
	CheckUsageUnary          = "usage.unary"           // no-usage
	CheckToolsCall           = "tools.call"            // bad-tool-args
	CheckToolsParallel       = "tools.parallel"        // bad-tool-args
	CheckToolsEmptyArgs      = "tools.empty-args"      // bad-tool-args
	CheckStructuredSchema    = "structured.schema"     // schema-violations
	CheckContextLong         = "context.long"          // the profile's longest prompt is accepted
	CheckContextExceeded     = "context.exceeded"      // a clean 400 past the context length
	CheckSamplingStop        = "sampling.stop"         // ignore-stop
	CheckSamplingTemperature = "sampling.temperature0" // same text twice at temperature 0 (WARN only)
	CheckSamplingMaxTokens   = "sampling.max-tokens"   // ignore-max-tokens
	CheckSamplingSeed        = "sampling.seed"         // same seed, same text
	CheckErrorsMalformed     = "errors.malformed"      // 4xx with an OpenAI error body
	CheckErrorsOverload      = "errors.overload"       // no-retry-after, truncate-on-overload
)

// Names of the checks of the Responses, Messages, embeddings and rerank
// suites. The comment says what breaks each; the tests fail every one
// with a hand-written server (and the simulator's quirk, where one fits).
const (
	CheckResponsesServed    = "responses.served"    // 404/405 on POST /v1/responses
	CheckResponsesStreaming = "responses.streaming" // buffered-stream: every delta at the end
	CheckResponsesUsage     = "responses.usage"     // no-usage; output_tokens ≠ deltas
	CheckResponsesEnd       = "responses.end"       // no response.completed; status ≠ the end event's
	CheckResponsesErrors    = "responses.errors"    // 5xx, 2xx or no OpenAI error body to a bad request

	CheckMessagesServed    = "messages.served"    // 404/405 on POST /v1/messages
	CheckMessagesStreaming = "messages.streaming" // buffered-stream
	CheckMessagesUsage     = "messages.usage"     // no-usage; output_tokens ≠ deltas
	CheckMessagesEnd       = "messages.end"       // no message_stop; blocks not closed; no stop_reason
	CheckMessagesTools     = "messages.tools"     // bad-tool-args: input_json_delta that is not JSON
	CheckMessagesErrors    = "messages.errors"    // no Anthropic error body to a bad request

	CheckEmbeddingsServed     = "embeddings.served"     // 404/405 on POST /v1/embeddings
	CheckEmbeddingsBatch      = "embeddings.batch"      // fewer vectors than inputs, indexes wrong
	CheckEmbeddingsDimensions = "embeddings.dimensions" // vectors of different lengths
	CheckEmbeddingsUsage      = "embeddings.usage"      // no-usage
	CheckEmbeddingsErrors     = "embeddings.errors"     // no OpenAI error body to a bad request

	CheckRerankServed  = "rerank.served"  // 404/405 on POST /v1/rerank
	CheckRerankResults = "rerank.results" // a result missing, an index repeated or out of range
	CheckRerankOrder   = "rerank.order"   // results not by relevance_score, highest first
	CheckRerankUsage   = "rerank.usage"   // no-usage
	CheckRerankErrors  = "rerank.errors"  // no OpenAI error body to a bad request
)

// Result is what one check found. Name and Group are filled by the
// runner; Requests and Duration too.
type Result struct {
	Name     string        `json:"name"`
	Group    string        `json:"group"`
	Status   Status        `json:"status"`
	Evidence string        `json:"evidence"` // a few words: measured values, statuses; never content
	Required bool          `json:"required,omitempty"`
	Requests int           `json:"requests"` // requests the check sent
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"seconds"`
	// Details are the check's measurements by name (numbers, statuses,
	// header names), for check.json; never content.
	Details map[string]any `json:"details,omitempty"`
}

// Check is one verification.
type Check struct {
	Name  string // CheckStreamIncremental, …
	Group string // GroupStreaming, …
	// What is the one line docs and --help give: what it verifies.
	What string
	// Run sends its requests through t.Probe and returns its verdict.
	// It must bound its own requests and time (t.Config), and return
	// Skip with a reason when the endpoint lacks what it needs.
	Run func(ctx context.Context, t *T) Result
	// Gate, set on the first check of each suite (api, messages.served,
	// …), makes it the suite's gate: it always runs, first; when it
	// FAILs every later check is a SKIP; its error, non-nil when the
	// first request got no response at all, makes Run (the runner) stop
	// with ErrUnreachable. The runner calls Gate instead of Run; the
	// check's Run is Gate without the error, for a caller that runs the
	// check alone.
	Gate func(ctx context.Context, t *T) (Result, error)
}

// T is what a check gets: the probe, the configuration, and what the api
// check learned about the server.
type T struct {
	Probe  *Probe
	Config Config
	Server Server
}

// Server is what the first check learned about the endpoint.
type Server struct {
	Models      []string // ids /v1/models listed
	MaxModelLen int      // the served model's context length; 0 = not reported
	// Engine is a guess from headers and /v1/models ("vllm", "ollama",
	// "llama.cpp", "surge-sim", ""), for the report only.
	Engine string
}

// Config is the check suite's configuration (cmd/surge binds a flag to
// each field).
type Config struct {
	// API is the API the suite checks, the probe's (--api; "" is chat):
	// it picks the suite (Suite), and so the names Only, Skip and Require
	// may give.
	API string
	// Only runs just these checks or groups; Skip leaves these out;
	// Require turns a SKIP of these (feature missing) into a FAIL.
	Only, Skip, Require []string
	// LongTokens is max_tokens of the long generation (streaming.long).
	LongTokens int
	// ContextTokens is the prompt length of context.long; 0 = the
	// profile's longest prompt.
	ContextTokens int
	// OverloadRequests bounds every request errors.overload sends.
	OverloadRequests int
	// Timeout bounds each request (0 = DefaultTimeout).
	Timeout time.Duration
	// Deadline bounds the whole suite (0 = DefaultDeadline): the check
	// under way when it passes and those after it are SKIPs that say so.
	Deadline time.Duration
	// Profile is the workload whose prompt lengths context.long takes
	// (its longest prompt, and the median for comparison); the zero
	// Profile is the chat profile.
	Profile workload.Profile
}

// Defaults of Config.
const (
	DefaultLongTokens       = 512
	DefaultOverloadRequests = 512
	DefaultTimeout          = 60 * time.Second
	// DefaultDeadline is five minutes: a healthy endpoint passes the whole
	// suite in well under one (13 s against vLLM on CPU, 35 s against
	// Ollama in CI); a hung or misbehaving one would otherwise cost a
	// timeout per request.
	DefaultDeadline = 5 * time.Minute
)

// DefaultConfig returns the defaults: every check, nothing required.
func DefaultConfig() Config {
	return Config{LongTokens: DefaultLongTokens, OverloadRequests: DefaultOverloadRequests, Timeout: DefaultTimeout, Deadline: DefaultDeadline}
}

// APIs lists the APIs surge check has a suite for, in the order --help
// names them.
func APIs() []string {
	return []string{APIChat, APICompletions, APIResponses, APIMessages, APIEmbeddings, APIRerank}
}

// Suite returns the checks of api ("" is chat) in the order they run,
// its gate first; nil for an API without a suite. Chat and completions
// share one.
func Suite(api string) []Check {
	var groups [][]Check
	switch api {
	case "", APIChat, APICompletions:
		groups = [][]Check{apiChecks(), streamingChecks(), usageChecks(), toolChecks(), structuredChecks(), contextChecks(), samplingChecks(), errorChecks()}
	case APIResponses:
		groups = [][]Check{responsesChecks()}
	case APIMessages:
		groups = [][]Check{messagesChecks()}
	case APIEmbeddings:
		groups = [][]Check{embeddingsChecks()}
	case APIRerank:
		groups = [][]Check{rerankChecks()}
	}
	var all []Check
	for _, g := range groups {
		all = append(all, g...)
	}
	return all
}

// All returns every check of every suite: chat's (which completions
// shares) in the order they run, then each other API's.
func All() []Check {
	var all []Check
	for _, api := range APIs() {
		if api != APICompletions {
			all = append(all, Suite(api)...)
		}
	}
	return all
}

// Find returns the check of that full name.
func Find(name string) (Check, bool) {
	for _, c := range All() {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}
