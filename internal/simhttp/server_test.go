package simhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/surge-bench/surge/internal/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fastConfig is an engine whose steps take 1 ms whatever the batch, with a
// natural output length of exactly 5 tokens.
func fastConfig() sim.Config {
	c := sim.DefaultConfig()
	c.StepBase = time.Millisecond
	c.StepPerDecodeSeq = 0
	c.StepPerPrefillToken = 0
	c.OutputMean = 5
	c.OutputSigma = 0
	c.MaxModelLen = 1024
	return c
}

type env struct {
	t      *testing.T
	s      *Server
	base   string // …/v1
	root   string // http://host:port
	client *http.Client
}

func startServer(t *testing.T, cfg sim.Config, opts ...Option) *env {
	t.Helper()
	s, base, err := Listen(context.Background(), "127.0.0.1:0", cfg, nil, opts...)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}
	e := &env{t: t, s: s, base: base, root: strings.TrimSuffix(base, "/v1"),
		client: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func (e *env) post(path, body string) *http.Response {
	e.t.Helper()
	resp, err := e.client.Post(e.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

func (e *env) get(path string) *http.Response {
	e.t.Helper()
	resp, err := e.client.Get(e.root + path)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

// sseEvent is one "data:" line and when it was read.
type sseEvent struct {
	data string
	at   time.Time
}

// readSSE reads data lines until EOF; err is nil on a clean end of body.
func readSSE(r io.Reader) ([]sseEvent, error) {
	br := bufio.NewReader(r)
	var out []sseEvent
	for {
		line, err := br.ReadString('\n')
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, sseEvent{strings.TrimSuffix(d, "\n"), time.Now()})
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func TestStreaming(t *testing.T) {
	e := startServer(t, fastConfig())
	chatMsgs := `"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there, engine"}]`
	chatPrompt := EstimatePromptTokens(true, "be brief", "hello there, engine")
	tests := []struct {
		name       string
		path       string
		body       string
		wantTokens int
		wantReason string
		wantUsage  bool
		wantPrompt int
	}{
		{"chat with usage", "/chat/completions", `{"model":"surge-sim",` + chatMsgs + `,"max_tokens":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, 7, "length", true, chatPrompt},
		{"chat without usage", "/chat/completions", `{` + chatMsgs + `,"max_tokens":3,"ignore_eos":true,"stream":true}`, 3, "length", false, chatPrompt},
		{"chat include_usage false", "/chat/completions", `{` + chatMsgs + `,"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":false}}`, 3, "length", false, chatPrompt},
		{"chat natural stop", "/chat/completions", `{` + chatMsgs + `,"max_completion_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`, 5, "stop", true, chatPrompt},
		{"completions with usage", "/completions", `{"prompt":"0123456789","max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, 6, "length", true, 3},
		{"completions token ids", "/completions", `{"prompt":[1,2,3,4],"max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, 2, "length", true, 4},
		{"completions without usage", "/completions", `{"prompt":"hi","max_tokens":4,"ignore_eos":true,"stream":true}`, 4, "length", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := tt.path == "/chat/completions"
			resp := e.post(tt.path, tt.body)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type %q", ct)
			}
			if r := resp.Header.Get(ReplicaHeader); r != "r0" {
				t.Errorf("%s = %q, want r0", ReplicaHeader, r)
			}
			events, err := readSSE(resp.Body)
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			if len(events) == 0 || events[len(events)-1].data != "[DONE]" {
				t.Fatalf("stream does not end with [DONE]: %v", events)
			}
			var chunks []chunk
			for _, ev := range events[:len(events)-1] {
				var c chunk
				if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
					t.Fatalf("chunk %q: %v", ev.data, err)
				}
				chunks = append(chunks, c)
			}
			wantObject := map[bool]string{true: "chat.completion.chunk", false: "text_completion"}[chat]
			for i, c := range chunks {
				if c.ID != chunks[0].ID || c.Object != wantObject || c.Model != "surge-sim" || c.Created != chunks[0].Created || c.Created == 0 {
					t.Errorf("chunk %d head: id %q object %q model %q created %d", i, c.ID, c.Object, c.Model, c.Created)
				}
			}
			if chat {
				first := chunks[0]
				if len(first.Choices) != 1 || first.Choices[0].Delta == nil || first.Choices[0].Delta.Role == nil ||
					*first.Choices[0].Delta.Role != "assistant" || first.Choices[0].Delta.Content == nil || *first.Choices[0].Delta.Content != "" {
					t.Fatalf("first chat chunk is not role-only: %s", events[0].data)
				}
				chunks = chunks[1:]
			}
			if tt.wantUsage {
				last := chunks[len(chunks)-1]
				if len(last.Choices) != 0 || last.Usage == nil {
					t.Fatalf("last chunk before [DONE] is not a usage chunk: %+v", last)
				}
				want := usage{tt.wantPrompt, tt.wantTokens, tt.wantPrompt + tt.wantTokens}
				if *last.Usage != want {
					t.Errorf("usage = %+v, want %+v", *last.Usage, want)
				}
				chunks = chunks[:len(chunks)-1]
			}
			fin := chunks[len(chunks)-1]
			if len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != tt.wantReason {
				t.Fatalf("finish chunk = %+v, want reason %q", fin, tt.wantReason)
			}
			if chat && (fin.Choices[0].Delta == nil || fin.Choices[0].Delta.Content != nil || fin.Choices[0].Delta.Role != nil) {
				t.Errorf("chat finish chunk delta not empty")
			}
			content := chunks[:len(chunks)-1]
			if len(content) != tt.wantTokens {
				t.Fatalf("%d content chunks, want %d", len(content), tt.wantTokens)
			}
			for i, c := range content {
				if c.Usage != nil || len(c.Choices) != 1 || c.Choices[0].FinishReason != nil {
					t.Fatalf("content chunk %d malformed: %+v", i, c)
				}
				text := c.Choices[0].Text
				if chat {
					text = c.Choices[0].Delta.Content
				}
				if text == nil || *text != tokenText(i) {
					t.Errorf("content chunk %d text = %v, want %q", i, text, tokenText(i))
				}
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	e := startServer(t, fastConfig(), WithModel("my-model"))
	tests := []struct {
		name       string
		path       string
		body       string
		wantTokens int
		wantReason string
		wantPrompt int
	}{
		{"chat length", "/chat/completions", `{"model":"my-model","messages":[{"role":"user","content":"abcdefgh"}],"max_tokens":9,"ignore_eos":true}`, 9, "length", EstimatePromptTokens(true, "abcdefgh")},
		{"chat stop", "/chat/completions", `{"messages":[{"role":"user","content":"abcdefgh"}],"max_tokens":40,"stream":false}`, 5, "stop", EstimatePromptTokens(true, "abcdefgh")},
		{"chat cap below natural", "/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":2}`, 2, "length", EstimatePromptTokens(true, "a")},
		{"completions length", "/completions", `{"model":"my-model","prompt":["abcdefgh"],"max_tokens":4,"ignore_eos":true}`, 4, "length", 2},
		{"completions stop", "/completions", `{"prompt":"abcdefgh","max_tokens":40}`, 5, "stop", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := tt.path == "/chat/completions"
			resp := e.post(tt.path, tt.body)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get(ReplicaHeader) != "r0" {
				t.Fatalf("status %d, replica %q", resp.StatusCode, resp.Header.Get(ReplicaHeader))
			}
			var body struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Model   string `json:"model"`
				Choices []struct {
					Message *struct {
						Role    string `json:"role"`
						Content string `json:"content"`
					} `json:"message"`
					Text         *string `json:"text"`
					FinishReason string  `json:"finish_reason"`
				} `json:"choices"`
				Usage usage `json:"usage"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("decoding the body: %v", err)
			}
			wantObject := map[bool]string{true: "chat.completion", false: "text_completion"}[chat]
			if body.Object != wantObject || body.Model != "my-model" || body.ID == "" || len(body.Choices) != 1 {
				t.Fatalf("body = %+v", body)
			}
			var want strings.Builder
			for i := range tt.wantTokens {
				want.WriteString(tokenText(i))
			}
			ch := body.Choices[0]
			var got string
			switch {
			case chat && ch.Message != nil && ch.Message.Role == "assistant":
				got = ch.Message.Content
			case !chat && ch.Text != nil:
				got = *ch.Text
			default:
				t.Fatalf("choice = %+v", ch)
			}
			if got != want.String() || ch.FinishReason != tt.wantReason {
				t.Errorf("text %q reason %q, want %q %q", got, ch.FinishReason, want.String(), tt.wantReason)
			}
			if wantU := (usage{tt.wantPrompt, tt.wantTokens, tt.wantPrompt + tt.wantTokens}); body.Usage != wantU {
				t.Errorf("usage = %+v, want %+v", body.Usage, wantU)
			}
		})
	}
}

type errorJSON struct {
	Error struct {
		Message *string `json:"message"`
		Type    *string `json:"type"`
		Param   *string `json:"param"`
		Code    *int    `json:"code"`
	} `json:"error"`
}

// checkError asserts an OpenAI-shaped error body with the status as code.
func checkError(t *testing.T, resp *http.Response, status int) errorJSON {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d", resp.StatusCode, status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	raw, _ := io.ReadAll(resp.Body)
	var fields map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("error body %q: %v", raw, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := fields["error"][k]; !ok {
			t.Errorf("error body %s lacks %q", raw, k)
		}
	}
	var e errorJSON
	_ = json.Unmarshal(raw, &e)
	if e.Error.Code == nil || *e.Error.Code != status || e.Error.Message == nil || *e.Error.Message == "" || e.Error.Type == nil {
		t.Errorf("error body %s", raw)
	}
	return e
}

func TestBadRequests(t *testing.T) {
	e := startServer(t, fastConfig())
	huge := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", MaxBodyBytes) + `"}]}`
	tests := []struct {
		name   string
		path   string
		body   string
		status int
		msg    string // substring of the message, if checked
	}{
		{"malformed json", "/chat/completions", `{"messages":[`, 400, "not valid JSON"},
		{"not an object", "/completions", `"hello"`, 400, ""},
		{"missing messages", "/chat/completions", `{"model":"surge-sim","max_tokens":5}`, 400, "messages"},
		{"empty messages", "/chat/completions", `{"messages":[]}`, 400, "messages"},
		{"missing prompt", "/completions", `{"max_tokens":5}`, 400, "prompt"},
		{"max_tokens zero", "/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":0}`, 400, "max_tokens"},
		{"max_tokens negative", "/completions", `{"prompt":"a","max_tokens":-1}`, 400, "max_tokens"},
		{"max_tokens over max_model_len", "/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":1024}`, 400, "maximum context length is 1024"},
		{"max_tokens absurd", "/completions", `{"prompt":"a","max_tokens":1000000000000}`, 400, "max_tokens"},
		{"prompt over max_model_len", "/completions", `{"prompt":"` + strings.Repeat("abcd", 1024) + `"}`, 400, "maximum context length"},
		{"unknown model", "/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"a"}]}`, 404, "The model `gpt-9` does not exist."},
		{"body too large", "/chat/completions", huge, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.post(tt.path, tt.body)
			defer resp.Body.Close()
			got := checkError(t, resp, tt.status)
			if tt.msg != "" && !strings.Contains(*got.Error.Message, tt.msg) {
				t.Errorf("message %q lacks %q", *got.Error.Message, tt.msg)
			}
		})
	}
	t.Run("unknown path", func(t *testing.T) {
		resp := e.get("/v1/nope")
		defer resp.Body.Close()
		checkError(t, resp, 404)
	})
	t.Run("wrong method", func(t *testing.T) {
		resp := e.get("/v1/chat/completions")
		defer resp.Body.Close()
		checkError(t, resp, http.StatusMethodNotAllowed)
		if resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("Allow = %q", resp.Header.Get("Allow"))
		}
	})
	// The server survived all of the above.
	resp := e.get("/health")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health after bad requests: %d", resp.StatusCode)
	}
}

