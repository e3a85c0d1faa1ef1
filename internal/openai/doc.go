// Package openai is surge's client for OpenAI-compatible inference APIs
// (chat completions, completions, OpenAI's Responses API and Anthropic's
// Messages API, streamed over SSE or not). It sends one
// workload.Request, reads the whole response and fills one record.Record
// with the boundaries of the exchange, its outcome and its token counts.
//
// It is the hot path of the load generator, so it has its own HTTP/1.1
// transport (one goroutine per stream; net/http for HTTP/2 and proxies)
// and its own SSE reader: each line is read with ReadSlice (from the
// connection's buffer, or a bufio.Reader over net/http's body) and each
// chunk is checked by ScanChunk, a validating JSON scanner that extracts
// only what is measured and allocates nothing. No SDK, no encoding/json per
// chunk (encoding/json is used for non-streamed bodies only). Responses
// and Messages streams are typed events; ScanEvent reads them with the
// same scanner under the API's Grammar (events.go): the first answer
// content of each, its usage, its end event; unknown event types are
// counted (Record.UnknownEvents). docs/metrics.md has the table per API.
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
// Config.Transport picks the HTTP client. With "auto" (the default) an
// http:// endpoint that no proxy applies to (http.ProxyFromEnvironment;
// loopback is never proxied) gets surge's own HTTP/1.1 transport (h1.go);
// https keeps net/http, which negotiates HTTP/2 by ALPN, and so does an
// endpoint behind a proxy. "surge" forces surge's transport, for https
// too (HTTP/1.1 only, ALPN "http/1.1"), and refuses an endpoint a proxy
// applies to rather than bypass the proxy silently; "go" forces net/http.
// surge check's probes (HTTP) always use net/http.
//
// surge's transport serves one endpoint. The caller's goroutine writes the
// request and reads the response: no readLoop or writeLoop. The request
// head is built in a pooled buffer (a header name that is no token, or a
// name or value holding CR, LF or NUL, is refused before anything is sent)
// and written with the body in one writev (net.Buffers), without copying
// the body. The response is read through a 2 KiB buffer per connection:
// HTTP/1.0 and 1.1 status lines, 1xx informational responses skipped,
// chunked bodies (decoded by the transport itself, with net/http's rules:
// CRLF line ends, extensions and trailers discarded, framing that
// outweighs the data refused; a fault is "malformed chunked encoding"),
// Content-Length (a body cut short is io.ErrUnexpectedEOF) or until
// close. The SSE reader takes its lines straight from that 2 KiB buffer
// (h1Body.ReadSlice): no second buffer, no copy, unless a line goes on
// past a chunk or past the bytes received so far, when its pieces are
// put together in the exchange's spill buffer. The
// cancellation of the request's context (the per-request timeout or the
// run's end) reaches a blocked read or write through a deadline in the
// past, set by context.AfterFunc: no goroutine waits for it. httptrace's
// GotConn (Reused, WasIdle), WroteRequest and GotFirstResponseByte are
// called as net/http calls them, so the boundaries and the replay of a dead
// kept-alive connection (Retries, above) are the same with either
// transport.
//
// Connections: at most Config.MaxConns open (idle and busy; size it to
// the in-flight cap; time waiting for one shows as ConnNs − SentNs), the
// newest idle one reused first, one returned to the pool as soon as its
// body reaches EOF (unless a response or the request said Connection:
// close, or HTTP/1.0 without keep-alive), a body closed early closes its
// connection. Requests beyond the cap wait in order for a returned
// connection or a freed slot, as long as their context lasts. Idle
// connections are dropped after 90 s, checked when a connection is taken
// (no timer). Before an idle connection is reused, a non-blocking
// MSG_PEEK on its socket tells whether the server has closed it while it
// was idle (llama.cpp's llama-server advertises keep-alive and closes
// after every streamed response; net/http's readLoop would notice, and a
// read deadline in the past cannot ask the socket): a closed one is
// dropped and another taken, so the replay (Retries, above) is left for
// the race of a close in flight. Dial and TLS handshake: 10 s each; compression is
// never asked for.
//
// net/http's transport (for "go", https, proxies): compression off,
// MaxConnsPerHost and MaxIdleConnsPerHost = Config.MaxConns, HTTP/2
// negotiated for https only, the same timeouts, proxies from the
// environment.
//
// # Memory per stream in flight
//
// With surge's transport a stream in flight holds one goroutine (the
// caller's, blocked reading the body: 8 KiB of stack), its connection
// (the net.Conn and a 2 KiB read buffer; the request head's buffer goes
// back to a pool once written) and the exchange: a 1 KiB line buffer (a
// chunk of every server measured fits; a longer line is gathered in a
// spill buffer that grows with it, up to MaxLineBytes, and is let go with
// the exchange past 16 KiB), the trace hooks and headers of the request,
// and the context.AfterFunc registration. The request body is built in a
// pooled buffer that goes back to the pool when the round trip returns,
// and the response header map is dropped once read, so a stream keeps
// neither while it is read. BenchmarkInFlight measures it: about 9 KB of
// heap and 8 KB of stack per stream, 17 KB in all, against 36 KB with
// net/http's transport (three goroutines: the caller and the connection's
// readLoop and writeLoop, 8 + 4 + 4 KiB of stack, and net/http's
// per-connection and per-request structures; BENCHMARKS.md "In-flight
// streams").
package openai
