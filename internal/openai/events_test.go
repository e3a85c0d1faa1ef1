package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// Event script builders: an SSE event with its event line, as the
// Responses and Messages APIs send them.
func event(typ, js string) string { return "event: " + typ + "\ndata: " + js + "\n\n" }

func rEvent(typ, rest string) string {
	return event(typ, `{"type":"`+typ+`"`+rest+`,"sequence_number":1}`)
}
func rDelta(s string) string {
	return rEvent("response.output_text.delta", `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"`+s+`"`)
}
func rCompleted(p, o int) string {
	return rEvent("response.completed", `,"response":{"id":"resp_1","object":"response","status":"completed","output":[],`+
		`"usage":{"input_tokens":`+itoa(p)+`,"input_tokens_details":{"cached_tokens":2},"output_tokens":`+itoa(o)+
		`,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`+itoa(p+o)+`}}`)
}

var rStart = []string{
	rEvent("response.created", `,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}`),
	rEvent("response.in_progress", `,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}`),
	rEvent("response.output_item.added", `,"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}`),
	rEvent("response.content_part.added", `,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}`),
}

func mEvent(typ, rest string) string { return event(typ, `{"type":"`+typ+`"`+rest+`}`) }
func mDelta(kind, member, s string) string {
	return mEvent("content_block_delta", `,"index":0,"delta":{"type":"`+kind+`","`+member+`":"`+s+`"}`)
}
func mStart(p int) string {
	return mEvent("message_start", `,"message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m",`+
		`"stop_reason":null,"usage":{"input_tokens":`+itoa(p)+`,"cache_read_input_tokens":3,"output_tokens":1}}`)
}
func mStop(o int) []string {
	return []string{
		mEvent("content_block_stop", `,"index":0`),
		mEvent("message_delta", `,"delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`+itoa(o)+`}`),
		mEvent("message_stop", ``),
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func cat(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, v)
		case []string:
			out = append(out, v...)
		}
	}
	return out
}

