package workload

import (
	"fmt"
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

// Tokens is the inverse of Bytes: the intended tokens of a text of n
// bytes, as the target counts it,
//
//	tokens = round(Overhead + TokensPerByte · n), at least 1
//
// With the zero Sizing that is surge's estimate ⌈n/BytesPerToken⌉. It
// sizes a dataset's real prompts (Request.PromptTokens).
func (s Sizing) Tokens(n int) int {
	if s.TokensPerByte <= 0 {
		return max((n+BytesPerToken-1)/BytesPerToken, 1)
	}
	t := math.Round(s.Overhead + s.TokensPerByte*float64(n))
	if !(t >= 1) {
		return 1
	}
	return int(min(t, float64(MaxPromptTokens)))
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
	// Mix, when set, replaces Profile: each arrival gets one of its
	// profiles, chosen with probability weight / Σweights from (Seed, Seq)
	// alone (see the package doc).
	Mix  []Weighted
	Seed int64 // requests are a function of (Seed, Salt, arrival) only
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
	// SharedPrefix, when > 0, starts every prompt with the same text of
	// SharedPrefix tokens (a common system prompt, sized by Sizing), before
	// the nonce: the prefix a server's prefix cache can reuse. The prompt
	// keeps its drawn length; a draw too short to hold the prefix and
	// MinUniqueTokens more is lengthened (see Generate).
	SharedPrefix int
	// Dataset, when set, supplies every request's prompt (see
	// Generator.Generate); the profile then gives only the output lengths.
	Dataset *Dataset
	// DatasetSample is the order in which the dataset's rows are taken:
	// shuffle ("" too), random or sequential (Dataset.Index).
	DatasetSample string
	// MaxTokensCap caps every request's max_tokens, whether it came from
	// a dataset row or the profile's draw (0 = no cap beyond the
	// profile's).
	MaxTokensCap int
	// Inputs, when set (a Kind), makes every request one that reads texts
	// and generates nothing (embeddings, rerank): a draw of Inputs is the
	// number of texts, each of its own draw of the profile's prompt
	// length (the first is the arrival's), and max_tokens is 0.
	Inputs Dist
	// QueryTokens, with Inputs, makes the request's Prompt a query of this
	// many tokens that the texts (documents) are scored against (rerank).
	QueryTokens int
	// Images, when its Count is set, puts images beside every request's
	// text: a draw of Count per request, each one of the run's images of
	// that size and format (generated once from the seed).
	Images ImageSpec
}

// MaxInputs bounds the texts of one embeddings or rerank request.
const MaxInputs = 4096

// MinUniqueTokens is the least a prompt holds after a shared prefix (the
// nonce and a few words), in tokens of text.
const MinUniqueTokens = 16

// Validate checks the configuration: the shared prefix, the profile, or
// the mix's profiles (unique names) and weights (finite, ≥ 0, summing to
// > 0), the dataset's sampling order and the max_tokens cap.
func (c *Config) Validate() error {
	if c.SharedPrefix < 0 || c.SharedPrefix > MaxPromptTokens-MinUniqueTokens {
		return fmt.Errorf("shared prefix: must be 0..%d tokens, got %d", MaxPromptTokens-MinUniqueTokens, c.SharedPrefix)
	}
	switch c.DatasetSample {
	case "", SampleShuffle, SampleRandom, SampleSequential:
	default:
		return fmt.Errorf("workload: dataset sample: unknown %q (want %s)", c.DatasetSample, strings.Join(DatasetSamples, ", "))
	}
	if c.Dataset != nil && InputsFormat(c.Dataset.Format) && c.Inputs.Kind == "" {
		return fmt.Errorf("workload: dataset %s: a %s file holds the texts of embeddings or rerank requests, not prompts", c.Dataset.Path, c.Dataset.Format)
	}
	if c.Dataset != nil && c.Dataset.Len() == 0 {
		return fmt.Errorf("workload: dataset %s: no rows", c.Dataset.Path)
	}
	if c.MaxTokensCap < 0 || c.MaxTokensCap > MaxPromptTokens {
		return fmt.Errorf("workload: max_tokens_cap: must be in [0, %d], got %d", MaxPromptTokens, c.MaxTokensCap)
	}
	if c.Inputs.Kind != "" {
		if err := c.Inputs.Validate(); err != nil {
			return fmt.Errorf("workload: inputs: %w", err)
		}
		if u := c.Inputs.Upper(); u > MaxInputs {
			return fmt.Errorf("workload: inputs: at most %d texts a request, got up to %d", MaxInputs, u)
		}
		if c.Dataset != nil && !InputsFormat(c.Dataset.Format) {
			return fmt.Errorf("workload: dataset %s: a %s file holds prompts; embeddings and rerank read %s or %s", c.Dataset.Path, c.Dataset.Format, FormatTextsJSONL, FormatRerankJSONL)
		}
	}
	if err := c.Images.Validate(); err != nil {
		return err
	}
	if c.Images.Count.Kind != "" && c.Inputs.Kind != "" {
		return fmt.Errorf("workload: images: embeddings and rerank requests carry texts only")
	}
	if c.QueryTokens < 0 || c.QueryTokens > MaxPromptTokens {
		return fmt.Errorf("workload: query tokens: must be in [0, %d], got %d", MaxPromptTokens, c.QueryTokens)
	}
	if len(c.Mix) == 0 {
		return c.Profile.Validate()
	}
	m := make(Mix, len(c.Mix))
	for i := range c.Mix {
		if err := c.Mix[i].Profile.Validate(); err != nil {
			return err
		}
		m[i] = MixPart{Name: c.Mix[i].Profile.Name, Weight: c.Mix[i].Weight}
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("workload: mix: %w", err)
	}
	return nil
}

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
	text  []byte    // a snapshot of the shared corpus text
	mix   mixPicker // the profiles of Config.Mix; none without a mix
	// prefix is the shared prefix's text ("" without one); minPrompt the
	// shortest prompt that holds it and MinUniqueTokens more.
	prefix    string
	minPrompt int
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
	upper := 0
	if len(cfg.Mix) > 0 {
		g.mix = newMixPicker(cfg.Seed, cfg.Mix)
		for i := range g.mix.profiles {
			upper = max(upper, g.mix.profiles[i].Prompt.Upper())
		}
	} else {
		upper = cfg.Profile.Prompt.Upper()
	}
	g.text = corpusText(cfg.Sizing.Bytes(upper) + bodyShift + 64)
	if p := cfg.SharedPrefix; p > 0 {
		g.prefix = prefixText(cfg.Sizing.TextBytes(p))
		g.minPrompt = p + MinUniqueTokens + int(math.Ceil(max(cfg.Sizing.Overhead, 0)))
	}
	return g, nil
}

