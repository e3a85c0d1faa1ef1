package scrape

import (
	"maps"
	"slices"
	"testing"
)

func TestParseOverrides(t *testing.T) {
	tests := []struct {
		name    string
		items   []string
		want    map[string]string
		wantErr string
	}{
		{name: "none", items: nil, want: map[string]string{}},
		{name: "one", items: []string{"waiting=my_queue_len"}, want: map[string]string{"waiting": "my_queue_len"}},
		{name: "several items", items: []string{"waiting=a", "queue_time=vllm:q_seconds"},
			want: map[string]string{"waiting": "a", "queue_time": "vllm:q_seconds"}},
		{name: "comma separated", items: []string{"waiting=a, running=b"}, want: map[string]string{"waiting": "a", "running": "b"}},
		{name: "percent kv", items: []string{"kv_usage=kv_pct%"}, want: map[string]string{"kv_usage": "kv_pct%"}},
		{name: "spaces trimmed", items: []string{" success = ok_total "}, want: map[string]string{"success": "ok_total"}},

		// sad paths
		{name: "no equals", items: []string{"waiting"},
			wantErr: `scrape: metric override "waiting": want LOGICAL=NAME, e.g. waiting=my_queue_len`},
		{name: "unknown logical", items: []string{"queue=x"},
			wantErr: `scrape: metric override "queue=x": unknown logical metric "queue" (want one of waiting, running, kv_usage, replicas, queue_time, prompt_tokens, generation_tokens, success, ttft, e2e, replicas_starting)`},
		{name: "empty name", items: []string{"waiting="},
			wantErr: `scrape: metric override "waiting=": empty metric name`},
		{name: "space in name", items: []string{"waiting=a b"},
			wantErr: `scrape: metric override "waiting=a b": metric name "a b" contains " "`},
		{name: "labels in name", items: []string{`waiting=a{x="1"}`},
			wantErr: `scrape: metric override "waiting=a{x=\"1\"}": metric name "a{x=\"1\"}" contains "{"`},
		{name: "twice", items: []string{"waiting=a", "waiting=b"},
			wantErr: `scrape: metric override "waiting=b": waiting given twice`},
		{name: "percent on a non-kv metric", items: []string{"waiting=a%"},
			wantErr: `scrape: metric override "waiting=a%": a % suffix only applies to kv_usage`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseOverrides(tt.items)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWithOverrides(t *testing.T) {
	p, _ := LookupPreset("vllm")
	got, err := p.WithOverrides(map[string]string{"queue_time": "my_q", "kv_usage": "kv_pct%", "replicas": "pods"})
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Specs[QueueTime]; !slices.Equal(s.Names, []string{"my_q"}) || s.Percent {
		t.Errorf("queue_time spec = %+v", s)
	}
	if s := got.Specs[KVUsage]; !slices.Equal(s.Names, []string{"kv_pct"}) || !s.Percent {
		t.Errorf("kv_usage spec = %+v", s)
	}
	if s := got.Specs[Replicas]; !slices.Equal(s.Names, []string{"pods"}) {
		t.Errorf("added replicas spec = %+v", s)
	}
	if s := p.Specs[QueueTime]; !slices.Equal(s.Names, []string{"vllm:request_queue_time_seconds"}) {
		t.Errorf("original preset modified: %+v", s)
	}

	for _, bad := range []struct {
		in   map[string]string
		want string
	}{
		{map[string]string{"nope": "x"}, `scrape: metric override "nope": unknown logical metric (want one of waiting, running, kv_usage, replicas, queue_time, prompt_tokens, generation_tokens, success, ttft, e2e, replicas_starting)`},
		{map[string]string{"waiting": ""}, `scrape: metric override "waiting=": empty metric name`},
		{map[string]string{"running": "r%"}, `scrape: metric override "running=r%": a % suffix only applies to kv_usage`},
	} {
		if _, err := p.WithOverrides(bad.in); err == nil || err.Error() != bad.want {
			t.Errorf("WithOverrides(%v) err = %v\nwant %s", bad.in, err, bad.want)
		}
	}
}

func TestPresets(t *testing.T) {
	if got, want := PresetNames(), []string{"auto", "vllm", "sim", "sglang", "tgi", "llamacpp", "triton", "digitalocean"}; !slices.Equal(got, want) {
		t.Errorf("PresetNames = %v, want %v", got, want)
	}
	tests := []struct {
		preset string
		metric Metric
		names  []string
	}{
		{"vllm", Waiting, []string{"vllm:num_requests_waiting"}},
		{"vllm", KVUsage, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
		{"vllm", QueueTime, []string{"vllm:request_queue_time_seconds"}},
		{"sim", Replicas, []string{"surge_sim_replicas"}},
		{"sim", Success, []string{"vllm:request_success_total"}},
		{"sglang", Waiting, []string{"sglang:num_queue_reqs"}},
		{"sglang", QueueTime, []string{"sglang:queue_time_seconds"}},
		{"tgi", QueueTime, []string{"tgi_request_queue_duration"}},
		{"tgi", Running, []string{"tgi_batch_current_size"}},
		{"llamacpp", Waiting, []string{"llamacpp:requests_deferred"}},
		{"llamacpp", GenerationTokens, []string{"llamacpp:tokens_predicted_total"}},
		{"digitalocean", E2E, []string{
			`do.serverless_inference.http_request_duration{http.response.status.code="200"}`,
			`do_serverless_inference_http_request_duration{http_response_status_code="200"}`,
		}},
		{"digitalocean", Replicas, []string{"do.droplet_autoscale_pool.current_instances", "do_droplet_autoscale_pool_current_instances"}},
	}
	for _, tt := range tests {
		p, ok := LookupPreset(tt.preset)
		if !ok {
			t.Fatalf("preset %s not found", tt.preset)
		}
		if got := p.Specs[tt.metric].Names; !slices.Equal(got, tt.names) {
			t.Errorf("%s %s = %v, want %v", tt.preset, tt.metric, got, tt.names)
		}
	}
	if _, ok := mustPreset(t, "vllm").Specs[Replicas]; ok {
		t.Error("vllm maps replicas")
	}
	// DigitalOcean: only e2e and the (optional) pool size.
	if do := mustPreset(t, "digitalocean"); len(do.Specs) != 2 || do.Specs[E2E].Optional || !do.Specs[Replicas].Optional {
		t.Errorf("digitalocean specs = %+v, want a required e2e and an optional replicas", do.Specs)
	}
	if _, ok := LookupPreset("tgi"); !ok {
		t.Error("tgi missing")
	}
	if _, ok := LookupPreset("auto"); ok {
		t.Error("auto is not a concrete preset")
	}
	// LookupPreset returns copies.
	p, _ := LookupPreset("vllm")
	p.Specs[Waiting].Names[0] = "changed"
	if q, _ := LookupPreset("vllm"); q.Specs[Waiting].Names[0] != "vllm:num_requests_waiting" {
		t.Error("LookupPreset shares its name slices")
	}
}

func TestMetricNames(t *testing.T) {
	for _, m := range Metrics() {
		back, ok := ParseMetric(m.String())
		if !ok || back != m {
			t.Errorf("ParseMetric(%q) = %v, %v", m.String(), back, ok)
		}
	}
	if _, ok := ParseMetric("queue"); ok {
		t.Error("ParseMetric accepted an unknown name")
	}
	if Metric(99).String() != "unknown" {
		t.Error("out of range metric name")
	}
}

func mustPreset(t *testing.T, name string) Preset {
	t.Helper()
	p, ok := LookupPreset(name)
	if !ok {
		t.Fatalf("no preset %q", name)
	}
	return p
}
