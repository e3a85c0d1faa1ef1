package check

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
)

// fakeEmbeddings answers an embeddings request of n inputs, the i-th
// request of the exchange (from 1), with the data and usage edit makes
// of a well-formed answer: n vectors of 8 dimensions, index i, each
// different.
func fakeEmbeddings(t *testing.T, edit func(call int, data []map[string]any, usage map[string]any) ([]map[string]any, map[string]any)) *Probe {
	var calls atomic.Int32
	return serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		if okAPI(w, r) {
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeAPIError(w, 400, "bad")
			return
		}
		var data []map[string]any
		for i := range req.Input {
			v := make([]float64, 8)
			v[i%8] = 1
			v[(i+1)%8] = float64(i + 1)
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		usage := map[string]any{"prompt_tokens": 9 * len(req.Input), "total_tokens": 9 * len(req.Input)}
		data, usage = edit(int(calls.Add(1)), data, usage)
		body := map[string]any{"object": "list", "data": data}
		if usage != nil {
			body["usage"] = usage
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}, APIEmbeddings)
}

func TestEmbeddingsShapes(t *testing.T) {
	same := func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) { return d, u }
	for name, tc := range map[string]struct {
		check  string
		edit   func(int, []map[string]any, map[string]any) ([]map[string]any, map[string]any)
		status Status
		want   string
	}{
		"batch right": {CheckEmbeddingsBatch, same, Pass, "4 embeddings for 4 inputs, indexes 0–3 each once, in order; different inputs, different vectors"},
		"one missing": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) { return d[:3], u },
			Fail, "3 embeddings for 4 inputs"},
		"index twice": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			d[2]["index"] = 0
			return d, u
		}, Fail, "index 0 comes twice among 4 embeddings"},
		"index out of range": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			d[3]["index"] = 4
			return d, u
		}, Fail, "embedding 4 has index 4, not one of 0–3"},
		"same vectors": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			for _, e := range d {
				e["embedding"] = []float64{0, 0, 0}
			}
			return d, u
		}, Fail, "inputs 1 and 2, different texts, got the same vector"},
		"out of order": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			d[0], d[1] = d[1], d[0]
			return d, u
		}, Warn, "but not in input order"},
		"no indexes": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			for _, e := range d {
				delete(e, "index")
			}
			return d, u
		}, Warn, "without index members: clients must rely on the order"},
		"base64 unasked": {CheckEmbeddingsBatch, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			d[0]["embedding"] = "AAAAAAAAgD8="
			return d, u
		}, Fail, "embedding 1 of 4 is a string (base64?), not an array of numbers"},
		"dimensions right": {CheckEmbeddingsDimensions, same, Pass, "8 dimensions for all 4 inputs, and again for 1 input in a second request"},
		"lengths differ": {CheckEmbeddingsDimensions, func(call int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			if call == 1 {
				d[2]["embedding"] = []float64{1, 2, 3, 4, 5, 6, 7}
			}
			return d, u
		}, Fail, "vectors of different lengths in one request: 8, 8, 7, 8"},
		"lengths differ across requests": {CheckEmbeddingsDimensions, func(call int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			if call == 2 {
				d[0]["embedding"] = []float64{1, 2, 3, 4}
			}
			return d, u
		}, Fail, "8 dimensions in the first request, 4 in the second"},
		"empty vectors": {CheckEmbeddingsDimensions, func(_ int, d []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			for _, e := range d {
				e["embedding"] = []float64{}
			}
			return d, u
		}, Fail, "empty vectors (0 dimensions)"},
		"usage right":   {CheckEmbeddingsUsage, same, Pass, "usage: 36 prompt tokens for 4 inputs"},
		"usage missing": {CheckEmbeddingsUsage, func(_ int, d []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) { return d, nil }, Fail, "no usage in the body"},
		"total only": {CheckEmbeddingsUsage, func(_ int, d []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) {
			return d, map[string]any{"total_tokens": 36}
		}, Fail, "usage without prompt_tokens (total_tokens 36 only)"},
		"zero tokens": {CheckEmbeddingsUsage, func(_ int, d []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) {
			return d, map[string]any{"prompt_tokens": 0}
		}, Fail, "usage: 0 prompt tokens for 4 inputs"},
		"fewer than inputs": {CheckEmbeddingsUsage, func(_ int, d []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) {
			return d, map[string]any{"prompt_tokens": 2, "total_tokens": 2}
		}, Warn, "fewer than one per input"},
		"total disagrees": {CheckEmbeddingsUsage, func(_ int, d []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) {
			return d, map[string]any{"prompt_tokens": 36, "total_tokens": 50}
		}, Warn, "but total_tokens 50"},
	} {
		t.Run(name, func(t *testing.T) {
			mustStatus(t, runCheck(t, tc.check, fakeEmbeddings(t, tc.edit), DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

// fakeRerank answers a rerank request with a result per document (top_n
// of them when given), by descending score, and the usage; edit changes
// them (call counts requests from 1).
func fakeRerank(t *testing.T, edit func(call, topN int, results []map[string]any, usage map[string]any) ([]map[string]any, map[string]any)) *Probe {
	var calls atomic.Int32
	return serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		if okAPI(w, r) {
			return
		}
		var req struct {
			Documents []string `json:"documents"`
			TopN      int      `json:"top_n"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeAPIError(w, 400, "bad")
			return
		}
		var results []map[string]any
		for i := range req.Documents {
			// Documents 3, 0, 4, 1, 2 by score.
			score := map[int]float64{3: 0.9, 0: 0.8, 4: 0.5, 1: 0.25, 2: 0.125}[i]
			results = append(results, map[string]any{"index": i, "relevance_score": score})
		}
		order := []int{3, 0, 4, 1, 2}
		sorted := make([]map[string]any, 0, len(results))
		for _, i := range order {
			if i < len(results) {
				sorted = append(sorted, results[i])
			}
		}
		if req.TopN > 0 && req.TopN < len(sorted) {
			sorted = sorted[:req.TopN]
		}
		sorted, usage := edit(int(calls.Add(1)), req.TopN, sorted, map[string]any{"total_tokens": 60})
		if sorted == nil {
			writeAPIError(w, 400, "top_n is not supported")
			return
		}
		body := map[string]any{"id": "rerank-1", "results": sorted}
		if usage != nil {
			body["usage"] = usage
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}, APIRerank)
}

func TestRerankShapes(t *testing.T) {
	same := func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) { return r, u }
	for name, tc := range map[string]struct {
		check  string
		edit   func(int, int, []map[string]any, map[string]any) ([]map[string]any, map[string]any)
		status Status
		want   string
	}{
		"results right": {CheckRerankResults, same, Pass, "5 results for 5 documents, indexes 0–4 each once; top_n 2 → 2 results"},
		"one missing": {CheckRerankResults, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			return r[:4], u
		},
			Fail, "4 results for 5 documents"},
		"index twice": {CheckRerankResults, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			r[1]["index"] = 3
			return r, u
		}, Fail, "document 3 comes twice among 5 results"},
		"index out of range": {CheckRerankResults, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			r[4]["index"] = 5
			return r, u
		}, Fail, "result 5 has index 5, not one of the documents' 0–4"},
		"no index": {CheckRerankResults, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			delete(r[0], "index")
			return r, u
		}, Fail, "result 1 of 5 has no index"},
		"top_n ignored": {CheckRerankResults, func(_, topN int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			if topN > 0 {
				return append(r, map[string]any{"index": 1, "relevance_score": 0.2}, map[string]any{"index": 2, "relevance_score": 0.1}, map[string]any{"index": 4, "relevance_score": 0.05}), u
			}
			return r, u
		}, Fail, "5 results for top_n 2 of 5 documents"},
		"top_n refused": {CheckRerankResults, func(_, topN int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			if topN > 0 {
				return nil, u
			}
			return r, u
		}, Warn, "5 results for 5 documents; top_n refused: HTTP 400 (BadRequestError)"},
		"order right": {CheckRerankOrder, same, Pass, "5 results by relevance_score, highest first: 0.9 down to 0.125"},
		"out of order": {CheckRerankOrder, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			r[1], r[2] = r[2], r[1]
			return r, u
		}, Fail, "not by relevance_score, highest first: result 3 scores 0.8, above result 2's 0.5"},
		"by index": {CheckRerankOrder, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			byIndex := make([]map[string]any, len(r))
			for _, x := range r {
				byIndex[x["index"].(int)] = x
			}
			return byIndex, u
		}, Fail, "not by relevance_score, highest first: result 4 scores 0.9, above result 3's 0.125"},
		"score a string": {CheckRerankOrder, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			r[2]["relevance_score"] = "0.5"
			return r, u
		}, Fail, "result 3 of 5 has no numeric relevance_score"},
		"no score": {CheckRerankOrder, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			delete(r[0], "relevance_score")
			return r, u
		}, Fail, "result 1 of 5 has no numeric relevance_score"},
		"all equal": {CheckRerankOrder, func(_, _ int, r []map[string]any, u map[string]any) ([]map[string]any, map[string]any) {
			for _, x := range r {
				x["relevance_score"] = 0
			}
			return r, u
		}, Warn, "all 5 results score 0: the order says nothing"},
		"usage right":   {CheckRerankUsage, same, Pass, "usage: 60 total tokens for 5 documents"},
		"usage missing": {CheckRerankUsage, func(_, _ int, r []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) { return r, nil }, Fail, "no usage in the body"},
		"usage empty": {CheckRerankUsage, func(_, _ int, r []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) {
			return r, map[string]any{"billed_units": 1}
		}, Fail, "usage without prompt_tokens or total_tokens"},
		"usage zero": {CheckRerankUsage, func(_, _ int, r []map[string]any, _ map[string]any) ([]map[string]any, map[string]any) {
			return r, map[string]any{"prompt_tokens": 0, "total_tokens": 0}
		}, Fail, "usage: 0 prompt tokens, 0 total tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			mustStatus(t, runCheck(t, tc.check, fakeRerank(t, tc.edit), DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

func TestPoolingErrorsShapes(t *testing.T) {
	accept := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"index":0,"embedding":[1]}],"results":[{"index":0,"relevance_score":1}]}`))
	}
	for name, tc := range map[string]struct {
		check  string
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"embeddings accept anything": {CheckEmbeddingsErrors, accept, Fail, "invalid JSON → 200, no input → 200, input a number → 200, unknown model → 200"},
		"embeddings 500 HTML": {CheckEmbeddingsErrors, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			w.Write([]byte("<html>oops</html>"))
		}, Fail, "invalid JSON → 500, an HTML page"},
		"embeddings right": {CheckEmbeddingsErrors, func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, 400, "bad") }, Pass,
			"invalid JSON → 400, no input → 400, input a number → 400, unknown model → 400; all with an OpenAI error body"},
		"rerank accept anything": {CheckRerankErrors, accept, Fail, "invalid JSON → 200, no query → 200, documents a string → 200, unknown model → 200"},
		"rerank plain 400":       {CheckRerankErrors, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad", 400) }, Warn, "no query → 400 without an OpenAI error body"},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := Find(tc.check)
			mustStatus(t, runCheck(t, tc.check, typedServer(t, c.Group, tc.h), DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}
