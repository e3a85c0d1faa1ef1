// Package sim is surge's simulated inference engine: a discrete-event model
// of a continuous-batching LLM server in the spirit of vLLM's scheduler,
// with replicas behind a least-loaded router, an autoscaler with cold
// starts, admission control and fault injection. It is the default target
// of every surge command (served over HTTP by internal/simhttp) and the
// oracle of surge's tests.
//
// The model is a pure state machine. Time is a time.Duration offset on the
// caller's clock, real or virtual; the package never reads the wall clock
// and starts no goroutines. Callers drive it with Submit, Cancel and
// Advance(now), and ask NextEvent when something happens next. Given the
// same Config (including Seed) and the same calls, the timeline is
// identical. Simulate runs a list of arrivals entirely in virtual time.
//
// # One replica
//
// A replica has a FCFS waiting queue and a running batch of at most
// max_num_seqs sequences. It runs engine steps back to back while it has
// work; an idle replica starts a step the moment a request arrives. A step
// is scheduled at its start, under the per-step token budget
// max_num_batched_tokens (B):
//
//  1. every running sequence whose prompt is fully prefilled decodes: one
//     token of budget each (B ≥ max_num_seqs, so decodes always fit);
//  2. running sequences still in prefill take prompt chunks of
//     min(remaining prompt, remaining budget), in admission order
//     (chunked prefill: a long prompt spans several steps);
//  3. waiting requests are admitted in FCFS order while the batch has a
//     slot, the KV cache has room (below) and budget remains; each takes a
//     first prefill chunk. A head that does not fit blocks the queue
//     (strict FCFS: nothing overtakes it).
//
// The step lasts
//
//	step = step_base + step_per_decode_seq × d + step_per_prefill_token × p
//
// where d is the number of decoding sequences in the step and p the prompt
// tokens prefilled in it (all durations; d and p are counts), multiplied by
// (1 + slowdown_per_hour × t/1h) for a step starting at t when
// slowdown_per_hour > 0 (an engine that degrades over time). At the end of
// the step each decoding sequence gains one output token, and a sequence
// whose prefill completed in the step emits its first token. A sequence
// that reached its output length finishes at that instant and frees its
// slot and KV; requests that arrived during a step wait for the next.
//
// KV rule: a sequence reserves prompt_tokens + cap KV tokens when it is
// admitted and keeps them until it finishes or is cancelled, where cap is
// max_tokens, or max_model_len − prompt_tokens when max_tokens is unset.
// A request is admitted only if the reservation fits (reserved + new ≤
// kv_cache_tokens), so the KV cache can never overflow and no sequence is
// ever preempted. This is the conservative reservation rule; vLLM instead allocates blocks as tokens appear and preempts when out of
// blocks, which this model does not do. Validate requires max_model_len ≤
// kv_cache_tokens, so any valid request fits an idle replica.
// Snapshot.KVUsage is reserved / capacity; ReplicaStats.KVUsedTokens is the
// tokens actually held.
//
// Output length: with ignore_eos a request generates exactly its cap
// (finish reason "length"). Otherwise its natural length is drawn at Submit
// from a lognormal with mean output_mean and shape output_sigma
// (n = round(exp(m + σZ)), m = ln(output_mean) − σ²/2, at least 1), and
// the request generates min(n, cap) tokens: "stop" if n < cap, else
// "length". The engine does not use n for scheduling. Config.CheckRequest
// rejects prompt_tokens + max_tokens > max_model_len (HTTP 400).
//
// Prefill-only work (Request.PrefillOnly: embeddings, reranking) has a cap
// of 0: it reserves prompt_tokens KV tokens, is prefilled like any prompt
// (chunked within max_num_batched_tokens) and finishes at the end of the
// step that completes its prefill, with no output token (finish reason
// "stop", Result.FirstTokenAt = that instant), as a pooling model answers
// from the prefill's hidden states. It may exceed max_model_len (a batch
// of inputs submitted as one prompt) but not kv_cache_tokens.
//
// # Prefix cache
//
// Off by default. With prefix_cache_tokens > 0 each replica keeps an LRU
// cache of prompt blocks, as vLLM's automatic prefix caching does. A
// request carries the chained hashes of its prompt's full blocks
// (Request.Blocks, made by PrefixHasher: block i's hash covers its bytes
// and block i − 1's hash, so a block matches only when everything before it
// matches). A block is B = prefix_block_tokens tokens (default 16, vLLM's
// block size), that is round(B × bytes_per_token) bytes of the prompt as
// the chat template renders it (each message's role and content). When a
// request is admitted, its leading blocks found in the replica's cache are
// marked used and count as cached:
//
//	cached = B × (leading blocks found), at most B × ⌊(prompt_tokens − 1) / B⌋
//
// (vLLM always computes the last prompt token, to get its logits). Its
// prefill starts after them: only prompt_tokens − cached tokens take step
// budget and step_per_prefill_token time. Each block the prefill completes
// is added to the cache, evicting the least recently used block when the
// cache holds ⌊prefix_cache_tokens / B⌋ blocks. The cache is a store of its
// own: the KV reservation stays prompt + cap, so caching saves compute, not
// memory (vLLM shares the cached blocks in its KV cache). Blocks of
// generated tokens are not cached (vLLM caches them too, so on vLLM a
// conversation's next turn also reuses the previous answer). Result and
// Snapshot carry the cached tokens; Snapshot.PromptTokens counts cached
// tokens as processed, as vLLM's prompt-token counter does. Replicas have
// separate caches and the router does not look at them.
//
// # Admission control
//
// With max_waiting > 0, Submit refuses a request (a *QueueFullError, which
// errors.Is ErrQueueFull; HTTP 429) exactly when the chosen replica already
// has max_waiting requests waiting. RetryAfter = ⌈waiting / r⌉ seconds, at
// least 1 s, where r is the replica's completion rate over the last 30 s
// (completions / elapsed time since the later of 30 s ago and its first
// step), or before any completion max_num_seqs / (output_mean × (step_base
// + max_num_seqs × step_per_decode_seq)).
//
// # Replicas, routing and the autoscaler
//
// Requests go to the ready replica with the fewest waiting + running
// requests (ties: lowest index). Queues are per replica: a backlog stays on
// the replica that accepted it; new capacity takes new arrivals.
//
// With autoscale on, the scale-up condition is: no replica starting,
// ready < max_replicas, and waiting requests (all replicas) >
// scale_up_waiting × ready replicas. When it has held continuously for
// scale_up_hold (any instant it is false restarts the clock), the
// autoscaler adds one replica. Its milestones are Events with their times:
//
//	scale_trigger        t0 = start of the condition + scale_up_hold
//	capacity_requested   t0 + scale_request_delay
//	node_ready           + node_ready_delay
//	container_ready      + container_ready_delay
//	model_ready          + model_ready_delay (routable from this instant)
//	first_served         when it first admits a request into its batch
//
// With min_replicas 0 (scale from zero) the cluster starts with no
// replica. An arrival that finds none ready starts one at once — the
// arrival is the trigger, without scale_up_hold, as with Knative's
// activator or KEDA's 0 → 1 — and waits in that replica's queue (counted
// as waiting; refused beyond max_waiting, with a Retry-After that includes
// the time left to model_ready) through the same four milestones; the
// last idle replica is removed after scale_down_idle like any other, and
// the next arrival starts the cold start again.
//
// A starting replica serves nothing before model_ready. A ready replica
// that has been idle (no waiting, no running) for scale_down_idle is
// removed ("scale_down"), one at a time, never below min_replicas;
// successive removals are at least scale_down_idle apart. At equal times,
// step ends come first, then milestones, the scale-up, the scale-down.
//
// # Faults
//
// Each Submit draws a fault, before admission control, from a seeded stream (fractions fault_500,
// fault_503, fault_reset, fault_malformed, fault_stall, fault_slow_headers;
// they sum to ≤ 1; all 0 by default). Natural lengths and faults use
// separate streams, so enabling faults does not change the lengths. A
// Fault500/Fault503 request never enters the engine (its ticket is returned
// with a nil error; the caller answers the error). The other faults are a
// FaultPlan the caller enacts on an otherwise normal stream: reset or
// malformed chunk at token AtToken, a stall of Delay before token AtToken,
// headers delayed by Delay. AtToken is uniform in [1, output length].
//
// # Simulate
//
// Simulate submits arrivals at their times, cancels a request whose
// completion the client would see after At + timeout (TimedOut), and
// enacts faults as a client sees them: a reset or malformed chunk at token
// k delivers k − 1 tokens and cancels the request in the engine; a stall
// holds token k and later ones until Delay after token k was generated;
// slow headers hold every token until At + Delay. It samples Snapshots at
// a fixed period for time series.
//
// # Capacity
//
// Capacity finds μ, the sustained completion rate, for a caller's workload
// by raising a constant load until the engine has a waiting queue. A trial
// offers λ requests/s for T seconds of virtual time (at first 120 s) and
// judges its second half [T/2, T] on snapshots T/120 apart: saturated when
// every replica had a waiting request at every snapshot and the queue grew;
// then μ = completions in [T/2, T] / (T/2). λ doubles while the engine
// keeps up (from 1 request/s per replica); T doubles while the half spans
// fewer than 10 turnovers of the batch (completions / mean running, by
// Little's law); a trial barely saturated (λ < 1.25 μ) is run again at
// 1.5 μ. Capacity's doc comment gives the exact rules and bounds.
//
// # Calibration
//
// The defaults model an 8B-class model on one GPU: max_num_seqs 128,
// max_num_batched_tokens 2048, kv_cache_tokens 65536, max_model_len 8192,
// step_base 20 ms, step_per_decode_seq 80 µs, step_per_prefill_token
// 120 µs. On the chat workload (500 prompt tokens, exactly 150 output
// tokens, ignore_eos) a saturated replica holds 100 sequences (the KV rule
// binds: 100 × 650 tokens) at ≈ 28 ms per decode-only step. Measured by
// TestCalibration and TestBacklogGrowsAndDrains (go test -run
// 'Calibration|Backlog' -v ./internal/sim):
//
//	μ (saturated throughput)            9.91 requests/s (10.0 over shorter windows;
//	                                    Capacity finds 9.87)
//	TTFT at 5 req/s (Poisson)           p50 100 ms, p95 216 ms, p99 275 ms
//	ITL at 5 req/s                      p50 22 ms, p95 82 ms, p99 142 ms
//	waiting at 5 / 8 req/s (Poisson)    mean 0.12 / 0.35, max 3 / 6
//	docs/method.md §8 (8/s, 60 s at 20/s, 8/s)  waiting grows 10.1/s (λ−μ = 10.1);
//	                                    609 waiting after the burst, drained
//	                                    in 330 s (W0/(μ−λ) = 320 s)
//
// μ depends slightly (±1%) on history: requests admitted together finish
// together, and cohorts that share prefill steps pay step_base fewer times.
//
// Cost (go test -bench . ./internal/sim, one core of an AMD EPYC): a step
// over 2,000 decoding sequences takes ≈ 10 µs (≈ 13 µs with an Observer per
// sequence: 6.5 ns per token) and allocates nothing (BenchmarkStep); a
// 13-minute burst experiment (≈ 6,500 requests, 30 s timeout, 1 s samples)
// runs in ≈ 11 ms (BenchmarkSimulateBurst); a Capacity estimate for the
// default replica takes ≈ 8 ms (BenchmarkCapacity).
package sim
