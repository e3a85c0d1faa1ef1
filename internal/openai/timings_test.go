package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// llamaFinal is the last chunk of a llama-server stream
// (tools/server/server-task.cpp: the final delta carries "timings").
const llamaFinal = `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1764590000,"id":"chatcmpl-x","model":"m","object":"chat.completion.chunk",` +
	`"usage":{"completion_tokens":2,"prompt_tokens":31,"total_tokens":33},` +
	`"timings":{"cache_n":9,"prompt_n":22,"prompt_ms":41.25,"prompt_per_token_ms":1.875,"prompt_per_second":533.3,"predicted_n":2,"predicted_ms":18.5,"predicted_per_token_ms":9.25,"predicted_per_second":108.1}}`

func TestScanTimings(t *testing.T) {
	ch, err := ScanChunk([]byte(llamaFinal))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Timings{Present: true, PromptMs: 41.25, PredictedMs: 18.5, CacheN: 9}); ch.Timings != want {
		t.Errorf("timings %+v, want %+v", ch.Timings, want)
	}
	for js, want := range map[string]Timings{
		`{"timings":null}`: {},
		`{"timings":{}}`:   {Present: true, PromptMs: -1, PredictedMs: -1, CacheN: -1},
		`{"timings":{"prompt_ms":-3,"cache_n":1.5}}`:       {Present: true, PromptMs: -1, PredictedMs: -1, CacheN: -1},
		`{"timings":{"prompt_ms":"1","predicted_ms":2e3}}`: {Present: true, PromptMs: -1, PredictedMs: 2000, CacheN: -1},
	} {
		ch, err := ScanChunk([]byte(js))
		if err != nil || ch.Timings != want {
			t.Errorf("%s: %+v, %v; want %+v", js, ch.Timings, err, want)
		}
	}
	if _, err := ScanChunk([]byte(`{"timings":{"prompt_ms":1.}}`)); err == nil {
		t.Error("a malformed number in timings was accepted")
	}
}

// llama.cpp's timings land in the record, streamed (final chunk) and not.
func TestLlamaCppTimings(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(role() + content("hi") + content("!") + data(llamaFinal) + done))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi!"},"finish_reason":"stop"}],` +
				`"usage":{"completion_tokens":2,"prompt_tokens":31},"timings":{"cache_n":9,"prompt_ms":41.25,"predicted_ms":18.5}}`))
		}))
		c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.Stream = stream })
		rec := run(context.Background(), c, &testReq)
		srv.Close()
		if rec.Outcome != record.OK {
			t.Fatalf("stream %v: %s %s", stream, rec.Outcome, rec.Error)
		}
		if rec.EnginePrefillNs != 41_250_000 || rec.EngineDecodeNs != 18_500_000 || rec.CachedTokens != 9 || rec.EngineQueueNs != record.None {
			t.Errorf("stream %v: prefill %d decode %d cached %d queue %d", stream, rec.EnginePrefillNs, rec.EngineDecodeNs, rec.CachedTokens, rec.EngineQueueNs)
		}
	}
}

// TGI's timing headers (whole ms) give the engine queue and e2e.
func TestTGIHeaders(t *testing.T) {
	for name, tc := range map[string]struct {
		h            map[string]string
		queue, total int64
	}{
		"total":       {map[string]string{"x-queue-time": "12", "x-inference-time": "340", "x-total-time": "355", "x-validation-time": "3"}, 12e6, 355e6},
		"no total":    {map[string]string{"x-queue-time": "12", "x-inference-time": "340"}, 12e6, 352e6},
		"none":        {nil, record.None, record.None},
		"not numbers": {map[string]string{"x-queue-time": "soon", "x-total-time": "-1"}, record.None, record.None},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.h {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"completion_tokens":1,"prompt_tokens":3}}`))
		}))
		c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.Stream = false })
		rec := run(context.Background(), c, &testReq)
		srv.Close()
		if rec.EngineQueueNs != tc.queue || rec.EngineE2ENs != tc.total {
			t.Errorf("%s: queue %d e2e %d, want %d %d", name, rec.EngineQueueNs, rec.EngineE2ENs, tc.queue, tc.total)
		}
	}
}

// The final chunk with timings is scanned without allocating, like every other.
func TestScanTimingsAllocs(t *testing.T) {
	b := []byte(llamaFinal)
	if n := testing.AllocsPerRun(100, func() { _, _ = ScanChunk(b) }); n != 0 {
		t.Errorf("%v allocations per scan", n)
	}
}