func TestModelsAndHealth(t *testing.T) {
	e := startServer(t, fastConfig(), WithModel("m1"))
	resp := e.get("/health")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health: %d", resp.StatusCode)
	}
	resp = e.get("/v1/models")
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "m1" || list.Data[0].Object != "model" || list.Data[0].MaxModelLen != 1024 {
		t.Errorf("/v1/models = %+v", list)
	}
}

// TestAdmissionAndCancel fills a one-sequence engine with a one-request
// waiting queue: a further request gets 429 with Retry-After; closing the
// streams cancels them in the engine.
func TestAdmissionAndCancel(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxNumBatchedTokens = 64
	cfg.MaxWaiting = 1
	cfg.StepBase = 20 * time.Millisecond
	e := startServer(t, cfg)
	body := `{"messages":[{"role":"user","content":"a"}],"max_tokens":1000,"ignore_eos":true,"stream":true}`
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	var limited *http.Response
	for range 4 {
		resp := e.post("/chat/completions", body)
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = resp
			break
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			t.Fatalf("status %d before the queue was full", resp.StatusCode)
		}
		open = append(open, resp)
	}
	if limited == nil {
		t.Fatal("no 429 with 1 running + 1 waiting allowed")
	}
	defer limited.Body.Close()
	// The second stream got its 200 while waiting in the queue: headers
	// leave at acceptance, as vLLM sends them.
	if len(open) != 2 {
		t.Errorf("429 after %d accepted streams, want 2", len(open))
	}
	ra, err := strconv.Atoi(limited.Header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Errorf("Retry-After %q, want an integer ≥ 1", limited.Header.Get("Retry-After"))
	}
	checkError(t, limited, http.StatusTooManyRequests)
	if r := limited.Header.Get(ReplicaHeader); r != "r0" {
		t.Errorf("429 %s = %q, want r0", ReplicaHeader, r)
	}
	if snap := e.s.Snapshot(); snap.Running != 1 || snap.Waiting != 1 || snap.Rejected != 1 {
		t.Errorf("snapshot running %d waiting %d rejected %d, want 1 1 1", snap.Running, snap.Waiting, snap.Rejected)
	}
	for _, r := range open {
		r.Body.Close()
	}
	open = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap := e.s.Snapshot()
		if snap.Running == 0 && snap.Waiting == 0 && snap.Cancelled == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed streams not cancelled: running %d waiting %d cancelled %d", snap.Running, snap.Waiting, snap.Cancelled)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// contentChunks counts the chat content chunks among events, stopping at
