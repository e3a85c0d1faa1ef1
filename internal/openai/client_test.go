package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		runBenchServer() // the benchmark's SSE server, in its own process
		return
	}
	goleak.VerifyTestMain(m)
}

// SSE script builders.
func data(js string) string { return "data: " + js + "\n\n" }

const done = "data: [DONE]\n\n"

func role() string {
	return data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
}
func content(s string) string {
	return data(`{"choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}`)
}
func finish() string { return data(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`) }
func usage(p, c int) string {
	return data(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, p, c, p+c))
}

// sseHandler replays events, flushing after each.
func sseHandler(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

func newTestClient(t testing.TB, baseURL string, mod func(*Config)) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BaseURL = baseURL
	cfg.Model = "test-model"
	cfg.Timeout = 10 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg, time.Now())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}

var testReq = workload.Request{Seq: 1, Profile: "chat", Prompt: "Say hi", PromptTokens: 3, MaxTokens: 64}

func run(ctx context.Context, c *Client, req *workload.Request) record.Record {
	rec := record.New("r1", req.Seq, "baseline", c.now())
	c.Do(ctx, req, &rec)
	return rec
}

// checkOrder asserts that the boundaries that were reached are in order.
func checkOrder(t *testing.T, rec record.Record) {
	t.Helper()
	prev, prevName := rec.ScheduledNs, "scheduled"
	for _, b := range []struct {
		name string
		v    int64
	}{{"sent", rec.SentNs}, {"conn", rec.ConnNs}, {"headers", rec.HeadersNs}, {"first_chunk", rec.FirstChunkNs}, {"first_token", rec.FirstTokenNs}, {"done", rec.DoneNs}} {
		if b.v == record.None {
			continue
		}
		if b.v < prev {
			t.Errorf("%s (%d) before %s (%d)", b.name, b.v, prevName, prev)
		}
		prev, prevName = b.v, b.name
	}
	if rec.DoneNs == record.None && rec.Outcome != record.GeneratorDrop {
		t.Errorf("done_ns not set for outcome %s", rec.Outcome)
	}
	if !rec.Outcome.Valid() {
		t.Errorf("invalid outcome %q", rec.Outcome)
	}
}

func TestDoStreams(t *testing.T) {
	tests := []struct {
		name      string
		events    []string
		outcome   record.Outcome
		errText   string
		chunks    int
		output    int
		prompt    int
		fromUsage bool
		noToken   bool // FirstTokenNs stays None
	}{
		{name: "vllm with usage", events: []string{role(), content("a"), content("b"), content("c"), finish(), usage(10, 3), done},
			outcome: record.OK, chunks: 3, output: 3, prompt: 10, fromUsage: true},
		{name: "no usage counts chunks", events: []string{role(), content("a"), content("b"), content("c"), content("d"), finish(), done},
			outcome: record.OK, chunks: 4, output: 4},
		{name: "ollama completions zero usage quirk", events: []string{
			data(`{"choices":[{"text":"x","index":0,"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`),
			data(`{"choices":[{"text":"y","index":0,"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`),
			data(`{"choices":[{"text":"","index":0,"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`),
			data(`{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`),
			done},
			outcome: record.OK, chunks: 2, output: 2, prompt: 7, fromUsage: true},
		{name: "ollama role in every delta", events: []string{
			data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`),
			data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"lo"},"finish_reason":null}]}`),
			data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`),
			done},
			outcome: record.OK, chunks: 2, output: 2},
		{name: "tool call delta counts", events: []string{role(),
			data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`),
			data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`),
			finish(), done},
			outcome: record.OK, chunks: 2, output: 2},
		{name: "role only is no token", events: []string{role(), finish(), usage(5, 0), done},
			outcome: record.OK, chunks: 0, output: 0, prompt: 5, fromUsage: true, noToken: true},
		{name: "no space, CRLF, comments, events, ids", events: []string{
			": keep-alive\r\n\r\n",
			"event: message\r\nid: 1\r\ndata:" + `{"choices":[{"delta":{"content":"a"}}]}` + "\r\n\r\n",
			"retry: 100\r\ndata:\r\n\r\n",
			"data:" + `{"choices":[{"delta":{"content":"b"}}]}` + "\r\n\r\n",
			"data:[DONE]\r\n\r\n"},
			outcome: record.OK, chunks: 2, output: 2},
		{name: "done without newline", events: []string{content("a"), "data: [DONE]"},
			outcome: record.OK, chunks: 1, output: 1},
		{name: "byte order mark", events: []string{"\xEF\xBB\xBF" + content("a"), done},
			outcome: record.OK, chunks: 1, output: 1},
		{name: "lines longer than the line buffer", events: []string{role(), content(strings.Repeat("a", 3*lineBufferBytes)), content("b"),
			content(strings.Repeat("c", 40*lineBufferBytes)), finish(), usage(10, 3), done},
			outcome: record.OK, chunks: 3, output: 3, prompt: 10, fromUsage: true},

		// Sad paths.
		{name: "malformed chunk", events: []string{content("a"), data(`{"choices":[{"delta":{"content":"b"`), done},
			outcome: record.StreamError, errText: "malformed chunk after 1 chunks", chunks: 1, output: 1},
		{name: "missing done", events: []string{content("a"), content("b")},
			outcome: record.StreamError, errText: "no [DONE] after 2 chunks", chunks: 2, output: 2},
		{name: "missing done after finish", events: []string{content("a"), finish()},
			outcome: record.StreamError, errText: "no [DONE] (finish_reason seen) after 1 chunks", chunks: 1, output: 1},
		{name: "error object in stream", events: []string{content("a"), data(`{"error":{"message":"engine died","type":"server_error","code":500}}`), done},
			outcome: record.StreamError, errText: "error in stream (server_error) after 1 chunks", chunks: 1, output: 1},
		{name: "vllm object error in stream", events: []string{data(`{"object":"error","message":"boom","type":"BadRequestError","code":400}`)},
			outcome: record.StreamError, errText: "error in stream (BadRequestError) after 0 chunks", noToken: true},
		{name: "no choices", events: []string{data(`{"id":"x"}`), done},
			outcome: record.InvalidResponse, errText: "no choices", noToken: true},
		{name: "garbage line mid-stream", events: []string{content("a"), "oops\n\n", done},
			outcome: record.StreamError, errText: "malformed line after 1 chunks", chunks: 1, output: 1},
		{name: "not SSE at all", events: []string{"{\"choices\":[]}\n"},
			outcome: record.InvalidResponse, errText: "not SSE", noToken: true},
		{name: "empty body", events: nil,
			outcome: record.InvalidResponse, errText: "empty body", noToken: true},
		{name: "oversized line", events: []string{content("a"), "data: {\"x\":\"" + strings.Repeat("y", MaxLineBytes) + "\"}\n\n", done},
			outcome: record.StreamError, errText: "line over 1 MiB after 1 chunks", chunks: 1, output: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(sseHandler(tt.events...))
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1", nil)
			rec := run(context.Background(), c, &testReq)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText {
				t.Fatalf("outcome %s %q, want %s %q", rec.Outcome, rec.Error, tt.outcome, tt.errText)
			}
			if rec.Status != http.StatusOK || rec.Attempts != 1 || rec.MaxTokens != 64 {
				t.Errorf("status %d attempts %d max_tokens %d, want 200 1 64", rec.Status, rec.Attempts, rec.MaxTokens)
			}
			if rec.Chunks != tt.chunks || rec.OutputTokens != tt.output || rec.PromptTokens != tt.prompt || rec.UsageFromServer != tt.fromUsage {
				t.Errorf("chunks %d output %d prompt %d from usage %v, want %d %d %d %v",
					rec.Chunks, rec.OutputTokens, rec.PromptTokens, rec.UsageFromServer, tt.chunks, tt.output, tt.prompt, tt.fromUsage)
			}
			if (rec.FirstTokenNs == record.None) != tt.noToken {
				t.Errorf("first_token_ns = %d, want none: %v", rec.FirstTokenNs, tt.noToken)
			}
			if rec.ConnNs == record.None || rec.HeadersNs == record.None {
				t.Errorf("conn_ns %d headers_ns %d, want both set", rec.ConnNs, rec.HeadersNs)
			}
			if rec.Outcome == record.OK && rec.OutputTokens >= 2 && rec.FirstTokenNs != record.None {
				if want := (rec.DoneNs - rec.FirstTokenNs) / int64(rec.OutputTokens-1); rec.TPOTNs != want {
					t.Errorf("tpot %d, want %d", rec.TPOTNs, want)
				}
			} else if rec.TPOTNs != record.None {
				t.Errorf("tpot %d, want none", rec.TPOTNs)
			}
			if (rec.ITLMaxNs == record.None) != (rec.Chunks < 2) {
				t.Errorf("itl_max %d with %d chunks", rec.ITLMaxNs, rec.Chunks)
			}
		})
	}
}

// TestRoleChunkNotFirstToken: a role-only chunk is the first chunk but not
// the first token.
func TestRoleChunkNotFirstToken(t *testing.T) {
	srv := httptest.NewServer(sseHandler(role(), content("a"), content("b"), done))
	defer srv.Close()
	rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", nil), &testReq)
	checkOrder(t, rec)
	if rec.Outcome != record.OK || !(rec.FirstChunkNs < rec.FirstTokenNs) {
		t.Fatalf("outcome %s first_chunk %d first_token %d, want ok and first_chunk < first_token", rec.Outcome, rec.FirstChunkNs, rec.FirstTokenNs)
	}
}

func TestDoNotSSEContentType(t *testing.T) {
	for _, tt := range []struct{ name, contentType, body, want string }{
		{"html", "text/html; charset=utf-8", "<html>busy</html>", "not SSE (text/html)"},
		{"json", "application/json", `{"choices":[{"message":{"content":"x"}}]}`, "not SSE (application/json)"},
		{"problem json", "application/problem+json", `{}`, "not SSE (application/problem+json)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", nil), &testReq)
			checkOrder(t, rec)
			if rec.Outcome != record.InvalidResponse || rec.Error != tt.want || rec.Status != 200 {
				t.Fatalf("got %s %q status %d, want invalid_response %q 200", rec.Outcome, rec.Error, rec.Status, tt.want)
			}
		})
	}
}

func TestDoHTTPErrors(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		outcome    record.Outcome
		errText    string
		retryAfter [2]time.Duration // bounds; zero = None expected
	}{
		{"429 retry-after seconds", 429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`,
			record.RateLimited, "status 429 (rate_limit_exceeded)", [2]time.Duration{7 * time.Second, 7 * time.Second}},
		{"429 retry-after date", 429, map[string]string{"Retry-After": date}, ``,
			record.RateLimited, "status 429", [2]time.Duration{28 * time.Second, 31 * time.Second}},
		{"429 retry-after garbage", 429, map[string]string{"Retry-After": "soon"}, ``,
			record.RateLimited, "status 429", [2]time.Duration{}},
		{"500", 500, nil, `internal error`, record.HTTPError, "status 500", [2]time.Duration{}},
		{"503 with type", 503, map[string]string{"Retry-After": "1.5"}, `{"error":{"message":"busy","type":"overloaded","code":503}}`,
			record.HTTPError, "status 503 (overloaded)", [2]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}},
		{"400 vllm object error", 400, nil, `{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}`,
			record.HTTPError, "status 400 (BadRequestError)", [2]time.Duration{}},
		{"401 code only", 401, nil, `{"error":{"message":"no","code":"invalid_api_key"}}`,
			record.HTTPError, "status 401 (invalid_api_key)", [2]time.Duration{}},
		{"404 html", 404, nil, `<html>not found</html>`, record.HTTPError, "status 404", [2]time.Duration{}},
		{"error type with spaces is dropped", 500, nil, `{"error":{"type":"Internal Server Error"}}`, record.HTTPError, "status 500", [2]time.Duration{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", nil), &testReq)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText || rec.Status != tt.status {
				t.Fatalf("got %s %q status %d, want %s %q %d", rec.Outcome, rec.Error, rec.Status, tt.outcome, tt.errText, tt.status)
			}
			if tt.retryAfter == [2]time.Duration{} {
				if rec.RetryAfterNs != record.None {
					t.Errorf("retry_after_ns %d, want none", rec.RetryAfterNs)
				}
			} else if got := time.Duration(rec.RetryAfterNs); got < tt.retryAfter[0] || got > tt.retryAfter[1] {
				t.Errorf("retry_after %v, want in [%v, %v]", got, tt.retryAfter[0], tt.retryAfter[1])
			}
			if rec.FirstChunkNs != record.None || rec.FirstTokenNs != record.None {
				t.Errorf("first chunk/token set on an HTTP error")
			}
		})
	}
}

// hijack takes over the connection and runs fn on it.
func hijack(fn func(conn net.Conn, rw *bufio.ReadWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fn(conn, rw)
	}
}

const rawSSEHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

func httpChunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func TestDoConnectionFaults(t *testing.T) {
	gotFirstByte := make(chan struct{}, 1)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		ctx     context.Context
		outcome record.Outcome
		errText string
		status  int
	}{
		{name: "closed before headers", handler: hijack(func(net.Conn, *bufio.ReadWriter) {}),
			outcome: record.ConnError, errText: "connection closed before headers"},
		{name: "garbage status line", handler: hijack(func(_ net.Conn, rw *bufio.ReadWriter) {
			_, _ = rw.WriteString("HELLO there\r\n\r\n")
			_ = rw.Flush()
		}), outcome: record.ConnError, errText: "malformed HTTP response"},
		{name: "unexpected EOF mid-stream", handler: hijack(func(_ net.Conn, rw *bufio.ReadWriter) {
			_, _ = rw.WriteString(rawSSEHeader + httpChunk(content("a")) + httpChunk(content("b")))
			_ = rw.Flush()
		}), outcome: record.StreamError, errText: "unexpected EOF after 2 chunks", status: 200},
		{name: "reset mid-stream", handler: hijack(func(conn net.Conn, rw *bufio.ReadWriter) {
			_, _ = rw.WriteString(rawSSEHeader + httpChunk(content("a")))
			_ = rw.Flush()
			<-gotFirstByte // the client holds the headers and the chunk
			_ = conn.(*net.TCPConn).SetLinger(0)
		}), ctx: httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotFirstResponseByte: func() { gotFirstByte <- struct{}{} },
		}), outcome: record.StreamError, errText: "connection reset after 1 chunks", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			rec := run(ctx, newTestClient(t, srv.URL+"/v1", nil), &testReq)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText || rec.Status != tt.status {
				t.Fatalf("got %s %q status %d, want %s %q %d", rec.Outcome, rec.Error, rec.Status, tt.outcome, tt.errText, tt.status)
			}
		})
	}

	t.Run("refused port", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		rec := run(context.Background(), newTestClient(t, "http://"+addr+"/v1", nil), &testReq)
		checkOrder(t, rec)
		if rec.Outcome != record.ConnError || rec.Error != "connection refused" || rec.Status != 0 || rec.SentNs == record.None || rec.HeadersNs != record.None {
			t.Fatalf("got %s %q status %d sent %d headers %d, want conn_error, refused, 0, sent, no headers",
				rec.Outcome, rec.Error, rec.Status, rec.SentNs, rec.HeadersNs)
		}
	})
}

