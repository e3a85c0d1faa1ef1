package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ev is one event of a typed stream: its type and members (name, value
// pairs).
func ev(typ string, kv ...any) map[string]any {
	m := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// writeTyped writes each event as `event: <type>` and `data: <JSON>`
// (a string verbatim, as data alone), flushing after each.
func writeTyped(w http.ResponseWriter, events ...any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	fl, _ := w.(http.Flusher)
	for _, e := range events {
		if s, ok := e.(string); ok {
			fmt.Fprintf(w, "data: %s\n\n", s)
		} else {
			m := e.(map[string]any)
			b, _ := json.Marshal(m)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m["type"], b)
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// events is a list of events as writeTyped takes them.
func events(ms ...map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// responsesUsage is a Responses usage object.
func responsesUsage(in, out int) map[string]any {
	return map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out}
}

// responsesEvents is a Responses stream: created, the message item and
// its part, n text deltas, then the end event (nil: none) with status
// and usage (nil: null).
func responsesEvents(n int, end, status string, usage map[string]any) []any {
	evs := events(
		ev("response.created", "response", map[string]any{"status": "in_progress", "output": []any{}, "usage": nil}),
		ev("response.output_item.added", "output_index", 0, "item", map[string]any{"type": "message", "id": "msg_1", "role": "assistant"}),
		ev("response.content_part.added", "item_id", "msg_1", "output_index", 0, "content_index", 0, "part", map[string]any{"type": "output_text", "text": ""}),
	)
	for i := range n {
		evs = append(evs, ev("response.output_text.delta", "item_id", "msg_1", "output_index", 0, "content_index", 0, "delta", fmt.Sprintf(" w%d", i)))
	}
	if end != "" {
		var u any
		if usage != nil {
			u = usage
		}
		evs = append(evs, ev(end, "response", map[string]any{"status": status, "output": []any{}, "usage": u}))
	}
	return evs
}

// messagesEvents is a Messages stream: message_start (input tokens in
// usage unless in < 0), one text block of n deltas, message_delta with
// stop and the output tokens (none when out < 0), message_stop.
func messagesEvents(n int, stop string, in, out int) []any {
	msg := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "content": []any{}, "stop_reason": nil}
	if in >= 0 {
		msg["usage"] = map[string]any{"input_tokens": in, "output_tokens": 1}
	}
	evs := events(ev("message_start", "message", msg),
		ev("content_block_start", "index", 0, "content_block", map[string]any{"type": "text", "text": ""}), ev("ping"))
	for i := range n {
		evs = append(evs, ev("content_block_delta", "index", 0, "delta", map[string]any{"type": "text_delta", "text": fmt.Sprintf(" w%d", i)}))
	}
	md := ev("message_delta", "delta", map[string]any{"stop_reason": stop, "stop_sequence": nil})
	if out >= 0 {
		md["usage"] = map[string]any{"output_tokens": out}
	}
	return append(evs, ev("content_block_stop", "index", 0), md, ev("message_stop"))
}

// typedServer answers GET /v1/models with model m and every POST with h.
func typedServer(t *testing.T, api string, h http.HandlerFunc) *Probe {
	return serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		if okAPI(w, r) {
			return
		}
		io.Copy(io.Discard, r.Body)
		h(w, r)
	}, api)
}

// The probe reads the simulator's Responses and Messages streams into
// the chunks and usage a chat stream gives, and ends at their end
// events; and their bodies.
func TestProbeTypedOnSimulator(t *testing.T) {
	for _, tc := range []struct {
		api, end, finish string
	}{
		{APIResponses, "response.incomplete", "incomplete"},
		{APIMessages, "message_stop", "max_tokens"},
	} {
		t.Run(tc.api, func(t *testing.T) {
			p := simProbe(t, fastSim(), tc.api)
			ctx := context.Background()
			x, err := p.Send(ctx, typedStream(tc.api, 12))
			if err != nil {
				t.Fatal(err)
			}
			if x.Status != 200 || !x.Done || x.EndErr != nil {
				t.Fatalf("status %d done %v err %v", x.Status, x.Done, x.EndErr)
			}
			n := x.ContentChunks()
			if x.Usage == nil || x.Usage.CompletionTokens != n || n == 0 || n > 12 || x.Usage.PromptTokens <= 0 {
				t.Errorf("usage %+v for %d content events", x.Usage, n)
			}
			if last := x.Chunks[len(x.Chunks)-1]; last.Type != tc.end {
				t.Errorf("last event %q, want %s", last.Type, tc.end)
			}
			if n == 12 && x.FinishReason != tc.finish {
				t.Errorf("finish %q, want %s", x.FinishReason, tc.finish)
			}
			if x.Text == "" || x.FirstContent() <= 0 {
				t.Errorf("text %d bytes, first content %v", len(x.Text), x.FirstContent())
			}
			y, err := p.Send(ctx, Req{Prompt: "hello", MaxTokens: 16})
			if err != nil {
				t.Fatal(err)
			}
			if y.Stream || y.Status != 200 || y.EndErr != nil || y.Text == "" || y.Usage == nil || y.Usage.CompletionTokens <= 0 || y.FinishReason == "" {
				t.Errorf("unary: stream %v status %d err %v text %d bytes usage %+v finish %q", y.Stream, y.Status, y.EndErr, len(y.Text), y.Usage, y.FinishReason)
			}
		})
	}
}

// The body of each API carries its own members.
func TestProbeBodies(t *testing.T) {
	for _, tc := range []struct {
		api  string
		r    Req
		want string
	}{
		{APIChat, Req{Prompt: "p", MaxTokens: 3, Stream: true}, `{"max_tokens":3,"messages":[{"content":"p","role":"user"}],"model":"m","stream":true}`},
		{APICompletions, Req{Prompt: "p", MaxTokens: 3}, `{"max_tokens":3,"model":"m","prompt":"p"}`},
		{APIResponses, Req{Prompt: "p", MaxTokens: 3, Stream: true}, `{"input":"p","max_output_tokens":3,"model":"m","stream":true}`},
		{APIMessages, Req{Prompt: "p", MaxTokens: 3, Stream: true}, `{"max_tokens":3,"messages":[{"content":"p","role":"user"}],"model":"m","stream":true}`},
		{APIEmbeddings, Req{Inputs: []string{"a", "b"}, MaxTokens: 3, Stream: true}, `{"input":["a","b"],"model":"m"}`},
		{APIEmbeddings, Req{Prompt: "a"}, `{"input":["a"],"model":"m"}`},
		{APIRerank, Req{Prompt: "q", Inputs: []string{"a", "b"}, Extra: map[string]any{"top_n": 1}}, `{"documents":["a","b"],"model":"m","query":"q","top_n":1}`},
	} {
		p := NewProbe("http://127.0.0.1:1/v1", "m", tc.api, http.DefaultClient, http.Header{})
		if got := string(p.Body(tc.r)); got != tc.want {
			t.Errorf("%s: body %s, want %s", tc.api, got, tc.want)
		}
	}
	for api, path := range map[string]string{APIChat: "/chat/completions", APICompletions: "/completions", APIResponses: "/responses",
		APIMessages: "/messages", APIEmbeddings: "/embeddings", APIRerank: "/rerank", "": "/chat/completions"} {
		if got := NewProbe("http://h/v1", "m", api, http.DefaultClient, nil).Path(); got != path {
			t.Errorf("%q: path %s, want %s", api, got, path)
		}
	}
}

// A typed stream that breaks its grammar ends the exchange with an error
// that says how.
func TestProbeTypedBreaks(t *testing.T) {
	for name, tc := range map[string]struct {
		api  string
		h    http.HandlerFunc
		want string
	}{
		"chat chunks on responses": {APIResponses, func(w http.ResponseWriter, r *http.Request) {
			streamEvents(w, true, wordEvents(3, "length")...)
		}, `an event has no "type"`},
		"[DONE] on messages": {APIMessages, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, append(messagesEvents(3, "end_turn", 5, 3)[:4], "[DONE]")...)
		}, "[DONE] came before message_stop"},
		"not JSON": {APIResponses, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, append(responsesEvents(2, "", "", nil), `{"type":"response.output_text.delta","delta":`)...)
		}, "a data event is not valid JSON"},
		"error event": {APIMessages, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, append(messagesEvents(3, "end_turn", 5, 3)[:4], ev("error", "error", map[string]any{"type": "overloaded_error", "message": "Overloaded"}))...)
		}, "the stream carried an error event"},
		"response.failed": {APIResponses, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, append(responsesEvents(2, "", "", nil), ev("response.failed", "response", map[string]any{"status": "failed"}))...)
		}, "the stream carried an error event"},
		"EOF before message_stop": {APIMessages, func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, messagesEvents(3, "end_turn", 5, 3)[:5]...)
		}, "the stream ended without message_stop"},
	} {
		t.Run(name, func(t *testing.T) {
			x, err := typedServer(t, tc.api, tc.h).Send(context.Background(), Req{Prompt: "p", MaxTokens: 8, Stream: true, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if x.Done || x.EndErr == nil || !strings.Contains(x.EndErr.Error(), tc.want) {
				t.Errorf("done %v, err %v, want %q", x.Done, x.EndErr, tc.want)
			}
		})
	}
}

// A Messages tool_use block assembles from its input_json_delta pieces
// by its index; one whose input came whole in content_block_start keeps
// that.
func TestProbeMessagesToolUse(t *testing.T) {
	p := typedServer(t, APIMessages, func(w http.ResponseWriter, r *http.Request) {
		writeTyped(w, append(toolUseEvents("toolu_1", "search_flights", validFlights, "tool_use")[:8],
			ev("content_block_start", "index", 2, "content_block", map[string]any{"type": "tool_use", "id": "toolu_2", "name": "get_server_time", "input": map[string]any{}}),
			ev("content_block_stop", "index", 2), ev("message_delta", "delta", map[string]any{"stop_reason": "tool_use"}), ev("message_stop"))...)
	})
	x, err := p.Send(context.Background(), Req{Prompt: "p", MaxTokens: 8, Stream: true})
	if err != nil || x.EndErr != nil {
		t.Fatal(err, x.EndErr)
	}
	if len(x.ToolCalls) != 2 {
		t.Fatalf("%d calls: %+v", len(x.ToolCalls), x.ToolCalls)
	}
	a, b := x.ToolCalls[0], x.ToolCalls[1]
	if a.Index != 1 || a.ID != "toolu_1" || a.Name != "search_flights" || a.Arguments != validFlights {
		t.Errorf("first call %+v", a)
	}
	if b.Index != 2 || b.ID != "toolu_2" || b.Arguments != "{}" {
		t.Errorf("second call %+v", b)
	}
}

// toolUseEvents is a Messages stream of a text block, then one tool_use
// block (index 1) whose input comes in two input_json_delta pieces, then
// message_delta with stop and message_stop.
func toolUseEvents(id, name, args, stop string) []any {
	block := map[string]any{"type": "tool_use", "name": name, "input": map[string]any{}}
	if id != "" {
		block["id"] = id
	}
	half := len(args) / 2
	piece := func(s string) map[string]any {
		return ev("content_block_delta", "index", 1, "delta", map[string]any{"type": "input_json_delta", "partial_json": s})
	}
	return events(
		ev("message_start", "message", map[string]any{"type": "message", "content": []any{}, "usage": map[string]any{"input_tokens": 9, "output_tokens": 1}}),
		ev("content_block_start", "index", 0, "content_block", map[string]any{"type": "text", "text": ""}),
		ev("content_block_delta", "index", 0, "delta", map[string]any{"type": "text_delta", "text": "Searching."}),
		ev("content_block_stop", "index", 0),
		ev("content_block_start", "index", 1, "content_block", block),
		piece(args[:half]), piece(args[half:]),
		ev("content_block_stop", "index", 1),
		ev("message_delta", "delta", map[string]any{"stop_reason": stop}, "usage", map[string]any{"output_tokens": 12}),
		ev("message_stop"),
	)
}
