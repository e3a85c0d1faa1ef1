// Package run executes one run: it prepares a target (a real endpoint, the
// in-process simulator on a loopback port, or the engine model in virtual
// time), then executes one Spec — plan → load generator → client →
// collector → run folder — and returns the records' analysis. It holds no
// statistics beyond the analysis, prints nothing but the live view, and
// knows no flags: everything a run needs travels in Options and the Spec.
package run

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/otlp"
	"github.com/surge-bench/surge/internal/push"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/webview"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// Defaults of the options common to every experiment.
const (
	DefaultModel          = "surge-sim"
	DefaultAPI            = "chat"
	DefaultAPIKeyEnv      = "OPENAI_API_KEY"
	DefaultTimeout        = 60 * time.Second
	DefaultProfile        = "chat"
	DefaultScrapeInterval = time.Second
	DefaultWindow         = analyze.DefaultWindow
)

// Options are the settings every experiment shares: what to test, how to
// reach it, what load to send and how to judge it. They come in parts by
// concern, each embedded (its fields are Options' own: o.Target, o.Seed)
// and inlined in YAML and JSON, so that a file or a manifest has one flat
// set of keys; each part validates itself. Each field is a YAML key (the
// command line binds one flag to each).
type Options struct {
	Endpoint     `yaml:",inline"` // where requests go and how they get there
	Load         `yaml:",inline"` // how the generator sends them
	WorkloadOpts `yaml:",inline"` // what each request is
	SessionOpts  `yaml:",inline"` // multi-turn sessions
	Judging      `yaml:",inline"` // windows, deadlines and the SLO
	Observation  `yaml:",inline"` // what is watched of the target besides the answers
	Output       `yaml:",inline"` // where results go and what the manifest records
	Budget       `yaml:",inline"` // limits and prices of the whole command
	Distribution `yaml:",inline"` // static shards

	Sim sim.Config `yaml:"sim"` // the in-process simulated engine (no --target)
}

// Endpoint says where requests go and how they get there.
type Endpoint struct {
	Target     string   `yaml:"target"`       // base URL including /v1; "" = in-process simulator
	Model      string   `yaml:"model"`        // model name sent in requests
	API        string   `yaml:"api"`          // chat or completions
	APIKeyEnv  string   `yaml:"api_key_env"`  // environment variable holding the API key
	APIKeyFile string   `yaml:"api_key_file"` // file holding the API key (wins over the variable)
	CACert     string   `yaml:"ca_cert"`      // PEM file of an extra root CA
	Insecure   bool     `yaml:"insecure"`     // skip TLS verification
	Headers    []string `yaml:"headers"`      // extra request headers, "Name: value"
	Stream     bool     `yaml:"stream"`       // stream responses (SSE)
	HTTPClient string   `yaml:"http_client"`  // auto, surge or go: the HTTP client transport (openai.Config.Transport)
	// GatewayTiming is how a gateway in front of the engine announces its
	// wait and the upstream's time: auto, off, kong, envoy, litellm,
	// server-timing or header:NAME[,NAME] (openai.ParseGatewayTiming).
	GatewayTiming string `yaml:"gateway_timing"`

	Timeout time.Duration `yaml:"timeout"` // per-request timeout
	Retries int           `yaml:"retries"` // bounded retries (0 = off)
}

// Load says how the generator sends the requests.
type Load struct {
	MaxInFlight int           `yaml:"max_in_flight"` // in-flight cap; beyond it arrivals are generator_drop
	Spin        time.Duration `yaml:"spin"`          // sleep-then-spin window for sub-ms send precision (0 = off)
	Seed        int64         `yaml:"seed"`          // seed of schedules, workload and simulator
	// NoEarlyStop runs every request of the plan against a target whose
	// first requests all failed by a cause no load explains (judge.Unusable):
	// by default such a run stops within seconds.
	NoEarlyStop bool `yaml:"no_early_stop"`
}

