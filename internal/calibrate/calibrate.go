// Package calibrate measures how the target's tokenizer counts surge's
// synthetic prompt text, so that prompts are sized in the target's own
// tokens rather than by surge's 4-bytes-per-token estimate (a real
// llama.cpp tokenizer made 64-token prompts 85–145 tokens).
//
// # Model
//
// For a prompt of b bytes of synthetic text (nonce included) the target
// counts
//
//	tokens(b) = c + d·b
//
// with d the tokens per byte of the text and c a fixed overhead: the chat
// template (role markers, the assistant turn's header), a BOS token, and
// the excess of the nonce over the text's average density. d and c are
// fitted by least squares to k ≥ 2 measured points (bᵢ, nᵢ):
//
//	d = Σwᵢ(bᵢ − b̄)(nᵢ − n̄) / Σwᵢ(bᵢ − b̄)²,   c = n̄ − d·b̄,   wᵢ = 1/bᵢ
//
// (b̄, n̄ the wᵢ-weighted means: short prompts weigh as much as long ones)
//
// and a prompt for T tokens is then round((T − c)/d) bytes
// (workload.Sizing). Points are taken at 16, 32, 64, 128, 256 and 1024
// estimated tokens, each on six stretches of the text (its density varies
// along it), for /tokenize, and at 16,
// 64 and 256 for probes (real requests, which must fit the model's context
// even under a dense tokenizer).
//
// # Methods
//
//   - vLLM /tokenize: POST {root}/tokenize with {"model","messages"} (chat;
//     vLLM applies the chat template with the generation prompt) or
//     {"model","prompt"} (completions) → {"count","max_model_len","tokens"}:
//     the count is what usage.prompt_tokens will say. Exact, no engine work.
//   - llama.cpp /tokenize: POST {root}/tokenize with {"content",
//     "add_special": true} → {"tokens": [...]}. llama-server tokenizes the
//     text alone, without the chat template, so d and c come from /tokenize
//     and the template's share from one probe request: c += n_probe − n_tok,
//     the probe's usage minus /tokenize's count of the same text.
//   - probes: requests with max_tokens 1, two at each of three sizes;
//     usage.prompt_tokens of each is a point. Works against any server that reports usage.
//   - model (virtual time): the engine model's own count, fitted the same way.
//
// Auto tries vLLM's /tokenize, then llama.cpp's, then probes. A /tokenize
// that errors falls back to probes, and the Result says so (Fallback).
// When nothing works the Result carries a Warning and the zero Sizing
// (surge's estimate): the run goes on.
//
// Nothing here writes a prompt or a response anywhere: errors name the
// endpoint, the HTTP status or the outcome class only.
package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/workload"
)

// The methods a user can ask for.
const (
	Auto     = "auto"     // /tokenize where the server has it, else probes
	Tokenize = "tokenize" // /tokenize (vLLM or llama.cpp); probes if it errors
	Probe    = "probe"    // probe requests only
	Off      = "off"      // no calibration: surge's 4-bytes-per-token estimate
)

// Methods lists the methods a user can ask for.
var Methods = []string{Auto, Tokenize, Probe, Off}

// Valid reports whether m is one of Methods.
func Valid(m string) bool {
	for _, x := range Methods {
		if m == x {
			return true
		}
	}
	return false
}

// What Result.Method says was used.
const (
	UsedVLLM     = "vllm-tokenize"           // vLLM's /tokenize, template included
	UsedLlamaCpp = "llamacpp-tokenize+probe" // llama.cpp's /tokenize for the slope, one probe for the overhead
	UsedProbe    = "probe"                   // usage.prompt_tokens of probe requests
	UsedModel    = "model"                   // the engine model's own count (virtual time)
	UsedOff      = "off"                     // not calibrated, by request
	UsedNone     = "failed"                  // calibration failed: surge's estimate
)

// Point is one measurement: a prompt of Bytes bytes counted as Tokens.
type Point struct {
	Bytes  int `json:"bytes"`
	Tokens int `json:"tokens"`
}

