package simhttp

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/jsontext"
	"github.com/surge-bench/surge/internal/sim"
)

// Pooling work: /v1/embeddings and /v1/rerank (also /rerank). Both are
// prefill-only for the engine (sim.Request.PrefillOnly): one request
// whose prompt is the sum of the inputs' tokens, answered once its
// prefill is done. The vectors and scores are deterministic functions of
// the text (doc.go, "Pooling").

// Bounds of one pooling request.
const (
	maxEmbedInputs = 2048 // inputs of an embeddings request, as OpenAI's
	maxRerankDocs  = 4096 // documents of a rerank request
)

// embedInput is what the vectors of an embeddings request are made of.
type embedInput struct {
	seeds  []uint64 // one per input: the hash of its text or token ids
	dims   int      // length of every vector
	base64 bool     // encoding_format "base64"
}

// wireEmbeddingsRequest holds the fields of an embeddings request that
// the simulator reads.
type wireEmbeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int64          `json:"dimensions"`
}

// decodeEmbeddings parses an embeddings request for vectors of dims
// dimensions (the server's; the request's dimensions may shorten them).
// input is a string, an array of strings, an array of token ids (one
// input) or an array of arrays of token ids. An input of text counts
// max(1, ceil(bytes/B)) tokens (no template), one of ids one per id.
func decodeEmbeddings(body []byte, tok textTokens, dims int) (parsedRequest, *apiError) {
	var w wireEmbeddingsRequest
	if err := unmarshalRequest(body, &w); err != nil {
		return parsedRequest{}, err
	}
	p := parsedRequest{api: apiEmbeddings, model: w.Model}
	in := &embedInput{dims: dims}
	switch w.EncodingFormat {
	case "", "float":
	case "base64":
		in.base64 = true
	default:
		return parsedRequest{}, badRequest("encoding_format", "encoding_format must be \"float\" or \"base64\"")
	}
	if d := w.Dimensions; d != nil {
		if *d < 1 || *d > int64(dims) {
			return parsedRequest{}, badRequest("dimensions", "dimensions must be between 1 and %d, got %d", dims, *d)
		}
		in.dims = int(*d)
	}
	add := func(seed uint64, tokens int) {
		in.seeds = append(in.seeds, seed)
		p.promptTokens += tokens
		p.longest = max(p.longest, tokens)
	}
	raw := w.Input
	var one string
	var texts []string
	var ids []int64
	var idLists [][]int64
	switch {
	case absent(raw):
		return parsedRequest{}, badRequest("input", "input is required")
	case json.Unmarshal(raw, &one) == nil:
		add(hashText(one), max(tok(len(one)), 1))
	case json.Unmarshal(raw, &texts) == nil:
		for _, s := range texts {
			add(hashText(s), max(tok(len(s)), 1))
		}
	case json.Unmarshal(raw, &ids) == nil:
		if len(ids) > 0 {
			add(hashIDs(ids), len(ids))
		}
	case json.Unmarshal(raw, &idLists) == nil:
		for _, l := range idLists {
			if len(l) == 0 {
				return parsedRequest{}, badRequest("input", "input must not hold an empty list of token ids")
			}
			add(hashIDs(l), len(l))
		}
	default:
		return parsedRequest{}, badRequest("input", "input must be a string, an array of strings or an array of token ids")
	}
	switch n := len(in.seeds); {
	case n == 0:
		return parsedRequest{}, badRequest("input", "input must not be empty")
	case n > maxEmbedInputs:
		return parsedRequest{}, badRequest("input", "input takes at most %d entries, got %d", maxEmbedInputs, n)
	}
	p.embed = in
	return p, nil
}

// rerankInput is what a rerank request scores.
type rerankInput struct {
	query     uint64   // the query's hash
	docs      []string // the documents, in the request's order
	topN      int      // results answered (0: all)
	returnDoc bool     // answer each document's text (return_documents, default true)
}

// wireRerankRequest holds the fields of a rerank request (vLLM's, Jina's
// and Cohere's shape) that the simulator reads.
type wireRerankRequest struct {
	Model           string          `json:"model"`
	Query           *string         `json:"query"`
	Documents       json.RawMessage `json:"documents"`
	TopN            *int64          `json:"top_n"`
	ReturnDocuments *bool           `json:"return_documents"`
}

// decodeRerank parses a rerank request. documents are strings or
// {"text":…} objects. The engine scores each (query, document) pair as
// one prompt: the work is Σ_documents (tokens(query) + tokens(document)),
// each pair at least 1 token and within max_model_len.
func decodeRerank(body []byte, tok textTokens) (parsedRequest, *apiError) {
	var w wireRerankRequest
	if err := unmarshalRequest(body, &w); err != nil {
		return parsedRequest{}, err
	}
	p := parsedRequest{api: apiRerank, model: w.Model}
	if w.Query == nil {
		return parsedRequest{}, badRequest("query", "query is required")
	}
	if absent(w.Documents) {
		return parsedRequest{}, badRequest("documents", "documents is required")
	}
	var docs []json.RawMessage
	if json.Unmarshal(w.Documents, &docs) != nil {
		return parsedRequest{}, badRequest("documents", "documents must be an array of strings")
	}
	switch {
	case len(docs) == 0:
		return parsedRequest{}, badRequest("documents", "documents must not be empty")
	case len(docs) > maxRerankDocs:
		return parsedRequest{}, badRequest("documents", "documents takes at most %d entries, got %d", maxRerankDocs, len(docs))
	}
	in := &rerankInput{query: hashText(*w.Query), docs: make([]string, len(docs)), returnDoc: w.ReturnDocuments == nil || *w.ReturnDocuments}
	q := tok(len(*w.Query))
	for i, d := range docs {
		var obj struct {
			Text *string `json:"text"`
		}
		switch {
		case json.Unmarshal(d, &in.docs[i]) == nil:
		case json.Unmarshal(d, &obj) == nil && obj.Text != nil:
			in.docs[i] = *obj.Text
		default:
			return parsedRequest{}, badRequest("documents", "documents[%d] must be a string or {\"text\":…}", i)
		}
		pair := max(q+tok(len(in.docs[i])), 1)
		p.promptTokens += pair
		p.longest = max(p.longest, pair)
	}
	if n := w.TopN; n != nil {
		if *n < 0 {
			return parsedRequest{}, badRequest("top_n", "top_n must be ≥ 0, got %d", *n)
		}
		in.topN = int(min(*n, int64(len(docs))))
	}
	p.rerank = in
	return p, nil
}

