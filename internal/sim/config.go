package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// Defaults of Config; see the package doc for the calibration they give.
const (
	DefaultMaxNumSeqs          = 128                    // sequences in the running batch
	DefaultMaxNumBatchedTokens = 2048                   // tokens per step (decode + prefill chunks)
	DefaultKVCacheTokens       = 65536                  // KV-cache capacity per replica, tokens
	DefaultMaxModelLen         = 8192                   // prompt + output limit per request, tokens
	DefaultStepBase            = 20 * time.Millisecond  // fixed cost of one engine step
	DefaultStepPerDecodeSeq    = 80 * time.Microsecond  // added per decoding sequence in a step
	DefaultStepPerPrefillToken = 120 * time.Microsecond // added per prompt token prefilled in a step
	DefaultOutputMean          = 150.0                  // mean natural output length, tokens
	DefaultOutputSigma         = 0.6                    // lognormal shape of the natural output length
	DefaultReplicas            = 1                      // replicas ready at time 0
	DefaultMinReplicas         = 1                      // autoscaler floor
	DefaultMaxReplicas         = 4                      // autoscaler ceiling
	DefaultScaleUpWaiting      = 10.0                   // waiting requests per ready replica that trigger a scale-up
	DefaultScaleUpHold         = 15 * time.Second       // how long the trigger must hold continuously
	DefaultScaleRequestDelay   = 5 * time.Second        // trigger → capacity requested
	DefaultNodeReadyDelay      = 30 * time.Second       // capacity requested → node ready
	DefaultContainerReadyDelay = 15 * time.Second       // node ready → container ready
	DefaultModelReadyDelay     = 45 * time.Second       // container ready → model loaded and serving
	DefaultScaleDownIdle       = 60 * time.Second       // idle time before a replica is removed
	DefaultFaultStallDelay     = 2 * time.Second        // length of an injected mid-stream stall
	DefaultFaultSlowHeaders    = 1 * time.Second        // delay of injected slow response headers
	DefaultPrefixBlockTokens   = 16                     // tokens per prefix-cache block (vLLM's default block size)
	MaxPrefixBlockTokens       = 4096                   // the largest prefix-cache block
)

