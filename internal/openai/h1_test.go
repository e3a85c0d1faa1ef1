package openai

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
)

// rawServer is a loopback HTTP/1.1 server that writes its responses by
// hand, so that the framing under test is exactly what is sent. It counts
// the connections it accepted, those open now and the most open at once.
type rawServer struct {
	ln       net.Listener
	reply    func(n int, conn net.Conn) bool // answers request n of conn; false: close conn
	accepted atomic.Int32
	open     atomic.Int32
	maxOpen  atomic.Int32
	closed   chan struct{} // one value per connection the server closed
	wg       sync.WaitGroup
}

func newRawServer(t *testing.T, reply func(n int, conn net.Conn) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, reply: reply, closed: make(chan struct{}, 1024)}
	s.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			n := s.open.Add(1)
			for m := s.maxOpen.Load(); n > m && !s.maxOpen.CompareAndSwap(m, n); m = s.maxOpen.Load() {
			}
			s.wg.Go(func() { s.serve(conn) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/v1" }

func (s *rawServer) serve(conn net.Conn) {
	defer func() {
		conn.Close()
		s.open.Add(-1)
		s.closed <- struct{}{}
	}()
	br := bufio.NewReader(conn)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if !s.reply(n, conn) {
			return
		}
	}
}

// sseBody is a whole stream: one content chunk, usage, [DONE].
var sseBody = role() + content("a") + usage(3, 1) + done

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"

func chunked(body string) string {
	return sseHead + "Transfer-Encoding: chunked\r\n\r\n" + httpChunk(body) + "0\r\n\r\n"
}

// TestH1Framing: surge's transport reads every body framing a server may
// send and reuses the connection exactly when the response allows it.
func TestH1Framing(t *testing.T) {
	cut := role() + content("a")
	for _, tt := range []struct {
		name    string
		resp    string
		close   bool // the server closes after the response
		outcome record.Outcome
		errText string
		conns   int32 // connections for two sequential requests
	}{
		{"chunked", chunked(sseBody), false, record.OK, "", 1},
		{"chunk extensions and trailers", sseHead + "Transfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n" +
			strconv.FormatInt(int64(len(role())), 16) + ";name=value;flag\r\n" + role() + "\r\n" +
			strconv.FormatInt(int64(len(sseBody)-len(role())), 16) + ";ext=\"q\"\r\n" + sseBody[len(role()):] + "\r\n" +
			"0;last\r\nX-Checksum: 1234\r\nX-More: 5\r\n\r\n", false, record.OK, "", 1},
		{"content-length", sseHead + "Content-Length: " + strconv.Itoa(len(sseBody)) + "\r\n\r\n" + sseBody, false, record.OK, "", 1},
		{"content-length cut short", sseHead + "Content-Length: " + strconv.Itoa(len(cut)+100) + "\r\n\r\n" + cut, true,
			record.StreamError, "unexpected EOF after 1 chunks", 2},
		{"until close, HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sseBody, true, record.OK, "", 2},
		{"until close, HTTP/1.1 without length", sseHead + "\r\n" + sseBody, true, record.OK, "", 2},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Type: text/event-stream\r\nContent-Length: " +
			strconv.Itoa(len(sseBody)) + "\r\n\r\n" + sseBody, false, record.OK, "", 1},
		{"1xx skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" + chunked(sseBody), false, record.OK, "", 1},
		// The server would serve another request on it: the client must not ask.
		{"connection close", strings.Replace(chunked(sseBody), "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1), false, record.OK, "", 2},
		// Every line is cut across chunks: the lines are put together again.
		{"one byte per chunk", sseHead + "Transfer-Encoding: chunked\r\n\r\n" + byteChunks(sseBody) + "0\r\n\r\n", false, record.OK, "", 1},
		{"chunk size line ending in a bare LF", sseHead + "Transfer-Encoding: chunked\r\n\r\n" +
			strconv.FormatInt(int64(len(sseBody)), 16) + "\n" + sseBody + "\r\n0\r\n\r\n", true, record.StreamError, "malformed chunked encoding after 0 chunks", 2},
		{"chunk data not followed by CRLF", sseHead + "Transfer-Encoding: chunked\r\n\r\n" +
			strconv.FormatInt(int64(len(cut)), 16) + "\r\n" + cut + "XY0\r\n\r\n", true, record.StreamError, "malformed chunked encoding after 1 chunks", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRawServer(t, func(_ int, conn net.Conn) bool {
				_, err := io.WriteString(conn, tt.resp)
				return err == nil && !tt.close
			})
			c := newTestClient(t, srv.url(), nil)
			if !c.h1 {
				t.Fatal("auto did not choose surge's transport for http://")
			}
			for i := range 2 {
				rec := run(context.Background(), c, &testReq)
				checkOrder(t, rec)
				if rec.Outcome != tt.outcome || rec.Error != tt.errText {
					t.Fatalf("request %d: %s %q, want %s %q", i, rec.Outcome, rec.Error, tt.outcome, tt.errText)
				}
				if rec.Outcome == record.OK && (rec.Status != 200 || rec.Chunks != 1 || rec.OutputTokens != 1) {
					t.Errorf("request %d: status %d chunks %d tokens %d", i, rec.Status, rec.Chunks, rec.OutputTokens)
				}
				if rec.ConnRetries != 0 {
					t.Errorf("request %d: %d conn_retries", i, rec.ConnRetries)
				}
			}
			if n := srv.accepted.Load(); n != tt.conns {
				t.Errorf("%d connections for two requests, want %d", n, tt.conns)
			}
		})
	}
}

// byteChunks frames body as chunks of one byte each.
func byteChunks(body string) string {
	var b strings.Builder
	for i := range len(body) {
		b.WriteString("1\r\n" + body[i:i+1] + "\r\n")
	}
	return b.String()
}

// reusedTrace returns a ctx whose trace appends GotConnInfo.Reused to *got.
func reusedTrace(got *[]bool) context.Context {
	return httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { *got = append(*got, info.Reused) },
	})
}

