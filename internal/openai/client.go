package openai

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// ReplicaHeader is the response header naming the replica that answered
// (sent by surge's simulator); its value is recorded when it is a safe token.
const ReplicaHeader = "X-Surge-Replica"

// Client sends requests to one OpenAI-compatible endpoint and measures them.
// It is safe for concurrent use.
type Client struct {
	cfg    Config
	origin time.Time
	tr     roundTripper
	fresh  roundTripper // no keep-alive: replays after a reused connection failed
	h1     bool         // tr is surge's own HTTP/1.1 transport (h1.go), not net/http's
	url    *url.URL
	header http.Header // shared by all requests; never modified after New
	body   bodyTemplate
	prefix [8]byte // trace-id prefix (see TraceID)
	gw     GatewayTiming
	// grammar is the streamed responses' event grammar (from the API).
	grammar Grammar
	pool    sync.Pool // *exchange
	bodies  sync.Pool // *bodyBuf: request bodies, held only until the request is written
}

// New returns a Client for cfg (validated, zero fields defaulted). Record
// times are nanoseconds since origin, read from the monotonic clock.
func New(cfg Config, origin time.Time) (*Client, error) {
	return newClient(cfg, origin, cfg.Dial)
}

// newClient is New with an optional dial function (tests dial in-memory pipes).
func newClient(cfg Config, origin time.Time, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	base, err := url.Parse(cfg.BaseURL)
	if err != nil { // checked by Validate
		return nil, errors.New("openai: config: base URL does not parse")
	}
	endpoint := *base
	endpoint.RawPath = ""
	endpoint.Path = strings.TrimRight(base.Path, "/") + apiPath(cfg.API)

	tr, fresh, h1, err := newTransports(cfg, dial, &endpoint)
	if err != nil {
		return nil, err
	}

	h := cfg.header()
	if cfg.Stream && Generates(cfg.API) {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	body, err := newBodyTemplate(&cfg)
	if err != nil { // checked by Validate
		return nil, err
	}
	prefix := cfg.TracePrefix
	if prefix == ([8]byte{}) {
		prefix = randomPrefix()
	}
	gw, _ := ParseGatewayTiming(cfg.GatewayTiming) // checked by Validate
	return &Client{cfg: cfg, origin: origin, tr: tr, fresh: fresh, h1: h1, url: &endpoint, header: h, body: body, prefix: prefix, gw: gw, grammar: grammarOf(cfg.API)}, nil
}

// newTransports returns the transport of the measured requests and the
// one of their replays (no keep-alive), and whether they are surge's own
// (Config.Transport: auto picks it for http:// endpoints that no proxy
// applies to; https keeps net/http for HTTP/2, a proxy keeps net/http).
func newTransports(cfg Config, dial func(ctx context.Context, network, addr string) (net.Conn, error), endpoint *url.URL) (tr, fresh roundTripper, h1 bool, err error) {
	proxy, _ := http.ProxyFromEnvironment(&http.Request{URL: endpoint})
	switch cfg.Transport {
	case TransportSurge:
		if proxy != nil {
			return nil, nil, false, errors.New("openai: config: transport \"surge\" does not use proxies, and the environment's HTTP_PROXY/HTTPS_PROXY applies to the endpoint: use \"auto\" or \"go\", or NO_PROXY")
		}
		h1 = true
	case TransportGo:
	default:
		h1 = endpoint.Scheme == "http" && proxy == nil
	}
	if !h1 {
		t, err := newTransport(cfg, dial, endpoint.Scheme == "https")
		if err != nil {
			return nil, nil, false, err
		}
		f := t.Clone()
		f.DisableKeepAlives = true
		return t, f, false, nil
	}
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return nil, nil, false, err
	}
	if dial == nil {
		dial = defaultDialer().DialContext
	}
	info := endpointInfo(endpoint.Scheme, endpoint.Host)
	return newH1Transport(endpoint.Host, info, tlsConf, dial, cfg.MaxConns, true), newH1Transport(endpoint.Host, info, tlsConf, dial, cfg.MaxConns, false), true, nil
}

