package openai

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
)

// roundTripper is what Client needs of a transport: net/http's
// *http.Transport and surge's own *h1Transport both fit.
type roundTripper interface {
	RoundTrip(*http.Request) (*http.Response, error)
	CloseIdleConnections()
}

// h1Transport is surge's own HTTP/1.1 client transport for one endpoint
// (doc.go, "Transport"). The caller's goroutine writes the request and
// reads the response: no goroutine of its own per connection, unlike
// net/http's readLoop and writeLoop. Cancellation and the per-request
// timeout reach a blocked read or write through a deadline set by
// context.AfterFunc. Connections are pooled: at most maxConns open (idle
// and busy), idle ones reused newest first and dropped after
// idleConnTimeout (checked when a connection is taken, without timers),
// requests beyond the cap wait in order for a connection or a free slot.
//
// A response body must be read and closed by one goroutine (Close does not
// interrupt a concurrent Read); its connection returns to the pool at EOF.
type h1Transport struct {
	host      string // the endpoint URL's host, as written
	addr      string // host:port dialled
	https     bool
	tlsConf   *tls.Config // https only; ServerName set
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns  int
	keepAlive bool // false: "Connection: close" on every request (replays)

	mu      sync.Mutex
	idle    []*h1Conn   // oldest first; taken from the end (newest)
	open    int         // connections open or being dialled, idle included
	waiters []*h1Waiter // requests waiting for a connection, oldest first

	heads sync.Pool // *[]byte: request heads, held until written
}

// h1Conn is one connection and its read buffer.
type h1Conn struct {
	nc     net.Conn
	br     *bufio.Reader
	tp     textproto.Reader
	served bool      // a response was read on it before (GotConnInfo.Reused)
	idleAt time.Time // when it went idle
}

// h1Waiter is a request waiting for a connection: it receives an idle
// connection, or nil meaning a slot was freed for it to dial.
type h1Waiter struct{ ch chan *h1Conn }

// newH1Transport returns the transport for requests to host (u: its
// address and name). tlsConf
// is cloned for https; dial is the dialer (never nil).
func newH1Transport(host string, u *urlInfo, tlsConf *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error), maxConns int, keepAlive bool) *h1Transport {
	t := &h1Transport{host: host, addr: u.addr, https: u.https, dial: dial, maxConns: max(maxConns, 1), keepAlive: keepAlive}
	if u.https {
		t.tlsConf = tlsConf.Clone()
		t.tlsConf.ServerName = u.hostname
		t.tlsConf.NextProtos = []string{"http/1.1"}
	}
	return t
}

// urlInfo is what the transport needs of the endpoint's URL.
type urlInfo struct {
	addr     string // host:port
	hostname string // without port or brackets
	https    bool
}

func endpointInfo(scheme, host string) *urlInfo {
	u := &urlInfo{https: scheme == "https"}
	hn, port, err := net.SplitHostPort(host)
	if err != nil { // no port
		hn = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		port = "80"
		if u.https {
			port = "443"
		}
	}
	u.hostname, u.addr = hn, net.JoinHostPort(hn, port)
	return u
}

var (
	errH1BadHeader = errors.New("openai: request header holds CR, LF or NUL, or its name is no token")
	errH1Protocol  = errors.New("openai: malformed HTTP response")
	errH1Closed    = errors.New("openai: read on closed response body")
	errH1OtherHost = errors.New("openai: request to another endpoint than the transport's")
	errH1Chunked   = errors.New("openai: malformed chunked encoding")
)