// the first one that is not valid JSON; it returns the count and the index
// in events of each content chunk.
func contentChunks(events []sseEvent) []int {
	var idx []int
	for i, ev := range events {
		var c chunk
		if json.Unmarshal([]byte(ev.data), &c) != nil {
			break
		}
		if len(c.Choices) == 1 && c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
			idx = append(idx, i)
		}
	}
	return idx
}

// TestFaults enacts each fault kind. The plan (which token a mid-stream
// fault strikes at) is deterministic from the seed and the submission
// order, so a twin cluster with the same configuration tells the test
// where to expect it.
func TestFaults(t *testing.T) {
	const delay = 300 * time.Millisecond
	const maxTokens = 20
	streamBody := `{"messages":[{"role":"user","content":"a"}],"max_tokens":20,"ignore_eos":true,"stream":true}`
	unaryBody := `{"messages":[{"role":"user","content":"a"}],"max_tokens":20,"ignore_eos":true}`
	tests := []struct {
		name  string
		set   func(*sim.Config)
		body  string
		check func(t *testing.T, resp *http.Response, sent time.Time, plan sim.FaultPlan)
	}{
		{"500", func(c *sim.Config) { c.Fault500 = 1 }, streamBody, func(t *testing.T, resp *http.Response, _ time.Time, _ sim.FaultPlan) {
			checkError(t, resp, 500)
		}},
		{"503", func(c *sim.Config) { c.Fault503 = 1 }, unaryBody, func(t *testing.T, resp *http.Response, _ time.Time, _ sim.FaultPlan) {
			checkError(t, resp, 503)
		}},
		{"reset stream", func(c *sim.Config) { c.FaultReset = 1 }, streamBody, func(t *testing.T, resp *http.Response, _ time.Time, plan sim.FaultPlan) {
			events, err := readSSE(resp.Body)
			if err == nil {
				t.Fatalf("stream ended cleanly after %d events, want a connection error", len(events))
			}
			if n := len(contentChunks(events)); n != plan.AtToken-1 {
				t.Errorf("reset after %d content chunks, want %d (instead of token %d)", n, plan.AtToken-1, plan.AtToken)
			}
			if len(events) > 0 && events[len(events)-1].data == "[DONE]" {
				t.Error("reset stream carried [DONE]")
			}
		}},
		{"malformed stream", func(c *sim.Config) { c.FaultMalformed = 1 }, streamBody, func(t *testing.T, resp *http.Response, _ time.Time, plan sim.FaultPlan) {
			events, err := readSSE(resp.Body)
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			bad := 0
			for _, ev := range events {
				if !json.Valid([]byte(ev.data)) {
					bad++
				}
			}
			if bad != 1 || json.Valid([]byte(events[len(events)-1].data)) {
				t.Errorf("%d malformed chunks (want 1, the last): %v", bad, events)
			}
			if n := len(contentChunks(events)); n != plan.AtToken-1 {
				t.Errorf("malformed chunk after %d content chunks, want %d", n, plan.AtToken-1)
			}
		}},
		{"stall stream", func(c *sim.Config) { c.FaultStall = 1; c.FaultStallDelay = delay }, streamBody, func(t *testing.T, resp *http.Response, _ time.Time, plan sim.FaultPlan) {
			events, err := readSSE(resp.Body)
			if err != nil || events[len(events)-1].data != "[DONE]" {
				t.Fatalf("stalled stream did not complete: %v", err)
			}
			idx := contentChunks(events)
			if len(idx) != maxTokens {
				t.Fatalf("%d content chunks, want %d", len(idx), maxTokens)
			}
			i := idx[plan.AtToken-1] // the stalled token; the role chunk precedes token 1
			// The client may read the chunk before the stall late; allow
			// for that, far above the 1 ms steps.
			if gap := events[i].at.Sub(events[i-1].at); gap < delay-100*time.Millisecond {
				t.Errorf("gap before token %d = %v, want ≈ %v", plan.AtToken, gap, delay)
			}
		}},
		{"slow headers", func(c *sim.Config) { c.FaultSlowHeaders = 1; c.FaultSlowHeadersDelay = delay }, streamBody, func(t *testing.T, resp *http.Response, sent time.Time, _ sim.FaultPlan) {
			if d := time.Since(sent); d < delay {
				t.Errorf("headers after %v, want ≥ %v", d, delay)
			}
			if events, err := readSSE(resp.Body); err != nil || events[len(events)-1].data != "[DONE]" {
				t.Errorf("slow-headers stream did not complete: %v", err)
			}
		}},
		{"malformed unary", func(c *sim.Config) { c.FaultMalformed = 1 }, unaryBody, func(t *testing.T, resp *http.Response, _ time.Time, _ sim.FaultPlan) {
			raw, err := io.ReadAll(resp.Body)
			if err != nil || json.Valid(raw) {
				t.Errorf("body %q (err %v) should be truncated JSON", raw, err)
			}
		}},
		{"stall unary", func(c *sim.Config) { c.FaultStall = 1; c.FaultStallDelay = delay }, unaryBody, func(t *testing.T, resp *http.Response, sent time.Time, _ sim.FaultPlan) {
			raw, err := io.ReadAll(resp.Body)
			if err != nil || !json.Valid(raw) {
				t.Errorf("stalled body invalid: %v", err)
			}
			if d := time.Since(sent); d < delay {
				t.Errorf("answer after %v, want ≥ %v", d, delay)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			tt.set(&cfg)
			twin, err := sim.NewCluster(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ticket, _ := twin.Submit(0, sim.Request{PromptTokens: EstimatePromptTokens(true, "a"), MaxTokens: maxTokens, IgnoreEOS: true}, nil)
			if ticket.Fault.Kind == sim.FaultNone {
				t.Fatal("twin cluster planned no fault")
			}
			e := startServer(t, cfg)
			sent := time.Now()
			resp := e.post("/chat/completions", tt.body)
			defer resp.Body.Close()
			if resp.Header.Get(ReplicaHeader) != "r0" {
				t.Errorf("%s = %q, want r0", ReplicaHeader, resp.Header.Get(ReplicaHeader))
			}
			tt.check(t, resp, sent, ticket.Fault)
		})
	}
	t.Run("reset unary", func(t *testing.T) {
		cfg := fastConfig()
		cfg.FaultReset = 1
		e := startServer(t, cfg)
		resp, err := e.client.Post(e.base+"/chat/completions", "application/json", strings.NewReader(unaryBody))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got status %d, want a connection error", resp.StatusCode)
		}
	})
}

func TestMetrics(t *testing.T) {
	e := startServer(t, fastConfig())
	resp := e.post("/chat/completions", `{"messages":[{"role":"user","content":"abcd"}],"max_tokens":6,"ignore_eos":true,"stream":true}`)
	if _, err := readSSE(resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp = e.post("/completions", `{"prompt":"abcd","max_tokens":50}`) // natural stop
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	fams := scrape(t, e)
	want := map[string]float64{ // name → minimum value (count for histograms)
		"vllm:num_requests_waiting":        0,
		"vllm:num_requests_running":        0,
		"vllm:kv_cache_usage_perc":         0,
		"vllm:request_queue_time_seconds":  2,
		"vllm:time_to_first_token_seconds": 2,
		"vllm:e2e_request_latency_seconds": 2,
		"vllm:prompt_tokens_total":         2 + ChatTokensPerMessage + ChatReplyPrimerTokens,
		"vllm:generation_tokens_total":     11,
		"vllm:request_success_total":       2,
		"surge_sim_replicas":               1,
		"surge_sim_replicas_starting":      0,
		"surge_sim_scaling_events_total":   0,
	}
	for name, min := range want {
		f, ok := fams[name]
		if !ok {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		total := 0.0
		for _, m := range f.GetMetric() {
			hasModel := false
			for _, l := range m.GetLabel() {
				if l.GetName() == "model_name" && l.GetValue() == "surge-sim" {
					hasModel = true
				}
			}
			if !hasModel {
				t.Errorf("%s: series without model_name=surge-sim", name)
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
		if total < min {
			t.Errorf("%s = %v, want ≥ %v", name, total, min)
		}
	}
	reasons := map[string]float64{}
	for _, m := range fams["vllm:request_success_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "finished_reason" {
				reasons[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if reasons["length"] != 1 || reasons["stop"] != 1 {
		t.Errorf("request_success_total by reason = %v, want length 1, stop 1", reasons)
	}
	kinds := 0
	for _, m := range fams["surge_sim_scaling_events_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "kind" {
				kinds++
			}
		}
	}
	if kinds != len(scalingKinds) {
		t.Errorf("surge_sim_scaling_events_total has %d kinds, want %d", kinds, len(scalingKinds))
	}
}

// TestAutoscaleEvents runs the autoscaler with millisecond delays: the
// event log fills, and a request after model_ready is served by r1.
func TestAutoscaleEvents(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxNumBatchedTokens = 64
	cfg.StepBase = 10 * time.Millisecond
	cfg.Autoscale = true
	cfg.MaxReplicas = 2
	cfg.ScaleUpWaiting = 1
	cfg.ScaleUpHold = 0
	cfg.ScaleRequestDelay = 10 * time.Millisecond
	cfg.NodeReadyDelay = 10 * time.Millisecond
	cfg.ContainerReadyDelay = 10 * time.Millisecond
	cfg.ModelReadyDelay = 10 * time.Millisecond
	cfg.ScaleDownIdle = time.Hour
	e := startServer(t, cfg)
	body := `{"messages":[{"role":"user","content":"a"}],"max_tokens":500,"ignore_eos":true,"stream":true}`
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for range 3 { // 1 running + 2 waiting > 1 per replica
		open = append(open, e.post("/chat/completions", body))
	}
	deadline := time.Now().Add(10 * time.Second)
	var evs EventsJSON
	for {
		resp := e.get("/sim/events")
		err := json.NewDecoder(resp.Body).Decode(&evs)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/sim/events: %v", err)
		}
		if len(evs.Events) > 0 && evs.Events[len(evs.Events)-1].Kind == sim.EventModelReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("autoscaler did not serve on a new replica: %+v", evs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Waiting requests stay on r0; the next request goes to the least
	// loaded replica, the new one.
	resp := e.post("/chat/completions", body)
	open = append(open, resp)
	if got := resp.Header.Get(ReplicaHeader); got != "r1" {
		t.Errorf("request after scale-up served by %q, want r1", got)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // admitted: headers and role chunk sent
		t.Fatal(err)
	}
	resp = e.get("/sim/events")
	err := json.NewDecoder(resp.Body).Decode(&evs)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("/sim/events: %v", err)
	}
	start, err := time.Parse(time.RFC3339Nano, evs.Start)
	if err != nil {
		t.Fatalf("start %q: %v", evs.Start, err)
	}
	var kinds []string
	for _, ev := range evs.Events {
		kinds = append(kinds, ev.Kind)
		at, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil || ev.AtSeconds < 0 || at.Sub(start)-time.Duration(ev.AtSeconds*1e9) > time.Millisecond || ev.Replica != 1 {
			t.Errorf("event %+v (time err %v)", ev, err)
		}
	}
	wantKinds := []string{sim.EventScaleTrigger, sim.EventCapacityRequested, sim.EventNodeReady, sim.EventContainerReady, sim.EventModelReady, sim.EventFirstServed}
	if strings.Join(kinds, ",") != strings.Join(wantKinds, ",") {
		t.Errorf("event kinds %v, want %v", kinds, wantKinds)
	}
	if snap := e.s.Snapshot(); snap.ReadyReplicas != 2 {
		t.Errorf("ready replicas %d, want 2", snap.ReadyReplicas)
	}
	fams := scrape(t, e)
	if v := fams["surge_sim_replicas"].GetMetric()[0].GetGauge().GetValue(); v != 2 {
		t.Errorf("surge_sim_replicas = %v, want 2", v)
	}
}

func TestCloseWithOpenStreams(t *testing.T) {
	cfg := fastConfig()
	cfg.StepBase = 10 * time.Millisecond
	s, base, err := Listen(context.Background(), "127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	resp, err := client.Post(base+"/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"a"}],"max_tokens":1000,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the role chunk
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a stream open")
	}
	if _, err := io.Copy(io.Discard, br); err == nil {
		// A clean end is acceptable only if [DONE] was not sent; either way
		// the stream must not go on.
		t.Log("stream ended at close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestListenContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, base, err := Listen(ctx, "127.0.0.1:0", fastConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Errorf("base URL %q", base)
	}
	cancel()
	host := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err != nil {
			break // closed
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("server still listening after its context was cancelled")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNewInvalidConfig(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxNumSeqs = 0
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "max_num_seqs") {
		t.Errorf("New with max_num_seqs 0: %v", err)
	}
	if _, _, err := Listen(context.Background(), "127.0.0.1:0", cfg, nil); err == nil {
		t.Error("Listen with an invalid config succeeded")
	}
	if _, _, err := Listen(context.Background(), "256.0.0.1:0", fastConfig(), nil); err == nil {
		t.Error("Listen on a bad address succeeded")
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct {
		addr string
		want string
	}{
		{"127.0.0.1:8000", "http://127.0.0.1:8000/v1"},
		{"0.0.0.0:8000", "http://127.0.0.1:8000/v1"},
		{"[::]:8000", "http://127.0.0.1:8000/v1"},
		{"[::1]:8000", "http://[::1]:8000/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a, err := net.ResolveTCPAddr("tcp", tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			if got := baseURL(a); got != tt.want {
				t.Errorf("baseURL(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {-time.Second, 1}} {
		if got := retryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// scrape fetches /metrics and parses it as Prometheus text.
func scrape(t *testing.T, e *env) map[string]*dto.MetricFamily {
	t.Helper()
	resp := e.get("/metrics")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// TestGuard checks that a panicking handler costs its client the
// connection but not the server, and that requests after Close get 503.
func TestGuard(t *testing.T) {
	s, err := New(fastConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ts := httptest.NewServer(s.guard(mux))
	defer ts.Close()
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	client := ts.Client()
	defer client.CloseIdleConnections()
	if resp, err := client.Get(ts.URL + "/panic"); err == nil {
		resp.Body.Close()
		t.Errorf("panicking handler answered %d, want a dropped connection", resp.StatusCode)
	}
	resp, err := client.Get(ts.URL + "/ok")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("after a panic: %v", err)
	}
	resp.Body.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err = client.Get(ts.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	checkError(t, resp, http.StatusServiceUnavailable)
}

// TestHandlerWithoutStart serves through Handler on a server the caller
// runs (httptest), which must start the driver.
func TestHandlerWithoutStart(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(fastConfig(), logger)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Close()
	client := ts.Client()
	defer client.CloseIdleConnections()
	const secret = "PROMPT-TEXT-NEVER-LOGGED"
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"` + secret + `"}],"max_tokens":3,"ignore_eos":true,"stream":true}`,
		`{"messages":[{"role":"user","content":"` + secret + `"}],"max_tokens":3}`,
		`{"messages":[{"role":"user","content":"` + secret + `"}],"max_tokens":0}`,
	} {
		resp, err := client.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got := s.Snapshot().Finished; got != 2 {
		t.Errorf("finished %d requests, want 2", got)
	}
	out := logs.String()
	if strings.Contains(out, secret) || strings.Contains(out, tokenText(1)) {
		t.Errorf("logs carry content: %s", out)
	}
	if n := strings.Count(out, "simhttp: request"); n != 3 {
		t.Errorf("%d request log lines, want 3: %s", n, out)
	}
}

// Scaled to zero (min_replicas 0), the first request waits for the replica
// it starts: /metrics shows it waiting with no replica ready and one
// starting, and its stream ends after model_ready_delay, served by r0.
func TestScaleFromZero(t *testing.T) {
	cfg := fastConfig()
	cfg.Autoscale, cfg.MinReplicas, cfg.MaxReplicas = true, 0, 1
	cfg.ScaleRequestDelay, cfg.NodeReadyDelay, cfg.ContainerReadyDelay = 0, 0, 0
	cfg.ModelReadyDelay, cfg.ScaleDownIdle = 300*time.Millisecond, time.Hour
	e := startServer(t, cfg)
	type answer struct {
		resp *http.Response
		at   time.Duration
	}
	done := make(chan answer, 1)
	t0 := time.Now()
	go func() {
		resp, err := e.client.Post(e.base+"/chat/completions", "application/json",
			strings.NewReader(`{"messages":[{"role":"user","content":"a"}],"max_tokens":3,"stream":true}`))
		if err != nil {
			t.Error(err)
			done <- answer{}
			return
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Error(err)
		}
		done <- answer{resp, time.Since(t0)}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for e.s.Snapshot().Waiting != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the request never waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fams := scrape(t, e)
	gauge := func(name string) float64 { return fams[name].GetMetric()[0].GetGauge().GetValue() }
	if w, r, s := gauge("vllm:num_requests_waiting"), gauge("surge_sim_replicas"), gauge("surge_sim_replicas_starting"); w != 1 || r != 0 || s != 1 {
		t.Errorf("while starting: waiting %v, replicas %v, starting %v; want 1, 0, 1", w, r, s)
	}
	a := <-done
	if a.resp == nil {
		return
	}
	defer a.resp.Body.Close()
	if a.resp.StatusCode != http.StatusOK || a.resp.Header.Get(ReplicaHeader) != "r0" || a.at < 300*time.Millisecond {
		t.Fatalf("status %d from %q, stream done after %v; want 200 from r0 after ≥ 300ms", a.resp.StatusCode, a.resp.Header.Get(ReplicaHeader), a.at)
	}
}

// The context Listen was given closes the server from its AfterFunc
// goroutine, which may run as soon as Serve registers it: with -race this
// catches Close reading the registration while Serve writes it (surge
// coldstart's test server hit it on SIGTERM).
func TestListenClosedByContext(t *testing.T) {
	for i := 1; i <= 20; i++ {
		// cancelled by a timer, as a signal would: nothing orders it
		// after Serve's own writes
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i)*50*time.Microsecond)
		srv, _, err := Listen(ctx, "127.0.0.1:0", sim.DefaultConfig(), slog.New(slog.DiscardHandler))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		<-srv.serveDone // Serve returns once the context closed the server
		_ = srv.Close()
		cancel()
	}
}
