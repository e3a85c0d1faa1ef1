package openai

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
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
			b.r = c.br
			keep = false
		case len(te) > 0:
			if !strings.EqualFold(strings.TrimSpace(te[len(te)-1]), "chunked") || len(te) > 1 {
				return nil, false, errH1Protocol // no other coding was asked for
			}
			resp.TransferEncoding = []string{"chunked"}
			resp.Header.Del("Content-Length")
			b.r = httputil.NewChunkedReader(c.br)
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
			b.r = c.br
			if n == 0 {
				b.done = true
			}
		default: // until the server closes
			b.mode = bodyUntilClose
			b.r = c.br
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
type h1Body struct {
	t    *h1Transport
	c    *h1Conn
	r    io.Reader
	stop func() bool // unregisters the ctx's AfterFunc
	left int64       // bodyLength: bytes still to read
	mode int
	keep bool // the connection may be reused at EOF
	done bool
	err  error // what Read returns once done
}

// Read implements io.Reader.
func (b *h1Body) Read(p []byte) (int, error) {
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
		n, err := b.r.Read(p)
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
		n, err := b.r.Read(p)
		if err == io.EOF {
			err = b.trailers()
		}
		if err != nil {
			b.finish(err)
		}
		return n, err
	default:
		n, err := b.r.Read(p)
		if err != nil {
			b.finish(err)
		}
		return n, err
	}
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
	b.done, b.err = true, err
	stopped := b.stop() // false: the ctx fired and may have set a deadline
	if err == io.EOF && b.keep && stopped && b.c.br.Buffered() == 0 {
		b.t.putIdle(b.c)
	} else {
		b.t.closeConn(b.c)
	}
	b.r = nil
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
