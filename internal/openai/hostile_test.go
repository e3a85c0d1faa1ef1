package openai

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// hostileTimeout is each request's timeout in the hostile-server table: a
// case that waits for it is the server's doing, and the record says so.
const hostileTimeout = time.Second

// TestHostileServers sends one request to each server a load test may
// meet behind a misconfigured port or a broken proxy, and checks that it
// is classified per request, ends by its timeout (a timeout outcome says
// the deadline ended it, not the server: the slowloris server would close
// after 3 s), and that the client read no more of a stream that never
// ends than its bounds allow — with surge's own HTTP/1.1 client and with
// net/http's.
func TestHostileServers(t *testing.T) {
	type served struct{ bytes atomic.Int64 }
	count := func(s *served, w io.Writer, b []byte) error {
		n, err := w.Write(b)
		s.bytes.Add(int64(n))
		return err
	}
	bomb := func() []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zero := make([]byte, 1<<20)
		for range 64 { // 64 MiB of zeros in about 64 KiB
			_, _ = zw.Write(zero)
		}
		_ = zw.Close()
		return b.Bytes()
	}()
	tests := []struct {
		name    string
		handler func(s *served) http.HandlerFunc
		outcome record.Outcome
		errText string  // a part of the record's error
		goText  *string // with net/http's transport, when its words differ
		maxRead int64   // the most the server may have written (0: no bound checked)
		check   func(t *testing.T, rec record.Record)
	}{
		{name: "silent after accept", handler: func(*served) http.HandlerFunc {
			// Never answer: hold the connection until the client gives up.
			return hijack(func(conn net.Conn, _ *bufio.ReadWriter) { _, _ = io.Copy(io.Discard, conn) })
		}, outcome: record.Timeout},
		{name: "slowloris headers", handler: func(*served) http.HandlerFunc {
			return hijack(func(_ net.Conn, rw *bufio.ReadWriter) {
				_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nX-Slow: ")
				for range 60 {
					if _, err := rw.WriteString("a"); err != nil || rw.Flush() != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
		}, outcome: record.Timeout},
		{name: "endless stream", handler: func(s *served) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for r.Context().Err() == nil {
					if count(s, w, []byte(content("x"))) != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			}
		}, outcome: record.Timeout, check: func(t *testing.T, rec record.Record) {
			if rec.OutputTokens <= rec.MaxTokens {
				t.Errorf("output tokens %d for max_tokens %d: an endless stream must show it went past", rec.OutputTokens, rec.MaxTokens)
			}
		}},
		{name: "a line without end", handler: func(s *served) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_ = count(s, w, []byte("data: "))
				block := bytes.Repeat([]byte("x"), 64<<10)
				for range 1 << 14 { // up to 1 GiB
					if count(s, w, block) != nil {
						return
					}
				}
			}
		}, outcome: record.StreamError, errText: "line over 1 MiB", maxRead: 64 << 20},
		{name: "invalid UTF-8", handler: func(*served) http.HandlerFunc {
			return sseHandler(content("ok \xff\xfe"), finish(), done)
		}, outcome: record.OK},
		{name: "gzip bomb", handler: func(s *served) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", "gzip")
				_ = count(s, w, bomb)
			}
		}, outcome: record.InvalidResponse, errText: "not SSE", maxRead: int64(len(bomb))},
		{name: "redirect loop", handler: func(*served) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
			}
		}, outcome: record.HTTPError, errText: "status 307"}, // not followed: a redirect is the target's answer
		{name: "1xx storm", handler: func(*served) http.HandlerFunc {
			return hijack(func(_ net.Conn, rw *bufio.ReadWriter) {
				for range 100000 {
					if _, err := rw.WriteString("HTTP/1.1 102 Processing\r\n\r\n"); err != nil {
						return
					}
				}
				_ = rw.Flush()
			})
		}, outcome: record.ConnError, errText: "malformed HTTP response", goText: new("")}, // net/http ends it its own way
		{name: "HTTP/1.0 close-delimited", handler: func(*served) http.HandlerFunc {
			return hijack(func(_ net.Conn, rw *bufio.ReadWriter) {
				_, _ = rw.WriteString("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + content("hi") + finish() + done)
				_ = rw.Flush()
			})
		}, outcome: record.OK},
		{name: "wrong Content-Type", handler: func(*served) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, content("hi")+done)
			}
		}, outcome: record.InvalidResponse, errText: "not SSE (application/json)"},
		{name: "SSE without data", handler: func(*served) http.HandlerFunc {
			return sseHandler("event: ping\n\n", ": comment\n\n", "id: 3\n\n")
		}, outcome: record.StreamError, errText: "no [DONE] after 0 chunks"},
		{name: "no [DONE]", handler: func(*served) http.HandlerFunc {
			return sseHandler(content("a"), content("b"), finish())
		}, outcome: record.StreamError, errText: "no [DONE] (finish_reason seen) after 2 chunks"},
		{name: "usage in every chunk", handler: func(*served) http.HandlerFunc {
			var ev []string
			for i := range 5 {
				ev = append(ev, data(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"w"}}],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`, i+1, i+4)))
			}
			return sseHandler(append(ev, finish(), done)...)
		}, outcome: record.OK, check: func(t *testing.T, rec record.Record) {
			if rec.OutputTokens != 5 || !rec.UsageFromServer {
				t.Errorf("output tokens %d (usage from server %v), want the last usage's 5", rec.OutputTokens, rec.UsageFromServer)
			}
		}},
		{name: "chunk flood", handler: func(*served) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				var b strings.Builder
				for range 10000 {
					b.WriteString(content("x"))
				}
				b.WriteString(finish() + done)
				_, _ = io.WriteString(w, b.String())
			}
		}, outcome: record.OK, check: func(t *testing.T, rec record.Record) {
			if rec.OutputTokens != 10000 {
				t.Errorf("output tokens %d, want the 10000 chunks counted", rec.OutputTokens)
			}
		}},
	}
	for _, tc := range tests {
		for _, transport := range []string{TransportSurge, TransportGo} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				s := &served{}
				srv := httptest.NewServer(tc.handler(s))
				defer srv.Close()
				c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.Timeout, c.Transport = hostileTimeout, transport })
				req := testReq
				req.MaxTokens = 16
				start := time.Now()
				rec := run(context.Background(), c, &req)
				took := time.Since(start)
				t.Logf("%s: outcome %s %q status %d tokens %d, %s, server wrote %d bytes", tc.name, rec.Outcome, rec.Error, rec.Status, rec.OutputTokens, took.Round(time.Millisecond), s.bytes.Load())
				checkOrder(t, rec)
				if tc.outcome != "" && rec.Outcome != tc.outcome {
					t.Errorf("outcome %s (%q), want %s", rec.Outcome, rec.Error, tc.outcome)
				}
				want := tc.errText
				if transport == TransportGo && tc.goText != nil {
					want = *tc.goText
				}
				if !strings.Contains(rec.Error, want) {
					t.Errorf("error %q lacks %q", rec.Error, want)
				}
				if tc.maxRead > 0 && s.bytes.Load() > tc.maxRead {
					t.Errorf("the server wrote %d bytes before the client stopped reading, want at most %d", s.bytes.Load(), tc.maxRead)
				}
				if tc.check != nil {
					tc.check(t, rec)
				}
			})
		}
	}
}