// WorkloadOpts says what each request is: its profile or mix, its lengths,
// its prompts (synthetic or a dataset's) and how they are sized.
type WorkloadOpts struct {
	Profile string `yaml:"profile"` // workload profile: chat, rag, longgen, or one of Profiles
	// Profiles are custom profiles for Profile and Mix (name, prompt and
	// output distributions, max_tokens; max_tokens 0 = the output's
	// largest). A name may redefine a built-in.
	Profiles []workload.Profile `yaml:"profiles"`
	// Mix, when set, sends a weighted mix of profiles instead of Profile:
	// each arrival gets one, labelled in its record. PromptTokens and
	// OutputTokens apply to every profile of the mix.
	Mix          workload.Mix    `yaml:"mix"`
	PromptTokens workload.Length `yaml:"prompt_tokens"` // prompt length (a count or a distribution) instead of the profile's (unset = profile)
	OutputTokens workload.Length `yaml:"output_tokens"` // output length (max_tokens) instead of the profile's (unset = profile)
	IgnoreEOS    bool            `yaml:"ignore_eos"`    // ask the server to generate exactly max_tokens
	NoNonce      bool            `yaml:"no_nonce"`      // let prompts share prefixes (to test prefix caching)
	SharedPrefix int             `yaml:"shared_prefix"` // every prompt starts with the same text of this many tokens (0 = none)
	// Dataset is a file of real prompts ("" = synthetic prompts), read
	// once by Prepare; DatasetFormat says what it is (sharegpt,
	// openai-jsonl, prompts-jsonl) and DatasetSample the order rows are
	// taken in (shuffle, random, sequential; package workload).
	Dataset       string `yaml:"dataset"`
	DatasetFormat string `yaml:"dataset_format"`
	DatasetSample string `yaml:"dataset_sample"` // "" = shuffle
	// MaxTokensCap caps every request's max_tokens, a dataset row's or a
	// profile's draw (0 = no cap beyond the profile's).
	MaxTokensCap int `yaml:"max_tokens_cap"`
	// Inputs is the number of texts an embeddings request embeds, or of
	// documents a rerank request scores: a count or a distribution, each
	// text of the profile's (or --prompt-tokens') length; unset = 1 for
	// embeddings, 8 for rerank. QueryTokens is a rerank query's length
	// (0 = DefaultQueryTokens).
	Inputs      workload.Length `yaml:"inputs"`
	QueryTokens int             `yaml:"query_tokens"`
	// Images is the number of images each chat, Responses or Messages
	// request carries beside its text (a count or a distribution; unset =
	// none), ImageSize their size "WxH" (default DefaultImageSize) and
	// ImageFormat png (default) or jpeg: generated, never downloaded.
	Images      workload.Length `yaml:"images"`
	ImageSize   string          `yaml:"image_size"`
	ImageFormat string          `yaml:"image_format"`
	// PromptCalibration is how prompts are sized for the target's
	// tokenizer before the first run: auto, tokenize, probe or off
	// (package calibrate).
	PromptCalibration string `yaml:"prompt_calibration"`
}

// SessionOpts turns every arrival into the start of a multi-turn session
// (docs/sessions.md); the other session settings apply only with it.
type SessionOpts struct {
	Sessions     bool            `yaml:"sessions"`
	SessionTurns workload.Length `yaml:"session_turns"` // turns per session (a count or a distribution)
	ThinkTime    workload.Think  `yaml:"think_time"`    // think time after an answer before the next turn
	TurnTokens   workload.Length `yaml:"turn_tokens"`   // tokens of each later user message and fan-out sub-task
	Fanout       int             `yaml:"fanout"`        // sub-requests each turn sends beside itself (0 = none)
	// SessionDrain extends a sessions run by a phase without arrivals
	// (drain) in which sessions already started may still send turns.
	SessionDrain time.Duration `yaml:"session_drain"`
}

// Judging is how requests and runs are judged: the analysis window, the
// per-request deadlines and the SLO.
type Judging struct {
	Window       time.Duration `yaml:"window"`        // analysis window by arrival time
	TTFTDeadline time.Duration `yaml:"ttft_deadline"` // per-request deadline on TTFT from the scheduled arrival
	E2EDeadline  time.Duration `yaml:"e2e_deadline"`  // per-request deadline on completion from the scheduled arrival
	// TPOTDeadline adds time per output token to the per-request deadline
	// (DistServe's goodput); 0 = not a clause.
	TPOTDeadline time.Duration `yaml:"tpot_deadline"`
	// TokenDeadline is the per-token budget of smooth goodput: token i is
	// due at the TTFT deadline + i × this; 0 = smooth goodput not measured.
	TokenDeadline time.Duration `yaml:"token_deadline"`
	SLOTTFTP95    time.Duration `yaml:"slo_ttft_p95"` // SLO clause: p95 TTFT from schedule (0 = not checked)
	SLOE2EP99     time.Duration `yaml:"slo_e2e_p99"`  // SLO clause: p99 completion from schedule (0 = not checked)
	SLOGoodput    float64       `yaml:"slo_goodput"`  // SLO clause: goodput ratio (0 = not checked)
}

