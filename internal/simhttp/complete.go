package simhttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// stream is the sim.Observer of one request. Its callbacks run on the
// goroutine that holds the cluster lock (the driver, or a handler
// submitting or cancelling); they never block: they publish the token
// total and the result through atomics and signal the handler through a
// 1-buffered channel, so several signals coalesce into one wake-up.
type stream struct {
	m         *metrics
	submitted time.Duration // sim time of the submit

	tokens   atomic.Int64 // latest token total
	wait     atomic.Int64 // nanoseconds from submit to admission (Scheduled)
	res      sim.Result   // valid once finished is true
	finished atomic.Bool
	notify   chan struct{}

	spans         *spanExporter // nil: no span
	origin        time.Time     // wall time of sim time 0
	trace, parent []byte        // from the request's traceparent
}

var _ sim.Observer = (*stream)(nil)

func newStream(m *metrics) *stream {
	return &stream{m: m, notify: make(chan struct{}, 1)}
}

func (st *stream) signal() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// Scheduled implements sim.Observer: it notes the time spent waiting (the
// metric's queue time is observed from the result, once per finished
// request).
func (st *stream) Scheduled(now time.Duration) { st.wait.Store(int64(now - st.submitted)) }

// queued is how long the request waited before it entered a running batch
// (0 before that).
func (st *stream) queued() time.Duration { return time.Duration(st.wait.Load()) }

// Tokens implements sim.Observer.
func (st *stream) Tokens(now time.Duration, total int) {
	if total == 1 {
		st.m.ttft.Observe((now - st.submitted).Seconds())
	}
	st.tokens.Store(int64(total))
	st.signal()
}

// Finished implements sim.Observer.
func (st *stream) Finished(now time.Duration, res sim.Result) {
	st.res = res
	st.m.queueTime.Observe(res.QueueTime.Seconds())
	st.m.e2e.Observe((now - st.submitted).Seconds())
	st.tokens.Store(int64(res.OutputTokens))
	if st.spans != nil {
		st.spans.add(spanRecord{traceID: st.trace, parent: st.parent, start: st.origin.Add(res.ArrivedAt), end: st.origin.Add(now), res: res, doneAt: now})
	}
	st.finished.Store(true)
	st.signal()
}

// exchange is the state of one request on its handler.
type exchange struct {
	s      *Server
	w      http.ResponseWriter
	ctx    context.Context
	p      parsedRequest
	ticket sim.Ticket
	st     *stream
	ans    *answer // nil: plain text
	// truncate: the truncate-on-overload quirk is on for this stream; it
	// cuts it short if it queued (waited more than queuedSteps steps).
	truncate bool
	enc      streamEncoder // nil for prefill-only work
	buf      *[]byte       // pooled write buffer
	start    time.Time     // arrival of the request
	status   int           // status sent, for the log line
	released time.Time     // when the gateway let the request through (with a gateway)
}

// serveRequest answers one request of API a: it reads and checks it,
// submits it to the cluster, and sends the answer as the engine
// generates it, streamed or in one body (prefill-only work: once its
// prefill is done).
func (s *Server) serveRequest(w http.ResponseWriter, r *http.Request, a api) {
	start := time.Now()
	p, blocks, explicitMax, ok := s.readRequest(w, r, a, start)
	if !ok {
		return
	}
	st := s.newRequestStream(r)
	req := sim.Request{PromptTokens: p.promptTokens, Blocks: blocks, PrefillOnly: a.prefillOnly()}
	var ans *answer
	if !req.PrefillOnly {
		req.MaxTokens, req.IgnoreEOS, ans = s.plan(p, explicitMax)
	}
	t, released, ok := s.submit(w, r, req, st, p, start)
	if !ok {
		return
	}
	x := &exchange{
		s: s, w: w, ctx: r.Context(), p: p, ticket: t, st: st, ans: ans,
		truncate: s.quirks.truncateOnOverload && p.stream,
		buf:      s.bufs.Get().(*[]byte), start: start, released: released,
	}
	defer func() {
		*x.buf = (*x.buf)[:0]
		s.bufs.Put(x.buf)
		s.logRequest(a, t.ID, x.status, t.Replica, p, int(st.tokens.Load()), start)
	}()
	if a.prefillOnly() {
		x.unary(s.poolEncoder(p, t))
		return
	}
	x.enc = s.newStreamEncoder(p, t, ans)
	if p.stream {
		x.stream()
	} else {
		x.unary(x.enc)
	}
}

