package push

import (
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// The per-request histograms, named after OpenTelemetry's GenAI semantic
// conventions (gen_ai.client.*, with their recommended bucket bounds),
// cumulative from the run's origin and pushed with every live batch.
var (
	GenAIDuration = &Metric{"gen_ai_client_operation_duration_seconds", "gen_ai.client.operation.duration", "s", "GenAI operation duration: from sending the request to its end (every request sent; failures carry error.type)."}
	GenAITTFC     = &Metric{"gen_ai_client_operation_time_to_first_chunk_seconds", "gen_ai.client.operation.time_to_first_chunk", "s", "Time from sending the request to the first chunk carrying a token (successful requests)."}
	GenAITokens   = &Metric{"gen_ai_client_token_usage", "gen_ai.client.token.usage", "{token}", "Input and output tokens of successful requests, from the server's usage."}
)

// The semantic conventions' recommended bounds.
var (
	durationBounds = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBounds    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// GenAI counts a run's requests into the GenAI histograms, per phase (and
// error.type, token type). Observe is called once per finished request;
// safe for concurrent use.
type GenAI struct {
	mu        sync.Mutex
	operation string // gen_ai.operation.name: chat, text_completion, embeddings, …
	model     string // gen_ai.request.model
	startMs   int64
	hists     map[histKey]*Hist
	order     []histKey
}

type histKey struct {
	m                      *Metric
	phase, errType, tokens string
}

// NewGenAI counts from origin; operation and model are the requests'.
func NewGenAI(operation, model string, origin time.Time) *GenAI {
	return &GenAI{operation: operation, model: model, startMs: origin.UnixMilli(), hists: map[histKey]*Hist{}}
}

// Observe counts one finished request. A request never sent (a generator
// drop) is no operation and is not counted.
func (g *GenAI) Observe(r *record.Record) {
	if g == nil || r.SentNs == record.None || r.Outcome == record.GeneratorDrop {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	errType := ""
	if r.Outcome != record.OK {
		errType = string(r.Outcome)
	}
	if r.DoneNs != record.None {
		g.hist(histKey{GenAIDuration, r.Phase, errType, ""}, durationBounds).observe(float64(r.DoneNs-r.SentNs) / 1e9)
	}
	if r.Outcome != record.OK {
		return
	}
	if r.FirstTokenNs != record.None {
		g.hist(histKey{GenAITTFC, r.Phase, "", ""}, durationBounds).observe(float64(r.FirstTokenNs-r.SentNs) / 1e9)
	}
	if r.UsageFromServer {
		g.hist(histKey{GenAITokens, r.Phase, "", "input"}, tokenBounds).observe(float64(r.PromptTokens))
		g.hist(histKey{GenAITokens, r.Phase, "", "output"}, tokenBounds).observe(float64(r.OutputTokens))
	}
}

func (g *GenAI) hist(k histKey, bounds []float64) *Hist {
	h, ok := g.hists[k]
	if !ok {
		ls := []Label{{"phase", k.phase}, {"gen_ai.operation.name", g.operation}, {"gen_ai.request.model", g.model}}
		if k.errType != "" {
			ls = append(ls, Label{"error.type", k.errType})
		}
		if k.tokens != "" {
			ls = append(ls, Label{"gen_ai.token.type", k.tokens})
		}
		h = &Hist{Metric: k.m, Labels: ls, Bounds: bounds, Counts: make([]uint64, len(bounds)+1), StartMs: g.startMs}
		g.hists[k] = h
		g.order = append(g.order, k)
	}
	return h
}

func (h *Hist) observe(v float64) {
	i := 0
	for i < len(h.Bounds) && v > h.Bounds[i] {
		i++
	}
	h.Counts[i]++
	h.Count++
	h.Sum += v
}

// AddTo appends a copy of every histogram, stamped at, to b. Nil-safe.
func (g *GenAI) AddTo(b *Batch, at time.Time) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range g.order {
		h := *g.hists[k]
		h.Counts = append([]uint64(nil), h.Counts...)
		h.AtMs = at.UnixMilli()
		b.Hists = append(b.Hists, h)
	}
}
