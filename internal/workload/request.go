package workload

// Request is one request to send: what the client needs to build an
// OpenAI-compatible call. The prompt text lives only in memory; it is never
// written to a record, a log or a report.
type Request struct {
	Seq          int64  // sequence number in the schedule
	Profile      string // workload profile that produced it (chat, rag, longgen, replay)
	Prompt       string // prompt text; sent as one user message to chat endpoints
	PromptTokens int    // intended prompt length in tokens (the text is sized for it by Config.Sizing)
	MaxTokens    int    // max_tokens to request (> 0)
	IgnoreEOS    bool   // ask the server to generate exactly MaxTokens (vLLM/sim extension)
}
