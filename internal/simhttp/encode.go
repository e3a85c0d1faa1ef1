package simhttp

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// words is the fixed vocabulary of generated text: token i (0-based) is
// words[i%len(words)], preceded by a space except for the first token.
// All words are plain ASCII letters, so they need no JSON escaping.
var words = [...]string{
	"the", "engine", "answers", "with", "simulated", "tokens", "that", "look",
	"like", "words", "and", "arrive", "one", "per", "decode", "step",
	"while", "the", "batch", "grows", "queue", "waits", "cache", "fills",
	"a", "burst", "comes", "replicas", "start", "models", "load", "requests",
	"drain", "latency", "rises", "then", "falls", "again", "as", "capacity",
	"returns", "good", "put", "holds", "under", "deadline", "every", "percentile",
	"is", "honest", "when", "samples", "are", "counted", "not", "averaged",
	"so", "recovery", "time", "can", "be", "measured", "here", "now",
}

// tokenText returns the text of generated token i (0-based).
func tokenText(i int) string {
	if i == 0 {
		return words[0]
	}
	return spaced[i%len(words)]
}

// spaced holds every word with its leading space, so that appending a
// token never allocates.
var spaced = func() (s [len(words)]string) {
	for i, w := range words {
		s[i] = " " + w
	}
	return s
}()

// Texts of the finish reasons and other constant JSON fragments.
const (
	sseData = "data: "
	sseEnd  = "\n\n"
	sseDone = "data: [DONE]\n\n"
)

// streamEncoder appends the SSE events of one streamed response in its
// API's shape, and its non-streamed body, to a caller-owned buffer. It
// may keep state from call to call (sequence numbers, the open content
// block): one per response, called in the order of the stream. Its heads
// are built once per request; appending a token does not allocate.
type streamEncoder interface {
	bodyEncoder
	// start appends what the stream opens with as its headers leave
	// (chat's role chunk, response.created, message_start).
	start(b []byte) []byte
	// reasoning appends reasoning token i (0-based).
	reasoning(b []byte, i int) []byte
	// content appends content token k (0-based, after the reasoning).
	content(b []byte, k int) []byte
	// malformed appends an event cut in the middle of its JSON (the
	// malformed fault); the stream ends with it.
	malformed(b []byte) []byte
	// overloaded appends what a stream cut short by the
	// truncate-on-overload quirk sends before its connection closes.
	overloaded(b []byte) []byte
	// end appends what follows the last token.
	end(b []byte, f final) []byte
}

// bodyEncoder appends a non-streamed answer.
type bodyEncoder interface {
	// response appends the whole body.
	response(b []byte, f final) []byte
	// truncatedBody appends a body cut in the middle (the malformed
	// fault).
	truncatedBody(b []byte) []byte
}

// final is what closes a response: the engine's result and what the
// facade made of it.
type final struct {
	res       sim.Result
	reasoning int    // of res.OutputTokens, the reasoning tokens
	cached    int    // prompt tokens from the prefix cache; −1: not reported
	reason    string // finish reason in OpenAI's words: stop, length, tool_calls
	usage     bool   // report usage (false: the no-usage quirk)
}

var _ streamEncoder = (*encoder)(nil)

// encoder builds the SSE chunks and JSON bodies of one chat or
// completions response by appending to a caller-owned buffer; after the
// prefix is built once per request, appending a chunk does not allocate
// (beyond growing the buffer).
type encoder struct {
	chat bool
	seq  textSeq // the words of plain text
	ans  *answer // nil: plain text without a stop
	// includeUsage sends the usage chunk (stream_options.include_usage);
	// timings the llama.cpp timings (WithTimings).
	includeUsage, timings bool
	// head is `{"id":"…","object":"…","created":…,"model":"…",` shared by
	// every chunk of a streamed response.
	head []byte
	// bodyHead is the same for the non-streamed body (a different object).
	bodyHead []byte
}