// ProxyApplies reports whether the environment's proxy settings
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) send requests to baseURL through a
// proxy, which surge's own transport does not use (Config.Transport).
func ProxyApplies(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	p, _ := http.ProxyFromEnvironment(&http.Request{URL: u})
	return p != nil
}

// defaultDialer is the network dialer of both transports.
func defaultDialer() *net.Dialer {
	return &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
}

// HTTP returns an HTTP client for cfg's endpoint with the client's own
// transport (TLS settings, CA, proxy from the environment, no compression)
// and the headers every request carries: Content-Type, User-Agent, the
// API key's Authorization and Config.Headers. It is for requests other
// than the measured ones (surge check's probes); the header values are
// secret and must never be logged. cfg is validated.
func HTTP(cfg Config) (*http.Client, http.Header, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	cfg = cfg.withDefaults()
	u, _ := url.Parse(cfg.BaseURL) // checked by Validate
	tr, err := newTransport(cfg, cfg.Dial, u.Scheme == "https")
	if err != nil {
		return nil, nil, err
	}
	return &http.Client{Transport: tr}, cfg.header(), nil
}

// header is the header set of every request: JSON body, surge's user
// agent, the key as the API expects it and the configured extra headers,
// which win. Messages gets an anthropic-version and the key in x-api-key,
// Anthropic's convention, and as a bearer token too: vLLM's /v1/messages
// (0.32) reads only Authorization.
func (c Config) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "surge")
	if c.API == APIMessages {
		h.Set("Anthropic-Version", AnthropicVersion)
		if c.APIKey != "" {
			h.Set("X-Api-Key", c.APIKey)
		}
	}
	if c.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.APIKey)
	}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	return h
}

// newTransport is the transport of cfg (defaults applied): its TLS
// settings and CA, the dialer (nil: the network's), one connection pool
// of MaxConns.
func newTransport(cfg Config, dial func(ctx context.Context, network, addr string) (net.Conn, error), h2 bool) (*http.Transport, error) {
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	if dial == nil {
		dial = defaultDialer().DialContext
	}
	// The write buffer holds the request head (about 400 bytes) and, when
	// they fit, the body's first bytes: net/http writes the rest of a
	// longer body straight from its own buffer, in one more write. The
	// default 4 KiB buffer would only save that one write per request, at
	// 3 KiB per connection for the whole run. The read buffer is half the
	// default: a stream that falls behind still reads about seven waiting
	// vLLM events per system call.
	tr := &http.Transport{
		WriteBufferSize:     writeBufferBytes,
		ReadBufferSize:      readBufferBytes,
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		DisableCompression:  true,
		MaxIdleConns:        cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxConns,
		MaxConnsPerHost:     cfg.MaxConns,
		IdleConnTimeout:     idleConnTimeout,
		ForceAttemptHTTP2:   h2,
	}

	return tr, nil
}

