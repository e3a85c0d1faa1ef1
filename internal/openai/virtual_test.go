package openai

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Tests in this file run in a synctest bubble: time is virtual, so the
// recorded times are exact, and the client talks to an http.Server over
// in-memory pipes.

// pipeNet is a listener whose connections are net.Pipe ends.
type pipeNet struct {
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	refuse  int // refuse this many dials first
	dials   int
	dialsMu sync.Mutex
}

func newPipeNet() *pipeNet { return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})} }

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error { p.once.Do(func() { close(p.done) }); return nil }

func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000} }

func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	p.dialsMu.Lock()
	p.dials++
	refuse := p.dials <= p.refuse
	p.dialsMu.Unlock()
	if refuse {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	server, client := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// virtualServer serves h over pipes for a client built from mod; it shuts
// both down when the test ends (inside the bubble).
func virtualServer(t *testing.T, h http.Handler, mod func(*Config)) (*Client, *pipeNet) {
	t.Helper()
	pn := newPipeNet()
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { _ = srv.Serve(pn); close(served) }()
	cfg := DefaultConfig()
	cfg.BaseURL = "http://sim.invalid/v1"
	cfg.Model = "test-model"
	cfg.Timeout = 10 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	c, err := newClient(cfg, time.Now(), pn.dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CloseIdle()
		_ = srv.Close()
		<-served
	})
	return c, pn
}

// paced writes events, sleeping gaps[i] before events[i].
func paced(events []string, gaps []time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i, e := range events {
			time.Sleep(gaps[i])
			_, _ = io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

const ms = time.Millisecond

// TestTimingVirtual: TTFT, ITL max and TPOT on a stream with known gaps.
func TestTimingVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		events := []string{role(), content("a"), content("b"), content("c"), content("d"), content("e"), finish(), usage(11, 5), done}
		gaps := []time.Duration{5 * ms, 20 * ms, 10 * ms, 100 * ms, 10 * ms, 10 * ms, 3 * ms, 0, 2 * ms}
		c, _ := virtualServer(t, paced(events, gaps), nil)
		rec := run(context.Background(), c, &testReq)
		checkOrder(t, rec)
		if rec.Outcome != record.OK {
			t.Fatalf("outcome %s %q", rec.Outcome, rec.Error)
		}
		for _, f := range []struct {
			name      string
			got, want int64
		}{
			{"headers − sent", rec.HeadersNs - rec.SentNs, 0},
			{"first chunk − sent", rec.FirstChunkNs - rec.SentNs, int64(5 * ms)},
			{"TTFT (send)", rec.TTFTSend(), int64(25 * ms)},
			{"ITL max", rec.ITLMaxNs, int64(100 * ms)},
			{"E2E (send)", rec.E2ESend(), int64(160 * ms)},
			{"TPOT", rec.TPOTNs, int64(135*ms) / 4}, // (done − first token) / (5 − 1)
			{"output tokens", int64(rec.OutputTokens), 5},
			{"prompt tokens", int64(rec.PromptTokens), 11},
			{"chunks", int64(rec.Chunks), 5},
		} {
			if f.got != f.want {
				t.Errorf("%s = %d, want %d", f.name, f.got, f.want)
			}
		}
	})
}

// TestTimeoutVirtual: a stall beyond the per-request timeout is a timeout,
// at whatever stage it happens, observed exactly at the deadline.
func TestTimeoutVirtual(t *testing.T) {
	stall := func(before []string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if before != nil {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range before {
					_, _ = io.WriteString(w, e)
				}
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
		}
	}
	for _, tt := range []struct {
		name    string
		h       http.HandlerFunc
		errText string
		status  int
	}{
		{"before headers", stall(nil), "timeout before headers", 0},
		{"after headers", stall([]string{}), "timeout after 0 chunks", 200},
		{"mid-stream", stall([]string{role(), content("a"), content("b")}), "timeout after 2 chunks", 200},
	} {
		forTransports(t, tt.name, func(t *testing.T, tr string) {
			synctest.Test(t, func(t *testing.T) {
				c, _ := virtualServer(t, tt.h, func(c *Config) { c.Timeout = 5 * time.Second; c.Transport = tr })
				rec := run(context.Background(), c, &testReq)
				checkOrder(t, rec)
				if rec.Outcome != record.Timeout || rec.Error != tt.errText || rec.Status != tt.status {
					t.Fatalf("got %s %q status %d, want timeout %q %d", rec.Outcome, rec.Error, rec.Status, tt.errText, tt.status)
				}
				if e2e := time.Duration(rec.E2ESend()); e2e != 5*time.Second {
					t.Errorf("done − sent = %v, want the 5s timeout", e2e)
				}
			})
		})
	}
}