// Observation is what is watched of the target besides its answers: the
// engine's metrics and spans, the autoscaling timeline, and the live
// values surge itself exposes.
type Observation struct {
	MetricsURL     string        `yaml:"metrics_url"`     // engine Prometheus endpoint
	MetricsPreset  string        `yaml:"metrics_preset"`  // vllm, sglang, tgi, llamacpp, triton, sim, digitalocean ("" = auto)
	MetricOverride []string      `yaml:"metric"`          // logical=engine_name overrides
	ScrapeInterval time.Duration `yaml:"scrape_interval"` // engine scrape period

	PrometheusAddr string `yaml:"prometheus_addr"` // expose live values for Prometheus here
	// MetricsOut are the endpoints pushed to while runs go (package
	// push): prometheus-rw=URL (remote-write) and otlp=URL (OTLP/HTTP).
	MetricsOut []string `yaml:"metrics_out"`
	// Web is where the live page is served while runs go (package
	// webview): host:port, or a port alone for loopback.
	Web        string        `yaml:"web"`
	OTLPListen string        `yaml:"otlp_listen"` // receive the engine's OTLP trace spans here (host:port)
	OTLPGrace  time.Duration `yaml:"otlp_grace"`  // how long a finished request waits for its span

	// The autoscaling timeline (scaling.go): the pods (and nodes) watched
	// through kubectl during live runs, and the response header naming the
	// replica or pod that answered (first request served by a new pod).
	WatchK8s      string `yaml:"watch_k8s"`      // NAMESPACE/SELECTOR, e.g. llm/app=vllm ("" = none)
	ReplicaHeader string `yaml:"replica_header"` // "" = openai.ReplicaHeader (the simulator's)
	Kubectl       string `yaml:"-"`              // the kubectl binary ("" = from PATH); tests replace it
}

// Output is where results go, what is shown while a run goes on, and what
// the manifest records about the target.
type Output struct {
	Out   string `yaml:"out"`   // output folder
	Force bool   `yaml:"force"` // reuse a non-empty output folder
	Quiet bool   `yaml:"quiet"` // no live view

	Deployment    string `yaml:"deployment"`     // manifest: serverless, dedicated, self-managed, …
	Hardware      string `yaml:"hardware"`       // manifest: GPU/accelerator, if known
	ServingConfig string `yaml:"serving_config"` // manifest: engine and its settings, if known
}

// Budget holds the limits of the whole command, shared by all its runs,
// and the prices that turn tokens into dollars (budget.go). Nil = no
// limit (or no price): a pointer so that a budget of 0 is an error, not
// "none".
type Budget struct {
	MaxRequests     *int64   `yaml:"max_requests,omitempty"`      // requests sent
	MaxOutputTokens *int64   `yaml:"max_output_tokens,omitempty"` // output tokens generated
	MaxCost         *float64 `yaml:"max_cost,omitempty"`          // USD, at PriceInput and PriceOutput
	PriceInput      *float64 `yaml:"price_input,omitempty"`       // USD per million input (prompt) tokens
	PriceOutput     *float64 `yaml:"price_output,omitempty"`      // USD per million output tokens
}

// Distribution is static sharding (shard.go): Shard "I/N" sends only the
// arrivals (or sessions) whose Seq mod N is I ("auto/N": I from
// JOB_COMPLETION_INDEX; "" = all); StartAt (RFC 3339) is the wall-clock
// time the first run's origin waits for, so that shards start together.
type Distribution struct {
	Shard   string `yaml:"shard"`
	StartAt string `yaml:"start_at"`
}

