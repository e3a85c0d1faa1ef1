// Package simhttp serves the simulated inference engine (package sim) over
// an OpenAI-compatible HTTP API, in real time, so that surge — or any other
// client — can load-test it over loopback exactly as it would a vLLM
// server.
//
// # Endpoints
//
//	POST /v1/chat/completions   chat, streamed (SSE) or not
//	POST /v1/completions        text completions, streamed or not
//	POST /v1/responses          OpenAI's Responses API, streamed or not
//	POST /v1/messages           Anthropic's Messages API, streamed or not
//	POST /v1/embeddings         embeddings (prefill-only work)
//	POST /v1/rerank, /rerank    reranking, vLLM's (Jina's, Cohere's) shape
//	                            (prefill-only work)
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
// # Responses API
//
// POST /v1/responses reads model, input (a string: one user message; or
// an array of items {"role","content"}, content a string or parts
// {"type":"input_text"|"output_text","text"}; an item without a role
// counts its output or arguments as a message of its type),
// instructions (a system message), max_output_tokens (the cap; unset:
// as chat without max_tokens), stream, temperature and seed (as chat),
// and vLLM's extensions ignore_eos and stop (as chat's; a stop ends the
// response completed). Tools and text.format are ignored. The stream is
// typed events, each `event: <type>` then
// `data: {"type":"<type>",…,"sequence_number":n}`, n from 0, and no
// [DONE]:
//
//	response.created, response.in_progress   (response: status in_progress, output [], usage null)
//	with reasoning tokens (ReasoningTokens):  response.output_item.added (item {"type":"reasoning","id":"rs_…"}),
//	    response.content_part.added (part reasoning_text), one response.reasoning_text.delta per token,
//	    response.reasoning_text.done, response.content_part.done, response.output_item.done
//	response.output_item.added                (item {"type":"message","id":"msg_…","role":"assistant"}, output_index 0, or 1 after reasoning)
//	response.content_part.added               (part {"type":"output_text","text":""})
//	response.output_text.delta                one per token: item_id, output_index, content_index 0, delta
//	response.output_text.done, response.content_part.done, response.output_item.done   (the whole text)
//	response.completed                        (response: status completed, output, usage)
//	  or response.incomplete                  when the cap cut the answer: status incomplete,
//	                                          incomplete_details {"reason":"max_output_tokens"}
//
// The message item opens with the first content token, as in vLLM. A
// non-streamed request gets the response object alone: {"id":"resp_…",
// "object":"response","created_at","model","status","error":null,
// "incomplete_details","output":[reasoning item?, message item with
// content [{"type":"output_text","text"}]],"usage"}. usage is
// {"input_tokens":P,"input_tokens_details":{"cached_tokens":C},
// "output_tokens":O,"output_tokens_details":{"reasoning_tokens":R},
// "total_tokens":P+O}, C 0 without a prefix cache.
//
// # Messages API
//
// POST /v1/messages reads model, max_tokens (required: 400
// "max_tokens: Field required"), messages (content a string or blocks:
// text blocks count their text, tool_result its content, tool_use the
// bytes of its input), system (a string or text blocks: a system
// message), stream, temperature (no seed: above 0 a random word
// sequence), stop_sequences (as stop, up to 16; stop_reason
// "stop_sequence" and stop_sequence the string matched), tools ([{name,
// description, input_schema}]; server tools are not called) and
// tool_choice ({"type":"auto"|"any"|"tool"|"none","name",
// "disable_parallel_tool_use"}). x-api-key and anthropic-version are
// accepted, not required. The stream is `event: <type>` then
// `data: {"type":"<type>",…}`:
//
//	message_start         at once: {"message":{"id":"msg_…","type":"message","role":"assistant","model",
//	                      "content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":P,"output_tokens":1}}}
//	content_block_start   {"index":i,"content_block":…} as a block's first token comes: {"type":"thinking",
//	                      "thinking":""} for reasoning tokens, then {"type":"text","text":""}, or per tool call
//	                      {"type":"tool_use","id":"toolu_…","name","input":{}}
//	ping                  once, after the first content_block_start
//	content_block_delta   one per token: {"index":i,"delta":{"type":"thinking_delta","thinking"|
//	                      "text_delta","text"|"input_json_delta","partial_json"}} (arguments in 4-byte pieces)
//	content_block_stop    {"index":i} before the next block starts, and after the last
//	message_delta         {"delta":{"stop_reason","stop_sequence"},"usage":{"input_tokens":P,"output_tokens":O}}
//	message_stop
//
// stop_reason is end_turn (the engine stopped), max_tokens (the cap),
// tool_use or stop_sequence. A non-streamed request gets {"id","type":
// "message","role":"assistant","model","content":[blocks],"stop_reason",
// "stop_sequence","usage":{"input_tokens","output_tokens"}}, a tool_use
// block's input the arguments object ({} when they were cut short).
//
// # Pooling
//
// /v1/embeddings and /v1/rerank are prefill-only work: one engine
// request (sim.Request.PrefillOnly) whose prompt is the sum of the
// inputs' tokens, answered when its prefill is done, with no output
// token. Each input (or query-document pair) must fit max_model_len;
// together they must fit the KV cache.
//
// Embeddings read input (a string, an array of strings, an array of
// token ids, or an array of arrays of token ids; at most 2048),
// encoding_format ("float", the default, or "base64": the little-endian
// float32 bytes in base64, as OpenAI) and dimensions (1 … D). D is
// WithEmbeddingDimensions (default 384). The answer is {"id":"embd-…",
// "object":"list","created","model","data":[{"object":"embedding",
// "index":i,"embedding":…}],"usage":{"prompt_tokens":P,
// "total_tokens":P}}. A vector is a function of its input alone: its
// components are uniform in [−1, 1), drawn from a splitmix64 stream
// seeded with the FNV-1a hash of the text (or of the ids), and divided
// by their norm, so it has unit length; a shorter dimensions is the
// same vector's prefix, normalised again.
//
// Rerank reads query, documents (strings or {"text"}; at most 4096),
// top_n (0 or unset: all) and return_documents (default true) and
// answers {"id":"rerank-…","model","usage":{"total_tokens":T},
// "results":[{"index":i,"document":{"text"},"relevance_score":s}]}
// sorted by relevance_score, highest first (ties: lower index first).
// s ∈ [0, 1) is a hash of the query and the document: the same pair
// always scores the same.
//
// # Prompt tokens
//
// The simulator has no vocabulary; it counts bytes (sim.Config.PromptTokens),
// with B = sim.Config.BytesPerToken (default 4, surge's own estimate):
//
//	completions: max(1, ceil(bytes/B))
//	chat:        Σ_messages (ceil(bytes_i/B) + 4) + 3
//	embeddings:  Σ_inputs max(1, ceil(bytes_i/B))
//	rerank:      Σ_documents max(1, ceil(bytes_query/B) + ceil(bytes_i/B))
//
// where bytes counts the UTF-8 bytes of the decoded text (for chat content
// parts, the "text" parts), 4 tokens per message stand for the chat
// template and 3 for the assistant turn's header. Responses and Messages
// count as chat, their instructions or system prompt a message of its
// own: the same conversation costs the same tokens, and hits the same
// prefix-cache blocks, whatever API sends it. A prompt of token ids
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
// control or the gateway refuses; 500 and 503 when the fault plan says
// so. /v1/messages answers the same statuses in Anthropic's shape,
// {"type":"error","error":{"type","message"}}, the type by status:
// invalid_request_error (400, 405), not_found_error (404),
// request_too_large (413), rate_limit_error (429), api_error (500),
// overloaded_error (503).
//
// A gateway in front (quotas, sim.Config) admits every API's requests
// alike, per API key (the Authorization header, or x-api-key): a request
// costs its prompt tokens plus its cap (max_tokens, or max_model_len −
// prompt tokens when unset), pooling work its prompt tokens alone.
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
// answered Delay late; so is pooling work, reset once it is done. Every
// streamed API enacts them alike: Responses and Messages events count
// their tokens' deltas, the malformed one cut in its data.
//
// # Quirks
//
// sim.Config.Quirks make the facade misbehave on purpose, each the way
// some endpoint or proxy does, so that every check of `surge check` can
// be seen to fail: buffered-stream (headers at once, every chunk at the
// end), no-usage (no usage chunk, no usage in a body: null in a
// Responses object, none in Messages' events), ignore-stop,
// ignore-max-tokens (max(2×, +8) tokens, ignore_eos, finish "length"),
// bad-tool-args (the arguments' closing brace never comes),
// schema-violations (JSON that breaks the schema at its root: the first
// required property dropped, else a wrong type or a value outside the
// enum), no-retry-after (429 without Retry-After), truncate-on-overload
// (a stream submitted while others waited sends 3 tokens, then the
// connection is closed: no finish chunk, no [DONE]; Responses first send
// an `error` event, Messages an `event: error` of overloaded_error, as
// those APIs report a failure mid-stream) and
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
// Requests of every API count alike; pooling work adds prompt tokens,
// queue time, e2e latency and a "stop" success, but no first token and
// no generation tokens.
package simhttp
