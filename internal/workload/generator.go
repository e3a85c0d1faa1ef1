package workload

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/surge-bench/surge/internal/schedule"
)

// BytesPerToken is surge's token estimate: one token per 4 bytes of
// English-like text.
const BytesPerToken = 4

// EstimateTokens is surge's estimate of the tokens in s: ⌈len(s)/4⌉, with
// len in bytes. Servers report the true count; this only sizes prompts.
func EstimateTokens(s string) int {
	return (len(s) + BytesPerToken - 1) / BytesPerToken
}

// Sizing turns an intended prompt length in tokens into a length in bytes
// of surge's synthetic text, for a target whose tokenizer counts
//
//	tokens(prompt) ≈ Overhead + TokensPerByte · bytes(prompt)
//
// (package calibrate measures both on the target). The zero Sizing is
// surge's own estimate: 1/BytesPerToken tokens per byte, no overhead.
type Sizing struct {
	TokensPerByte float64 // the target's tokens per byte of synthetic text; 0 = 1/BytesPerToken
	Overhead      float64 // tokens the target adds to every prompt (chat template, BOS), and the nonce's excess
}

// Bytes is the prompt length in bytes for tokens intended tokens:
//
//	bytes = round((tokens − Overhead) / TokensPerByte), at least 1
//
// With the zero Sizing that is exactly BytesPerToken·tokens.
func (s Sizing) Bytes(tokens int) int {
	if s.TokensPerByte <= 0 {
		return max(tokens*BytesPerToken, 1)
	}
	b := math.Round((float64(tokens) - s.Overhead) / s.TokensPerByte)
	if !(b >= 1) {
		return 1
	}
	return int(min(b, float64(MaxPromptTokens)*16))
}

// ProfileReplay labels requests whose prompt and output lengths both came
// from a replayed trace.
const ProfileReplay = "replay"

// bodyShift bounds the pseudo-random start of a unique prompt's body inside
// the corpus, in bytes.
const bodyShift = 64 << 10

// Config configures a Generator. The zero value of every field but Profile
// is a sensible default.
type Config struct {
	Profile Profile // length distributions and max_tokens cap
	Seed    int64   // requests are a function of (Seed, Salt, arrival) only
	// Salt is mixed into the nonce only. Runs that reuse a seed against the
	// same server should use different salts (e.g. one per run), or the
	// server's prefix cache, which outlives a run, would see repeated
	// prompts.
	Salt uint64
	// NoNonce drops the per-request nonce and starts every body at the
	// corpus start, so that all prompts share their prefixes: the best case
	// for prefix caching, for testing it. By default prompts are unique.
	NoNonce bool
	// IgnoreEOS asks the server to generate exactly MaxTokens tokens. vLLM
	// and surge's simulator honour it (a vLLM extension); other servers may
	// ignore it, so output lengths come from the server's usage.
	IgnoreEOS bool
	// Sizing sizes prompts for the target's tokenizer (the zero value:
	// surge's 4-bytes-per-token estimate).
	Sizing Sizing
}

// Validate checks the configuration (the profile).
func (c *Config) Validate() error { return c.Profile.Validate() }

// Generator turns scheduled arrivals into Requests. It is deterministic:
// the request for an arrival depends only on the Config and the arrival
// (Seq and replayed token counts), not on call order. A Generator is not
// safe for concurrent use; use one per goroutine (generators with the same
// Config produce the same requests; they share the prompt corpus, so each
// costs little memory).
type Generator struct {
	cfg   Config
	seed1 uint64 // per-request stream seeds, derived from Seed
	nonce uint64 // derived from Seed and Salt
	pcg   rand.PCG
	rng   *rand.Rand
	text  []byte // a snapshot of the shared corpus text
}

// New returns a Generator for cfg.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:   cfg,
		seed1: splitmix64(uint64(cfg.Seed) ^ 0x776f726b6c6f6164), // "workload"
		nonce: splitmix64(splitmix64(uint64(cfg.Seed)) ^ cfg.Salt),
	}
	g.rng = rand.New(&g.pcg)
	g.text = corpusText(cfg.Sizing.Bytes(cfg.Profile.Prompt.Upper()) + bodyShift + 64)
	return g, nil
}

