package simhttp

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/surge-bench/surge/internal/sim"
)

// The Anthropic Messages API (POST /v1/messages), as vLLM and llama.cpp
// serve it: the request, the stream of events and the errors described
// in doc.go. x-api-key and anthropic-version are accepted, not required.

// maxStopSequences bounds stop_sequences (Anthropic sets no limit; the
// simulator's stop search costs per string).
const maxStopSequences = 16

// wireMessagesRequest holds the fields of a Messages request that the
// simulator reads; every other field is ignored.
type wireMessagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int64          `json:"max_tokens"`
	Messages      json.RawMessage `json:"messages"`
	System        json.RawMessage `json:"system"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	StopSequences json.RawMessage `json:"stop_sequences"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
}

// wireBlock is one content block of a Messages request: text counts its
// text, tool_result its content (a string or text blocks), tool_use the
// bytes of its input; other blocks count nothing.
type wireBlock struct {
	Type    string           `json:"type"`
	Text    string           `json:"text"`
	Content json.RawMessage  `json:"content"`
	Input   json.RawMessage  `json:"input"`
	Source  *wireImageSource `json:"source"` // image
}

// wireAnthropicTool is one entry of tools: a client tool (no type, or
// "custom") with its input_schema; server tools (web search, …) have a
// type of their own and are not called by the simulator.
type wireAnthropicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// decodeMessages parses a Messages request. max_tokens is required, as
// Anthropic requires it. The prompt counts as a chat conversation: the
// system prompt (a string or text blocks) as a system message, then
// every message.
func decodeMessages(body []byte, tok textTokens, h *sim.PrefixHasher) (parsedRequest, *apiError) {
	var w wireMessagesRequest
	if err := unmarshalRequest(body, &w); err != nil {
		return parsedRequest{}, err
	}
	p := parsedRequest{api: apiMessages, model: w.Model, stream: w.Stream}
	if w.MaxTokens == nil {
		return parsedRequest{}, badRequest("max_tokens", "max_tokens: Field required")
	}
	var err *apiError
	if p.maxTokens, err = decodeMax(w.MaxTokens, "max_tokens"); err != nil {
		return parsedRequest{}, err
	}
	if p.shape, err = decodeMessagesShaping(&w); err != nil {
		return parsedRequest{}, err
	}
	tp := newTemplatedPrompt(tok, h)
	if err := messagesSystem(w.System, &tp); err != nil {
		return parsedRequest{}, err
	}
	if absent(w.Messages) {
		return parsedRequest{}, badRequest("messages", "messages: Field required")
	}
	var msgs []wireMessage
	if err := json.Unmarshal(w.Messages, &msgs); err != nil {
		return parsedRequest{}, badRequest("messages", "messages must be an array of message objects")
	}
	if len(msgs) == 0 {
		return parsedRequest{}, badRequest("messages", "messages must contain at least one message")
	}
	for i, m := range msgs {
		if m.Role == "" {
			return parsedRequest{}, badRequest("messages", "messages[%d].role is required", i)
		}
		tp.open(m.Role)
		if err := blocksText(m.Content, &tp, "messages", i); err != nil {
			return parsedRequest{}, err
		}
		tp.close()
	}
	p.promptTokens = tp.n
	return p, nil
}

// messagesSystem counts the system prompt: a string (none when empty) or
// text blocks.
func messagesSystem(raw json.RawMessage, tp *templatedPrompt) *apiError {
	if absent(raw) || string(raw) == `""` {
		return nil
	}
	tp.open("system")
	if err := blocksText(raw, tp, "system", 0); err != nil {
		return badRequest("system", "system must be a string or an array of text blocks")
	}
	tp.close()
	return nil
}

// blocksText adds to the open message of tp the text of a content: a
// string or an array of content blocks. field and i name the message in
// errors.
func blocksText(raw json.RawMessage, tp *templatedPrompt, field string, i int) *apiError {
	bad := badRequest(field, "%s[%d].content must be a string or an array of content blocks", field, i)
	switch {
	case absent(raw):
		return bad
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return bad
		}
		tp.text(s)
		return nil
	case raw[0] != '[':
		return bad
	}
	var blocks []wireBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return bad
	}
	for j, b := range blocks {
		switch b.Type {
		case "text":
			tp.text(b.Text)
		case "image":
			n, _, ok := imagePart(b.Type, nil, b.Source)
			if !ok {
				return badRequest(field, "%s[%d].content[%d]: the image is not inline base64 PNG or JPEG", field, i, j)
			}
			tp.image(n)
		case "tool_use":
			tp.text(string(b.Input))
		case "tool_result":
			if absent(b.Content) {
				continue
			}
			var s string
			var inner []wireBlock
			if json.Unmarshal(b.Content, &s) == nil {
				tp.text(s)
			} else if json.Unmarshal(b.Content, &inner) == nil {
				for _, ib := range inner {
					if ib.Type == "text" {
						tp.text(ib.Text)
					}
				}
			}
		}
	}
	return nil
}