// submit lets req through the gateway (with one) and submits it to the
// cluster. On a refusal, or a fault answered at once (500, 503), it
// answers the request itself and returns ok false; otherwise the ticket
// and when the gateway released the request.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, req sim.Request, st *stream, p parsedRequest, start time.Time) (t sim.Ticket, released time.Time, ok bool) {
	a := p.api
	s.mu.Lock()
	now := s.now()
	if s.gateways != nil && s.cluster.Config().CheckRequest(req) == nil {
		adm := s.gateways.admit(r, now, req)
		s.writeQuota(w.Header(), &adm)
		if adm.Refused {
			s.mu.Unlock()
			s.logRequest(a, 0, http.StatusTooManyRequests, -1, p, 0, start)
			a.writeError(w, gatewayRefusal(&adm))
			return t, released, false
		}
		s.gateways.announceWait(w.Header(), adm.Release-now)
		if adm.Release > now {
			s.mu.Unlock()
			if !s.holdAtGateway(r.Context(), adm.Release) {
				s.logRequest(a, 0, 0, -1, p, 0, start) // the client went away while it waited
				return t, released, false
			}
			s.mu.Lock()
			now = s.now()
		}
	}
	released = time.Now()
	st.submitted = now
	t, err := s.cluster.Submit(now, req, st)
	s.mu.Unlock()
	if err != nil {
		s.refuse(w, t, err, p, start)
		return t, released, false
	}
	s.kick()
	w.Header().Set(ReplicaHeader, replicaName(t.Replica))
	if s.serveErrorFault(w, t, p, start) {
		return t, released, false
	}
	return t, released, true
}

// newStreamEncoder is the encoder of a generation's answer in the shape
// of its API.
func (s *Server) newStreamEncoder(p parsedRequest, t sim.Ticket, ans *answer) streamEncoder {
	id, created := strconv.FormatUint(t.ID, 16), time.Now().Unix()
	switch p.api {
	case apiResponses:
		return newResponsesEncoder(id, created, s.model, ans, s.thinking(p.api))
	case apiMessages:
		return newMessagesEncoder(id, s.model, p.promptTokens, ans, s.thinking(p.api), !s.quirks.noUsage)
	}
	prefix := "cmpl-"
	if p.api == apiChat {
		prefix = "chatcmpl-"
	}
	e := newEncoder(p.api == apiChat, prefix+id, created, s.model)
	if ans != nil {
		e.ans, e.seq = ans, ans.seq
	}
	e.includeUsage, e.timings = p.includeUsage, s.timings
	return e
}

// announceUpstream writes the gateway's upstream time as the headers go
// out (with a gateway in front).
func (x *exchange) announceUpstream() {
	if g := x.s.gateways; g != nil {
		g.announceUpstream(x.w.Header(), time.Since(x.released))
	}
}

// readRequest reads, decodes and checks a request of API a: the
// request, its prompt's prefix-cache block hashes (with a prefix cache),
// and whether it set max_tokens. On a bad request it answers the error
// itself and returns ok false.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, a api, start time.Time) (p parsedRequest, blocks []uint64, explicitMax, ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		a.writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "MethodNotAllowedError", message: "method " + r.Method + " not allowed; use POST"})
		return p, nil, false, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			a.writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "BadRequestError",
				message: "request body larger than " + strconv.Itoa(MaxBodyBytes) + " bytes"})
			return p, nil, false, false
		}
		a.writeError(w, badRequest("", "reading the request body failed"))
		return p, nil, false, false
	}
	var h *sim.PrefixHasher
	if s.prefix.PrefixCache() && !a.prefillOnly() {
		h = s.prefix.NewPrefixHasher(nil)
	}
	p, aerr := decodeAPI(a, body, s.tok, h, s.embedDims)
	if h != nil {
		blocks = h.Hashes
	}
	explicitMax = p.maxTokens != 0
	if aerr == nil {
		aerr = p.validate(s.model, s.maxModelLen)
	}
	if aerr != nil {
		s.logRequest(a, 0, aerr.status, -1, p, 0, start)
		a.writeError(w, aerr)
		return p, nil, false, false
	}
	return p, blocks, explicitMax, true
}

