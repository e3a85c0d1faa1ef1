package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDefaultConfigValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if _, err := NewCluster(c); err != nil {
		t.Fatalf("NewCluster(DefaultConfig()) = %v", err)
	}
}

// The replica bounds' messages state the rule the value breaks: 0 for
// max_replicas is below 1, not below min_replicas (0) (review 13).
func TestReplicaMessages(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"scale from zero needs autoscale", func(c *Config) { c.MinReplicas = 0 }, "sim: min_replicas: 0 (scale from zero) needs autoscale: true"},
		{"max 0 from zero", func(c *Config) { c.Autoscale, c.MinReplicas, c.MaxReplicas = true, 0, 0 },
			"sim: max_replicas: must be ≥ 1 (a replica to scale to, even from zero), got 0"},
		{"max below min", func(c *Config) { c.Autoscale, c.MinReplicas, c.MaxReplicas = true, 3, 2 }, "sim: max_replicas: must be ≥ min_replicas (3), got 2"},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"autoscale defaults", func(c *Config) { c.Autoscale = true }, ""},
		{"replicas 3 without autoscale", func(c *Config) { c.Replicas = 3 }, ""},
		{"scale from zero", func(c *Config) { c.Autoscale, c.MinReplicas = true, 0 }, ""},
		{"faults summing to one", func(c *Config) { c.Fault500, c.FaultStall = 0.5, 0.5 }, ""},
		// sad paths: every field
		{"max_num_seqs 0", func(c *Config) { c.MaxNumSeqs = 0 }, "max_num_seqs"},
		{"batched below seqs", func(c *Config) { c.MaxNumBatchedTokens = c.MaxNumSeqs - 1 }, "max_num_batched_tokens"},
		{"kv 0", func(c *Config) { c.KVCacheTokens = 0 }, "kv_cache_tokens"},
		{"max_model_len 1", func(c *Config) { c.MaxModelLen = 1 }, "max_model_len"},
		{"max_model_len over kv", func(c *Config) { c.MaxModelLen = c.KVCacheTokens + 1 }, "max_model_len"},
		{"step_base 0", func(c *Config) { c.StepBase = 0 }, "step_base"},
		{"step_per_decode_seq negative", func(c *Config) { c.StepPerDecodeSeq = -1 }, "step_per_decode_seq"},
		{"step_per_prefill_token negative", func(c *Config) { c.StepPerPrefillToken = -1 }, "step_per_prefill_token"},
		{"output_mean 0", func(c *Config) { c.OutputMean = 0 }, "output_mean"},
		{"output_mean NaN", func(c *Config) { c.OutputMean = math.NaN() }, "output_mean"},
		{"output_sigma negative", func(c *Config) { c.OutputSigma = -0.1 }, "output_sigma"},
		{"max_waiting negative", func(c *Config) { c.MaxWaiting = -1 }, "max_waiting"},
		{"replicas 0", func(c *Config) { c.Replicas = 0 }, "replicas"},
		{"min_replicas 0 without autoscale", func(c *Config) { c.MinReplicas = 0 }, "min_replicas"},
		{"min_replicas -1", func(c *Config) { c.Autoscale, c.MinReplicas = true, -1 }, "min_replicas"},
		{"replicas -1 scaling from zero", func(c *Config) { c.Autoscale, c.MinReplicas, c.Replicas = true, 0, -1 }, "replicas"},
		{"max below min", func(c *Config) { c.MinReplicas, c.MaxReplicas = 3, 2 }, "max_replicas"},
		{"replicas above max with autoscale", func(c *Config) { c.Autoscale, c.Replicas = true, 5 }, "replicas"},
		{"scale_up_waiting 0", func(c *Config) { c.ScaleUpWaiting = 0 }, "scale_up_waiting"},
		{"scale_up_waiting Inf", func(c *Config) { c.ScaleUpWaiting = math.Inf(1) }, "scale_up_waiting"},
		{"scale_up_hold negative", func(c *Config) { c.ScaleUpHold = -time.Second }, "scale_up_hold"},
		{"scale_request_delay negative", func(c *Config) { c.ScaleRequestDelay = -1 }, "scale_request_delay"},
		{"node_ready_delay negative", func(c *Config) { c.NodeReadyDelay = -1 }, "node_ready_delay"},
		{"container_ready_delay negative", func(c *Config) { c.ContainerReadyDelay = -1 }, "container_ready_delay"},
		{"model_ready_delay negative", func(c *Config) { c.ModelReadyDelay = -1 }, "model_ready_delay"},
		{"scale_down_idle negative", func(c *Config) { c.ScaleDownIdle = -1 }, "scale_down_idle"},
		{"fault_500 over 1", func(c *Config) { c.Fault500 = 1.5 }, "fault_500"},
		{"fault_503 negative", func(c *Config) { c.Fault503 = -0.1 }, "fault_503"},
		{"fault_reset NaN", func(c *Config) { c.FaultReset = math.NaN() }, "fault_reset"},
		{"fault_malformed over 1", func(c *Config) { c.FaultMalformed = 2 }, "fault_malformed"},
		{"fault_stall negative", func(c *Config) { c.FaultStall = -1 }, "fault_stall"},
		{"fault_stall_delay negative", func(c *Config) { c.FaultStallDelay = -1 }, "fault_stall_delay"},
		{"fault_slow_headers over 1", func(c *Config) { c.FaultSlowHeaders = 1.1 }, "fault_slow_headers"},
		{"fault_slow_headers_delay negative", func(c *Config) { c.FaultSlowHeadersDelay = -1 }, "fault_slow_headers_delay"},
		{"fault sum over 1", func(c *Config) { c.Fault500, c.Fault503 = 0.6, 0.6 }, "fault_500+fault_503"},
		{"slowdown_per_hour negative", func(c *Config) { c.SlowdownPerHour = -0.1 }, "slowdown_per_hour"},
		{"slowdown_per_hour NaN", func(c *Config) { c.SlowdownPerHour = math.NaN() }, "slowdown_per_hour"},
		{"slowdown_per_hour huge", func(c *Config) { c.SlowdownPerHour = 1e6 }, "slowdown_per_hour"},
		{"bytes_per_token zero", func(c *Config) { c.BytesPerToken = 0 }, "bytes_per_token"},
		{"bytes_per_token NaN", func(c *Config) { c.BytesPerToken = math.NaN() }, "bytes_per_token"},
		{"tokenize unknown", func(c *Config) { c.Tokenize = "tgi" }, "tokenize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %s", tc.field)
			}
			if want := "sim: " + tc.field; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Validate() = %q, want prefix %q", err, want)
			}
			if _, err := NewCluster(c); err == nil {
				t.Fatal("NewCluster accepted an invalid config")
			}
		})
	}
}