// tlsConfig is cfg's TLS configuration: TLS 1.2 or later, the extra CA
// file, the verification the user asked for.
func tlsConfig(cfg Config) (*tls.Config, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // the user asked for it
	if cfg.CACertFile != "" {
		pem, err := os.ReadFile(cfg.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("openai: ca cert: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("openai: ca cert: %s holds no PEM certificate", cfg.CACertFile)
		}
		tlsConf.RootCAs = pool
	}
	return tlsConf, nil
}

// TracePrefix is the prefix of every trace id this client sends (see TraceID).
func (c *Client) TracePrefix() [8]byte { return c.prefix }

// CloseIdle closes idle connections (call it when a run ends).
func (c *Client) CloseIdle() {
	c.tr.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// now returns nanoseconds since the origin (monotonic).
func (c *Client) now() int64 { return int64(time.Since(c.origin)) }

// exchange holds the reusable state of one attempt: request, trace hooks,
// response reader. Exchanges are pooled per Client, and one is held for
// each request in flight, so it is kept small: the line buffer br holds
// lineBufferBytes, enough for a chunk of every server measured; a longer
// line is gathered in spill, which grows with it and which putExchange lets
// go when it grew past spillKeepBytes. The request body (buf) comes from
// Client.bodies and goes back there once the request has been written, so
// a stream holds no copy of its prompt while it is read.
type exchange struct {
	buf    []byte // the request body, until the round trip returns
	body   bodyReader
	tmpl   http.Request
	trace  httptrace.ClientTrace
	connNs atomic.Int64  // GotConn time; record.None before
	reused atomic.Bool   // the latest connection had served a request before (GotConnInfo.Reused)
	byte1  atomic.Bool   // a response byte arrived (GotFirstResponseByte)
	conns  atomic.Int32  // connections handed to the request (GotConn)
	writes atomic.Int32  // request writes finished (WroteRequest)
	br     *bufio.Reader // lines of a body that is not surge's transport's (see lineSource)
	src    lineSource    // where readLine reads: br, or the h1Body itself
	spill  []byte        // a line longer than src hands out at once
	header http.Header   // the client's headers plus this attempt's traceparent and request id
	tp     []string      // header[TraceparentHeader]
	reqID  []string      // header[RequestIDHeader]
	tpBuf  [55]byte
}

// bodyBuf is a pooled request body buffer.
type bodyBuf struct{ b []byte }

// bodyReader is the request body: a bytes.Reader with a no-op Close,
// which offers surge's transport its bytes to write without a copy.
type bodyReader struct {
	bytes.Reader
	raw []byte
}

// reset makes the reader read b.
func (r *bodyReader) reset(b []byte) { r.Reader.Reset(b); r.raw = b }

// Close implements io.Closer.
func (*bodyReader) Close() error { return nil }

func (c *Client) getExchange() *exchange {
	x, _ := c.pool.Get().(*exchange)
	if x == nil {
		x = &exchange{br: bufio.NewReaderSize(nil, lineBufferBytes), header: c.header.Clone(), tp: []string{""}, reqID: []string{""}}
		x.header[TraceparentHeader] = x.tp
		x.header[RequestIDHeader] = x.reqID
		x.trace = httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) {
				x.connNs.Store(c.now())
				x.reused.Store(info.Reused)
				x.conns.Add(1)
			},
			GotFirstResponseByte: func() { x.byte1.Store(true) },
			WroteRequest:         func(httptrace.WroteRequestInfo) { x.writes.Add(1) },
		}
		x.tmpl = http.Request{
			Method:     http.MethodPost,
			URL:        c.url,
			Proto:      "HTTP/1.1",
			ProtoMajor: 1,
			ProtoMinor: 1,
			Header:     x.header,
			Host:       c.url.Host,
			Body:       &x.body,
			GetBody: func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(x.buf)), nil
			},
		}
	}
	x.connNs.Store(record.None)
	x.reused.Store(false)
	x.byte1.Store(false)
	x.conns.Store(0)
	x.writes.Store(0)
	return x
}

// putExchange returns x to the pool unless the transport may still read its
// request body (an early response while the body was being written).
func (c *Client) putExchange(x *exchange) {
	x.br.Reset(nil)
	x.src = nil
	if x.writes.Load() < x.conns.Load() {
		return
	}
	if cap(x.spill) > spillKeepBytes {
		x.spill = nil
	}
	c.pool.Put(x)
}

// takeBody builds req's body in a pooled buffer and sets it as x's request body.
func (c *Client) takeBody(x *exchange, req *workload.Request) *bodyBuf {
	bb, _ := c.bodies.Get().(*bodyBuf)
	if bb == nil {
		bb = &bodyBuf{}
	}
	x.buf = c.body.appendBody(bb.b[:0], req)
	x.body.reset(x.buf)
	x.tmpl.ContentLength = int64(len(x.buf))
	return bb
}

// releaseBody detaches the request body from x once the round trip has
// returned, and pools its buffer unless the transport may still be writing
// it (an early response while the body was being written: then it is left
// to the garbage collector).
func (c *Client) releaseBody(x *exchange, bb *bodyBuf) {
	buf := x.buf
	x.buf = nil
	if x.writes.Load() < x.conns.Load() {
		return // putExchange will not pool x either: x.body is the transport's
	}
	x.body.reset(nil)
	bb.b = buf
	c.bodies.Put(bb)
}