// RoundTrip sends req on a pooled connection and returns the response
// once its headers are read. req.Body is written as it is when it offers
// its bytes (bodyReader), else read whole first.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL.Host != t.host && endpointInfo(req.URL.Scheme, req.URL.Host).addr != t.addr {
		closeBody(req)
		return nil, errH1OtherHost
	}
	body, err := requestBytes(req)
	if err != nil {
		return nil, err
	}
	hp := t.getHead()
	head, err := t.appendHead((*hp)[:0], req, len(body))
	*hp = head
	if err != nil {
		t.heads.Put(hp)
		return nil, err
	}
	trace := httptrace.ContextClientTrace(ctx)
	c, wasIdle, idleTime, err := t.getConn(ctx)
	if err != nil {
		t.heads.Put(hp)
		return nil, err
	}
	reused := c.served
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: reused, WasIdle: wasIdle, IdleTime: idleTime})
	}
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })

	bufs := net.Buffers{head, body}
	_, err = bufs.WriteTo(nc)
	t.heads.Put(hp)
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	if err != nil {
		stop()
		t.closeConn(c)
		return nil, err
	}
	resp, keep, err := t.readResponse(c, req, trace)
	if err != nil {
		stop()
		t.closeConn(c)
		return nil, err
	}
	b := resp.Body.(*h1Body)
	b.t, b.c, b.stop, b.keep = t, c, stop, keep && t.keepAlive && !req.Close
	if b.done { // no body: the connection is free now
		b.done = false
		b.finish(io.EOF)
	}
	return resp, nil
}

// requestBytes returns the request body's bytes: those of a bodyReader
// without a copy, else the body read whole.
func requestBytes(req *http.Request) ([]byte, error) {
	switch b := req.Body.(type) {
	case nil:
		return nil, nil
	case *bodyReader:
		return b.raw, nil
	default:
		defer b.Close()
		buf, err := io.ReadAll(b)
		if err != nil {
			return nil, fmt.Errorf("openai: reading request body: %w", err)
		}
		return buf, nil
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func (t *h1Transport) getHead() *[]byte {
	if hp, _ := t.heads.Get().(*[]byte); hp != nil {
		return hp
	}
	b := make([]byte, 0, writeBufferBytes)
	return &b
}

// appendHead appends the request line and headers of req, with a body of
// n bytes, to b. A header name that is no token, or a name or value
// holding CR, LF or NUL, is refused: it could smuggle a header or a
// request.
func (t *h1Transport) appendHead(b []byte, req *http.Request, n int) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	uri := req.URL.RequestURI()
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validHeaderName(method) || strings.ContainsAny(uri, " \r\n\x00") || strings.ContainsAny(host, " \r\n\x00") {
		return b, errH1BadHeader
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if n > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, "\r\n"...)
	}
	if !t.keepAlive || req.Close {
		b = append(b, "Connection: close\r\n"...)
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Connection", "Transfer-Encoding":
			continue // set above
		}
		if !validHeaderName(k) {
			return b, errH1BadHeader
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				return b, errH1BadHeader
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return append(b, "\r\n"...), nil
}

// readResponse reads the status line and headers of the response to req
// on c (1xx informational responses skipped) and sets up its body. keep
// reports whether the response lets the connection be reused.
func (t *h1Transport) readResponse(c *h1Conn, req *http.Request, trace *httptrace.ClientTrace) (*http.Response, bool, error) {
	if _, err := c.br.Peek(1); err != nil {
		return nil, false, err
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	for informational := 0; ; informational++ {
		if informational > max1xx {
			return nil, false, errH1Protocol // a storm of 1xx: no answer is coming
		}
		line, err := c.tp.ReadLine()
		if err != nil {
			return nil, false, unexpected(err)
		}
		resp, err := parseStatusLine(line)
		if err != nil {
			return nil, false, err
		}
		mh, err := c.tp.ReadMIMEHeader()
		if err != nil {
			return nil, false, unexpected(err)
		}
		if resp.StatusCode/100 == 1 {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return nil, false, errH1Protocol // never asked for
			}
			continue
		}
		resp.Header = http.Header(mh)
		resp.Request = req
		keep := resp.ProtoAtLeast(1, 1) && !headerHas(resp.Header, "Connection", "close") ||
			resp.ProtoMajor == 1 && resp.ProtoMinor == 0 && headerHas(resp.Header, "Connection", "keep-alive")
		b := &h1Body{}
		resp.Body = b
		resp.ContentLength = -1
		te := resp.Header["Transfer-Encoding"]
		switch {
		case req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
			resp.ContentLength = 0
			b.done = true
		case len(te) > 0 && !resp.ProtoAtLeast(1, 1):
			// RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message is
			// faulty framing: the body runs to the close.
			resp.Header.Del("Transfer-Encoding")
			resp.Header.Del("Content-Length")
			b.mode = bodyUntilClose
			keep = false
		case len(te) > 0:
			if !strings.EqualFold(strings.TrimSpace(te[len(te)-1]), "chunked") || len(te) > 1 {
				return nil, false, errH1Protocol // no other coding was asked for
			}
			resp.TransferEncoding = []string{"chunked"}
			resp.Header.Del("Content-Length")
			b.mode = bodyChunked
		case len(resp.Header["Content-Length"]) > 0:
			cl := resp.Header["Content-Length"]
			n, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64)
			for _, v := range cl[1:] {
				if strings.TrimSpace(v) != strings.TrimSpace(cl[0]) {
					err = errH1Protocol
				}
			}
			if err != nil || n < 0 {
				return nil, false, errH1Protocol
			}
			resp.ContentLength = n
			b.left = n
			b.mode = bodyLength
			if n == 0 {
				b.done = true
			}
		default: // until the server closes
			b.mode = bodyUntilClose
			keep = false
		}
		c.served = true
		resp.Close = !keep
		return resp, keep, nil
	}
}

