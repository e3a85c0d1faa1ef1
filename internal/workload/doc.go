// Package workload describes what surge sends: workload profiles (prompt and
// output length distributions with a max_tokens cap), datasets of real
// prompts, and a Generator that turns each scheduled arrival into a Request
// with a synthetic prompt or a dataset row's (docs/method.md §10).
//
// # Lengths
//
// All lengths are in tokens. A Dist is one of
//
//	lognormal: L = clamp(round(m·e^(σZ)), min, max), Z ~ N(0, 1);
//	           median m, σ the standard deviation of ln L,
//	           unclamped mean m·e^(σ²/2) (Dist.Mean gives the clamped mean)
//	uniform:   L uniform over the integers min..max, mean (min + max)/2
//	normal:    L = clamp(round(mean + sd·Z), min, max)
//	empirical: L = values[i] with probability counts[i] / Σcounts
//	fixed:     L = value
//
// In YAML a Dist is a mapping of its fields or one string in ParseDist's
// form (`lognormal:median=800,p95=6000`).
//
// A Profile pairs a prompt-length Dist with an output-length Dist and a cap:
// max_tokens = min(output draw, cap). The defaults (DefaultProfiles) are
// chat (median 500 prompt / 150 output), rag (3000–4000 / median 200) and
// longgen (median 300 / 1000). Replayed arrivals that carry token counts
// override the draws.
//
// # Mixes
//
// A Mix runs several profiles in one run: each arrival gets profile i with
// probability wᵢ / Σw (weights ≥ 0, finite, Σw > 0; they need not sum to 1).
// The choice is a function of (Seed, Seq) alone: with the profiles sorted
// by name and Bᵢ the cumulative share of profiles 0..i,
//
//	u = ⌊splitmix64(splitmix64(Seed ⊕ "profile") ⊕ splitmix64(Seq)) / 2¹¹⌋ / 2⁵³ ∈ [0, 1)
//	profile = the first i with u < Bᵢ
//
// It draws nothing from the request's own stream, so a mix of one profile
// makes exactly that profile's requests, and the same mix written in any
// order makes the same run. The chosen profile's distributions and cap
// apply, and Request.Profile names it (a replayed arrival that carries both
// lengths stays "replay"). Custom profiles (from a YAML profiles: list) may
// join a mix or redefine a built-in by name.
//
// # Determinism
//
// Request k is a function of (Seed, Salt, profile or mix, arrival k) only:
// the Generator reseeds a PCG from splitmix64(Seed) and splitmix64(Seq) for
// every request, so the order of calls and the number of generators do not
// matter.
//
// # Prompts
//
// surge's token estimate is 1 token ≈ 4 bytes: EstimateTokens(s) =
// ⌈len(s)/4⌉. Real tokenizers differ (llama.cpp's made surge's 64-token
// prompts 85–145 tokens), so before a run surge measures the target's
// tokenizer on this very text (package calibrate) and Config.Sizing sizes
// each prompt for it: a prompt for T tokens is Sizing.Bytes(T) =
// round((T − overhead)/tokens-per-byte) bytes — exactly 4·T bytes with the
// zero Sizing:
//
//	"[req <seq>-<8 hex>] " + body
//
// The nonce at the very start makes every prompt unique, so a prefix cache
// (which matches from the first token) cannot flatter the results; its hex
// part mixes Seed and Salt, so runs with different salts differ too. The
// body is cut from a fixed, deterministic English-like text (sentences of
// words from a 260-word list, the same for every seed), starting at a
// pseudo-random word within its first 64 KiB. With Config.NoNonce there is no
// nonce and every body starts at the text's beginning, so all prompts share
// their prefixes — for testing prefix caching.
//
// With Config.SharedPrefix = P every prompt starts with the same text of P
// tokens (the corpus from its start, textBytes(P) = round(P/tokens-per-byte)
// bytes ending in a newline: a common system prompt), and the nonce and body
// follow it:
//
//	prefix (P tokens, the same for all) + "[req <seq>-<8 hex>] " + body
//
// The whole prompt still has the drawn length T (the per-prompt overhead is
// paid once, by the whole prompt); a draw T < P + MinUniqueTokens +
// ⌈overhead⌉ is lengthened to that bound, so every prompt ends in text of
// its own. The prefix is the start of the one user message rather than a
// system message: vLLM and SGLang cache the rendered token sequence, in
// which the chat template puts a system message first, so both placements
// cache alike — but some chat templates refuse a system role, and a second
// message would add template tokens the calibration did not measure.
//
// An arrival from a trace with shared blocks (a Mooncake trace's hash ids,
// schedule.Blocks) gets its prompt from those blocks instead: block h is
// "[h] " and corpus words picked by h, Sizing.Bytes(B) bytes, the same in
// every request and run; the prompt is its blocks cut to Sizing.Bytes(T)
// bytes, with the nonce where it stops being shared with any other request
// of the replay (so its own part is unique) and none when every block is
// shared. Request.PrefixTokens is then the tokens in leading blocks an
// earlier request had (blocks.go has the details).
//
// How close is the estimate? Measured with tiktoken-go v0.10.0 on 400 KB of
// this text: cl100k_base 4.03 bytes/token, o200k_base 4.22 bytes/token
// (2 KB windows: 3.7–4.3 and 3.9–4.6). A prompt of T estimated tokens is
// therefore about T (cl100k, Llama 3) or 0.95·T (o200k) real tokens.
// Servers' usage is the truth; records carry it.
//
// Building a prompt copies the nonce and the body once, straight into the
// prompt string's memory: one allocation and one copy per request (see
// BenchmarkGenerate).
//
// # Datasets
//
// With Config.Dataset (LoadDataset: sharegpt, openai-jsonl or
// prompts-jsonl) the prompts are real: request k is the row
// Dataset.Index(DatasetSample, Seed, k) — a seeded permutation per pass
// (shuffle, without replacement), an independent draw (random, with
// replacement) or file order — its messages sent with the nonce before the
// first user message (unless NoNonce), PromptTokens = Sizing.Tokens(bytes
// sent), MaxTokens = the row's max_tokens or the profile's draw, then
// MaxTokensCap. See Generator.Generate and docs/metrics.md.
//
// A Request's prompt lives only in memory; it is never written to a record,
// a log or a report.
package workload
