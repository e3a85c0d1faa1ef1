package analyze

import (
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// percentileDefinition is the published definition of every percentile in a
// Result (see the package documentation).
const percentileDefinition = "nearest rank: the ceil(q*N)-th smallest value, on an HDR histogram of microseconds (1us..1h, 3 significant digits), reported as the highest value equivalent to it or the exact maximum, whichever is lower (at most 0.1% above the true value, never below)"

// Dist summarises one latency distribution. Times are milliseconds.
//
// When a PxxCensored flag is set, more than (100 − xx) % of the requests in
// the group timed out or were cancelled in flight, so that percentile is
// unknown: PxxMs then holds only a lower bound (the per-request timeout when
// the rank lies among the timeouts, else the largest value observed over
// successful requests) and Text prints "> <bound>". MeanMs and MaxMs are over
// the recorded (successful) values only.
type Dist struct {
	Count       int64   `json:"count"`   // recorded values (the sample count)
	MeanMs      float64 `json:"mean_ms"` // exact mean of the recorded values (µs resolution)
	StdMs       float64 `json:"std_ms"`  // exact population standard deviation
	P50Ms       float64 `json:"p50_ms"`
	P95Ms       float64 `json:"p95_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"` // exact maximum (µs resolution)
	P50Censored bool    `json:"p50_censored"`
	P95Censored bool    `json:"p95_censored"`
	P99Censored bool    `json:"p99_censored"`
	CensorMs    float64 `json:"censor_ms,omitempty"` // the per-request timeout a censored percentile exceeds; 0 = unknown
	// Interrupted is set when a censored percentile lies among requests
	// cancelled in flight (Ctrl-C): it is at least the largest value
	// recorded (PxxMs), its true value unknown.
	Interrupted bool `json:"interrupted,omitempty"`
	// Censored counts the requests whose value is known only to exceed
	// every recorded one: timeouts and requests cancelled in flight
	// before they reached this boundary (a timeout after its first token
	// has a known TTFT and is not censored in it).
	Censored int64 `json:"censored,omitempty"`
	// PxxCI are the percentiles' Confidence intervals (Interval).
	P50CI Interval `json:"p50_ci"`
	P95CI Interval `json:"p95_ci"`
	P99CI Interval `json:"p99_ci"`
}

// Latency holds every distribution of a group, keyed by Metric names.
type Latency struct {
	TTFTSchedule  Dist `json:"ttft_schedule"`
	TTFTSend      Dist `json:"ttft_send"`
	TPOT          Dist `json:"tpot"`
	ITLMax        Dist `json:"itl_max"`
	E2ESend       Dist `json:"e2e_send"`
	E2ESchedule   Dist `json:"e2e_schedule"`
	ScheduleLag   Dist `json:"schedule_lag"`
	ConnWait      Dist `json:"conn_wait"`
	ConnToHeaders Dist `json:"conn_to_headers"`
	TTFTTextSend  Dist `json:"ttft_text_send"`
	TTFTTextSched Dist `json:"ttft_text_schedule"`
	GatewayWait   Dist `json:"gateway_wait"`
	Upstream      Dist `json:"upstream"`
}

func (l *Latency) ptr(i int) *Dist {
	return [...]*Dist{&l.TTFTSchedule, &l.TTFTSend, &l.TPOT, &l.ITLMax, &l.E2ESend,
		&l.E2ESchedule, &l.ScheduleLag, &l.ConnWait, &l.ConnToHeaders, &l.TTFTTextSend, &l.TTFTTextSched, &l.GatewayWait, &l.Upstream}[i]
}

// Get returns the distribution of m (a zero Dist for an unknown metric).
func (l Latency) Get(m Metric) Dist {
	i := metricIndex(m)
	if i < 0 {
		return Dist{}
	}
	return *l.ptr(i)
}

// Stats are the counts, rates and distributions of one group of records: a
// phase, a window or the overall aggregate. Rates are per second over
// DurationMs; ratios are fractions of Offered. Every count belongs to the
// group of the record's scheduled arrival except Completed (and
// CompletedRPS), which counts the ok requests whose done time falls in the
// group's interval: the target's throughput.
type Stats struct {
	DurationMs float64 `json:"duration_ms"`
	Offered    int64   `json:"offered"`   // scheduled arrivals
	Sent       int64   `json:"sent"`      // left the generator
	Succeeded  int64   `json:"succeeded"` // outcome ok
	// Tokenless counts the ok requests whose stream carried no token:
	// an empty answer (the server ended it at once), never good, though
	// neither late nor failed.
	Tokenless int64                    `json:"ok_without_token,omitempty"`
	Good      int64                    `json:"good"`      // met the per-request deadline
	Completed int64                    `json:"completed"` // ok requests whose done time falls in the interval, whatever their arrival
	Outcomes  map[record.Outcome]int64 `json:"outcomes"`  // every outcome, zeros included

	OfferedRPS   float64 `json:"offered_rps"`
	SentRPS      float64 `json:"sent_rps"`
	CompletedRPS float64 `json:"completed_rps"` // Completed / duration: completions by completion time
	GoodputRPS   float64 `json:"goodput_rps"`
	GoodputRatio float64 `json:"goodput_ratio"` // good / offered
	// smoothGood counts the requests every token of which met its smooth
	// goodput deadline (smoothGood; only with Deadlines.Token), and
	// SmoothGoodputRPS and SmoothGoodputRatio are its rate and share of
	// offered.
	SmoothGood         int64   `json:"smooth_good,omitempty"`
	SmoothGoodputRPS   float64 `json:"smooth_goodput_rps,omitempty"`
	SmoothGoodputRatio float64 `json:"smooth_goodput_ratio,omitempty"`

	ArrivalsOKRatio float64 `json:"arrivals_ok_ratio"` // succeeded / offered: the share of the group's arrivals that succeeded
	LastDoneMs      float64 `json:"last_done_ms"`      // latest completion of the group's ok requests (by arrival); 0 if none

	ErrorRate     float64 `json:"error_rate"`      // http, connection, stream, invalid and unknown failures / offered
	RateLimitRate float64 `json:"rate_limit_rate"` // 429 / offered
	TimeoutRate   float64 `json:"timeout_rate"`    // timeouts / offered
	DropRate      float64 `json:"drop_rate"`       // generator drops / offered
	// WorkerLostDrops counts the generator drops that a lost or
	// interrupted worker left (coordinated runs, record.Cause: never sent
	// because the worker was gone, not because of the in-flight cap).
	// Included in DropRate.
	WorkerLostDrops int64   `json:"worker_lost_drops,omitempty"`
	CancelRate      float64 `json:"cancel_rate"` // cancelled / offered
	// CancelledInFlight counts the requests cancelled after they were sent
	// (Ctrl-C): censored in the latency percentiles like timeouts.
	CancelledInFlight int64   `json:"cancelled_in_flight"`
	FailureRate       float64 `json:"failure_rate"` // error + 429 + timeout + drop rates

	PromptTokens   int64   `json:"prompt_tokens"`       // of ok requests
	OutputTokens   int64   `json:"output_tokens"`       // of ok requests
	OutputTokensPS float64 `json:"output_tokens_per_s"` // output tokens / duration
	PromptTokensPS float64 `json:"prompt_tokens_per_s"` // prompt tokens / duration: what the target read
	// Inputs counts the texts (documents) of the ok embeddings (rerank)
	// requests, and InputsPS is their rate: 0 for the generating APIs.
	Inputs   int64   `json:"inputs,omitempty"`
	InputsPS float64 `json:"inputs_per_s,omitempty"`
	// RequestBytesPS is the rate of request bodies sent, bytes/s: a burst
	// of images is a bandwidth burst too. Images counts the images sent.
	RequestBytes    int64   `json:"request_bytes"`
	RequestBytesPS  float64 `json:"request_bytes_per_s"`
	Images          int64   `json:"images,omitempty"`
	ITLMeanPooledMs float64 `json:"itl_mean_pooled_ms"` // Σ(done − first token) / Σ(chunks − 1) over ok requests

	Latency Latency `json:"latency"`

	Client ClientStats `json:"client"` // what the client saw besides latency (retries, headers, token details)
}

// ClientStats are the per-group counts of the client's own observations:
// retry amplification, replays, the server's token details, rate-limit
// headers and Server-Timing durations.
type ClientStats struct {
	// Attempts is the number of HTTP attempts of the group's sent
	// requests (retries included, connection replays not);
	// AttemptsPerArrival = Attempts / Offered; AttemptsRPS = Attempts /
	// duration, the load the target actually received.
	Attempts           int64   `json:"attempts"`
	AttemptsPerArrival float64 `json:"attempts_per_arrival"`
	AttemptsRPS        float64 `json:"attempts_rps"`
	// ConnRetries counts replays on a new connection after a reused one
	// failed before any response byte (not failures, not attempts).
	ConnRetries int64 `json:"conn_retries"`

	// MaxTokensIgnored counts ok requests whose output tokens exceed
	// max_tokens + max(8, 10% of max_tokens): the server ignored the cap.
	// MaxTokensChecked counts the ok requests that asked for a cap.
	MaxTokensIgnored int64 `json:"max_tokens_ignored"`
	MaxTokensChecked int64 `json:"max_tokens_checked"`

	// ReasoningTokens and CachedTokens sum the usage details of ok
	// requests; ThoughtFirst counts ok requests whose first answer text
	// came after their first token (reasoning or a tool call first).
	ReasoningTokens int64 `json:"reasoning_tokens"`
	CachedTokens    int64 `json:"cached_tokens"`
	ThoughtFirst    int64 `json:"thought_first"`
	// UnknownEvents counts the events of Responses and Messages streams
	// whose type surge does not know (ignored), and UnknownEventsIn the
	// requests that had any; TooLarge the 413 answers (a request larger
	// than the server accepts: images, long prompts).
	UnknownEvents   int64 `json:"unknown_events,omitempty"`
	UnknownEventsIn int64 `json:"unknown_events_in,omitempty"`
	TooLarge        int64 `json:"too_large,omitempty"`

	RateLimit RateLimitStats `json:"ratelimit"`

	// ServerTiming holds, per Server-Timing name (at most
	// maxServerTimingNames per group, the rest counted in
	// ServerTimingDropped), the distribution of its durations over every
	// response that carried it, whatever the outcome.
	ServerTiming        map[string]Dist `json:"server_timing,omitempty"`
	ServerTimingDropped int64           `json:"server_timing_dropped,omitempty"`
}

// RateLimitStats summarise the rate-limit headers of a group's responses.
// A lowest or longest value is -1 when no response carried that header.
type RateLimitStats struct {
	Responses               int64   `json:"responses"` // responses with any x-ratelimit-* header
	LowestRemainingRequests int64   `json:"lowest_remaining_requests"`
	LowestRemainingTokens   int64   `json:"lowest_remaining_tokens"` // the minute's bucket where there is also a day's
	LimitRequests           int64   `json:"limit_requests"`          // the last limit seen (the largest, if they differ)
	LimitTokens             int64   `json:"limit_tokens"`
	ResetsRequests          int64   `json:"resets_requests"` // responses with a reset-requests header
	ResetsTokens            int64   `json:"resets_tokens"`
	LongestResetRequestsMs  float64 `json:"longest_reset_requests_ms"`
	LongestResetTokensMs    float64 `json:"longest_reset_tokens_ms"`
	RetryAfter              int64   `json:"retry_after"` // responses with a Retry-After hint
	LongestRetryAfterMs     float64 `json:"longest_retry_after_ms"`
	// The day's token bucket, where the provider has one beside the
	// minute's (-1: never seen).
	LowestRemainingTokensDay int64   `json:"lowest_remaining_tokens_day"`
	LimitTokensDay           int64   `json:"limit_tokens_day"`
	LongestResetTokensDayMs  float64 `json:"longest_reset_tokens_day_ms"`
	// Unparsed counts rate-limit header values that were not numbers
	// surge reads (record.RateLimit.Unparsed, summed).
	Unparsed int64 `json:"unparsed"`
	// Buckets follows each quota bucket the headers named (absent: none).
	Buckets []BucketStats `json:"buckets,omitempty"`
}

// BucketStats is one quota bucket over a group's responses.
type BucketStats struct {
	Bucket    string `json:"bucket"`    // requests per minute, tokens per minute, tokens per day
	Responses int64  `json:"responses"` // responses that carried its headers
	// Short counts the responses that found it short: nothing remaining,
	// or a reset ahead with under a tenth of the limit left (BucketShort).
	Short int64 `json:"short"`
	// EmptyAtMs is when a response first said nothing remained; RefillAtMs
	// the latest moment a response projected it would hold a request
	// again (the response's time + its reset). Milliseconds since the run
	// began; -1: never.
	EmptyAtMs  float64 `json:"empty_at_ms"`
	RefillAtMs float64 `json:"refill_at_ms"`
}

// PhaseResult is the analysis of one phase.
type PhaseResult struct {
	Name     string  `json:"name"`
	StartMs  float64 `json:"start_ms"`
	EndMs    float64 `json:"end_ms"`
	Rate     float64 `json:"planned_rps"` // the planned offered rate
	Excluded bool    `json:"excluded"`
	Stats
	// Profiles splits the phase by workload profile when the run's
	// records carry more than one; nil otherwise (see Result.Profiles).
	Profiles []ProfileResult `json:"profiles,omitempty"`
}

// WindowResult is the analysis of one arrival-time window. StartMs and EndMs
// are its bounds; DurationMs is the part inside the run.
type WindowResult struct {
	Index   int64   `json:"index"` // k: 0 starts at the anchor (the burst end); windows never straddle a phase boundary (see windowSeries)
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`
	Phase   string  `json:"phase"` // phase containing the window's (clipped) start; "" if none
	Stats
}

// Anomalies counts data problems the analysis worked around.
type Anomalies struct {
	Unassigned         int64 `json:"unassigned"`           // records scheduled outside every phase
	PhaseLabelMismatch int64 `json:"phase_label_mismatch"` // record's phase label ≠ phase of its scheduled time
	GoodFlagMismatch   int64 `json:"good_flag_mismatch"`   // record's good flag ≠ Judge with the configured deadlines
	UnknownOutcome     int64 `json:"unknown_outcome"`      // outcomes not in record.Outcomes (counted as errors)
	NegativeDurations  int64 `json:"negative_durations"`   // recorded as 0
	OverRange          int64 `json:"over_range"`           // durations above 1 h, recorded as 1 h
	TimelineClipped    int64 `json:"timeline_clipped"`     // records reaching past the timeline bound
}

func (a *Anomalies) add(b Anomalies) {
	a.Unassigned += b.Unassigned
	a.PhaseLabelMismatch += b.PhaseLabelMismatch
	a.GoodFlagMismatch += b.GoodFlagMismatch
	a.UnknownOutcome += b.UnknownOutcome
	a.NegativeDurations += b.NegativeDurations
	a.OverRange += b.OverRange
	a.TimelineClipped += b.TimelineClipped
}

// Settings echoes the configuration a Result was computed with.
type Settings struct {
	WindowMs         float64 `json:"window_ms"`
	WindowAnchorMs   float64 `json:"window_anchor_ms"`
	SampleEveryMs    float64 `json:"sample_every_ms"`
	TTFTDeadlineMs   float64 `json:"ttft_deadline_ms"`
	E2EDeadlineMs    float64 `json:"e2e_deadline_ms"`
	TPOTDeadlineMs   float64 `json:"tpot_deadline_ms,omitempty"`
	TokenDeadlineMs  float64 `json:"token_deadline_ms,omitempty"`
	TimeoutMs        float64 `json:"timeout_ms"` // 0 = unknown
	BaselinePhase    string  `json:"baseline_phase"`
	BurstPhase       string  `json:"burst_phase"`
	PercentileMethod string  `json:"percentile_definition"`
}

// Result is everything an Analyzer computed; it is plain data for
// summary.json and the renderers.
type Result struct {
	Settings  Settings       `json:"settings"`
	Phases    []PhaseResult  `json:"phases"`
	Overall   Stats          `json:"overall"` // non-excluded phases together
	Windows   []WindowResult `json:"windows"`
	Recovery  Recovery       `json:"recovery"`
	Timeline  []Sample       `json:"timeline"`
	Anomalies Anomalies      `json:"anomalies"`
	// Profiles splits Overall by workload profile when the measured
	// records carry more than one (a mix); nil otherwise.
	Profiles []ProfileResult `json:"profiles,omitempty"`
	// Sessions is the per-turn and per-session analysis of a sessions
	// run (Sessions); nil otherwise.
	Sessions *SessionResult `json:"sessions,omitempty"`
}

// Phase returns the result of the named phase.
func (r *Result) Phase(name string) (PhaseResult, bool) {
	for _, p := range r.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return PhaseResult{}, false
}

func durMs(d time.Duration) float64 { return nsToMs(int64(d)) }

// Result computes the analysis of everything added so far. It does not
// change the Analyzer: more records may be added and Result called again.
func (a *Analyzer) Result() *Result {
	c := &a.cfg
	timeoutMs := durMs(c.Timeout)
	r := &Result{
		Settings: Settings{
			WindowMs:         durMs(c.Window),
			WindowAnchorMs:   nsToMs(a.windows.anchor),
			SampleEveryMs:    durMs(c.SampleEvery),
			TTFTDeadlineMs:   durMs(c.Deadlines.TTFT),
			E2EDeadlineMs:    durMs(c.Deadlines.E2E),
			TPOTDeadlineMs:   durMs(c.Deadlines.TPOT),
			TokenDeadlineMs:  durMs(c.Deadlines.Token),
			TimeoutMs:        timeoutMs,
			BaselinePhase:    c.BaselinePhase,
			BurstPhase:       c.BurstPhase,
			PercentileMethod: percentileDefinition,
		},
		Anomalies: a.anom,
	}
	overall := &acc{}
	var overallNs int64
	multi := a.manyProfiles()
	for i, p := range c.Phases {
		d := int64(p.End - p.Start)
		st := a.phases[i].stats(d, timeoutMs)
		pr := PhaseResult{
			Name: p.Name, StartMs: durMs(p.Start), EndMs: durMs(p.End), Rate: p.Rate, Excluded: p.Excluded,
			Stats: st,
		}
		if multi {
			pr.Profiles = a.byPhase[i].results(d, timeoutMs, st.Offered)
		}
		r.Phases = append(r.Phases, pr)
		if !p.Excluded {
			overall.merge(a.phases[i])
			overallNs += d
		}
	}
	r.Overall = overall.stats(overallNs, timeoutMs)
	if multi {
		r.Profiles = a.profiles.results(overallNs, timeoutMs, r.Overall.Offered)
	}
	r.Windows = a.windowResults(a.windows, timeoutMs)
	r.Recovery = a.recovery(r)
	r.Timeline = a.timeline.samples(a.runEnd)
	return r
}

// windowResults lists every window from the one holding the run start to the
// one holding the run end, empty ones included, plus the windows outside the
// run that hold records (without filling the gaps between those).
func (a *Analyzer) windowResults(w *windowSeries, timeoutMs float64) []WindowResult {
	lo, hi := w.index(a.runStart), w.index(a.runEnd-1)
	ks := make([]int64, 0, hi-lo+1+int64(len(w.accs)))
	for k := lo; k <= hi; k++ {
		ks = append(ks, k)
	}
	for k := range w.accs {
		if k < lo || k > hi {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	out := make([]WindowResult, 0, len(ks))
	empty := &acc{packed: true}
	for _, k := range ks {
		start, end := w.bounds(k)
		cs, ce := max(start, a.runStart), min(end, a.runEnd)
		d := ce - cs
		if d <= 0 { // outside the run: rate over the whole window
			cs, d = start, end-start
		}
		ac := w.accs[k]
		if ac == nil {
			ac = empty
		}
		phase := ""
		if pi := a.phaseOf(cs); pi >= 0 {
			phase = a.cfg.Phases[pi].Name
		}
		out = append(out, WindowResult{
			Index: k, StartMs: nsToMs(start), EndMs: nsToMs(end), Phase: phase,
			Stats: ac.stats(d, timeoutMs),
		})
	}
	return out
}

// Late counts the ok requests that missed a per-request deadline: not
// good, and not an empty answer (Tokenless), which has no deadline to miss.
func (s *Stats) Late() int64 { return s.Succeeded - s.Good - s.Tokenless }

// LateRatio is Late as a share of Offered (arrivals ok − goodput − empty
// answers, in the ratios' own terms).
func (s *Stats) LateRatio() float64 {
	return s.ArrivalsOKRatio - s.GoodputRatio - ratio(s.Tokenless, s.Offered)
}

func ratio(n, d int64) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func perSec(n, durNs int64) float64 {
	if durNs <= 0 {
		return 0
	}
	return float64(n) / (float64(durNs) / 1e9)
}

// stats derives the exported Stats of a group that spans durNs.
func (a *acc) stats(durNs int64, timeoutMs float64) Stats {
	o := &a.outcomes
	offered := a.offered()
	errs := o[slotHTTPError] + o[slotConnError] + o[slotStreamError] + o[slotInvalid] + o[slotUnknown]
	s := Stats{
		DurationMs: nsToMs(durNs),
		Offered:    offered,
		Sent:       a.sent,
		Succeeded:  o[slotOK],
		Good:       a.good,
		Completed:  a.completed,
		Outcomes:   make(map[record.Outcome]int64, numSlots),

		OfferedRPS:   perSec(offered, durNs),
		SentRPS:      perSec(a.sent, durNs),
		CompletedRPS: perSec(a.completed, durNs),
		GoodputRPS:   perSec(a.good, durNs),
		GoodputRatio: ratio(a.good, offered),

		SmoothGood:         a.smooth,
		SmoothGoodputRPS:   perSec(a.smooth, durNs),
		SmoothGoodputRatio: ratio(a.smooth, offered),

		ArrivalsOKRatio: ratio(o[slotOK], offered),
		LastDoneMs:      nsToMs(a.lastDone),

		ErrorRate:       ratio(errs, offered),
		RateLimitRate:   ratio(o[slotRateLimited], offered),
		TimeoutRate:     ratio(o[slotTimeout], offered),
		DropRate:        ratio(o[slotDrop], offered),
		CancelRate:      ratio(o[slotCancelled], offered),
		WorkerLostDrops: a.lostDrops,
		FailureRate:     ratio(errs+o[slotRateLimited]+o[slotTimeout]+o[slotDrop], offered),

		PromptTokens:   a.prompt,
		OutputTokens:   a.output,
		OutputTokensPS: perSec(a.output, durNs),
		PromptTokensPS: perSec(a.prompt, durNs),
		Inputs:         a.inputs,
		InputsPS:       perSec(a.inputs, durNs),
		RequestBytes:   a.reqBytes,
		RequestBytesPS: perSec(a.reqBytes, durNs),
		Images:         a.images,
	}
	for i, n := range o {
		s.Outcomes[slotOutcome(i)] = n
	}
	s.Client = a.client.stats(offered, durNs, timeoutMs)
	if a.gaps > 0 {
		s.ITLMeanPooledMs = float64(a.decodeNs) / float64(a.gaps) / 1e6
	}
	s.CancelledInFlight = a.cancelled
	s.Tokenless = a.tokenless
	for i := range a.m {
		*s.Latency.ptr(i) = a.m[i].dist(a.m[i].timeouts, a.m[i].cancelled, timeoutMs)
	}
	return s
}

// quantiles are the reported percentiles as fractions num/100.
var quantiles = [3]int64{50, 95, 99}

// dist summarises m. Timeouts and requests cancelled in flight stay in the
// denominator (docs/method.md §7): the q-quantile of a group of cnt
// recorded values, C cancelled in flight and T timeouts is the value of
// nearest rank r = ceil(q·(cnt+C+T)), the cancelled ranking above every
// recorded value and the timeouts above those; when r > cnt the quantile
// lies among them and is censored: unknown, at least the largest recorded
// value, and at least the timeout when r > cnt + C. Each quantile's
// Interval takes the order statistics of QuantileRanks the same way.
func (m *metricAcc) dist(timeouts, cancelled int64, timeoutMs float64) Dist {
	var d Dist
	var cnt int64
	if m.h != nil {
		cnt = m.h.TotalCount()
	}
	total := cnt + cancelled + timeouts
	d.Censored = cancelled + timeouts
	// Every rank asked for: the point (nearest rank) and the interval's
	// two order statistics of each quantile.
	var ranks [3][3]int64 // [quantile][point, lo, hi]
	for i, q := range quantiles {
		ranks[i][0] = max(1, (q*total+99)/100)
		ranks[i][1], ranks[i][2] = QuantileRanks(total, float64(q)/100)
	}
	var vals [3][3]float64
	if cnt > 0 {
		d.Count = cnt
		d.MeanMs = float64(m.sum) / float64(cnt) / 1e3
		d.MaxMs = float64(m.max) / 1e3
		d.StdMs = m.std() / 1e3
		// Nearest rank r among the recorded values. The library ranks a
		// percentile p as int(p/100·N + 0.5); asking for p = (r − 0.25)/N·100
		// selects rank r exactly (the ±0.25 margin dwarfs any floating-point
		// error).
		ps := make([]float64, 0, 9)
		for i := range ranks {
			for _, r := range ranks[i] {
				r = min(max(r, 1), cnt)
				ps = append(ps, (float64(r)-0.25)/float64(cnt)*100)
			}
		}
		for j, v := range m.h.ValueAtPercentilesSlice(ps) {
			// Both the bucket's highest value and the exact maximum are
			// ≥ the true order statistic: keep the tighter one.
			vals[j/3][j%3] = float64(min(v, m.max)) / 1e3
		}
	}
	// bound is what a rank beyond the recorded values exceeds: the
	// timeout among the timeouts, else the largest value recorded (v).
	bound := func(r int64, v float64) float64 {
		if r > cnt+cancelled {
			return max(v, timeoutMs)
		}
		return v
	}
	var out [3]struct {
		v  float64
		c  bool
		ci Interval
	}
	for i := range quantiles {
		r, lo, hi := ranks[i][0], ranks[i][1], ranks[i][2]
		o := &out[i]
		o.v, o.c = vals[i][0], r > cnt && d.Censored > 0
		if o.c {
			o.v = bound(r, o.v)
			if r > cnt+cancelled {
				d.CensorMs = timeoutMs
			} else {
				d.Interrupted = true
			}
		}
		switch {
		case lo == 0: // nothing bounds it below
		case lo > cnt:
			o.ci.LoCensored, o.ci.LoMs = true, bound(lo, vals[i][1])
		default:
			o.ci.LoMs = vals[i][1]
		}
		if hi > cnt {
			o.ci.HiOpen = true
		} else {
			o.ci.HiMs = vals[i][2]
		}
	}
	d.P50Ms, d.P95Ms, d.P99Ms = out[0].v, out[1].v, out[2].v
	d.P50Censored, d.P95Censored, d.P99Censored = out[0].c, out[1].c, out[2].c
	d.P50CI, d.P95CI, d.P99CI = out[0].ci, out[1].ci, out[2].ci
	return d
}

// std is the exact population standard deviation of the recorded values, µs:
// sqrt(N·Σx² − (Σx)²) / N, with the numerator computed in integers.
func (m *metricAcc) std() float64 {
	n := m.h.TotalCount()
	if n == 0 {
		return 0
	}
	num := new(big.Int).Mul(m.sumSq.big(), big.NewInt(n))
	sum := big.NewInt(m.sum)
	num.Sub(num, sum.Mul(sum, sum))
	f, _ := new(big.Float).SetInt(num).Float64()
	return math.Sqrt(max(0, f)) / float64(n)
}