func TestDoCancel(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client going away
		once.Do(func() { close(started) })
		select { // stall until the client goes away (bounded, so a bug cannot hang the suite)
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/v1", nil)

	t.Run("before headers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		rec := run(ctx, c, &testReq)
		checkOrder(t, rec)
		if rec.Outcome != record.Cancelled || rec.Error != "cancelled before headers" || rec.ConnNs == record.None {
			t.Fatalf("got %s %q conn %d, want cancelled before headers after a connection", rec.Outcome, rec.Error, rec.ConnNs)
		}
	})
	t.Run("before send", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec := run(ctx, c, &testReq)
		if rec.Outcome != record.Cancelled || rec.Error != "cancelled before send" || rec.Attempts != 0 || rec.SentNs != record.None {
			t.Fatalf("got %s %q attempts %d sent %d, want cancelled before send", rec.Outcome, rec.Error, rec.Attempts, rec.SentNs)
		}
	})
}

// TestDoRequest checks what goes on the wire: path, headers, body.
func TestDoRequest(t *testing.T) {
	type seen struct {
		path   string
		header http.Header
		body   map[string]any
		proto  int
	}
	prompt := "Quote \" backslash \\ newline \n tab \t nul \x00 bad \xff é 😀 </script>"
	tests := []struct {
		name     string
		mod      func(*Config)
		req      workload.Request
		wantPath string
		wantBody map[string]any
	}{
		{"chat stream", func(c *Config) { c.ExtraBody = map[string]any{"temperature": 0, "seed": 7} },
			workload.Request{Prompt: prompt, MaxTokens: 64, IgnoreEOS: true}, "/v1/chat/completions",
			map[string]any{"model": "test-model", "messages": []any{map[string]any{"role": "user", "content": strings.ToValidUTF8(prompt, "\uFFFD")}},
				"max_tokens": 64.0, "stream": true, "stream_options": map[string]any{"include_usage": true}, "ignore_eos": true,
				"temperature": 0.0, "seed": 7.0}},
		{"completions no usage", func(c *Config) { c.API = APICompletions; c.IncludeUsage = false },
			workload.Request{Prompt: "p", MaxTokens: 8}, "/v1/completions",
			map[string]any{"model": "test-model", "prompt": "p", "max_tokens": 8.0, "stream": true}},
		{"extra ignore_eos wins", func(c *Config) { c.ExtraBody = map[string]any{"ignore_eos": false} },
			workload.Request{Prompt: "p", MaxTokens: 8, IgnoreEOS: true}, "/v1/chat/completions",
			map[string]any{"model": "test-model", "messages": []any{map[string]any{"role": "user", "content": "p"}},
				"max_tokens": 8.0, "stream": true, "stream_options": map[string]any{"include_usage": true}, "ignore_eos": false}},
		{"no max tokens", nil, workload.Request{Prompt: "p"}, "/v1/chat/completions",
			map[string]any{"model": "test-model", "messages": []any{map[string]any{"role": "user", "content": "p"}},
				"stream": true, "stream_options": map[string]any{"include_usage": true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got seen
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.path, got.header, got.proto = r.URL.Path, r.Header.Clone(), r.ProtoMajor
				if err := json.NewDecoder(r.Body).Decode(&got.body); err != nil {
					t.Errorf("request body: %v", err)
				}
				sseHandler(content("a"), done)(w, r)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1/", func(c *Config) {
				c.APIKey = "sk-test"
				c.Headers = map[string]string{"x-tenant": "blue"}
				if tt.mod != nil {
					tt.mod(c)
				}
			})
			rec := run(context.Background(), c, &tt.req)
			if rec.Outcome != record.OK {
				t.Fatalf("outcome %s %q", rec.Outcome, rec.Error)
			}
			if got.path != tt.wantPath || got.proto != 1 {
				t.Errorf("path %q proto %d, want %q HTTP/1", got.path, got.proto, tt.wantPath)
			}
			for k, want := range map[string]string{"Authorization": "Bearer sk-test", "Content-Type": "application/json",
				"Accept": "text/event-stream", "X-Tenant": "blue", "Accept-Encoding": ""} {
				if v := got.header.Get(k); v != want {
					t.Errorf("header %s = %q, want %q", k, v, want)
				}
			}
			gb, _ := json.Marshal(got.body)
			wb, _ := json.Marshal(tt.wantBody)
			if string(gb) != string(wb) {
				t.Errorf("body\n got %s\nwant %s", gb, wb)
			}
		})
	}
}