// newEncoder returns the encoder of response id for a chat or completions
// request, created at unix second created, answering for model.
func newEncoder(chat bool, id string, created int64, model string) *encoder {
	e := &encoder{chat: chat, seq: textSeq{0, 1}}
	chunkObject, bodyObject := "text_completion", "text_completion"
	if chat {
		chunkObject, bodyObject = "chat.completion.chunk", "chat.completion"
	}
	e.head = appendHead(nil, id, chunkObject, created, model)
	e.bodyHead = appendHead(nil, id, bodyObject, created, model)
	return e
}

func appendHead(b []byte, id, object string, created int64, model string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, model)
	return append(b, ',')
}

// appendJSONString appends s as a JSON string. Used only when building
// heads (once per request), so the allocation of json.Marshal is fine.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// start implements streamEncoder: the role chunk of a chat stream,
// nothing for completions.
func (e *encoder) start(b []byte) []byte {
	if e.chat {
		return e.role(b)
	}
	return b
}

// overloaded implements streamEncoder: a chat or completions stream cut
// short just ends, as vLLM's does.
func (e *encoder) overloaded(b []byte) []byte { return b }

// end implements streamEncoder: the finish chunk, the usage chunk if
// asked, llama.cpp's timings if on, [DONE].
func (e *encoder) end(b []byte, f final) []byte {
	b = e.finish(b, f.reason)
	if e.includeUsage && f.usage {
		b = e.usage(b, f.res.PromptTokens, f.res.OutputTokens, f.reasoning, f.cached)
	}
	if e.timings {
		b = e.appendTimingsChunk(b, f.res)
	}
	return e.done(b)
}

// response implements bodyEncoder.
func (e *encoder) response(b []byte, f final) []byte {
	b = e.bodyWith(b, f.res.PromptTokens, f.res.OutputTokens, f.reasoning, f.cached, f.reason, f.usage)
	if e.timings {
		b = appendTimings(append(b[:len(b)-2], ','), f.res) // before the closing "}\n"
		b = append(b, "}\n"...)
	}
	return b
}

// role appends the first chunk of a chat stream: the role, no content
// (null content when the answer is tool calls).
func (e *encoder) role(b []byte) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	if e.ans != nil && e.ans.tools() {
		b = append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}]}`...)
	} else {
		b = append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`...)
	}
	return append(b, sseEnd...)
}

// token appends the chunk carrying generated token i (0-based).
func (e *encoder) token(b []byte, i int) []byte {
	return e.piece(b, e.seq.text(i))
}

// piece appends a content chunk (chat) or text chunk (completions) of s,
// which must be escaped for a JSON string already.
func (e *encoder) piece(b []byte, s string) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	if e.chat {
		b = append(b, `"choices":[{"index":0,"delta":{"content":"`...)
		b = append(b, s...)
		b = append(b, `"},"logprobs":null,"finish_reason":null}]}`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = append(b, s...)
		b = append(b, `","logprobs":null,"finish_reason":null,"stop_reason":null}]}`...)
	}
	return append(b, sseEnd...)
}

// content appends the chunk of content token k of the answer: a word of
// the text (cut before a stop string, nothing past it), or a piece of
// JSON content, or a piece of a tool call's arguments, preceded by the
// call's first delta (id, type, name, empty arguments) when the piece is
// the call's first.
func (e *encoder) content(b []byte, k int) []byte {
	a := e.ans
	switch {
	case a == nil:
		return e.token(b, k)
	case a.frags != nil:
		if k >= len(a.frags) {
			return b
		}
		if a.fragCall == nil {
			return e.piece(b, string(a.frags[k]))
		}
		c := a.fragCall[k]
		if k == 0 || a.fragCall[k-1] != c {
			b = e.toolHead(b, c, a.calls[c])
		}
		return e.toolArgs(b, c, a.frags[k])
	case a.send >= 0:
		if k >= a.send {
			return b
		}
		if k == a.send-1 && a.cut > 0 {
			return e.piece(b, e.seq.text(k)[:a.cut])
		}
	}
	return e.token(b, k)
}