// TestH1KeepAlive: sequential requests share one TCP connection (counted
// at the listener) and every one after the first reports it reused.
func TestH1KeepAlive(t *testing.T) {
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		_, err := io.WriteString(conn, chunked(sseBody))
		return err == nil
	})
	c := newTestClient(t, srv.url(), nil)
	var reused []bool
	ctx := reusedTrace(&reused)
	const n = 20
	for i := range n {
		if rec := run(ctx, c, &testReq); rec.Outcome != record.OK {
			t.Fatalf("request %d: %s %q", i, rec.Outcome, rec.Error)
		}
	}
	if got := srv.accepted.Load(); got != 1 {
		t.Errorf("%d connections for %d sequential requests, want 1", got, n)
	}
	for i, r := range reused {
		if r != (i > 0) {
			t.Errorf("request %d: GotConn Reused %v", i, r)
		}
	}
}

// TestH1PeekClosedIdle: a server that closes every connection after its
// response though it advertises keep-alive (llama.cpp's llama-server):
// the idle connection's peek sees the close, so the next request dials
// instead of writing into a dead connection and being replayed.
func TestH1PeekClosedIdle(t *testing.T) {
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		resp := strings.Replace(chunked(sseBody), "\r\n\r\n", "\r\nKeep-Alive: timeout=5, max=100\r\n\r\n", 1)
		_, _ = io.WriteString(conn, resp)
		return false
	})
	c := newTestClient(t, srv.url(), nil)
	const n = 30
	for i := range n {
		rec := run(context.Background(), c, &testReq)
		if rec.Outcome != record.OK || rec.ConnRetries != 0 {
			t.Fatalf("request %d: %s %q conn_retries %d, want ok without a replay", i, rec.Outcome, rec.Error, rec.ConnRetries)
		}
		<-srv.closed // the server has closed this connection before the next request
	}
	if got := srv.accepted.Load(); got != n {
		t.Errorf("%d connections, want %d", got, n)
	}
}