// poolEncoder is the encoder of a pooling answer.
func (s *Server) poolEncoder(p parsedRequest, t sim.Ticket) bodyEncoder {
	id := strconv.FormatUint(t.ID, 16)
	if p.rerank != nil {
		return &rerankEncoder{in: p.rerank, id: "rerank-" + id, model: s.model}
	}
	return &embedEncoder{in: p.embed, id: "embd-" + id, created: time.Now().Unix(), model: s.model}
}

var (
	_ bodyEncoder = (*embedEncoder)(nil)
	_ bodyEncoder = (*rerankEncoder)(nil)
)

// embedEncoder writes the answer of an embeddings request.
type embedEncoder struct {
	in      *embedInput
	id      string
	created int64
	model   string
}

// response implements bodyEncoder: {"id","object":"list","created",
// "model","data":[{"object":"embedding","index":i,"embedding":[…]}],
// "usage":{"prompt_tokens":P,"total_tokens":P}}, each embedding an array
// of floats or, with base64, the base64 of its little-endian float32s.
func (e *embedEncoder) response(b []byte, f final) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, e.id...)
	b = append(b, `","object":"list","created":`...)
	b = strconv.AppendInt(b, e.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, e.model)
	b = append(b, `,"data":[`...)
	vec := make([]float32, e.in.dims)
	var raw []byte
	if e.in.base64 {
		raw = make([]byte, 4*e.in.dims)
	}
	for i, seed := range e.in.seeds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		embedding(vec, seed)
		if e.in.base64 {
			for j, v := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(v))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, v := range vec {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if f.usage {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.PromptTokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.PromptTokens), 10)
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// truncatedBody implements bodyEncoder.
func (e *embedEncoder) truncatedBody(b []byte) []byte {
	return append(b, `{"object":"list","data":[{"object":"embedding","embedding":[`...)
}

// embedding fills vec with the unit vector of seed: components uniform in
// [−1, 1) from a splitmix64 stream started at seed, divided by their
// Euclidean norm.
func embedding(vec []float32, seed uint64) {
	sum := 0.0
	x := seed
	for i := range vec {
		x += 0x9e3779b97f4a7c15
		v := float64(int64(mix(x))) / (1 << 63)
		vec[i] = float32(v)
		sum += v * v
	}
	norm := math.Sqrt(sum)
	if norm == 0 {
		vec[0], norm = 1, 1
	}
	for i, v := range vec {
		vec[i] = float32(float64(v) / norm)
	}
}

// rerankEncoder writes the answer of a rerank request.
type rerankEncoder struct {
	in    *rerankInput
	id    string
	model string
}

// response implements bodyEncoder: {"id","model","usage":
// {"total_tokens":T},"results":[{"index":i,"document":{"text":…},
// "relevance_score":s}]}, by score, highest first (ties: lower index
// first), at most top_n.
func (e *rerankEncoder) response(b []byte, f final) []byte {
	in := e.in
	scores := make([]float64, len(in.docs))
	order := make([]int, len(in.docs))
	for i, d := range in.docs {
		scores[i], order[i] = relevance(in.query, d), i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(scores[j], scores[i]) })
	if in.topN > 0 {
		order = order[:in.topN]
	}
	b = append(b, `{"id":"`...)
	b = append(b, e.id...)
	b = append(b, `","model":`...)
	b = appendJSONString(b, e.model)
	if f.usage {
		b = append(b, `,"usage":{"total_tokens":`...)
		b = strconv.AppendInt(b, int64(f.res.PromptTokens), 10)
		b = append(b, '}')
	}
	b = append(b, `,"results":[`...)
	for k, i := range order {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		if in.returnDoc {
			b = append(b, `,"document":{"text":`...)
			b = jsontext.AppendString(b, in.docs[i])
			b = append(b, '}')
		}
		b = append(b, `,"relevance_score":`...)
		b = strconv.AppendFloat(b, scores[i], 'g', -1, 64)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// truncatedBody implements bodyEncoder.
func (e *rerankEncoder) truncatedBody(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, e.id...)
	return append(b, `","results":[{"index":`...)
}

// relevance is the score of document d for the query of hash query: a
// deterministic value in [0, 1), uniform over pairs.
func relevance(query uint64, d string) float64 {
	return float64(mix(query^mix(hashText(d)))>>11) / (1 << 53)
}

// hashText is the 64-bit FNV-1a hash of s.
func hashText(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// hashIDs is the 64-bit FNV-1a hash of token ids, 8 little-endian bytes
// each, distinct from the hash of any text of the same bytes by a
// leading marker.
func hashIDs(ids []int64) uint64 {
	h := uint64(14695981039346656037) ^ 0xff
	h *= 1099511628211
	for _, id := range ids {
		for k := range 8 {
			h ^= uint64(id>>(8*k)) & 0xff
			h *= 1099511628211
		}
	}
	return h
}

// mix is splitmix64's finaliser: it spreads every bit of x over the
// result.
func mix(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