// TestScanEvent: each typed event's meaning, on its own.
func TestScanEvent(t *testing.T) {
	tests := []struct {
		name          string
		g             Grammar
		js            string
		kind          EventKind
		content, text bool
		prompt, out   int
		errType       string
		object        string
	}{
		{"text delta", GrammarResponses, `{"type":"response.output_text.delta","delta":"Hi"}`, EventData, true, true, 0, 0, "", ""},
		{"type after delta", GrammarResponses, `{"delta":"Hi","type":"response.output_text.delta"}`, EventData, true, true, 0, 0, "", ""},
		{"empty delta", GrammarResponses, `{"type":"response.output_text.delta","delta":""}`, EventData, false, false, 0, 0, "", ""},
		{"reasoning delta", GrammarResponses, `{"type":"response.reasoning_text.delta","delta":"hm"}`, EventData, true, false, 0, 0, "", ""},
		{"arguments delta", GrammarResponses, `{"type":"response.function_call_arguments.delta","delta":"{\""}`, EventData, true, false, 0, 0, "", ""},
		{"completed", GrammarResponses, `{"type":"response.completed","response":{"usage":{"input_tokens":7,"output_tokens":5}}}`, EventEnd, false, false, 7, 5, "", ""},
		{"incomplete", GrammarResponses, `{"type":"response.incomplete","response":{"status":"incomplete","usage":{"input_tokens":7,"output_tokens":16}}}`, EventEnd, false, false, 7, 16, "", ""},
		{"created has no usage", GrammarResponses, `{"type":"response.created","response":{"usage":null}}`, EventData, false, false, 0, 0, "", ""},
		{"failed", GrammarResponses, `{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}`, EventData, false, false, 0, 0, "server_error", ""},
		{"error event", GrammarResponses, `{"type":"error","code":"rate_limit_exceeded","message":"x"}`, EventData, false, false, 0, 0, "rate_limit_exceeded", ""},
		{"unknown", GrammarResponses, `{"type":"response.audio.delta","delta":"AAA"}`, EventUnknown, false, false, 0, 0, "", ""},
		{"chat chunk", GrammarResponses, `{"object":"chat.completion.chunk","choices":[{"delta":{"content":"a"}}]}`, EventUntyped, false, false, 0, 0, "", "chat.completion.chunk"},
		{"chat usage is not typed usage", GrammarResponses, `{"type":"response.completed","response":{"usage":{"prompt_tokens":7}}}`, EventEnd, false, false, 0, 0, "", ""},

		{"message text", GrammarMessages, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, EventData, true, true, 0, 0, "", ""},
		{"delta type last", GrammarMessages, `{"delta":{"text":"Hi","type":"text_delta"},"type":"content_block_delta"}`, EventData, true, true, 0, 0, "", ""},
		{"thinking", GrammarMessages, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`, EventData, true, false, 0, 0, "", ""},
		{"tool json", GrammarMessages, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a"}}`, EventData, true, false, 0, 0, "", ""},
		{"signature", GrammarMessages, `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`, EventData, false, false, 0, 0, "", ""},
		{"start", GrammarMessages, `{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":4,"cache_creation_input_tokens":1,"output_tokens":1}}}`, EventData, false, false, 15, 0, "", ""},
		{"delta usage", GrammarMessages, `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":16}}`, EventData, false, false, 0, 16, "", ""},
		{"stop", GrammarMessages, `{"type":"message_stop"}`, EventEnd, false, false, 0, 0, "", ""},
		{"ping", GrammarMessages, `{"type":"ping"}`, EventData, false, false, 0, 0, "", ""},
		{"error", GrammarMessages, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, EventData, false, false, 0, 0, "overloaded_error", ""},
		{"unknown message event", GrammarMessages, `{"type":"citation_added"}`, EventUnknown, false, false, 0, 0, "", ""},
		{"responses event on messages", GrammarMessages, `{"type":"response.output_text.delta","delta":"x"}`, EventUnknown, false, false, 0, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, kind, object, err := ScanEvent(tt.g, []byte(tt.js))
			if err != nil {
				t.Fatalf("ScanEvent: %v", err)
			}
			if kind != tt.kind || c.Content != tt.content || c.Text != tt.text || c.PromptTokens != tt.prompt || c.CompletionTokens != tt.out ||
				string(c.ErrorType) != tt.errType || c.Error != (tt.errType != "") || string(object) != tt.object {
				t.Errorf("kind %d content %v text %v prompt %d out %d error %v %q object %q, want %d %v %v %d %d %q %q",
					kind, c.Content, c.Text, c.PromptTokens, c.CompletionTokens, c.Error, c.ErrorType, object,
					tt.kind, tt.content, tt.text, tt.prompt, tt.out, tt.errType, tt.object)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"type":"message_stop"`, `{"type":"message_stop"} x`, `{"type":1}x`} {
		if _, _, _, err := ScanEvent(GrammarMessages, []byte(bad)); err == nil {
			t.Errorf("ScanEvent(%q) = nil error", bad)
		}
	}
}

// TestDoTypedStreams: whole Responses and Messages streams through the
// client, as vLLM and Anthropic-compatible servers send them.
func TestDoTypedStreams(t *testing.T) {
	tests := []struct {
		name           string
		api            string
		events         []string
		outcome        record.Outcome
		errText        string
		chunks, output int
		prompt         int
		unknown        int
		textAfterToken bool
	}{
		{name: "responses", api: APIResponses, events: cat(rStart, rDelta("a"), rDelta("b"), rDelta("c"),
			rEvent("response.output_text.done", `,"text":"abc"`), rCompleted(9, 3)),
			outcome: record.OK, chunks: 3, output: 3, prompt: 9},
		{name: "responses then DONE", api: APIResponses, events: cat(rStart, rDelta("a"), rCompleted(9, 1), done),
			outcome: record.OK, chunks: 1, output: 1, prompt: 9},
		{name: "responses reasoning first", api: APIResponses, events: cat(rStart,
			rEvent("response.reasoning_text.delta", `,"delta":"hm"`), rDelta("a"), rCompleted(9, 2)),
			outcome: record.OK, chunks: 2, output: 2, prompt: 9, textAfterToken: true},
		{name: "responses unknown events counted", api: APIResponses, events: cat(rStart, rEvent("response.audio.delta", `,"delta":"AA"`),
			rDelta("a"), rEvent("response.web_search_call.searching", ``), rCompleted(9, 1)),
			outcome: record.OK, chunks: 1, output: 1, prompt: 9, unknown: 2},
		{name: "responses cut at max_output_tokens", api: APIResponses, events: cat(rStart, rDelta("a"), rDelta("b"),
			rEvent("response.incomplete", `,"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":9,"output_tokens":2}}`)),
			outcome: record.OK, chunks: 2, output: 2, prompt: 9},
		{name: "responses without end", api: APIResponses, events: cat(rStart, rDelta("a")),
			outcome: record.StreamError, errText: "no response.completed after 1 chunks", chunks: 1, output: 1},
		{name: "responses DONE before end", api: APIResponses, events: cat(rStart, rDelta("a"), done),
			outcome: record.StreamError, errText: "[DONE] before response.completed", chunks: 1, output: 1},
		{name: "responses failed", api: APIResponses, events: cat(rStart, rDelta("a"),
			rEvent("response.failed", `,"response":{"status":"failed","error":{"code":"server_error","message":"boom"}}`)),
			outcome: record.StreamError, errText: "error in stream (server_error) after 1 chunks", chunks: 1, output: 1},
		{name: "chat chunks on responses", api: APIResponses, events: []string{data(`{"object":"chat.completion.chunk","choices":[{"delta":{"content":"a"}}]}`), done},
			outcome: record.InvalidResponse, errText: "not a responses event (chat.completion.chunk)"},

		{name: "messages", api: APIMessages, events: cat(mStart(12),
			mEvent("content_block_start", `,"index":0,"content_block":{"type":"text","text":""}`), mEvent("ping", ``),
			mDelta("text_delta", "text", "a"), mDelta("text_delta", "text", "b"), mStop(2)),
			outcome: record.OK, chunks: 2, output: 2, prompt: 15},
		{name: "messages thinking then tool use", api: APIMessages, events: cat(mStart(12),
			mEvent("content_block_start", `,"index":0,"content_block":{"type":"thinking","thinking":""}`),
			mDelta("thinking_delta", "thinking", "hm"), mDelta("signature_delta", "signature", "sig"),
			mEvent("content_block_stop", `,"index":0`),
			mEvent("content_block_start", `,"index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}`),
			mEvent("content_block_delta", `,"index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}`),
			mEvent("content_block_delta", `,"index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}`), mStop(7)),
			outcome: record.OK, chunks: 3, output: 7, prompt: 15},
		{name: "messages error mid-stream", api: APIMessages, events: cat(mStart(12), mDelta("text_delta", "text", "a"),
			mEvent("error", `,"error":{"type":"overloaded_error","message":"Overloaded"}`)),
			outcome: record.StreamError, errText: "error in stream (overloaded_error) after 1 chunks", chunks: 1, output: 1, prompt: 15},
		{name: "messages without stop", api: APIMessages, events: cat(mStart(12), mDelta("text_delta", "text", "a")),
			outcome: record.StreamError, errText: "no message_stop after 1 chunks", chunks: 1, output: 1, prompt: 15},
		{name: "chat chunks on messages", api: APIMessages, events: []string{content("a"), done},
			outcome: record.InvalidResponse, errText: "not a messages event (no type)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(sseHandler(tt.events...))
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.API = tt.api })
			rec := run(context.Background(), c, &testReq)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText {
				t.Fatalf("outcome %s %q, want %s %q", rec.Outcome, rec.Error, tt.outcome, tt.errText)
			}
			fromUsage := tt.prompt > 0 || tt.output != tt.chunks
			if rec.Chunks != tt.chunks || rec.OutputTokens != tt.output || rec.PromptTokens != tt.prompt || rec.UnknownEvents != tt.unknown {
				t.Errorf("chunks %d output %d prompt %d unknown %d, want %d %d %d %d",
					rec.Chunks, rec.OutputTokens, rec.PromptTokens, rec.UnknownEvents, tt.chunks, tt.output, tt.prompt, tt.unknown)
			}
			if tt.outcome == record.OK && rec.UsageFromServer != fromUsage {
				t.Errorf("usage_from_server %v, want %v", rec.UsageFromServer, fromUsage)
			}
			if tt.chunks > 0 && (rec.FirstTextNs > rec.FirstTokenNs) != tt.textAfterToken {
				t.Errorf("first text %d first token %d, want text after token: %v", rec.FirstTextNs, rec.FirstTokenNs, tt.textAfterToken)
			}
		})
	}
}

