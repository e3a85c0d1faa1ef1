package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// TestDoPooledRequests: what an embeddings or rerank request sends: the
// inputs, no max_tokens, no stream, no ignore_eos, JSON accepted.
func TestDoPooledRequests(t *testing.T) {
	tests := []struct {
		name, api string
		req       workload.Request
		wantPath  string
		wantBody  string
	}{
		{"embeddings of inputs", APIEmbeddings, workload.Request{Prompt: "unused", Inputs: []string{"a", "b \"c\""}, MaxTokens: 8, IgnoreEOS: true},
			"/v1/embeddings", `{"input":["a","b \"c\""],"model":"test-model"}`},
		{"embeddings of the prompt", APIEmbeddings, workload.Request{Prompt: "p"}, "/v1/embeddings", `{"input":["p"],"model":"test-model"}`},
		{"rerank", APIRerank, workload.Request{Prompt: "q", Inputs: []string{"d1", "d2", "d3"}, MaxTokens: 8},
			"/v1/rerank", `{"documents":["d1","d2","d3"],"model":"test-model","query":"q"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var path, body, accept string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var v map[string]any
				if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
					t.Errorf("request body: %v", err)
				}
				b, _ := json.Marshal(v)
				path, body, accept = r.URL.Path, string(b), r.Header.Get("Accept")
				http.NotFound(w, r)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.API = tt.api })
			rec := run(context.Background(), c, &tt.req)
			if path != tt.wantPath || body != tt.wantBody || accept != "application/json" {
				t.Errorf("POST %s %s (Accept %s)\nwant %s %s", path, body, accept, tt.wantPath, tt.wantBody)
			}
			if rec.MaxTokens != 0 || rec.Inputs != inputsOf(&tt.req) {
				t.Errorf("record max_tokens %d inputs %d, want 0 and %d", rec.MaxTokens, rec.Inputs, inputsOf(&tt.req))
			}
		})
	}
}

// TestDoPooledAnswers: embeddings and rerank answers as vLLM, Ollama and
// OpenAI send them, and what is wrong with the bad ones.
func TestDoPooledAnswers(t *testing.T) {
	two := workload.Request{Prompt: "q", Inputs: []string{"a", "b"}}
	tests := []struct {
		name, api, body string
		req             workload.Request
		outcome         record.Outcome
		errText         string
		prompt          int
		fromUsage       bool
	}{
		{"vllm embeddings", APIEmbeddings, `{"id":"embd-1","object":"list","created":1,"model":"m","data":[{"index":0,"object":"embedding","embedding":[0.1,-0.2,3e-2]},{"index":1,"object":"embedding","embedding":[0.4,0.5,0.6]}],"usage":{"prompt_tokens":9,"total_tokens":9,"completion_tokens":0,"prompt_tokens_details":null}}`,
			two, record.OK, "", 9, true},
		{"base64 embeddings", APIEmbeddings, `{"object":"list","data":[{"embedding":"AAAAAAAAgD8="},{"embedding":"AAAAAAAAgD8="}],"usage":{"prompt_tokens":4,"total_tokens":4}}`,
			two, record.OK, "", 4, true},
		{"embeddings without usage", APIEmbeddings, `{"data":[{"embedding":[1]},{"embedding":[2]}]}`, two, record.OK, "", 0, false},
		{"one embedding short", APIEmbeddings, `{"data":[{"embedding":[1,2]}],"usage":{"prompt_tokens":4}}`, two, record.InvalidResponse, "1 embeddings for 2 inputs", 0, false},
		{"lengths differ", APIEmbeddings, `{"data":[{"embedding":[1,2]},{"embedding":[1]}]}`, two, record.InvalidResponse, "embeddings of different lengths", 0, false},
		{"empty vectors", APIEmbeddings, `{"data":[{"embedding":[]},{"embedding":[]}]}`, two, record.InvalidResponse, "embeddings of different lengths", 0, false},
		{"chat answer on embeddings", APIEmbeddings, `{"choices":[{"message":{"content":"hi"}}]}`, two, record.InvalidResponse, "no data", 0, false},
		{"error object", APIEmbeddings, `{"object":"error","message":"x","type":"BadRequestError","code":400}`, two, record.InvalidResponse, "error object in body", 0, false},
		{"invalid JSON", APIEmbeddings, `{"data":[`, two, record.InvalidResponse, "invalid JSON", 0, false},

		{"vllm rerank", APIRerank, `{"id":"rerank-1","model":"m","usage":{"prompt_tokens":20,"total_tokens":20},"results":[{"index":1,"document":{"text":"b"},"relevance_score":0.9},{"index":0,"document":{"text":"a"},"relevance_score":0.1}]}`,
			two, record.OK, "", 20, true},
		{"rerank with total only", APIRerank, `{"results":[{"index":0,"relevance_score":0.5}],"usage":{"total_tokens":11}}`, two, record.OK, "", 11, true},
		{"too many results", APIRerank, `{"results":[{},{},{}]}`, two, record.InvalidResponse, "3 results for 2 documents", 0, false},
		{"no results", APIRerank, `{"data":[]}`, two, record.InvalidResponse, "no results", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", func(c *Config) { c.API = tt.api }), &tt.req)
			checkOrder(t, rec)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText || rec.PromptTokens != tt.prompt || rec.UsageFromServer != tt.fromUsage {
				t.Fatalf("got %s %q prompt %d usage %v, want %s %q %d %v", rec.Outcome, rec.Error, rec.PromptTokens, rec.UsageFromServer,
					tt.outcome, tt.errText, tt.prompt, tt.fromUsage)
			}
			if tt.outcome == record.OK && (rec.FirstTokenNs != rec.DoneNs || rec.OutputTokens != 0 || rec.TPOTNs != record.None) {
				t.Errorf("first token %d done %d output %d tpot %d: the answer is one piece, with no output tokens", rec.FirstTokenNs, rec.DoneNs, rec.OutputTokens, rec.TPOTNs)
			}
		})
	}
}

// TestScanPooledMatchesJSON: scanPooled counts what encoding/json sees.
func TestScanPooledMatchesJSON(t *testing.T) {
	body := embeddingsAnswer(16, 384, "-0.0123456789")
	p, err := scanPooled(body, kData)
	var v struct {
		Data []struct{ Embedding []float64 } `json:"data"`
	}
	if jerr := json.Unmarshal(body, &v); err != nil || jerr != nil || p.items != len(v.Data) || p.dim != len(v.Data[0].Embedding) || p.mixed || p.prompt != 512 {
		t.Fatalf("scanPooled = %+v, %v; encoding/json: %d of %d (%v)", p, err, len(v.Data), len(v.Data[0].Embedding), jerr)
	}
	if a := testing.AllocsPerRun(20, func() { _, _ = scanPooled(body, kData) }); a != 0 {
		t.Errorf("scanPooled allocates %.0f times", a)
	}
}

// BenchmarkPooledAnswer reads an embeddings answer of 16 vectors of 384
// floats (about 90 KB) with the scanner, as the client does, and with
// encoding/json into float slices, as an SDK would.
func BenchmarkPooledAnswer(b *testing.B) {
	body := embeddingsAnswer(16, 384, "-0.012345678")
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if p, err := scanPooled(body, kData); err != nil || p.items != 16 {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var v struct {
				Data []struct{ Embedding []float64 } `json:"data"`
			}
			if err := json.Unmarshal(body, &v); err != nil || len(v.Data) != 16 {
				b.Fatal(err)
			}
		}
	})
}

// embeddingsAnswer is an embeddings answer of n vectors of dim copies of
// the number x, with a usage of 512 prompt tokens.
func embeddingsAnswer(n, dim int, x string) []byte {
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"object":"embedding","index":0,"embedding":[`)
		for j := range dim {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(x)
		}
		b.WriteString("]}")
	}
	b.WriteString(`],"usage":{"prompt_tokens":512,"total_tokens":512}}`)
	return []byte(b.String())
}