func TestDoNonStreaming(t *testing.T) {
	tests := []struct {
		name      string
		ct        string
		body      string
		outcome   record.Outcome
		errText   string
		output    int
		fromUsage bool
		token     bool
	}{
		{"chat with usage", "application/json", `{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":9}}`,
			record.OK, "", 9, true, true},
		{"completions without usage", "application/json", `{"choices":[{"text":"hi"}]}`, record.OK, "", 0, false, true},
		{"tool call", "application/json", `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c"}]}}],"usage":{"prompt_tokens":4,"completion_tokens":5}}`,
			record.OK, "", 5, true, true},
		{"empty content", "application/json", `{"choices":[{"message":{"content":""}}],"usage":{"prompt_tokens":4,"completion_tokens":0}}`,
			record.OK, "", 0, true, false},
		{"invalid JSON", "application/json", `{"choices":[`, record.InvalidResponse, "invalid JSON", 0, false, false},
		{"no choices", "application/json", `{"id":"x"}`, record.InvalidResponse, "no choices", 0, false, false},
		{"error object", "application/json", `{"error":{"message":"x"}}`, record.InvalidResponse, "error object in body", 0, false, false},
		{"empty", "application/json", ``, record.InvalidResponse, "empty body", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", func(c *Config) { c.Stream = false }), &testReq)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText || rec.OutputTokens != tt.output || rec.UsageFromServer != tt.fromUsage {
				t.Fatalf("got %s %q output %d usage %v, want %s %q %d %v", rec.Outcome, rec.Error, rec.OutputTokens, rec.UsageFromServer,
					tt.outcome, tt.errText, tt.output, tt.fromUsage)
			}
			if (rec.FirstTokenNs != record.None) != tt.token || tt.token && (rec.FirstTokenNs != rec.DoneNs || rec.Chunks != 1) {
				t.Errorf("first_token %d done %d chunks %d, want token %v at done", rec.FirstTokenNs, rec.DoneNs, rec.Chunks, tt.token)
			}
		})
	}
}

