// Package openai is surge's client for OpenAI-compatible inference APIs
// (chat completions and completions, streamed over SSE or not). It sends one
// workload.Request, reads the whole response and fills one record.Record
// with the boundaries of the exchange, its outcome and its token counts.
//
// It is the hot path of the load generator, so it uses plain net/http and
// its own SSE reader: each line is read with bufio.Reader.ReadSlice and each
// chunk is checked by ScanChunk, a validating JSON scanner that extracts
// only what is measured and allocates nothing. No SDK, no encoding/json per
// chunk (encoding/json is used for non-streamed bodies only).
//
// # Boundaries (ns since the run's origin, monotonic clock)
//
//	SentNs        just before the request is handed to the transport (first attempt)
//	ConnNs        a connection was acquired (httptrace GotConn; last attempt)
//	HeadersNs     response headers received
//	FirstChunkNs  first SSE data chunk of any kind (a role-only chunk counts)
//	FirstTokenNs  first chunk carrying content of any kind
//	FirstTextNs   first chunk carrying answer text ("content", or completions "text")
//	DoneNs        "data: [DONE]" read, the non-streamed body read, or the failure observed
//
// A chunk carries content when a choice has a non-empty "text"
// (completions), or a delta with a non-empty "content", "reasoning_content"
// or "reasoning" string, a non-empty "tool_calls" array or a
// "function_call" object. Role-only deltas, empty or null content,
// keep-alive comments and usage-only chunks do not count. Reasoning counts:
// it is generated output, and vLLM's benchmark counts it too. Reasoning and
// tool calls are not answer text, so a model that thinks first has
// FirstTextNs after FirstTokenNs (vLLM names its reasoning delta
// "reasoning" since late 2025, "reasoning_content" before; both are read).
// ReasoningTokens and CachedTokens come from the usage details
// (completion_tokens_details.reasoning_tokens,
// prompt_tokens_details.cached_tokens).
//
// # Formulas (surge uses vLLM's meanings; docs/method.md §6)
//
//	TTFT (send)      = FirstTokenNs − SentNs                    (vLLM TTFT, but vLLM counts a role-only chunk)
//	TTFT (schedule)  = FirstTokenNs − ScheduledNs
//	ITL              = gaps between consecutive content chunks  (ns; ITLMaxNs keeps the longest,
//	                                                             None with fewer than 2 content chunks)
//	TPOT             = (DoneNs − FirstTokenNs) / (output tokens − 1)   (ns per token; None below 2 tokens;
//	                                                             set only for outcome ok)
//	E2E              = DoneNs − SentNs (and − ScheduledNs)
//
// Output tokens are usage.completion_tokens from the server (stream usage is
// requested with stream_options.include_usage), and UsageFromServer is set.
// The last non-zero usage wins: Ollama sends an all-zero usage in every
// completions chunk and the real one last. Without usage, OutputTokens is the
// number of content chunks (an estimate: a chunk may hold several tokens)
// and PromptTokens is 0. MaxTokens is what was requested, not what was
// generated. A non-streamed response is one chunk: FirstChunkNs =
// FirstTokenNs = DoneNs, and without usage OutputTokens is 0 (unknown).
//
// # Outcomes
//
//	ok                "data: [DONE]" after at least one chunk with "choices" (or a valid non-streamed body)
//	rate_limited      HTTP 429; Retry-After (seconds or HTTP date) kept in RetryAfterNs
//	http_error        any other non-2xx status
//	timeout           Config.Timeout expired, at any stage (it covers retries and their waits)
//	conn_error        dial, TLS or transport failure before response headers
//	stream_error      after a 2xx: connection reset or unexpected EOF mid-stream, malformed
//	                  chunk or line, EOF without [DONE], a line over MaxLineBytes, an error
//	                  object inside the stream
//	invalid_response  2xx but not SSE (JSON or HTML, or a first line that is no SSE field),
//	                  an empty body, no "choices" at all; non-streamed: invalid JSON, no choices,
//	                  an error object
//	cancelled         the ctx given to Do was cancelled (the run was interrupted); it wins
//	                  over timeout when both happened
//
// Record.Error holds a short class detail ("status 503 (overloaded)",
// "unexpected EOF after 12 chunks", "malformed chunk after 3 chunks",
// "no [DONE] after 64 chunks", "timeout before headers").
//
// # Retries
//
// With Config.Retries > 0, 429, 502, 503, 504 and conn_error are retried.
// A Retry-After hint is honoured (the wait is the hint plus up to 10%
// jitter, never less; a hint over RetryMaxWait ends retrying); without a
// hint the wait is uniform in [b/2, b], b = 250 ms × 2^(n−1) capped at
// RetryMaxWait. No retry starts a wait that would reach the timeout. Attempts
// counts every attempt; SentNs stays the first attempt's send, so TTFT and
// E2E include the retries; the other boundaries and Status are the last
// attempt's; RetryAfterNs is the last hint seen.
//
// Independently of Retries, an attempt that fails on a reused keep-alive
// connection (httptrace GotConnInfo.Reused) before any response byte is
// replayed once on a new connection of its own, and ConnRetries counts it:
// the server had closed the idle connection (llama.cpp's llama-server
// advertises keep-alive and closes after every streamed response), the
// request never reached it, and net/http does not replay a POST it has
// written. The replay is not an attempt; SentNs stays the first send, so
// the replay's time is the request's latency.
//
// # SSE reading
//
// Accepted lines: "data: {...}" and "data:{...}", "data: [DONE]", comments
// (": keep-alive"), "event:", "id:" and "retry:" fields, blank lines, LF or
// CRLF endings, a final line without a newline. Each data line must hold one
// complete JSON object (multi-line data events are not joined). A line over
// MaxLineBytes (1 MiB) ends the stream with stream_error instead of growing
// a buffer; a stream that never ends is stopped by the per-request timeout
// and is a timeout (the line a failed read returns is never scanned).
// After [DONE] the rest of the body is read (up to 64 KiB) so the connection
// can be reused.
//
// # What is and is not recorded
//
// Recorded: times, status, outcome, a short error class, token counts,
// attempts, the Retry-After hint, the numbers of the x-ratelimit-* headers,
// the named durations of Server-Timing headers (names that are safe tokens,
// never "desc") and the replica (response header X-Surge-Replica). Server-provided strings (error type or code, media type,
// replica) are kept only when they are short tokens of [A-Za-z0-9_.:/+-]
// that neither contain nor are part of the API key or the prompt. Never
// recorded, logged or put in an error: prompt text, response text, the API
// key, header values, error messages from the server, response bodies.
//
// # Transport
//
// One http.Transport per Client: compression off (so chunks arrive as sent),
// MaxConnsPerHost and MaxIdleConnsPerHost = Config.MaxConns (size it to the
// in-flight cap; time waiting for a connection shows as ConnNs − SentNs),
// HTTP/2 negotiated for https only, 10 s dial and TLS handshake timeouts,
// proxies from the environment (loopback is never proxied).
//
// # Memory per stream in flight
//
// A stream in flight holds three goroutines (the caller's, blocked reading
// the body, and the connection's readLoop and writeLoop in net/http: 8 +
// 4 + 4 KiB of stack once they settle), the connection's read buffer
// (2 KiB, half net/http's default: a stream that falls behind still reads
// several waiting events per system call) and write buffer (1 KiB: the
// request head; a longer body's rest is written straight from its own
// buffer in one more write), and the exchange: a 1 KiB line buffer (a
// chunk of every server measured fits; a longer line is gathered in a
// spill buffer that grows with it, up to MaxLineBytes, and is let go with
// the exchange past 16 KiB) and the trace hooks and headers of the
// request. The request body is built in a pooled buffer that goes back to
// the pool when the round trip returns, and the response header map is
// dropped once read, so a stream keeps neither while it is read.
// BenchmarkInFlight measures it: 11–14 KB of heap and 17–21 KB of stack
// per stream (33–35 KB of heap with net/http's default buffers and the
// former 16 KiB line buffer; BENCHMARKS.md "In-flight streams").
package openai
