// Command sseserver is a minimal, fast stand-in for a vLLM streaming
// endpoint, used to benchmark surge's client side (bench/run.sh). It answers
// POST /v1/chat/completions with an SSE stream shaped like vLLM's and
// nothing else of the API; GET /health answers "ok", GET /streams the
// number of responses being streamed at that moment (bench/inflight.sh
// reads it to know when every stream is open), GET /truth the server's own
// measurement of what it sent (below).
//
// # Timeline of one response (t = 0 when the request body has been read)
//
//	t = 0                        response headers (Transfer-Encoding: chunked)
//	t = ttft                     role-only chunk ({"delta":{"role":"assistant","content":""}})
//	                             and content chunk 0, in one write
//	t = ttft + k·gap, k = 1…N−1  content chunk k (one token each), one write each
//	right after chunk N−1        finish chunk (finish_reason "stop"), usage chunk
//	                             (prompt_tokens = request body bytes / 4,
//	                             completion_tokens = N), "data: [DONE]" and the
//	                             last (empty) HTTP chunk, in one write
//
// so a response lasts ttft + (N−1)·gap (50 ms + 63 × 5 ms = 365 ms with the
// defaults) plus the scheduler's lateness, and takes N + 2 writes (66 with
// the defaults). Every SSE event is its own HTTP chunk; the role chunk and
// content chunk 0, due at the same instant, share a write (the closing write
// stays apart from the last token's). Every due time is absolute from t = 0, so
// lateness does not accumulate across chunks, and no event is written early.
//
// # Design
//
// HTTP/1.1 is parsed by hand (request line, Content-Length, Connection); one
// goroutine per connection reads requests and writes the headers; the SSE
// events are written by a scheduler: one goroutine per P (GOMAXPROCS shards;
// a connection belongs to one shard), each with a min-heap of streams ordered
// by their next due time. A shard sleeps until its earliest due time (a
// runtime timer), then writes every event that is due, to all its
// connections, in one wake-up, with write(2) straight on the non-blocking
// socket (syscall.RawSyscall: no goroutine switch, no timer, no poll.FD lock
// per event, and no sysmon hand-off of the P during the writes). Response
// bytes are encoded once (the closing write, which carries the usage
// numbers, per request in a per-connection buffer), so a request allocates
// nothing after its connection's first (TestNoAllocsPerRequest). If a write
// is short or would block (the client reads slower than the server writes),
// the stream leaves the scheduler for a goroutine of its own, which writes
// the rest with the ordinary blocking net.Conn path at the same due times,
// so no byte is lost or reordered. The connection goroutine waits for a
// response's last write before it answers the next request on that
// connection or closes it.
//
// What is left is the kernel: on loopback, write(2) of one small TCP segment
// also runs the receiving socket's TCP input (softirq on the writer's CPU)
// and wakes the reader, and that is ~90 % of the server's CPU (perf, 1,000/s
// of 64 tokens). Without changing the number of writes per response, a server
// on one core cannot be much cheaper than the client reading the same
// segments; see bench/README.md for the numbers.
//
// Quantisation: a shard wakes by the Go runtime's timer, which on Linux sleeps
// in epoll_pwait with a millisecond timeout, so an event is written 0–~1.2 ms
// after its due time when the shard was idle (measured at 100 req/s: late p50
// 0.56 ms, p90 1.05 ms, p99 1.18 ms), plus the time to write the events ahead
// of it in the same wake-up. GET /truth reports the lateness of every run.
//
// # Ground truth: GET /truth
//
// The server stamps its own times (monotonic clock) and answers GET /truth
// with
//
//	{"requests":N,"ttft_ms":{"p50":…,"p90":…,"p99":…,"max":…},
//	 "late_ms":{"p50":…,"p90":…,"p99":…,"max":…},"events":E,"failed":F,"window_s":S}
//
// requests counts the responses completed (their closing write issued) in the
// window; ttft_ms is over those responses: server TTFT = the time the write of
// the first content token returned − the time the request was fully read.
// late_ms is over the E event writes of the window (role+token 0, each token,
// the closing write; not the headers): the time the write returned − the
// event's due time. failed counts responses cut short by a write error;
// window_s the seconds the window lasted. GET /truth?reset=1 answers the same
// and then starts a new window (the first starts with the server). Times are
// kept in fixed log-linear histograms, preallocated (exact below 4.1 µs,
// then 2,048 buckets per power of two: a percentile is the middle of its
// bucket, within 0.025 % of the value, ±8 µs at 50 ms; max is exact); all
// zero with no data. A client's TTFT error is its TTFT percentile minus the
// server's over the same window; late_ms p99 above a few milliseconds means
// the server (or what else ran on its CPU) was behind, and the window does
// not measure the client alone.
//
// Flags: --addr (127.0.0.1:8000), --tokens (64), --ttft (50ms), --gap (5ms).
// SIGINT or SIGTERM stops it and prints the requests served and the CPU time
// used (getrusage) to stderr.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The defaults of the flags.
const (
	DefaultAddr   = "127.0.0.1:8000"
	DefaultTokens = 64
	DefaultTTFT   = 50 * time.Millisecond
	DefaultGap    = 5 * time.Millisecond
)

