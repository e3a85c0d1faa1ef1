package check

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
)

// The typed streams of the Responses and Messages APIs: each data event
// is a JSON object whose "type" names it, and the stream ends with an
// event of its own (response.completed or response.incomplete;
// message_stop) instead of [DONE]. The probe reads them into the same
// Chunks and Exchange as a chat stream (text deltas as Content,
// reasoning and thinking as Reasoning, tool-argument pieces as
// ToolDelta), and keeps each event's type in Chunk.Type for the checks
// that judge the grammar (responses.end, messages.end).

// errUntyped ends a typed stream at an event without a "type": not the
// API's stream at all (a chat chunk, say).
var errUntyped = errors.New(`an event has no "type"`)

// wireTyped is the part of a Responses or Messages event the probe reads.
type wireTyped struct {
	Type string `json:"type"`
	// Delta is a string in Responses (the text of a *.delta event), an
	// object in Messages (content_block_delta's, message_delta's).
	Delta       json.RawMessage `json:"delta"`
	Index       *int            `json:"index"`        // Messages: the content block
	OutputIndex *int            `json:"output_index"` // Responses: the output item
	Item        *struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
	} `json:"item"` // Responses: response.output_item.added
	ContentBlock *struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"` // Messages: content_block_start
	Response *struct {
		Status string     `json:"status"`
		Usage  *wireUsage `json:"usage"`
	} `json:"response"` // Responses: the response object of response.*
	Message *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"message"` // Messages: message_start's message
	Usage *wireUsage `json:"usage"` // Messages: message_delta's usage
}

// wireUsage is the usage of the Responses and Messages APIs.
type wireUsage struct {
	InputTokens   *int `json:"input_tokens"`
	OutputTokens  *int `json:"output_tokens"`
	TotalTokens   *int `json:"total_tokens"`
	CacheRead     int  `json:"cache_read_input_tokens"`
	CacheCreation int  `json:"cache_creation_input_tokens"`
}

// wireMessagesDelta is a Messages delta: a content block's piece
// (text_delta, thinking_delta, input_json_delta) or message_delta's stop.
type wireMessagesDelta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	Thinking    string  `json:"thinking"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}

// usage is the exchange's usage, begun when first reported.
func (x *Exchange) usage() *Usage {
	if x.Usage == nil {
		x.Usage = &Usage{}
	}
	return x.Usage
}

// decodeTyped reads the common part of a typed event: a JSON object with
// a type. [DONE] (a chat server's end) and an event without a type end
// the stream; so does an error event (error, response.failed), kept in
// Body as chat's are.
func decodeTyped(x *Exchange, data []byte, end string, c *Chunk) (wireTyped, step) {
	var w wireTyped
	switch {
	case string(data) == "[DONE]":
		x.EndErr = fmt.Errorf("[DONE] came before %s", end)
		return w, stepBad
	case json.Unmarshal(data, &w) != nil:
		x.EndErr = errBadEvent
		return w, stepBad
	case w.Type == "":
		x.EndErr = errUntyped
		return w, stepBad
	case w.Type == "error" || w.Type == "response.failed":
		x.EndErr = errStreamError
		x.Body = append([]byte(nil), data...)
		return w, stepBad
	}
	c.Type = w.Type
	return w, stepEvent
}

// deltaText is a Responses delta: a string, "" otherwise.
func deltaText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// decodeResponsesEvent reads one event of a Responses stream:
// response.output_text.delta and response.refusal.delta are text,
// response.reasoning_text.delta and response.reasoning_summary_text.delta
// reasoning, response.function_call_arguments.delta a piece of the
// function call its output_item.added opened; response.completed and
// response.incomplete end the stream with the response's status and usage.
func decodeResponsesEvent(x *Exchange, a *assembly, data []byte, c *Chunk) step {
	w, st := decodeTyped(x, data, "response.completed", c)
	if st != stepEvent {
		return st
	}
	out := 0
	if w.OutputIndex != nil {
		out = *w.OutputIndex
	}
	switch w.Type {
	case "response.output_text.delta", "response.refusal.delta":
		c.Content = deltaText(w.Delta)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		c.Reasoning = deltaText(w.Delta)
	case "response.output_item.added":
		if w.Item != nil && w.Item.Type == "function_call" {
			tc := a.tool(out)
			tc.ID, tc.Name = cmp.Or(w.Item.CallID, w.Item.ID), w.Item.Name
		}
	case "response.function_call_arguments.delta":
		if d := deltaText(w.Delta); d != "" {
			c.ToolDelta = 1
			a.tool(out).Arguments += d
		}
	case "response.completed", "response.incomplete":
		if w.Response != nil {
			x.FinishReason = w.Response.Status
			if u := w.Response.Usage; u != nil {
				c.Usage = true
				x.Usage = u.usage()
			}
		}
		return stepEnd
	}
	return stepEvent
}

// usage is a Responses usage as Usage: input as prompt, output as
// completion tokens.
func (u *wireUsage) usage() *Usage {
	r := &Usage{}
	if u.InputTokens != nil {
		r.PromptTokens = *u.InputTokens
	}
	if u.OutputTokens != nil {
		r.CompletionTokens = *u.OutputTokens
	}
	if u.TotalTokens != nil {
		r.TotalTokens = *u.TotalTokens
	} else {
		r.TotalTokens = r.PromptTokens + r.CompletionTokens
	}
	return r
}

