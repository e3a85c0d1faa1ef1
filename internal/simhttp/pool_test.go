package simhttp

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// embeddingsJSON is an embeddings answer, float vectors.
type embeddingsJSON struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vector decodes embedding i: an array of floats, or base64 of
// little-endian float32s.
func (b *embeddingsJSON) vector(t *testing.T, i int) []float64 {
	t.Helper()
	raw := b.Data[i].Embedding
	var fs []float64
	if json.Unmarshal(raw, &fs) == nil {
		return fs
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("embedding %d: %s", i, raw)
	}
	bs, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(bs)%4 != 0 {
		t.Fatalf("embedding %d: base64 %q: %v", i, s, err)
	}
	for k := 0; k < len(bs); k += 4 {
		fs = append(fs, float64(math.Float32frombits(binary.LittleEndian.Uint32(bs[k:]))))
	}
	return fs
}

// float32s is v as the float32 values that were sent: a float prints
// the shortest decimal of its float32.
func float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// Embeddings: one unit vector of the server's dimension per input, a
// function of its input alone, usage the prompt tokens the engine
// prefilled and no generation.
func TestEmbeddings(t *testing.T) {
	e := startServer(t, fastConfig())
	tokens := func(texts ...string) int {
		n := 0
		for _, s := range texts {
			n += EstimatePromptTokens(false, s)
		}
		return n
	}
	tests := []struct {
		name   string
		body   string
		inputs int
		dims   int
		prompt int
	}{
		{"one string", `{"model":"surge-sim","input":"hello there"}`, 1, DefaultEmbeddingDimensions, tokens("hello there")},
		{"strings", `{"input":["hello there","a","","abcdefghij"]}`, 4, DefaultEmbeddingDimensions, tokens("hello there", "a", "", "abcdefghij")},
		{"token ids", `{"input":[1,2,3,4,5]}`, 1, DefaultEmbeddingDimensions, 5},
		{"lists of token ids", `{"input":[[1,2],[3,4,5]]}`, 2, DefaultEmbeddingDimensions, 5},
		{"base64", `{"input":["hello there","a"],"encoding_format":"base64"}`, 2, DefaultEmbeddingDimensions, tokens("hello there", "a")},
		{"dimensions", `{"input":"hello there","dimensions":16,"encoding_format":"float"}`, 1, 16, tokens("hello there")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.s.Snapshot()
			var b embeddingsJSON
			e.bodyOf("/embeddings", tt.body, &b)
			after := e.s.Snapshot()
			if b.Object != "list" || b.Model != "surge-sim" || len(b.Data) != tt.inputs {
				t.Fatalf("answer %+v", b)
			}
			for i := range b.Data {
				v := b.vector(t, i)
				if b.Data[i].Object != "embedding" || b.Data[i].Index != i || len(v) != tt.dims || math.Abs(norm(v)-1) > 1e-5 {
					t.Errorf("embedding %d: index %d, %d dimensions, norm %v", i, b.Data[i].Index, len(v), norm(v))
				}
			}
			if b.Usage == nil || b.Usage.PromptTokens != tt.prompt || b.Usage.TotalTokens != tt.prompt {
				t.Errorf("usage %+v, want %d", b.Usage, tt.prompt)
			}
			if got := after.PromptTokens - before.PromptTokens; got != uint64(tt.prompt) || after.GenerationTokens != before.GenerationTokens {
				t.Errorf("the engine prefilled %d tokens and generated %d, want %d and none", got, after.GenerationTokens-before.GenerationTokens, tt.prompt)
			}
		})
	}
	t.Run("deterministic", func(t *testing.T) {
		var one, two, b64, short embeddingsJSON
		e.bodyOf("/embeddings", `{"input":"hello there"}`, &one)
		e.bodyOf("/embeddings", `{"input":["other","hello there"]}`, &two)
		e.bodyOf("/embeddings", `{"input":"hello there","encoding_format":"base64"}`, &b64)
		e.bodyOf("/embeddings", `{"input":"hello there","dimensions":8}`, &short)
		v := one.vector(t, 0)
		if !slices.Equal(v, two.vector(t, 1)) || !slices.Equal(float32s(v), float32s(b64.vector(t, 0))) {
			t.Error("the same text gave different vectors")
		}
		if slices.Equal(v, two.vector(t, 0)) {
			t.Error("two texts gave the same vector")
		}
		// A shorter vector is the prefix of the long one, normalised again.
		prefix := v[:8]
		for i, x := range short.vector(t, 0) {
			if math.Abs(x-prefix[i]/norm(prefix)) > 1e-6 {
				t.Errorf("dimension %d: %v, want %v", i, x, prefix[i]/norm(prefix))
			}
		}
	})
	t.Run("server dimensions", func(t *testing.T) {
		e := startServer(t, fastConfig(), WithEmbeddingDimensions(8))
		var b embeddingsJSON
		e.bodyOf("/embeddings", `{"input":["a","b"]}`, &b)
		if len(b.vector(t, 0)) != 8 || len(b.vector(t, 1)) != 8 {
			t.Errorf("dimensions %d, %d; want 8", len(b.vector(t, 0)), len(b.vector(t, 1)))
		}
		checkError(t, e.post("/embeddings", `{"input":"a","dimensions":9}`), 400)
	})
}