// max1xx bounds the informational (1xx) responses read before the final
// one; net/http allows 5, a server with a reason for more is rare.
const max1xx = 16

// parseStatusLine parses "HTTP/1.x NNN reason".
func parseStatusLine(line string) (*http.Response, error) {
	proto, rest, ok := strings.Cut(line, " ")
	if !ok {
		return nil, errH1Protocol
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok || major != 1 {
		return nil, errH1Protocol
	}
	code, _, _ := strings.Cut(rest, " ")
	if len(code) != 3 {
		return nil, errH1Protocol
	}
	n, err := strconv.Atoi(code)
	if err != nil || n < 100 {
		return nil, errH1Protocol
	}
	return &http.Response{Status: rest, StatusCode: n, Proto: proto, ProtoMajor: major, ProtoMinor: minor}, nil
}

// headerHas reports whether a comma-separated header holds token (any case).
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h[name] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// unexpected turns an EOF inside a response head into io.ErrUnexpectedEOF
// unless nothing at all was read (textproto reports both as io.EOF).
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// How a response body ends.
const (
	bodyLength     = iota // Content-Length bytes
	bodyChunked           // the last chunk (trailers discarded)
	bodyUntilClose        // the server's close
)

// maxTrailerBytes bounds the trailers read (and discarded) after a chunked body.
const maxTrailerBytes = 16 << 10

// h1Body is a response body. At EOF its connection goes back to the pool
// (when the response allows it); Close before EOF closes the connection.
//
// Besides Read it offers ReadSlice and Discard, as a bufio.Reader does, so
// that a stream's lines are read straight from the connection's buffer,
// chunk framing removed, without a second buffer and a copy (stream.go,
// lineSource).
type h1Body struct {
	t    *h1Transport
	c    *h1Conn
	stop func() bool // unregisters the ctx's AfterFunc
	left int64       // bodyLength: bytes still to read; bodyChunked: bytes left in the current chunk
	mode int
	keep bool // the connection may be reused at EOF
	done bool
	err  error // what Read returns once done

	crlf    bool  // bodyChunked: the CRLF after a chunk's data is still to read
	excess  int64 // bodyChunked: framing read beyond an allowance per chunk (see nextChunk)
	pending int   // bytes of c.br that the last ReadSlice returned and that are still to be discarded
}

// Read implements io.Reader.
func (b *h1Body) Read(p []byte) (int, error) {
	b.release()
	if b.done {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	switch b.mode {
	case bodyLength:
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err := b.c.br.Read(p)
		b.left -= int64(n)
		switch {
		case b.left == 0:
			b.finish(io.EOF)
			return n, io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			b.finish(err)
		}
		return n, err
	case bodyChunked:
		return b.readChunked(p)
	default:
		n, err := b.c.br.Read(p)
		if err != nil {
			b.finish(err)
		}
		return n, err
	}
}

// readChunked reads chunk data into p, across chunks while their headers
// are buffered, and returns once it has something rather than wait for
// the next chunk (as net/http's chunked reader does).
func (b *h1Body) readChunked(p []byte) (int, error) {
	br := b.c.br
	n := 0
	for n < len(p) {
		if b.left == 0 {
			if n > 0 && !b.headerBuffered() {
				break
			}
			if err := b.nextChunk(); err != nil {
				b.finish(err)
				return n, err
			}
			continue
		}
		if n > 0 && br.Buffered() == 0 {
			break // the next chunk's data has not arrived: return what is read
		}
		q := p[n:]
		if int64(len(q)) > b.left {
			q = q[:b.left]
		}
		m, err := br.Read(q)
		n += m
		b.left -= int64(m)
		if err != nil {
			err = unexpected(err)
			b.finish(err)
			return n, err
		}
	}
	return n, nil
}

// headerBuffered reports whether the CRLF ending the current chunk (if
// still unread) and the next chunk-size line are in c.br's buffer whole.
func (b *h1Body) headerBuffered() bool {
	br := b.c.br
	skip := 0
	if b.crlf {
		skip = 2
	}
	if br.Buffered() <= skip {
		return false
	}
	buf, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(buf[skip:], '\n') >= 0
}

// maxChunkLine bounds a chunk-size line, extensions included (net/http's
// limit).
const maxChunkLine = 4096

// nextChunk reads the CRLF that ends the current chunk's data, then the
// next chunk-size line, by RFC 9112 §7.1 as net/http reads it: a line
// ending in CRLF with no other CR, optional whitespace and extensions
// (discarded) after the hexadecimal size. It sets b.left to the size; at
// the last chunk it reads the trailers and returns io.EOF. Like net/http
// it refuses a sender whose framing outweighs its data: over 16 bytes of
// framing per chunk plus twice the data, 16 KiB in all.
func (b *h1Body) nextChunk() error {
	br := b.c.br
	if b.crlf {
		p, err := br.Peek(2)
		if err != nil {
			return unexpected(err)
		}
		if p[0] != '\r' || p[1] != '\n' {
			return errH1Chunked
		}
		_, _ = br.Discard(2)
		b.crlf = false
	}
	line, err := br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return errH1Chunked // a size line longer than the connection's buffer
	case err != nil:
		return unexpected(err)
	}
	if i := bytes.IndexByte(line, '\r'); i < 0 || i != len(line)-2 {
		return errH1Chunked // a bare LF, or a CR inside the line
	}
	line = line[:len(line)-2]
	if len(line) >= maxChunkLine {
		return errH1Chunked
	}
	b.excess += int64(len(line)) + 2
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	line, _, _ = bytes.Cut(line, []byte(";"))
	size, ok := parseChunkSize(line)
	if !ok {
		return errH1Chunked
	}
	if size >= 1<<62 {
		return errH1Chunked // more than any body could hold: refuse rather than overflow
	}
	b.excess = max(b.excess-16-2*int64(size), 0)
	if b.excess > 16<<10 {
		return errH1Chunked
	}
	if size == 0 {
		return b.trailers()
	}
	b.left, b.crlf = int64(size), true
	return nil
}

// parseChunkSize parses a chunk size: 1 to 16 hexadecimal digits.
func parseChunkSize(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}

// ReadSlice returns the body's next bytes up to and including delim, as
// bufio.Reader.ReadSlice does, from the connection's buffer without a
// copy: valid until the next call. When the line goes on past what is
// contiguous in the buffer (the end of a chunk, or of the bytes received
// so far) it returns the piece it has with bufio.ErrBufferFull, and the
// caller asks again for the rest. At the body's end it returns io.EOF (with
// no bytes: a piece before it came with bufio.ErrBufferFull).
func (b *h1Body) ReadSlice(delim byte) ([]byte, error) {
	b.release()
	br := b.c.br
	for !b.done {
		if b.mode == bodyChunked && b.left == 0 {
			if err := b.nextChunk(); err != nil {
				b.finish(err)
			}
			continue
		}
		if b.mode == bodyLength && b.left == 0 {
			b.finish(io.EOF)
			continue
		}
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				if b.mode != bodyUntilClose || err != io.EOF {
					err = unexpected(err)
				}
				b.finish(err)
				continue
			}
		}
		buf, _ := br.Peek(br.Buffered())
		if b.mode != bodyUntilClose && int64(len(buf)) > b.left {
			buf = buf[:b.left]
		}
		if i := bytes.IndexByte(buf, delim); i >= 0 {
			buf = buf[:i+1]
			b.take(len(buf))
			return buf, nil
		}
		b.take(len(buf))
		return buf, bufio.ErrBufferFull
	}
	return nil, b.err
}