// decodeMessagesShaping reads temperature (Anthropic has no seed: above
// 0 a random word sequence), stop_sequences, tools and tool_choice; nil
// when none is set.
func decodeMessagesShaping(w *wireMessagesRequest) (*shaping, *apiError) {
	if w.Temperature == nil && absent(w.StopSequences) && absent(w.Tools) && absent(w.ToolChoice) {
		return nil, nil
	}
	sh := &shaping{parallel: true}
	var err *apiError
	if sh.variant, err = variantOf(w.Temperature, nil); err != nil {
		return nil, err
	}
	if sh.stops, err = decodeStop(w.StopSequences, "stop_sequences", maxStopSequences); err != nil {
		return nil, err
	}
	if err := decodeAnthropicTools(w, sh); err != nil {
		return nil, err
	}
	return sh, nil
}

// decodeAnthropicTools reads tools and tool_choice ({"type":"auto"|"any"|
// "tool"|"none","name":…,"disable_parallel_tool_use":…}): the tools kept
// are the client tools, when tool_choice lets the model call them.
func decodeAnthropicTools(w *wireMessagesRequest, sh *shaping) *apiError {
	var tools []wireAnthropicTool
	if !absent(w.Tools) {
		if json.Unmarshal(w.Tools, &tools) != nil {
			return badRequest("tools", "tools must be an array of {\"name\",\"input_schema\"} objects")
		}
		if len(tools) > maxTools {
			return badRequest("tools", "tools takes at most %d entries, got %d", maxTools, len(tools))
		}
	}
	var offered []tool
	for i, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool
		}
		switch {
		case t.Name == "":
			return badRequest("tools", "tools.%d.name: Field required", i)
		case len(t.Name) > maxToolName:
			return badRequest("tools", "tools.%d.name is longer than %d bytes", i, maxToolName)
		case !absent(t.InputSchema) && bytes.TrimSpace(t.InputSchema)[0] != '{':
			return badRequest("tools", "tools.%d.input_schema must be a JSON Schema object", i)
		}
		offered = append(offered, tool{name: t.Name, params: t.InputSchema})
	}
	choice := struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}{Type: "auto"}
	if !absent(w.ToolChoice) && json.Unmarshal(w.ToolChoice, &choice) != nil {
		return badRequest("tool_choice", "tool_choice must be {\"type\":\"auto\"|\"any\"|\"tool\"|\"none\"}")
	}
	sh.parallel = !choice.DisableParallelToolUse
	switch choice.Type {
	case "auto", "none":
	case "any":
		if len(offered) == 0 {
			return badRequest("tool_choice", "tool_choice any needs tools")
		}
	case "tool":
		if choice.Name == "" {
			return badRequest("tool_choice", "tool_choice.name: Field required")
		}
		sh.forced = choice.Name
	default:
		return badRequest("tool_choice", "tool_choice.type must be \"auto\", \"any\", \"tool\" or \"none\"")
	}
	if choice.Type == "none" {
		return nil
	}
	if sh.forced != "" {
		found := false
		for _, t := range offered {
			found = found || t.name == sh.forced
		}
		if !found {
			return badRequest("tool_choice", "tool_choice names a tool that is not in tools")
		}
	}
	sh.tools = offered
	return nil
}

var _ streamEncoder = (*messagesEncoder)(nil)

// messagesEncoder writes one response of the Messages API: its stream of
// events (each `event: <type>` and `data: {"type":"<type>",…}`) and its
// message object. It keeps the index of the content block open, so it
// serves one response, in order.
type messagesEncoder struct {
	seq    textSeq // the words of plain text
	ans    *answer // nil: plain text without a stop
	think  int     // reasoning tokens that lead the output: a thinking block
	prompt int     // input tokens, for message_start
	usage  bool    // report usage (false: the no-usage quirk)
	// head is `{"id":"msg_…","type":"message","role":"assistant",
	// "model":"…",` shared by message_start and the body.
	head   []byte
	next   int  // index of the next content block
	open   bool // block next−1 is open
	pinged bool // the ping after the first block start went out
}

