package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/surge-bench/surge/internal/record"
)

// SpanName is the name of vLLM's per-request span.
const SpanName = "llm_request"

// The attributes of an llm_request span that a Span holds (float seconds).
const (
	AttrQueue   = "gen_ai.latency.time_in_queue"
	AttrPrefill = "gen_ai.latency.time_in_model_prefill"
	AttrDecode  = "gen_ai.latency.time_in_model_decode"
	AttrE2E     = "gen_ai.latency.e2e"
)

// GRPCPath is the path of the OTLP/gRPC trace export call.
const GRPCPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// MaxBody bounds one export request's body (compressed or not), in bytes.
const MaxBody = 8 << 20

// Span is the engine timing of one llm_request span, in nanoseconds;
// record.None where the span did not carry it.
type Span struct {
	TraceID   [16]byte
	QueueNs   int64
	PrefillNs int64
	DecodeNs  int64
	E2ENs     int64
}

// Apply copies the span's known times into rec.
func (s *Span) Apply(rec *record.Record) {
	set := func(dst *int64, v int64) {
		if v != record.None {
			*dst = v
		}
	}
	set(&rec.EngineQueueNs, s.QueueNs)
	set(&rec.EnginePrefillNs, s.PrefillNs)
	set(&rec.EngineDecodeNs, s.DecodeNs)
	set(&rec.EngineE2ENs, s.E2ENs)
}

// Stats counts what a Receiver has been sent since it started.
type Stats struct {
	Exports    int64 `json:"exports"`     // export requests that decoded
	Malformed  int64 `json:"malformed"`   // export requests that did not decode (answered 400 / INVALID_ARGUMENT), or over MaxBody
	Spans      int64 `json:"spans"`       // llm_request spans received
	OtherSpans int64 `json:"other_spans"` // spans of any other name, ignored
}

// Sub returns s − o, the counts of an interval.
func (s Stats) Sub(o Stats) Stats {
	return Stats{s.Exports - o.Exports, s.Malformed - o.Malformed, s.Spans - o.Spans, s.OtherSpans - o.OtherSpans}
}

// Receiver serves OTLP trace exports on one listener and hands each
// llm_request span to the current Join, if any.
type Receiver struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	exports, malformed, spans, other atomic.Int64

	mu   sync.Mutex
	join *Join
}

// Listen opens addr (host:port) and serves on it.
func Listen(addr string) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return Serve(ln), nil
}

// Serve serves on ln, which the Receiver owns from now on.
func Serve(ln net.Listener) *Receiver {
	r := &Receiver{ln: ln, done: make(chan struct{})}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true) // OTLP/gRPC exporters with insecure=true speak h2c with prior knowledge
	r.srv = &http.Server{Handler: r, Protocols: &p, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r
}

// Addr is the address the Receiver listens on.
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// Close stops the Receiver.
func (r *Receiver) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}

// Stats returns the counts so far.
func (r *Receiver) Stats() Stats {
	return Stats{r.exports.Load(), r.malformed.Load(), r.spans.Load(), r.other.Load()}
}

// Attach makes j the Join that receives spans from now on (nil: none;
// spans are then counted and dropped).
func (r *Receiver) Attach(j *Join) {
	r.mu.Lock()
	r.join = j
	r.mu.Unlock()
}

func (r *Receiver) current() *Join {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.join
}

// ServeHTTP implements http.Handler: OTLP/gRPC for application/grpc
// requests, OTLP/HTTP for any other POST (the path is not checked, since
// exporters given a full URL send to it as is).
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ct := req.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/grpc") {
		r.serveGRPC(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP trace receiver: POST ExportTraceServiceRequest", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(req.Body, req.Header.Get("Content-Encoding"))
	if err != nil {
		r.malformed.Add(1)
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	isJSON := strings.HasPrefix(ct, "application/json")
	var spans []Span
	if isJSON {
		spans, err = r.decodeJSON(body)
	} else {
		spans, err = r.decodeProto(body)
	}
	if err != nil {
		r.malformed.Add(1)
		http.Error(w, "malformed ExportTraceServiceRequest", http.StatusBadRequest)
		return
	}
	r.deliver(spans)
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
}

// readBody reads at most MaxBody bytes, decompressing gzip.
func readBody(body io.Reader, encoding string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, errors.New("otlp: body over MaxBody")
	}
	switch encoding {
	case "", "identity":
		return b, nil
	case "gzip":
		return gunzip(b)
	}
	return nil, fmt.Errorf("otlp: unsupported encoding %q", encoding)
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxBody {
		return nil, errors.New("otlp: body over MaxBody")
	}
	return out, nil
}