// waitFor spins (yielding) until cond holds, failing after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); runtime.Gosched() {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("gave up waiting: %s", what)
		}
	}
}

func (t *h1Transport) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiters)
}

// TestH1PoolCap: no more than MaxConns connections are ever open at the
// server; requests beyond them wait and get a returned connection, and a
// waiting request whose ctx ends leaves the queue as cancelled.
func TestH1PoolCap(t *testing.T) {
	started := make(chan struct{}, 16)
	release := make(chan struct{})
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		started <- struct{}{}
		<-release
		_, err := io.WriteString(conn, chunked(sseBody))
		return err == nil
	})
	const maxConns, n = 2, 6
	c := newTestClient(t, srv.url(), func(c *Config) { c.MaxConns = maxConns })
	tr := c.tr.(*h1Transport)
	recs := make([]record.Record, n)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() { recs[i] = run(context.Background(), c, &testReq) })
	}
	<-started
	<-started
	waitFor(t, "4 requests waiting for a connection", func() bool { return tr.waiting() == n-maxConns })

	ctx, cancel := context.WithCancel(context.Background())
	extra := make(chan record.Record)
	go func() { extra <- run(ctx, c, &testReq) }()
	waitFor(t, "the extra request waiting", func() bool { return tr.waiting() == n-maxConns+1 })
	cancel()
	if rec := <-extra; rec.Outcome != record.Cancelled || rec.Error != "cancelled before connection" {
		t.Errorf("waiting request cancelled: %s %q", rec.Outcome, rec.Error)
	}
	if w := tr.waiting(); w != n-maxConns {
		t.Errorf("%d waiting after the cancel, want %d", w, n-maxConns)
	}

	close(release)
	wg.Wait()
	for i, rec := range recs {
		if rec.Outcome != record.OK {
			t.Errorf("request %d: %s %q", i, rec.Outcome, rec.Error)
		}
	}
	if m := srv.maxOpen.Load(); m > maxConns {
		t.Errorf("%d connections open at once, cap %d", m, maxConns)
	}
	if a := srv.accepted.Load(); a != maxConns {
		t.Errorf("%d connections accepted, want %d (handed on to the waiters)", a, maxConns)
	}
}

// TestH1PoolSlotHandedOn: a connection that closes (the response said
// Connection: close) frees its slot for a waiting request, which dials.
func TestH1PoolSlotHandedOn(t *testing.T) {
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		_, _ = io.WriteString(conn, strings.Replace(chunked(sseBody), "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1))
		return false
	})
	var open, maxOpen atomic.Int32 // the client's connections, counted where they are dialled and closed
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n := open.Add(1)
		for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
		}
		return &countedConn{Conn: conn, open: &open}, nil
	}
	c := newTestClient(t, srv.url(), func(c *Config) { c.MaxConns = 1; c.Dial = dial })
	recs := make([]record.Record, 8)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() { recs[i] = run(context.Background(), c, &testReq) })
	}
	wg.Wait()
	for i, rec := range recs {
		if rec.Outcome != record.OK || rec.ConnRetries != 0 {
			t.Errorf("request %d: %s %q conn_retries %d", i, rec.Outcome, rec.Error, rec.ConnRetries)
		}
	}
	if m := maxOpen.Load(); m != 1 {
		t.Errorf("%d connections open at once, cap 1", m)
	}
	if a := srv.accepted.Load(); a != int32(len(recs)) {
		t.Errorf("%d connections for %d requests, want one each", a, len(recs))
	}
}