// newMessagesEncoder returns the encoder of message id (hex) by model
// for a prompt of prompt tokens; ans (nil: the fixed text) is the
// answer, think reasoning tokens lead it.
func newMessagesEncoder(id, model string, prompt int, ans *answer, think int, usage bool) *messagesEncoder {
	e := &messagesEncoder{seq: textSeq{0, 1}, ans: ans, think: think, prompt: prompt, usage: usage}
	if ans != nil {
		e.seq = ans.seq
	}
	e.head = append(e.head, `{"id":"msg_`...)
	e.head = append(e.head, id...)
	e.head = append(e.head, `","type":"message","role":"assistant","model":`...)
	e.head = appendJSONString(e.head, model)
	e.head = append(e.head, ',')
	return e
}

// event opens an event of type typ: its event line and its data up to
// the members that follow "type" (a comma included when more follow).
func (e *messagesEncoder) event(b []byte, typ string, more bool) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, '"')
	if more {
		b = append(b, ',')
	}
	return b
}

// start implements streamEncoder: message_start, the message with no
// content yet and its input tokens.
func (e *messagesEncoder) start(b []byte) []byte {
	b = e.event(b, "message_start", true)
	b = append(b, `"message":`...)
	b = append(b, e.head...)
	b = append(b, `"content":[],"stop_reason":null,"stop_sequence":null`...)
	if e.usage {
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(e.prompt), 10)
		b = append(b, `,"output_tokens":1}`...)
	}
	return append(b, "}}"+sseEnd...)
}

// openBlock closes the open content block, if any, and starts the next
// with block (its JSON), followed by a ping after the first.
func (e *messagesEncoder) openBlock(b []byte, block ...string) []byte {
	b = e.closeBlock(b)
	b = e.event(b, "content_block_start", true)
	b = append(b, `"index":`...)
	b = strconv.AppendInt(b, int64(e.next), 10)
	b = append(b, `,"content_block":`...)
	for _, s := range block {
		b = append(b, s...)
	}
	b = append(b, "}"+sseEnd...)
	e.next++
	e.open = true
	if !e.pinged {
		e.pinged = true
		b = append(b, "event: ping\ndata: {\"type\":\"ping\"}"+sseEnd...)
	}
	return b
}

// closeBlock appends content_block_stop for the open block, if any.
func (e *messagesEncoder) closeBlock(b []byte) []byte {
	if !e.open {
		return b
	}
	e.open = false
	b = e.event(b, "content_block_stop", true)
	b = append(b, `"index":`...)
	b = strconv.AppendInt(b, int64(e.next-1), 10)
	return append(b, "}"+sseEnd...)
}

// delta appends a content_block_delta of the open block: a delta of
// type typ whose member field holds s (escaped for a JSON string).
func delta[T string | []byte](e *messagesEncoder, b []byte, typ, field string, s T) []byte {
	b = e.event(b, "content_block_delta", true)
	b = append(b, `"index":`...)
	b = strconv.AppendInt(b, int64(e.next-1), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":"`...)
	b = append(b, s...)
	return append(b, `"}}`+sseEnd...)
}

// reasoning implements streamEncoder: reasoning token i as a
// thinking_delta, in a thinking block started at i = 0.
func (e *messagesEncoder) reasoning(b []byte, i int) []byte {
	if i == 0 {
		b = e.openBlock(b, `{"type":"thinking","thinking":""}`)
	}
	return delta(e, b, "thinking_delta", "thinking", tokenText(i))
}

// content implements streamEncoder: content token k as a text_delta of
// the text block (started at k = 0; cut before a stop sequence, nothing
// past it), or as an input_json_delta piece of a tool_use block's input,
// the block started with the call's first piece.
func (e *messagesEncoder) content(b []byte, k int) []byte {
	a := e.ans
	switch {
	case a == nil:
	case a.frags != nil:
		if k >= len(a.frags) {
			return b
		}
		if a.fragCall == nil { // JSON content
			return delta(e, e.textStart(b, k), "text_delta", "text", a.frags[k])
		}
		c := a.fragCall[k]
		if k == 0 || a.fragCall[k-1] != c {
			call := a.calls[c]
			b = e.openBlock(b, `{"type":"tool_use","id":"toolu_`, call.id[len("call_"):], `","name":"`, string(call.name), `","input":{}}`)
		}
		return delta(e, b, "input_json_delta", "partial_json", a.frags[k])
	case a.send >= 0:
		if k >= a.send {
			return b
		}
		if k == a.send-1 && a.cut > 0 {
			return delta(e, e.textStart(b, k), "text_delta", "text", e.seq.text(k)[:a.cut])
		}
	}
	return delta(e, e.textStart(b, k), "text_delta", "text", e.seq.text(k))
}

// textStart starts the text block before content token k = 0.
func (e *messagesEncoder) textStart(b []byte, k int) []byte {
	if k == 0 {
		b = e.openBlock(b, `{"type":"text","text":""}`)
	}
	return b
}

// end implements streamEncoder: content_block_stop of the open block,
// message_delta with the stop reason and the usage, message_stop.
func (e *messagesEncoder) end(b []byte, f final) []byte {
	b = e.closeBlock(b)
	b = e.event(b, "message_delta", true)
	b = append(b, `"delta":`...)
	b = e.appendStop(b, f.reason)
	if f.usage {
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.PromptTokens), 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.OutputTokens), 10)
		b = append(b, '}')
	}
	b = append(b, "}"+sseEnd...)
	b = e.event(b, "message_stop", false)
	return append(b, "}"+sseEnd...)
}

