package check

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
)

// simProbe serves the simulator with cfg on loopback and returns a chat
// probe of it (the api given, "" = chat).
func simProbe(t *testing.T, cfg sim.Config, api string) *Probe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, base, err := simhttp.Listen(ctx, "127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); srv.Close() })
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return NewProbe(base, srv.Model(), api, &http.Client{}, h)
}

func fastSim() sim.Config {
	cfg := sim.DefaultConfig()
	cfg.StepBase = sim.DefaultStepBase / 10
	return cfg
}

func TestProbeStreamAndBody(t *testing.T) {
	for _, api := range []string{APIChat, APICompletions} {
		t.Run(api, func(t *testing.T) {
			p := simProbe(t, fastSim(), api)
			ctx := context.Background()
			x, err := p.Send(ctx, Req{Prompt: "hello", MaxTokens: 12, Stream: true,
				Extra: map[string]any{"stream_options": map[string]any{"include_usage": true}, "ignore_eos": true}})
			if err != nil {
				t.Fatal(err)
			}
			if x.Status != 200 || !x.Done || x.EndErr != nil {
				t.Fatalf("status %d done %v err %v", x.Status, x.Done, x.EndErr)
			}
			if got := x.ContentChunks(); got != 12 {
				t.Errorf("content chunks %d, want 12", got)
			}
			if x.Usage == nil || x.Usage.CompletionTokens != 12 {
				t.Errorf("usage %+v, want 12 completion tokens", x.Usage)
			}
			if x.FinishReason != "length" || x.Text == "" || x.FirstContent() <= 0 {
				t.Errorf("finish %q, text %d bytes, first content %v", x.FinishReason, len(x.Text), x.FirstContent())
			}
			y, err := p.Send(ctx, Req{Prompt: "hello", MaxTokens: 12, Extra: map[string]any{"ignore_eos": true}})
			if err != nil {
				t.Fatal(err)
			}
			if y.Stream || y.Status != 200 || y.Text != x.Text || y.Usage == nil || y.Usage.CompletionTokens != 12 {
				t.Errorf("unary: stream %v status %d same text %v usage %+v", y.Stream, y.Status, y.Text == x.Text, y.Usage)
			}
			if !y.Reused {
				t.Error("second request did not reuse the connection")
			}
			z, err := p.Send(ctx, Req{Raw: []byte("{not json")})
			if err != nil {
				t.Fatal(err)
			}
			if typ, ok := z.ErrorBody(); z.Status != 400 || !ok || typ == "" {
				t.Errorf("malformed: status %d, error body %v type %q", z.Status, ok, typ)
			}
			if p.Sent() != 3 {
				t.Errorf("sent %d, want 3", p.Sent())
			}
		})
	}
}

// A base URL with a query (Azure's ?api-version=…): each request's path is
// joined before the query, which every request keeps.
func TestProbeBaseWithQuery(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, modelsJSON("m"))
			return
		}
		fmt.Fprint(w, chatBody)
	}))
	t.Cleanup(srv.Close)
	p := NewProbe(srv.URL+"/v1/?api-version=2024", "m", APIChat, srv.Client(), http.Header{})
	ctx := context.Background()
	if _, err := p.Get(ctx, "/models", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, Req{Prompt: "hi", MaxTokens: 1}); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /v1/models?api-version=2024", "POST /v1/chat/completions?api-version=2024"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	if s := p.apiPath("/models"); s != "/v1/models" {
		t.Errorf("apiPath %q", s)
	}
	r, _ := runAPI(ctx, &T{Probe: p, Config: DefaultConfig()})
	mustStatus(t, r, Pass, "m served")
}