// Result is a calibration: the method used, the fitted density and
// overhead, the points they came from, and what went wrong on the way.
type Result struct {
	Method         string  `json:"method"`
	TokensPerByte  float64 `json:"tokens_per_byte"` // 0 = not calibrated (surge's 0.25)
	OverheadTokens float64 `json:"overhead_tokens"`
	Points         []Point `json:"points,omitempty"`
	Probes         int     `json:"probe_requests"`     // requests sent to the model's completion endpoint
	Fallback       string  `json:"fallback,omitempty"` // why /tokenize was not used although tried
	Warning        string  `json:"warning,omitempty"`  // why calibration failed
	// ContextTokens is the model's context length (prompt + output
	// tokens of one request) as the target reported it — vLLM's
	// /tokenize answers max_model_len — or the engine model's in
	// virtual time; 0 when unknown.
	ContextTokens int `json:"context_tokens,omitempty"`
}

// Sizing is the workload sizing of the result (the zero Sizing, surge's
// estimate, when it is not calibrated).
func (r Result) Sizing() workload.Sizing {
	return workload.Sizing{TokensPerByte: r.TokensPerByte, Overhead: r.OverheadTokens}
}

// Calibrated reports whether the result measured the target.
func (r Result) Calibrated() bool { return r.TokensPerByte > 0 }

// Describe is the result in one line for the terminal and the reports.
func (r Result) Describe() string {
	var how string
	switch r.Method {
	case UsedVLLM:
		how = "vLLM /tokenize"
	case UsedLlamaCpp:
		how = "llama.cpp /tokenize + 1 probe request"
	case UsedProbe:
		how = fmt.Sprintf("%d probe requests (usage.prompt_tokens)", r.Probes)
	case UsedModel:
		how = "the engine model's tokenizer (virtual time)"
	case UsedOff:
		return "not calibrated (--prompt-calibration off): surge's estimate of 4 bytes per token"
	default:
		return "not calibrated: surge's estimate of 4 bytes per token"
	}
	return fmt.Sprintf("%s: %.4g tokens per byte (%.3g bytes per token) + %.1f tokens per prompt", how, r.TokensPerByte, 1/r.TokensPerByte, r.OverheadTokens)
}

// ErrNoAnswer is a probe's error when the target sent no response at all
// within the probe's wait: probing stops there (a silent target would
// only repeat it).
var ErrNoAnswer = errors.New("no answer")

// Counter counts the target's prompt tokens of one prompt text (a probe
// request's usage.prompt_tokens, or a model's count).
type Counter func(ctx context.Context, text string) (int, error)

// Texts returns synthetic prompt text for i-th measurement of about
// 4·tokens bytes (the workload's own text, nonce included).
type Texts func(i, tokens int) string

// Config is what a calibration needs.
type Config struct {
	Method string       // Auto, Tokenize, Probe or Off ("" = Auto)
	Root   string       // the server's root URL (the base URL without /v1); "" = no /tokenize to try
	Model  string       // model name sent to /tokenize
	Chat   bool         // prompts go to the chat API (count the chat template)
	Client *http.Client // for /tokenize; nil = http.DefaultClient
	Header http.Header  // sent with /tokenize (authorization, user headers)
	Probe  Counter      // sends one max_tokens 1 request; nil = no probes
	Text   Texts        // the synthetic text to measure
	// Timeout bounds each /tokenize call (0 = 10 s).
	Timeout time.Duration
}

// Sizes of the measurements, in surge's estimated tokens (4 bytes each).
// /tokenize costs no engine work, so each size is measured on
// TokenizeTexts different stretches of the text (its density varies along
// the corpus); probes are real requests, ProbeTexts per size.
var (
	TokenizeSizes = []int{16, 32, 64, 128, 256, 1024}
	ProbeSizes    = []int{16, 32, 64, 256}
)

// ProbeTexts is how many texts are measured per probe size.
const ProbeTexts = 3

// TokenizeTexts is how many texts are measured per /tokenize size.
const TokenizeTexts = 6

// tokenizePoints is the (text index, size) of every /tokenize measurement.
func tokenizePoints() (idx, sizes []int) {
	for k := range TokenizeTexts {
		for j, n := range TokenizeSizes {
			idx = append(idx, k*len(TokenizeSizes)+j)
			sizes = append(sizes, n)
		}
	}
	return idx, sizes
}

