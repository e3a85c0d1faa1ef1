package simhttp

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/surge-bench/surge/internal/sim"
)

// The gateway admits every API's requests: each costs its prompt plus
// its cap, pooling work its prompt alone; a refusal comes in the API's
// error shape.
func TestGatewayAllAPIs(t *testing.T) {
	cfg := fastConfig()
	cfg.QuotaTokensPerMinute = 100000
	e := startServer(t, cfg)
	p := EstimatePromptTokens(true, "hello")
	msgs := `"messages":[{"role":"user","content":"hello"}]`
	tests := []struct {
		name, path, body string
		cost             int
	}{
		{"chat", "/chat/completions", `{` + msgs + `,"max_tokens":8}`, p + 8},
		{"responses", "/responses", `{"input":"hello","max_output_tokens":8}`, p + 8},
		{"responses without a cap", "/responses", `{"input":"hello","stream":true}`, cfg.MaxModelLen},
		{"messages", "/messages", `{"max_tokens":8,` + msgs + `}`, p + 8},
		{"messages streamed", "/messages", `{"max_tokens":8,` + msgs + `,"stream":true}`, p + 8},
		{"embeddings", "/embeddings", `{"input":["hello","abcdefghi"]}`, 2 + 3},
		{"rerank", "/rerank", `{"query":"q","documents":["abcd","abcdefgh"]}`, (1 + 1) + (1 + 2)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.base+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer key-"+strconv.Itoa(i)) // a fresh bucket
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			rem, _ := strconv.Atoi(resp.Header.Get("X-Ratelimit-Remaining-Tokens-Per-Minute"))
			if resp.StatusCode != http.StatusOK || rem != 100000-tt.cost {
				t.Errorf("status %d, tokens remaining %d; want 200 and %d (cost %d)", resp.StatusCode, rem, 100000-tt.cost, tt.cost)
			}
		})
	}
	t.Run("x-api-key", func(t *testing.T) {
		cfg := fastConfig()
		cfg.QuotaTokensPerDay = 100000 // refills 1.2 tokens a second
		e := startServer(t, cfg)
		send := func(header, value string) int {
			req, _ := http.NewRequest(http.MethodPost, e.base+"/messages", strings.NewReader(`{"max_tokens":8,`+msgs+`}`))
			req.Header.Set(header, value)
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			n, _ := strconv.Atoi(resp.Header.Get("X-Ratelimit-Remaining-Tokens-Per-Day"))
			return n
		}
		// A key has its buckets whichever header carries it; another key
		// its own.
		fresh := 100000 - (p + 8)
		if a, b, c := send("X-Api-Key", "sk-ant-1"), send("Authorization", "Bearer sk-ant-1"), send("X-Api-Key", "sk-ant-2"); a != fresh || b >= a || c != fresh {
			t.Errorf("tokens remaining %d, %d, %d; want %d, less, %d", a, b, c, fresh, fresh)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		cfg := fastConfig()
		cfg.QuotaRequestsPerMinute = 1
		for _, tt := range []struct{ path, body string }{
			{"/messages", `{"max_tokens":8,` + msgs + `,"stream":true}`},
			{"/responses", `{"input":"hello","stream":true}`},
			{"/embeddings", `{"input":"hello"}`},
		} {
			e := startServer(t, cfg)
			first := e.post(tt.path, tt.body)
			_, _ = io.Copy(io.Discard, first.Body)
			first.Body.Close()
			second := e.post(tt.path, tt.body)
			if second.Header.Get("Retry-After") == "" || first.StatusCode != http.StatusOK {
				t.Errorf("%s: %d then %d, Retry-After %q", tt.path, first.StatusCode, second.StatusCode, second.Header.Get("Retry-After"))
			}
			if tt.path == "/messages" {
				checkAnthropicError(t, second, http.StatusTooManyRequests, "rate_limit_error")
			} else {
				checkError(t, second, http.StatusTooManyRequests)
				second.Body.Close()
			}
		}
	})
}

