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