// toolHead appends the first delta of tool call c: index, id, type,
// function name and empty arguments.
func (e *encoder) toolHead(b []byte, c int, call toolCall) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	b = append(b, `"choices":[{"index":0,"delta":{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(c), 10)
	b = append(b, `,"id":"`...)
	b = append(b, call.id...)
	b = append(b, `","type":"function","function":{"name":"`...)
	b = append(b, call.name...)
	b = append(b, `","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`...)
	return append(b, sseEnd...)
}

// toolArgs appends a piece of tool call c's arguments.
func (e *encoder) toolArgs(b []byte, c int, frag []byte) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	b = append(b, `"choices":[{"index":0,"delta":{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(c), 10)
	b = append(b, `,"function":{"arguments":"`...)
	b = append(b, frag...)
	b = append(b, `"}}]},"logprobs":null,"finish_reason":null}]}`...)
	return append(b, sseEnd...)
}

// reasoning appends the chunk carrying reasoning token i (0-based), as
// vLLM's reasoning parsers send it (chat only; "reasoning", the name since
// vLLM replaced "reasoning_content").
func (e *encoder) reasoning(b []byte, i int) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	b = append(b, `"choices":[{"index":0,"delta":{"reasoning":"`...)
	b = append(b, tokenText(i)...)
	b = append(b, `"},"logprobs":null,"finish_reason":null}]}`...)
	return append(b, sseEnd...)
}

// malformed appends a chunk cut in the middle of its JSON, as a broken
// proxy or engine might send it.
func (e *encoder) malformed(b []byte) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	if e.chat {
		b = append(b, `"choices":[{"index":0,"delta":`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":`...)
	}
	return append(b, sseEnd...)
}

// finish appends the last choice chunk: empty delta (or text) and the
// finish reason.
func (e *encoder) finish(b []byte, reason string) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	if e.chat {
		b = append(b, `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":`...)
	}
	b = appendReason(b, reason)
	b = append(b, `,"stop_reason":`...)
	b = e.appendStopReason(b, reason)
	b = append(b, `}]}`...)
	return append(b, sseEnd...)
}

// appendStopReason appends vLLM's stop_reason: the stop string that
// ended the text (the client's own string), else null.
func (e *encoder) appendStopReason(b []byte, reason string) []byte {
	if e.ans != nil {
		if s := e.ans.stopReason(reason); s != nil {
			return append(b, s...)
		}
	}
	return append(b, "null"...)
}

// usage appends the usage chunk sent when stream_options.include_usage is
// true: no choices, the token counts.
func (e *encoder) usage(b []byte, prompt, completion, reasoning, cached int) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	b = append(b, `"choices":[],`...)
	b = appendUsage(b, prompt, completion, reasoning, cached)
	b = append(b, '}')
	return append(b, sseEnd...)
}

// appendTimingsChunk appends a chunk with llama.cpp's "timings" object.
func (e *encoder) appendTimingsChunk(b []byte, res sim.Result) []byte {
	b = append(b, sseData...)
	b = append(b, e.head...)
	b = append(b, `"choices":[],`...)
	b = appendTimings(b, res)
	b = append(b, '}')
	return append(b, sseEnd...)
}

// appendTimings appends the member "timings" as llama-server writes it
// (tools/server/server-common.cpp, server_slot_stats::to_json): prompt
// processing is admission → first token, generation first → last token.
func appendTimings(b []byte, res sim.Result) []byte {
	ms := func(d time.Duration) []byte { return strconv.AppendFloat(nil, float64(d)/1e6, 'f', 3, 64) }
	prompt, gen := res.FirstTokenAt-res.AdmittedAt, res.DoneAt-res.FirstTokenAt
	b = append(b, `"timings":{"cache_n":`...)
	b = strconv.AppendInt(b, int64(res.CachedTokens), 10)
	b = append(b, `,"prompt_n":`...)
	b = strconv.AppendInt(b, int64(res.PromptTokens-res.CachedTokens), 10)
	b = append(b, `,"prompt_ms":`...)
	b = append(b, ms(prompt)...)
	b = append(b, `,"predicted_n":`...)
	b = strconv.AppendInt(b, int64(res.OutputTokens), 10)
	b = append(b, `,"predicted_ms":`...)
	b = append(b, ms(gen)...)
	return append(b, '}')
}

