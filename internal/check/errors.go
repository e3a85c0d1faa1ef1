package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func errorChecks() []Check {
	return []Check{
		{Name: CheckErrorsMalformed, Group: GroupErrors,
			What: "malformed requests (invalid JSON, no messages/prompt, max_tokens of the wrong type) get a 4xx with an OpenAI error body",
			Run:  runErrorsMalformed},
		{Name: CheckErrorsOverload, Group: GroupErrors,
			What: "a short, bounded overload above the measured capacity: queued, or refused with 429/503 and Retry-After; never timeouts, 5xx or broken streams",
			Run:  runErrorsOverload},
	}
}

func runErrorsMalformed(ctx context.Context, t *T) Result {
	p := t.Probe
	model, _ := json.Marshal(p.Model())
	missing, wrongType := "messages", `"messages":[{"role":"user","content":"Say hello."}]`
	if !p.Chat() {
		missing, wrongType = "prompt", `"prompt":"Say hello."`
	}
	return judgeMalformed(ctx, t, []badCase{
		{"invalid JSON", `{"model":` + string(model) + `,"messages":[{"role":"user","content":"Say`},
		{"no " + missing, `{"model":` + string(model) + `,"max_tokens":8}`},
		{"max_tokens a string", `{"model":` + string(model) + `,` + wrongType + `,"max_tokens":"eight"}`},
	}, openAIError)
}

// badCase is one malformed request: its name in the evidence, its body.
type badCase struct{ name, body string }

// errorShape is the error body an API's clients read: its name in the
// evidence and whether a response has it.
type errorShape struct {
	name string
	has  func(*Exchange) bool
}

// The error shapes: OpenAI's {"error":{"message":…}} (chat, completions,
// Responses, embeddings, rerank) and Anthropic's
// {"type":"error","error":{"type":…,"message":…}} (Messages).
var (
	openAIError    = errorShape{"an OpenAI error body", func(x *Exchange) bool { _, ok := x.ErrorBody(); return ok }}
	anthropicError = errorShape{"an Anthropic error body", func(x *Exchange) bool { _, ok := x.AnthropicError(); return ok }}
)

// judgeMalformed sends each malformed request, unary, and judges the
// answers (docs/checks.md, errors.malformed): a 4xx with the API's error
// body PASSes, a 4xx without it WARNs, anything else FAILs; the worst
// decides.
func judgeMalformed(ctx context.Context, t *T, cases []badCase, shape errorShape) Result {
	p := t.Probe
	var parts []string
	worst := Pass
	details := map[string]any{}
	for _, c := range cases {
		x, err := p.Send(ctx, Req{Raw: []byte(c.body), Timeout: reqTimeout(t)})
		if err != nil {
			return Result{Status: Fail, Evidence: c.name + ": no response: " + noResponse(err)}
		}
		details[strings.ReplaceAll(c.name, " ", "_")] = x.Status
		var st Status
		var what string
		switch {
		case x.TimedOut:
			st, what = Fail, "no answer in "+showDur(reqTimeout(t))
		case x.Status >= 400 && x.Status < 500 && shape.has(x):
			st, what = Pass, strconv.Itoa(x.Status)
		case x.Status >= 400 && x.Status < 500:
			st, what = Warn, strconv.Itoa(x.Status)+" without "+shape.name
		default:
			st, what = Fail, shapeWord(x, shape)
		}
		worst = worse(worst, st)
		parts = append(parts, c.name+" → "+what)
	}
	ev := strings.Join(parts, ", ")
	if worst == Pass {
		ev += "; all with " + shape.name
	}
	return Result{Status: worst, Evidence: ev, Details: details}
}

// The bounds of errors.overload besides Config.OverloadRequests.
const (
	// OverloadMaxTime bounds the whole overload probe, measurement included.
	OverloadMaxTime = 30 * time.Second
	// overloadMaxTokens is each request's max_tokens: short requests, so
	// that the waves stress admission, not generation.
	overloadMaxTokens = 16
	// overloadBaseline is the number of single requests that measure the
	// unloaded TTFT and latency first.
	overloadBaseline = 3
	// overloadFirstWave is the first wave's size; each next one doubles.
	overloadFirstWave = 8
)

// overloadMinQueue is the least TTFT growth that counts as queueing. (A
// variable so that the bound's test can rule out a loaded machine's
// scheduling delays, which it is not about.)
var overloadMinQueue = 100 * time.Millisecond

const overloadPrompt = "Count from one to twenty, in words."

// An overload outcome class, from best to worst.
type overloadClass int

const (
	olCompleted overloadClass = iota
	ol429Retry
	ol503Retry
	ol503
	ol429
	olOther4xx
	ol5xx
	olConnErr
	olTimeout
	olTruncated
	olClasses
)