// decodeAPI decodes a request body of API a (the prefix hasher h and
// the embedding dimensions dims where they apply).
func decodeAPI(a api, body []byte, tok textTokens, h *sim.PrefixHasher, dims int) (parsedRequest, *apiError) {
	switch a {
	case apiResponses:
		return decodeResponses(body, tok, h)
	case apiMessages:
		return decodeMessages(body, tok, h)
	case apiEmbeddings:
		return decodeEmbeddings(body, tok, dims)
	case apiRerank:
		return decodeRerank(body, tok)
	}
	return decodeRequestHashed(body, a == apiChat, tok, h)
}

// newRequestStream is the observer of a request, with its trace when the
// server exports spans.
func (s *Server) newRequestStream(r *http.Request) *stream {
	st := newStream(s.metrics)
	if s.spans != nil {
		st.spans, st.origin = s.spans, s.origin
		var ok bool
		if st.trace, st.parent, ok = parseTraceparent(r.Header.Get("Traceparent")); !ok {
			st.trace = newTraceID() // vLLM starts a trace of its own
		}
	}
	return st
}

// refuse answers a request the cluster did not accept (err from Submit,
// t its ticket), naming the replica when that replica's admission control
// refused it.
func (s *Server) refuse(w http.ResponseWriter, t sim.Ticket, err error, p parsedRequest, start time.Time) {
	aerr := submitError(err)
	if s.quirks.noRetryAfter {
		aerr.retryAfter = 0
	}
	replica := -1
	if errors.Is(err, sim.ErrQueueFull) { // refused by this replica's admission control
		replica = t.Replica
		w.Header().Set(ReplicaHeader, replicaName(t.Replica))
	}
	s.logRequest(p.api, t.ID, aerr.status, replica, p, 0, start)
	p.api.writeError(w, aerr)
}

// serveErrorFault answers the request with its fault's error when the
// ticket's fault is a simulated 500 or 503; false for any other.
func (s *Server) serveErrorFault(w http.ResponseWriter, t sim.Ticket, p parsedRequest, start time.Time) bool {
	switch t.Fault.Kind {
	case sim.Fault500:
		s.logRequest(p.api, t.ID, http.StatusInternalServerError, t.Replica, p, 0, start)
		p.api.writeError(w, &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", message: "simulated internal server error"})
		return true
	case sim.Fault503:
		s.logRequest(p.api, t.ID, http.StatusServiceUnavailable, t.Replica, p, 0, start)
		p.api.writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "ServiceUnavailableError", message: "simulated service unavailable"})
		return true
	}
	return false
}

// plan decides the answer of p (nil: plain text) and the engine's
// bound: max_tokens and ignore_eos as the engine sees them. A stop string
// or a JSON answer decides the length itself: the engine generates
// exactly the tokens the answer needs (within max_tokens for JSON, which
// a short max_tokens cuts off as on real engines). explicitMax tells
// whether the client set max_tokens (the ignore-max-tokens quirk then
// generates past it).
func (s *Server) plan(p parsedRequest, explicitMax bool) (maxTokens int, ignoreEOS bool, ans *answer) {
	maxTokens, ignoreEOS = p.maxTokens, p.ignoreEOS
	limit := maxTokens
	if s.quirks.ignoreMaxTokens && explicitMax {
		limit = min(max(2*maxTokens, maxTokens+8), s.maxModelLen-p.promptTokens)
		maxTokens, ignoreEOS = limit, true
	}
	if p.shape == nil {
		return maxTokens, ignoreEOS, nil
	}
	think := s.thinking(p.api)
	// A stop string is looked for as far as the engine will generate:
	// past max_tokens too when ignore-max-tokens is on, so that only
	// max_tokens is ignored.
	a, bound := planAnswer(p.shape, p.api.templated(), limit-think, s.quirks.ignoreStop, s.quirks.badToolArgs, s.quirks.schemaViolations, s.instances)
	switch {
	case a.json():
		maxTokens, ignoreEOS = max(min(think+bound, limit), 1), true
	case bound > 0:
		maxTokens, ignoreEOS = think+bound, true
	}
	return maxTokens, ignoreEOS, &a
}

