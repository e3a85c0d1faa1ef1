package simhttp

import (
	"encoding/json"
	"strconv"

	"github.com/surge-bench/surge/internal/sim"
)

// The OpenAI Responses API (POST /v1/responses), as OpenAI and vLLM
// serve it: the request and the stream of typed events described in
// doc.go.

// wireResponsesRequest holds the fields of a Responses request that the
// simulator reads; every other field is ignored.
type wireResponsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int64          `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
	Temperature     *float64        `json:"temperature"`
	Seed            *int64          `json:"seed"`
	// vLLM's extensions: ignore_eos, and stop as chat's.
	IgnoreEOS bool            `json:"ignore_eos"`
	Stop      json.RawMessage `json:"stop"`
}

// wireInputItem is one item of a Responses input array: a message
// {"role","content"} (content a string or input_text/output_text parts),
// or another item whose text counts: a function call's arguments, a
// function call output's output.
type wireInputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Output    json.RawMessage `json:"output"`
	Arguments string          `json:"arguments"`
}

// decodeResponses parses a Responses request. The prompt counts as a
// chat conversation: instructions as a system message, a string input
// as one user message, each item of an input array as a message of its
// role (or, without one, of its type).
func decodeResponses(body []byte, tok textTokens, h *sim.PrefixHasher) (parsedRequest, *apiError) {
	var w wireResponsesRequest
	if err := unmarshalRequest(body, &w); err != nil {
		return parsedRequest{}, err
	}
	p := parsedRequest{api: apiResponses, model: w.Model, stream: w.Stream, ignoreEOS: w.IgnoreEOS}
	var err *apiError
	if p.maxTokens, err = decodeMax(w.MaxOutputTokens, "max_output_tokens"); err != nil {
		return parsedRequest{}, err
	}
	if err := decodeShaping(&wireRequest{Temperature: w.Temperature, Seed: w.Seed, Stop: w.Stop}, &p); err != nil {
		return parsedRequest{}, err
	}
	tp := newTemplatedPrompt(tok, h)
	if w.Instructions != nil {
		tp.message("system", *w.Instructions)
	}
	if err := responsesInput(w.Input, &tp); err != nil {
		return parsedRequest{}, err
	}
	p.promptTokens = tp.n
	return p, nil
}

// responsesInput counts the input of a Responses request into tp.
func responsesInput(raw json.RawMessage, tp *templatedPrompt) *apiError {
	if absent(raw) {
		return badRequest("input", "input is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("input", "input is not a valid string")
		}
		tp.message("user", s)
		return nil
	}
	var items []wireInputItem
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return badRequest("input", "input must be a string or an array of input items")
	}
	if len(items) == 0 {
		return badRequest("input", "input must not be empty")
	}
	for i, it := range items {
		role := it.Role
		if role == "" {
			role = it.Type
		}
		if role == "" {
			return badRequest("input", "input[%d] needs a role or a type", i)
		}
		tp.open(role)
		if err := partsText(it.Content, tp, "input", i); err != nil {
			return err
		}
		if !absent(it.Output) && it.Output[0] == '"' {
			var s string
			if json.Unmarshal(it.Output, &s) == nil {
				tp.text(s)
			}
		}
		tp.text(it.Arguments)
		tp.close()
	}
	return nil
}

var _ streamEncoder = (*responsesEncoder)(nil)

// responsesEncoder writes one response of the Responses API: its stream
// of events (each `event: <type>` and `data: {"type":"<type>",…,
// "sequence_number":n}`) and its response object. It counts the events
// it wrote, so it serves one response, in order.
type responsesEncoder struct {
	seq   textSeq // the words of the text
	ans   *answer // nil: plain text without a stop
	think int     // reasoning tokens that lead the output
	// head is `{"id":"resp_…","object":"response","created_at":…,
	// "model":"…",` shared by every response object.
	head        []byte
	msgID, rsID string // the message and reasoning items' ids
	n           int    // sequence_number of the next event
}

// newResponsesEncoder returns the encoder of response id (hex), created
// at unix second created by model; ans (nil: the fixed text) chooses the
// words, think reasoning tokens lead the output.
func newResponsesEncoder(id string, created int64, model string, ans *answer, think int) *responsesEncoder {
	e := &responsesEncoder{seq: textSeq{0, 1}, ans: ans, think: think, msgID: "msg_" + id, rsID: "rs_" + id}
	if ans != nil {
		e.seq = ans.seq
	}
	e.head = append(e.head, `{"id":"resp_`...)
	e.head = append(e.head, id...)
	e.head = append(e.head, `","object":"response","created_at":`...)
	e.head = strconv.AppendInt(e.head, created, 10)
	e.head = append(e.head, `,"model":`...)
	e.head = appendJSONString(e.head, model)
	e.head = append(e.head, ',')
	return e
}

// event opens an event of type typ: its event line and its data up to
// the members that follow "type".
func (e *responsesEncoder) event(b []byte, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	return append(b, `",`...)
}

// seal closes an event with its sequence_number.
func (e *responsesEncoder) seal(b []byte) []byte {
	b = append(b, `"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.n), 10)
	e.n++
	return append(b, "}\n\n"...)
}

// at appends the members that place an event in an item:
// "item_id","output_index","content_index".
func at(b []byte, item string, output int) []byte {
	b = append(b, `"item_id":"`...)
	b = append(b, item...)
	b = append(b, `","output_index":`...)
	b = strconv.AppendInt(b, int64(output), 10)
	return append(b, `,"content_index":0,`...)
}

// messageIndex is the output_index of the message item: after the
// reasoning item, if any.
func (e *responsesEncoder) messageIndex() int {
	if e.think > 0 {
		return 1
	}
	return 0
}

// start implements streamEncoder: response.created and
// response.in_progress, the response in progress with no output yet.
func (e *responsesEncoder) start(b []byte) []byte {
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		b = e.event(b, typ)
		b = append(b, `"response":`...)
		b = e.object(b, nil)
		b = e.seal(append(b, ','))
	}
	return b
}

// reasoning implements streamEncoder: reasoning token i as a
// response.reasoning_text.delta, after the events that add the
// reasoning item and its reasoning_text part (i = 0).
func (e *responsesEncoder) reasoning(b []byte, i int) []byte {
	if i == 0 {
		b = e.event(b, "response.output_item.added")
		b = append(b, `"output_index":0,"item":`...)
		b = e.reasoningItem(b, -1)
		b = e.seal(append(b, ','))
		b = e.event(b, "response.content_part.added")
		b = at(b, e.rsID, 0)
		b = e.seal(append(b, `"part":{"type":"reasoning_text","text":""},`...))
	}
	b = e.event(b, "response.reasoning_text.delta")
	b = at(b, e.rsID, 0)
	b = append(b, `"delta":"`...)
	b = append(b, tokenText(i)...)
	return e.seal(append(b, `",`...))
}

// content implements streamEncoder: content token k as a
// response.output_text.delta (none for a token past a stop string),
// after (k = 0) the events that close the reasoning item and add the
// message item and its output_text part.
func (e *responsesEncoder) content(b []byte, k int) []byte {
	out := e.messageIndex()
	if k == 0 {
		if e.think > 0 {
			b = e.reasoningDone(b, e.think)
		}
		b = e.event(b, "response.output_item.added")
		b = append(b, `"output_index":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		b = append(b, `,"item":`...)
		b = e.messageItem(b, -1)
		b = e.seal(append(b, ','))
		b = e.event(b, "response.content_part.added")
		b = at(b, e.msgID, out)
		b = e.seal(append(b, `"part":{"type":"output_text","text":"","annotations":[]},`...))
	}
	piece := e.piece(k)
	if piece == "" {
		return b
	}
	b = e.event(b, "response.output_text.delta")
	b = at(b, e.msgID, out)
	b = append(b, `"delta":"`...)
	b = append(b, piece...)
	return e.seal(append(b, `",`...))
}

// piece is the text of content token k: its word, cut before a stop
// string, nothing past it.
func (e *responsesEncoder) piece(k int) string {
	if a := e.ans; a != nil && a.send >= 0 {
		switch {
		case k >= a.send:
			return ""
		case k == a.send-1 && a.cut > 0:
			return e.seq.text(k)[:a.cut]
		}
	}
	return e.seq.text(k)
}

// reasoningDone appends the events that close the reasoning item of r
// tokens: response.reasoning_text.done, response.content_part.done,
// response.output_item.done.
func (e *responsesEncoder) reasoningDone(b []byte, r int) []byte {
	b = e.event(b, "response.reasoning_text.done")
	b = at(b, e.rsID, 0)
	b = append(b, `"text":"`...)
	b = appendReasoningText(b, r)
	b = e.seal(append(b, `",`...))
	b = e.event(b, "response.content_part.done")
	b = at(b, e.rsID, 0)
	b = append(b, `"part":{"type":"reasoning_text","text":"`...)
	b = appendReasoningText(b, r)
	b = e.seal(append(b, `"},`...))
	b = e.event(b, "response.output_item.done")
	b = append(b, `"output_index":0,"item":`...)
	b = e.reasoningItem(b, r)
	return e.seal(append(b, ','))
}

// textDone appends the events that close the message item of n content
// tokens: response.output_text.done, response.content_part.done,
// response.output_item.done.
func (e *responsesEncoder) textDone(b []byte, n int) []byte {
	out := e.messageIndex()
	b = e.event(b, "response.output_text.done")
	b = at(b, e.msgID, out)
	b = append(b, `"text":"`...)
	b = e.appendText(b, n)
	b = e.seal(append(b, `",`...))
	b = e.event(b, "response.content_part.done")
	b = at(b, e.msgID, out)
	b = append(b, `"part":{"type":"output_text","text":"`...)
	b = e.appendText(b, n)
	b = e.seal(append(b, `","annotations":[]},`...))
	b = e.event(b, "response.output_item.done")
	b = append(b, `"output_index":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"item":`...)
	b = e.messageItem(b, n)
	return e.seal(append(b, ','))
}

// end implements streamEncoder: the events that close the open item,
// then response.completed, or response.incomplete when the cap cut the
// answer, with the whole response and its usage. No [DONE] follows.
func (e *responsesEncoder) end(b []byte, f final) []byte {
	if n := f.res.OutputTokens - f.reasoning; n > 0 {
		b = e.textDone(b, n)
	} else if f.reasoning > 0 {
		b = e.reasoningDone(b, f.reasoning)
	}
	typ := "response.completed"
	if f.reason == "length" {
		typ = "response.incomplete"
	}
	b = e.event(b, typ)
	b = append(b, `"response":`...)
	b = e.object(b, &f)
	return e.seal(append(b, ','))
}

// response implements bodyEncoder: the response object.
func (e *responsesEncoder) response(b []byte, f final) []byte {
	return append(e.object(b, &f), '\n')
}

// object appends the response object: in progress with no output (f
// nil), or finished: status "completed", or "incomplete" with
// incomplete_details {"reason":"max_output_tokens"} when the cap cut the
// answer; its output items and usage (null under the no-usage quirk).
func (e *responsesEncoder) object(b []byte, f *final) []byte {
	b = append(b, e.head...)
	if f == nil {
		return append(b, `"status":"in_progress","error":null,"incomplete_details":null,"output":[],"usage":null}`...)
	}
	if f.reason == "length" {
		b = append(b, `"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"output":[`...)
	} else {
		b = append(b, `"status":"completed","error":null,"incomplete_details":null,"output":[`...)
	}
	n := f.res.OutputTokens - f.reasoning
	if f.reasoning > 0 {
		b = e.reasoningItem(b, f.reasoning)
		if n > 0 {
			b = append(b, ',')
		}
	}
	if n > 0 {
		b = e.messageItem(b, n)
	}
	b = append(b, `],"usage":`...)
	if !f.usage {
		return append(b, "null}"...)
	}
	b = appendResponsesUsage(b, f.res.PromptTokens, max(f.cached, 0), f.res.OutputTokens, f.reasoning)
	return append(b, '}')
}

// reasoningItem appends the reasoning item: in progress (r < 0) or
// completed with the text of r tokens.
func (e *responsesEncoder) reasoningItem(b []byte, r int) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, e.rsID...)
	if r < 0 {
		return append(b, `","type":"reasoning","summary":[],"status":"in_progress"}`...)
	}
	b = append(b, `","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"`...)
	b = appendReasoningText(b, r)
	return append(b, `"}],"status":"completed"}`...)
}

// messageItem appends the assistant message item: in progress with no
// content (n < 0) or completed with the text of n tokens.
func (e *responsesEncoder) messageItem(b []byte, n int) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, e.msgID...)
	if n < 0 {
		return append(b, `","type":"message","status":"in_progress","role":"assistant","content":[]}`...)
	}
	b = append(b, `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"`...)
	b = e.appendText(b, n)
	return append(b, `","annotations":[]}]}`...)
}