// Config holds every parameter of the simulated engine, its replicas, the
// autoscaler and fault injection. The zero value is not usable; start from
// DefaultConfig. Durations decode from YAML strings such as "30s".
type Config struct {
	// Seed seeds the natural output lengths and the fault decisions.
	Seed int64 `yaml:"seed"`

	// MaxNumSeqs is the most sequences in a replica's running batch.
	MaxNumSeqs int `yaml:"max_num_seqs"`
	// MaxNumBatchedTokens is the per-step token budget: one per decoding
	// sequence plus the prefill chunks scheduled in the step.
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens"`
	// KVCacheTokens is a replica's KV-cache capacity in tokens.
	KVCacheTokens int `yaml:"kv_cache_tokens"`
	// MaxModelLen bounds prompt_tokens + max_tokens of one request.
	MaxModelLen int `yaml:"max_model_len"`
	// StepBase is the fixed duration of an engine step.
	StepBase time.Duration `yaml:"step_base"`
	// StepPerDecodeSeq is added to a step for each decoding sequence.
	StepPerDecodeSeq time.Duration `yaml:"step_per_decode_seq"`
	// StepPerPrefillToken is added to a step for each prompt token prefilled.
	StepPerPrefillToken time.Duration `yaml:"step_per_prefill_token"`
	// OutputMean is the mean natural output length in tokens (requests
	// without ignore_eos stop at a lognormal length with this mean).
	OutputMean float64 `yaml:"output_mean"`
	// OutputSigma is the lognormal shape σ of the natural output length
	// (0 = always OutputMean).
	OutputSigma float64 `yaml:"output_sigma"`
	// MaxWaiting is the admission limit of a replica's waiting queue;
	// 0 means unbounded. A request routed to a full queue gets ErrQueueFull.
	MaxWaiting int `yaml:"max_waiting"`

	// Replicas is the number of replicas ready at time 0.
	Replicas int `yaml:"replicas"`
	// Autoscale turns the autoscaler on.
	Autoscale bool `yaml:"autoscale"`
	// MinReplicas is the autoscaler's floor (scale-down stops there). 0
	// means scale from zero (autoscale on): the cluster starts with no
	// replica, whatever Replicas says; the first arrival starts one at once
	// (no scale_up_hold) and waits in its queue — or is refused, with
	// MaxWaiting — until its model_ready; after scale_down_idle without work
	// the last replica goes too.
	MinReplicas int `yaml:"min_replicas"`
	// MaxReplicas is the autoscaler's ceiling (ready + starting).
	MaxReplicas int `yaml:"max_replicas"`
	// ScaleUpWaiting is the scale-up threshold in waiting requests per
	// ready replica.
	ScaleUpWaiting float64 `yaml:"scale_up_waiting"`
	// ScaleUpHold is how long the threshold must be exceeded continuously.
	ScaleUpHold time.Duration `yaml:"scale_up_hold"`
	// ScaleRequestDelay is the delay from the trigger to the capacity request.
	ScaleRequestDelay time.Duration `yaml:"scale_request_delay"`
	// NodeReadyDelay is the delay from the capacity request to a ready node.
	NodeReadyDelay time.Duration `yaml:"node_ready_delay"`
	// ContainerReadyDelay is the delay from node ready to container ready.
	ContainerReadyDelay time.Duration `yaml:"container_ready_delay"`
	// ModelReadyDelay is the delay from container ready to model loaded;
	// only then does the replica receive requests.
	ModelReadyDelay time.Duration `yaml:"model_ready_delay"`
	// ScaleDownIdle is how long a replica must be idle before it is removed.
	ScaleDownIdle time.Duration `yaml:"scale_down_idle"`

	// Fault500 is the fraction of requests answered with HTTP 500.
	Fault500 float64 `yaml:"fault_500"`
	// Fault503 is the fraction of requests answered with HTTP 503.
	Fault503 float64 `yaml:"fault_503"`
	// FaultReset is the fraction of streams whose connection is reset mid-stream.
	FaultReset float64 `yaml:"fault_reset"`
	// FaultMalformed is the fraction of streams that carry a malformed SSE chunk.
	FaultMalformed float64 `yaml:"fault_malformed"`
	// FaultStall is the fraction of streams that stall mid-stream.
	FaultStall float64 `yaml:"fault_stall"`
	// FaultStallDelay is the length of an injected stall.
	FaultStallDelay time.Duration `yaml:"fault_stall_delay"`
	// FaultSlowHeaders is the fraction of responses whose headers are delayed.
	FaultSlowHeaders float64 `yaml:"fault_slow_headers"`
	// FaultSlowHeadersDelay is the delay of slow response headers.
	FaultSlowHeadersDelay time.Duration `yaml:"fault_slow_headers_delay"`

	// BytesPerToken is the density of the simulated tokenizer: a prompt
	// text of b bytes counts ⌈b / BytesPerToken⌉ tokens (see
	// PromptTokens). 4 is surge's own estimate; a real tokenizer of the
	// same text may see 3 or 5.
	BytesPerToken float64 `yaml:"bytes_per_token"`
	// Tokenize is the style of the HTTP facade's /tokenize endpoint:
	// vllm, llamacpp or none (no endpoint, so that clients must probe).
	Tokenize string `yaml:"tokenize"`

	// SlowdownPerHour makes the engine slow down over time, as a leak or
	// fragmentation would: a step starting at t lasts (1 + SlowdownPerHour
	// × t/1h) times its normal duration (0 = never; 0.5 = 50% slower after
	// an hour). It is what a soak test should flag as drift.
	SlowdownPerHour float64 `yaml:"slowdown_per_hour"`

	// ReasoningTokens makes the model think first: the first
	// ReasoningTokens generated tokens of a chat response are reasoning
	// (streamed as vLLM's "reasoning" deltas, reported in
	// usage.completion_tokens_details.reasoning_tokens), the rest answer
	// text. They count toward max_tokens and completion_tokens, as on
	// vLLM. 0 = no reasoning. The engine model does not see the split.
	ReasoningTokens int `yaml:"reasoning_tokens"`

	// Quirks make the HTTP facade misbehave on purpose (quirks.go):
	// buffered streams, missing usage, ignored stop or max_tokens, …
	Quirks []string `yaml:"quirks"`

	// PrefixCacheTokens is the capacity of each replica's prefix cache in
	// tokens: prompt blocks computed before are served from it, and only
	// the uncached rest is prefilled (see PrefixHasher and the package
	// doc). 0 = no prefix cache (the default).
	PrefixCacheTokens int `yaml:"prefix_cache_tokens"`
	// The gateway in front of the engine (gateway.go): one API key's
	// quotas, as a managed endpoint has them, and its queue. A request
	// over quota waits in the queue while it has room (GatewayQueue
	// requests; no effect without a quota, so that --vary can set the
	// quota alone), or is refused with 429, the x-ratelimit-* headers of
	// each bucket and Retry-After. 0 = no such quota; no quota = no
	// gateway.
	QuotaRequestsPerMinute int `yaml:"quota_requests_per_minute"`
	QuotaTokensPerMinute   int `yaml:"quota_tokens_per_minute"`
	QuotaTokensPerDay      int `yaml:"quota_tokens_per_day"`
	GatewayQueue           int `yaml:"gateway_queue"`
	// GatewayHeaders is how the gateway announces its wait: kong, envoy,
	// litellm, server-timing (the default) or none.
	GatewayHeaders string `yaml:"gateway_headers"`

	// PrefixBlockTokens is the prefix cache's block size in tokens: only
	// whole blocks are cached and matched (0 = DefaultPrefixBlockTokens).
	PrefixBlockTokens int `yaml:"prefix_block_tokens"`
}