// Do sends req, waits for the whole response and fills rec (created by the
// caller with record.New): times, status, outcome, error class, token counts,
// ITL and TPOT, attempts. It does not set rec.Good. Do returns when the
// exchange ended, the per-request timeout expired or ctx was cancelled.
func (c *Client) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	rec.MaxTokens, rec.Images = req.MaxTokens, len(req.Images)
	if !Generates(c.cfg.API) {
		rec.MaxTokens, rec.Inputs = 0, inputsOf(req)
	}
	rec.Attempts, rec.ConnRetries = 0, 0
	if ctx.Err() != nil {
		rec.Outcome = record.Cancelled
		rec.Error = "cancelled before send"
		rec.DoneNs = c.now()
		return
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	deadline := c.now() + int64(c.cfg.Timeout)
	for {
		rec.Attempts++
		retry, hint := c.attempt(ctx, rctx, req, rec)
		if !retry || rec.Attempts > c.cfg.Retries {
			return
		}
		wait, ok := c.retryWait(rec.Attempts, hint, deadline-c.now())
		if !ok {
			return
		}
		if !sleepCtx(rctx, wait) {
			c.interrupted(ctx, rec, "while waiting to retry")
			rec.DoneNs = c.now()
			return
		}
	}
}

// baseBackoff is the first retry's backoff when the server gives no hint;
// it doubles with every attempt, up to RetryMaxWait.
const baseBackoff = 250 * time.Millisecond

