package openai

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)

// TestTraceContext checks that every attempt carries a W3C traceparent whose
// trace id is the record's (prefix ‖ seq, the same across retries) with a
// fresh parent span id per attempt, and an X-Request-Id equal to the record id.
func TestTraceContext(t *testing.T) {
	var mu sync.Mutex
	var tps, ids []string
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tps = append(tps, r.Header.Get("traceparent"))
		ids = append(ids, r.Header.Get("X-Request-Id"))
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(role() + content("hi") + done))
	}))
	defer srv.Close()
	prefix := [8]byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3}
	c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.Retries = 1; c.TracePrefix = prefix })
	req := workload.Request{Seq: 42, Prompt: "Say hi", MaxTokens: 8}
	rec := record.New("run-42", 42, "baseline", 0)
	c.Do(context.Background(), &req, &rec)
	if rec.Outcome != record.OK || rec.Attempts != 2 {
		t.Fatalf("outcome %s attempts %d (%s)", rec.Outcome, rec.Attempts, rec.Error)
	}
	want := TraceID(prefix, 42)
	if rec.TraceID != hex.EncodeToString(want[:]) {
		t.Fatalf("record trace id %q, want %x", rec.TraceID, want)
	}
	if len(tps) != 2 {
		t.Fatalf("%d requests, want 2", len(tps))
	}
	var spans []string
	for i, tp := range tps {
		m := traceparentRE.FindStringSubmatch(tp)
		if m == nil {
			t.Fatalf("attempt %d: traceparent %q is not version 00, sampled", i+1, tp)
		}
		if m[1] != rec.TraceID {
			t.Errorf("attempt %d: trace id %s, want the record's %s", i+1, m[1], rec.TraceID)
		}
		if m[2] == "0000000000000000" {
			t.Errorf("attempt %d: zero parent span id", i+1)
		}
		spans = append(spans, m[2])
		if ids[i] != "run-42" {
			t.Errorf("attempt %d: X-Request-Id %q, want the record id", i+1, ids[i])
		}
	}
	if spans[0] == spans[1] {
		t.Errorf("both attempts have parent span %s; want one per attempt", spans[0])
	}
	if seq, ok := SeqOfTraceID(prefix, want); !ok || seq != 42 {
		t.Errorf("SeqOfTraceID = %d, %v", seq, ok)
	}
	if _, ok := SeqOfTraceID([8]byte{1}, want); ok {
		t.Error("SeqOfTraceID accepted another prefix")
	}
}

// TestTraceIDsDistinct checks that two clients (two runs) never share a
// trace id for the same sequence number, and that the user cannot replace
// the trace headers.
func TestTraceIDsDistinct(t *testing.T) {
	a := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	b := newTestClient(t, "http://127.0.0.1:1/v1", nil)
	if a.TracePrefix() == b.TracePrefix() || a.TracePrefix() == ([8]byte{}) {
		t.Fatalf("prefixes %x and %x", a.TracePrefix(), b.TracePrefix())
	}
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model = "http://127.0.0.1:1/v1", "m"
	cfg.Headers = map[string]string{"traceparent": "00-x"}
	if err := cfg.Validate(); err == nil {
		t.Error("a user traceparent header was accepted")
	}
}