// Mid-stream faults strike the Responses and Messages streams as they do
// chat's: at token AtToken, which a twin cluster with the same seed
// plans; pooling work gets its reset, truncated body or error too.
func TestFaultsOtherAPIs(t *testing.T) {
	prompt := EstimatePromptTokens(true, "a")
	streams := []struct {
		name, path, body, delta, end string
	}{
		{"responses", "/responses", `{"input":"a","max_output_tokens":20,"stream":true}`, "response.output_text.delta", "response.completed"},
		{"messages", "/messages", `{"max_tokens":20,"messages":[{"role":"user","content":"a"}],"stream":true}`, "content_block_delta", "message_stop"},
	}
	for _, api := range streams {
		for _, kind := range []sim.FaultKind{sim.FaultReset, sim.FaultMalformed} {
			t.Run(api.name+"/"+kind.String(), func(t *testing.T) {
				cfg := fastConfig()
				cfg.FaultReset, cfg.FaultMalformed = float64(btoi(kind == sim.FaultReset)), float64(btoi(kind == sim.FaultMalformed))
				twin, err := sim.NewCluster(cfg)
				if err != nil {
					t.Fatal(err)
				}
				plan, _ := twin.Submit(0, sim.Request{PromptTokens: prompt, MaxTokens: 20}, nil)
				e := startServer(t, cfg)
				resp := e.post(api.path, api.body)
				defer resp.Body.Close()
				evs, err := readEvents(resp.Body)
				deltas, bad := 0, 0
				for _, ev := range evs {
					switch {
					case !json.Valid([]byte(ev.data)):
						bad++
					case ev.name == api.delta:
						deltas++
					case ev.name == api.end:
						t.Errorf("the stream ended normally: %s", ev.data)
					}
				}
				if deltas != plan.Fault.AtToken-1 {
					t.Errorf("%d deltas before the fault, want %d (token %d)", deltas, plan.Fault.AtToken-1, plan.Fault.AtToken)
				}
				switch kind {
				case sim.FaultReset:
					if err == nil || bad != 0 {
						t.Errorf("reset: err %v, %d malformed events", err, bad)
					}
				case sim.FaultMalformed:
					if err != nil || bad != 1 || json.Valid([]byte(evs[len(evs)-1].data)) || evs[len(evs)-1].name != api.delta {
						t.Errorf("malformed: err %v, %d malformed events, last %+v", err, bad, evs[len(evs)-1])
					}
				}
			})
		}
	}
	for _, tt := range []struct {
		name  string
		set   func(*sim.Config)
		check func(t *testing.T, e *env, resp *http.Response, err error)
	}{
		{"reset", func(c *sim.Config) { c.FaultReset = 1 }, func(t *testing.T, e *env, resp *http.Response, err error) {
			if err == nil {
				resp.Body.Close()
				t.Errorf("status %d, want a connection error", resp.StatusCode)
			}
			// The reset strikes once the work is done, not before.
			if s := e.s.Snapshot(); s.Finished != 1 || s.Cancelled != 0 {
				t.Errorf("reset with %d finished, %d cancelled; want the prefill done", s.Finished, s.Cancelled)
			}
		}},
		{"malformed", func(c *sim.Config) { c.FaultMalformed = 1 }, func(t *testing.T, _ *env, resp *http.Response, err error) {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || json.Valid(b) {
				t.Errorf("status %d, body %s, err %v: want a truncated body", resp.StatusCode, b, err)
			}
		}},
		{"503", func(c *sim.Config) { c.Fault503 = 1 }, func(t *testing.T, _ *env, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			checkError(t, resp, http.StatusServiceUnavailable)
			resp.Body.Close()
		}},
	} {
		for _, path := range []string{"/embeddings", "/rerank"} {
			t.Run(path+"/"+tt.name, func(t *testing.T) {
				cfg := fastConfig()
				tt.set(&cfg)
				e := startServer(t, cfg)
				resp, err := e.client.Post(e.base+path, "application/json", strings.NewReader(`{"input":"a","query":"q","documents":["d"]}`))
				tt.check(t, e, resp, err)
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Every API's requests count in /metrics as chat's do; pooling work has
// no first token and no generation.
func TestMetricsAllAPIs(t *testing.T) {
	e := startServer(t, fastConfig())
	send := func(path, body string) {
		resp := e.post(path, body)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	send("/responses", `{"input":"hello","stream":true}`)
	send("/messages", `{"max_tokens":50,"messages":[{"role":"user","content":"hello"}]}`)
	send("/embeddings", `{"input":["hello","abcdefghi"]}`)
	send("/rerank", `{"query":"q","documents":["abcd"]}`)
	fams := scrape(t, e)
	value := func(name string) float64 {
		v := 0.0
		for _, m := range fams[name].GetMetric() {
			switch {
			case m.Counter != nil:
				v += m.GetCounter().GetValue()
			case m.Histogram != nil:
				v += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return v
	}
	p := EstimatePromptTokens(true, "hello")
	for name, want := range map[string]float64{
		"vllm:prompt_tokens_total":         float64(2*p + 2 + 3 + 2),
		"vllm:generation_tokens_total":     10,
		"vllm:e2e_request_latency_seconds": 4,
		"vllm:request_queue_time_seconds":  4,
		"vllm:time_to_first_token_seconds": 2,
		"vllm:request_success_total":       4,
	} {
		if got := value(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// Pooling work is an llm_request span as any request: its prompt, no
// completion tokens.
func TestSpanExportPooling(t *testing.T) {
	var mu sync.Mutex
	var got []*tracepb.Span
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData
		if proto.Unmarshal(b, &td) != nil {
			t.Error("export does not parse")
		}
		mu.Lock()
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				got = append(got, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	defer col.Close()
	e := startServer(t, fastConfig(), WithSpanExport(col.URL+"/v1/traces", time.Hour, nil))
	trace := "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest(http.MethodPost, e.base+"/embeddings", strings.NewReader(`{"input":"abcdefghi"}`))
	req.Header.Set("traceparent", "00-"+trace+"-b7ad6b7169203331-01")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := e.s.Close(); err != nil { // flushes the queue
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || hex.EncodeToString(got[0].TraceId) != trace {
		t.Fatalf("%d spans", len(got))
	}
	attrs := map[string]int64{}
	for _, kv := range got[0].Attributes {
		attrs[kv.Key] = kv.Value.GetIntValue()
	}
	if attrs["gen_ai.usage.prompt_tokens"] != 3 || attrs["gen_ai.usage.completion_tokens"] != 0 {
		t.Errorf("attributes %v", attrs)
	}
}

// The new streams' hot path, a content token, allocates nothing.
func TestStreamEncodersAllocs(t *testing.T) {
	for name, enc := range map[string]streamEncoder{
		"chat":      newEncoder(true, "chatcmpl-1", 1, "surge-sim"),
		"responses": newResponsesEncoder("1", 1, "surge-sim", nil, 2),
		"messages":  newMessagesEncoder("1", "surge-sim", 10, nil, 2, true),
	} {
		buf := enc.start(make([]byte, 0, 1<<16))
		buf = enc.reasoning(buf, 0)
		buf = enc.content(buf, 0)
		k := 1
		allocs := testing.AllocsPerRun(1000, func() {
			buf = enc.content(buf[:0], k)
			buf = enc.reasoning(buf, k)
			k++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per token", name, allocs)
		}
	}
}

// What every encoder writes on a fault is what the fault promises: a
// malformed event whose data does not parse, a truncated body, and for
// an overloaded stream an error event of its API (none for chat).
func TestEncoderFaultEvents(t *testing.T) {
	data := func(ev []byte) (name string, d []byte) {
		s := string(ev)
		if !strings.HasSuffix(s, sseEnd) {
			t.Errorf("event %q does not end with a blank line", s)
		}
		for _, line := range strings.Split(strings.TrimSuffix(s, sseEnd), "\n") {
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				name = n
			} else if dd, ok := strings.CutPrefix(line, "data: "); ok {
				d = []byte(dd)
			}
		}
		return name, d
	}
	for name, enc := range map[string]streamEncoder{
		"chat":      newEncoder(true, "chatcmpl-1", 1, "m"),
		"responses": newResponsesEncoder("1", 1, "m", nil, 0),
		"messages":  newMessagesEncoder("1", "m", 10, nil, 0, true),
	} {
		if _, d := data(enc.malformed(nil)); json.Valid(d) || len(d) == 0 {
			t.Errorf("%s: malformed event %q parses", name, d)
		}
		if json.Valid(enc.truncatedBody(nil)) {
			t.Errorf("%s: truncated body parses", name)
		}
		ov := enc.overloaded(nil)
		if name == "chat" {
			if len(ov) != 0 {
				t.Errorf("chat overloaded: %q", ov)
			}
			continue
		}
		ev, d := data(ov)
		var v struct {
			Type  string `json:"type"`
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
			Message string `json:"message"`
		}
		if ev != "error" || json.Unmarshal(d, &v) != nil || v.Type != "error" || (name == "messages") != (v.Error.Type == "overloaded_error") || (name == "responses") != (v.Message != "") {
			t.Errorf("%s: overloaded event %q", name, ov)
		}
	}
	final := final{res: sim.Result{PromptTokens: 3}, usage: true}
	for name, enc := range map[string]bodyEncoder{
		"embeddings": &embedEncoder{in: &embedInput{seeds: []uint64{1}, dims: 4}, id: "embd-1", model: "m"},
		"rerank":     &rerankEncoder{in: &rerankInput{docs: []string{"a"}, returnDoc: true}, id: "rerank-1", model: "m"},
	} {
		if json.Valid(enc.truncatedBody(nil)) || !json.Valid(enc.response(nil, final)) {
			t.Errorf("%s: truncated %q, whole %q", name, enc.truncatedBody(nil), enc.response(nil, final))
		}
	}
}

// FuzzDecodeAPIs: no body makes a decoder of the new APIs panic or
// answer other than 400; an accepted request has a positive prompt, and
// whatever it asks, every event and body of its answer is valid JSON.
func FuzzDecodeAPIs(f *testing.F) {
	seeds := []struct {
		a    api
		body string
	}{
		{apiResponses, `{"input":"hi","max_output_tokens":5,"stream":true,"temperature":0.7,"seed":3}`},
		{apiResponses, `{"instructions":"x","input":[{"role":"user","content":[{"type":"input_text","text":"\u00e9"}]},{"type":"function_call_output","output":"o"}]}`},
		{apiResponses, `{"input":[{"content":"a"}]}`},
		{apiMessages, `{"max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"}],"stop_sequences":["engine"]}`},
		{apiMessages, `{"max_tokens":50,"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"f\"q","input_schema":{"type":"object","properties":{"a":{"enum":["\u00e9"]}},"required":["a"]}}],"tool_choice":{"type":"any"}}`},
		{apiMessages, `{"messages":[]}`},
		{apiEmbeddings, `{"input":["a",""],"encoding_format":"base64","dimensions":3}`},
		{apiEmbeddings, `{"input":[[1,2],[3]]}`},
		{apiEmbeddings, `{"input":[]}`},
		{apiRerank, `{"query":"q","documents":["a",{"text":"b\u0000"}],"top_n":1}`},
		{apiRerank, `{"query":"q","documents":[{}]}`},
		{apiRerank, `null`},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), uint8(s.a))
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		a := apiResponses + api(which%4) // the four new APIs
		p, err := decodeAPI(a, body, defaultTokens, nil, 8)
		if err != nil {
			if err.status != http.StatusBadRequest {
				t.Fatalf("decode error status %d, want 400", err.status)
			}
			return
		}
		if p.api != a || p.promptTokens < 1 || p.maxTokens < 0 || (a.prefillOnly() && (p.longest < 1 || p.longest > p.promptTokens)) {
			t.Fatalf("accepted %+v", p)
		}
		const out = 12
		f := final{res: sim.Result{PromptTokens: p.promptTokens, OutputTokens: out}, reasoning: 2, reason: "length", usage: true}
		if a.prefillOnly() {
			s := &Server{model: "m"}
			if b := s.poolEncoder(p, sim.Ticket{ID: 1}).response(nil, f); !json.Valid(b) {
				t.Fatalf("invalid body %s", b)
			}
			return
		}
		var ans *answer
		if p.shape != nil {
			a, _ := planAnswer(p.shape, true, out, false, false, false, nil)
			ans = &a
		}
		s := &Server{model: "m\"", reasoning: 2}
		enc := s.newStreamEncoder(p, sim.Ticket{ID: 1}, ans)
		buf := enc.start(nil)
		for i := range 2 {
			buf = enc.reasoning(buf, i)
		}
		for k := range out - 2 {
			buf = enc.content(buf, k)
		}
		buf = enc.end(buf, f)
		for _, line := range bytes.Split(buf, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !json.Valid(d) {
				t.Fatalf("invalid event %s", line)
			}
		}
		if b := enc.response(nil, f); !json.Valid(b) {
			t.Fatalf("invalid body %s", b)
		}
	})
}