// TestDoTypedRequests: the body and headers of each typed API's request.
func TestDoTypedRequests(t *testing.T) {
	msgs := []workload.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}, {Role: "user", Content: "More"}}
	tests := []struct {
		name     string
		api      string
		req      workload.Request
		wantPath string
		wantBody string
		headers  map[string]string
	}{
		{"responses prompt", APIResponses, workload.Request{Prompt: "p", MaxTokens: 8}, "/v1/responses",
			`{"input":[{"content":"p","role":"user"}],"max_output_tokens":8,"model":"test-model","stream":true}`,
			map[string]string{"Authorization": "Bearer sk-test", "X-Api-Key": "", "Anthropic-Version": ""}},
		{"responses messages", APIResponses, workload.Request{Messages: msgs, MaxTokens: 8, IgnoreEOS: true}, "/v1/responses",
			`{"ignore_eos":true,"input":[{"content":"Be brief.","role":"system"},{"content":"Hi","role":"user"},{"content":"Hello","role":"assistant"},{"content":"More","role":"user"}],"max_output_tokens":8,"model":"test-model","stream":true}`,
			nil},
		{"messages prompt", APIMessages, workload.Request{Prompt: "p", MaxTokens: 8}, "/v1/messages",
			`{"max_tokens":8,"messages":[{"content":"p","role":"user"}],"model":"test-model","stream":true}`,
			map[string]string{"Authorization": "Bearer sk-test", "X-Api-Key": "sk-test", "Anthropic-Version": AnthropicVersion}},
		{"messages system apart", APIMessages, workload.Request{Messages: msgs, MaxTokens: 8}, "/v1/messages",
			`{"max_tokens":8,"messages":[{"content":"Hi","role":"user"},{"content":"Hello","role":"assistant"},{"content":"More","role":"user"}],"model":"test-model","stream":true,"system":"Be brief."}`,
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var path, body string
			var header http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var v map[string]any
				if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
					t.Errorf("request body: %v", err)
				}
				b, _ := json.Marshal(v) // sorted keys
				path, body, header = r.URL.Path, string(b), r.Header.Clone()
				http.NotFound(w, r)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.API, c.APIKey = tt.api, "sk-test" })
			run(context.Background(), c, &tt.req)
			if path != tt.wantPath || body != tt.wantBody {
				t.Errorf("POST %s %s\nwant %s %s", path, body, tt.wantPath, tt.wantBody)
			}
			for k, want := range tt.headers {
				if got := header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
	// The key's header may not be set by hand as well.
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.API, cfg.APIKey = "http://127.0.0.1:1/v1", "m", APIMessages, "sk"
	cfg.Headers = map[string]string{"x-api-key": "other"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `"X-Api-Key" conflicts with the api key`) {
		t.Errorf("Validate = %v, want the x-api-key conflict", err)
	}
}