// serveGRPC answers one unary TraceService/Export call.
func (r *Receiver) serveGRPC(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	status := func(code int, msg string) {
		w.Header().Set("Grpc-Status", fmt.Sprint(code))
		if msg != "" {
			w.Header().Set("Grpc-Message", msg)
		}
	}
	if req.ProtoMajor != 2 || req.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK)
		status(13, "gRPC needs HTTP/2 POST") // INTERNAL
		return
	}
	if req.URL.Path != GRPCPath {
		w.WriteHeader(http.StatusOK)
		status(12, "only "+GRPCPath) // UNIMPLEMENTED
		return
	}
	msg, err := readGRPCMessage(req.Body, req.Header.Get("Grpc-Encoding"))
	var spans []Span
	if err == nil {
		spans, err = r.decodeProto(msg)
	}
	w.WriteHeader(http.StatusOK)
	if err != nil {
		r.malformed.Add(1)
		status(3, "malformed ExportTraceServiceRequest") // INVALID_ARGUMENT
		return
	}
	r.deliver(spans)
	_, _ = w.Write([]byte{0, 0, 0, 0, 0}) // an uncompressed, empty ExportTraceServiceResponse
	status(0, "")
}

// readGRPCMessage reads the one length-prefixed message of a unary call:
// a compressed flag byte, a 4-byte big-endian length, the message.
func readGRPCMessage(body io.Reader, encoding string) ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(body, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxBody {
		return nil, errors.New("otlp: message over MaxBody")
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(body, msg); err != nil {
		return nil, err
	}
	switch {
	case hdr[0] == 0:
		return msg, nil
	case hdr[0] == 1 && encoding == "gzip":
		return gunzip(msg)
	}
	return nil, errors.New("otlp: unsupported message compression")
}

// decodeProto decodes an ExportTraceServiceRequest (as TracesData, the
// same wire form) and returns its llm_request spans.
func (r *Receiver) decodeProto(b []byte) ([]Span, error) {
	var td tracepb.TracesData
	if err := proto.Unmarshal(b, &td); err != nil {
		return nil, err
	}
	var out []Span
	for _, rs := range td.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				if sp.GetName() != SpanName || len(sp.GetTraceId()) != 16 {
					r.other.Add(1)
					continue
				}
				s := Span{TraceID: [16]byte(sp.GetTraceId()), QueueNs: record.None, PrefillNs: record.None, DecodeNs: record.None, E2ENs: record.None}
				for _, kv := range sp.GetAttributes() {
					if dst := s.field(kv.GetKey()); dst != nil {
						*dst = secondsValue(kv.GetValue())
					}
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// field returns where attribute key goes, or nil.
func (s *Span) field(key string) *int64 {
	switch key {
	case AttrQueue:
		return &s.QueueNs
	case AttrPrefill:
		return &s.PrefillNs
	case AttrDecode:
		return &s.DecodeNs
	case AttrE2E:
		return &s.E2ENs
	}
	return nil
}

func secondsValue(v *commonpb.AnyValue) int64 {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		return nsOf(x.DoubleValue)
	case *commonpb.AnyValue_IntValue:
		return nsOf(float64(x.IntValue))
	}
	return record.None
}

// nsOf converts float seconds to nanoseconds; None for a negative or
// non-finite value, or one beyond a year.
func nsOf(sec float64) int64 {
	if math.IsNaN(sec) || sec < 0 || sec > 365*24*3600 {
		return record.None
	}
	return int64(math.Round(sec * 1e9))
}

// decodeJSON decodes OTLP/JSON (ids in hex, as the OTLP spec has it, and
// int64 values as strings or numbers).
func (r *Receiver) decodeJSON(b []byte) ([]Span, error) {
	var td struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID    string `json:"traceId"`
					Name       string `json:"name"`
					Attributes []struct {
						Key   string `json:"key"`
						Value struct {
							DoubleValue *float64        `json:"doubleValue"`
							IntValue    json.RawMessage `json:"intValue"`
						} `json:"value"`
					} `json:"attributes"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(b, &td); err != nil {
		return nil, err
	}
	var out []Span
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				id, err := hex.DecodeString(sp.TraceID)
				if sp.Name != SpanName || err != nil || len(id) != 16 {
					r.other.Add(1)
					continue
				}
				s := Span{TraceID: [16]byte(id), QueueNs: record.None, PrefillNs: record.None, DecodeNs: record.None, E2ENs: record.None}
				for _, a := range sp.Attributes {
					dst := s.field(a.Key)
					switch {
					case dst == nil:
					case a.Value.DoubleValue != nil:
						*dst = nsOf(*a.Value.DoubleValue)
					case len(a.Value.IntValue) > 0:
						var n json.Number
						if json.Unmarshal(bytes.Trim(a.Value.IntValue, `"`), &n) == nil {
							if v, err := n.Int64(); err == nil {
								*dst = nsOf(float64(v))
							}
						}
					}
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func (r *Receiver) deliver(spans []Span) {
	r.exports.Add(1)
	r.spans.Add(int64(len(spans)))
	j := r.current()
	if j == nil {
		return
	}
	for i := range spans {
		j.Offer(spans[i])
	}
}