// appendText appends the text of the first n content tokens.
func (e *responsesEncoder) appendText(b []byte, n int) []byte {
	for k := range n {
		b = append(b, e.piece(k)...)
	}
	return b
}

// appendReasoningText appends the text of the first r reasoning tokens.
func appendReasoningText(b []byte, r int) []byte {
	for i := range r {
		b = append(b, tokenText(i)...)
	}
	return b
}

// appendResponsesUsage appends the Responses API's usage object.
func appendResponsesUsage(b []byte, prompt, cached, output, reasoning int) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(cached), 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(output), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(reasoning), 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+output), 10)
	return append(b, '}')
}

// malformed implements streamEncoder: an output_text delta cut after its
// item_id's name.
func (e *responsesEncoder) malformed(b []byte) []byte {
	b = e.event(b, "response.output_text.delta")
	return append(b, `"item_id":`+sseEnd...)
}

// overloaded implements streamEncoder: an error event, as the Responses
// API reports a failure mid-stream.
func (e *responsesEncoder) overloaded(b []byte) []byte {
	b = e.event(b, "error")
	return e.seal(append(b, `"code":"server_error","message":"the server is overloaded: the response was cut short","param":null,`...))
}

// truncatedBody implements bodyEncoder.
func (e *responsesEncoder) truncatedBody(b []byte) []byte {
	b = append(b, e.head...)
	return append(b, `"status":"completed","output":[{"type":"message",`...)
}
