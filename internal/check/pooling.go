package check

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The suites of the APIs that read their inputs and generate nothing:
// embeddings (one vector per input) and rerank (the documents scored
// against a query). Vectors, scores and texts stay in memory; evidence
// gives counts, lengths, indexes and scores.

func embeddingsChecks() []Check {
	return []Check{
		servedCheck(APIEmbeddings),
		{Name: CheckEmbeddingsBatch, Group: GroupEmbeddings, Run: runEmbeddingsBatch,
			What: "a request of 4 inputs gets 4 embeddings, their indexes 0–3 each once and in order, different inputs different vectors"},
		{Name: CheckEmbeddingsDimensions, Group: GroupEmbeddings, Run: runEmbeddingsDimensions,
			What: "every vector has the same number of dimensions, across the inputs of a request and across requests"},
		{Name: CheckEmbeddingsUsage, Group: GroupEmbeddings, Run: runEmbeddingsUsage,
			What: "the answer carries usage.prompt_tokens, at least one per input"},
		{Name: CheckEmbeddingsErrors, Group: GroupEmbeddings, Run: runEmbeddingsErrors,
			What: "bad requests (invalid JSON, no input, input a number, an unknown model) get a 4xx with an OpenAI error body"},
	}
}

func rerankChecks() []Check {
	return []Check{
		servedCheck(APIRerank),
		{Name: CheckRerankResults, Group: GroupRerank, Run: runRerankResults,
			What: "a result per document (top_n of them when top_n is given), each index a document's, each once"},
		{Name: CheckRerankOrder, Group: GroupRerank, Run: runRerankOrder,
			What: "every result has a numeric relevance_score, and the results come by score, highest first"},
		{Name: CheckRerankUsage, Group: GroupRerank, Run: runRerankUsage,
			What: "the answer carries usage: prompt_tokens or total_tokens > 0"},
		{Name: CheckRerankErrors, Group: GroupRerank, Run: runRerankErrors,
			What: "bad requests (invalid JSON, no query, documents not an array, an unknown model) get a 4xx with an OpenAI error body"},
	}
}

// The texts the pooling checks send: inputs of different lengths, and a
// query with documents of which two are about it.
var (
	embedInputs = []string{
		"Bridges carry roads over rivers.",
		"A lighthouse keeper trims the lamp at dusk and writes the weather in a log before the night watch.",
		"Tokyo",
		"The history of suspension bridges begins with rope walkways in the Andes, long before steel cables were spun.",
	}
	embedAgain  = []string{"What time is it on the server?"}
	rerankQuery = "Which text is about bridges?"
	rerankDocs  = []string{
		"Suspension bridges hang their decks from cables slung between towers.",
		"A lighthouse keeper trims the lamp at dusk.",
		"Tokyo Haneda is one of the two airports of Tokyo.",
		"The Romans built stone arch bridges that still stand.",
		"Convert 500 GBP to JPY at today's rate.",
	}
)

// rerankTopN is the top_n of rerank.results' second request.
const rerankTopN = 2

// pooledUsage is the usage of an embeddings or rerank answer, each
// member nil when absent.
type pooledUsage struct {
	PromptTokens *int `json:"prompt_tokens"`
	TotalTokens  *int `json:"total_tokens"`
}

// embeddingsAnswer is an embeddings body: the vectors in the order they
// came, with their indexes (nil when absent).
type embeddingsAnswer struct {
	indexes []*int
	vectors [][]float64
	usage   *pooledUsage
}