// olNames are the classes as the evidence and check.json name them.
var olNames = [olClasses]string{"completed", "429 with Retry-After", "503 with Retry-After", "503 without Retry-After",
	"429 without Retry-After", "other 4xx", "other 5xx", "connection errors", "timeouts", "truncated streams"}

// olKeys are the classes' keys in Details.
var olKeys = [olClasses]string{"completed", "429_retry_after", "503_retry_after", "503_no_retry_after",
	"429_no_retry_after", "other_4xx", "other_5xx", "connection_errors", "timeouts", "truncated"}

// shot is one overload request's outcome.
type shot struct {
	class   overloadClass
	ttft    time.Duration // completed only
	headers []string      // rate-limit header names of the response
	retry   int           // Retry-After in seconds; -1 for none or an HTTP date
}

// wave is the outcome of one wave of concurrent requests.
type wave struct {
	size    int
	counts  [olClasses]int
	ttfts   []time.Duration
	headers []string
	took    time.Duration
	retry   []int // the Retry-After seconds seen
}

// retryRange is the Retry-After seconds seen: "Retry-After 1s", "1–3s".
func (w *wave) retryRange() string {
	if len(w.retry) == 0 {
		return ""
	}
	lo, hi := slices.Min(w.retry), slices.Max(w.retry)
	if lo == hi {
		return fmt.Sprintf("; Retry-After %ds", lo)
	}
	return fmt.Sprintf("; Retry-After %d–%ds", lo, hi)
}

func (w *wave) rejected() bool {
	for c := ol429Retry; c < olClasses; c++ {
		if w.counts[c] > 0 {
			return true
		}
	}
	return false
}

// summary is the classes seen, in order: "88 completed, 40 429 with Retry-After".
func (w *wave) summary() string {
	var parts []string
	for c := range olClasses {
		if n := w.counts[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, olNames[c]))
		}
	}
	return strings.Join(parts, ", ")
}

// runErrorsOverload measures the unloaded TTFT and latency with a few
// single requests, then sends waves of 8, 16, 32, … concurrent short
// requests (max_tokens 16) until the server refuses or breaks some, or
// queues (the wave's TTFT p95 reaches 4× the single request's TTFT,
// twice its whole latency and 100ms more than its TTFT: requests wait
// for others to finish), or the bounds are reached: Config.
// OverloadRequests requests in all, each bounded by Config.Timeout, and
// OverloadMaxTime for the whole probe. The last wave is classified, the
// worst class deciding (docs/checks.md, errors).
func runErrorsOverload(ctx context.Context, t *T) Result {
	bound := t.Config.OverloadRequests
	if bound <= 0 {
		bound = DefaultOverloadRequests
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, OverloadMaxTime)
	defer cancel()
	timeout := func() time.Duration {
		return min(reqTimeout(t), OverloadMaxTime-time.Since(start))
	}

	// The single requests: the capacity the waves are measured against.
	ttft1, e2e1, sent, failed := measureSingles(ctx, t, bound, timeout)
	if failed != nil {
		return *failed
	}
	if len(ttft1) == 0 {
		return Result{Status: Skip, Evidence: fmt.Sprintf("--overload-requests %d leaves no request to measure with", bound)}
	}
	base, lat := medianDur(ttft1), medianDur(e2e1)
	// A wave's TTFT p95 this high means requests wait for others: 4× the
	// single request's TTFT, twice its whole latency, and 100ms more than
	// its TTFT (so that scheduling jitter on a server that answers in
	// microseconds is no queue).
	queued := max(4*base, 2*lat, base+overloadMinQueue)

	last, waves, inWaves := rampWaves(ctx, t, bound-sent, start, queued, timeout)
	sent += inWaves

	p95 := quantileDur(last.ttfts, 0.95)
	growth := float64(p95) / float64(max(base, time.Microsecond))
	details := map[string]any{
		"requests": sent, "waves": waves, "wave": last.size, "seconds": time.Since(start).Seconds(),
		"single_ttft_ms": millis(base), "single_latency_ms": millis(lat), "wave_ttft_p95_ms": millis(p95),
		"rate_limit_headers":  last.headers,
		"retry_after_seconds": last.retry,
	}
	for c := range olClasses {
		details[olKeys[c]] = last.counts[c]
	}
	if last.size == 0 {
		return Result{Status: Skip, Details: details, Evidence: fmt.Sprintf("--overload-requests %d leaves no wave after %d single requests", bound, sent)}
	}
	at := fmt.Sprintf("at %d concurrent", last.size)
	hdrs := "rate-limit headers: none"
	if len(last.headers) > 0 {
		hdrs = "rate-limit headers: " + strings.Join(last.headers, ", ")
	}
	c := &last.counts
	r := Result{Details: details}
	switch {
	case c[olTruncated] > 0:
		r.Status, r.Evidence = Fail, fmt.Sprintf("streams broke off without [DONE] %s: %s", at, last.summary())
	case c[olTimeout] > 0:
		r.Status, r.Evidence = Fail, fmt.Sprintf("timeouts %s (no answer within %s): %s", at, showDur(min(reqTimeout(t), OverloadMaxTime)), last.summary())
	case c[olConnErr] > 0:
		r.Status, r.Evidence = Fail, fmt.Sprintf("connections failed %s: %s", at, last.summary())
	case c[ol5xx] > 0 || c[olOther4xx] > 0:
		r.Status, r.Evidence = Fail, fmt.Sprintf("errors other than 429/503 %s: %s", at, last.summary())
	case c[ol429] > 0:
		r.Status, r.Evidence = Fail, fmt.Sprintf("429 without Retry-After %s (clients must guess their backoff): %s; %s", at, last.summary(), hdrs)
	case c[ol503] > 0:
		r.Status, r.Evidence = Warn, fmt.Sprintf("503 without Retry-After %s: %s%s; %s", at, last.summary(), last.retryRange(), hdrs)
	case c[ol429Retry] > 0 || c[ol503Retry] > 0:
		r.Status, r.Evidence = Pass, fmt.Sprintf("refuses cleanly %s: %s%s; %s", at, last.summary(), last.retryRange(), hdrs)
	case p95 >= queued:
		r.Status, r.Evidence = Pass, fmt.Sprintf("queues: no rejections; TTFT p95 %s ×%.0f %s (single %s); %d requests",
			showDur(p95), growth, at, showDur(base), sent)
	default:
		r.Status, r.Evidence = Warn, fmt.Sprintf("no overload within the bounds (%d requests, %s): all completed, TTFT p95 ×%.1f %s; raise --overload-requests",
			sent, showDur(time.Since(start)), growth, at)
	}
	return r
}