// decodeMessagesEvent reads one event of a Messages stream:
// message_start gives the input tokens; content_block_start opens a
// block (a tool_use block a call with its id and name);
// content_block_delta carries text (text_delta), thinking
// (thinking_delta) or a piece of a tool_use block's input
// (input_json_delta); message_delta the stop_reason and the output
// tokens; message_stop ends the stream.
func decodeMessagesEvent(x *Exchange, a *assembly, data []byte, c *Chunk) step {
	w, st := decodeTyped(x, data, "message_stop", c)
	if st != stepEvent {
		return st
	}
	if w.Index != nil {
		c.Index = *w.Index
	}
	var d wireMessagesDelta
	if len(w.Delta) > 0 && w.Delta[0] == '{' {
		_ = json.Unmarshal(w.Delta, &d) // a delta of another shape reads as none
	}
	switch w.Type {
	case "message_start":
		if w.Message != nil && w.Message.Usage != nil && w.Message.Usage.InputTokens != nil {
			u := w.Message.Usage
			c.Usage = true
			x.usage().PromptTokens = *u.InputTokens + u.CacheRead + u.CacheCreation
		}
	case "content_block_start":
		if b := w.ContentBlock; b != nil {
			c.Block = b.Type
			if b.Type == "tool_use" {
				tc := a.tool(c.Index)
				tc.ID, tc.Name = b.ID, b.Name
				a.startInput[c.Index] = string(b.Input)
			}
		}
	case "content_block_delta":
		switch d.Type {
		case "text_delta":
			c.Content = d.Text
		case "thinking_delta":
			c.Reasoning = d.Thinking
		case "input_json_delta":
			if d.PartialJSON != "" {
				c.ToolDelta = 1
				a.tool(c.Index).Arguments += d.PartialJSON
			}
		}
	case "message_delta":
		if d.StopReason != nil {
			x.FinishReason = *d.StopReason
		}
		if u := w.Usage; u != nil && u.OutputTokens != nil {
			c.Usage = true
			x.usage().CompletionTokens = *u.OutputTokens
			if u.InputTokens != nil && *u.InputTokens > 0 {
				x.usage().PromptTokens = *u.InputTokens + u.CacheRead + u.CacheCreation
			}
		}
	case "message_stop":
		if x.Usage != nil {
			x.Usage.TotalTokens = x.Usage.PromptTokens + x.Usage.CompletionTokens
		}
		return stepEnd
	}
	return stepEvent
}

// decodeResponsesBody reads a non-streamed Responses body: the status,
// the output items' text (message items' output_text parts) and
// function calls, the usage.
func (x *Exchange) decodeResponsesBody() error {
	var b struct {
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			CallID  string `json:"call_id"`
			Name    string `json:"name"`
			Args    string `json:"arguments"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage *wireUsage `json:"usage"`
	}
	if err := json.Unmarshal(x.Body, &b); err != nil {
		return err
	}
	x.FinishReason = b.Status
	if b.Usage != nil {
		x.Usage = b.Usage.usage()
	}
	for i, o := range b.Output {
		switch o.Type {
		case "message":
			for _, p := range o.Content {
				if p.Type == "output_text" {
					x.Text += p.Text
				}
			}
		case "function_call":
			x.ToolCalls = append(x.ToolCalls, ToolCall{Index: i, ID: o.CallID, Name: o.Name, Arguments: o.Args})
		}
	}
	return nil
}

// decodeMessagesBody reads a non-streamed Messages body: the text and
// thinking blocks, the tool_use blocks (their input as the arguments),
// the stop_reason and the usage.
func (x *Exchange) decodeMessagesBody() error {
	var b struct {
		Content []struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			Thinking string          `json:"thinking"`
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Input    json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason *string    `json:"stop_reason"`
		Usage      *wireUsage `json:"usage"`
	}
	if err := json.Unmarshal(x.Body, &b); err != nil {
		return err
	}
	if b.StopReason != nil {
		x.FinishReason = *b.StopReason
	}
	if u := b.Usage; u != nil {
		x.Usage = u.usage()
		x.Usage.PromptTokens += u.CacheRead + u.CacheCreation
		x.Usage.TotalTokens = x.Usage.PromptTokens + x.Usage.CompletionTokens
	}
	for i, c := range b.Content {
		switch c.Type {
		case "text":
			x.Text += c.Text
		case "thinking":
			x.Reasoning += c.Thinking
		case "tool_use":
			x.ToolCalls = append(x.ToolCalls, ToolCall{Index: i, ID: c.ID, Name: c.Name, Arguments: string(c.Input)})
		}
	}
	return nil
}

// AnthropicError is the Messages API's error shape,
// {"type":"error","error":{"type":…,"message":…}}, decoded from Body;
// ok false when Body is not one.
func (x *Exchange) AnthropicError() (typ string, ok bool) {
	var e struct {
		Type  string `json:"type"`
		Error *struct {
			Type    *string `json:"type"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(x.Body, &e) != nil || e.Type != "error" || e.Error == nil || e.Error.Type == nil || e.Error.Message == nil {
		return "", false
	}
	return *e.Error.Type, true
}