// TestDoTypedNonStreaming: unary Responses and Messages bodies.
func TestDoTypedNonStreaming(t *testing.T) {
	tests := []struct {
		name, api, body string
		outcome         record.Outcome
		errText         string
		prompt, output  int
		token, text     bool
	}{
		{"response", APIResponses, `{"id":"r","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":4,"output_tokens":9}}`,
			record.OK, "", 4, 9, true, true},
		{"response function call", APIResponses, `{"object":"response","output":[{"type":"function_call","name":"f","arguments":"{}"}],"usage":{"input_tokens":4,"output_tokens":3}}`,
			record.OK, "", 4, 3, true, false},
		{"chat body on responses", APIResponses, `{"choices":[{"message":{"content":"hi"}}]}`, record.InvalidResponse, "not a response object", 0, 0, false, false},
		{"message", APIMessages, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":4,"cache_read_input_tokens":2,"output_tokens":9}}`,
			record.OK, "", 6, 9, true, true},
		{"message error", APIMessages, `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`, record.InvalidResponse, "error object in body", 0, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", func(c *Config) { c.API, c.Stream = tt.api, false }), &testReq)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText || rec.PromptTokens != tt.prompt || rec.OutputTokens != tt.output {
				t.Fatalf("got %s %q prompt %d output %d, want %s %q %d %d", rec.Outcome, rec.Error, rec.PromptTokens, rec.OutputTokens,
					tt.outcome, tt.errText, tt.prompt, tt.output)
			}
			if (rec.FirstTokenNs != record.None) != tt.token || (rec.FirstTextNs != record.None) != tt.text {
				t.Errorf("first token %d first text %d, want token %v text %v", rec.FirstTokenNs, rec.FirstTextNs, tt.token, tt.text)
			}
		})
	}
}