// maxHeadBytes bounds one request-head line (the read buffer size).
const maxHeadBytes = 8 << 10

// The JSON of the events, in vLLM's chat-completion chunk format.
const (
	chunkPrefix = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1718000000,"model":"bench",`
	roleJSON    = chunkPrefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	contentJSON = chunkPrefix + `"choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`
	finishJSON  = chunkPrefix + `"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`
	usagePrefix = chunkPrefix + `"choices":[],"usage":{"prompt_tokens":`
	streamHead  = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)

// Config is the server's behaviour.
type Config struct {
	Tokens int           // content chunks per response (≥ 1)
	TTFT   time.Duration // from the request to the role chunk and first content chunk
	Gap    time.Duration // between consecutive content chunks
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Tokens < 1:
		return fmt.Errorf("sseserver: tokens: must be ≥ 1, got %d", c.Tokens)
	case c.TTFT < 0:
		return fmt.Errorf("sseserver: ttft: must be ≥ 0, got %v", c.TTFT)
	case c.Gap < 0:
		return fmt.Errorf("sseserver: gap: must be ≥ 0, got %v", c.Gap)
	}
	return nil
}

// Server serves the fake completions. Its response bytes are computed once
// by NewServer and shared by every connection.
type Server struct {
	cfg     Config
	head    []byte // the response head
	first   []byte // two HTTP chunks: the role event and content event 0
	content []byte // one HTTP chunk: a content event
	finish  []byte // one HTTP chunk: the finish event
	done    []byte // the [DONE] event and the last (empty) HTTP chunk
	readers sync.Pool

	epoch  time.Time // stamps are nanoseconds since epoch (monotonic)
	shards []*shard
	next   atomic.Uint32 // round robin of connections over shards
	quit   chan struct{} // closed when Serve returns: idle shards stop
	once   sync.Once

	truthMu     sync.Mutex // serialises GET /truth (merge buffers, window)
	windowStart int64
	mergeTTFT   hist
	mergeLate   hist

	// sndbuf, when > 0, is set as SO_SNDBUF on accepted connections (tests).
	sndbuf int

	// Requests counts completions answered; Active the connections open;
	// Streaming the responses begun and not yet ended (GET /streams);
	// Blocking the responses that left the scheduler for the blocking
	// write path because the client's socket was full.
	Requests, Active, Streaming, Blocking atomic.Int64
}