// TestConnectionReuse: sequential requests reuse one connection (the
// response is read to its end).
func TestConnectionReuse(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(sseHandler(role(), content("a"), usage(1, 1), done))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/v1", nil)
	for range 20 {
		if rec := run(context.Background(), c, &testReq); rec.Outcome != record.OK {
			t.Fatalf("outcome %s %q", rec.Outcome, rec.Error)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 20 sequential requests, want 1", n)
	}
}

// TestStreamNoAllocPerChunk: reading a stream allocates the same for 4 and
// for 64 chunks — nothing per chunk.
func TestStreamNoAllocPerChunk(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts are not stable under the race detector")
	}
	c := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	ctx := context.Background()
	allocs := func(n int, chunk string) float64 {
		body := role() + strings.Repeat(data(chunk), n) + usage(10, n) + done
		return testing.AllocsPerRun(50, func() {
			x := c.getExchange()
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body: io.NopCloser(strings.NewReader(body))}
			rec := record.New("r", 0, "baseline", 0)
			c.readStream(ctx, ctx, x, resp, &testReq, &rec)
			c.putExchange(x)
			if rec.Outcome != record.OK || rec.Chunks != n {
				t.Fatalf("outcome %s %q chunks %d", rec.Outcome, rec.Error, rec.Chunks)
			}
		})
	}
	if a4, a64 := allocs(4, vllmChunk), allocs(64, vllmChunk); a64 != a4 {
		t.Errorf("%.0f allocations for 4 chunks, %.0f for 64", a4, a64)
	}
	// Lines longer than the line buffer go through the spill buffer,
	// which grows once and is reused for every later line.
	long := `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 4*lineBufferBytes) + `"},"finish_reason":null}]}`
	if a4, a64 := allocs(4, long), allocs(64, long); a64 != a4 {
		t.Errorf("long lines: %.0f allocations for 4 chunks, %.0f for 64", a4, a64)
	}
}