// submitError maps a Submit error to the answer: 429 with a retry hint when
// admission control is full, 400 otherwise (the model refused the request).
func submitError(err error) *apiError {
	var qf *sim.QueueFullError
	if errors.As(err, &qf) {
		return &apiError{status: http.StatusTooManyRequests, typ: "RateLimitError",
			message: "the server is overloaded: waiting queue full", retryAfter: retryAfterSeconds(qf.RetryAfter)}
	}
	if errors.Is(err, sim.ErrQueueFull) {
		return &apiError{status: http.StatusTooManyRequests, typ: "RateLimitError",
			message: "the server is overloaded: waiting queue full", retryAfter: 1}
	}
	if errors.Is(err, sim.ErrInvalidRequest) {
		return badRequest("", "the engine refused the request: %s", strings.TrimPrefix(err.Error(), sim.ErrInvalidRequest.Error()+": "))
	}
	return &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", message: "the engine failed to accept the request"}
}

// logRequest writes the one debug line of a request: ids, status and
// counts, never content.
func (s *Server) logRequest(a api, id uint64, status, replica int, p parsedRequest, out int, start time.Time) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	s.log.Debug("simhttp: request", "endpoint", a.String(), "id", id, "status", status, "replica", replica,
		"stream", p.stream, "prompt_tokens", p.promptTokens, "max_tokens", p.maxTokens,
		"output_tokens", out, "duration", time.Since(start))
}

// cancel tells the cluster the client is gone, unless the request finished.
func (x *exchange) cancel() {
	x.s.mu.Lock()
	x.s.cluster.Cancel(x.s.now(), x.ticket.ID) // a finished id is ignored
	x.s.mu.Unlock()
	x.s.kick()
}

// wait blocks until the observer signals; false when the client went away
// or the server is closing.
func (x *exchange) wait() bool {
	select {
	case <-x.st.notify:
		return true
	case <-x.ctx.Done():
		return false
	case <-x.s.done:
		return false
	}
}

// sleep waits d; false when the client went away or the server is closing.
func (x *exchange) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.ctx.Done():
		return false
	case <-x.s.done:
		return false
	}
}