// embed sends inputs to the embeddings API and decodes the answer; the
// Result is a FAIL when it is not a complete 200 of the embeddings shape.
func embed(ctx context.Context, t *T, inputs []string) (embeddingsAnswer, *Result) {
	var a embeddingsAnswer
	x, err := t.Probe.Send(ctx, Req{Inputs: inputs, Timeout: reqTimeout(t)})
	if r, bad := failed(x, err, countOf(len(inputs), "input")); bad {
		return a, &r
	}
	var b struct {
		Data []struct {
			Index     *int            `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage *pooledUsage `json:"usage"`
	}
	if json.Unmarshal(x.Body, &b) != nil || b.Data == nil {
		return a, &Result{Status: Fail, Evidence: fmt.Sprintf("%s → 200 without a data array of embeddings", countOf(len(inputs), "input"))}
	}
	a.usage = b.Usage
	for i, d := range b.Data {
		var v []float64
		if json.Unmarshal(d.Embedding, &v) != nil || v == nil {
			what := "not an array of numbers"
			if len(d.Embedding) > 0 && d.Embedding[0] == '"' {
				what = "a string (base64?), not an array of numbers"
			}
			return a, &Result{Status: Fail, Evidence: fmt.Sprintf("embedding %d of %d is %s", i+1, len(b.Data), what)}
		}
		a.indexes = append(a.indexes, d.Index)
		a.vectors = append(a.vectors, v)
	}
	return a, nil
}

// dims lists the vectors' lengths.
func (a embeddingsAnswer) dims() []int {
	out := make([]int, len(a.vectors))
	for i, v := range a.vectors {
		out[i] = len(v)
	}
	return out
}

func runEmbeddingsBatch(ctx context.Context, t *T) Result {
	a, failed := embed(ctx, t, embedInputs)
	if failed != nil {
		return *failed
	}
	return judgeEmbeddingsBatch(a, len(embedInputs))
}

// judgeEmbeddingsBatch is embeddings.batch's rule (docs/checks.md): n
// vectors for n inputs, each index in 0…n−1 once (else FAIL) and in
// order (else WARN; no indexes at all WARN too), and no two different
// inputs with the same vector (FAIL).
func judgeEmbeddingsBatch(a embeddingsAnswer, n int) Result {
	got := len(a.vectors)
	details := map[string]any{"inputs": n, "embeddings": got}
	if got != n {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%s for %s", countOf(got, "embedding"), countOf(n, "input"))}
	}
	seen := map[int]bool{}
	inOrder, missing := true, 0
	for i, ix := range a.indexes {
		switch {
		case ix == nil:
			missing++
			continue
		case *ix < 0 || *ix >= n:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("embedding %d has index %d, not one of 0–%d", i+1, *ix, n-1)}
		case seen[*ix]:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("index %d comes twice among %s", *ix, countOf(n, "embedding"))}
		}
		seen[*ix] = true
		inOrder = inOrder && *ix == i
	}
	for i := range a.vectors {
		for j := i + 1; j < len(a.vectors); j++ {
			if slices.Equal(a.vectors[i], a.vectors[j]) {
				return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("inputs %d and %d, different texts, got the same vector", i+1, j+1)}
			}
		}
	}
	ev := fmt.Sprintf("%s for %s, indexes 0–%d each once", countOf(got, "embedding"), countOf(n, "input"), n-1)
	switch {
	case missing == n:
		return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("%s for %s, without index members: clients must rely on the order", countOf(got, "embedding"), countOf(n, "input"))}
	case missing > 0:
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%d of %s have no index", missing, countOf(n, "embedding"))}
	case !inOrder:
		return Result{Status: Warn, Details: details, Evidence: ev + ", but not in input order: clients that read by position mismatch them"}
	}
	return Result{Status: Pass, Details: details, Evidence: ev + ", in order; different inputs, different vectors"}
}

func runEmbeddingsDimensions(ctx context.Context, t *T) Result {
	first, failed := embed(ctx, t, embedInputs)
	if failed != nil {
		return *failed
	}
	second, failed := embed(ctx, t, embedAgain)
	if failed != nil {
		return *failed
	}
	return judgeEmbeddingsDimensions(first.dims(), second.dims())
}

// judgeEmbeddingsDimensions is embeddings.dimensions' rule: every
// vector of both requests has the same length, > 0.
func judgeEmbeddingsDimensions(first, second []int) Result {
	details := map[string]any{"first": first, "second": second}
	if len(first) == 0 || len(second) == 0 {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("no embedding to measure: %d in the first request, %d in the second", len(first), len(second))}
	}
	d := first[0]
	details["dimensions"] = d
	switch {
	case d == 0:
		return Result{Status: Fail, Details: details, Evidence: "empty vectors (0 dimensions)"}
	case slices.ContainsFunc(first, func(n int) bool { return n != d }):
		return Result{Status: Fail, Details: details, Evidence: "vectors of different lengths in one request: " + joinInts(first)}
	case slices.ContainsFunc(second, func(n int) bool { return n != d }):
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%d dimensions in the first request, %s in the second", d, joinInts(second))}
	}
	return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("%d dimensions for all %s, and again for %s in a second request",
		d, countOf(len(first), "input"), countOf(len(second), "input"))}
}

// joinInts is "384, 384, 383".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func runEmbeddingsUsage(ctx context.Context, t *T) Result {
	a, failed := embed(ctx, t, embedInputs)
	if failed != nil {
		return *failed
	}
	return judgeEmbeddingsUsage(a.usage, len(embedInputs))
}

// judgeEmbeddingsUsage is embeddings.usage's rule: prompt_tokens present
// and > 0 (else FAIL), at least one per input, and total_tokens, when
// given, equal to it (else WARN: nothing is generated).
func judgeEmbeddingsUsage(u *pooledUsage, inputs int) Result {
	switch {
	case u == nil:
		return Result{Status: Fail, Evidence: "no usage in the body"}
	case u.PromptTokens == nil && u.TotalTokens != nil:
		return Result{Status: Fail, Evidence: fmt.Sprintf("usage without prompt_tokens (total_tokens %d only)", *u.TotalTokens)}
	case u.PromptTokens == nil:
		return Result{Status: Fail, Evidence: "usage without prompt_tokens"}
	}
	p := *u.PromptTokens
	details := map[string]any{"prompt_tokens": p, "inputs": inputs}
	ev := fmt.Sprintf("usage: %d prompt tokens for %s", p, countOf(inputs, "input"))
	switch {
	case p <= 0:
		return Result{Status: Fail, Details: details, Evidence: ev}
	case p < inputs:
		return Result{Status: Warn, Details: details, Evidence: ev + ": fewer than one per input"}
	case u.TotalTokens != nil && *u.TotalTokens != p:
		return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("%s, but total_tokens %d (nothing is generated: they should agree)", ev, *u.TotalTokens)}
	}
	return Result{Status: Pass, Details: details, Evidence: ev}
}

// rerankAnswer is a rerank body: the results in the order they came,
// each with its index and score (nil when absent or not a number).
type rerankAnswer struct {
	indexes []*int
	scores  []*float64
	usage   *pooledUsage
}

// rerank sends the query and documents (with top_n when > 0) and
// decodes the answer; the Result is a FAIL when it is not a complete 200
// of the rerank shape, or a WARN when top_n was refused.
func rerank(ctx context.Context, t *T, topN int) (rerankAnswer, *Result) {
	var a rerankAnswer
	req := Req{Prompt: rerankQuery, Inputs: rerankDocs, Timeout: reqTimeout(t)}
	what := countOf(len(rerankDocs), "document")
	if topN > 0 {
		req.Extra = map[string]any{"top_n": topN}
		what += fmt.Sprintf(", top_n %d", topN)
	}
	x, err := t.Probe.Send(ctx, req)
	if err == nil && topN > 0 && refused(x) {
		return a, &Result{Status: Warn, Evidence: "top_n refused: " + httpStatus(x)}
	}
	if r, bad := failed(x, err, what); bad {
		return a, &r
	}
	var b struct {
		Results []struct {
			Index *int            `json:"index"`
			Score json.RawMessage `json:"relevance_score"`
		} `json:"results"`
		Usage *pooledUsage `json:"usage"`
	}
	if json.Unmarshal(x.Body, &b) != nil || b.Results == nil {
		return a, &Result{Status: Fail, Evidence: what + " → 200 without a results array"}
	}
	a.usage = b.Usage
	for _, res := range b.Results {
		var s *float64
		if len(res.Score) > 0 && res.Score[0] != '"' {
			var f float64
			if json.Unmarshal(res.Score, &f) == nil {
				s = &f
			}
		}
		a.indexes = append(a.indexes, res.Index)
		a.scores = append(a.scores, s)
	}
	return a, nil
}

func runRerankResults(ctx context.Context, t *T) Result {
	all, failed := rerank(ctx, t, 0)
	if failed != nil {
		return *failed
	}
	if r := judgeRerankResults(all, len(rerankDocs), 0); r.Status != Pass {
		return r
	}
	top, failed := rerank(ctx, t, rerankTopN)
	if failed != nil {
		failed.Evidence = fmt.Sprintf("%s for %s; ", countOf(len(all.indexes), "result"), countOf(len(rerankDocs), "document")) + failed.Evidence
		return *failed
	}
	r := judgeRerankResults(top, len(rerankDocs), rerankTopN)
	if r.Status == Pass {
		r.Evidence = fmt.Sprintf("%s for %s, indexes 0–%d each once; top_n %d → %s", countOf(len(all.indexes), "result"),
			countOf(len(rerankDocs), "document"), len(rerankDocs)-1, rerankTopN, countOf(len(top.indexes), "result"))
	}
	return r
}

// judgeRerankResults is rerank.results' rule for one answer over docs
// documents (topN 0: all of them): as many results as asked, each index
// one of the documents', none twice.
func judgeRerankResults(a rerankAnswer, docs, topN int) Result {
	want, asked := docs, countOf(docs, "document")
	if topN > 0 {
		want, asked = min(topN, docs), fmt.Sprintf("top_n %d of %s", topN, countOf(docs, "document"))
	}
	got := len(a.indexes)
	details := map[string]any{"documents": docs, "top_n": topN, "results": got}
	if got != want {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%s for %s", countOf(got, "result"), asked)}
	}
	seen := map[int]bool{}
	for i, ix := range a.indexes {
		switch {
		case ix == nil:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("result %d of %d has no index: no client can tell its document", i+1, got)}
		case *ix < 0 || *ix >= docs:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("result %d has index %d, not one of the documents' 0–%d", i+1, *ix, docs-1)}
		case seen[*ix]:
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("document %d comes twice among %s", *ix, countOf(got, "result"))}
		}
		seen[*ix] = true
	}
	return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("%s for %s, each index once", countOf(got, "result"), asked)}
}

func runRerankOrder(ctx context.Context, t *T) Result {
	a, failed := rerank(ctx, t, 0)
	if failed != nil {
		return *failed
	}
	return judgeRerankOrder(a)
}

// judgeRerankOrder is rerank.order's rule: every relevance_score a
// number (else FAIL), each no higher than the one before (else FAIL);
// all equal WARNs (the order says nothing).
func judgeRerankOrder(a rerankAnswer) Result {
	n := len(a.scores)
	if n == 0 {
		return Result{Status: Fail, Evidence: "no results to order"}
	}
	details := map[string]any{"results": n}
	for i, s := range a.scores {
		if s == nil {
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("result %d of %d has no numeric relevance_score", i+1, n)}
		}
	}
	for i := 1; i < n; i++ {
		if *a.scores[i] > *a.scores[i-1] {
			return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("not by relevance_score, highest first: result %d scores %.4g, above result %d's %.4g", i+1, *a.scores[i], i, *a.scores[i-1])}
		}
	}
	hi, lo := *a.scores[0], *a.scores[n-1]
	details["highest"], details["lowest"] = hi, lo
	if hi == lo && n > 1 {
		return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("all %d results score %.4g: the order says nothing", n, hi)}
	}
	return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("%s by relevance_score, highest first: %.4g down to %.4g", countOf(n, "result"), hi, lo)}
}

func runRerankUsage(ctx context.Context, t *T) Result {
	a, failed := rerank(ctx, t, 0)
	if failed != nil {
		return *failed
	}
	return judgeRerankUsage(a.usage, len(rerankDocs))
}

// judgeRerankUsage is rerank.usage's rule: usage with prompt_tokens or
// total_tokens > 0 (rerank servers often give only the total: nothing is
// generated, so the two agree).
func judgeRerankUsage(u *pooledUsage, docs int) Result {
	if u == nil {
		return Result{Status: Fail, Evidence: "no usage in the body"}
	}
	var parts []string
	details := map[string]any{"documents": docs}
	n := 0
	if u.PromptTokens != nil {
		parts = append(parts, fmt.Sprintf("%d prompt tokens", *u.PromptTokens))
		details["prompt_tokens"], n = *u.PromptTokens, max(n, *u.PromptTokens)
	}
	if u.TotalTokens != nil {
		parts = append(parts, fmt.Sprintf("%d total tokens", *u.TotalTokens))
		details["total_tokens"], n = *u.TotalTokens, max(n, *u.TotalTokens)
	}
	switch {
	case len(parts) == 0:
		return Result{Status: Fail, Details: details, Evidence: "usage without prompt_tokens or total_tokens"}
	case n <= 0:
		return Result{Status: Fail, Details: details, Evidence: "usage: " + strings.Join(parts, ", ") + " for " + countOf(docs, "document")}
	}
	return Result{Status: Pass, Details: details, Evidence: "usage: " + strings.Join(parts, ", ") + " for " + countOf(docs, "document")}
}

func runEmbeddingsErrors(ctx context.Context, t *T) Result {
	model, _ := json.Marshal(t.Probe.Model())
	m := `{"model":` + string(model)
	return judgeMalformed(ctx, t, []badCase{
		{"invalid JSON", m + `,"input":["Say`},
		{"no input", m + `}`},
		{"input a number", m + `,"input":42}`},
		{"unknown model", `{"model":"` + unknownModel + `","input":["Say hello."]}`},
	}, openAIError)
}

func runRerankErrors(ctx context.Context, t *T) Result {
	model, _ := json.Marshal(t.Probe.Model())
	m := `{"model":` + string(model)
	return judgeMalformed(ctx, t, []badCase{
		{"invalid JSON", m + `,"query":"Say`},
		{"no query", m + `,"documents":["a","b"]}`},
		{"documents a string", m + `,"query":"q","documents":"a"}`},
		{"unknown model", `{"model":"` + unknownModel + `","query":"q","documents":["a","b"]}`},
	}, openAIError)
}