// TestCancelVirtual: cancelling the caller's context mid-stream is
// "cancelled", not "timeout", and stops the request at once.
func TestCancelVirtual(t *testing.T) {
	forTransports(t, "", func(t *testing.T, tr string) {
		synctest.Test(t, func(t *testing.T) {
			h := func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, content("a"))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
			c, _ := virtualServer(t, http.HandlerFunc(h), func(c *Config) { c.Transport = tr })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(time.Second, cancel)
			rec := run(ctx, c, &testReq)
			checkOrder(t, rec)
			if rec.Outcome != record.Cancelled || rec.Error != "cancelled after 1 chunks" || rec.E2ESend() != int64(time.Second) {
				t.Fatalf("got %s %q e2e %d, want cancelled after 1 chunks at 1s", rec.Outcome, rec.Error, rec.E2ESend())
			}
		})
	})
}

// forTransports runs f as a subtest name/transport=… with surge's
// transport and with net/http's.
func forTransports(t *testing.T, name string, f func(t *testing.T, tr string)) {
	t.Helper()
	for _, tr := range []string{TransportSurge, TransportGo} {
		t.Run(strings.TrimPrefix(name+"/transport="+tr, "/"), func(t *testing.T) { f(t, tr) })
	}
}

// scripted answers attempt i with replies[i] (the last one repeats) and
// records when each attempt arrived.
type scripted struct {
	mu       sync.Mutex
	arrivals []time.Time
	replies  []func(w http.ResponseWriter)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	i := min(len(s.arrivals), len(s.replies)-1)
	s.arrivals = append(s.arrivals, time.Now())
	s.mu.Unlock()
	s.replies[i](w)
}

func status(code int, retryAfter string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}
}

func stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, content("a")+content("b")+usage(3, 2)+done)
}

func TestRetriesVirtual(t *testing.T) {
	httpDate := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }
	tests := []struct {
		name     string
		replies  func() []func(w http.ResponseWriter) // built inside the bubble (for dates)
		retries  int
		maxWait  time.Duration
		timeout  time.Duration
		refuse   int // refused dials first
		outcome  record.Outcome
		errText  string
		attempts int
		waits    [][2]time.Duration // bounds of the gap between attempt arrivals
		hint     time.Duration      // RetryAfterNs expected; -1 = None
	}{
		{name: "429 retry-after seconds honoured",
			replies: func() []func(http.ResponseWriter) {
				return []func(http.ResponseWriter){status(429, "2"), status(429, "2"), stream}
			},
			retries: 3, outcome: record.OK, attempts: 3,
			waits: [][2]time.Duration{{2 * time.Second, 2200 * ms}, {2 * time.Second, 2200 * ms}}, hint: 2 * time.Second},
		{name: "429 retry-after date honoured",
			replies: func() []func(http.ResponseWriter) {
				return []func(http.ResponseWriter){status(429, httpDate(3*time.Second)), stream}
			},
			retries: 1, outcome: record.OK, attempts: 2,
			waits: [][2]time.Duration{{3 * time.Second, 3300 * ms}}, hint: 3 * time.Second},
		{name: "503 backoff without hint, retries exhausted",
			replies: func() []func(http.ResponseWriter) { return []func(http.ResponseWriter){status(503, "")} },
			retries: 2, outcome: record.HTTPError, errText: "status 503", attempts: 3,
			waits: [][2]time.Duration{{125 * ms, 250 * ms}, {250 * ms, 500 * ms}}, hint: -1},
		{name: "refused connection retried",
			replies: func() []func(http.ResponseWriter) { return []func(http.ResponseWriter){stream} },
			retries: 2, refuse: 1, outcome: record.OK, attempts: 2, hint: -1},
		{name: "retry-after over max wait ends retrying",
			replies: func() []func(http.ResponseWriter) {
				return []func(http.ResponseWriter){status(429, "30"), stream}
			},
			retries: 3, maxWait: 10 * time.Second, outcome: record.RateLimited, errText: "status 429", attempts: 1, hint: 30 * time.Second},
		{name: "wait reaching the deadline ends retrying",
			replies: func() []func(http.ResponseWriter) {
				return []func(http.ResponseWriter){status(429, "2"), stream}
			},
			retries: 3, timeout: time.Second, outcome: record.RateLimited, errText: "status 429", attempts: 1, hint: 2 * time.Second},
		{name: "500 is not retried",
			replies: func() []func(http.ResponseWriter) { return []func(http.ResponseWriter){status(500, ""), stream} },
			retries: 3, outcome: record.HTTPError, errText: "status 500", attempts: 1, hint: -1},
		{name: "retries off",
			replies: func() []func(http.ResponseWriter) { return []func(http.ResponseWriter){status(429, "1"), stream} },
			retries: 0, outcome: record.RateLimited, errText: "status 429", attempts: 1, hint: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{replies: tt.replies()}
				c, pn := virtualServer(t, s, func(c *Config) {
					c.Retries = tt.retries
					if tt.maxWait != 0 {
						c.RetryMaxWait = tt.maxWait
					}
					if tt.timeout != 0 {
						c.Timeout = tt.timeout
					}
				})
				pn.refuse = tt.refuse
				rec := run(context.Background(), c, &testReq)
				checkOrder(t, rec)
				if rec.Outcome != tt.outcome || rec.Error != tt.errText || rec.Attempts != tt.attempts {
					t.Fatalf("got %s %q attempts %d, want %s %q %d", rec.Outcome, rec.Error, rec.Attempts, tt.outcome, tt.errText, tt.attempts)
				}
				if want := int64(tt.hint); tt.hint < 0 && rec.RetryAfterNs != record.None || tt.hint >= 0 && rec.RetryAfterNs != want {
					t.Errorf("retry_after_ns %d, want %d", rec.RetryAfterNs, want)
				}
				if len(s.arrivals) != tt.attempts-tt.refuse {
					t.Fatalf("server saw %d attempts, want %d", len(s.arrivals), tt.attempts-tt.refuse)
				}
				for i, w := range tt.waits {
					if gap := s.arrivals[i+1].Sub(s.arrivals[i]); gap < w[0] || gap > w[1] {
						t.Errorf("wait before attempt %d = %v, want in [%v, %v]", i+2, gap, w[0], w[1])
					}
				}
				// SentNs is the first attempt: E2E covers every wait.
				if total := s.arrivals[len(s.arrivals)-1].Sub(s.arrivals[0]); len(tt.waits) > 0 && time.Duration(rec.E2ESend()) < total {
					t.Errorf("e2e %v shorter than the retries (%v)", time.Duration(rec.E2ESend()), total)
				}
			})
		})
	}
}

