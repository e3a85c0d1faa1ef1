package workload

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/schedule"
)

// TestInputsRequests: an embeddings workload draws its number of texts
// per request, each text of its own drawn length; Shape gives the same
// total as Generate without building the texts; a rerank workload adds
// its query to each document; nothing asks for output.
func TestInputsRequests(t *testing.T) {
	prof := Profile{Name: "embed", Prompt: Uniform(20, 200), Output: Fixed(16), MaxTokens: 16}
	for _, tc := range []struct {
		name   string
		inputs Dist
		query  int
	}{
		{"embeddings", Uniform(1, 16), 0},
		{"rerank", Fixed(8), 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Profile: prof, Seed: 7, Inputs: tc.inputs, QueryTokens: tc.query}
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			g2, _ := New(cfg)
			counts := map[int]int{}
			for seq := range int64(400) {
				a := schedule.Arrival{Seq: seq}
				r := g.Generate(a)
				shape, maxTok := g2.Shape(a)
				if r.MaxTokens != 0 || maxTok != 0 || r.IgnoreEOS {
					t.Fatalf("seq %d: max_tokens %d (shape %d), ignore_eos %v: an inputs request generates nothing", seq, r.MaxTokens, maxTok, r.IgnoreEOS)
				}
				if shape != r.PromptTokens {
					t.Fatalf("seq %d: Shape says %d prompt tokens, Generate %d", seq, shape, r.PromptTokens)
				}
				sum := 0
				for _, in := range r.Inputs {
					n := EstimateTokens(in)
					if n < 20 || n > 200 {
						t.Fatalf("seq %d: a text of %d tokens, outside the profile's 20..200", seq, n)
					}
					sum += tc.query + n // a reranker reads the query with each document
				}
				if sum != r.PromptTokens || (tc.query > 0) != (r.Prompt != "") || tc.query > 0 && EstimateTokens(r.Prompt) != tc.query {
					t.Fatalf("seq %d: texts sum to %d tokens, request says %d; query %q", seq, sum, r.PromptTokens, r.Prompt)
				}
				if len(r.Inputs) > 1 && r.Inputs[0] == r.Inputs[1] || len(r.Inputs) > 1 && strings.HasPrefix(r.Inputs[1], r.Inputs[0][:len(r.Inputs[0])/2]) {
					t.Fatalf("seq %d: the texts of one request repeat each other", seq)
				}
				counts[len(r.Inputs)]++
				if again := g.Generate(a); len(again.Inputs) != len(r.Inputs) || again.PromptTokens != r.PromptTokens {
					t.Fatalf("seq %d: a second Generate differs", seq)
				}
			}
			lo, hi := tc.inputs.Min, tc.inputs.Max
			if tc.inputs.Kind == KindFixed {
				lo, hi = tc.inputs.Value, tc.inputs.Value
			}
			for k := range counts {
				if k < lo || k > hi {
					t.Errorf("%d texts in a request, outside %d..%d", k, lo, hi)
				}
			}
			if tc.inputs.Kind == KindUniform && len(counts) < hi-lo {
				t.Errorf("only %d distinct counts of texts over 400 requests drawn from %d..%d", len(counts), lo, hi)
			}
		})
	}
	if _, err := New(Config{Profile: prof, Inputs: Fixed(MaxInputs + 1)}); err == nil || !strings.Contains(err.Error(), "inputs: at most 4096") {
		t.Errorf("New with too many inputs: %v", err)
	}
}

// TestInputsFromDatasets: a texts-jsonl row is one embeddings request of
// its texts, a rerank-jsonl row one query with its documents, sent as
// written; a prompts file is refused for them, and they for chat.
func TestInputsFromDatasets(t *testing.T) {
	prof := Profile{Name: "x", Prompt: Fixed(8), Output: Fixed(8), MaxTokens: 8}
	texts, err := ReadDataset(strings.NewReader(`{"text":"abcdefgh"}`+"\n"+`{"texts":["abcd","efghijkl"]}`+"\n"), "t.jsonl", FormatTextsJSONL)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{Profile: prof, Dataset: texts, DatasetSample: SampleSequential, Inputs: Fixed(1)})
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := g.Generate(schedule.Arrival{Seq: 0}), g.Generate(schedule.Arrival{Seq: 1})
	if strings.Join(r0.Inputs, "|") != "abcdefgh" || strings.Join(r1.Inputs, "|") != "abcd|efghijkl" || r1.Prompt != "" || r1.MaxTokens != 0 || r1.PromptTokens != 3 {
		t.Errorf("texts rows: %q %q, prompt %q, max_tokens %d, prompt tokens %d", r0.Inputs, r1.Inputs, r1.Prompt, r1.MaxTokens, r1.PromptTokens)
	}
	if p, m := g.Shape(schedule.Arrival{Seq: 1}); p != r1.PromptTokens || m != 0 {
		t.Errorf("Shape %d, %d; Generate %d, 0", p, m, r1.PromptTokens)
	}
	rr, err := ReadDataset(strings.NewReader(`{"query":"abcd","documents":["abcdefgh","ijklmnop","qrst"]}`+"\n"), "r.jsonl", FormatRerankJSONL)
	if err != nil {
		t.Fatal(err)
	}
	g, _ = New(Config{Profile: prof, Dataset: rr, Inputs: Fixed(8), QueryTokens: 32})
	r := g.Generate(schedule.Arrival{Seq: 0})
	// 20 document bytes and the 4-byte query read with each of 3: 32 bytes, 8 tokens.
	if r.Prompt != "abcd" || strings.Join(r.Inputs, "|") != "abcdefgh|ijklmnop|qrst" || r.PromptTokens != 8 {
		t.Errorf("rerank row: query %q documents %q prompt tokens %d", r.Prompt, r.Inputs, r.PromptTokens)
	}
	prompts, _ := ReadDataset(strings.NewReader(`{"prompt":"p"}`+"\n"), "p.jsonl", FormatPromptsJSONL)
	if _, err := New(Config{Profile: prof, Dataset: prompts, Inputs: Fixed(1)}); err == nil || !strings.Contains(err.Error(), "embeddings and rerank read texts-jsonl or rerank-jsonl") {
		t.Errorf("a prompts file for embeddings: %v", err)
	}
	if _, err := New(Config{Profile: prof, Dataset: texts}); err == nil || !strings.Contains(err.Error(), "not prompts") {
		t.Errorf("a texts file for chat: %v", err)
	}
}