// NewServer returns a Server for cfg, with one scheduler shard per P.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		head:    []byte(streamHead),
		first:   appendChunk(appendChunk(nil, sse(roleJSON)), sse(contentJSON)),
		content: appendChunk(nil, sse(contentJSON)),
		finish:  appendChunk(nil, sse(finishJSON)),
		done:    append(appendChunk(nil, "data: [DONE]\n\n"), "0\r\n\r\n"...),
		epoch:   time.Now(),
		quit:    make(chan struct{}),
	}
	s.readers.New = func() any { return bufio.NewReaderSize(nil, maxHeadBytes) }
	for range runtime.GOMAXPROCS(0) {
		s.shards = append(s.shards, &shard{srv: s, wake: make(chan struct{}, 1)})
	}
	return s, nil
}

func sse(js string) string { return "data: " + js + "\n\n" }

// appendChunk appends p as one HTTP/1.1 chunk: hex length, CRLF, p, CRLF.
func appendChunk(b []byte, p string) []byte {
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// now is the server's clock: nanoseconds since s.epoch, monotonic.
func (s *Server) now() int64 { return int64(time.Since(s.epoch)) }

// Serve accepts connections until ln is closed.
func (s *Server) Serve(ln net.Listener) error {
	defer s.once.Do(func() { close(s.quit) })
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return fmt.Errorf("sseserver: accept: %w", err)
		}
		go s.serveConn(c)
	}
}

// head is what the server needs from a request head.
type head struct {
	method, path  string
	reset         bool // the query is exactly "reset=1"
	contentLength int64
	close         bool // Connection: close, or HTTP/1.0
	chunked       bool // a Transfer-Encoding the server does not read
}

var errBadRequest = errors.New("sseserver: bad request")

// readHead parses a request line and headers. Only the request line becomes
// strings (and only for known values, so nothing is allocated for them).
func readHead(br *bufio.Reader) (head, error) {
	var h head
	line, err := readLine(br)
	if err != nil {
		return h, err
	}
	sp1 := bytes.IndexByte(line, ' ')
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1 {
		return h, errBadRequest
	}
	target := line[sp1+1 : sp2]
	path, query, _ := bytes.Cut(target, []byte{'?'})
	h.method, h.path = internMethod(line[:sp1]), internPath(path)
	h.reset = string(query) == "reset=1"
	h.close = string(line[sp2+1:]) == "HTTP/1.0"
	for {
		line, err = readLine(br)
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return h, errBadRequest
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, ok := parseLength(value)
			if !ok {
				return h, errBadRequest
			}
			h.contentLength = n
		case bytes.EqualFold(name, []byte("Connection")):
			h.close = bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.chunked = true
		}
	}
}

// parseLength parses a Content-Length: decimal digits, at most 18 of them
// (strconv.ParseInt would allocate its argument's string).
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readLine returns one CRLF- or LF-terminated line without its ending.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return nil, errBadRequest
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func internMethod(b []byte) string {
	switch string(b) {
	case "POST":
		return "POST"
	case "GET":
		return "GET"
	}
	return "other"
}

func internPath(b []byte) string {
	switch string(b) {
	case "/v1/chat/completions":
		return "/v1/chat/completions"
	case "/health":
		return "/health"
	case "/streams":
		return "/streams"
	case "/truth":
		return "/truth"
	}
	return "other"
}

