package simhttp

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The simulator's spans: one llm_request per finished request, in the
// incoming traceparent's trace, with vLLM's attributes; sent on Close at
// the latest.
func TestSpanExport(t *testing.T) {
	var mu sync.Mutex
	var got []*tracepb.Span
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(b, &td) != nil {
			t.Errorf("export %s %s", r.URL.Path, r.Header.Get("Content-Type"))
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
	req, _ := http.NewRequest(http.MethodPost, e.base+"/chat/completions", strings.NewReader(`{"model":"surge-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`))
	req.Header.Set("Content-Type", "application/json")
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
	if len(got) != 1 {
		t.Fatalf("%d spans, want 1", len(got))
	}
	sp := got[0]
	if sp.Name != "llm_request" || hex.EncodeToString(sp.TraceId) != trace || hex.EncodeToString(sp.ParentSpanId) != "b7ad6b7169203331" {
		t.Errorf("span %s trace %x parent %x", sp.Name, sp.TraceId, sp.ParentSpanId)
	}
	attrs := map[string]float64{}
	for _, kv := range sp.Attributes {
		attrs[kv.Key] = kv.Value.GetDoubleValue() + float64(kv.Value.GetIntValue())
	}
	for _, k := range []string{"gen_ai.latency.time_in_queue", "gen_ai.latency.time_in_model_prefill", "gen_ai.latency.time_in_model_decode", "gen_ai.latency.e2e"} {
		if _, ok := attrs[k]; !ok {
			t.Errorf("no %s", k)
		}
	}
	if attrs["gen_ai.latency.e2e"] <= 0 || attrs["gen_ai.usage.completion_tokens"] != 5 {
		t.Errorf("attributes %v", attrs)
	}
}

// WithTimings: llama.cpp's timings object, streamed and not.
func TestTimingsObject(t *testing.T) {
	e := startServer(t, fastConfig(), WithTimings())
	for _, stream := range []string{"true", "false"} {
		resp := e.post("/chat/completions", `{"model":"surge-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":`+stream+`}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if stream == "true" {
			for _, line := range strings.Split(body, "\n") {
				if strings.Contains(line, `"timings"`) {
					body = strings.TrimPrefix(line, "data: ")
				}
			}
		}
		var v struct {
			Timings *struct {
				PromptMs    *float64 `json:"prompt_ms"`
				PredictedMs *float64 `json:"predicted_ms"`
				PredictedN  int      `json:"predicted_n"`
			} `json:"timings"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil || v.Timings == nil || v.Timings.PromptMs == nil || v.Timings.PredictedMs == nil || v.Timings.PredictedN != 5 {
			t.Errorf("stream %s: %v %q", stream, err, body)
		}
	}
}