// DefaultOptions returns the defaults; docs/method.md §1 gives the deadlines and SLO.
func DefaultOptions() Options {
	return Options{
		Endpoint: Endpoint{Model: DefaultModel, API: DefaultAPI, APIKeyEnv: DefaultAPIKeyEnv, Stream: true,
			HTTPClient: openai.TransportAuto, GatewayTiming: openai.GatewayAuto, Timeout: DefaultTimeout},
		Load: Load{MaxInFlight: loadgen.DefaultMaxInFlight, Seed: 1},
		WorkloadOpts: WorkloadOpts{Profile: DefaultProfile, PromptCalibration: calibrate.Auto,
			DatasetSample: workload.SampleShuffle},
		SessionOpts: SessionOpts{SessionTurns: workload.FixedLength(workload.DefaultSessionTurns),
			ThinkTime: workload.FixedThink(workload.DefaultThink), TurnTokens: must(workload.ParseLength(workload.DefaultTurnTokens))},
		Judging: Judging{Window: DefaultWindow, TTFTDeadline: analyze.DefaultDeadlines.TTFT, E2EDeadline: analyze.DefaultDeadlines.E2E,
			SLOTTFTP95: judge.DefaultSLO.TTFTP95, SLOE2EP99: judge.DefaultSLO.E2EP99, SLOGoodput: judge.DefaultSLO.GoodputRatio},
		Observation: Observation{ScrapeInterval: DefaultScrapeInterval, OTLPGrace: otlp.DefaultGrace},
		Sim:         sim.DefaultConfig(),
	}
}

// Validate checks the options, part by part; each problem is a
// field.Error named by its YAML key (simulator settings as sim.<key>).
func (o *Options) Validate() error {
	var errs field.Errors
	bad := errs.Add
	o.Endpoint.validate(bad)
	o.Load.validate(bad)
	o.validateWorkload(bad)
	o.WorkloadOpts.validate(bad)
	o.SessionOpts.validate(bad)
	o.Judging.validate(bad)
	o.Observation.validate(bad)
	o.validateBudget(bad)
	o.validateShard(bad)
	if o.Target == "" {
		o.Sim.Seed = o.Seed
		errs.Merge("sim", o.Sim.Validate())
	}
	return errs.Err()
}

// bad records one problem with a field, named by its YAML key.
type bad = func(field, format string, a ...any)

func (p *Endpoint) validate(bad bad) {
	if p.Target != "" && !strings.HasPrefix(p.Target, "http://") && !strings.HasPrefix(p.Target, "https://") {
		bad("target", "must be an http:// or https:// URL, got %q", p.Target)
	}
	if !slices.Contains(openai.APIs, p.API) {
		bad("api", "must be one of %s, got %q", strings.Join(openai.APIs, ", "), p.API)
	}
	if !slices.Contains([]string{"", openai.TransportAuto, openai.TransportSurge, openai.TransportGo}, p.HTTPClient) {
		bad("http_client", "must be auto, surge or go, got %q", p.HTTPClient)
	}
	if _, err := openai.ParseGatewayTiming(p.GatewayTiming); err != nil {
		bad("gateway_timing", "%v", err)
	}
	if p.HTTPClient == openai.TransportSurge && p.Target != "" && openai.ProxyApplies(p.Target) {
		bad("http_client", "surge's own client does not use proxies, and HTTP_PROXY/HTTPS_PROXY applies to the target: use auto or go (or NO_PROXY)")
	}
	if p.Timeout <= 0 {
		bad("timeout", "must be > 0, got %s", p.Timeout)
	}
	if p.Retries < 0 || p.Retries > 10 {
		bad("retries", "must be 0..10, got %d", p.Retries)
	}
	for _, h := range p.Headers {
		if name, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(name) == "" {
			bad("headers", "must be \"Name: value\" (value not shown)")
		}
	}
}

func (p *Load) validate(bad bad) {
	if p.MaxInFlight < 1 {
		bad("max_in_flight", "must be ≥ 1, got %d", p.MaxInFlight)
	}
	if p.Spin < 0 || p.Spin > 10*time.Millisecond {
		bad("spin", "must be 0..10ms, got %s", p.Spin)
	}
}