// Run calibrates against the target as cfg says. It never fails: a
// calibration that cannot be made is a Result with a Warning and surge's
// estimate.
func Run(ctx context.Context, cfg Config) Result {
	method := cfg.Method
	if method == "" {
		method = Auto
	}
	if method == Off {
		return Result{Method: UsedOff}
	}
	var fallback string
	if method != Probe {
		r, err := tokenize(ctx, cfg)
		if err == nil {
			return r
		}
		fallback = err.Error()
	}
	r, err := probe(ctx, cfg)
	if fallback != "" {
		r.Fallback = fallback + "; measured with probe requests instead"
	}
	if err != nil {
		why := err.Error()
		if fallback != "" {
			why = fallback + "; " + why
		}
		return Result{Method: UsedNone, Probes: r.Probes, Fallback: r.Fallback,
			Warning: "prompt calibration failed (" + why + "): prompts are sized by surge's estimate of 4 bytes per token, and the server's counts may differ"}
	}
	return r
}

// Model calibrates against a counting function in virtual time (the engine
// model's tokenizer), at the /tokenize sizes.
func Model(count func(text string) int, text Texts) Result {
	var pts []Point
	idx, sizes := tokenizePoints()
	for k, n := range sizes {
		t := text(idx[k], n)
		pts = append(pts, Point{Bytes: len(t), Tokens: count(t)})
	}
	d, c, err := Fit(pts)
	if err != nil {
		return Result{Method: UsedNone, Points: pts, Warning: "prompt calibration failed (" + err.Error() + ")"}
	}
	return Result{Method: UsedModel, TokensPerByte: d, OverheadTokens: c, Points: pts}
}

// Fit fits tokens = c + d·bytes to the points by weighted least squares
// (see the package doc; weights 1/bytes, so that short prompts, whose
// count the overhead dominates, are fitted as well as long ones) and
// returns d (tokens per byte) and c (overhead, tokens). It needs two
// distinct sizes and a positive slope.
func Fit(pts []Point) (d, c float64, err error) {
	if len(pts) < 2 {
		return 0, 0, fmt.Errorf("%d measurement(s), need 2", len(pts))
	}
	var sw, mb, mn float64
	for _, p := range pts {
		w := 1 / float64(max(p.Bytes, 1))
		sw += w
		mb += w * float64(p.Bytes)
		mn += w * float64(p.Tokens)
	}
	mb /= sw
	mn /= sw
	var sxy, sxx float64
	for _, p := range pts {
		w := 1 / float64(max(p.Bytes, 1))
		x := float64(p.Bytes) - mb
		sxy += w * x * (float64(p.Tokens) - mn)
		sxx += w * x * x
	}
	if sxx <= 1e-12*sw*mb*mb {
		return 0, 0, errors.New("all measurements of one size")
	}
	d = sxy / sxx
	if !(d > 1e-9) || math.IsInf(d, 0) {
		return 0, 0, fmt.Errorf("token count does not grow with the prompt (slope %.3g tokens per byte)", d)
	}
	return d, mn - d*mb, nil
}

// probe measures with probe requests.
func probe(ctx context.Context, cfg Config) (Result, error) {
	r := Result{Method: UsedProbe}
	if cfg.Probe == nil {
		return r, errors.New("no probe requests possible")
	}
	var errs []string // distinct failures, for the warning
	for i := range ProbeTexts * len(ProbeSizes) {
		t := cfg.Text(i, ProbeSizes[i%len(ProbeSizes)])
		r.Probes++
		got, err := cfg.Probe(ctx, t)
		if err != nil {
			errs = append(errs, err.Error())
			if ctx.Err() != nil || errors.Is(err, ErrNoAnswer) {
				break
			}
			continue
		}
		r.Points = append(r.Points, Point{Bytes: len(t), Tokens: got})
	}
	d, c, err := Fit(r.Points)
	if err != nil {
		if len(errs) > 0 {
			return r, fmt.Errorf("probe requests: %s", firstDistinct(errs))
		}
		return r, fmt.Errorf("probe requests: %w", err)
	}
	r.TokensPerByte, r.OverheadTokens = d, c
	return r, nil
}