// plain writes a short non-streamed response.
func plain(w io.Writer, status, ctype, body string, closeConn bool) error {
	conn := ""
	if closeConn {
		conn = "Connection: close\r\n"
	}
	_, err := io.WriteString(w, "HTTP/1.1 "+status+"\r\nContent-Type: "+ctype+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n"+conn+"\r\n"+body)
	return err
}

// conn is one client connection: its socket, its shard, and the state of
// the one response it may be streaming.
type conn struct {
	nc    net.Conn
	fd    int // nc's descriptor (non-blocking), for the scheduler's write(2)
	shard *shard
	done  chan struct{} // one value when the stream submitted ends (cap 1)
	busy  bool          // a stream was submitted and done not yet received (connection goroutine only)
	// failed is set before done is sent when a write failed: the connection
	// is closed instead of reused.
	failed bool
	tail   []byte // the closing write of the current response
	st     stream // the current response (reused)
}

// wait waits until the stream submitted last, if any, has ended.
func (c *conn) wait() {
	if c.busy {
		<-c.done
		c.busy = false
	}
}

// stream is the state of one response being written.
type stream struct {
	c    *conn
	t0   int64 // when the request was fully read
	due  int64 // when the pending event is due
	step int   // 0: role + token 0; 1…N−1: token k; N: the closing write
	off  int   // bytes of the pending event already written
	ttft int64 // when the write of content chunk 0 returned − t0
}

// serveConn answers the requests of one connection, one after another.
func (s *Server) serveConn(nc net.Conn) {
	s.Active.Add(1)
	defer s.Active.Add(-1)
	c := &conn{nc: nc, fd: -1, done: make(chan struct{}, 1)}
	c.shard = s.shards[int(s.next.Add(1))%len(s.shards)]
	if tc, ok := nc.(*net.TCPConn); ok {
		if s.sndbuf > 0 {
			_ = tc.SetWriteBuffer(s.sndbuf)
		}
		if rc, err := tc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { c.fd = int(fd) })
		}
	}
	defer nc.Close()
	defer c.wait() // before Close: the scheduler may still be writing
	br := s.readers.Get().(*bufio.Reader)
	br.Reset(nc)
	defer func() {
		br.Reset(nil)
		s.readers.Put(br)
	}()
	for {
		h, err := readHead(br)
		c.wait() // a pipelined request, or EOF while the last response streams
		if c.failed {
			return
		}
		if err != nil {
			if errors.Is(err, errBadRequest) {
				_ = plain(nc, "400 Bad Request", "text/plain", "bad request\n", true)
				lingerClose(nc)
			}
			return
		}
		if h.chunked {
			_ = plain(nc, "501 Not Implemented", "text/plain", "chunked request bodies are not supported\n", true)
			lingerClose(nc)
			return
		}
		if _, err := br.Discard(int(h.contentLength)); err != nil {
			return
		}
		switch {
		case h.method == "POST" && h.path == "/v1/chat/completions":
			err = s.start(c, s.now(), h.contentLength)
		case h.method == "GET" && h.path == "/health":
			err = plain(nc, "200 OK", "text/plain", "ok\n", h.close)
		case h.method == "GET" && h.path == "/streams":
			err = plain(nc, "200 OK", "text/plain", strconv.FormatInt(s.Streaming.Load(), 10)+"\n", h.close)
		case h.method == "GET" && h.path == "/truth":
			err = plain(nc, "200 OK", "application/json", s.truth(h.reset), h.close)
		default:
			err = plain(nc, "404 Not Found", "text/plain", "not found\n", h.close)
		}
		if err != nil || h.close {
			return
		}
	}
}

// lingerClose shuts down the writing side and reads what the client still
// sends for a moment, so that closing a connection with unread input does
// not reset it before the client has read the error response.
func lingerClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.CopyN(io.Discard, c, 256<<10)
}