// countedConn decrements open when it is first closed.
type countedConn struct {
	net.Conn
	open *atomic.Int32
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// TestH1HeaderInjection: a header name or value that could end the header
// line is refused before anything is dialled or sent.
func TestH1HeaderInjection(t *testing.T) {
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		_, err := io.WriteString(conn, chunked(sseBody))
		return err == nil
	})
	c := newTestClient(t, srv.url(), nil)
	rec := record.New("r1\r\nX-Injected: 1", 1, "baseline", c.now()) // the request id is a header value
	c.Do(context.Background(), &testReq, &rec)
	if rec.Outcome != record.ConnError {
		t.Errorf("request id with CRLF: %s %q, want conn_error", rec.Outcome, rec.Error)
	}
	tr := c.tr.(*h1Transport)
	for _, h := range []http.Header{{"X-A": {"v\nX-B: 1"}}, {"X-A": {"v\x00"}}, {"X A": {"v"}}, {"X-A\r\nX-B": {"v"}}} {
		req, _ := http.NewRequest(http.MethodPost, srv.url()+"/chat/completions", strings.NewReader("{}"))
		req.Header = h
		if _, err := tr.RoundTrip(req); !errors.Is(err, errH1BadHeader) {
			t.Errorf("header %q: %v, want it refused", h, err)
		}
	}
	if n := srv.accepted.Load(); n != 0 {
		t.Errorf("%d connections made for refused requests", n)
	}
}

// TestH1TLS: with Transport "surge", https goes over surge's transport
// (HTTP/1.1 negotiated by ALPN, the server's CA from CACertFile); auto
// leaves https to net/http (HTTP/2 where the server offers it).
func TestH1TLS(t *testing.T) {
	var protos sync.Map
	h := sseHandler(role(), content("a"), usage(3, 1))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		h(w, r)
		_, _ = io.WriteString(w, done)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		transport string
		h1        bool
		proto     string
	}{{TransportSurge, true, "HTTP/1.1"}, {TransportAuto, false, "HTTP/2.0"}} {
		t.Run(tt.transport, func(t *testing.T) {
			protos.Clear()
			c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.CACertFile = ca; c.Transport = tt.transport })
			if c.h1 != tt.h1 {
				t.Fatalf("surge's transport %v, want %v", c.h1, tt.h1)
			}
			for range 3 {
				if rec := run(context.Background(), c, &testReq); rec.Outcome != record.OK {
					t.Fatalf("%s %q", rec.Outcome, rec.Error)
				}
			}
			if _, ok := protos.Load(tt.proto); !ok {
				t.Errorf("server saw no %s request", tt.proto)
			}
		})
	}
	// Without the CA the certificate is rejected by surge's transport too.
	c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.Transport = TransportSurge })
	if rec := run(context.Background(), c, &testReq); rec.Outcome != record.ConnError || rec.Error != "tls certificate rejected" {
		t.Errorf("unknown CA: %s %q", rec.Outcome, rec.Error)
	}
}

// TestTransportChoice: which transport each setting uses.
func TestTransportChoice(t *testing.T) {
	for _, tt := range []struct {
		url, transport string
		h1             bool
	}{
		{"http://127.0.0.1:1/v1", "", true},
		{"http://127.0.0.1:1/v1", TransportAuto, true},
		{"http://127.0.0.1:1/v1", TransportGo, false},
		{"https://127.0.0.1:1/v1", TransportAuto, false},
		{"https://127.0.0.1:1/v1", TransportSurge, true},
	} {
		c := newTestClient(t, tt.url, func(c *Config) { c.Transport = tt.transport })
		if c.h1 != tt.h1 {
			t.Errorf("%s with %q: surge's transport %v, want %v", tt.url, tt.transport, c.h1, tt.h1)
		}
	}
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.Transport = "http://127.0.0.1:1/v1", "m", "h2"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "transport") {
		t.Errorf("transport h2: %v, want refused", err)
	}
}