// appendStop appends {"stop_reason":…,"stop_sequence":…}: end_turn,
// max_tokens, tool_use, or stop_sequence with the sequence matched.
func (e *messagesEncoder) appendStop(b []byte, reason string) []byte {
	b = append(b, `{"stop_reason":"`...)
	var seq []byte
	if e.ans != nil {
		seq = e.ans.stopReason(reason)
	}
	switch {
	case seq != nil:
		b = append(b, `stop_sequence","stop_sequence":`...)
		b = append(b, seq...)
		return append(b, '}')
	case reason == "length":
		b = append(b, "max_tokens"...)
	case reason == "tool_calls":
		b = append(b, "tool_use"...)
	default:
		b = append(b, "end_turn"...)
	}
	return append(b, `","stop_sequence":null}`...)
}

// response implements bodyEncoder: the message, its content blocks (a
// thinking block, then the text or the tool_use blocks as far as the
// output went), its stop reason and usage.
func (e *messagesEncoder) response(b []byte, f final) []byte {
	b = append(b, e.head...)
	b = append(b, `"content":[`...)
	n := f.res.OutputTokens - f.reasoning // content tokens
	if f.reasoning > 0 {
		b = append(b, `{"type":"thinking","thinking":"`...)
		b = appendReasoningText(b, f.reasoning)
		b = append(b, `"}`...)
		if n > 0 {
			b = append(b, ',')
		}
	}
	a := e.ans
	switch {
	case n <= 0:
	case a != nil && a.tools():
		b = e.appendToolUses(b, n)
	default:
		b = append(b, `{"type":"text","text":"`...)
		switch {
		case a != nil && a.json():
			b = a.joined(b, n)
		case a != nil && a.send >= 0:
			for k := range min(n, a.send) {
				t := e.seq.text(k)
				if k == a.send-1 && a.cut > 0 {
					t = t[:a.cut]
				}
				b = append(b, t...)
			}
		default:
			for k := range n {
				b = append(b, e.seq.text(k)...)
			}
		}
		b = append(b, `"}`...)
	}
	b = append(b, `],`...)
	stop := e.appendStop(nil, f.reason) // {"stop_reason":…,"stop_sequence":…}
	b = append(b, stop[1:len(stop)-1]...)
	if f.usage {
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.PromptTokens), 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.OutputTokens), 10)
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// appendToolUses appends the tool_use blocks of a body: every call whose
// first piece is among the first n; its input the arguments when they
// came whole and parse, else {} (cut by max_tokens, or the bad-tool-args
// quirk: an object cannot hold broken JSON).
func (e *messagesEncoder) appendToolUses(b []byte, n int) []byte {
	a := e.ans
	for k := 0; k < min(n, len(a.frags)); {
		c := a.fragCall[k]
		for k < len(a.frags) && a.fragCall[k] == c {
			k++
		}
		if c > 0 {
			b = append(b, ',')
		}
		call := a.calls[c]
		b = append(b, `{"type":"tool_use","id":"toolu_`...)
		b = append(b, call.id[len("call_"):]...)
		b = append(b, `","name":"`...)
		b = append(b, call.name...)
		b = append(b, `","input":`...)
		if k <= n && json.Valid(call.args) {
			b = append(b, call.args...)
		} else {
			b = append(b, "{}"...)
		}
		b = append(b, '}')
	}
	return b
}

// malformed implements streamEncoder: a content_block_delta cut after
// its index's name.
func (e *messagesEncoder) malformed(b []byte) []byte {
	b = e.event(b, "content_block_delta", true)
	return append(b, `"index":`+sseEnd...)
}

// overloaded implements streamEncoder: an error event of type
// overloaded_error, as Anthropic reports an overload mid-stream.
func (e *messagesEncoder) overloaded(b []byte) []byte {
	b = append(b, "event: error\ndata: "...)
	b = appendAnthropicError(b, &apiError{status: 529, message: "Overloaded"})
	return append(b, sseEnd...)
}

// truncatedBody implements bodyEncoder.
func (e *messagesEncoder) truncatedBody(b []byte) []byte {
	b = append(b, e.head...)
	return append(b, `"content":[{"type":"text","text":"`...)
}
