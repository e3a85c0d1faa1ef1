// Package schedule computes open-loop arrival schedules: when each request
// is due, fixed in advance and independent of completions (docs/method.md §2).
//
// The package is pure: no goroutines, no clock, no I/O except the trace
// readers. The same Plan and seed always give the same arrivals.
//
// # Phases and plans
//
// A Plan is a sequence of Phases (warmup, baseline, burst, recovery, …), each
// with a duration, an arrival rate and an arrival process. Phase i covers the
// half-open interval
//
//	[start_i, end_i) with start_0 = 0, end_i = start_i + duration_i, start_{i+1} = end_i
//
// so phases join without gaps or overlaps and an arrival exactly at end_i
// belongs to phase i+1. Every phase's process restarts at its own start: the
// first offset is measured from start_i, never carried over from phase i-1.
// An arrival is labelled with the phase of its scheduled time.
//
// A phase's rate λ (arrivals per second) is either absolute (Rate) or a
// multiple of the plan's named baseline: λ = Multiplier × BaselineRPS. Bursts
// are therefore reported both as absolute RPS and as a multiple (docs/method.md §3).
//
// # Arrival processes
//
// Offsets t_k are nanoseconds from the phase start; D is the phase duration in
// seconds; arrivals are kept while t_k < D.
//
//   - constant: t_k = k / λ seconds for k = 0, 1, 2, …, rounded to the nearest
//     nanosecond (computed from k each time, so rounding never accumulates).
//     The first arrival is at the phase start. Count = the number of k with
//     round(k·10⁹/λ) < D·10⁹, which is ⌈λ·D⌉ whenever λ·D is not within
//     rounding of an integer.
//   - poisson: gaps X_k = t_k − t_{k−1} (t_{−1} = 0) are independent
//     exponential, density λ·e^(−λx), mean 1/λ s, standard deviation 1/λ s
//     (coefficient of variation CV = 1). The count in D seconds is Poisson
//     with mean and variance λ·D.
//   - gamma: gaps are Gamma(shape b, scale θ = 1/(λ·b)) with b the
//     burstiness, as vLLM bench's --burstiness. Mean gap b·θ = 1/λ s (the rate
//     is kept), variance b·θ² = 1/(λ²·b) s², CV = 1/√b. b = 1 is Poisson (the
//     same draws, bit for bit); b < 1 is burstier, b > 1 smoother. The count
//     in D seconds has mean ≈ λ·D and, for long phases, variance ≈ λ·D/b.
//   - replay: offsets come from a trace (see below), scaled by the speed
//     factor s: t_k = offset_k / s (s = 2 replays twice as fast). Entries
//     whose scaled offset is ≥ D fall outside the phase and are not sent.
//
// Poisson and gamma offsets are accumulated in float64 nanoseconds and
// rounded to the nearest nanosecond, so rounding never drifts.
//
// # Randomness
//
// Each phase draws from its own PCG stream (math/rand/v2) seeded from the
// plan seed and the phase name (splitmix64 of seed and FNV-1a of the name).
// Changing one phase (its rate, duration or process) therefore never changes
// the offsets of another phase relative to that phase's start; later phases
// only move in absolute time when an earlier phase's duration changes.
//
// # Traces
//
// A trace is CSV with a required header row, or JSONL with one object per
// line, using these names:
//
//	timestamp      seconds, any origin (e.g. Unix time); rebased so the
//	               earliest entry is at offset 0
//	offset_s       seconds since the trace origin (≥ 0; not rebased)
//	offset_ms      milliseconds since the trace origin (≥ 0; not rebased)
//	prompt_tokens  optional, integer ≥ 0; 0 or empty = unspecified
//	output_tokens  optional, integer ≥ 0; 0 or empty = unspecified
//
// Exactly one time column is used per trace. Other columns or keys are
// ignored (never echoed). Decimal values are converted to nanoseconds
// exactly (no float rounding up to nanosecond resolution). Entries are
// sorted by offset (stable), since logs are often written in completion
// order. CSV lines starting with '#' are comments. Errors name the file,
// line and field and what kind of value is wrong, never the value's text
// unless it is a number (any column may hold an exported prompt), e.g.
// `schedule: trace.csv:14: offset_s: not a number (a 5-byte text, not
// shown)` or `prompt_tokens: must be in [0, 10000000], got -5`.
//
// Two published formats are recognised by their names, without a flag:
//
//	Azure LLM inference trace (CSV; a header with ContextTokens or
//	GeneratedTokens, names matched without case):
//	  TIMESTAMP        date and time, UTC: 2023-11-16 18:15:46.6805900
//	                   (any number of fraction digits, rounded to the ns;
//	                   a T for the space, a zone Z or ±hh:mm); rebased
//	  ContextTokens    prompt tokens (required)
//	  GeneratedTokens  output tokens (required)
//	Mooncake (JSONL; a first object with input_length, output_length or
//	hash_ids):
//	  timestamp        milliseconds, any origin; rebased
//	  input_length     prompt tokens, ≥ 1 (required)
//	  output_length    output tokens (required)
//	  hash_ids         optional array of integers, one per block of
//	                   B prompt tokens (the phase's trace_block_tokens,
//	                   default 512); equal ids, equal content
//
// # Slices and shared blocks
//
// A replay phase may replay a slice of its trace: trace_offset o and
// trace_window w (trace time, before the speed) keep the entries with
// o ≤ offset < o + w (w = 0: to the end), rebased to offset − o. An offset
// beyond the last entry, or a window with no entry, is an error.
//
// Within the slice, an entry's blocks are compared with the others' as a
// prefix cache would: block k of entry j is shared with entry i when both
// have the same ids in blocks 0..k. Blocks.Common is the number of leading
// blocks some other entry shares; Blocks.Reused the prompt tokens of
// entry j in leading blocks an earlier entry had,
//
//	Reused_j = Σ_k min(tokens_j(k), max_{i<j same path} tokens_i(k)),
//	tokens_i(k) = clamp(prompt_i − k·B, 0, B),
//
// summed while the path is one an earlier entry took. Only the first
// ⌈prompt/B⌉ ids are blocks of the prompt; extra ids are ignored (FitTrace
// notes entries whose ids do not match their length).
//
// # Closed loops
//
// A ClosedLoop (concurrency sweeps only) is the one exception to open-loop
// arrivals: Users users each send their next request when the previous one
// ended, so nothing is scheduled in advance. Its Plan only names the phases
// (warmup, then the level) for the analysis; their process is
// ArrivalClosed, which Build and Arrivals reject.
package schedule