// take marks n bytes of c.br's buffer as read: they are discarded at the
// next call, so that the slice handed out stays valid until then.
func (b *h1Body) take(n int) {
	b.pending = n
	if b.mode != bodyUntilClose {
		b.left -= int64(n)
	}
}

// release discards the bytes the last ReadSlice handed out.
func (b *h1Body) release() {
	if b.pending > 0 {
		_, _ = b.c.br.Discard(b.pending)
		b.pending = 0
	}
}

// Discard skips the body's next n bytes or more (up to the end of the
// line or piece it reaches), or up to its end; at the end it returns
// io.EOF as bufio.Reader.Discard does.
func (b *h1Body) Discard(n int) (int, error) {
	d := 0
	for d < n {
		p, err := b.ReadSlice('\n')
		d += len(p)
		if err != nil && err != bufio.ErrBufferFull {
			b.release()
			return d, err
		}
	}
	b.release()
	return d, nil
}

// trailers reads the trailer section after the last chunk, up to its
// blank line, and discards it. It returns io.EOF when it was read whole.
func (b *h1Body) trailers() error {
	read := 0
	for {
		line, err := b.c.br.ReadSlice('\n')
		read += len(line)
		if err == nil && read > maxTrailerBytes {
			err = errH1Protocol
		}
		if err != nil {
			return unexpected(err)
		}
		if len(line) <= 2 && strings.TrimRight(string(line), "\r\n") == "" {
			return io.EOF
		}
	}
}

