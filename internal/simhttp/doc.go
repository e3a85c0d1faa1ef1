// Package simhttp serves the simulated inference engine (package sim) over
// an OpenAI-compatible HTTP API, in real time, so that surge — or any other
// client — can load-test it over loopback exactly as it would a vLLM
// server.
//
// # Endpoints
//
//	POST /v1/chat/completions   chat, streamed (SSE) or not
//	POST /v1/completions        text completions, streamed or not
//	GET  /v1/models             the one served model (default "surge-sim")
//	GET  /health                200
//	GET  /metrics               Prometheus text, vLLM's metric names
//	GET  /sim/events            the autoscaler's milestones as JSON
//	POST /tokenize              the prompt's token count, in vLLM's shape
//	                            (tokenize: vllm, the default) or llama.cpp's
//	                            (tokenize: llamacpp); absent with tokenize: none
//
// Request fields read: model, messages (chat) or prompt (completions: a
// string, one string in an array, or token ids), max_tokens or
// max_completion_tokens (the latter wins), ignore_eos, stream,
// stream_options.include_usage, and the fields that shape the output:
// stop, temperature, seed, tools, tool_choice, parallel_tool_calls
// (chat) and response_format. Other OpenAI fields are ignored. Without
// max_tokens the cap is max_model_len − prompt tokens, as in vLLM.
//
// # Shaped output
//
// The text is a word sequence (below) chosen per request: greedy
// decoding (temperature 0, or neither temperature nor seed) reads the
// fixed sequence; a seed picks sequence seed mod 2048 (same seed, same
// text); temperature > 0 without a seed a random one. Sequence v starts
// at word v mod 64 and steps 2⌊v/64⌋+1 words, so every sequence repeats
// every 64 tokens.
//
// stop (a string or up to 4): the text being known in advance, the
// facade finds where it would first contain a stop string within
// max_tokens and has the engine generate exactly the tokens before it
// (ignore_eos for that bound), the last one cut before the stop string
// when it starts inside it; finish_reason "stop", stop_reason the
// string matched, usage the tokens sent (1 when the text would start
// with the stop string).
//
// tools (chat, unless tool_choice is "none"): the answer is tool calls,
// content null: the named function of tool_choice, else one call per
// tool (at most 8) when there are several and parallel_tool_calls is not
// false, else the first tool. The arguments are an instance of the
// function's parameters schema (schemaInstance: required properties,
// every property when the schema is under 2 KiB, enums' first value,
// local $refs, the first anyOf/oneOf branch, bounds honoured; `{}` for
// no parameters). Streamed, each call opens with a delta holding index,
// id ("call_…"), type and name with empty arguments, then the arguments
// come in pieces of 4 bytes, one per engine token; finish_reason
// "tool_calls". response_format json_schema answers an instance of the
// schema the same way, as content; json_object a small object. The
// engine generates one token per piece, within max_tokens: cut short,
// the JSON is incomplete and finish_reason "length", as on real engines.
//
// A streamed chat response is, like vLLM's: a role-only chunk
// (delta {"role":"assistant","content":""}), one content chunk per
// generated token, a finish chunk (empty delta, finish_reason "length" or
// "stop"), a usage chunk ("choices":[] and usage) when
// stream_options.include_usage is true, then "data: [DONE]". Completions
// streams have no role chunk and carry choices[0].text. Token i (0-based)
// reads words[i mod 64] of a fixed list, with a leading space after the
// first, so the text is deterministic. Every response carries the replica
// that served it in the X-Surge-Replica header ("r0", "r1", …). A streamed
// response's status and headers are sent when the request is accepted into
// the engine's queue, as vLLM does, not when it is scheduled.
//
// # Prompt tokens
//
// The simulator has no vocabulary; it counts bytes (sim.Config.PromptTokens),
// with B = sim.Config.BytesPerToken (default 4, surge's own estimate):
//
//	completions: max(1, ceil(bytes/B))
//	chat:        Σ_messages (ceil(bytes_i/B) + 4) + 3
//
// where bytes counts the UTF-8 bytes of the decoded text (for chat content
// parts, the "text" parts), 4 tokens per message stand for the chat
// template and 3 for the assistant turn's header. A prompt of token ids
// counts one token per id. /tokenize answers the same count: vLLM-style
// {"model","messages"|"prompt"} → {"count","max_model_len","tokens"}, the
// template included for messages; llama.cpp-style {"content"} →
// {"tokens"}, the text alone (no template, no BOS).
//
// # Errors
//
// Errors use OpenAI's shape {"error":{"message","type","param","code"}}
// with code = HTTP status, as vLLM: 400 for malformed JSON, missing
// messages/prompt, max_tokens < 1 or a prompt + max_tokens beyond
// max_model_len; 404 "The model `x` does not exist."; 413 for a body over
// MaxBodyBytes; 429 with Retry-After (whole seconds ≥ 1) when admission
// control refuses; 500 and 503 when the fault plan says so.
//
// # Faults
//
// The cluster decides a FaultPlan per request; this package enacts it.
// On a stream, with AtToken the 1-based index of an output token:
// reset — the connection is reset (TCP RST via hijack) instead of sending
// token AtToken; malformed — token AtToken is sent as a chunk cut in the
// middle of its JSON and the stream ends without finish chunk or [DONE];
// stall — the stream holds for Delay before token AtToken; slow headers —
// the headers leave Delay after the request arrived. A non-streamed request
// is reset once token AtToken exists, gets a truncated JSON body, or is
// answered Delay late.
//
// # Quirks
//
// sim.Config.Quirks make the facade misbehave on purpose, each the way
// some endpoint or proxy does, so that every check of `surge check` can
// be seen to fail: buffered-stream (headers at once, every chunk at the
// end), no-usage (no usage chunk, no usage in a body), ignore-stop,
// ignore-max-tokens (max(2×, +8) tokens, ignore_eos, finish "length"),
// bad-tool-args (the arguments' closing brace never comes),
// schema-violations (JSON that breaks the schema at its root: the first
// required property dropped, else a wrong type or a value outside the
// enum), no-retry-after (429 without Retry-After), truncate-on-overload
// (a stream submitted while others waited sends 3 tokens, then the
// connection is closed: no finish chunk, no [DONE]) and
// close-after-response (no Connection: close, but the connection is
// closed once each response went out whole; it needs Start, Listen or
// Serve: a Handler mounted elsewhere does not close its connections).
//
// # Concurrency
//
// The sim.Cluster is a pure state machine, not safe for concurrent use; a
// mutex guards it. One driver goroutine owns the clock (time since New):
// it advances the cluster to now, sleeps on a single timer until the
// cluster's next event and wakes early when a request is submitted. The
// observer of each request runs under the lock and never blocks: it stores
// the latest token total in an atomic and signals the request's handler on
// a 1-buffered channel (signals coalesce). The handler goroutine appends a
// chunk per new token to a pooled buffer with append-based JSON (no
// allocation per token), writes and flushes once per wake-up. A client that
// goes away (request context done) is cancelled in the cluster, freeing
// its batch slot and KV cache.
//
// # Metrics
//
// /metrics (own registry) exposes, with label model_name:
// vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc (0..1, reserved KV tokens over capacity) as
// gauges; vllm:request_queue_time_seconds, vllm:time_to_first_token_seconds
// and vllm:e2e_request_latency_seconds as histograms with vLLM's buckets,
// measured on the engine's clock from submit (TTFT, e2e) or from the
// request's queue time; vllm:prompt_tokens_total,
// vllm:generation_tokens_total and vllm:request_success_total
// {finished_reason} as counters; plus surge_sim_replicas (ready),
// surge_sim_replicas_starting and surge_sim_scaling_events_total{kind}.
package simhttp
