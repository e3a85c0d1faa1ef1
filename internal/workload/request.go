package workload

import "github.com/surge-bench/surge/internal/record"

// Request is one request to send: what the client needs to build an
// OpenAI-compatible call. The prompt text lives only in memory; it is never
// written to a record, a log or a report.
type Request struct {
	Seq          int64  // sequence number in the schedule
	Profile      string // workload profile that produced it (chat, rag, longgen, replay, dataset)
	Prompt       string // prompt text; sent as one user message to chat endpoints (unless Messages is set)
	PromptTokens int    // intended prompt length in tokens (the text is sized for it by Config.Sizing)
	MaxTokens    int    // max_tokens to request (> 0; 0 = leave it to the server)
	IgnoreEOS    bool   // ask the server to generate exactly MaxTokens (vLLM/sim extension)

	// Messages, when set, is the whole chat conversation to send instead of
	// Prompt as one user message (a dataset's request, a session's turn).
	// A completions endpoint gets the messages' contents joined.
	Messages []Message
	// Images, when set, go with the request's last user message, after
	// its text (shared, read-only: the run's pool).
	Images []*Image
	// Inputs, when set, are the texts of an embeddings request, or the
	// documents a rerank request scores against Prompt (its query).
	Inputs []string
	// Extra holds further request members already encoded as JSON object
	// members without the braces, e.g. `"tools":[…],"response_format":{…}`
	// (a dataset row's); the client appends them verbatim.
	Extra []byte

	// Labels copied into the record (see record.Record); zero when they do
	// not apply.
	DatasetRow   int   // 1-based dataset row
	Session      int64 // 1-based session number
	Turn         int   // 1-based turn within the session
	SessionTurns int   // turns the session was planned to have
	Branch       int   // 1-based fan-out sub-request; 0 = the turn itself
	PrefixTokens int   // intended prompt tokens shared with other requests
}

// Message is one chat message.
type Message struct {
	Role    string // system, user, assistant or tool
	Content string
}

// Label copies the request's workload labels into rec: the profile (when
// set), dataset row, session, turn, planned turns, branch and shared prefix.
func (r *Request) Label(rec *record.Record) {
	if r.Profile != "" {
		rec.Profile = r.Profile
	}
	rec.DatasetRow, rec.Session, rec.Turn, rec.Branch, rec.PrefixTokens = r.DatasetRow, r.Session, r.Turn, r.Branch, r.PrefixTokens
	rec.SessionTurns = r.SessionTurns
}