// finish ends the body with err (io.EOF: read whole): the connection goes
// back to the pool when it can be reused, else it is closed.
func (b *h1Body) finish(err error) {
	b.release()
	b.done, b.err = true, err
	stopped := b.stop() // false: the ctx fired and may have set a deadline
	if err == io.EOF && b.keep && stopped && b.c.br.Buffered() == 0 {
		b.t.putIdle(b.c)
	} else {
		b.t.closeConn(b.c)
	}
}

// Close implements io.Closer: before EOF it closes the connection.
func (b *h1Body) Close() error {
	if !b.done {
		b.finish(errH1Closed)
	}
	return nil
}

// getConn returns a connection for a request: the newest live idle one, a
// new one when fewer than maxConns are open, else the first to be returned
// or freed while ctx lasts.
func (t *h1Transport) getConn(ctx context.Context) (c *h1Conn, wasIdle bool, idleTime time.Duration, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, false, 0, err
		}
		t.mu.Lock()
		now := time.Now()
		var stale []*h1Conn
		for len(t.idle) > 0 && now.Sub(t.idle[0].idleAt) > idleConnTimeout { // oldest first
			stale = append(stale, t.idle[0])
			t.idle[0] = nil
			t.idle = t.idle[1:]
			t.open--
		}
		if n := len(t.idle); n > 0 {
			c = t.idle[n-1]
			t.idle[n-1] = nil
			t.idle = t.idle[:n-1]
			t.mu.Unlock()
			closeAll(stale)
			if !alive(c.nc) {
				t.closeConn(c) // the server closed it while idle: take another
				continue
			}
			return c, true, now.Sub(c.idleAt), nil
		}
		if t.open < t.maxConns {
			t.open++
			t.mu.Unlock()
			closeAll(stale)
			return t.newConn(ctx)
		}
		w := &h1Waiter{ch: make(chan *h1Conn, 1)}
		t.waiters = append(t.waiters, w)
		t.mu.Unlock()
		closeAll(stale)
		select {
		case c = <-w.ch:
		case <-ctx.Done():
			t.mu.Lock()
			for i, o := range t.waiters {
				if o == w {
					t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
					t.mu.Unlock()
					return nil, false, 0, ctx.Err()
				}
			}
			t.mu.Unlock()
			// Handed something as ctx ended: pass it on.
			if c = <-w.ch; c != nil {
				t.putIdle(c)
			} else {
				t.freeSlot()
			}
			return nil, false, 0, ctx.Err()
		}
		if c == nil { // a freed slot: dial
			return t.newConn(ctx)
		}
		if !alive(c.nc) {
			t.closeConn(c)
			continue
		}
		return c, false, 0, nil
	}
}