// validate checks the prompts' settings: the shared prefix, the dataset
// and what does not apply with one, the cap and the calibration (the
// profiles and the mix: Options.validateWorkload).
func (p *WorkloadOpts) validate(bad bad) {
	if p.SharedPrefix < 0 || p.SharedPrefix > workload.MaxPromptTokens-workload.MinUniqueTokens {
		bad("shared_prefix", "must be 0..%d tokens, got %d", workload.MaxPromptTokens-workload.MinUniqueTokens, p.SharedPrefix)
	}
	switch {
	case p.Dataset != "" && p.DatasetFormat == "":
		bad("dataset_format", "required with a dataset: %s", strings.Join(workload.DatasetFormats, ", "))
	case p.DatasetFormat != "" && !slices.Contains(workload.DatasetFormats, p.DatasetFormat):
		bad("dataset_format", "unknown %q (want %s)", p.DatasetFormat, strings.Join(workload.DatasetFormats, ", "))
	case p.DatasetFormat != "" && p.Dataset == "":
		bad("dataset", "required with a dataset format (the file of prompts)")
	}
	if p.Dataset != "" {
		// A dataset's prompts are its rows': settings that shape synthetic
		// prompts would be silently ignored.
		switch {
		case p.PromptTokens.IsSet():
			bad("prompt_tokens", "does not apply with a dataset: its rows are the prompts (use --max-tokens-cap or --output-tokens for the answers)")
		case p.SharedPrefix > 0:
			bad("shared_prefix", "does not apply with a dataset: its rows are the prompts, system messages included")
		case len(p.Mix) > 0:
			bad("mix", "does not apply with a dataset: its rows are the prompts (--profile still gives the output lengths of rows without max_tokens)")
		}
	}
	if p.DatasetSample != "" && !slices.Contains(workload.DatasetSamples, p.DatasetSample) {
		bad("dataset_sample", "unknown %q (want %s)", p.DatasetSample, strings.Join(workload.DatasetSamples, ", "))
	}
	if p.MaxTokensCap < 0 || p.MaxTokensCap > workload.MaxPromptTokens {
		bad("max_tokens_cap", "must be in [0, %d] (0 = no cap beyond the profile's), got %d", workload.MaxPromptTokens, p.MaxTokensCap)
	}
	if !calibrate.Valid(p.PromptCalibration) {
		bad("prompt_calibration", "must be one of %s, got %q", strings.Join(calibrate.Methods, ", "), p.PromptCalibration)
	}
}

func (p *SessionOpts) validate(bad bad) {
	if sc := p.config(); sc.Validate() != nil {
		err := sc.Validate()
		name, msg, _ := strings.Cut(err.Error(), ": ")
		bad(name, "%s", msg)
	}
	if p.Sessions {
		// 0 (or empty) unsets a Length; here it has no meaning of its own
		// and must not fall back to a default silently.
		if !p.SessionTurns.IsSet() {
			bad("session_turns", "must be ≥ 1 turn (a count or a distribution), got 0")
		}
		if !p.TurnTokens.IsSet() {
			bad("turn_tokens", "must be ≥ 1 token (a count or a distribution), got 0")
		}
	}
	if !p.Sessions && p.Fanout > 0 {
		bad("fanout", "needs --sessions (a fan-out is part of a session's turn)")
	}
	switch {
	case p.SessionDrain < 0 || p.SessionDrain > time.Hour:
		bad("session_drain", "must be 0..1h, got %s", p.SessionDrain)
	case !p.Sessions && p.SessionDrain > 0:
		bad("session_drain", "needs --sessions")
	}
}

func (p *Judging) validate(bad bad) {
	if p.Window < 100*time.Millisecond {
		bad("window", "must be ≥ 100ms, got %s", p.Window)
	}
	if p.TTFTDeadline <= 0 {
		bad("ttft_deadline", "must be > 0, got %s", p.TTFTDeadline)
	}
	if p.TPOTDeadline < 0 {
		bad("tpot_deadline", "must be ≥ 0 (0 = not a clause), got %s", p.TPOTDeadline)
	}
	if p.TokenDeadline < 0 {
		bad("token_deadline", "must be ≥ 0 (0 = smooth goodput not measured), got %s", p.TokenDeadline)
	}
	if p.E2EDeadline <= 0 {
		bad("e2e_deadline", "must be > 0, got %s", p.E2EDeadline)
	}
	if p.SLOTTFTP95 < 0 {
		bad("slo_ttft_p95", "must be ≥ 0, got %s", p.SLOTTFTP95)
	}
	if p.SLOE2EP99 < 0 {
		bad("slo_e2e_p99", "must be ≥ 0, got %s", p.SLOE2EP99)
	}
	if p.SLOGoodput < 0 || p.SLOGoodput > 1 {
		bad("slo_goodput", "must be within 0..1, got %g", p.SLOGoodput)
	}
}

