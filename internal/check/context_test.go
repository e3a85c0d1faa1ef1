package check

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/workload"
)

// smallProfile keeps the context tests fast: prompts of median 100,
// at most 1,000 tokens.
func smallProfile() workload.Profile {
	return workload.Profile{Name: "small", Prompt: workload.LogNormal(100, 0.5, 32, 1000),
		Output: workload.Fixed(16), MaxTokens: 16}
}

func TestContextLongSim(t *testing.T) {
	cfg := fastSim()
	// A tokenizer denser than surge's estimate: the prompts must be sized
	// from the server's counts, not by 4 bytes per token.
	cfg.BytesPerToken = 3
	p := simProbe(t, cfg, "")
	conf := DefaultConfig()
	conf.Profile = smallProfile()
	r := runCheck(t, CheckContextLong, p, conf, Server{MaxModelLen: cfg.MaxModelLen})
	wantStatus(t, r, Pass, "the small profile's longest prompt", "vs", "at 100", "measured 3.0")
	got, _ := r.Details["prompt_tokens"].(int)
	if got < 980 || got > 1020 {
		t.Errorf("the server counted %d prompt tokens, want ~1,000 (sized in its tokens): %s", got, r.Evidence)
	}
	if tl, ts := r.Details["ttft_ms"].(float64), r.Details["median_ttft_ms"].(float64); !(tl > ts) {
		t.Errorf("TTFT %vms at 1,000 tokens not above %vms at 100", tl, ts)
	}

	// --context-tokens replaces the profile's length.
	conf.ContextTokens = 600
	r = runCheck(t, CheckContextLong, p, conf, Server{MaxModelLen: cfg.MaxModelLen})
	wantStatus(t, r, Pass, "--context-tokens")
	if got, _ := r.Details["prompt_tokens"].(int); got < 580 || got > 620 {
		t.Errorf("the server counted %d prompt tokens, want ~600", got)
	}
}

func TestContextLongCapped(t *testing.T) {
	cfg := fastSim()
	cfg.MaxModelLen = 700
	p := simProbe(t, cfg, "")
	conf := DefaultConfig()
	conf.Profile = smallProfile()
	r := runCheck(t, CheckContextLong, p, conf, Server{MaxModelLen: cfg.MaxModelLen})
	wantStatus(t, r, Warn, "the small profile's longest prompt", "capped from 1,000 to 660 tokens, below max_model_len 700")
	if got, _ := r.Details["prompt_tokens"].(int); got >= 700 || got < 600 {
		t.Errorf("prompt tokens %d, want just below 700", got)
	}
}

// lengthServer answers prompts up to limit bytes as a chat stream with
// usage (one token per 4 bytes), and longer ones with long(w).
func lengthServer(t *testing.T, limit int, long func(w http.ResponseWriter, r *http.Request, bytes int)) *Probe {
	return tokenizerServer(t, 4, limit, long)
}

// tokenizerServer is lengthServer with bpt bytes per token.
func tokenizerServer(t *testing.T, bpt, limit int, long func(w http.ResponseWriter, r *http.Request, bytes int)) *Probe {
	return serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content)
		}
		if n > limit {
			long(w, r, n)
			return
		}
		usage := map[string]any{"prompt_tokens": n / bpt, "completion_tokens": 1, "total_tokens": n/bpt + 1}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"content": "ok"}, "finish_reason": "length"}}, "usage": usage})
			_, _ = w.Write(b)
			return
		}
		writeSSE(w, true, delta(map[string]any{"content": "ok"}, nil), delta(map[string]any{}, "length"),
			map[string]any{"choices": []any{}, "usage": usage})
	}, "")
}

func TestContextLongRefused(t *testing.T) {
	p := lengthServer(t, 2000, func(w http.ResponseWriter, _ *http.Request, _ int) { writeAPIError(w, 400, "too long") })
	conf := DefaultConfig()
	conf.Profile = smallProfile()
	r := runCheck(t, CheckContextLong, p, conf, Server{})
	wantStatus(t, r, Fail, "400 with an OpenAI error body", "cannot take the profile's prompts")
}

func TestContextExceededSim(t *testing.T) {
	cfg := fastSim()
	cfg.MaxModelLen = 1000
	p := simProbe(t, cfg, "")
	r := runCheck(t, CheckContextExceeded, p, DefaultConfig(), Server{MaxModelLen: cfg.MaxModelLen})
	wantStatus(t, r, Pass, "a ~1,100-token prompt (max_model_len 1,000) → 400 with an OpenAI error body")

	// A --context-tokens shorter than the real context: the server takes
	// the prompt, and says how many tokens it counted.
	conf := DefaultConfig()
	conf.ContextTokens = 500
	r = runCheck(t, CheckContextExceeded, p, conf, Server{})
	wantStatus(t, r, Warn, "a ~564-token prompt (--context-tokens 500) → 200 with 5", "the context is longer than --context-tokens says")
	if got, _ := r.Details["prompt_tokens"].(int); got < 550 || got > 580 {
		t.Errorf("prompt tokens %d, want ~564 (500 + 64)", got)
	}

	wantStatus(t, runCheck(t, CheckContextExceeded, p, DefaultConfig(), Server{}), Skip, "give --context-tokens")
}

