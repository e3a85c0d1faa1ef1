package openai

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// newKeepAliveCloser is a loopback server that answers like llama.cpp's
// llama-server: "Keep-Alive: timeout=5, max=100", no "Connection: close",
// and the connection closed after the response. With lazy set it closes only
// when the next request on the connection has arrived, so that every reuse
// fails before any response byte (the race the real server loses sometimes,
// made certain).
func newKeepAliveCloser(t *testing.T, lazy bool) *rawServer {
	return newRawServer(t, func(n int, conn net.Conn) bool {
		if n > 0 { // lazy: a reused connection is closed unanswered
			return false
		}
		resp := sseHead + "Keep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n" +
			httpChunk(role()) + httpChunk(content("a")) + httpChunk(usage(3, 1)) + httpChunk(done) + "0\r\n\r\n"
		_, err := io.WriteString(conn, resp)
		return err == nil && lazy
	})
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