// TestPutExchangeSpill: a pooled exchange keeps a spill buffer that a
// long line grew up to spillKeepBytes and lets a larger one go, so one
// huge line does not stay in memory with every pooled exchange.
func TestPutExchangeSpill(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	for _, tc := range []struct {
		name string
		cap  int
		kept bool
	}{
		{"a few lines' worth is kept", 4 << 10, true},
		{"up to the limit is kept", spillKeepBytes, true},
		{"beyond the limit goes", 2 * spillKeepBytes, false},
		{"a huge line goes", MaxLineBytes, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := c.getExchange()
			x.spill = make([]byte, 0, tc.cap)
			c.putExchange(x)
			if kept := x.spill != nil; kept != tc.kept {
				t.Errorf("spill of %d bytes kept: %v, want %v", tc.cap, kept, tc.kept)
			}
		})
	}
}

// TestReleaseBody: once the round trip has returned, the exchange holds no
// request body; the buffer is pooled for the next request unless the
// transport may still be writing it.
func TestReleaseBody(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	for _, tc := range []struct {
		name          string
		conns, writes int32
		pooled        bool
	}{
		{"written", 1, 1, true},
		{"replayed on a second connection and written", 2, 2, true},
		{"early response while writing", 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := c.getExchange()
			bb := c.takeBody(x, &testReq)
			body := string(x.buf)
			if !strings.Contains(body, `"content":"Say hi"`) || x.tmpl.ContentLength != int64(len(body)) {
				t.Fatalf("body %q, content length %d", body, x.tmpl.ContentLength)
			}
			x.conns.Store(tc.conns)
			x.writes.Store(tc.writes)
			bb.b = nil // set again only when the buffer goes back to the pool
			c.releaseBody(x, bb)
			if x.buf != nil {
				t.Errorf("the exchange still holds the body")
			}
			if got := string(bb.b); (got == body) != tc.pooled {
				t.Errorf("pooled buffer %q, want the body pooled: %v", got, tc.pooled)
			}
			if !tc.pooled { // the transport's reader is left alone
				if rest, _ := io.ReadAll(&x.body); string(rest) != body {
					t.Errorf("request body reader gives %q, want the body", rest)
				}
			}
		})
	}
}