// TestTypedStreamNoAllocPerChunk: reading a Responses or Messages stream
// allocates the same for 4 and for 64 events: nothing per event.
func TestTypedStreamNoAllocPerChunk(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts are not stable under the race detector")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		api        string
		head, tail string
		delta      string
	}{
		{APIResponses, strings.Join(rStart, ""), rCompleted(9, 0), event("response.output_text.delta", responsesDelta)},
		{APIMessages, mStart(9), strings.Join(mStop(0), ""), event("content_block_delta", messagesDelta)},
	} {
		c := newTestClient(t, "http://127.0.0.1:1/v1", func(c *Config) { c.API = tc.api })
		allocs := func(n int) float64 {
			body := tc.head + strings.Repeat(tc.delta, n) + tc.tail
			return testing.AllocsPerRun(50, func() {
				x := c.getExchange()
				resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
					Body: io.NopCloser(strings.NewReader(body))}
				rec := record.New("r", 0, "baseline", 0)
				c.readStream(ctx, ctx, x, resp, &testReq, &rec)
				c.putExchange(x)
				if rec.Outcome != record.OK || rec.Chunks != n {
					t.Fatalf("%s: outcome %s %q chunks %d", tc.api, rec.Outcome, rec.Error, rec.Chunks)
				}
			})
		}
		if a4, a64 := allocs(4), allocs(64); a64 != a4 {
			t.Errorf("%s: %.0f allocations for 4 events, %.0f for 64", tc.api, a4, a64)
		}
	}
}

// FuzzScanEvent: under either typed grammar ScanEvent never panics, and
// it accepts exactly the JSON objects encoding/json accepts.
func FuzzScanEvent(f *testing.F) {
	for _, s := range []string{responsesDelta, messagesDelta, `{"type":"response.completed","response":{"usage":{"input_tokens":7,"output_tokens":5}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":4}}}`, `{"type":"error","error":{"type":"x"}}`,
		`{"object":"chat.completion.chunk"}`, `{"type":1}`, `[]`, `{`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, responses bool) {
		g := GrammarMessages
		if responses {
			g = GrammarResponses
		}
		c, kind, _, err := ScanEvent(g, []byte(s))
		var v map[string]json.RawMessage
		want := json.Unmarshal([]byte(s), &v) == nil && v != nil
		if (err == nil) != want {
			t.Fatalf("ScanEvent(%q) error %v, encoding/json accepts: %v", s, err, want)
		}
		if err == nil && kind == EventUntyped && (c.Content || c.Error || c.Usage) {
			t.Fatalf("ScanEvent(%q): an untyped event carries %+v", s, c)
		}
	})
}

// TestDoImageRequests: images go inline with the last user message, in
// each API's shape, and the record keeps the body's size and the count.
func TestDoImageRequests(t *testing.T) {
	img := &workload.Image{MediaType: "image/png", Base64: "iVBORw0KGgo=", Width: 1, Height: 1}
	msgs := []workload.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "first"}, {Role: "assistant", Content: "a"}, {Role: "user", Content: "look"}}
	tests := []struct {
		api, want string
		req       workload.Request
	}{
		{APIChat, `[{"text":"p","type":"text"},{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"},{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"}]`,
			workload.Request{Prompt: "p", Images: []*workload.Image{img, img}}},
		{APIResponses, `[{"text":"p","type":"input_text"},{"image_url":"data:image/png;base64,iVBORw0KGgo=","type":"input_image"},{"image_url":"data:image/png;base64,iVBORw0KGgo=","type":"input_image"}]`,
			workload.Request{Prompt: "p", Images: []*workload.Image{img, img}}},
		{APIMessages, `[{"text":"look","type":"text"},{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}]`,
			workload.Request{Messages: msgs, Images: []*workload.Image{img}}},
	}
	for _, tt := range tests {
		t.Run(tt.api, func(t *testing.T) {
			var content string
			var n int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var v struct {
					Messages []struct{ Content json.RawMessage } `json:"messages"`
					Input    []struct{ Content json.RawMessage } `json:"input"`
				}
				b, _ := io.ReadAll(r.Body)
				n = len(b)
				if err := json.Unmarshal(b, &v); err != nil {
					t.Errorf("request body: %v", err)
				}
				list := append(v.Messages, v.Input...)
				last := list[len(list)-1].Content
				var parts []map[string]any
				_ = json.Unmarshal(last, &parts)
				c, _ := json.Marshal(parts)
				content = string(c)
				http.NotFound(w, r)
			}))
			defer srv.Close()
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", func(c *Config) { c.API = tt.api }), &tt.req)
			if content != tt.want {
				t.Errorf("last user message's content\n got %s\nwant %s", content, tt.want)
			}
			if rec.RequestBytes != n || rec.Images != len(tt.req.Images) {
				t.Errorf("record request_bytes %d images %d, want %d and %d", rec.RequestBytes, rec.Images, n, len(tt.req.Images))
			}
		})
	}
}
