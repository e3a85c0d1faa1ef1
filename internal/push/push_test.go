package push

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	metrics "go.opentelemetry.io/proto/otlp/metrics/v1"
)

var testMetric = &Metric{"surge_test_value", "surge.test.value", "1", "A test gauge."}

func testBatch() *Batch {
	h := Hist{Metric: GenAIDuration, Labels: []Label{{"phase", "burst"}, {"gen_ai.operation.name", "chat"}}, Bounds: []float64{0.1, 1}, Counts: make([]uint64, 3), StartMs: 1000, AtMs: 5000}
	for _, v := range []float64{0.05, 0.5, 0.7, 3} {
		h.observe(v)
	}
	return &Batch{
		Common: []Label{{"run_id", "r1"}, {"command", "burst"}, {"multiplier", ""}},
		Points: []Point{{Metric: testMetric, Labels: []Label{{"phase", "baseline"}}, Value: 2.5, AtMs: 5000}},
		Hists:  []Hist{h},
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"prometheus-rw=http://127.0.0.1:9090/api/v1/write": "http://127.0.0.1:9090/api/v1/write",
		"otlp=http://127.0.0.1:4318":                       "http://127.0.0.1:4318/v1/metrics",
		"otlp=https://collector:4318/custom":               "https://collector:4318/custom",
	} {
		got, err := ParseTarget(in)
		if err != nil || got.URL != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want URL %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"http://x/api/v1/write":         "want KIND=URL",
		"influx=http://x":               `unknown kind "influx"`,
		"otlp=127.0.0.1:4318":           "want an http:// or https:// URL",
		"prometheus-rw=ftp://x/a?k=SE":  `"ftp://x/a?redacted"`,       // the query (a token) is not repeated
		"prometheus-rw:http://u:SE@h/w": `"prometheus-rw:(redacted)"`, // a typo of "=": the rest is not repeated
		"otlp=user:SE@host:4318":        `"user:(redacted)"`,
	} {
		_, err := ParseTarget(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SE") {
			t.Errorf("ParseTarget(%q) error %v, want one containing %q and no query", in, err, want)
		}
	}
}

func TestRemoteWriteEncoding(t *testing.T) {
	body, err := remoteWrite(testBatch())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, ts := range req.Timeseries {
		var ls []string
		for i, l := range ts.Labels {
			if i > 0 && ts.Labels[i-1].Name >= l.Name {
				t.Errorf("labels not sorted: %v", ts.Labels)
			}
			ls = append(ls, l.Name+"="+l.Value)
		}
		if len(ts.Samples) != 1 || ts.Samples[0].Timestamp != 5000 {
			t.Errorf("%v: samples %v", ls, ts.Samples)
		}
		got[strings.Join(ls, ",")] = ts.Samples[0].Value
	}
	want := map[string]float64{
		"__name__=surge_test_value,command=burst,phase=baseline,run_id=r1":                                                                2.5,
		"__name__=gen_ai_client_operation_duration_seconds_bucket,command=burst,gen_ai_operation_name=chat,le=0.1,phase=burst,run_id=r1":  1,
		"__name__=gen_ai_client_operation_duration_seconds_bucket,command=burst,gen_ai_operation_name=chat,le=1,phase=burst,run_id=r1":    3,
		"__name__=gen_ai_client_operation_duration_seconds_bucket,command=burst,gen_ai_operation_name=chat,le=+Inf,phase=burst,run_id=r1": 4,
		"__name__=gen_ai_client_operation_duration_seconds_sum,command=burst,gen_ai_operation_name=chat,phase=burst,run_id=r1":            4.25,
		"__name__=gen_ai_client_operation_duration_seconds_count,command=burst,gen_ai_operation_name=chat,phase=burst,run_id=r1":          4,
	}
	if len(got) != len(want) {
		t.Errorf("got %d series, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if n := testBatch().Samples(); n != len(want) {
		t.Errorf("Samples() = %d, want %d", n, len(want))
	}
}

// decodeOTLP reads an ExportMetricsServiceRequest's ResourceMetrics.
func decodeOTLP(t *testing.T, body []byte) []*metrics.ResourceMetrics {
	t.Helper()
	var out []*metrics.ResourceMetrics
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			t.Fatalf("not field 1 bytes: %d %d %d", num, typ, n)
		}
		body = body[n:]
		v, n := protowire.ConsumeBytes(body)
		if n < 0 {
			t.Fatal("truncated")
		}
		body = body[n:]
		rm := &metrics.ResourceMetrics{}
		if err := proto.Unmarshal(v, rm); err != nil {
			t.Fatal(err)
		}
		out = append(out, rm)
	}
	return out
}

