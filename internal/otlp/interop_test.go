package otlp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestPythonExporters sends an llm_request span with OpenTelemetry's own
// Python exporters (gRPC and HTTP/protobuf, the ones vLLM uses) when the
// vLLM venv of scripts/vllm-e2e.sh is present; otherwise it is skipped.
func TestPythonExporters(t *testing.T) {
	home, _ := os.UserHomeDir()
	py, _ := filepath.Glob(filepath.Join(home, ".cache/surge/vllm-venv/bin/python3"))
	if len(py) == 0 || testing.Short() {
		t.Skip("no ~/.cache/surge/vllm-venv (scripts/vllm-e2e.sh installs it)")
	}
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			r, err := Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var c collect
			j := NewJoin(match(8), 8, time.Minute, c.sink)
			r.Attach(j)
			endpoint := "http://" + r.Addr()
			if proto != "grpc" {
				endpoint += "/v1/traces"
			}
			script := `
import sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry import trace
from opentelemetry.trace import SpanContext, TraceFlags, NonRecordingSpan, set_span_in_context
proto, endpoint = sys.argv[1], sys.argv[2]
if proto == "grpc":
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    exp = OTLPSpanExporter(endpoint=endpoint, insecure=True)
else:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    exp = OTLPSpanExporter(endpoint=endpoint)
tp = TracerProvider()
tp.add_span_processor(SimpleSpanProcessor(exp))
tracer = tp.get_tracer("vllm")
parent = SpanContext(trace_id=0x0102030405060708_0000000000000003, span_id=0x8000000000000301, is_remote=True, trace_flags=TraceFlags(1))
ctx = set_span_in_context(NonRecordingSpan(parent))
span = tracer.start_span("llm_request", context=ctx, kind=trace.SpanKind.SERVER, attributes={
    "gen_ai.latency.time_in_queue": 0.0421, "gen_ai.latency.time_in_model_prefill": 0.01,
    "gen_ai.latency.time_in_model_decode": 0.5, "gen_ai.latency.e2e": 0.6, "gen_ai.usage.prompt_tokens": 12})
span.end()
tp.shutdown()
`
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, py[0], "-c", script, proto, endpoint).CombinedOutput()
			if err != nil {
				t.Fatalf("exporter: %v\n%s", err, out)
			}
			j.Add(okRecord(3))
			if st := j.Close(context.Background()); st.Joined != 1 {
				t.Fatalf("stats %+v, receiver %+v; exporter said:\n%s", st, r.Stats(), out)
			}
			if got := c.recs[3]; got.EngineQueueNs != 42_100_000 || got.EngineDecodeNs != 500_000_000 {
				t.Errorf("timing %+v", got)
			}
		})
	}
}