// rerankJSON is a rerank answer.
type rerankJSON struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Results []struct {
		Index    int `json:"index"`
		Document *struct {
			Text string `json:"text"`
		} `json:"document"`
		RelevanceScore float64 `json:"relevance_score"`
	} `json:"results"`
	Usage *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// Rerank: every document scored in [0, 1), highest first, the same pair
// always the same score, documents echoed exactly, usage the work the
// engine prefilled: Σ (query + document) tokens.
func TestRerank(t *testing.T) {
	e := startServer(t, fastConfig())
	query := "which engine answers?"
	docs := []string{"the engine answers", "a quote \" and a \\ backslash", "line\nbreak\ttab\x01", "日本語のテキスト", "invalid \xff byte", "short", "", "the queue waits while the batch grows"}
	docsJSON, _ := json.Marshal(docs)
	want := 0
	for _, d := range docs {
		want += max(EstimatePromptTokens(false, query)+defaultTokens(len(d)), 1)
	}
	if EstimatePromptTokens(false, query) != defaultTokens(len(query)) {
		t.Fatal("a query of text counts ceil(bytes/B)")
	}
	body := `{"model":"surge-sim","query":"` + query + `","documents":` + string(docsJSON)
	var all rerankJSON
	for _, path := range []string{"/rerank", "/v1/rerank"} {
		t.Run(path, func(t *testing.T) {
			before := e.s.Snapshot()
			resp, err := e.client.Post(e.root+path, "application/json", strings.NewReader(body+`}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var r rerankJSON
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
				t.Fatalf("status %d", resp.StatusCode)
			}
			after := e.s.Snapshot()
			if !strings.HasPrefix(r.ID, "rerank-") || r.Model != "surge-sim" || len(r.Results) != len(docs) {
				t.Fatalf("answer %+v", r)
			}
			seen := map[int]bool{}
			for i, res := range r.Results {
				if i > 0 && res.RelevanceScore > r.Results[i-1].RelevanceScore {
					t.Errorf("result %d scores %v above result %d's %v", i, res.RelevanceScore, i-1, r.Results[i-1].RelevanceScore)
				}
				if res.RelevanceScore < 0 || res.RelevanceScore >= 1 || seen[res.Index] || res.Document == nil ||
					res.Document.Text != strings.ToValidUTF8(docs[res.Index], string(utf8.RuneError)) {
					t.Errorf("result %d: %+v", i, res)
				}
				seen[res.Index] = true
			}
			if r.Usage == nil || r.Usage.TotalTokens != want || after.PromptTokens-before.PromptTokens != uint64(want) || after.GenerationTokens != before.GenerationTokens {
				t.Errorf("usage %+v, the engine prefilled %d; want %d", r.Usage, after.PromptTokens-before.PromptTokens, want)
			}
			if all.Results != nil && !slices.Equal(scores(all), scores(r)) {
				t.Error("the same request scored differently")
			}
			all = r
		})
	}
	t.Run("top_n", func(t *testing.T) {
		var r rerankJSON
		e.bodyOf("/rerank", body+`,"top_n":3,"return_documents":false}`, &r)
		if len(r.Results) != 3 || !slices.Equal(scores(r), scores(all)[:3]) {
			t.Fatalf("top 3 %v, of all %v", scores(r), scores(all))
		}
		for _, res := range r.Results {
			if res.Document != nil {
				t.Errorf("return_documents false, document %+v", res.Document)
			}
		}
	})
	t.Run("documents as objects", func(t *testing.T) {
		var r rerankJSON
		e.bodyOf("/rerank", `{"query":"`+query+`","documents":[{"text":"short"},"the engine answers"]}`, &r)
		for _, res := range r.Results {
			if want := all.scoreOf(docs, res.Document.Text); res.RelevanceScore != want {
				t.Errorf("%q scored %v, %v before", res.Document.Text, res.RelevanceScore, want)
			}
		}
	})
}

func scores(r rerankJSON) []float64 {
	var s []float64
	for _, res := range r.Results {
		s = append(s, res.RelevanceScore)
	}
	return s
}

// scoreOf is the score the answer gave the document of that text.
func (r rerankJSON) scoreOf(docs []string, text string) float64 {
	for _, res := range r.Results {
		if docs[res.Index] == text {
			return res.RelevanceScore
		}
	}
	return -1
}

// Bad pooling requests get 400 in OpenAI's shape, naming the field.
func TestPoolingBadRequests(t *testing.T) {
	e := startServer(t, fastConfig())
	long := `"` + strings.Repeat("abcd", 1025) + `"`
	tests := []struct {
		name, path, body, param string
	}{
		{"embeddings without input", "/embeddings", `{"model":"surge-sim"}`, "input"},
		{"embeddings of an empty list", "/embeddings", `{"input":[]}`, "input"},
		{"embeddings of an empty id list", "/embeddings", `{"input":[[1],[]]}`, "input"},
		{"embeddings of a number", "/embeddings", `{"input":3}`, "input"},
		{"embeddings encoding", "/embeddings", `{"input":"a","encoding_format":"int8"}`, "encoding_format"},
		{"embeddings dimensions", "/embeddings", `{"input":"a","dimensions":0}`, "dimensions"},
		{"embeddings beyond max_model_len", "/embeddings", `{"input":["a",` + long + `]}`, "input"},
		{"rerank without query", "/rerank", `{"documents":["a"]}`, "query"},
		{"rerank without documents", "/rerank", `{"query":"a","documents":[]}`, "documents"},
		{"rerank of numbers", "/rerank", `{"query":"a","documents":[1]}`, "documents"},
		{"rerank top_n", "/rerank", `{"query":"a","documents":["b"],"top_n":-1}`, "top_n"},
		{"rerank beyond max_model_len", "/rerank", `{"query":"a","documents":[` + long + `]}`, "documents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkError(t, e.post(tt.path, tt.body), http.StatusBadRequest)
			if got.Error.Param == nil || *got.Error.Param != tt.param {
				t.Errorf("param %v, want %s", got.Error.Param, tt.param)
			}
		})
	}
	checkError(t, e.post("/embeddings", `{"model":"other","input":"a"}`), http.StatusNotFound)
	// Inputs each within max_model_len may exceed it together: a batch.
	var b embeddingsJSON
	e.bodyOf("/embeddings", `{"input":[`+strings.Repeat(`"`+strings.Repeat("abcd", 1000)+`",`, 3)+`"a"]}`, &b)
	if len(b.Data) != 4 || b.Usage.PromptTokens != 3001 {
		t.Errorf("batch beyond max_model_len: %d vectors, usage %+v", len(b.Data), b.Usage)
	}
}