// TestH1GoroutinesPerStream: N streams held open by a stalled server hold
// about N goroutines in the client with surge's transport (the callers'),
// against 3N with net/http's (plus readLoop and writeLoop per connection),
// and nothing is left once the streams end and idle connections close.
func TestH1GoroutinesPerStream(t *testing.T) {
	const n = 64
	for _, tr := range []string{TransportSurge, TransportGo} {
		t.Run(tr, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			held, release, served := make(chan struct{}), make(chan struct{}), make(chan struct{})
			base := runtime.NumGoroutine()
			go func() { // one goroutine for every stream: the count is the client's
				defer close(served)
				var conns []net.Conn
				defer func() {
					for _, c := range conns {
						c.Close()
					}
				}()
				for range n {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					conns = append(conns, conn)
					req, err := http.ReadRequest(bufio.NewReader(conn))
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					_, _ = io.WriteString(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n"+httpChunk(role()))
				}
				close(held)
				<-release
				for _, conn := range conns {
					_, _ = io.WriteString(conn, httpChunk(content("a")+usage(3, 1)+done)+"0\r\n\r\n")
				}
				<-release // closed: the deferred close ends the connections
			}()
			base++
			c := newTestClient(t, "http://"+ln.Addr().String()+"/v1", func(c *Config) { c.MaxConns = n; c.Transport = tr })
			recs := make([]record.Record, n)
			var wg sync.WaitGroup
			for i := range recs {
				wg.Go(func() { recs[i] = run(context.Background(), c, &testReq) })
			}
			<-held
			got := runtime.NumGoroutine() - base
			t.Logf("%s: %d goroutines for %d streams", tr, got, n)
			switch {
			case tr == TransportSurge && got > n+n/4:
				t.Errorf("%d goroutines for %d streams, want about one each", got, n)
			case tr == TransportGo && got < 2*n:
				t.Errorf("net/http: %d goroutines for %d streams, expected about three each (is the test measuring?)", got, n)
			}
			close(release)
			wg.Wait()
			for i, rec := range recs {
				if rec.Outcome != record.OK {
					t.Fatalf("stream %d: %s %q", i, rec.Outcome, rec.Error)
				}
			}
			c.CloseIdle()
			<-served
			waitFor(t, "the client's goroutines to end", func() bool { return runtime.NumGoroutine() <= base-1 })
		})
	}
}

// TestH1NoAllocPerChunk: a whole request over surge's transport (loopback,
// chunked, kept alive) allocates the same for 4 and for 64 chunks —
// nothing per chunk in the transport's body reader either. The server
// writes one prepared string per response, so its allocations do not grow
// with the chunks.
func TestH1NoAllocPerChunk(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts are not stable under the race detector")
	}
	resp := map[int]string{}
	for _, n := range []int{4, 64} {
		var b strings.Builder
		b.WriteString(sseHead + "Transfer-Encoding: chunked\r\n\r\n")
		b.WriteString(httpChunk(role()))
		for range n {
			b.WriteString(httpChunk(data(vllmChunk)))
		}
		b.WriteString(httpChunk(usage(10, n)+done) + "0\r\n\r\n")
		resp[n] = b.String()
	}
	var chunks atomic.Int32
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		_, err := io.WriteString(conn, resp[int(chunks.Load())])
		return err == nil
	})
	c := newTestClient(t, srv.url(), nil)
	allocs := func(n int) float64 {
		chunks.Store(int32(n))
		return testing.AllocsPerRun(50, func() {
			rec := record.New("r", 1, "baseline", 0)
			c.Do(context.Background(), &testReq, &rec)
			if rec.Outcome != record.OK || rec.Chunks != n {
				t.Fatalf("outcome %s %q chunks %d", rec.Outcome, rec.Error, rec.Chunks)
			}
		})
	}
	if a4, a64 := allocs(4), allocs(64); a64 != a4 {
		t.Errorf("%.0f allocations per request for 4 chunks, %.0f for 64", a4, a64)
	} else {
		t.Logf("%.0f allocations per request (client and server)", a4)
	}
}