// done appends the stream terminator.
func (e *encoder) done(b []byte) []byte { return append(b, sseDone...) }

// body appends the non-streamed response: one choice with the whole
// text (cut at a stop string), the JSON content, or the tool calls (as
// far as completion tokens went). usage is false without a usage member.
func (e *encoder) body(b []byte, prompt, completion, reasoning, cached int, reason string) []byte {
	return e.bodyWith(b, prompt, completion, reasoning, cached, reason, true)
}

func (e *encoder) bodyWith(b []byte, prompt, completion, reasoning, cached int, reason string, usage bool) []byte {
	b = append(b, e.bodyHead...)
	n := completion - reasoning // content tokens
	a := e.ans
	if e.chat {
		b = append(b, `"choices":[{"index":0,"message":{"role":"assistant",`...)
		if reasoning > 0 {
			b = append(b, `"reasoning":"`...)
			for i := range reasoning {
				b = append(b, tokenText(i)...)
			}
			b = append(b, `",`...)
		}
		if a != nil && a.tools() {
			b = e.appendCalls(append(b, `"content":null,"tool_calls":[`...), n)
			b = append(b, `]},"logprobs":null,"finish_reason":`...)
			return e.bodyTail(b, prompt, completion, reasoning, cached, reason, usage)
		}
		b = append(b, `"content":"`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"`...)
	}
	switch {
	case a != nil && a.json():
		b = a.joined(b, n)
	case a != nil && a.send >= 0:
		for i := range min(n, a.send) {
			t := e.seq.text(i)
			if i == a.send-1 && a.cut > 0 {
				t = t[:a.cut]
			}
			b = append(b, t...)
		}
	default:
		for i := range n {
			b = append(b, e.seq.text(i)...)
		}
	}
	if e.chat {
		b = append(b, `"},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `","logprobs":null,"finish_reason":`...)
	}
	return e.bodyTail(b, prompt, completion, reasoning, cached, reason, usage)
}

// bodyTail appends the finish reason, stop_reason and usage that close a
// body.
func (e *encoder) bodyTail(b []byte, prompt, completion, reasoning, cached int, reason string, usage bool) []byte {
	b = appendReason(b, reason)
	b = append(b, `,"stop_reason":`...)
	b = e.appendStopReason(b, reason)
	b = append(b, `}]`...)
	if usage {
		b = append(b, ',')
		b = appendUsage(b, prompt, completion, reasoning, cached)
	}
	return append(b, "}\n"...)
}

// appendCalls appends the tool calls of a non-streamed body: every call
// whose first piece is among the first n, its arguments as far as they go.
func (e *encoder) appendCalls(b []byte, n int) []byte {
	a := e.ans
	for k := 0; k < min(n, len(a.frags)); {
		c := a.fragCall[k]
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = append(b, a.calls[c].id...)
		b = append(b, `","type":"function","function":{"name":"`...)
		b = append(b, a.calls[c].name...)
		b = append(b, `","arguments":"`...)
		for ; k < min(n, len(a.frags)) && a.fragCall[k] == c; k++ {
			b = append(b, a.frags[k]...)
		}
		b = append(b, `"}}`...)
	}
	return b
}

// truncatedBody appends a non-streamed body cut in the middle.
func (e *encoder) truncatedBody(b []byte) []byte {
	b = append(b, e.bodyHead...)
	return append(b, `"choices":[{"index":0,`...)
}

func appendReason(b []byte, reason string) []byte {
	switch reason {
	case "stop", "length", "abort", "tool_calls":
		b = append(b, '"')
		b = append(b, reason...)
		return append(b, '"')
	default:
		return append(b, "null"...)
	}
}

// appendUsage appends the usage member; cached ≥ 0 adds
// prompt_tokens_details.cached_tokens (as vLLM with a prefix cache and
// --enable-prompt-tokens-details), cached < 0 leaves it out.
func appendUsage(b []byte, prompt, completion, reasoning, cached int) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	if cached >= 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	if reasoning > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(reasoning), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}