func TestOTLPEncoding(t *testing.T) {
	body, err := otlpMetrics(testBatch(), "v9")
	if err != nil {
		t.Fatal(err)
	}
	rms := decodeOTLP(t, body)
	if len(rms) != 1 || len(rms[0].ScopeMetrics) != 1 {
		t.Fatalf("resource metrics %v", rms)
	}
	ms := rms[0].ScopeMetrics[0].Metrics
	if len(ms) != 2 {
		t.Fatalf("%d metrics, want 2", len(ms))
	}
	g := ms[0]
	if g.Name != "surge.test.value" || g.GetGauge() == nil || g.GetGauge().DataPoints[0].GetAsDouble() != 2.5 || g.GetGauge().DataPoints[0].TimeUnixNano != 5000*1e6 {
		t.Errorf("gauge %v", g)
	}
	attrs := map[string]string{}
	for _, kv := range g.GetGauge().DataPoints[0].Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["run_id"] != "r1" || attrs["phase"] != "baseline" || attrs["command"] != "burst" || len(attrs) != 3 {
		t.Errorf("attributes %v (the empty multiplier must be left out)", attrs)
	}
	h := ms[1]
	if h.Name != "gen_ai.client.operation.duration" || h.Unit != "s" {
		t.Errorf("histogram %s %s", h.Name, h.Unit)
	}
	dp := h.GetHistogram().DataPoints[0]
	if h.GetHistogram().AggregationTemporality != metrics.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE ||
		dp.Count != 4 || dp.GetSum() != 4.25 || len(dp.BucketCounts) != 3 || dp.BucketCounts[0] != 1 || dp.BucketCounts[1] != 2 || dp.BucketCounts[2] != 1 ||
		dp.StartTimeUnixNano != 1000*1e6 {
		t.Errorf("histogram point %v", dp)
	}
}

// fakeEndpoint answers every POST with status(n) for the n-th (from 1);
// status 0 is a connection error, -1 hangs until the request's context
// ends.
type fakeEndpoint struct {
	mu     sync.Mutex
	n      int
	status func(n int) int
	got    atomic.Int64
}

func (f *fakeEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	switch s := f.status(n); s {
	case 0:
		return nil, errors.New("connect: connection refused")
	case -1:
		<-r.Context().Done()
		return nil, r.Context().Err()
	default:
		if s/100 == 2 {
			f.got.Add(1)
		}
		return &http.Response{StatusCode: s, Body: io.NopCloser(strings.NewReader("echo of the body")), Header: http.Header{}}, nil
	}
}

func pushN(p *Pusher, n int) {
	for range n {
		p.Push(testBatch())
	}
}