// start begins one SSE response read at t0: the headers at once, the events
// by the connection's shard (or by a goroutine of its own when the
// connection has no descriptor to write to).
func (s *Server) start(c *conn, t0, bodyBytes int64) error {
	s.Streaming.Add(1)
	prompt, completion := bodyBytes/4, int64(s.cfg.Tokens)
	tail := append(c.tail[:0], s.finish...)
	n := len("data: "+usagePrefix+`,"completion_tokens":`+`,"total_tokens":`+"}}\n\n") +
		decimalLen(prompt) + decimalLen(completion) + decimalLen(prompt+completion)
	tail = strconv.AppendInt(tail, int64(n), 16)
	tail = append(tail, "\r\ndata: "+usagePrefix...)
	tail = strconv.AppendInt(tail, prompt, 10)
	tail = append(tail, `,"completion_tokens":`...)
	tail = strconv.AppendInt(tail, completion, 10)
	tail = append(tail, `,"total_tokens":`...)
	tail = strconv.AppendInt(tail, prompt+completion, 10)
	tail = append(tail, "}}\n\n\r\n"...)
	c.tail = append(tail, s.done...)
	if err := c.write(s.head); err != nil {
		s.Streaming.Add(-1)
		return err
	}
	c.st = stream{c: c, t0: t0, due: t0 + int64(s.cfg.TTFT)}
	c.busy = true
	if c.fd < 0 {
		s.Blocking.Add(1)
		go s.writeBlocking(&c.st)
		return nil
	}
	c.shard.submit(&c.st)
	return nil
}

// write writes p at once: write(2) while the socket has room, then the
// blocking net.Conn path for what is left.
func (c *conn) write(p []byte) error {
	if c.fd >= 0 {
		n, errno := rawWrite(c.fd, p)
		for errno == syscall.EINTR {
			n, errno = rawWrite(c.fd, p)
		}
		switch {
		case errno == 0 && n == len(p):
			return nil
		case errno == 0:
			p = p[n:]
		case errno != syscall.EAGAIN:
			return errno
		}
	}
	_, err := c.nc.Write(p)
	return err
}

// decimalLen is the number of decimal digits of n ≥ 0.
func decimalLen(n int64) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// pending is what is left to write of st's current event.
func (s *Server) pending(st *stream) []byte {
	switch st.step {
	case 0:
		return s.first[st.off:]
	case s.cfg.Tokens:
		return st.c.tail[st.off:]
	}
	return s.content[st.off:]
}

// advance moves st past the event written at now (the write returned); it
// records the event in sh's histograms (sh.mu held) and reports whether the
// response is complete.
func (s *Server) advance(st *stream, sh *shard, now int64) bool {
	sh.late.add(now - st.due)
	st.off = 0
	if st.step == 0 {
		st.ttft = now - st.t0
	}
	if st.step == s.cfg.Tokens {
		return true
	}
	st.step++
	if st.step < s.cfg.Tokens {
		st.due = st.t0 + int64(s.cfg.TTFT) + int64(st.step)*int64(s.cfg.Gap)
	} else {
		// The closing write is due with the last token. The response
		// counts from here, before the client can have read its end.
		s.Requests.Add(1)
		sh.requests++
		sh.ttft.add(st.ttft)
	}
	return false
}

// end ends st's response, failed when a write failed, and lets its
// connection go on.
func (s *Server) end(st *stream, failed bool) {
	c := st.c
	c.failed = failed
	s.Streaming.Add(-1)
	c.done <- struct{}{}
}