// newConn dials a connection on a slot already counted in open.
func (t *h1Transport) newConn(ctx context.Context) (*h1Conn, bool, time.Duration, error) {
	nc, err := t.dial(ctx, "tcp", t.addr)
	if err == nil && t.https {
		tc := tls.Client(nc, t.tlsConf)
		hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = nc.Close()
		}
		nc = tc
	}
	if err != nil {
		t.freeSlot()
		return nil, false, 0, err
	}
	c := &h1Conn{nc: nc, br: bufio.NewReaderSize(nc, readBufferBytes)}
	c.tp.R = c.br
	return c, false, 0, nil
}

// putIdle hands c to the first waiter, or makes it idle.
func (t *h1Transport) putIdle(c *h1Conn) {
	t.mu.Lock()
	if w := t.popWaiter(); w != nil {
		t.mu.Unlock()
		w.ch <- c
		return
	}
	c.idleAt = time.Now()
	t.idle = append(t.idle, c)
	t.mu.Unlock()
}

// closeConn closes a connection that is not idle and frees its slot.
func (t *h1Transport) closeConn(c *h1Conn) {
	_ = c.nc.Close()
	t.freeSlot()
}

// freeSlot gives a connection's slot to the first waiter, or frees it.
func (t *h1Transport) freeSlot() {
	t.mu.Lock()
	if w := t.popWaiter(); w != nil {
		t.mu.Unlock()
		w.ch <- nil
		return
	}
	t.open--
	t.mu.Unlock()
}

// popWaiter takes the oldest waiter off the queue (nil: none); t.mu is held.
func (t *h1Transport) popWaiter() *h1Waiter {
	if len(t.waiters) == 0 {
		return nil
	}
	w := t.waiters[0]
	t.waiters[0] = nil
	t.waiters = t.waiters[1:]
	return w
}

// CloseIdleConnections closes the idle connections.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.open -= len(idle)
	t.mu.Unlock()
	closeAll(idle)
}

func closeAll(cs []*h1Conn) {
	for _, c := range cs {
		_ = c.nc.Close()
	}
}

// alive reports whether an idle connection may still be used: the
// server has neither closed it nor sent anything unasked (see peekAlive).
func alive(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	return peekAlive(nc)
}