func (p *Observation) validate(bad bad) {
	if p.ScrapeInterval < 100*time.Millisecond {
		bad("scrape_interval", "must be ≥ 100ms, got %s", p.ScrapeInterval)
	}
	if p.MetricsURL != "" {
		if u, err := url.Parse(p.MetricsURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("metrics_url", "must be an http:// or https:// URL, got %q", record.RedactURL(p.MetricsURL))
		}
	}
	if m := p.MetricsPreset; m != "" && m != scrape.PresetAuto {
		if _, ok := scrape.LookupPreset(m); !ok {
			bad("metrics_preset", "unknown preset %q (want one of %s)", m, strings.Join(scrape.PresetNames(), ", "))
		}
	}
	if _, err := scrape.ParseOverrides(p.MetricOverride); err != nil {
		bad("metric", "%v", strings.TrimPrefix(err.Error(), "scrape: "))
	}
	if p.PrometheusAddr != "" {
		if _, _, err := net.SplitHostPort(p.PrometheusAddr); err != nil {
			bad("prometheus_addr", "must be host:port, got %q", p.PrometheusAddr)
		}
	}
	if p.Web != "" {
		if _, err := webview.Normalize(p.Web); err != nil {
			bad("web", "%v", err)
		}
	}
	for _, m := range p.MetricsOut {
		if _, err := push.ParseTarget(m); err != nil {
			bad("metrics_out", "%v", err)
		}
	}
	if p.OTLPListen != "" {
		if _, _, err := net.SplitHostPort(p.OTLPListen); err != nil {
			bad("otlp_listen", "must be host:port, got %q", p.OTLPListen)
		}
	}
	if p.OTLPGrace < 0 || p.OTLPGrace > 5*time.Minute {
		bad("otlp_grace", "must be 0..5m, got %s", p.OTLPGrace)
	}
}

// LoadDataset reads the dataset file, or returns nil when there is none.
// Its errors name the file, the line (or conversation) and the field; a
// dataset whose rows carry tools or a response format is refused with
// --api completions (field api), which has no place for them.
func (o *Options) LoadDataset() (*workload.Dataset, error) {
	if o.Dataset == "" {
		return nil, nil
	}
	d, err := workload.LoadDataset(o.Dataset, o.DatasetFormat)
	if err != nil {
		return nil, err
	}
	if n := d.ExtraRow(); n > 0 && o.API != openai.APIChat {
		// The rows' tools are chat-shaped: completions takes a prompt
		// only, and Responses and Messages shape tools otherwise; sending
		// the rows without them would measure another workload.
		return nil, &field.Error{Field: "api", Message: fmt.Sprintf("%s takes no chat-shaped tools, tool_choice or response_format, but --dataset %s line %d carries them: use --api chat", o.API, o.Dataset, n)}
	}
	return d, nil
}

