package openai

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/record"
)

// Trace context. Every attempt carries a W3C traceparent (version 00,
// sampled) and an X-Request-Id holding the record id, so that an engine's
// own per-request telemetry (vLLM's OTLP spans, its request id) can be
// joined to the record.
//
// The 16-byte trace id is the client's 8-byte prefix (random per Client
// unless Config.TracePrefix sets it) followed by the record's sequence
// number, big-endian: unique per request within a run and across runs, and
// a receiver that knows the prefix maps a span back to its record without a
// table (SeqOfTraceID). The 8-byte parent span id is seq<<8 | attempt with
// the top bit set (never zero), so each attempt is its own span.

// Header names the client sets itself on every request.
const (
	TraceparentHeader = "Traceparent"
	RequestIDHeader   = "X-Request-Id"
)

// TraceID returns the trace id of the request with sequence number seq
// under prefix.
func TraceID(prefix [8]byte, seq int64) [16]byte {
	var id [16]byte
	copy(id[:8], prefix[:])
	binary.BigEndian.PutUint64(id[8:], uint64(seq))
	return id
}

// SeqOfTraceID returns the sequence number a trace id made by TraceID
// under prefix carries; ok is false for any other trace id.
func SeqOfTraceID(prefix [8]byte, id [16]byte) (seq int64, ok bool) {
	if [8]byte(id[:8]) != prefix {
		return 0, false
	}
	v := binary.BigEndian.Uint64(id[8:])
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// randomPrefix returns a non-zero random trace-id prefix.
func randomPrefix() [8]byte {
	var p [8]byte
	for p == ([8]byte{}) {
		binary.BigEndian.PutUint64(p[:], rand.Uint64())
	}
	return p
}

const hexDigits = "0123456789abcdef"

// appendTraceparent appends "00-<trace id>-<span id>-01" (55 bytes).
func appendTraceparent(b []byte, id [16]byte, span uint64) []byte {
	b = append(b, "00-"...)
	for _, c := range id {
		b = append(b, hexDigits[c>>4], hexDigits[c&0xF])
	}
	b = append(b, '-')
	for i := 56; i >= 0; i -= 8 {
		c := byte(span >> i)
		b = append(b, hexDigits[c>>4], hexDigits[c&0xF])
	}
	return append(b, "-01"...)
}

// spanID is the parent span id of one attempt: never zero.
func spanID(seq int64, attempt int) uint64 {
	return uint64(seq)<<8 | uint64(attempt&0xFF) | 1<<63
}

// applyTimings records llama.cpp's timings: prompt_ms is the prefill,
// predicted_ms the decode, cache_n the cached prompt tokens (unless usage
// already said).
func applyTimings(rec *record.Record, t Timings) {
	if t.PromptMs >= 0 {
		rec.EnginePrefillNs = int64(math.Round(t.PromptMs * 1e6))
	}
	if t.PredictedMs >= 0 {
		rec.EngineDecodeNs = int64(math.Round(t.PredictedMs * 1e6))
	}
	if t.CacheN >= 0 && rec.CachedTokens == 0 {
		rec.CachedTokens = t.CacheN
	}
}

// TGI's timing headers, whole milliseconds on non-streamed responses
// (router/src/server.rs): x-queue-time is the engine queue; x-total-time
// (validation + queue + inference) is the engine's end to end.
const (
	tgiQueueHeader     = "X-Queue-Time"
	tgiTotalHeader     = "X-Total-Time"
	tgiInferenceHeader = "X-Inference-Time"
)

// applyTGIHeaders records TGI's timing headers when present. Without
// x-total-time, e2e is queue + inference.
func applyTGIHeaders(rec *record.Record, h http.Header) {
	ms := func(name string) int64 {
		v := h[name]
		if len(v) == 0 {
			return record.None
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v[0]), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || f > 1e10 {
			return record.None
		}
		return int64(math.Round(f * 1e6))
	}
	q, total := ms(tgiQueueHeader), ms(tgiTotalHeader)
	if q == record.None && total == record.None && len(h[tgiInferenceHeader]) == 0 {
		return
	}
	if q != record.None {
		rec.EngineQueueNs = q
	}
	if total == record.None {
		if inf := ms(tgiInferenceHeader); inf != record.None && q != record.None {
			total = q + inf
		}
	}
	if total != record.None {
		rec.EngineE2ENs = total
	}
}