func TestPusherOutcomes(t *testing.T) {
	policy := Policy{Queue: 4, Attempts: 3, Backoff: 100 * time.Millisecond, Timeout: time.Second}
	target := Target{Kind: KindRemoteWrite, URL: "http://u:secret@127.0.0.1:1/api/v1/write?token=SECRET"}
	for _, tc := range []struct {
		name   string
		status func(n int) int
		pushes int
		want   Stats
		err    string
	}{
		{"healthy", func(int) int { return 204 }, 3, Stats{Batches: 3, Delivered: 3, Samples: 18}, ""},
		{"5xx then ok: retried", func(n int) int { return map[bool]int{true: 503, false: 200}[n == 1] }, 2, Stats{Batches: 2, Delivered: 2, Retries: 1, Samples: 12}, ""},
		{"down", func(int) int { return 0 }, 2, Stats{Batches: 2, Failed: 2, Retries: 4, Lost: 12}, "connection refused"},
		{"4xx is not retried", func(int) int { return 400 }, 2, Stats{Batches: 2, Failed: 2, Lost: 12}, "answered 400 Bad Request"},
		{"429 is retried", func(int) int { return 429 }, 1, Stats{Batches: 1, Failed: 1, Retries: 2, Lost: 6}, "answered 429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeEndpoint{status: tc.status}
				p := New([]Target{target}, &http.Client{Transport: f}, policy, "test")
				pushN(p, tc.pushes)
				st := p.Close(context.Background())[0]
				tc.want.Target = target
				if st.LastError == "" != (tc.err == "") || !strings.Contains(st.LastError, tc.err) {
					t.Errorf("last error %q, want one containing %q", st.LastError, tc.err)
				}
				st.LastError = ""
				if st != tc.want {
					t.Errorf("stats %+v\nwant  %+v", st, tc.want)
				}
				w := p.sinks[0].stats.Warning()
				if tc.want.OK() != (w == "") {
					t.Errorf("warning %q for OK=%v", w, tc.want.OK())
				}
				if strings.Contains(w, "SECRET") || strings.Contains(w, "secret") {
					t.Errorf("warning leaks the URL's credentials: %s", w)
				}
				if w != "" && !strings.Contains(w, "--metrics-out prometheus-rw=http://redacted@127.0.0.1:1/api/v1/write?redacted") {
					t.Errorf("warning does not name the flag and endpoint: %s", w)
				}
			})
		})
	}
}

// A hung endpoint never blocks Push: batches beyond the queue drop the
// oldest, each counted, and Close's deadline counts what is still queued.
func TestPusherHungEndpointNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeEndpoint{status: func(int) int { return -1 }}
		policy := Policy{Queue: 3, Attempts: 2, Backoff: time.Second, Timeout: 5 * time.Second}
		p := New([]Target{{Kind: KindOTLP, URL: "http://127.0.0.1:1/v1/metrics"}}, &http.Client{Transport: f}, policy, "test")
		start := time.Now()
		for range 10 {
			p.Push(testBatch())
			time.Sleep(100 * time.Millisecond)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("10 pushes took %v of virtual time, want 1s (Push must not wait)", d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st := p.Close(ctx)[0]
		// The first batch is in flight (hung); of the 9 others, the queue
		// of 3 keeps the last 3: 6 dropped while pushing, 3 at Close, and
		// the one in flight failed when Close's deadline cut it.
		if st.Batches != 10 || st.Delivered != 0 || st.Dropped != 9 || st.Failed != 1 || st.Lost != 60 {
			t.Errorf("stats %+v", st)
		}
		if !strings.Contains(st.Warning(), "0 of 10 pushes delivered") {
			t.Errorf("warning %q", st.Warning())
		}
	})
}

// A staleness marker ends a series: Prometheus's StaleNaN over
// remote-write, a point with no recorded value over OTLP.
func TestStaleMarkers(t *testing.T) {
	b := LiveStale("burst", time.UnixMilli(7000), []Label{{"run", "r"}})
	if len(b.Points) != len(liveMetrics) {
		t.Fatalf("%d points, want one per live metric (%d)", len(b.Points), len(liveMetrics))
	}
	body, err := remoteWrite(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := snappy.Decode(nil, body)
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	for _, ts := range req.Timeseries {
		if v := ts.Samples[0].Value; math.Float64bits(v) != 0x7ff0000000000002 {
			t.Errorf("%v: value %v is not StaleNaN", ts.Labels, v)
		}
	}
	ob, err := otlpMetrics(b, "v")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range decodeOTLP(t, ob)[0].ScopeMetrics[0].Metrics {
		dp := m.GetGauge().DataPoints[0]
		if dp.Flags&uint32(metrics.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK) == 0 || dp.GetAsDouble() != 0 {
			t.Errorf("%s: flags %d value %v, want no recorded value", m.Name, dp.Flags, dp.GetAsDouble())
		}
	}
}
