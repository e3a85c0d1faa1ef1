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

// exchange is the state of one completion request on its handler.
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
	enc      *encoder
	buf      *[]byte   // pooled write buffer
	start    time.Time // arrival of the request
	status   int       // status sent, for the log line
	released time.Time // when the gateway let the request through (with a gateway)
}

// serveCompletion answers one completion request (chat or completions): it
// reads and checks it, submits it to the cluster, and sends the answer as
// the engine generates it, streamed or in one body.
func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	start := time.Now()
	p, blocks, explicitMax, ok := s.readCompletion(w, r, chat, start)
	if !ok {
		return
	}
	st := s.newRequestStream(r)
	maxTokens, ignoreEOS, ans := s.plan(p, explicitMax)
	req := sim.Request{PromptTokens: p.promptTokens, MaxTokens: maxTokens, IgnoreEOS: ignoreEOS, Blocks: blocks}
	s.mu.Lock()
	now := s.now()
	if s.gateways != nil && s.cluster.Config().CheckRequest(req) == nil {
		adm := s.gateways.admit(r, now, req)
		s.writeQuota(w.Header(), &adm)
		if adm.Refused {
			s.mu.Unlock()
			s.logRequest(chat, 0, http.StatusTooManyRequests, -1, p, 0, start)
			writeError(w, gatewayRefusal(&adm))
			return
		}
		s.gateways.announceWait(w.Header(), adm.Release-now)
		if adm.Release > now {
			s.mu.Unlock()
			if !s.holdAtGateway(r.Context(), adm.Release) {
				s.logRequest(chat, 0, 0, -1, p, 0, start) // the client went away while it waited
				return
			}
			s.mu.Lock()
			now = s.now()
		}
	}
	released := time.Now()
	st.submitted = now
	truncate := s.quirks.truncateOnOverload && p.stream
	t, err := s.cluster.Submit(now, req, st)
	s.mu.Unlock()
	if err != nil {
		s.refuse(w, chat, t, err, p, start)
		return
	}
	s.kick()
	w.Header().Set(ReplicaHeader, replicaName(t.Replica))
	if s.serveErrorFault(w, chat, t, p, start) {
		return
	}

	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	x := &exchange{
		s: s, w: w, ctx: r.Context(), p: p, ticket: t, st: st, ans: ans, truncate: truncate,
		enc: newEncoder(chat, prefix+strconv.FormatUint(t.ID, 16), time.Now().Unix(), s.model),
		buf: s.bufs.Get().(*[]byte), start: start, released: released,
	}
	if ans != nil {
		x.enc.ans, x.enc.seq = ans, ans.seq
	}
	defer func() {
		*x.buf = (*x.buf)[:0]
		s.bufs.Put(x.buf)
		s.logRequest(chat, t.ID, x.status, t.Replica, p, int(st.tokens.Load()), start)
	}()
	if p.stream {
		x.stream()
	} else {
		x.unary()
	}
}

// announceUpstream writes the gateway's upstream time as the headers go
// out (with a gateway in front).
func (x *exchange) announceUpstream() {
	if g := x.s.gateways; g != nil {
		g.announceUpstream(x.w.Header(), time.Since(x.released))
	}
}

// readCompletion reads, decodes and checks a completion request: the
// request, its prompt's prefix-cache block hashes (with a prefix cache),
// and whether it set max_tokens. On a bad request it answers the error
// itself and returns ok false.
func (s *Server) readCompletion(w http.ResponseWriter, r *http.Request, chat bool, start time.Time) (p parsedRequest, blocks []uint64, explicitMax, ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "MethodNotAllowedError", message: "method " + r.Method + " not allowed; use POST"})
		return p, nil, false, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "BadRequestError",
				message: "request body larger than " + strconv.Itoa(MaxBodyBytes) + " bytes"})
			return p, nil, false, false
		}
		writeError(w, badRequest("", "reading the request body failed"))
		return p, nil, false, false
	}
	var h *sim.PrefixHasher
	if s.prefix.PrefixCache() {
		h = s.prefix.NewPrefixHasher(nil)
	}
	p, aerr := decodeRequestHashed(body, chat, s.tok, h)
	if h != nil {
		blocks = h.Hashes
	}
	explicitMax = p.maxTokens != 0
	if aerr == nil {
		aerr = p.validate(s.model, s.maxModelLen)
	}
	if aerr != nil {
		s.logRequest(chat, 0, aerr.status, -1, p, 0, start)
		writeError(w, aerr)
		return p, nil, false, false
	}
	return p, blocks, explicitMax, true
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
func (s *Server) refuse(w http.ResponseWriter, chat bool, t sim.Ticket, err error, p parsedRequest, start time.Time) {
	aerr := submitError(err)
	if s.quirks.noRetryAfter {
		aerr.retryAfter = 0
	}
	replica := -1
	if errors.Is(err, sim.ErrQueueFull) { // refused by this replica's admission control
		replica = t.Replica
		w.Header().Set(ReplicaHeader, replicaName(t.Replica))
	}
	s.logRequest(chat, t.ID, aerr.status, replica, p, 0, start)
	writeError(w, aerr)
}