// measureSingles sends the single requests before any load, up to
// overloadBaseline within bound, and returns their TTFTs and latencies
// and how many it sent, or a failed Result when one did not complete.
func measureSingles(ctx context.Context, t *T, bound int, timeout func() time.Duration) (ttft, e2e []time.Duration, sent int, failed *Result) {
	for range overloadBaseline {
		if sent >= bound {
			break
		}
		x, err := t.Probe.Send(ctx, overloadReq(timeout()))
		sent++
		if err != nil {
			return nil, nil, sent, &Result{Status: Fail, Evidence: "a single request: no response: " + noResponse(err)}
		}
		if x.Status != 200 || x.TimedOut || x.EndErr != nil || x.FirstContent() < 0 {
			return nil, nil, sent, &Result{Status: Fail, Evidence: "a single request before any load: " + shotWord(x)}
		}
		ttft = append(ttft, x.FirstContent())
		e2e = append(e2e, x.Elapsed)
	}
	return ttft, e2e, sent, nil
}

// rampWaves fires waves of overloadFirstWave, twice as many, …
// concurrent requests until one is refused or queues (its TTFT p95
// reaches queued), or the bounds are reached: left requests, and
// OverloadMaxTime from start. It returns the last wave, the sizes of all
// and how many requests they sent.
func rampWaves(ctx context.Context, t *T, left int, start time.Time, queued time.Duration, timeout func() time.Duration) (last wave, sizes []int, sent int) {
	size := overloadFirstWave
	for {
		// The last wave may be cut to what the bound leaves, but not
		// below the wave before it: a smaller one would measure less.
		size = min(size, left-sent)
		if size < 2 || size < last.size {
			break
		}
		if len(sizes) > 0 && OverloadMaxTime-time.Since(start) < 2*last.took+time.Second {
			break // the next, twice as large, would not fit in the time left
		}
		last = fireWave(ctx, t, size, timeout())
		sent += size
		sizes = append(sizes, size)
		if last.rejected() || quantileDur(last.ttfts, 0.95) >= queued {
			break
		}
		size *= 2
	}
	return last, sizes, sent
}

func overloadReq(timeout time.Duration) Req {
	return Req{Prompt: overloadPrompt, MaxTokens: overloadMaxTokens, Stream: true, Timeout: timeout}
}