// HasGateway reports whether a quota puts a gateway in front of the engine.
func (c *Config) HasGateway() bool {
	return c.QuotaRequestsPerMinute > 0 || c.QuotaTokensPerMinute > 0 || c.QuotaTokensPerDay > 0
}

// GatewayHeaderStyles lists the values of gateway_headers.
var GatewayHeaderStyles = []string{"server-timing", "kong", "envoy", "litellm", "none"}

// ScalesFromZero reports whether the cluster scales from zero: autoscale
// on and min_replicas 0.
func (c *Config) ScalesFromZero() bool { return c.Autoscale && c.MinReplicas == 0 }

// replicasFloor is the least Replicas may be: 0 when scaling from zero
// (which starts with none whatever it says), 1 otherwise.
func (c *Config) replicasFloor() int {
	if c.ScalesFromZero() {
		return 0
	}
	return 1
}

// initialReplicas is the number of replicas ready at time 0.
func (c *Config) initialReplicas() int {
	if c.ScalesFromZero() {
		return 0
	}
	return c.Replicas
}

// PrefixCache reports whether the prefix cache is on.
func (c *Config) PrefixCache() bool { return c.PrefixCacheTokens > 0 }

// BlockTokens is the prefix cache's block size in tokens
// (PrefixBlockTokens, or its default when 0).
func (c *Config) BlockTokens() int { return c.blockTokens() }

// blockTokens is the prefix cache's block size in tokens.
func (c *Config) blockTokens() int {
	if c.PrefixBlockTokens <= 0 {
		return DefaultPrefixBlockTokens
	}
	return c.PrefixBlockTokens
}

// DefaultConfig returns the calibrated defaults: one replica of an 8B-class
// model on one GPU, about 10 requests/s of a 500-in/150-out chat workload,
// no admission limit, no autoscaling, no faults.
func DefaultConfig() Config {
	return Config{
		Seed:                  1,
		MaxNumSeqs:            DefaultMaxNumSeqs,
		MaxNumBatchedTokens:   DefaultMaxNumBatchedTokens,
		KVCacheTokens:         DefaultKVCacheTokens,
		MaxModelLen:           DefaultMaxModelLen,
		StepBase:              DefaultStepBase,
		StepPerDecodeSeq:      DefaultStepPerDecodeSeq,
		StepPerPrefillToken:   DefaultStepPerPrefillToken,
		OutputMean:            DefaultOutputMean,
		OutputSigma:           DefaultOutputSigma,
		Replicas:              DefaultReplicas,
		MinReplicas:           DefaultMinReplicas,
		MaxReplicas:           DefaultMaxReplicas,
		ScaleUpWaiting:        DefaultScaleUpWaiting,
		ScaleUpHold:           DefaultScaleUpHold,
		ScaleRequestDelay:     DefaultScaleRequestDelay,
		NodeReadyDelay:        DefaultNodeReadyDelay,
		ContainerReadyDelay:   DefaultContainerReadyDelay,
		ModelReadyDelay:       DefaultModelReadyDelay,
		ScaleDownIdle:         DefaultScaleDownIdle,
		FaultStallDelay:       DefaultFaultStallDelay,
		FaultSlowHeadersDelay: DefaultFaultSlowHeaders,
		BytesPerToken:         DefaultBytesPerToken,
		Tokenize:              TokenizeVLLM,
		PrefixBlockTokens:     DefaultPrefixBlockTokens,
	}
}