// serveErrorFault answers the request with its fault's error when the
// ticket's fault is a simulated 500 or 503; false for any other.
func (s *Server) serveErrorFault(w http.ResponseWriter, chat bool, t sim.Ticket, p parsedRequest, start time.Time) bool {
	switch t.Fault.Kind {
	case sim.Fault500:
		s.logRequest(chat, t.ID, http.StatusInternalServerError, t.Replica, p, 0, start)
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", message: "simulated internal server error"})
		return true
	case sim.Fault503:
		s.logRequest(chat, t.ID, http.StatusServiceUnavailable, t.Replica, p, 0, start)
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "ServiceUnavailableError", message: "simulated service unavailable"})
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
	think := 0
	if p.chat {
		think = s.reasoning
	}
	// A stop string is looked for as far as the engine will generate:
	// past max_tokens too when ignore-max-tokens is on, so that only
	// max_tokens is ignored.
	a, bound := planAnswer(p.shape, p.chat, limit-think, s.quirks.ignoreStop, s.quirks.badToolArgs, s.quirks.schemaViolations, s.instances)
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
func (s *Server) logRequest(chat bool, id uint64, status, replica int, p parsedRequest, out int, start time.Time) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	endpoint := "completions"
	if chat {
		endpoint = "chat"
	}
	s.log.Debug("simhttp: request", "endpoint", endpoint, "id", id, "status", status, "replica", replica,
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

// stream sends the SSE response: headers at once (or a slow-headers
// fault's delay after arrival), the role chunk (chat), one chunk per token
// as the engine produces them, the finish chunk, the usage chunk if asked,
// [DONE]. Mid-stream faults strike when token AtToken (1-based) is ready:
// a reset instead of sending it, a malformed chunk in its place that ends
// the stream (no finish chunk, no [DONE]), or a stall of Delay before it.
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
	if x.p.chat {
		buf = x.enc.role(buf)
	}
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
				x.flush(fl, buf)
				x.hangUp()
				return
			}
			if written < x.thinking() {
				buf = x.enc.reasoningToken(buf, written)
			} else {
				buf = x.enc.content(buf, written-x.thinking())
			}
			written++
		}
		if fin {
			buf = x.enc.finish(buf, x.reason())
			if x.p.includeUsage && !x.s.quirks.noUsage {
				buf = x.enc.usage(buf, x.st.res.PromptTokens, x.st.res.OutputTokens, min(x.thinking(), x.st.res.OutputTokens), x.cached())
			}
			if x.s.timings {
				buf = x.enc.timings(buf, x.st.res)
			}
			buf = x.enc.done(buf)
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

// thinking is the number of reasoning tokens that lead a response: the
// server's ReasoningTokens for chat, none for completions.
func (x *exchange) thinking() int {
	if !x.p.chat {
		return 0
	}
	return x.s.reasoning
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

// unary waits for the whole generation and sends one JSON body. Faults:
// a reset drops the connection once token AtToken exists, a malformed
// fault sends a truncated body, a stall holds the answer for Delay, slow
// headers hold it until Delay after arrival.
func (x *exchange) unary() {
	fault := x.ticket.Fault
	for {
		fin := x.st.finished.Load()
		if fault.Kind == sim.FaultReset && (fin || int(x.st.tokens.Load()) >= fault.AtToken) {
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
	res := x.st.res
	buf := (*x.buf)[:0]
	if fault.Kind == sim.FaultMalformed {
		buf = x.enc.truncatedBody(buf)
	} else {
		buf = x.enc.bodyWith(buf, res.PromptTokens, res.OutputTokens, min(x.thinking(), res.OutputTokens), x.cached(), x.reason(), !x.s.quirks.noUsage)
		if x.s.timings {
			buf = appendTimings(append(buf[:len(buf)-2], ','), res) // before the closing "}\n"
			buf = append(buf, "}\n"...)
		}
	}
	*x.buf = buf
	x.w.Header().Set("Content-Type", "application/json")
	x.w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	x.status = http.StatusOK
	x.announceUpstream()
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(buf)
}
