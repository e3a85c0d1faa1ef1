package simhttp

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/surge-bench/surge/internal/sim"
)

// The simulator's OTLP export imitates vLLM's (vllm/v1/engine/
// output_processor.py, do_tracing): one SERVER span named llm_request per
// request that finished in the engine — none for a request cancelled
// before it finished — child of the incoming W3C traceparent, with vLLM's
// float-second latency attributes, sent through a batch processor like
// OpenTelemetry's BatchSpanProcessor (every SpanExportDelay, or at once
// when SpanExportBatch spans are queued; at most spanQueueMax queued, the
// rest dropped) as OTLP/HTTP protobuf.

// Defaults of the span exporter: OpenTelemetry's BatchSpanProcessor's.
const (
	DefaultSpanExportDelay = 5 * time.Second // OTEL_BSP_SCHEDULE_DELAY
	SpanExportBatch        = 512             // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
	spanQueueMax           = 2048            // OTEL_BSP_MAX_QUEUE_SIZE
)

// WithSpanExport makes the server export an llm_request span per finished
// request to endpoint (an OTLP/HTTP traces URL, e.g.
// http://127.0.0.1:4318/v1/traces) every delay (0: DefaultSpanExportDelay)
// with client (nil: http.DefaultClient). Close sends what is queued.
func WithSpanExport(endpoint string, delay time.Duration, client *http.Client) Option {
	return func(s *Server) {
		if delay <= 0 {
			delay = DefaultSpanExportDelay
		}
		if client == nil {
			client = http.DefaultClient
		}
		s.spans = &spanExporter{url: endpoint, delay: delay, client: client, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	}
}

// spanRecord is one finished request's span.
type spanRecord struct {
	traceID, parent []byte
	start, end      time.Time
	res             sim.Result
	doneAt          time.Duration // sim time of the finish
}

type spanExporter struct {
	url    string
	delay  time.Duration
	client *http.Client

	mu      sync.Mutex
	queue   []spanRecord
	dropped int64

	kick       chan struct{}
	stop, done chan struct{}
	once       sync.Once
}

// parseTraceparent returns the trace id and parent span id of a W3C
// traceparent of version 00; ok is false for anything else.
func parseTraceparent(v string) (trace, parent []byte, ok bool) {
	if len(v) != 55 || v[:3] != "00-" || v[35] != '-' || v[52] != '-' {
		return nil, nil, false
	}
	t, err1 := hex.DecodeString(v[3:35])
	p, err2 := hex.DecodeString(v[36:52])
	if err1 != nil || err2 != nil {
		return nil, nil, false
	}
	return t, p, true
}

// add queues a span; it never blocks (the cluster lock may be held).
func (e *spanExporter) add(sr spanRecord) {
	e.mu.Lock()
	if len(e.queue) >= spanQueueMax {
		e.dropped++
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, sr)
	full := len(e.queue) >= SpanExportBatch
	e.mu.Unlock()
	if full {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

func (e *spanExporter) run() {
	defer close(e.done)
	t := time.NewTimer(e.delay)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			for e.export() {
			}
			return
		case <-t.C:
			e.export()
			t.Reset(e.delay)
		case <-e.kick:
			e.export()
		}
	}
}

// export sends one batch; it reports whether more are queued.
func (e *spanExporter) export() bool {
	e.mu.Lock()
	n := min(len(e.queue), SpanExportBatch)
	batch := e.queue[:n:n]
	e.queue = append([]spanRecord(nil), e.queue[n:]...)
	more := len(e.queue) > 0
	e.mu.Unlock()
	if n == 0 {
		return false
	}
	body, err := proto.Marshal(tracesData(batch))
	if err != nil {
		return more
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return more
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if resp, err := e.client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return more
}

func newTraceID() []byte {
	id := make([]byte, 16)
	for i := range id {
		id[i] = byte(rand.Uint32())
	}
	id[0] |= 1
	return id
}

func (e *spanExporter) close() {
	e.once.Do(func() { close(e.stop) })
	<-e.done
}

func tracesData(batch []spanRecord) *tracepb.TracesData {
	f := func(k string, d time.Duration) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: d.Seconds()}}}
	}
	i := func(k string, v int) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(v)}}}
	}
	spans := make([]*tracepb.Span, 0, len(batch))
	for _, b := range batch {
		r := b.res
		id := make([]byte, 8)
		for j := range id {
			id[j] = byte(rand.Uint32())
		}
		id[0] |= 1
		spans = append(spans, &tracepb.Span{
			TraceId: b.traceID, SpanId: id, ParentSpanId: b.parent, Name: "llm_request", Kind: tracepb.Span_SPAN_KIND_SERVER,
			StartTimeUnixNano: uint64(b.start.UnixNano()), EndTimeUnixNano: uint64(b.end.UnixNano()),
			Attributes: []*commonpb.KeyValue{
				f("gen_ai.latency.time_to_first_token", r.FirstTokenAt-r.ArrivedAt),
				f("gen_ai.latency.e2e", b.doneAt-r.ArrivedAt),
				f("gen_ai.latency.time_in_queue", r.AdmittedAt-r.ArrivedAt),
				i("gen_ai.usage.prompt_tokens", r.PromptTokens),
				i("gen_ai.usage.completion_tokens", r.OutputTokens),
				f("gen_ai.latency.time_in_model_prefill", r.FirstTokenAt-r.AdmittedAt),
				f("gen_ai.latency.time_in_model_decode", r.DoneAt-r.FirstTokenAt),
				f("gen_ai.latency.time_in_model_inference", r.DoneAt-r.AdmittedAt),
			},
		})
	}
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "surge-sim"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}