// firstDistinct joins the distinct messages, in order.
func firstDistinct(msgs []string) string {
	var out []string
	for _, m := range msgs {
		dup := false
		for _, o := range out {
			dup = dup || o == m
		}
		if !dup {
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}

// errNotVLLM marks a /tokenize that answered, but not in vLLM's shape.
var errNotVLLM = errors.New("not vLLM's /tokenize")

// tokenize measures with the server's /tokenize: vLLM's shape first, then
// llama.cpp's.
func tokenize(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Root == "" {
		return Result{}, errors.New("no /tokenize to try")
	}
	r, verr := tokenizeVLLM(ctx, cfg)
	if verr == nil {
		return r, nil
	}
	if errors.Is(verr, ErrNoAnswer) {
		return Result{}, verr // the same server would not answer llama.cpp's shape either
	}
	r, lerr := tokenizeLlamaCpp(ctx, cfg)
	if lerr == nil {
		return r, nil
	}
	if errors.Is(verr, errNotVLLM) {
		return Result{}, lerr
	}
	return Result{}, verr
}

func tokenizeVLLM(ctx context.Context, cfg Config) (Result, error) {
	r := Result{Method: UsedVLLM}
	idx, sizes := tokenizePoints()
	for k, n := range sizes {
		t := cfg.Text(idx[k], n)
		body := map[string]any{"model": cfg.Model}
		if cfg.Chat {
			body["messages"] = []map[string]string{{"role": "user", "content": t}}
		} else {
			body["prompt"] = t
		}
		var resp struct {
			Count       *int  `json:"count"`
			Tokens      []int `json:"tokens"`
			MaxModelLen int   `json:"max_model_len"`
		}
		if err := post(ctx, cfg, body, &resp); err != nil {
			return r, err
		}
		if resp.Count == nil {
			return r, errNotVLLM
		}
		r.ContextTokens = max(resp.MaxModelLen, 0)
		r.Points = append(r.Points, Point{Bytes: len(t), Tokens: *resp.Count})
	}
	d, c, err := Fit(r.Points)
	if err != nil {
		return r, err
	}
	r.TokensPerByte, r.OverheadTokens = d, c
	return r, nil
}

func tokenizeLlamaCpp(ctx context.Context, cfg Config) (Result, error) {
	r := Result{Method: UsedLlamaCpp}
	idx, sizes := tokenizePoints()
	for k, n := range sizes {
		t := cfg.Text(idx[k], n)
		var resp struct {
			Tokens *[]json.RawMessage `json:"tokens"` // ids, or objects with pieces
		}
		if err := post(ctx, cfg, map[string]any{"content": t, "add_special": true}, &resp); err != nil {
			return r, err
		}
		if resp.Tokens == nil {
			return r, errors.New("answer without \"tokens\"")
		}
		r.Points = append(r.Points, Point{Bytes: len(t), Tokens: len(*resp.Tokens)})
	}
	d, c, err := Fit(r.Points)
	if err != nil {
		return r, err
	}
	r.TokensPerByte, r.OverheadTokens = d, c
	// llama-server's /tokenize leaves the chat template out: one real
	// request measures what the template adds — the difference between
	// its usage and /tokenize's count of the same text, which does not
	// depend on how densely that text happens to tokenize.
	if cfg.Probe != nil {
		t := cfg.Text(len(idx), ProbeSizes[1])
		var resp struct {
			Tokens *[]json.RawMessage `json:"tokens"`
		}
		if err := post(ctx, cfg, map[string]any{"content": t, "add_special": true}, &resp); err != nil || resp.Tokens == nil {
			return r, errors.New("POST /tokenize: failed on a second call")
		}
		r.Probes++
		n, err := cfg.Probe(ctx, t)
		if err != nil {
			r.Fallback = "the probe request for the chat template's overhead failed (" + err.Error() + "): overhead from /tokenize alone"
			return r, nil
		}
		r.OverheadTokens = c + float64(n-len(*resp.Tokens))
	}
	return r, nil
}

// maxAnswer bounds a /tokenize answer read (a 1024-token prompt's ids).
const maxAnswer = 4 << 20

// post sends one /tokenize request and decodes its JSON answer into out.
// Errors carry the status only, never the answer's text.
func post(ctx context.Context, cfg Config, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(cfg.Root, "/")+"/tokenize", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("POST /tokenize: %v", err)
	}
	for k, v := range cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	hc := cfg.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("POST /tokenize: %w within %s", ErrNoAnswer, timeout)
		}
		return errors.New("POST /tokenize: connection failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return fmt.Errorf("POST /tokenize: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(out); err != nil {
		return errors.New("POST /tokenize: the answer is not the JSON expected")
	}
	return nil
}