func TestValidateMessage(t *testing.T) {
	c := DefaultConfig()
	c.MaxNumSeqs = 0
	if got, want := c.Validate().Error(), "sim: max_num_seqs: must be ≥ 1, got 0"; got != want {
		t.Fatalf("Validate() = %q, want %q", got, want)
	}
}

func TestCheckRequest(t *testing.T) {
	c := DefaultConfig()
	c.MaxModelLen = 1000
	cases := []struct {
		name string
		r    Request
		ok   bool
	}{
		{"fits exactly", Request{PromptTokens: 900, MaxTokens: 100}, true},
		{"max_tokens unset", Request{PromptTokens: 999}, true},
		{"one prompt token", Request{PromptTokens: 1, MaxTokens: 1}, true},
		{"over by one", Request{PromptTokens: 900, MaxTokens: 101}, false},
		{"unset without room", Request{PromptTokens: 1000}, false},
		{"zero prompt", Request{PromptTokens: 0, MaxTokens: 10}, false},
		{"negative max_tokens", Request{PromptTokens: 10, MaxTokens: -1}, false},
		{"prefill-only", Request{PromptTokens: 1000, PrefillOnly: true}, true},
		{"prefill-only beyond max_model_len", Request{PromptTokens: c.KVCacheTokens, PrefillOnly: true}, true},
		{"prefill-only beyond the KV cache", Request{PromptTokens: c.KVCacheTokens + 1, PrefillOnly: true}, false},
		{"prefill-only with max_tokens", Request{PromptTokens: 10, MaxTokens: 1, PrefillOnly: true}, false},
		{"prefill-only with ignore_eos", Request{PromptTokens: 10, IgnoreEOS: true, PrefillOnly: true}, false},
		{"prefill-only without prompt", Request{PrefillOnly: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckRequest(tc.r)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckRequest(%+v) = %v, want ok=%v", tc.r, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("error %v does not wrap ErrInvalidRequest", err)
			}
		})
	}
	cl, _ := NewCluster(c)
	if _, err := cl.Submit(0, Request{PromptTokens: 900, MaxTokens: 101}, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("Submit(too long) = %v, want ErrInvalidRequest", err)
	}
	if s := cl.Snapshot(0); s.Submitted != 0 || s.Waiting+s.Running != 0 {
		t.Fatalf("an invalid request entered the cluster: %+v", s)
	}
}

func TestYAML(t *testing.T) {
	src := "max_num_seqs: 32\nstep_base: 15ms\nscale_up_hold: 30s\nautoscale: true\nmax_replicas: 3\nfault_stall: 0.1\n"
	c := DefaultConfig()
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.MaxNumSeqs != 32 || c.StepBase != 15*time.Millisecond || c.ScaleUpHold != 30*time.Second ||
		!c.Autoscale || c.MaxReplicas != 3 || c.FaultStall != 0.1 || c.KVCacheTokens != DefaultKVCacheTokens {
		t.Fatalf("decoded %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := yaml.NewDecoder(strings.NewReader("max_num_seq: 3\n"))
	bad.KnownFields(true)
	if err := bad.Decode(&c); err == nil {
		t.Fatal("a misspelt field decoded without error")
	}
}

// The simulated tokenizer counts ⌈bytes / BytesPerToken⌉ per text, plus the
// chat template's 4 per message and 3 once; exact quotients do not round
// up.
func TestPromptTokens(t *testing.T) {
	c := DefaultConfig()
	if got := c.PromptTokens(true, "abcdefgh"); got != 2+4+3 {
		t.Errorf("default chat: %d, want 9", got)
	}
	c.BytesPerToken = 2.5
	for _, tc := range []struct {
		bytes, want int
	}{{0, 0}, {1, 1}, {5, 2}, {6, 3}, {10, 4}, {100, 40}, {101, 41}} {
		if got := c.TextTokens(tc.bytes); got != tc.want {
			t.Errorf("TextTokens(%d) at 2.5 bytes/token = %d, want %d", tc.bytes, got, tc.want)
		}
	}
	if got := c.PromptTokens(false, ""); got != 1 {
		t.Errorf("empty completions prompt: %d, want 1", got)
	}
}