// Validate checks every field and returns the first problem, naming the
// field by its YAML name, e.g. "sim: max_num_seqs: must be ≥ 1, got 0"; the
// error unwraps to a *field.Error.
func (c *Config) Validate() error {
	type check struct {
		bad   bool
		field string
		msg   string
	}
	geInt := func(field string, v, lo int, what string) check {
		return check{v < lo, field, fmt.Sprintf("must be ≥ %s, got %d", what, v)}
	}
	geDur := func(field string, v time.Duration) check {
		return check{v < 0, field, fmt.Sprintf("must be ≥ 0, got %v", v)}
	}
	frac := func(field string, v float64) check {
		return check{!(v >= 0 && v <= 1), field, fmt.Sprintf("must be a fraction in [0, 1], got %v", v)}
	}
	faultSum := c.Fault500 + c.Fault503 + c.FaultReset + c.FaultMalformed + c.FaultStall + c.FaultSlowHeaders
	checks := []check{
		geInt("max_num_seqs", c.MaxNumSeqs, 1, "1"),
		geInt("max_num_batched_tokens", c.MaxNumBatchedTokens, max(c.MaxNumSeqs, 1), fmt.Sprintf("max_num_seqs (%d)", c.MaxNumSeqs)),
		geInt("kv_cache_tokens", c.KVCacheTokens, 2, "2"),
		geInt("max_model_len", c.MaxModelLen, 2, "2"),
		{c.MaxModelLen > c.KVCacheTokens, "max_model_len",
			fmt.Sprintf("must be ≤ kv_cache_tokens (%d) so that every valid request fits an idle replica, got %d", c.KVCacheTokens, c.MaxModelLen)},
		{c.StepBase <= 0, "step_base", fmt.Sprintf("must be > 0 so that virtual time advances, got %v", c.StepBase)},
		geDur("step_per_decode_seq", c.StepPerDecodeSeq),
		geDur("step_per_prefill_token", c.StepPerPrefillToken),
		{!(c.OutputMean >= 1 && c.OutputMean <= 1e9), "output_mean", fmt.Sprintf("must be ≥ 1 token, got %v", c.OutputMean)},
		{!(c.OutputSigma >= 0 && c.OutputSigma <= 4), "output_sigma", fmt.Sprintf("must be in [0, 4], got %v", c.OutputSigma)},
		geInt("max_waiting", c.MaxWaiting, 0, "0 (0 = unbounded)"),
		geInt("replicas", c.Replicas, c.replicasFloor(), fmt.Sprint(c.replicasFloor())),
		geInt("min_replicas", c.MinReplicas, 0, "0 (0 = scale from zero)"),
		{c.MinReplicas == 0 && !c.Autoscale, "min_replicas", "0 (scale from zero) needs autoscale: true"},
		geInt("max_replicas", c.MaxReplicas, max(c.MinReplicas, 1), maxReplicasFloor(c.MinReplicas)),
		{c.Autoscale && (c.Replicas < c.MinReplicas || c.Replicas > c.MaxReplicas), "replicas",
			fmt.Sprintf("must be within [min_replicas, max_replicas] = [%d, %d] when autoscale is on, got %d", c.MinReplicas, c.MaxReplicas, c.Replicas)},
		{!(c.ScaleUpWaiting > 0 && !math.IsInf(c.ScaleUpWaiting, 0)), "scale_up_waiting", fmt.Sprintf("must be > 0 requests per replica, got %v", c.ScaleUpWaiting)},
		geDur("scale_up_hold", c.ScaleUpHold),
		geDur("scale_request_delay", c.ScaleRequestDelay),
		geDur("node_ready_delay", c.NodeReadyDelay),
		geDur("container_ready_delay", c.ContainerReadyDelay),
		geDur("model_ready_delay", c.ModelReadyDelay),
		geDur("scale_down_idle", c.ScaleDownIdle),
		frac("fault_500", c.Fault500),
		frac("fault_503", c.Fault503),
		frac("fault_reset", c.FaultReset),
		frac("fault_malformed", c.FaultMalformed),
		frac("fault_stall", c.FaultStall),
		geDur("fault_stall_delay", c.FaultStallDelay),
		frac("fault_slow_headers", c.FaultSlowHeaders),
		geDur("fault_slow_headers_delay", c.FaultSlowHeadersDelay),
		{!(c.SlowdownPerHour >= 0 && c.SlowdownPerHour <= 1000), "slowdown_per_hour", fmt.Sprintf("must be in [0, 1000], got %v", c.SlowdownPerHour)},
		{c.ReasoningTokens < 0, "reasoning_tokens", fmt.Sprintf("must be ≥ 0 tokens, got %d", c.ReasoningTokens)},
		{c.PrefixBlockTokens < 0 || c.PrefixBlockTokens > MaxPrefixBlockTokens, "prefix_block_tokens",
			fmt.Sprintf("must be 1..%d tokens (0 = %d), got %d", MaxPrefixBlockTokens, DefaultPrefixBlockTokens, c.PrefixBlockTokens)},
		{c.PrefixCacheTokens < 0 || (c.PrefixCacheTokens > 0 && c.PrefixCacheTokens < c.blockTokens()), "prefix_cache_tokens",
			fmt.Sprintf("must be 0 (off) or at least prefix_block_tokens (%d), got %d", c.blockTokens(), c.PrefixCacheTokens)},
		geInt("quota_requests_per_minute", c.QuotaRequestsPerMinute, 0, "0 (0 = no quota)"),
		geInt("quota_tokens_per_minute", c.QuotaTokensPerMinute, 0, "0 (0 = no quota)"),
		geInt("quota_tokens_per_day", c.QuotaTokensPerDay, 0, "0 (0 = no quota)"),
		geInt("gateway_queue", c.GatewayQueue, 0, "0 (0 = refuse at once)"),
		{c.GatewayHeaders != "" && !slices.Contains(GatewayHeaderStyles, c.GatewayHeaders), "gateway_headers",
			fmt.Sprintf("must be one of %s, got %q", strings.Join(GatewayHeaderStyles, ", "), c.GatewayHeaders)},
		{faultSum > 1+1e-9, "fault_500+fault_503+fault_reset+fault_malformed+fault_stall+fault_slow_headers",
			fmt.Sprintf("fractions must sum to ≤ 1, got %v", faultSum)},
	}
	if err := c.checkQuirks(); err != nil {
		return err
	}
	if f, msg := c.checkTokenizer(); f != "" {
		checks = append(checks, check{true, f, msg})
	}
	for _, k := range checks {
		if k.bad {
			return fmt.Errorf("sim: %w", &field.Error{Field: k.field, Message: k.msg})
		}
	}
	return nil
}