// TestCancelWhileWaitingVirtual: the run ends during a retry wait.
func TestCancelWhileWaitingVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{replies: []func(http.ResponseWriter){status(429, "5"), stream}}
		c, _ := virtualServer(t, s, func(c *Config) { c.Retries = 2 })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rec := run(ctx, c, &testReq)
		if rec.Outcome != record.Cancelled || rec.Error != "cancelled while waiting to retry" || rec.Status != 429 || rec.Attempts != 1 {
			t.Fatalf("got %s %q status %d attempts %d", rec.Outcome, rec.Error, rec.Status, rec.Attempts)
		}
		if rec.E2ESend() != int64(time.Second) {
			t.Errorf("e2e %v, want 1s", time.Duration(rec.E2ESend()))
		}
	})
}

// TestConnWaitVirtual: with MaxConns 1, a second concurrent request waits
// for the connection, and the wait shows as ConnNs − SentNs.
func TestConnWaitVirtual(t *testing.T) {
	forTransports(t, "", func(t *testing.T, tr string) { testConnWaitVirtual(t, tr) })
}

func testConnWaitVirtual(t *testing.T, tr string) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := virtualServer(t, paced([]string{content("a"), done}, []time.Duration{300 * ms, 0}), func(c *Config) { c.MaxConns = 1; c.Transport = tr })
		recs := make([]record.Record, 2)
		var wg sync.WaitGroup
		for i := range recs {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * ms) // the first request goes first
				recs[i] = run(context.Background(), c, &testReq)
			})
		}
		wg.Wait()
		for i, rec := range recs {
			if rec.Outcome != record.OK {
				t.Fatalf("request %d: %s %q", i, rec.Outcome, rec.Error)
			}
		}
		if w := recs[0].ConnNs - recs[0].SentNs; w != 0 {
			t.Errorf("first request waited %v for a connection", time.Duration(w))
		}
		if w := time.Duration(recs[1].ConnNs - recs[1].SentNs); w != 299*ms {
			t.Errorf("second request waited %v for the connection, want 299ms", w)
		}
	})
}

