package openai

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// keepAliveCloser is a loopback server that answers like llama.cpp's
// llama-server: "Keep-Alive: timeout=5, max=100", no "Connection: close",
// and the connection closed after the response. With lazy set it closes only
// when the next request on the connection has arrived, so that every reuse
// fails before any response byte (the race the real server loses sometimes,
// made certain).
type keepAliveCloser struct {
	ln   net.Listener
	lazy bool
	wg   sync.WaitGroup
}

func newKeepAliveCloser(t *testing.T, lazy bool) *keepAliveCloser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &keepAliveCloser{ln: ln, lazy: lazy}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(conn) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *keepAliveCloser) url() string { return "http://" + s.ln.Addr().String() + "/v1" }

func (s *keepAliveCloser) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if n > 0 { // lazy: a reused connection is closed unanswered
			return
		}
		resp := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n" +
			httpChunk(role()) + httpChunk(content("a")) + httpChunk(usage(3, 1)) + httpChunk(done) + "0\r\n\r\n"
		if _, err := io.WriteString(conn, resp); err != nil || !s.lazy {
			return
		}
	}
}

// TestReusedConnectionReplayed: a request that fails on a reused
// connection before any response byte is replayed once on a new connection
// and counted in ConnRetries, never reported as a failure.
func TestReusedConnectionReplayed(t *testing.T) {
	for _, tt := range []struct {
		name        string
		lazy        bool
		workers     int
		wantRetries bool // every reuse fails: retries are certain
	}{
		{"sequential, every reuse dead", true, 1, true},
		{"concurrent, every reuse dead", true, 8, true},
		{"sequential, closed after each response", false, 1, false},
		{"concurrent, closed after each response", false, 8, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newKeepAliveCloser(t, tt.lazy)
			c := newTestClient(t, srv.url(), nil)
			const n = 50
			recs := make([]record.Record, n)
			var wg sync.WaitGroup
			next := make(chan int, n)
			for i := range n {
				next <- i
			}
			close(next)
			for range tt.workers {
				wg.Go(func() {
					for i := range next {
						recs[i] = run(context.Background(), c, &testReq)
					}
				})
			}
			wg.Wait()
			retries := 0
			for i, rec := range recs {
				checkOrder(t, rec)
				if rec.Outcome != record.OK {
					t.Fatalf("request %d: %s %q, want ok", i, rec.Outcome, rec.Error)
				}
				if rec.Attempts != 1 || rec.ConnRetries > 1 {
					t.Errorf("request %d: attempts %d conn_retries %d, want 1 and at most 1", i, rec.Attempts, rec.ConnRetries)
				}
				retries += rec.ConnRetries
			}
			if tt.wantRetries && retries == 0 {
				t.Errorf("no conn_retries counted, though every reused connection was dead")
			}
			t.Logf("%d conn_retries over %d requests", retries, n)
		})
	}
}
