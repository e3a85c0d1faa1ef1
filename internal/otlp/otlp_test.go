package otlp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/surge-bench/surge/internal/record"
)

var prefix = [8]byte{1, 2, 3, 4, 5, 6, 7, 8}

func traceID(seq int64) [16]byte {
	var id [16]byte
	copy(id[:], prefix[:])
	binary.BigEndian.PutUint64(id[8:], uint64(seq))
	return id
}

func match(n int64) func([16]byte) (int64, bool) {
	return func(id [16]byte) (int64, bool) {
		if [8]byte(id[:8]) != prefix {
			return 0, false
		}
		s := int64(binary.BigEndian.Uint64(id[8:]))
		return s, s >= 0 && s < n
	}
}

func dbl(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

// payload is an export of one llm_request span per seq (queue = seq ms)
// plus one span of another name.
func payload(t testing.TB, seqs ...int64) []byte {
	var spans []*tracepb.Span
	for _, s := range seqs {
		id := traceID(s)
		spans = append(spans, &tracepb.Span{TraceId: id[:], SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Name: SpanName, Attributes: []*commonpb.KeyValue{
			dbl(AttrQueue, float64(s)/1000), dbl(AttrPrefill, 0.002), dbl(AttrDecode, 0.25), dbl(AttrE2E, 0.3),
			{Key: "gen_ai.request.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "x"}}},
		}})
	}
	id := traceID(0)
	spans = append(spans, &tracepb.Span{TraceId: id[:], Name: "other"})
	b, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// collect is a sink keeping released records.
type collect struct {
	mu   sync.Mutex
	recs map[int64]record.Record
}

func (c *collect) sink(r *record.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recs == nil {
		c.recs = map[int64]record.Record{}
	}
	if _, dup := c.recs[r.Seq]; dup {
		panic(fmt.Sprintf("record %d released twice", r.Seq))
	}
	c.recs[r.Seq] = *r
}

func okRecord(seq int64) *record.Record {
	r := record.New(fmt.Sprint(seq), seq, "baseline", 0)
	r.Outcome = record.OK
	id := traceID(seq)
	r.TraceID = hex.EncodeToString(id[:])
	return &r
}

func post(t *testing.T, url, ct string, body []byte) int {
	t.Helper()
	resp, err := http.Post(url, ct, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTPProtobufJoin(t *testing.T) {
	r, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c collect
	j := NewJoin(match(3), 3, time.Minute, c.sink)
	r.Attach(j)
	j.Add(okRecord(0)) // held: its span comes later
	if code := post(t, "http://"+r.Addr()+"/v1/traces", "application/x-protobuf", payload(t, 0, 1)); code != 200 {
		t.Fatalf("status %d", code)
	}
	j.Add(okRecord(1)) // its span came first
	failed := record.New("2", 2, "burst", 0)
	failed.Outcome = record.Timeout
	j.Add(&failed) // expects no span: released at once
	st := j.Close(context.Background())
	if st != (JoinStats{Joined: 2}) {
		t.Fatalf("stats %+v", st)
	}
	if got := c.recs[0].EngineQueueNs; got != 0 {
		t.Errorf("record 0 queue %d", got)
	}
	if got := c.recs[1]; got.EngineQueueNs != 1_000_000 || got.EnginePrefillNs != 2_000_000 || got.EngineDecodeNs != 250_000_000 || got.EngineE2ENs != 300_000_000 {
		t.Errorf("record 1 timing %+v", got)
	}
	if c.recs[2].EngineQueueNs != record.None {
		t.Errorf("a failed record got timing")
	}
	if s := r.Stats(); s.Exports != 1 || s.Spans != 2 || s.OtherSpans != 1 || s.Malformed != 0 {
		t.Errorf("receiver stats %+v", s)
	}
}

func TestJSON(t *testing.T) {
	r, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c collect
	j := NewJoin(match(1), 1, time.Minute, c.sink)
	r.Attach(j)
	id := traceID(0)
	body := fmt.Sprintf(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%x","name":"llm_request","attributes":[
		{"key":"gen_ai.latency.time_in_queue","value":{"doubleValue":0.0125}},{"key":"gen_ai.latency.e2e","value":{"intValue":"2"}}]}]}]}]}`, id)
	if code := post(t, "http://"+r.Addr()+"/v1/traces", "application/json", []byte(body)); code != 200 {
		t.Fatalf("status %d", code)
	}
	j.Add(okRecord(0))
	j.Close(context.Background())
	if got := c.recs[0]; got.EngineQueueNs != 12_500_000 || got.EngineE2ENs != 2_000_000_000 || got.EnginePrefillNs != record.None {
		t.Errorf("timing %+v", got)
	}
}

// TestGRPC sends an export as OTLP/gRPC over h2c with prior knowledge, the
// way an insecure gRPC exporter does.
func TestGRPC(t *testing.T) {
	r, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c collect
	j := NewJoin(match(1), 1, time.Minute, c.sink)
	r.Attach(j)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: &p}}
	call := func(msg []byte) (*http.Response, []byte) {
		frame := append([]byte{0, 0, 0, 0, 0}, msg...)
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.Addr()+GRPCPath, bytes.NewReader(frame))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	resp, body := call(payload(t, 0))
	if resp.ProtoMajor != 2 || resp.Trailer.Get("Grpc-Status") != "0" || !bytes.Equal(body, []byte{0, 0, 0, 0, 0}) {
		t.Fatalf("proto %d status %q body %x", resp.ProtoMajor, resp.Trailer.Get("Grpc-Status"), body)
	}
	resp, _ = call([]byte{0xff, 0xff, 0xff})
	if resp.Trailer.Get("Grpc-Status") != "3" {
		t.Errorf("malformed message: grpc-status %q, want 3", resp.Trailer.Get("Grpc-Status"))
	}
	j.Add(okRecord(0))
	j.Close(context.Background())
	if c.recs[0].EngineQueueNs != 0 || c.recs[0].EngineDecodeNs != 250_000_000 {
		t.Errorf("timing %+v", c.recs[0])
	}
	if s := r.Stats(); s.Malformed != 1 || s.Spans != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestBadInput: malformed payloads are answered 400, counted and change
// nothing; a storm of 10× the run's request count leaves at most one span
// per record in memory.
func TestBadInput(t *testing.T) {
	r, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const n = 20
	var c collect
	j := NewJoin(match(n), n, time.Minute, c.sink)
	r.Attach(j)
	url := "http://" + r.Addr() + "/v1/traces"
	for _, bad := range []struct{ ct, body string }{
		{"application/x-protobuf", "\xff\xff\xff\xff"},
		{"application/json", "{not json"},
		{"application/x-protobuf", string(bytes.Repeat([]byte{0x0a}, MaxBody+10))},
	} {
		if code := post(t, url, bad.ct, []byte(bad.body)); code != http.StatusBadRequest {
			t.Errorf("%s %.10q: status %d, want 400", bad.ct, bad.body, code)
		}
	}
	// The storm: every record's span 5 times, and 5n spans of unknown seqs.
	var seqs []int64
	for range 5 {
		for s := range int64(n) {
			seqs = append(seqs, s)
		}
	}
	for s := range int64(5 * n) {
		seqs = append(seqs, n+s)
	}
	if code := post(t, url, "application/x-protobuf", payload(t, seqs...)); code != 200 {
		t.Fatalf("status %d", code)
	}
	j.mu.Lock()
	kept := len(j.spans)
	j.mu.Unlock()
	if kept > n {
		t.Errorf("%d spans kept for %d records", kept, n)
	}
	for s := range int64(n) {
		j.Add(okRecord(s))
	}
	st := j.Close(context.Background())
	want := JoinStats{Joined: n, Duplicate: 4 * n, Unmatched: 5 * n}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if s := r.Stats(); s.Malformed != 3 || s.Exports != 1 {
		t.Errorf("receiver stats %+v", s)
	}
}

func TestPortInUse(t *testing.T) {
	r, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := Listen(r.Addr()); err == nil {
		t.Fatal("a second receiver listened on the same port")
	}
}