// reset drops the connection abruptly: a TCP reset when the connection can
// be hijacked, otherwise an aborted handler (the server closes the
// connection without finishing the response). The request is cancelled in
// the cluster.
func (x *exchange) reset() {
	x.cancel()
	x.status = -1
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err == nil {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST
		}
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// stream sends the SSE response as x.enc writes it: headers at once (or
// a slow-headers fault's delay after arrival) with the stream's start
// (chat's role chunk, response.created, message_start), one event per
// token as the engine produces them, then its end (chat: the finish
// chunk, the usage chunk if asked, [DONE]). Mid-stream faults strike
// when token AtToken (1-based) is ready: a reset instead of sending it,
// a malformed event in its place that ends the stream (no end), or a
// stall of Delay before it.
func (x *exchange) stream() {
	fault := x.ticket.Fault
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	if fault.Kind == sim.FaultSlowHeaders && !x.sleep(fault.Delay-time.Since(x.start)) {
		x.cancel()
		return
	}
	x.status = http.StatusOK
	x.announceUpstream()
	x.w.WriteHeader(http.StatusOK)
	fl, _ := x.w.(http.Flusher)
	buffered := x.s.quirks.bufferedStream
	if buffered && fl != nil {
		fl.Flush() // the headers go at once, the chunks at the end
	}
	buf := (*x.buf)[:0]
	defer func() { *x.buf = buf }()
	buf = x.enc.start(buf)
	// faultAt is the number of tokens sent when the fault strikes; -1 for none.
	faultAt := -1
	switch fault.Kind {
	case sim.FaultReset, sim.FaultMalformed, sim.FaultStall:
		faultAt = max(fault.AtToken-1, 0)
	}
	written := 0
	for {
		// Read finished before tokens: a finished stream's total is final.
		fin := x.st.finished.Load()
		total := int(x.st.tokens.Load())
		if fin && faultAt >= total {
			faultAt = total - 1 // a plan beyond the output strikes at the last token
		}
		for written < total {
			if written == faultAt {
				faultAt = -1
				switch fault.Kind {
				case sim.FaultReset:
					x.flush(fl, buf)
					x.reset()
					return
				case sim.FaultMalformed:
					buf = x.enc.malformed(buf)
					x.flush(fl, buf)
					x.cancel()
					return
				case sim.FaultStall:
					ok := x.flush(fl, buf)
					buf = buf[:0]
					if !ok || !x.sleep(fault.Delay) {
						x.cancel()
						return
					}
				}
			}
			if x.truncate && written == truncateAfter && x.st.queued() > queuedSteps*x.s.stepBase {
				buf = x.enc.overloaded(buf)
				x.flush(fl, buf)
				x.hangUp()
				return
			}
			if written < x.thinking() {
				buf = x.enc.reasoning(buf, written)
			} else {
				buf = x.enc.content(buf, written-x.thinking())
			}
			written++
		}
		if fin {
			buf = x.enc.end(buf, x.final())
			x.flush(fl, buf)
			return
		}
		if !buffered {
			ok := x.flush(fl, buf)
			buf = buf[:0]
			if !ok {
				x.cancel()
				return
			}
		}
		if !x.wait() {
			x.cancel()
			return
		}
	}
}

// queuedSteps is how many engine steps (step_base each) a request may
// wait for admission and still not count as queued: one arriving in the
// middle of a step waits for it to end, and a step with prefills lasts
// longer than step_base; a request that queues behind a full batch waits
// for others' generations, many steps.
const queuedSteps = 4

// truncateAfter is the number of tokens a stream cut short by the
// truncate-on-overload quirk sends.
const truncateAfter = 3

// hangUp ends the response without finishing it: the connection is closed
// (FIN, unlike reset's RST) and the request cancelled in the cluster.
func (x *exchange) hangUp() {
	x.cancel()
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// reason is the finish reason sent: the engine's, unless the answer
// decided the length (a stop string: "stop"; JSON complete: "stop" or
// "tool_calls", cut by max_tokens: "length").
func (x *exchange) reason() string {
	a := x.ans
	if a == nil {
		return x.st.res.FinishReason
	}
	switch {
	case a.json() && x.st.res.OutputTokens-x.thinking() >= len(a.frags):
		if a.tools() {
			return "tool_calls"
		}
		return "stop"
	case a.json():
		return "length"
	case a.send >= 0:
		return "stop"
	}
	return x.st.res.FinishReason
}

// cached is the usage's prompt_tokens_details.cached_tokens: the prompt
// tokens the prefix cache served, or −1 (not reported) without a cache.
func (x *exchange) cached() int {
	if !x.s.prefix.PrefixCache() {
		return -1
	}
	return x.st.res.CachedTokens
}

// thinking is the number of reasoning tokens that lead a response.
func (x *exchange) thinking() int { return x.s.thinking(x.p.api) }

// thinking is the number of reasoning tokens that lead a response of API
// a: the server's ReasoningTokens for the conversational APIs (chat,
// responses, messages), none for the others.
func (s *Server) thinking(a api) int {
	if !a.templated() {
		return 0
	}
	return s.reasoning
}

// final is what closes the finished response.
func (x *exchange) final() final {
	res := x.st.res
	return final{res: res, reasoning: min(x.thinking(), res.OutputTokens), cached: x.cached(), reason: x.reason(), usage: !x.s.quirks.noUsage}
}

// flush writes buf and flushes it to the client; false on a write error
// (the client went away).
func (x *exchange) flush(fl http.Flusher, buf []byte) bool {
	if len(buf) > 0 {
		if _, err := x.w.Write(buf); err != nil {
			return false
		}
	}
	if fl != nil {
		fl.Flush()
	}
	return true
}

// unary waits for the whole generation and sends one JSON body, as enc
// writes it. Faults: a reset drops the connection once token AtToken
// exists (prefill-only work: once it is done), a malformed fault sends a
// truncated body, a stall holds the answer for Delay, slow headers hold
// it until Delay after arrival.
func (x *exchange) unary(enc bodyEncoder) {
	fault := x.ticket.Fault
	for {
		fin := x.st.finished.Load()
		if fault.Kind == sim.FaultReset && (fin || fault.AtToken > 0 && int(x.st.tokens.Load()) >= fault.AtToken) {
			x.reset()
			return
		}
		if fin {
			break
		}
		if !x.wait() {
			x.cancel()
			return
		}
	}
	delay := time.Duration(0)
	switch fault.Kind {
	case sim.FaultStall:
		delay = fault.Delay
	case sim.FaultSlowHeaders:
		delay = fault.Delay - time.Since(x.start)
	}
	if !x.sleep(delay) {
		return
	}
	buf := (*x.buf)[:0]
	if fault.Kind == sim.FaultMalformed {
		buf = enc.truncatedBody(buf)
	} else {
		buf = enc.response(buf, x.final())
	}
	*x.buf = buf
	x.w.Header().Set("Content-Type", "application/json")
	x.w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	x.status = http.StatusOK
	x.announceUpstream()
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(buf)
}