// retryWait returns how long to wait before retry number n (1-based) and
// whether to retry at all. A Retry-After hint (ns, or record.None) is
// honoured: the wait is the hint plus up to 10% jitter, never less; a hint
// over RetryMaxWait ends retrying. Without a hint the wait is a jittered
// exponential backoff in [b/2, b], b = 250 ms × 2^(n−1) capped at
// RetryMaxWait. No retry is made when the wait would reach the deadline.
func (c *Client) retryWait(n int, hint, remaining int64) (time.Duration, bool) {
	maxWait := int64(c.cfg.RetryMaxWait)
	var d int64
	if hint != record.None {
		if hint > maxWait {
			return 0, false
		}
		d = hint + rand.Int64N(hint/10+1)
	} else {
		b := int64(baseBackoff) << min(n-1, 20)
		b = min(b, maxWait)
		d = b/2 + rand.Int64N(b/2+1)
	}
	if d >= remaining {
		return 0, false
	}
	return time.Duration(d), true
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// interrupted classifies an exchange stopped by a context: the caller's ctx
// (cancelled) or the per-request timeout (timeout). stage completes the
// error detail, e.g. "before headers".
func (c *Client) interrupted(parent context.Context, rec *record.Record, stage string) {
	if parent.Err() != nil {
		rec.Outcome = record.Cancelled
		rec.Error = "cancelled " + stage
		return
	}
	rec.Outcome = record.Timeout
	rec.Error = "timeout " + stage
}

// attempt makes one HTTP exchange and records it in rec. It reports whether
// the failure is worth a retry and the Retry-After hint (ns or record.None).
func (c *Client) attempt(parent, ctx context.Context, req *workload.Request, rec *record.Record) (retry bool, hint int64) {
	x := c.getExchange()
	defer c.putExchange(x)
	bb := c.takeBody(x, req)
	rec.RequestBytes = len(x.buf)
	trace := &x.trace
	if httptrace.ContextClientTrace(ctx) != nil {
		t := x.trace // WithClientTrace composes hooks into trace: keep the pooled one pristine
		trace = &t
	}
	hreq := x.tmpl.WithContext(httptrace.WithClientTrace(ctx, trace))

	rec.ConnNs, rec.HeadersNs, rec.FirstChunkNs, rec.FirstTokenNs, rec.FirstTextNs, rec.DoneNs = record.None, record.None, record.None, record.None, record.None, record.None
	rec.ITLMaxNs, rec.TPOTNs, rec.SmoothNs = record.None, record.None, record.None
	rec.Status, rec.Error, rec.Replica, rec.Chunks = 0, "", "", 0
	rec.RateLimit, rec.ServerTiming = record.NoRateLimit, rec.ServerTiming[:0]
	rec.PromptTokens, rec.OutputTokens, rec.UsageFromServer, rec.ReasoningTokens, rec.CachedTokens = 0, 0, false, 0, 0

	// The trace context: one allocation (the traceparent string); the
	// record's trace id is a substring of it.
	tp := string(appendTraceparent(x.tpBuf[:0], TraceID(c.prefix, rec.Seq), spanID(rec.Seq, rec.Attempts)))
	x.tp[0], x.reqID[0] = tp, rec.ID
	rec.TraceID = tp[3:35]

	sent := c.now()
	if rec.Attempts == 1 {
		rec.SentNs = sent
	}
	resp, err := c.tr.RoundTrip(hreq)
	if err != nil && x.reused.Load() && !x.byte1.Load() && parent.Err() == nil && ctx.Err() == nil {
		// A kept-alive connection the server had already closed (llama.cpp's
		// llama-server advertises keep-alive and closes after every streamed
		// response): the request never reached a live server, and net/http
		// does not replay a POST it has written. Replay it once on a new
		// connection; SentNs stays the first send, so the wait is latency.
		rec.ConnRetries++
		resp, err = c.replay(x, hreq)
	}
	c.releaseBody(x, bb)
	now := c.now()
	rec.ConnNs = x.connNs.Load()
	if err != nil {
		rec.DoneNs = now
		if parent.Err() != nil || ctx.Err() != nil {
			stage := "before headers"
			if rec.ConnNs == record.None {
				stage = "before connection"
			}
			c.interrupted(parent, rec, stage)
			return false, record.None
		}
		rec.Outcome = record.ConnError
		rec.Error = connErrorDetail(err)
		return true, record.None
	}
	rec.HeadersNs = now
	rec.Status = resp.StatusCode
	applyTGIHeaders(rec, resp.Header)
	if v := resp.Header[c.cfg.ReplicaHeader]; len(v) > 0 {
		rec.Replica = c.safeToken(v[0], req.Prompt)
	}
	rec.RateLimit = parseRateLimit(resp.Header, time.Now())
	rec.ServerTiming = c.parseServerTiming(rec.ServerTiming, resp.Header)
	if len(rec.ServerTiming) == 0 {
		rec.ServerTiming = nil
	}
	c.gw.apply(rec, resp.Header)
	hint = record.None
	if v := resp.Header["Retry-After"]; len(v) > 0 {
		if d, ok := parseRetryAfter(v[0], time.Now()); ok {
			hint = int64(d)
			rec.RetryAfterNs = hint
		}
	}
	if resp.StatusCode/100 != 2 {
		c.httpError(x, resp, req, rec)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true, hint
		}
		return false, hint
	}
	if c.cfg.Stream && Generates(c.cfg.API) {
		c.readStream(parent, ctx, x, resp, req, rec)
	} else {
		c.readFull(parent, ctx, resp, req, rec)
	}
	return false, hint
}

// replay sends hreq again on a connection of its own (the fresh transport
// keeps none alive), with a new reader over the same body bytes: the first
// round trip's writer may still hold the pooled one.
func (c *Client) replay(x *exchange, hreq *http.Request) (*http.Response, error) {
	r := hreq.WithContext(hreq.Context())
	rb := &bodyReader{}
	rb.reset(x.buf)
	r.Body = rb
	return c.fresh.RoundTrip(r)
}

// httpError records a non-2xx response: rate_limited for 429, http_error
// otherwise, with the server's error type when it is a safe token.
func (c *Client) httpError(x *exchange, resp *http.Response, req *workload.Request, rec *record.Record) {
	defer resp.Body.Close()
	if cap(x.spill) < maxErrorBodyBytes {
		x.spill = make([]byte, maxErrorBodyBytes)
	}
	buf := x.spill[:maxErrorBodyBytes]
	n, _ := io.ReadFull(resp.Body, buf)
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrainBytes) // lets the connection be reused
	rec.DoneNs = c.now()
	rec.Outcome = record.HTTPError
	if resp.StatusCode == http.StatusTooManyRequests {
		rec.Outcome = record.RateLimited
	}
	rec.Error = "status " + strconv.Itoa(resp.StatusCode)
	if ch, err := ScanChunk(buf[:n]); err == nil && ch.Error {
		if t := c.errorToken(string(ch.ErrorType), req.Prompt); t != "" {
			rec.Error += " (" + t + ")"
		}
	}
}