// maxReplicasFloor names the least max_replicas may be: min_replicas, or
// 1 when that is 0 (scaling from zero still needs a replica to scale to).
func maxReplicasFloor(minReplicas int) string {
	if minReplicas < 1 {
		return "1 (a replica to scale to, even from zero)"
	}
	return fmt.Sprintf("min_replicas (%d)", minReplicas)
}

// ErrInvalidRequest marks a request the engine refuses to run (HTTP 400).
var ErrInvalidRequest = errors.New("sim: invalid request")

// CheckRequest reports whether r can run on this configuration: at least
// one prompt token, max_tokens ≥ 0 (0 = unset) and prompt_tokens +
// max_tokens ≤ max_model_len (with max_tokens unset, room for at least one
// output token). A prefill-only request sets no max_tokens nor ignore_eos
// and needs prompt_tokens ≤ kv_cache_tokens instead. The error wraps
// ErrInvalidRequest.
func (c Config) CheckRequest(r Request) error {
	switch {
	case r.PromptTokens < 1:
		return fmt.Errorf("%w: prompt_tokens must be ≥ 1, got %d", ErrInvalidRequest, r.PromptTokens)
	case r.PrefillOnly && (r.MaxTokens != 0 || r.IgnoreEOS):
		return fmt.Errorf("%w: a prefill-only request generates nothing: max_tokens must be unset and ignore_eos false", ErrInvalidRequest)
	case r.PrefillOnly && r.PromptTokens > c.KVCacheTokens:
		return fmt.Errorf("%w: prompt_tokens %d exceed kv_cache_tokens %d", ErrInvalidRequest, r.PromptTokens, c.KVCacheTokens)
	case r.PrefillOnly:
		return nil
	case r.MaxTokens < 0:
		return fmt.Errorf("%w: max_tokens must be ≥ 1 (or unset), got %d", ErrInvalidRequest, r.MaxTokens)
	case r.MaxTokens == 0 && r.PromptTokens >= c.MaxModelLen:
		return fmt.Errorf("%w: prompt_tokens %d leaves no room for output within max_model_len %d",
			ErrInvalidRequest, r.PromptTokens, c.MaxModelLen)
	case r.PromptTokens+r.MaxTokens > c.MaxModelLen:
		return fmt.Errorf("%w: prompt_tokens %d + max_tokens %d = %d exceeds max_model_len %d",
			ErrInvalidRequest, r.PromptTokens, r.MaxTokens, r.PromptTokens+r.MaxTokens, c.MaxModelLen)
	}
	return nil
}

// outputCap is the most output tokens r may generate, which its KV
// reservation holds room for: max_tokens, max_model_len − prompt_tokens
// when unset, 0 for prefill-only work.
func (c *Config) outputCap(r Request) int {
	switch {
	case r.PrefillOnly:
		return 0
	case r.MaxTokens == 0:
		return c.MaxModelLen - r.PromptTokens
	}
	return r.MaxTokens
}
