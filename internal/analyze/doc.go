// Package analyze turns records (one per scheduled arrival) into the numbers
// surge reports: per phase, per arrival-time window and overall, the offered,
// sent, successful and good request rates, failure rates by class and by
// cause (Fault), honest latency percentiles with their confidence
// intervals, the recovery rule's evidence per window and the client-side
// waiting/in-flight timeline; and the statistics experiments judge runs
// with: trends and drift over window series, the early stop of a
// hopeless capacity step, the capacity measured during a burst, exact
// engine queue waits of a virtual run and whether the load generator kept
// its schedule. It reads records only; it knows nothing about HTTP or load
// generation. It measures; it does not decide: the verdicts (SLO, recovery,
// diagnosis) are internal/judge's, made from its Result.
//
// # Streaming
//
// An Analyzer is fed with Add, one record at a time and in any order, and
// summarised with Result. Memory is O(phases × windows × histograms) plus
// O(run length / sample step) for the timeline, never O(records). Analyzers of
// shards merge losslessly with Merge (histograms are merged, percentiles are
// never averaged); a Result cannot be merged. An Analyzer is not safe for
// concurrent use: give each goroutine its own and Merge them.
//
// # Membership
//
// Every record belongs to the phase and the window of its scheduled arrival
// (scheduled_ns), never of its completion. Phases are half-open intervals
// [start, end) of offsets from the run origin; a record scheduled outside every
// phase is counted in Anomalies.Unassigned and only appears in windows.
// Windows are half-open intervals of length W (default 10 s) that start at
// each phase's start, so that no window holds two phases: a phase's last
// window is shorter (at least W/2) or, when the remainder is under W/2,
// longer (under 3W/2); a phase shorter than W is one window. From the last
// phase's start (the burst end, when there is a burst) windows of exactly W
// continue without end, so window k ≥ 0 covers [burstEnd + k·W,
// burstEnd + (k+1)·W). Window rates use the window's own length, clipped to
// the run, [first phase start, last phase end].
// "Overall" aggregates every phase that is not Excluded (warmup is excluded).
//
// # Rates (requests/s; D = phase or window duration in seconds)
//
//	offered RPS   = scheduled arrivals / D          (every record, drops included)
//	sent RPS      = records with a sent time / D
//	completed RPS = ok records whose done time falls in the group's interval / D
//	                (by completion time, the one count not by arrival; completions
//	                after the last phase end count in no window)
//	arrivals ok   = records with outcome ok / offered
//	goodput RPS   = good records / D
//	goodput ratio = good / offered                  (drops, failures, timeouts and
//	                                                 cancellations stay in the denominator)
//	error rate    = (http_error + conn_error + stream_error + invalid_response
//	                 + unknown outcomes) / offered
//	429 rate      = rate_limited / offered;  timeout rate = timeout / offered
//	drop rate     = generator_drop / offered; cancel rate = cancelled / offered
//	failure rate  = error + 429 + timeout + drop rates   (cancellations excluded)
//
// A record is good (Judge) when its outcome is ok, its HTTP status is 200, its
// first content token came within Deadlines.TTFT of the scheduled arrival and
// it completed within Deadlines.E2E of the scheduled arrival. The Analyzer
// recomputes Judge with its own deadlines rather than trusting the record's
// good flag; disagreements are counted in Anomalies.GoodFlagMismatch.
//
// # Latency distributions (milliseconds)
//
//	ttft_schedule   first content token − scheduled arrival   (ok requests)
//	ttft_send       first content token − sent                (ok requests)
//	tpot            (done − first token) / (output tokens − 1), from the record
//	itl_max         the record's longest gap between content chunks
//	e2e_send        done − sent                               (ok requests)
//	e2e_schedule    done − scheduled arrival                  (ok requests)
//	schedule_lag    sent − scheduled                          (every sent request)
//	conn_wait       connection acquired − sent: the client pool queue (every request with both)
//	gateway_wait    the gateway's own wait as its headers announce it (record gateway_ns)
//	upstream        the upstream's time to its headers as the gateway announces it
//	conn_to_headers response headers − connection acquired    (every request with both)
//
// The first six are over successful (ok) requests only, as docs/method.md §7 asks.
// The pooled mean inter-token latency, the mean gap between content chunks
// over all ok requests, is Σ(done − first token) / Σ(chunks − 1).
//
// Values are recorded in microseconds (truncated) into HDR histograms covering
// 1 µs … 1 h with 3 significant digits: a recorded value is exact to within
// 0.1 %. Negative durations are recorded as 0 and values above 1 h as 1 h;
// both are counted in Anomalies. Phase histograms are dense (≈ 188 KB each);
// window histograms are HDR's sparse PackedHistogram (a few KB each, same
// geometry and precision), so a one-hour soak with 10 s windows stays small.
// Mean, population standard deviation and max are exact (sums kept beside
// the histogram in integers), not bucket midpoints.
//
// Percentile definition: nearest rank. The q-quantile of N recorded values is
// the r-th smallest, r = ⌈q·N⌉ (at least 1), reported as the highest value
// equivalent to it at the histogram's resolution or the exact maximum,
// whichever is lower, so it is never below the true order statistic and at
// most 0.1 % above it. (vLLM's benchmark
// interpolates linearly between ranks; on small samples the two differ.)
//
// Censoring (docs/method.md §7): a timed-out request would, had it been allowed to
// finish, rank above every completed one. With T timeouts and S ok requests in
// a group, the q-quantile of the latency distributions (the first six above)
// is unknown when T > (1 − q)·(S + T): P99 when more than 1 % timed out, P95
// past 5 %, P50 past 50 %. A censored quantile is reported as a lower bound
// (the per-request timeout, or the observed value if larger), flagged, and
// formatted as "> 60s". Mean and max stay the values over ok requests.
// Censoring is per boundary: a request that timed out after its first
// token has a known TTFT, which is recorded like an ok request's; only
// its completion is censored (and its first answer text, if none came).
// Dist.Censored counts the censored requests of each distribution.
//
// Requests cancelled in flight (outcome cancelled with a sent time: a
// Ctrl-C) are censored the same way: each one's latency is at least its
// done − scheduled, and they rank above every ok request (the timeouts
// above them), in every denominator. With C of them, T timeouts and S ok
// requests, the q-quantile is unknown when C + T > (1 − q)·(S + C + T); its
// lower bound is the timeout when the rank lies among the timeouts, else
// the largest ok value, and Dist.Interrupted is set. So the survivors of an
// interrupted overload never make a percentile, or a PASS, on their own. A
// request cancelled before it was sent is not censored.
//
// # Confidence intervals of percentiles (Interval, QuantileRanks)
//
// Each reported percentile carries a 95 % interval that holds whatever the
// latency distribution (order statistics): of N values (recorded plus
// censored), B ~ Binomial(N, q) of them fall below the true q-quantile ξ,
// so [X₍l₎, X₍u₎] covers ξ with probability P(l ≤ B < u) ≥ 95 % when
//
//	l = the largest rank with P(B ≤ l − 1) ≤ 2.5 %   (0: no lower bound)
//	u = the smallest rank with P(B ≥ u) ≤ 2.5 %      (none: no upper bound)
//
// The binomial tails are summed exactly (in the smaller tail, from the
// term nearest the mean outward). A P99 has an upper bound only from 368
// values (0.99^368 ≤ 2.5 %), a P95 from 72: a 10 s window at 7 req/s
// cannot bound its P99 from above, whatever its values. A rank among the
// censored requests makes that bound censored: an upper one unknown
// (Interval.HiOpen), a lower one the bound they exceed
// (Interval.LoCensored). The order statistics are read from the HDR
// histogram like the percentiles (at most 0.1 % above the true value).
// Proportions (goodput, the share of slow requests) get the Clopper–Pearson
// interval (ProportionCI): the p whose binomial tails at k are 2.5 %.
//
// # By profile (Result.Profiles)
//
// When the measured records (those in Overall) carry more than one profile
// label, Profiles holds one entry per label, sorted by name: the Stats of
// exactly that profile's records, computed as Overall is (rates over
// Overall's duration; percentiles by nearest rank over the profile's own
// values, with its own timeouts censoring them — never an average of
// other groups' percentiles), Share = its arrivals / Overall's, and the
// exact nearest-rank medians of the server's prompt and output token
// counts over its ok requests. With one label Profiles is nil.
//
// # Recovery evidence (Recovery; the rule is internal/judge's)
//
// With T = the baseline phase's P99 of the rule's metric × (1 +
// Tolerance), every recovery window (of Recovery.Window, aligned to the
// burst end; the baseline phase's own windows too) counts its judged
// arrivals — ok requests with a value of the metric, and failures (not
// ok, not cancelled) — and of them the bad ones: ok values above T
// (RecoveryWindow.Slow, read from the window's histogram of the ok
// requests' values) plus the failures. Recovery is not measured without a
// burst phase, a baseline phase, baseline samples, or with a censored
// baseline P99.
//
// # Timeline
//
// At each sample time t_j = j·step (default 1 s) from the run origin:
//
//	in_flight  = #{ sent ≤ t_j < done }   (a sent request without done stays in flight)
//	waiting    = #{ scheduled ≤ t_j < wait end }
//	oldest age = t_j − min{ scheduled : scheduled ≤ t_j < wait end }  (0 if none)
//
// where wait end is the first content token, or, for a request that never got
// one, the time it ended (done): a request that failed or timed out is no
// longer waiting after it ended. A generator drop never waits; a request with
// neither first token nor done waits until the end of the timeline. This is
// the client-side view of queueing (docs/method.md §5), not the engine's queue. The
// timeline runs from the origin to the last phase end plus the per-request
// timeout or 10 minutes, whichever is longer; records reaching beyond are
// clipped and counted in Anomalies. It keeps four int64 per sample step
// (32 B per second at the default step, 115 KB per hour) and Add costs
// O(1 + wait/step) for it.
//
// # Trends (Trend, FitTrend)
//
// FitTrend fits y = a + b·x by least squares over the finite points and
// gives the slope's Student-t interval:
//
//	b = Σ(x − x̄)(y − ȳ) / Σ(x − x̄)²,  a = ȳ − b·x̄
//	SE(b) = √( Σ(y − a − b·x)² / (n − 2) / Σ(x − x̄)² )
//	CI = b ± t_{(1+c)/2, n−2} · SE(b),  p = P(|T_{n−2}| ≥ |b / SE(b)|)
//
// Whether a soak's series drifts is judge.TestDrift's decision.
//
// # Early stop of a capacity step (Hopeless, OverSaturated)
//
// A step with N planned arrivals and an SLO of goodput ≥ g is hopeless once
// more than (1 − g)·N of its requests missed their deadline, or once it is
// over-saturated: the TTFT from the scheduled arrival (ms, one point per
// request) and the requests waiting for a first token (sampled at up to 40
// instants) both grow — each slope's 95 % interval lies above 0 — and the
// fitted TTFT at the horizon already exceeds the TTFT limit.
//
// # Capacity measured during a burst (MeasuredCapacity)
//
// While a burst's backlog drains the service completes requests as fast as
// it can: μ = ok completions in [t₁, t₂) / (t₂ − t₁) requests/s, from one
// typical baseline completion time after the burst began (t₁) to the first
// timeline sample after the burst with no more waiting than
// max(2·w̄, w̄ + 3), w̄ the baseline's mean waiting (t₂). It is only
// reported for a real backlog: a peak above that threshold and of at least
// a tenth of the burst's arrivals, lasting at least 5 s.
//
// # Engine queue wait known per request (WaitHist, exactQueueWait)
//
// The engine model knows every admission time. A virtual run records each
// wait (admission − arrival) as it happens into its phase's WaitHist, a
// histogram of the latencies' geometry, so that memory does not grow with
// the run: count and mean exact, percentiles nearest rank r = ⌈p·n⌉ at the
// histogram's precision (≥ the true wait truncated to µs, ≤ 0.1 % above).
// exactQueueWait (the engine's own per-request timings) keeps the values:
// percentiles are nearest rank on the sorted waits, v_k with
// k = ⌈p·n⌉ − 1, reported in ms.
//
// # Did the generator keep its schedule (GeneratorCheck)
//
// Over a phase's n ≥ 20 sent requests, scheduled rate = (n − 1) / (last −
// first scheduled time) and achieved rate = (n − 1) / (last − first sent
// time), in requests/s. The generator fell behind — the run measures surge
// on this machine, not the target — when the achieved rate is below 95 % of
// the scheduled rate or the schedule lag's p99 exceeds 100 ms.
//
// # Causes of failures (Fault, DiagTally)
//
// Every failed request is classified by its outcome, status, the
// boundaries it reached and its headers (FaultOf, never its error text):
// unreachable, no response, unauthorized, not an inference endpoint, bad
// request, protocol, quota, rejected, unavailable, server error, timeout.
// DiagTally counts them per phase with the client's most common error
// class per fault as an example, beside the rejections' response times
// and a burst's completion times.
package analyze