// readFull reads a non-streamed response: the whole body is the first (and
// only) chunk, so FirstChunkNs = FirstTokenNs = DoneNs.
func (c *Client) readFull(parent, ctx context.Context, resp *http.Response, req *workload.Request, rec *record.Record) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFullBodyBytes+1))
	now := c.now()
	rec.DoneNs = now
	if err != nil {
		c.readFailure(parent, ctx, err, rec)
		return
	}
	switch {
	case len(body) == 0:
		rec.Outcome, rec.Error = record.InvalidResponse, "empty body"
		return
	case len(body) > maxFullBodyBytes:
		rec.Outcome, rec.Error = record.InvalidResponse, "body over 16 MiB"
		return
	}
	var (
		a      answer
		detail string
	)
	switch {
	case !Generates(c.cfg.API):
		a, detail = parsePooledBody(body, c.cfg.API, inputsOf(req))
	case c.grammar == GrammarResponses:
		a, detail = parseResponsesBody(body)
	case c.grammar == GrammarMessages:
		a, detail = parseMessagesBody(body)
	default:
		a, detail = parseChatBody(body)
	}
	if detail != "" {
		rec.Outcome, rec.Error = record.InvalidResponse, detail
		return
	}
	rec.FirstChunkNs = now
	if a.content {
		rec.FirstTokenNs = now
		rec.Chunks = 1
	}
	if a.text {
		rec.FirstTextNs = now
	}
	if a.usage {
		rec.PromptTokens, rec.OutputTokens, rec.UsageFromServer = max(a.prompt, 0), max(a.output, 0), true
		rec.CachedTokens, rec.ReasoningTokens = max(a.cached, 0), max(a.reasoning, 0)
	}
	if a.timings.Present {
		applyTimings(rec, a.timings)
	}
	rec.Outcome = record.OK
	setTPOT(rec)
}

// answer is what a non-streamed body says: whether it holds content of
// any kind and answer text, its usage, and llama.cpp's timings.
type answer struct {
	content, text, usage              bool
	prompt, output, cached, reasoning int
	timings                           Timings
}