// validateWorkload checks the custom profiles, the profile and the mix,
// filling a custom profile's max_tokens 0 with its output's largest.
func (o *Options) validateWorkload(bad func(field, format string, a ...any)) {
	for i := range o.Profiles {
		p := &o.Profiles[i]
		if p.MaxTokens == 0 && p.Output.Kind != "" && p.Output.Validate() == nil {
			p.MaxTokens = p.Output.Upper()
		}
		if err := p.Validate(); err != nil {
			bad("profiles", "%s", strings.TrimPrefix(err.Error(), "workload: "))
			return
		}
		for _, q := range o.Profiles[:i] {
			if q.Name == p.Name {
				bad("profiles", "profile %q: defined twice", p.Name)
				return
			}
		}
	}
	if _, _, err := ParseImageSize(o.ImageSize); err != nil {
		bad("image_size", "%v", err)
	}
	if o.ImageFormat != "" && o.ImageFormat != workload.ImagePNG && o.ImageFormat != workload.ImageJPEG {
		bad("image_format", "must be png or jpeg, got %q", o.ImageFormat)
	}
	if o.Images.IsSet() && !openai.Conversational(o.API) {
		bad("images", "go with chat, responses or messages, not %s", o.API)
	}
	if openai.Generates(o.API) {
		switch {
		case workload.InputsFormat(o.DatasetFormat):
			bad("dataset_format", "%s holds the texts of embeddings or rerank requests: use --api embeddings or rerank, or a dataset of prompts", o.DatasetFormat)
		case o.Inputs.IsSet():
			bad("inputs", "applies to --api embeddings and rerank only, not %s", o.API)
		case o.QueryTokens != 0:
			bad("query_tokens", "applies to --api rerank only, not %s", o.API)
		}
	} else {
		switch {
		case o.QueryTokens != 0 && o.API != openai.APIRerank:
			bad("query_tokens", "applies to --api rerank only, not %s", o.API)
		case o.QueryTokens < 0 || o.QueryTokens > workload.MaxPromptTokens:
			bad("query_tokens", "must be 0..%d tokens, got %d", workload.MaxPromptTokens, o.QueryTokens)
		case o.Inputs.IsSet() && o.inputsUpper() > workload.MaxInputs:
			bad("inputs", "at most %d texts a request, got up to %d", workload.MaxInputs, o.inputsUpper())
		case o.Sessions:
			bad("sessions", "are conversations: they need a generating API, not %s", o.API)
		case o.Dataset != "" && o.API == openai.APIEmbeddings && o.DatasetFormat != workload.FormatTextsJSONL:
			bad("dataset_format", "embeddings read texts-jsonl rows ({\"text\": …} or {\"texts\": […]}), not %s", o.DatasetFormat)
		case o.Dataset != "" && o.API == openai.APIRerank && o.DatasetFormat != workload.FormatRerankJSONL:
			bad("dataset_format", "rerank reads rerank-jsonl rows ({\"query\": …, \"documents\": […]}), not %s", o.DatasetFormat)
		case o.Dataset != "" && o.Inputs.IsSet():
			bad("inputs", "does not apply with a dataset: each row gives its texts")
		case o.SharedPrefix > 0:
			bad("shared_prefix", "does not apply to %s: its texts are independent", o.API)
		}
	}
	if len(o.Mix) > 0 {
		if _, err := o.WorkloadMix(); err != nil {
			bad("mix", "%s", strings.TrimPrefix(err.Error(), "workload: "))
		}
		return
	}
	if _, err := workload.LookupIn(o.Profiles, o.Profile); err != nil {
		bad("profile", "%v", err)
	}
}

// WorkloadName names the workload in tables and the manifest: the
// profile, or "mix chat=0.7,rag=0.3".
func (o *WorkloadOpts) WorkloadName() string {
	if o.Dataset != "" {
		return "dataset " + filepath.Base(o.Dataset)
	}
	if len(o.Mix) > 0 {
		return "mix " + o.Mix.String()
	}
	return o.Profile
}

