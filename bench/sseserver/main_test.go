package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// start serves cfg on a loopback port and returns its address.
func start(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, ln.Addr().String()
}

// TestClientReadsStream checks that surge's own client reads the server's
// stream as a complete vLLM response: every content chunk, the usage, ok.
func TestClientReadsStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens int
		prompt string
	}{
		{"one token", 1, "hi"},
		{"64 tokens", 64, strings.Repeat("word ", 100)},
		{"sequential requests reuse the connection", 3, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := start(t, Config{Tokens: tc.tokens, TTFT: time.Millisecond, Gap: 100 * time.Microsecond})
			cfg := openai.DefaultConfig()
			cfg.BaseURL, cfg.Model, cfg.Timeout = "http://"+addr+"/v1", "bench", 10*time.Second
			origin := time.Now()
			c, err := openai.New(cfg, origin)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdle()
			for i := range 3 {
				rec := record.New("r", int64(i), "p", int64(time.Since(origin)))
				c.Do(context.Background(), &workload.Request{Prompt: tc.prompt, MaxTokens: tc.tokens}, &rec)
				if rec.Outcome != record.OK || rec.Error != "" {
					t.Fatalf("request %d: outcome %q (%s), want ok", i, rec.Outcome, rec.Error)
				}
				if rec.Chunks != tc.tokens || rec.OutputTokens != tc.tokens || !rec.UsageFromServer {
					t.Errorf("request %d: chunks %d, output tokens %d (from server %v), want %d from the server", i, rec.Chunks, rec.OutputTokens, rec.UsageFromServer, tc.tokens)
				}
				if rec.PromptTokens <= 0 {
					t.Errorf("request %d: prompt tokens %d, want > 0", i, rec.PromptTokens)
				}
				if ttft := rec.TTFTSend(); ttft < int64(time.Millisecond) {
					t.Errorf("request %d: TTFT %v, want ≥ the server's 1 ms", i, time.Duration(ttft))
				}
			}
			if got := s.Requests.Load(); got != 3 {
				t.Errorf("server counted %d completions, want 3", got)
			}
		})
	}
}

// TestProtocol checks the answers to raw requests, including the sad paths.
func TestProtocol(t *testing.T) {
	_, addr := start(t, Config{Tokens: 2, TTFT: 0, Gap: 0})
	for _, tc := range []struct {
		name, req string
		status    string // expected status line
		closes    bool   // the server closes the connection afterwards
	}{
		{"health", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK", false},
		{"completion", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n{\"a\":1}\n", "HTTP/1.1 200 OK", false},
		{"unknown path", "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", false},
		{"wrong method", "GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", false},
		{"connection close", "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", "HTTP/1.1 200 OK", true},
		{"garbage request line", "hello\r\n\r\n", "HTTP/1.1 400 Bad Request", true},
		{"header without colon", "GET /health HTTP/1.1\r\nbroken\r\n\r\n", "HTTP/1.1 400 Bad Request", true},
		{"bad content length", "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 400 Bad Request", true},
		{"chunked request body", "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "HTTP/1.1 501 Not Implemented", true},
		{"header line too long", "GET /health HTTP/1.1\r\nX: " + strings.Repeat("a", maxHeadBytes) + "\r\n\r\n", "HTTP/1.1 400 Bad Request", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(conn, tc.req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Proto + " " + resp.Status; got != tc.status {
				t.Errorf("status %q, want %q", got, tc.status)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("body: %v", err)
			}
			if tc.status == "HTTP/1.1 200 OK" && strings.HasPrefix(tc.req, "POST") {
				if n := strings.Count(string(body), `"content":" tok"`); n != 2 {
					t.Errorf("%d content chunks, want 2:\n%s", n, body)
				}
				if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
					t.Errorf("stream does not end with [DONE]:\n%s", body)
				}
			}
			// A second request on the same connection: answered, or EOF when closed.
			_, _ = io.WriteString(conn, "GET /health HTTP/1.1\r\n\r\n")
			_, err = http.ReadResponse(br, nil)
			if tc.closes && err == nil {
				t.Error("connection still open, want it closed")
			}
			if !tc.closes && err != nil {
				t.Errorf("second request on the connection: %v", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"defaults", Config{Tokens: DefaultTokens, TTFT: DefaultTTFT, Gap: DefaultGap}, ""},
		{"zero times", Config{Tokens: 1}, ""},
		{"no tokens", Config{Tokens: 0}, "sseserver: tokens: must be ≥ 1, got 0"},
		{"negative ttft", Config{Tokens: 1, TTFT: -1}, "sseserver: ttft: must be ≥ 0, got -1ns"},
		{"negative gap", Config{Tokens: 1, Gap: -time.Millisecond}, "sseserver: gap: must be ≥ 0, got -1ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStreamsCount checks GET /streams: the responses being streamed,
// counted from the headers to the last event.
func TestStreamsCount(t *testing.T) {
	_, addr := start(t, Config{Tokens: 2, TTFT: 200 * time.Millisecond, Gap: time.Millisecond})
	streams := func() string {
		resp, err := http.Get("http://" + addr + "/streams")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	if got := streams(); got != "0" {
		t.Fatalf("before any request: /streams = %q, want 0", got)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil) // the headers come at once, the role chunk after the TTFT
	if err != nil {
		t.Fatal(err)
	}
	if got := streams(); got != "1" {
		t.Errorf("while a response streams: /streams = %q, want 1", got)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	// The count drops right after the last write, which the client has
	// read by now; a moment's grace for the server goroutine to return.
	deadline := time.Now().Add(5 * time.Second)
	for streams() != "0" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := streams(); got != "0" {
		t.Errorf("after the response: /streams = %q, want 0", got)
	}
}