// parseChatBody reads a chat or completions body; detail names what is
// wrong with it ("" when nothing is).
func parseChatBody(body []byte) (a answer, detail string) {
	var r struct {
		Choices []struct {
			Message *struct {
				Content          *string           `json:"content"`
				ReasoningContent *string           `json:"reasoning_content"`
				Reasoning        *string           `json:"reasoning"`
				ToolCalls        []json.RawMessage `json:"tool_calls"`
				FunctionCall     map[string]any    `json:"function_call"`
			} `json:"message"`
			Text *string `json:"text"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CompletionTokensDetails *struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
		Error   json.RawMessage `json:"error"`
		Timings *struct {
			PromptMs    *float64 `json:"prompt_ms"`
			PredictedMs *float64 `json:"predicted_ms"`
			CacheN      *int     `json:"cache_n"`
		} `json:"timings"`
	}
	switch {
	case json.Unmarshal(body, &r) != nil:
		return a, "invalid JSON"
	case len(r.Error) > 0 && string(r.Error) != "null":
		return a, "error object in body"
	case len(r.Choices) == 0:
		return a, "no choices"
	}
	for _, ch := range r.Choices {
		if ch.Text != nil && *ch.Text != "" {
			a.content, a.text = true, true
		}
		if m := ch.Message; m != nil && m.Content != nil && *m.Content != "" {
			a.text = true
		}
		if m := ch.Message; m != nil && (m.Content != nil && *m.Content != "" ||
			m.ReasoningContent != nil && *m.ReasoningContent != "" ||
			m.Reasoning != nil && *m.Reasoning != "" || len(m.ToolCalls) > 0 || m.FunctionCall != nil) {
			a.content = true
		}
	}
	if u := r.Usage; u != nil {
		a.usage, a.prompt, a.output = true, u.PromptTokens, u.CompletionTokens
		if d := u.PromptTokensDetails; d != nil {
			a.cached = d.CachedTokens
		}
		if d := u.CompletionTokensDetails; d != nil {
			a.reasoning = d.ReasoningTokens
		}
	}
	if t := r.Timings; t != nil {
		a.timings = Timings{Present: true, PromptMs: -1, PredictedMs: -1, CacheN: -1}
		if t.PromptMs != nil {
			a.timings.PromptMs = *t.PromptMs
		}
		if t.PredictedMs != nil {
			a.timings.PredictedMs = *t.PredictedMs
		}
		if t.CacheN != nil {
			a.timings.CacheN = *t.CacheN
		}
	}
	return a, ""
}

// inputsOf is the number of inputs an embeddings or rerank request
// carries: its texts or documents (an embeddings request without them
// sends its prompt).
func inputsOf(req *workload.Request) int {
	if req.Inputs == nil {
		return 1
	}
	return len(req.Inputs)
}

// parsePooledBody reads an embeddings or rerank answer for a request of
// inputs texts (documents): one embedding per input, all of one length;
// a result per document at most (a server may return its top n). The
// answer is "content" as a whole: no tokens are generated.
func parsePooledBody(body []byte, api string, inputs int) (a answer, detail string) {
	list := kData
	if api == APIRerank {
		list = kResults
	}
	p, err := scanPooled(body, list)
	switch {
	case err == errNotPooled && api == APIRerank:
		return a, "no results"
	case err == errNotPooled:
		return a, "no data"
	case err != nil:
		return a, "invalid JSON"
	case p.errorValue:
		return a, "error object in body"
	case api == APIEmbeddings && p.items != inputs:
		return a, strconv.Itoa(p.items) + " embeddings for " + strconv.Itoa(inputs) + " inputs"
	case api == APIEmbeddings && (p.mixed || p.dim == 0):
		return a, "embeddings of different lengths"
	case api == APIRerank && p.items > inputs:
		return a, strconv.Itoa(p.items) + " results for " + strconv.Itoa(inputs) + " documents"
	}
	a.content, a.text = p.items > 0, p.items > 0
	a.usage, a.prompt = p.usage, p.prompt
	return a, ""
}

// parseResponsesBody reads a Responses API response object: its output
// items (message text, reasoning, function calls) and its usage.
func parseResponsesBody(body []byte) (a answer, detail string) {
	var r struct {
		Object string          `json:"object"`
		Error  json.RawMessage `json:"error"`
		Output []struct {
			Type      string `json:"type"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		} `json:"output"`
		Usage *struct {
			InputTokens        int `json:"input_tokens"`
			OutputTokens       int `json:"output_tokens"`
			InputTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokensDetails *struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	switch {
	case json.Unmarshal(body, &r) != nil:
		return a, "invalid JSON"
	case len(r.Error) > 0 && string(r.Error) != "null":
		return a, "error object in body"
	case r.Object != "response":
		return a, "not a response object"
	}
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				if p.Text != "" {
					a.content, a.text = true, true
				}
			}
		case "reasoning":
			for _, p := range it.Content {
				a.content = a.content || p.Text != ""
			}
			for _, p := range it.Summary {
				a.content = a.content || p.Text != ""
			}
		case "function_call":
			a.content = true
		}
	}
	if u := r.Usage; u != nil {
		a.usage, a.prompt, a.output = true, u.InputTokens, u.OutputTokens
		if d := u.InputTokensDetails; d != nil {
			a.cached = d.CachedTokens
		}
		if d := u.OutputTokensDetails; d != nil {
			a.reasoning = d.ReasoningTokens
		}
	}
	return a, ""
}