// TestEndlessStreamVirtual: a stream that never ends is a timeout at the
// per-request deadline, even when the deadline cuts a chunk in half (the
// partial line is not a malformed chunk).
func TestEndlessStreamVirtual(t *testing.T) {
	for _, split := range []bool{false, true} {
		name := "whole chunks"
		if split {
			name = "chunks split across writes"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				exited := make(chan struct{})
				h := func(w http.ResponseWriter, r *http.Request) {
					defer close(exited)
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "text/event-stream")
					f := w.(http.Flusher)
					ev := content("a")
					write := func(s string) bool {
						_, err := io.WriteString(w, s)
						f.Flush()
						return err == nil && r.Context().Err() == nil
					}
					for {
						if split && !write(ev[:len(ev)/2]) {
							return
						}
						time.Sleep(ms)
						if split && !write(ev[len(ev)/2:]) || !split && !write(ev) {
							return
						}
					}
				}
				c, _ := virtualServer(t, http.HandlerFunc(h), func(c *Config) { c.Timeout = 3 * time.Second })
				rec := run(context.Background(), c, &testReq)
				<-exited
				checkOrder(t, rec)
				if rec.Outcome != record.Timeout || !strings.HasPrefix(rec.Error, "timeout after ") {
					t.Fatalf("got %s %q, want timeout", rec.Outcome, rec.Error)
				}
				if e2e := time.Duration(rec.E2ESend()); e2e != 3*time.Second {
					t.Errorf("done − sent = %v, want the 3s timeout", e2e)
				}
			})
		})
	}
}

// TestThinkingFirstVirtual: reasoning (reasoning_content, or vLLM's newer
// "reasoning") and tool-call deltas are the first token of any kind; the
// first answer text comes later; usage details give reasoning and cached
// tokens.
func TestThinkingFirstVirtual(t *testing.T) {
	think := func(field string) string {
		return data(`{"choices":[{"index":0,"delta":{"` + field + `":"hm"},"finish_reason":null}]}`)
	}
	tool := data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}`)
	details := data(`{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":3}}}`)
	for _, tt := range []struct {
		name            string
		first           string // the first token's chunk
		text            bool   // answer text follows
		reasoning, cach int
	}{
		{"reasoning_content", think("reasoning_content"), true, 3, 32},
		{"reasoning (vLLM >= 0.10)", think("reasoning"), true, 3, 32},
		{"tool call, no text", tool, false, 3, 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				events := []string{role(), tt.first, tt.first, tt.first}
				gaps := []time.Duration{5 * ms, 20 * ms, 10 * ms, 10 * ms}
				if tt.text {
					events = append(events, content("a"), content("b"))
					gaps = append(gaps, 40*ms, 10*ms)
				}
				events = append(events, finish(), details, done)
				gaps = append(gaps, 0, 0, 0)
				c, _ := virtualServer(t, paced(events, gaps), nil)
				rec := run(context.Background(), c, &testReq)
				checkOrder(t, rec)
				if rec.Outcome != record.OK {
					t.Fatalf("outcome %s %q", rec.Outcome, rec.Error)
				}
				if got := time.Duration(rec.TTFTSend()); got != 25*ms {
					t.Errorf("TTFT (any token) = %v, want 25ms", got)
				}
				wantText := int64(record.None)
				if tt.text {
					wantText = int64(85 * ms)
				}
				if got := rec.TTFTTextSend(); got != wantText {
					t.Errorf("TTFT (answer text) = %d, want %d", got, wantText)
				}
				if rec.ReasoningTokens != tt.reasoning || rec.CachedTokens != tt.cach {
					t.Errorf("reasoning %d cached %d, want %d %d", rec.ReasoningTokens, rec.CachedTokens, tt.reasoning, tt.cach)
				}
			})
		})
	}
}

// TestSmoothVirtual: with a per-token budget the client keeps the latest
// of chunk i's time − (i − 1) × budget. Chunks at 25, 35, 135, 145 and
// 155 ms after the send, budget 20 ms: max(25, 15, 95, 85, 75) = 95 ms —
// the third chunk, after the 100 ms stall, is the one that decides.
func TestSmoothVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		events := []string{role(), content("a"), content("b"), content("c"), content("d"), content("e"), finish(), usage(11, 5), done}
		gaps := []time.Duration{5 * ms, 20 * ms, 10 * ms, 100 * ms, 10 * ms, 10 * ms, 3 * ms, 0, 2 * ms}
		c, _ := virtualServer(t, paced(events, gaps), func(cfg *Config) { cfg.TokenBudget = 20 * ms })
		rec := run(context.Background(), c, &testReq)
		if got := rec.SmoothNs - rec.SentNs; got != int64(95*ms) {
			t.Errorf("smooth − sent = %v, want 95ms", time.Duration(got))
		}
		c2, _ := virtualServer(t, paced(events, gaps), nil)
		if rec := run(context.Background(), c2, &testReq); rec.SmoothNs != record.None {
			t.Errorf("smooth without a budget: %d", rec.SmoothNs)
		}
	})
}
