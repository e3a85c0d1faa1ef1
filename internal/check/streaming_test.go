package check

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// wordEvents is n content events and a finish event.
func wordEvents(n int, finish string) []any {
	var ev []any
	for i := range n {
		ev = append(ev, contentEvent(fmt.Sprintf(" w%d", i), ""))
	}
	if finish != "" {
		ev = append(ev, contentEvent("", finish))
	}
	return ev
}

func TestIncrementalSim(t *testing.T) {
	// The default 20 ms step: with fastSim's 2 ms, a loaded machine (CI's
	// -race on 2 cores) read several steps' tokens at once.
	r := checkIncremental(context.Background(), &T{Probe: simProbe(t, sim.DefaultConfig(), ""), Config: DefaultConfig()})
	mustStatus(t, r, Pass, "64 content chunks", "64 tokens (usage)")
	if r.Details["bursts"].(int) < 32 {
		t.Errorf("bursts %v: the simulator streams one token per step", r.Details["bursts"])
	}
}

// A proxy that holds the whole answer and sends it at the end.
func TestIncrementalBuffered(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the generation, behind the proxy
		streamEvents(w, true, wordEvents(64, "length")...)
	})
	r := checkIncremental(context.Background(), &T{Probe: p, Config: DefaultConfig()})
	mustStatus(t, r, Fail, "buffered: ", "64 content chunks", "tokens unknown (no usage)")
}

func TestJudgeIncremental(t *testing.T) {
	// chunks at the given milliseconds, the exchange ending at total ms.
	at := func(total int, ms ...int) *Exchange {
		x := &Exchange{Elapsed: time.Duration(total) * time.Millisecond, Done: true}
		for _, m := range ms {
			x.Chunks = append(x.Chunks, Chunk{At: time.Duration(m) * time.Millisecond, Content: "x"})
		}
		return x
	}
	spread := func(from, to, step int) []int {
		var out []int
		for m := from; m <= to; m += step {
			out = append(out, m)
		}
		return out
	}
	for name, tc := range map[string]struct {
		x      *Exchange
		status Status
		want   string
	}{
		"streams":          {at(1000, spread(40, 990, 10)...), Pass, "1st content at 40ms of 1.00s; 96 content chunks over 950ms (95%)"},
		"one piece":        {at(1000, 990), Fail, "1 content chunk(s)"},
		"buffered":         {at(1000, spread(990, 999, 1)...), Fail, "buffered: "},
		"queued then fast": {at(1000, spread(700, 990, 10)...), Warn, "content came late: 1st content at 700ms"},
		"at the pass line": {at(1000, spread(490, 990, 10)...), Pass, "(50%)"},
		"too fast":         {at(10, 1, 2, 3, 9), Warn, "too fast to judge"},
	} {
		t.Run(name, func(t *testing.T) { mustStatus(t, judgeIncremental(tc.x), tc.status, tc.want) })
	}
}

func TestLongSim(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LongTokens = 200
	r := checkLong(context.Background(), &T{Probe: simProbe(t, fastSim(), ""), Config: cfg})
	mustStatus(t, r, Pass, "max_tokens 200: 200 tokens in ", "finish length, [DONE]")
	// Capped below the model's context length when the api check knows it.
	cfg.LongTokens = 100000
	r = checkLong(context.Background(), &T{Probe: simProbe(t, fastSim(), ""), Config: cfg, Server: Server{MaxModelLen: 300}})
	mustStatus(t, r, Pass, "max_tokens 236 (capped to max_model_len 300 − 64): 236 tokens")
	// A server that ignores max_tokens streams past it: not a PASS.
	quirky := fastSim()
	quirky.Quirks = []string{sim.QuirkIgnoreMaxTokens}
	cfg.LongTokens = 100
	r = checkLong(context.Background(), &T{Probe: simProbe(t, quirky, ""), Config: cfg})
	mustStatus(t, r, Warn, "generated past max_tokens (sampling.max-tokens judges it): max_tokens 100: 200 tokens")
}

func TestLongShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"dropped": {func(w http.ResponseWriter, r *http.Request) { streamEvents(w, false, wordEvents(40, "")...) },
			Fail, "dropped: max_tokens 512: the stream ended without [DONE] after 40 content chunks"},
		"past max_tokens, no usage": {func(w http.ResponseWriter, r *http.Request) { streamEvents(w, true, wordEvents(513, "length")...) },
			Warn, "generated past max_tokens (sampling.max-tokens judges it): max_tokens 512: 513 content chunks"},
		"no finish": {func(w http.ResponseWriter, r *http.Request) { streamEvents(w, true, wordEvents(40, "")...) },
			Fail, "no finish reason: max_tokens 512: 40 content chunks in "},
		"refused": {func(w http.ResponseWriter, r *http.Request) { apiError(w, 400, "BadRequestError") },
			Skip, "max_tokens 512 refused: HTTP 400 (BadRequestError); set --long-tokens below the model's cap"},
		"server error": {func(w http.ResponseWriter, r *http.Request) { apiError(w, 500, "InternalServerError") },
			Fail, "max_tokens 512: HTTP 500 (InternalServerError)"},
		"bad event": {func(w http.ResponseWriter, r *http.Request) {
			streamEvents(w, true, contentEvent("a", ""), `{"choices":[{"delta":`)
		},
			Fail, "a data event is not valid JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			r := checkLong(context.Background(), &T{Probe: stubProbe(t, tc.h), Config: DefaultConfig()})
			mustStatus(t, r, tc.status, tc.want)
		})
	}
}

func TestLongTimeout(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		streamEvents(w, false, wordEvents(3, "")...)
		<-r.Context().Done() // stalls until the client gives up
	})
	cfg := DefaultConfig()
	cfg.Timeout = 200 * time.Millisecond
	r := checkLong(context.Background(), &T{Probe: p, Config: cfg})
	mustStatus(t, r, Fail, "max_tokens 512: no end within ", "(3 chunks)")
}

func TestKeepAliveSim(t *testing.T) {
	r := checkKeepAlive(context.Background(), &T{Probe: simProbe(t, fastSim(), ""), Config: DefaultConfig()})
	mustStatus(t, r, Pass, "3 streams on one connection")
}

func TestKeepAliveShapes(t *testing.T) {
	body := func() string {
		var b strings.Builder
		for _, e := range []string{`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`} {
			fmt.Fprintf(&b, "data: %s\n\n", e)
		}
		b.WriteString("data: [DONE]\n\n")
		return b.String()
	}()
	for name, tc := range map[string]struct {
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"says close": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			streamEvents(w, true, wordEvents(2, "length")...)
		}, Warn, "closes after each stream (Connection: close): a new connection per request"},
		"closes silently": {func(w http.ResponseWriter, r *http.Request) {
			// A complete response that promises nothing, then the
			// connection closed under the client.
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			buf.Flush()
			conn.Close()
		}, Fail, "closed after each stream without Connection: close: 3 streams, 3 connections"},
	} {
		t.Run(name, func(t *testing.T) {
			r := checkKeepAlive(context.Background(), &T{Probe: stubProbe(t, tc.h), Config: DefaultConfig()})
			mustStatus(t, r, tc.status, tc.want)
		})
	}
}

// A server that ignores stream:true and answers one JSON body: every
// streaming and usage check that streams says so once and FAILs, and
// streaming.long claims no [DONE].
func TestStreamIgnored(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, chatBody)
	})
	const want = "200 application/json, not an event stream: stream ignored"
	for name, run := range map[string]func(context.Context, *T) Result{
		CheckStreamIncremental: checkIncremental, CheckStreamLong: checkLong, CheckStreamKeepAlive: checkKeepAlive,
		CheckUsageStream: checkUsageStream, CheckUsageCount: checkUsageCount,
		CheckToolsCall: runToolsCall, CheckStructuredSchema: runStructuredSchema,
	} {
		t.Run(name, func(t *testing.T) {
			r := run(context.Background(), &T{Probe: p, Config: DefaultConfig()})
			mustStatus(t, r, Fail, want)
			if n := strings.Count(r.Evidence, "stream ignored"); n != 1 || strings.Contains(r.Evidence, "[DONE]") {
				t.Errorf("evidence %q: says it %d times, or claims [DONE]", r.Evidence, n)
			}
		})
	}
}
