// Package otlp is an embedded OTLP trace receiver: it takes the per-request
// spans an inference engine exports (vLLM's "llm_request", one per finished
// request) and joins them to a run's records by trace id, so that each
// record carries the engine's own queue, prefill, decode and end-to-end
// times.
//
// One listener speaks both OTLP transports: OTLP/HTTP (POST of an
// ExportTraceServiceRequest as application/x-protobuf, or OTLP/JSON with hex
// ids) and OTLP/gRPC (the unary TraceService/Export call over unencrypted
// HTTP/2 with prior knowledge, which is what an "insecure" gRPC exporter
// sends). The gRPC side is a small handler on net/http, not the grpc
// module: one unary method needs only the 5-byte message framing and a
// grpc-status trailer.
//
// The payload is decoded as trace/v1 TracesData, which has the same wire
// form as collector/trace/v1 ExportTraceServiceRequest (field 1, repeated
// ResourceSpans): the collector package would link google.golang.org/grpc
// and grpc-gateway into surge for the same bytes.
//
// # Units
//
// vLLM's attributes are float seconds (gen_ai.latency.time_in_queue,
// gen_ai.latency.time_in_model_prefill, gen_ai.latency.time_in_model_decode,
// gen_ai.latency.e2e); a Span holds them as integer nanoseconds,
// ns = round(s · 10⁹). An absent, negative or non-finite value is
// record.None.
//
// # Bounded memory
//
// A Join keeps at most one span per record of its run (the run's request
// count caps it); a span whose trace id belongs to no record of the run, a
// second span for the same record, or a span beyond the cap is counted and
// dropped. A payload that does not decode is counted and answered 400
// (gRPC: INVALID_ARGUMENT); bodies are capped at MaxBody.
package otlp
