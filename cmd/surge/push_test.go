package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	metrics "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/surge-bench/surge/internal/memnet"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
)

// received keeps the last value of every series pushed to it, by its
// labels written name{k=v,...} in sorted order.
type received struct {
	mu     sync.Mutex
	series map[string]float64
	posts  int
}

func (r *received) put(key string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.series[key] = v
}

func (r *received) get(key string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.series[key]
	return v, ok
}

func seriesKey(name string, labels map[string]string, keep ...string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keep {
		b.WriteString("," + k + "=" + labels[k])
	}
	return b.String()
}

// remoteWriteReceiver decodes Prometheus remote-write 1.0 requests.
func remoteWriteReceiver(t *testing.T, r *received) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.Header.Get("Content-Encoding") != "snappy" || req.Header.Get("X-Prometheus-Remote-Write-Version") != "0.1.0" {
			t.Errorf("remote-write headers %v", req.Header)
		}
		raw, err := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err == nil {
			err = wr.Unmarshal(raw)
		}
		if err != nil {
			t.Errorf("remote-write body: %v", err)
			w.WriteHeader(400)
			return
		}
		r.mu.Lock()
		r.posts++
		r.mu.Unlock()
		for _, ts := range wr.Timeseries {
			ls := map[string]string{}
			for _, l := range ts.Labels {
				ls[l.Name] = l.Value
			}
			r.put(seriesKey(ls["__name__"], ls, "run", "phase", "quantile", "le"), ts.Samples[len(ts.Samples)-1].Value)
		}
		w.WriteHeader(204)
	}
}

// otlpReceiver decodes OTLP/HTTP metrics requests (gauges, and histogram
// counts as name_count).
func otlpReceiver(t *testing.T, r *received) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.posts++
		r.mu.Unlock()
		for len(body) > 0 {
			num, _, n := protowire.ConsumeTag(body)
			v, m := protowire.ConsumeBytes(body[max(n, 0):])
			if n < 0 || m < 0 || num != 1 {
				t.Errorf("OTLP body is not an ExportMetricsServiceRequest")
				w.WriteHeader(400)
				return
			}
			body = body[n+m:]
			rm := &metrics.ResourceMetrics{}
			if err := proto.Unmarshal(v, rm); err != nil {
				t.Errorf("OTLP: %v", err)
				return
			}
			for _, sm := range rm.ScopeMetrics {
				for _, mt := range sm.Metrics {
					if g := mt.GetGauge(); g != nil {
						for _, dp := range g.DataPoints {
							ls := map[string]string{}
							for _, kv := range dp.Attributes {
								ls[kv.Key] = kv.Value.GetStringValue()
							}
							r.put(seriesKey(mt.Name, ls, "run", "phase", "quantile"), dp.GetAsDouble())
						}
					}
					if h := mt.GetHistogram(); h != nil {
						for _, dp := range h.DataPoints {
							ls := map[string]string{}
							for _, kv := range dp.Attributes {
								ls[kv.Key] = kv.Value.GetStringValue()
							}
							if ls["error.type"] == "" && ls["gen_ai.token.type"] != "input" {
								r.put(seriesKey(mt.Name+"_count", ls, "run", "phase", "gen_ai.token.type"), float64(dp.Count))
							}
						}
					}
				}
			}
		}
		w.WriteHeader(200)
	}
}

