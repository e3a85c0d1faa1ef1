// Command sseserver is a minimal, fast stand-in for a vLLM streaming
// endpoint, used to benchmark surge's client side (bench/run.sh). It answers
// POST /v1/chat/completions with an SSE stream shaped like vLLM's and
// nothing else of the API; GET /health answers "ok", GET /streams the
// number of responses being streamed at that moment (bench/inflight.sh
// reads it to know when every stream is open).
//
// # Timeline of one response (t = 0 when the request body has been read)
//
//	t = 0                        response headers (Transfer-Encoding: chunked)
//	t = ttft                     role-only chunk ({"delta":{"role":"assistant","content":""}})
//	t = ttft + k·gap, k = 0…N−1  content chunk k (one token each)
//	right after chunk N−1        finish chunk (finish_reason "stop"), usage chunk
//	                             (prompt_tokens = request body bytes / 4,
//	                             completion_tokens = N), "data: [DONE]"
//
// so a response lasts ttft + (N−1)·gap (50 ms + 63 × 5 ms = 365 ms with the
// defaults) plus timer granularity (about 1 ms here). Every instant is
// absolute from t = 0, so timer error does not accumulate across chunks.
// Each SSE event is one HTTP chunk and one write (TCP_NODELAY is on), like
// uvicorn flushing every event; the three closing events share one write.
//
// # Cost
//
// HTTP/1.1 is parsed by hand (request line, Content-Length, Connection) so
// that the server costs little next to the client it measures: one
// goroutine per connection (so one per request in flight, since the client
// does not pipeline), the goroutine's own sleep timer, pooled read buffers,
// and response bytes prepared once and shared read-only. The only bytes made
// per response are the usage chunk, built in a per-connection buffer.
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
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	role    []byte // one HTTP chunk: the role event
	content []byte // one HTTP chunk: a content event
	finish  []byte // one HTTP chunk: the finish event
	done    []byte // the [DONE] event and the last (empty) HTTP chunk
	readers sync.Pool

	// Requests counts completions answered; Active the connections open;
	// Streaming the responses begun and not yet ended (GET /streams).
	Requests, Active, Streaming atomic.Int64
}

// NewServer returns a Server for cfg.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		role:    appendChunk(nil, sse(roleJSON)),
		content: appendChunk(nil, sse(contentJSON)),
		finish:  appendChunk(nil, sse(finishJSON)),
		done:    append(appendChunk(nil, "data: [DONE]\n\n"), "0\r\n\r\n"...),
	}
	s.readers.New = func() any { return bufio.NewReaderSize(nil, maxHeadBytes) }
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

// Serve accepts connections until ln is closed.
func (s *Server) Serve(ln net.Listener) error {
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
	h.method, h.path = internMethod(line[:sp1]), internPath(line[sp1+1:sp2])
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
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
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
	}
	return "other"
}

// plain writes a short non-streamed response.
func plain(w io.Writer, status, body string, closeConn bool) error {
	conn := ""
	if closeConn {
		conn = "Connection: close\r\n"
	}
	_, err := io.WriteString(w, "HTTP/1.1 "+status+"\r\nContent-Type: text/plain\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n"+conn+"\r\n"+body)
	return err
}

// serveConn answers the requests of one connection, one after another.
func (s *Server) serveConn(c net.Conn) {
	s.Active.Add(1)
	defer s.Active.Add(-1)
	defer c.Close()
	br := s.readers.Get().(*bufio.Reader)
	br.Reset(c)
	defer func() {
		br.Reset(nil)
		s.readers.Put(br)
	}()
	var buf scratch
	for {
		h, err := readHead(br)
		if err != nil {
			if errors.Is(err, errBadRequest) {
				_ = plain(c, "400 Bad Request", "bad request\n", true)
				lingerClose(c)
			}
			return
		}
		if h.chunked {
			_ = plain(c, "501 Not Implemented", "chunked request bodies are not supported\n", true)
			lingerClose(c)
			return
		}
		if _, err := br.Discard(int(h.contentLength)); err != nil {
			return
		}
		switch {
		case h.method == "POST" && h.path == "/v1/chat/completions":
			err = s.stream(c, h.contentLength, &buf)
		case h.method == "GET" && h.path == "/health":
			err = plain(c, "200 OK", "ok\n", h.close)
		case h.method == "GET" && h.path == "/streams":
			err = plain(c, "200 OK", strconv.FormatInt(s.Streaming.Load(), 10)+"\n", h.close)
		default:
			err = plain(c, "404 Not Found", "not found\n", h.close)
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

// scratch is a connection's reusable buffers for the one part of a response
// that varies: the usage event and the closing write that carries it.
type scratch struct{ event, tail []byte }

// stream writes one SSE response on the timeline of the package doc.
func (s *Server) stream(w io.Writer, bodyBytes int64, b *scratch) error {
	start := time.Now()
	s.Streaming.Add(1)
	defer s.Streaming.Add(-1)
	if _, err := io.WriteString(w, streamHead); err != nil {
		return err
	}
	sleepUntil(start.Add(s.cfg.TTFT))
	if _, err := w.Write(s.role); err != nil {
		return err
	}
	for k := range s.cfg.Tokens {
		sleepUntil(start.Add(s.cfg.TTFT + time.Duration(k)*s.cfg.Gap))
		if _, err := w.Write(s.content); err != nil {
			return err
		}
	}
	prompt, completion := bodyBytes/4, int64(s.cfg.Tokens)
	ev := append(b.event[:0], "data: "+usagePrefix...)
	ev = strconv.AppendInt(ev, prompt, 10)
	ev = append(ev, `,"completion_tokens":`...)
	ev = strconv.AppendInt(ev, completion, 10)
	ev = append(ev, `,"total_tokens":`...)
	ev = strconv.AppendInt(ev, prompt+completion, 10)
	ev = append(ev, "}}\n\n"...)
	tail := append(b.tail[:0], s.finish...)
	tail = strconv.AppendInt(tail, int64(len(ev)), 16)
	tail = append(tail, "\r\n"...)
	tail = append(tail, ev...)
	tail = append(tail, "\r\n"...)
	tail = append(tail, s.done...)
	b.event, b.tail = ev, tail
	s.Requests.Add(1)
	_, err := w.Write(tail)
	return err
}

// sleepUntil sleeps until t (the goroutine's own timer; no allocation).
func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
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
	fmt.Fprintf(os.Stderr, "sseserver: listening on %s (tokens %d, ttft %v, gap %v)\n", ln.Addr(), cfg.Tokens, cfg.TTFT, cfg.Gap)
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