// writeBlocking writes the rest of st with blocking writes (net.Conn),
// sleeping until each event's due time: the path of a client whose socket
// buffer is full, so that the scheduler never waits for one.
func (s *Server) writeBlocking(st *stream) {
	sh := st.c.shard
	for {
		if d := st.due - s.now(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		_, err := st.c.nc.Write(s.pending(st))
		now := s.now()
		if err != nil {
			sh.mu.Lock()
			sh.failed++
			sh.mu.Unlock()
			s.end(st, true)
			return
		}
		sh.mu.Lock()
		complete := s.advance(st, sh, now)
		sh.mu.Unlock()
		if complete {
			s.end(st, false)
			return
		}
	}
}

// shard is one scheduler: a goroutine writing the due events of its
// connections' streams, kept in a min-heap by due time.
type shard struct {
	srv *Server

	inMu       sync.Mutex
	inbox      []*stream // submitted, not yet in the heap
	sleepUntil int64     // the due time the loop sleeps until; math.MaxInt64 idle
	running    bool      // the loop goroutine exists
	wake       chan struct{}

	heap []*stream // the loop's own

	mu               sync.Mutex // the histograms and counts (GET /truth)
	ttft, late       hist
	requests, failed int64
}

// submit hands st to the shard, waking it when st is due before the time
// the shard sleeps until.
func (sh *shard) submit(st *stream) {
	sh.inMu.Lock()
	sh.inbox = append(sh.inbox, st)
	wake := st.due < sh.sleepUntil
	if wake {
		sh.sleepUntil = st.due
	}
	if !sh.running {
		sh.running = true
		sh.sleepUntil = st.due
		go sh.loop()
		wake = false
	}
	sh.inMu.Unlock()
	if wake {
		select {
		case sh.wake <- struct{}{}:
		default:
		}
	}
}

// loop runs the shard: take the inbox into the heap, write what is due,
// sleep until the next due time or a wake-up. It returns when the server
// has stopped serving and the shard has nothing to do.
func (sh *shard) loop() {
	s := sh.srv
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		sh.inMu.Lock()
		for _, st := range sh.inbox {
			sh.push(st)
		}
		clear(sh.inbox)
		sh.inbox = sh.inbox[:0]
		sh.inMu.Unlock()

		now := s.now()
		if len(sh.heap) > 0 && sh.heap[0].due <= now {
			sh.run(now)
			// Let the connection goroutines read new requests (when the
			// shard is behind, it would otherwise run until preempted),
			// then take them in before the next batch.
			runtime.Gosched()
			continue
		}

		sh.inMu.Lock()
		if len(sh.inbox) > 0 {
			sh.inMu.Unlock()
			continue
		}
		next := int64(math.MaxInt64)
		if len(sh.heap) > 0 {
			next = sh.heap[0].due
		}
		sh.sleepUntil = next
		if next == math.MaxInt64 {
			select {
			case <-s.quit:
				sh.running = false
				sh.inMu.Unlock()
				return
			default:
			}
		}
		sh.inMu.Unlock()
		if next == math.MaxInt64 {
			select {
			case <-sh.wake:
			case <-s.quit:
			}
			continue
		}
		timer.Reset(time.Duration(next - s.now()))
		select {
		case <-sh.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// run writes the events due by limit, one write(2) each, in due order.
func (sh *shard) run(limit int64) {
	s := sh.srv
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for len(sh.heap) > 0 && sh.heap[0].due <= limit {
		st := sh.heap[0]
		p := s.pending(st)
		n, err := rawWrite(st.c.fd, p)
		for err == syscall.EINTR {
			n, err = rawWrite(st.c.fd, p)
		}
		now := s.now()
		switch {
		case err == 0 && n == len(p):
			if s.advance(st, sh, now) {
				sh.pop()
				s.end(st, false)
			} else {
				sh.down(0)
			}
		case err == 0 || err == syscall.EAGAIN:
			// The client's socket is full: the rest of this stream is
			// written by a goroutine of its own, blocking as needed.
			if n > 0 {
				st.off += n
			}
			sh.pop()
			s.Blocking.Add(1)
			go s.writeBlocking(st)
		default:
			sh.failed++
			sh.pop()
			s.end(st, true)
		}
	}
}

// rawWrite is write(2) on a non-blocking descriptor, without telling the
// Go scheduler (syscall.Write would): the call returns in microseconds, and
// a P seen in a system call makes sysmon wake every 20 µs and hand the P to
// another thread, which cost more than the writes themselves at high rates.
func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errno
}

// The heap: a binary min-heap of streams by due time.

func (sh *shard) push(st *stream) {
	sh.heap = append(sh.heap, st)
	h := sh.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].due <= h[i].due {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (sh *shard) pop() {
	h := sh.heap
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	sh.heap = h[:last]
	if last > 0 {
		sh.down(0)
	}
}

func (sh *shard) down(i int) {
	h := sh.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].due < h[l].due {
			m = r
		}
		if h[i].due <= h[m].due {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// hist is a log-linear histogram of nanoseconds: exact below 2^histBits ns,
// then 2^(histBits−1) buckets per power of two, up to 2^histTop ns (larger
// values count in the last bucket; max is exact).
type hist struct {
	counts [histLen]uint64
	n      uint64
	max    int64
}

const (
	histBits = 12
	histTop  = 42 // 73 minutes
	histLen  = (histTop - histBits + 2) << (histBits - 1)
)

func histIndex(v int64) int {
	if v < 0 {
		v = 0
	}
	if v >= 1<<histTop {
		v = 1<<histTop - 1
	}
	u := uint64(v)
	if u < 1<<histBits {
		return int(u)
	}
	sh := bits.Len64(u) - histBits
	return sh<<(histBits-1) + int(u>>sh)
}

// histMid is the middle of bucket i.
func histMid(i int) float64 {
	if i < 1<<histBits {
		return float64(i)
	}
	sh := i>>(histBits-1) - 1
	low := uint64(i-sh<<(histBits-1)) << sh
	return float64(low) + float64(uint64(1)<<sh)/2
}

func (h *hist) add(v int64) {
	h.counts[histIndex(v)]++
	h.n++
	if v > h.max {
		h.max = v
	}
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

func (h *hist) reset() { *h = hist{} }

// quantile is the q-quantile in nanoseconds (0 when empty), at most max.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histMid(i), float64(h.max))
		}
	}
	return float64(h.max)
}

// truth is GET /truth's JSON for the current window, which reset ends.
func (s *Server) truth(reset bool) string {
	s.truthMu.Lock()
	defer s.truthMu.Unlock()
	tt, lt := &s.mergeTTFT, &s.mergeLate
	tt.reset()
	lt.reset()
	var requests, failed int64
	for _, sh := range s.shards {
		sh.mu.Lock()
		tt.merge(&sh.ttft)
		lt.merge(&sh.late)
		requests += sh.requests
		failed += sh.failed
		if reset {
			sh.ttft.reset()
			sh.late.reset()
			sh.requests, sh.failed = 0, 0
		}
		sh.mu.Unlock()
	}
	now := s.now()
	window := float64(now-s.windowStart) / 1e9
	if reset {
		s.windowStart = now
	}
	ms := func(ns float64) string { return strconv.FormatFloat(ns/1e6, 'f', 4, 64) }
	return fmt.Sprintf(`{"requests":%d,"ttft_ms":{"p50":%s,"p90":%s,"p99":%s,"max":%s},"late_ms":{"p50":%s,"p90":%s,"p99":%s,"max":%s},"events":%d,"failed":%d,"window_s":%.3f}`+"\n",
		requests, ms(tt.quantile(0.50)), ms(tt.quantile(0.90)), ms(tt.quantile(0.99)), ms(float64(tt.max)),
		ms(lt.quantile(0.50)), ms(lt.quantile(0.90)), ms(lt.quantile(0.99)), ms(float64(lt.max)),
		lt.n, failed, window)
}

// cpuSeconds is the process's user + system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func main() {
	addr := flag.String("addr", DefaultAddr, "listen address (loopback)")
	var cfg Config
	flag.IntVar(&cfg.Tokens, "tokens", DefaultTokens, "content chunks per response")
	flag.DurationVar(&cfg.TTFT, "ttft", DefaultTTFT, "time to the first chunk")
	flag.DurationVar(&cfg.Gap, "gap", DefaultGap, "gap between content chunks")
	flag.Parse()
	s, err := NewServer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sseserver: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "sseserver: listening on %s (tokens %d, ttft %v, gap %v, %d scheduler shards)\n", ln.Addr(), cfg.Tokens, cfg.TTFT, cfg.Gap, len(s.shards))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		ln.Close()
	}()
	if err := s.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "sseserver: served %d completions, %.2f CPU-s\n", s.Requests.Load(), cpuSeconds())
}