// parseMessagesBody reads a Messages API message: its content blocks
// (text, thinking, tool_use) and its usage.
func parseMessagesBody(body []byte) (a answer, detail string) {
	var r struct {
		Type    string `json:"type"`
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		} `json:"content"`
		Usage *struct {
			InputTokens              int `json:"input_tokens"`
			OutputTokens             int `json:"output_tokens"`
			CacheReadInputTokens     int `json:"cache_read_input_tokens"`
			CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	switch {
	case json.Unmarshal(body, &r) != nil:
		return a, "invalid JSON"
	case r.Type == "error":
		return a, "error object in body"
	case r.Type != "message":
		return a, "not a message object"
	}
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				a.content, a.text = true, true
			}
		case "thinking":
			a.content = a.content || b.Thinking != ""
		case "tool_use":
			a.content = true
		}
	}
	if u := r.Usage; u != nil {
		a.usage = true
		a.prompt = max(u.InputTokens, 0) + max(u.CacheReadInputTokens, 0) + max(u.CacheCreationInputTokens, 0)
		a.output, a.cached = u.OutputTokens, u.CacheReadInputTokens
	}
	return a, ""
}

// setTPOT sets TPOT = (done − first token) / (output tokens − 1) when there
// are at least two output tokens and a first token.
func setTPOT(rec *record.Record) {
	if rec.OutputTokens >= 2 && rec.FirstTokenNs != record.None && rec.DoneNs != record.None {
		rec.TPOTNs = (rec.DoneNs - rec.FirstTokenNs) / int64(rec.OutputTokens-1)
	}
}

// readFailure classifies an error while reading a response body.
func (c *Client) readFailure(parent, ctx context.Context, err error, rec *record.Record) {
	after := "after " + strconv.Itoa(rec.Chunks) + " chunks"
	if parent.Err() != nil || ctx.Err() != nil {
		c.interrupted(parent, rec, after)
		return
	}
	rec.Outcome = record.StreamError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		rec.Error = "unexpected EOF " + after
	case errors.Is(err, errH1Chunked):
		rec.Error = "malformed chunked encoding " + after
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		rec.Error = "connection reset " + after
	default:
		rec.Error = "read error " + after
	}
}

// connErrorDetail names the class of a transport error before headers,
// without its text (which can quote addresses or server data).
func connErrorDetail(err error) string {
	var (
		dnsErr     *net.DNSError
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset before headers"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "network unreachable"
	case errors.As(err, &dnsErr):
		return "dns lookup failed"
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return "tls certificate rejected"
	case errors.As(err, &recordErr), errors.As(err, &alertErr):
		return "tls handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before headers"
	case errors.Is(err, errH1Protocol):
		return "malformed HTTP response"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "connect timeout"
	}
	return "transport error"
}

// maxTokenLen bounds server-provided strings kept in a record.
const maxTokenLen = 64

// safeToken returns s when it is a short token ([A-Za-z0-9_.:/+-], at most
// maxTokenLen bytes) that neither holds nor is part of the API key or the
// prompt; otherwise "". It guards what a server can make us record (the
// replica, a media type).
func (c *Client) safeToken(s, prompt string) string {
	return c.token(s, prompt, maxTokenLen, "_.:/+-")
}

// errorToken is safeToken for a server's error type or code, which must be
// an identifier or a number ([A-Za-z0-9_], at most 40 bytes): no spaces or
// hyphens, so neither prose from the prompt nor a typical key fits.
func (c *Client) errorToken(s, prompt string) string {
	return c.token(s, prompt, 40, "_")
}

func (c *Client) token(s, prompt string, maxLen int, punct string) string {
	if s == "" || len(s) > maxLen {
		return ""
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte(punct, ch) >= 0 {
			continue
		}
		return ""
	}
	if overlaps(s, c.cfg.APIKey) || overlaps(s, prompt) {
		return ""
	}
	return s
}

// overlaps reports whether s contains secret or is a part (4 bytes or more) of it.
func overlaps(s, secret string) bool {
	if secret == "" {
		return false
	}
	return strings.Contains(s, secret) || len(s) >= 4 && strings.Contains(secret, s)
}

// maxRetryAfter bounds a Retry-After hint.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter parses a Retry-After value: delay seconds (a decimal
// fraction is accepted) or an HTTP date, relative to now. Past dates give 0.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	numeric := true
	for i := 0; i < len(v); i++ {
		if (v[i] < '0' || v[i] > '9') && v[i] != '.' {
			numeric = false
			break
		}
	}
	if numeric {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		return min(time.Duration(min(secs, maxRetryAfter.Seconds())*1e9), maxRetryAfter), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}