// --metrics-out pushes, while the run goes and at its end, the values
// its files hold: per phase, the pushed goodput, completed requests and
// TTFT p95 equal summary.json's, over remote-write and OTLP alike, and
// the GenAI histograms count the phase's requests as requests.jsonl
// does. The whole command runs in virtual time over an in-memory
// network, the receivers on it too.
func TestMetricsOutEqualsTheFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network = &memnet.Network{}
		defer func() { network = nil }()
		rw, ot := &received{series: map[string]float64{}}, &received{series: map[string]float64{}}
		for addr, h := range map[string]http.Handler{"127.0.0.1:9090": remoteWriteReceiver(t, rw), "127.0.0.1:4318": otlpReceiver(t, ot)} {
			ln, err := network.Listen(context.Background(), addr)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: h}
			go srv.Serve(ln)
			defer srv.Close()
		}
		out := filepath.Join(t.TempDir(), "o")
		var stdout, stderr bytes.Buffer
		code := cli(context.Background(), []string{"run", "--rate", "10", "--warmup", "2s", "--duration", "6s", "-q", "-o", out,
			"--metrics-out", "prometheus-rw=http://127.0.0.1:9090/api/v1/write", "--metrics-out", "otlp=http://127.0.0.1:4318"}, &stdout, &stderr)
		if code != 0 && code != exitUndecided {
			t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
		}
		for _, want := range []string{"metrics pushed to prometheus-rw=http://127.0.0.1:9090/api/v1/write: ", "metrics pushed to otlp=http://127.0.0.1:4318/v1/metrics: "} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout.String())
			}
		}
		var sum rundir.Summary
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err == nil {
			err = json.Unmarshal(b, &sum)
		}
		if err != nil || len(sum.Analysis.Phases) != 2 {
			t.Fatalf("summary.json: %v, %d phases", err, len(sum.Analysis.Phases))
		}
		okPerPhase := map[string]int{}
		if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
			if r.Outcome == record.OK {
				okPerPhase[r.Phase]++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		run := filepath.Base(out)
		for _, p := range sum.Analysis.Phases {
			if p.Succeeded == 0 {
				t.Fatalf("phase %s: no request succeeded", p.Name)
			}
			for _, c := range []struct {
				recv *received
				key  string
				want float64
			}{
				{rw, "surge_phase_goodput_rps,run=" + run + ",phase=" + p.Name + ",quantile=,le=", p.GoodputRPS},
				{rw, "surge_phase_completed_requests,run=" + run + ",phase=" + p.Name + ",quantile=,le=", float64(p.Succeeded)},
				{rw, "surge_phase_ttft_seconds,run=" + run + ",phase=" + p.Name + ",quantile=0.95,le=", p.Latency.TTFTSchedule.P95Ms / 1e3},
				{rw, "gen_ai_client_operation_time_to_first_chunk_seconds_count,run=" + run + ",phase=" + p.Name + ",quantile=,le=", float64(okPerPhase[p.Name])},
				{ot, "surge.phase.goodput_rate,run=" + run + ",phase=" + p.Name + ",quantile=", p.GoodputRPS},
				{ot, "surge.phase.completed,run=" + run + ",phase=" + p.Name + ",quantile=", float64(p.Succeeded)},
				{ot, "surge.phase.ttft,run=" + run + ",phase=" + p.Name + ",quantile=0.95", p.Latency.TTFTSchedule.P95Ms / 1e3},
				{ot, "gen_ai.client.token.usage_count,run=" + run + ",phase=" + p.Name + ",gen_ai.token.type=output", float64(okPerPhase[p.Name])},
			} {
				got, ok := c.recv.get(c.key)
				if !ok || math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
					t.Errorf("%s = %v (pushed: %v), want %v as in the files", c.key, got, ok, c.want)
				}
			}
		}
		t.Logf("%d remote-write posts, %d OTLP posts; output:\n%s", rw.posts, ot.posts, stdout.String())
		if _, ok := rw.get("surge_in_flight,run=" + run + ",phase=main,quantile=,le="); !ok {
			t.Errorf("no live in-flight value pushed during the main phase")
		}
	})
}

// An endpoint that is down: the run is unaffected, its files complete,
// and a warning counts what did not arrive.
func TestMetricsOutEndpointDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network = &memnet.Network{}
		defer func() { network = nil }()
		out := filepath.Join(t.TempDir(), "o")
		var stdout, stderr bytes.Buffer
		code := cli(context.Background(), []string{"run", "--rate", "10", "--duration", "4s", "-q", "-o", out,
			"--metrics-out", "prometheus-rw=http://user:pw@127.0.0.1:9/api/v1/write?key=SECRET"}, &stdout, &stderr)
		if code != 0 && code != exitUndecided {
			t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
		}
		o := stdout.String()
		for _, want := range []string{"WARNING: --metrics-out prometheus-rw=http://redacted@127.0.0.1:9/api/v1/write?redacted: 0 of ", "pushes delivered", "failed", "samples lost", "The run and its files are not affected."} {
			if !strings.Contains(o, want) {
				t.Errorf("output lacks %q:\n%s", want, o)
			}
		}
		m, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
		if strings.Contains(o+stderr.String()+string(m), "SECRET") || strings.Contains(o+stderr.String()+string(m), "pw@") {
			t.Errorf("the URL's credentials were printed or written:\n%s", o)
		}
		if !strings.Contains(string(m), "prometheus-rw=http://redacted@127.0.0.1:9/api/v1/write?redacted") {
			t.Errorf("manifest.json does not record --metrics-out redacted")
		}
		n := 0
		if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(*record.Record) error { n++; return nil }); err != nil || n < 30 {
			t.Errorf("requests.jsonl: %v, %d records", err, n)
		}
		for _, f := range []string{"summary.json", "results.json", "report.html"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	})
}