// Generate returns the request for arrival a:
//
//	prompt tokens T = a.PromptTokens if > 0, else a draw from Profile.Prompt
//	output tokens O = a.OutputTokens if > 0, else a draw from Profile.Output
//	MaxTokens       = min(O, Profile.MaxTokens)
//	Prompt          = text of Sizing.Bytes(T) bytes (see the package doc);
//	                  with the zero Sizing 4·T bytes, so that
//	                  EstimateTokens(Prompt) = T
//	PromptTokens    = T, the intended length
//
// T is clamped to MaxPromptTokens. Profile is the profile's name, or
// "replay" when both lengths came from the arrival.
func (g *Generator) Generate(a schedule.Arrival) Request {
	prompt, output, shift := g.draw(a)
	profile := g.cfg.Profile.Name
	if a.PromptTokens > 0 && a.OutputTokens > 0 {
		profile = ProfileReplay
	}
	return Request{
		Seq:          a.Seq,
		Profile:      profile,
		Prompt:       g.prompt(a.Seq, g.cfg.Sizing.Bytes(prompt), shift),
		PromptTokens: prompt,
		MaxTokens:    min(output, g.cfg.Profile.MaxTokens),
		IgnoreEOS:    g.cfg.IgnoreEOS,
	}
}

// IntendedPromptTokens is the intended prompt length T of arrival a, as
// Generate would draw it, without building the prompt.
func (g *Generator) IntendedPromptTokens(a schedule.Arrival) int {
	prompt, _, _ := g.draw(a)
	return prompt
}

// draw makes the per-request draws of arrival a: the prompt and output
// lengths in tokens and the body's start in the corpus.
func (g *Generator) draw(a schedule.Arrival) (prompt, output, shift int) {
	g.pcg.Seed(g.seed1, splitmix64(uint64(a.Seq)))
	// Both draws always happen, so a replayed length never shifts the other.
	prompt = g.cfg.Profile.Prompt.Sample(g.rng)
	output = g.cfg.Profile.Output.Sample(g.rng)
	shift = g.rng.IntN(bodyShift)
	if a.PromptTokens > 0 {
		prompt = min(a.PromptTokens, MaxPromptTokens)
	}
	if a.OutputTokens > 0 {
		output = a.OutputTokens
	}
	return prompt, output, shift
}

// prompt builds the text of one prompt of n bytes (at least the nonce).
// The nonce and the body are copied once, straight into the string's own
// memory (a strings.Builder grown to the final size): one allocation, one
// copy.
func (g *Generator) prompt(seq int64, n, shift int) string {
	var nonce [48]byte
	head := nonce[:0]
	start := 0
	if !g.cfg.NoNonce {
		head = appendNonce(head, seq, splitmix64(g.nonce^uint64(seq)))
		start = wordStart(g.text, shift)
	}
	return g.body(head, n, start)
}

// body builds head followed by corpus text from start, n bytes in all (at
// least head).
func (g *Generator) body(head []byte, n, start int) string {
	var sb strings.Builder
	sb.Grow(max(n, len(head)))
	sb.Write(head)
	if need := n - len(head); need > 0 {
		if len(g.text) <= start+need {
			g.text = corpusText(start + need + 1)
		}
		// Never cut a multi-byte character: end the body early at a rune
		// start and pad with spaces to keep the exact length.
		cut := need
		for cut > 0 && !utf8.RuneStart(g.text[start+cut]) {
			cut--
		}
		sb.Write(g.text[start : start+cut])
		for range need - cut {
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

// Text returns n bytes of surge's synthetic text (no nonce), starting at a
// word chosen by key: the same key, the same text. Sessions use it for
// later user messages and for the assistant answers they replay.
func (g *Generator) Text(key uint64, n int) string {
	g.pcg.Seed(g.seed1^0x73657373696f6e, splitmix64(key)) // "session"
	return g.body(nil, max(n, 1), wordStart(g.text, g.rng.IntN(bodyShift)))
}

// Clone returns a Generator with the same configuration and its own random
// state (cheap: the corpus is shared), for use on another goroutine.
func (g *Generator) Clone() *Generator {
	c := &Generator{cfg: g.cfg, seed1: g.seed1, nonce: g.nonce, text: g.text}
	c.rng = rand.New(&c.pcg)
	return c
}

// appendNonce appends "[req <seq>-<8 hex digits>] ".
func appendNonce(b []byte, seq int64, h uint64) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, "[req "...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '-')
	for i := 28; i >= 0; i -= 4 {
		b = append(b, hexDigits[(h>>i)&0xf])
	}
	return append(b, "] "...)
}

// wordStart returns the first index ≥ i that starts a word of text (just
// after a space), or 0 if there is none before the end.
func wordStart(text []byte, i int) int {
	for ; i > 0 && i < len(text); i++ {
		if text[i-1] == ' ' && text[i] != ' ' {
			return i
		}
	}
	return 0
}

// splitmix64 is the SplitMix64 finaliser (Steele, Lea and Flood): a
// bijective mix that spreads nearby seeds across the 64-bit space.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