// fireWave sends n requests at once and classifies every answer.
func fireWave(ctx context.Context, t *T, n int, timeout time.Duration) wave {
	shots := make([]shot, n)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	began := time.Now()
	for i := range n {
		wg.Go(func() {
			<-ready
			x, err := t.Probe.Send(ctx, overloadReq(timeout))
			shots[i] = classify(x, err)
		})
	}
	close(ready)
	wg.Wait()
	w := wave{size: n, took: time.Since(began)}
	for _, s := range shots {
		w.counts[s.class]++
		if s.class == olCompleted && s.ttft >= 0 {
			w.ttfts = append(w.ttfts, s.ttft)
		}
		if s.retry >= 0 {
			w.retry = append(w.retry, s.retry)
		}
		for _, h := range s.headers {
			if !slices.Contains(w.headers, h) {
				w.headers = append(w.headers, h)
			}
		}
	}
	slices.Sort(w.headers)
	return w
}

// classify sorts one overload answer into its class.
func classify(x *Exchange, err error) shot {
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return shot{class: olTimeout, retry: -1}
		}
		return shot{class: olConnErr, retry: -1}
	}
	s := shot{headers: rateLimitHeaders(x.Header), retry: -1}
	ra := strings.TrimSpace(x.Header.Get("Retry-After"))
	retry := validRetryAfter(ra)
	if n, err := strconv.Atoi(ra); err == nil && n >= 0 && (x.Status == 429 || x.Status == 503) {
		s.retry = n
	}
	switch {
	case x.TimedOut:
		s.class = olTimeout
	case x.Status == 200 && x.EndErr != nil:
		s.class = olTruncated
	case x.Status == 200:
		s.class, s.ttft = olCompleted, x.FirstContent()
	case x.Status == http.StatusTooManyRequests && retry:
		s.class = ol429Retry
	case x.Status == http.StatusTooManyRequests:
		s.class = ol429
	case x.Status == http.StatusServiceUnavailable && retry:
		s.class = ol503Retry
	case x.Status == http.StatusServiceUnavailable:
		s.class = ol503
	case x.Status >= 500:
		s.class = ol5xx
	default:
		s.class = olOther4xx
	}
	return s
}

// validRetryAfter reports whether v is a Retry-After a client can use:
// delay-seconds or an HTTP date (RFC 9110 §10.2.3).
func validRetryAfter(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n >= 0
	}
	_, err := http.ParseTime(v)
	return err == nil
}

// rateLimitHeaders are the names of the rate-limit headers of h:
// x-ratelimit-* (OpenAI's), RateLimit and RateLimit-Policy (the IETF
// draft's), ratelimit-* (the draft's older names).
func rateLimitHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		l := strings.ToLower(k)
		if strings.HasPrefix(l, "x-ratelimit-") || l == "ratelimit" || strings.HasPrefix(l, "ratelimit-") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// shotWord says what a response that is not a complete stream was.
func shotWord(x *Exchange) string {
	switch {
	case x.TimedOut:
		return "no answer in time"
	case x.Status != 200:
		return statusWord(x)
	case x.EndErr != nil:
		return "the stream broke: " + x.EndErr.Error()
	default:
		return "200 without content"
	}
}

// Helpers of the tools, structured, context and errors checks.

// reqTimeout is the bound of one request.
func reqTimeout(t *T) time.Duration {
	if t.Config.Timeout > 0 {
		return t.Config.Timeout
	}
	return DefaultTimeout
}

// worse is the worse of two statuses (PASS < WARN < SKIP < FAIL, as for the exit code).
func worse(a, b Status) Status {
	rank := map[Status]int{Pass: 0, Warn: 1, Skip: 2, Fail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// statusWord is a response's status for the evidence, with what kind of
// body came ("500, an HTML page", "400 with an OpenAI error body").
func statusWord(x *Exchange) string { return shapeWord(x, openAIError) }

// shapeWord is statusWord for an API whose error body has the shape:
// "400 with an Anthropic error body", "500, no Anthropic error body".
func shapeWord(x *Exchange, shape errorShape) string {
	if x.Status == 0 && x.TimedOut {
		return "no response headers before the timeout"
	}
	s := strconv.Itoa(x.Status)
	if x.Status == 200 {
		return s
	}
	if shape.has(x) {
		return s + " with " + shape.name
	}
	ct := strings.ToLower(x.Header.Get("Content-Type"))
	switch {
	case strings.Contains(ct, "html"):
		return s + ", an HTML page"
	case len(x.Body) == 0:
		return s + ", an empty body"
	}
	return s + ", no " + strings.TrimPrefix(shape.name, "an ")
}

// noResponse says why a request got no response, without the URL.
func noResponse(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed"
	}
	return "connection failed"
}

// medianDur is the median (the mean of the middle two of an even count).
func medianDur(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// quantileDur is the q-quantile by the nearest-rank rule: the ⌈q·n⌉-th
// smallest; 0 for none.
func quantileDur(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// millis is d in milliseconds, for Details.
func millis(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// times is a/b as "1.5×".
func times(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	r := float64(a) / float64(b)
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}