func TestContextExceededShapes(t *testing.T) {
	const limitBytes = 4000 // 1,000 tokens of 4 bytes
	cases := []struct {
		name     string
		long     func(w http.ResponseWriter, r *http.Request, n int)
		want     Status
		evidence []string
	}{
		{"clean 413", func(w http.ResponseWriter, _ *http.Request, _ int) { writeAPIError(w, 413, "too large") }, Pass, []string{"413 with an OpenAI error body"}},
		{"400 plain text", func(w http.ResponseWriter, _ *http.Request, _ int) { http.Error(w, "too long", 400) }, Warn, []string{"400, no OpenAI error body"}},
		{"500 HTML", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, "<html><body>Internal Server Error</body></html>")
		}, Fail, []string{"500, an HTML page"}},
		{"truncated to the context", func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeSSE(w, true, delta(map[string]any{"content": "ok"}, nil), delta(map[string]any{}, "length"),
				map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 1}})
		}, Fail, []string{"cut silently to 1,000 tokens"}},
		{"silently truncated", func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeSSE(w, true, delta(map[string]any{"content": "ok"}, nil), delta(map[string]any{}, "length"),
				map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 990, "completion_tokens": 1}})
		}, Fail, []string{"cut silently to 990 tokens"}},
		{"200 without usage", func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeSSE(w, true, delta(map[string]any{"content": "ok"}, nil), delta(map[string]any{}, "length"))
		}, Warn, []string{"no usage"}},
		{"error event in the stream", func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeSSE(w, false, map[string]any{"error": map[string]any{"message": "context exceeded"}})
		}, Warn, []string{"an error event in the stream"}},
		{"hang", func(_ http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() }, Fail, []string{"no answer within 300ms", "a hang"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := lengthServer(t, limitBytes, c.long)
			conf := DefaultConfig()
			conf.Timeout = 300 * time.Millisecond
			r := runCheck(t, CheckContextExceeded, p, conf, Server{MaxModelLen: 1000})
			wantStatus(t, r, c.want, c.evidence...)
		})
	}
}

func TestDistMedian(t *testing.T) {
	cases := []struct {
		d    workload.Dist
		want int
	}{
		{workload.LogNormal(500, 0.6, 32, 4096), 500},
		{workload.LogNormal(500, 0.6, 32, 200), 200},
		{workload.Uniform(3000, 4000), 3500},
		{workload.Fixed(64), 64},
		{workload.Dist{Kind: workload.KindEmpirical, Values: []int{10, 20, 30}, Counts: []int64{1, 1, 5}}, 30},
	}
	for _, c := range cases {
		if got := distMedian(c.d); got != c.want {
			t.Errorf("median of %v = %d, want %d", c.d, got, c.want)
		}
	}
}

// A server that keeps only the last 500 tokens of a prompt, as Ollama
// does past num_ctx, fails context.long: the prompt was not taken whole.
func TestContextLongTruncated(t *testing.T) {
	p := lengthServer(t, 2000, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeSSE(w, true, delta(map[string]any{"content": "ok"}, nil), delta(map[string]any{}, "length"),
			map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 500, "completion_tokens": 1}})
	})
	conf := DefaultConfig()
	conf.Profile = smallProfile()
	r := runCheck(t, CheckContextLong, p, conf, Server{})
	wantStatus(t, r, Fail, "the prompt was cut silently: the server counted 500 of ~1,000 tokens")
}

// A tokenizer of one token per byte (4× surge's estimate): the
// calibration sizes its second prompt by what the first measured, so no
// prompt goes past a context of 1,000 tokens, and the long one is sized
// in the server's tokens.
func TestContextLongDenseTokenizer(t *testing.T) {
	p := tokenizerServer(t, 1, 1000, func(w http.ResponseWriter, _ *http.Request, _ int) { writeAPIError(w, 400, "too long") })
	conf := DefaultConfig()
	conf.Profile = smallProfile()
	r := runCheck(t, CheckContextLong, p, conf, Server{MaxModelLen: 1000})
	wantStatus(t, r, Warn, "capped from 1,000 to 960 tokens, below max_model_len 1,000", "measured 1.00 bytes per token")
	if got, _ := r.Details["prompt_tokens"].(int); got < 940 || got > 980 {
		t.Errorf("prompt tokens %d, want ~960", got)
	}
}

// A server whose usage always says 10 prompt tokens: the calibration
// cannot fit, and the long prompt must not pass on surge's estimate.
func TestContextLongUsageTooSmall(t *testing.T) {
	p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"content": "ok"}, "finish_reason": "length"}}, "usage": usage})
			_, _ = w.Write(b)
			return
		}
		writeSSE(w, true, delta(map[string]any{"content": "ok"}, nil), delta(map[string]any{}, "length"),
			map[string]any{"choices": []any{}, "usage": usage})
	}, "")
	r := runCheck(t, CheckContextLong, p, DefaultConfig(), Server{})
	wantStatus(t, r, Fail, "usage reports 10 prompt tokens for ~4,096 sent", "the calibration did not fit")
}

// --context-tokens is the user's own prompt length: past max_model_len it
// cannot be served, a FAIL (the profile's longest prompt, a guess, is
// capped with a WARN: TestContextLongCapped).
func TestContextTokensPastMaxModelLen(t *testing.T) {
	p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a request was sent") }, "")
	conf := DefaultConfig()
	conf.ContextTokens = 10000
	r := runCheck(t, CheckContextLong, p, conf, Server{MaxModelLen: 8192})
	wantStatus(t, r, Fail, "your prompts (--context-tokens 10,000) do not fit max_model_len 8,192")
}