// profile is arrival a's profile: Config.Profile, or the mix's choice
// for a.Seq.
func (g *Generator) profile(seq int64) *Profile {
	if len(g.mix.profiles) == 0 {
		return &g.cfg.Profile
	}
	return &g.mix.profiles[g.mix.pick(seq)]
}

// ProfileName is the Profile label Generate gives arrival a, without
// drawing anything: "replay" when a carries both lengths, else the
// profile's name (the mix's choice for a.Seq). It reads only what New set,
// so it is safe for concurrent use, unlike Generate.
func (g *Generator) ProfileName(a *schedule.Arrival) string {
	if a.PromptTokens > 0 && a.OutputTokens > 0 {
		return ProfileReplay
	}
	return g.profile(a.Seq).Name
}

// prefixText is the shared prefix of n bytes: the corpus from its start,
// cut at a character boundary, padded with spaces and ended by a newline,
// so that a tokenizer's last prefix token never merges with the nonce.
func prefixText(n int) string {
	if n <= 0 {
		return ""
	}
	text := corpusText(n + 1)
	cut := n - 1
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.Write(text[:cut])
	for range n - 1 - cut {
		sb.WriteByte(' ')
	}
	sb.WriteByte('\n')
	return sb.String()
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
// T is clamped to MaxPromptTokens. Profile is the profile's name (with a
// mix, the profile chosen for a.Seq, whose distributions and cap apply),
// or "replay" when both lengths came from the arrival.
//
// With a shared prefix of P tokens the prompt is the prefix (the same text
// for every request), then the nonce and the body, P + the rest = T in
// all; PrefixTokens = P. A draw T < P + MinUniqueTokens + ⌈Overhead⌉ is
// lengthened to that (IntendedPrompt says when), so that every prompt
// still ends in text of its own.
//
// An arrival with prompt blocks (a Mooncake trace's hash ids) gets a
// prompt built from them instead, and PrefixTokens (see blocks.go); a
// shared prefix does not apply to it.
//
// With a Dataset the prompt is the row's (see fromDataset). MaxTokensCap,
// when set, caps MaxTokens.
func (g *Generator) Generate(a schedule.Arrival) Request {
	if g.cfg.Dataset != nil {
		return g.fromDataset(a)
	}
	p := g.profile(a.Seq)
	prompt, output, shift, _ := g.draw(p, a)
	label := p.Name
	if a.PromptTokens > 0 && a.OutputTokens > 0 {
		label = ProfileReplay
	}
	if g.cfg.Inputs.Kind != "" {
		return g.inputsRequest(a, p, label, prompt, shift)
	}
	r := Request{
		Seq:          a.Seq,
		Profile:      label,
		PromptTokens: prompt,
		MaxTokens:    g.capped(min(output, p.MaxTokens)),
		IgnoreEOS:    g.cfg.IgnoreEOS,
		PrefixTokens: g.cfg.SharedPrefix,
	}
	if a.Blocks != nil { // a trace's shared blocks (blocks.go)
		r.Prompt, r.PrefixTokens = g.blockPrompt(a.Seq, a.Blocks, prompt, shift)
	} else {
		r.Prompt = g.prompt(a.Seq, g.cfg.Sizing.Bytes(prompt), shift)
	}
	g.addImages(&r)
	return r
}

// addImages draws the number of images of r and picks each from the
// run's pool. It follows draw, so its draws continue the arrival's stream.
func (g *Generator) addImages(r *Request) {
	spec := &g.cfg.Images
	if spec.Count.Kind == "" {
		return
	}
	k := max(spec.Count.Sample(g.rng), 0)
	if k == 0 {
		return
	}
	pool := sharedImages(spec, g.cfg.Seed)
	r.Images = make([]*Image, k)
	for i := range r.Images {
		r.Images[i] = &pool[g.rng.IntN(len(pool))]
	}
}

// inputsRequest is arrival a's embeddings or rerank request: its texts,
// each of its own length and body, after a query when QueryTokens is set.
// PromptTokens counts the query once per text, as a reranker reads each
// (query, document) pair. It follows draw, so its draws continue the
// arrival's stream.
func (g *Generator) inputsRequest(a schedule.Arrival, p *Profile, label string, prompt, shift int) Request {
	r := Request{Seq: a.Seq, Profile: label}
	if q := g.cfg.QueryTokens; q > 0 {
		r.Prompt = g.prompt(a.Seq, g.cfg.Sizing.Bytes(q), shift)
	}
	g.eachInput(p, prompt, shift, func(tokens, shift int) {
		r.Inputs = append(r.Inputs, g.prompt(a.Seq, g.cfg.Sizing.Bytes(tokens), shift))
		r.PromptTokens += g.cfg.QueryTokens + tokens
	})
	return r
}

// eachInput draws the number of texts of an inputs request and calls fn
// with each one's tokens and body shift: the first the arrival's own
// (prompt, shift), the others drawn from the profile's prompt lengths.
// The rng must be where draw left it.
func (g *Generator) eachInput(p *Profile, prompt, shift int, fn func(tokens, shift int)) {
	k := min(max(g.cfg.Inputs.Sample(g.rng), 1), MaxInputs)
	fn(prompt, shift)
	for range k - 1 {
		n := max(min(p.Prompt.Sample(g.rng), MaxPromptTokens), g.minPrompt, 1)
		fn(n, g.rng.IntN(bodyShift))
	}
}

// capped applies MaxTokensCap.
func (g *Generator) capped(n int) int {
	if c := g.cfg.MaxTokensCap; c > 0 {
		return min(n, c)
	}
	return n
}

// fromDataset returns the request for arrival a from the dataset row
// Dataset.Index(DatasetSample, Seed, a.Seq):
//
//	Messages     = the row's request messages (ShareGPT: the system turns
//	               before the first human turn, then it), the first user
//	               message prefixed with the nonce "[req <seq>-<8 hex>] "
//	               unless NoNonce; a row of one user message (prompts-jsonl)
//	               is sent as Prompt
//	Extra        = the row's tools, tool_choice, response_format
//	PromptTokens = Sizing.Tokens(bytes of all message contents, nonce included)
//	MaxTokens    = the row's max_tokens if it has one, else
//	               min(output draw, Profile.MaxTokens); then MaxTokensCap
//	DatasetRow   = the row's 1-based line (or conversation index)
//	Profile      = "dataset"
//
// A replayed arrival's output tokens replace the draw; its prompt tokens
// are ignored (the text is the row's). Building the request copies the
// first user message once (for the nonce) and the messages slice: two
// allocations (see BenchmarkGenerateDataset).
func (g *Generator) fromDataset(a schedule.Arrival) Request {
	d := g.cfg.Dataset
	p := g.profile(a.Seq)
	_, output, _, _ := g.draw(p, a)
	i := d.Index(g.cfg.DatasetSample, g.cfg.Seed, a.Seq)
	row := &d.rows[i]
	maxTok := min(output, p.MaxTokens)
	if row.maxTokens > 0 {
		maxTok = int(row.maxTokens)
	}
	req := Request{
		Seq:        a.Seq,
		Profile:    ProfileDataset,
		MaxTokens:  g.capped(maxTok),
		IgnoreEOS:  g.cfg.IgnoreEOS,
		DatasetRow: int(row.number),
	}
	if InputsFormat(d.Format) {
		return g.inputsFromDataset(req, row)
	}
	if row.extraN > 0 {
		req.Extra = d.extra[row.extra : row.extra+row.extraN : row.extra+row.extraN]
	}
	var nonce [48]byte
	head := nonce[:0]
	if !g.cfg.NoNonce {
		head = appendNonce(head, a.Seq, splitmix64(g.nonce^uint64(a.Seq)))
	}
	msgs := d.msgs[row.req : row.req+row.reqN]
	first := msgs[row.nonceAt].Content
	text := first
	if len(head) > 0 {
		var sb strings.Builder
		sb.Grow(len(head) + len(first))
		sb.Write(head)
		sb.WriteString(first)
		text = sb.String()
	}
	if len(msgs) == 1 && msgs[0].Role == RoleUser {
		req.Prompt = text
	} else {
		req.Messages = make([]Message, len(msgs))
		copy(req.Messages, msgs)
		req.Messages[row.nonceAt].Content = text
	}
	req.PromptTokens = g.cfg.Sizing.Tokens(int(row.bytes) + len(head))
	return req
}

// inputsFromDataset is the embeddings or rerank request of a texts or
// rerank row: its texts (documents) as Inputs, a query as Prompt; sent as
// written, without a nonce (no server caches embeddings by prefix).
// PromptTokens counts a query once per document, as a reranker reads
// each pair.
func (g *Generator) inputsFromDataset(req Request, row *datasetRow) Request {
	req.MaxTokens, req.IgnoreEOS = 0, false
	msgs := g.cfg.Dataset.msgs[row.req : row.req+row.reqN]
	req.Inputs = make([]string, 0, len(msgs))
	query := 0
	for _, m := range msgs {
		if m.Role == RoleQuery {
			req.Prompt, query = m.Content, len(m.Content)
			continue
		}
		req.Inputs = append(req.Inputs, m.Content)
	}
	docs := int(row.bytes) - query
	req.PromptTokens = g.cfg.Sizing.Tokens(docs + query*len(req.Inputs))
	return req
}

// Shape is the intended prompt tokens and the max_tokens Generate would
// give arrival a, without building the prompt (a budget reserves them
// before the request is sent). Like Generate, it is not safe for
// concurrent use.
func (g *Generator) Shape(a schedule.Arrival) (promptTokens, maxTokens int) {
	p := g.profile(a.Seq)
	prompt, output, shift, _ := g.draw(p, a)
	if g.cfg.Inputs.Kind != "" && g.cfg.Dataset == nil {
		total := 0
		g.eachInput(p, prompt, shift, func(tokens, _ int) { total += g.cfg.QueryTokens + tokens })
		return total, 0
	}
	maxTok := min(output, p.MaxTokens)
	if d := g.cfg.Dataset; d != nil {
		if row := &d.rows[d.Index(g.cfg.DatasetSample, g.cfg.Seed, a.Seq)]; row.maxTokens > 0 {
			maxTok = int(row.maxTokens)
		}
		prompt = g.IntendedPromptTokens(a)
		if InputsFormat(d.Format) {
			maxTok = 0
		}
	}
	return prompt, g.capped(maxTok)
}

// IntendedPromptTokens is the intended prompt length T of arrival a, as
// Generate would draw it (or size a dataset row), without building the
// prompt.
func (g *Generator) IntendedPromptTokens(a schedule.Arrival) int {
	if d := g.cfg.Dataset; d != nil {
		row := &d.rows[d.Index(g.cfg.DatasetSample, g.cfg.Seed, a.Seq)]
		if InputsFormat(d.Format) {
			return g.inputsFromDataset(Request{}, row).PromptTokens
		}
		n := 0
		if !g.cfg.NoNonce {
			var nonce [48]byte
			n = len(appendNonce(nonce[:0], a.Seq, 0))
		}
		return g.cfg.Sizing.Tokens(int(row.bytes) + n)
	}
	prompt, _ := g.IntendedPrompt(a)
	return prompt
}

// IntendedPrompt is the intended prompt length T of arrival a, as Generate
// would draw it, and whether the draw was lengthened to hold the shared
// prefix.
func (g *Generator) IntendedPrompt(a schedule.Arrival) (tokens int, lengthened bool) {
	prompt, _, _, lengthened := g.draw(g.profile(a.Seq), a)
	return prompt, lengthened
}

// draw makes the per-request draws of arrival a from profile p: the
// prompt and output lengths in tokens and the body's start in the corpus,
// and whether the prompt was lengthened to hold the shared prefix.
func (g *Generator) draw(p *Profile, a schedule.Arrival) (prompt, output, shift int, lengthened bool) {
	g.pcg.Seed(g.seed1, splitmix64(uint64(a.Seq)))
	// Both draws always happen, so a replayed length never shifts the other.
	prompt = p.Prompt.Sample(g.rng)
	output = p.Output.Sample(g.rng)
	shift = g.rng.IntN(bodyShift)
	if a.PromptTokens > 0 {
		prompt = min(a.PromptTokens, MaxPromptTokens)
	}
	if a.OutputTokens > 0 {
		output = a.OutputTokens
	}
	if prompt < g.minPrompt {
		prompt, lengthened = g.minPrompt, true
	}
	return prompt, output, shift, lengthened
}

// prompt builds the text of one prompt of n bytes (at least the shared
// prefix and the nonce). The prefix, the nonce and the body are copied
// once, straight into the string's own memory (a strings.Builder grown to
// the final size): one allocation, one copy.
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
	sb.Grow(max(n, len(g.prefix)+len(head)))
	sb.WriteString(g.prefix)
	sb.Write(head)
	if need := n - len(g.prefix) - len(head); need > 0 {
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
	c := *g // the mix, the shared prefix, the corpus snapshot: all read-only
	c.rng = rand.New(&c.pcg)
	return &c
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