// WorkloadMix is the mix's profiles with the fixed lengths applied to each,
// and their weights; nil without a mix.
func (o *WorkloadOpts) WorkloadMix() ([]workload.Weighted, error) {
	if len(o.Mix) == 0 {
		return nil, nil
	}
	ws, err := o.Mix.Resolve(o.Profiles)
	if err != nil {
		return nil, err
	}
	for i := range ws {
		o.override(&ws[i].Profile)
		if err := ws[i].Profile.Validate(); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// WorkloadProfile is the workload profile with the fixed lengths applied
// (without a mix).
func (o *WorkloadOpts) WorkloadProfile() (workload.Profile, error) {
	p, err := workload.LookupIn(o.Profiles, o.Profile)
	if err != nil {
		return p, err
	}
	o.override(&p)
	return p, p.Validate()
}

// override applies PromptTokens and OutputTokens to p.
func (o *WorkloadOpts) override(p *workload.Profile) {
	if o.PromptTokens.IsSet() {
		p.Prompt = o.PromptTokens.Dist()
	}
	if o.OutputTokens.IsSet() {
		// max_tokens = the draw: the cap is the distribution's largest.
		p.Output = o.OutputTokens.Dist()
		p.MaxTokens = p.Output.Upper()
	}
}

// WorkloadConfig is the workload every request of a run is generated
// from: the profile with the lengths applied, the seed and the request
// switches. Execute adds what only a prepared target knows (the prompt
// sizing, a salt per run); `surge workload inspect` and --dry-run
// summarise it as it is.
func (o *Options) WorkloadConfig() (workload.Config, error) {
	prof, err := o.WorkloadProfile()
	if err != nil {
		return workload.Config{}, err
	}
	mix, err := o.WorkloadMix()
	if err != nil {
		return workload.Config{}, err
	}
	c := workload.Config{Profile: prof, Mix: mix, Seed: o.Seed, NoNonce: o.NoNonce, IgnoreEOS: o.IgnoreEOS, SharedPrefix: o.SharedPrefix,
		DatasetSample: o.DatasetSample, MaxTokensCap: o.MaxTokensCap}
	if o.Images.IsSet() {
		w, h, _ := ParseImageSize(o.ImageSize)
		c.Images = workload.ImageSpec{Count: o.Images.Dist(), Width: w, Height: h, Format: o.ImageFormat}
	}
	if !openai.Generates(o.API) {
		c.IgnoreEOS = false
		c.Inputs = o.inputs()
		if o.API == openai.APIRerank {
			c.QueryTokens = cmp.Or(o.QueryTokens, DefaultQueryTokens)
		}
	}
	return c, c.Validate()
}

// DefaultImageSize is an image's size unless --image-size says otherwise.
const DefaultImageSize = "512x512"

// ParseImageSize reads "WxH" ("" = DefaultImageSize), each side 1..8192.
func ParseImageSize(s string) (w, h int, err error) {
	s = cmp.Or(s, DefaultImageSize)
	ws, hs, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		w, err = strconv.Atoi(ws)
		if err == nil {
			h, err = strconv.Atoi(hs)
		}
	}
	if !ok || err != nil || w < 1 || h < 1 || w > workload.MaxImageSide || h > workload.MaxImageSide {
		return 0, 0, fmt.Errorf("must be WIDTHxHEIGHT in pixels, each 1..%d, e.g. 1024x768; got %q", workload.MaxImageSide, s)
	}
	return w, h, nil
}

// DefaultQueryTokens is a rerank query's length unless --query-tokens
// says otherwise: a question, not a document.
const DefaultQueryTokens = 32

// inputs is the distribution of texts per request of an embeddings or
// rerank run: --inputs, or 1 text to embed, 8 documents to rerank.
func (o *Options) inputs() workload.Dist {
	switch {
	case o.Inputs.IsSet():
		return o.Inputs.Dist()
	case o.API == openai.APIRerank:
		return workload.Fixed(8)
	}
	return workload.Fixed(1)
}

// inputsUpper is the most texts --inputs can draw.
func (o *Options) inputsUpper() int {
	d := o.Inputs.Dist()
	return d.Upper()
}

// WorkloadPreview is what `surge workload inspect` and --dry-run summarise:
// WorkloadConfig with the dataset read, and the sessions' configuration
// (nil without --sessions).
func (o *Options) WorkloadPreview() (workload.Config, *workload.SessionConfig, error) {
	wcfg, err := o.WorkloadConfig()
	if err != nil {
		return wcfg, nil, err
	}
	if wcfg.Dataset, err = o.LoadDataset(); err != nil {
		return wcfg, nil, err
	}
	if !o.Sessions {
		return wcfg, nil, nil
	}
	sc := o.SessionConfig()
	return wcfg, &sc, nil
}

// SessionConfig is the sessions' workload configuration.
func (o *Options) SessionConfig() workload.SessionConfig { return o.SessionOpts.config() }

func (p *SessionOpts) config() workload.SessionConfig {
	return workload.SessionConfig{Turns: p.SessionTurns, Think: p.ThinkTime, TurnTokens: p.TurnTokens, Fanout: p.Fanout}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Deadlines are the per-request deadlines that decide goodput.
func (o *Judging) Deadlines() analyze.Deadlines {
	return analyze.Deadlines{TTFT: o.TTFTDeadline, E2E: o.E2EDeadline, TPOT: o.TPOTDeadline, Token: o.TokenDeadline}
}

// SLO is the service-level objective runs are judged by.
func (o *Judging) SLO() judge.SLO {
	return judge.SLO{TTFTP95: o.SLOTTFTP95, E2EP99: o.SLOE2EP99, GoodputRatio: o.SLOGoodput}
}
