package judge

import (
	"fmt"
	"math"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/scrape"
)

// The recovery rule's constants (docs/metrics.md "Recovery").
const (
	// RecoveryAlpha is the significance of a window's test: a window is
	// slow when so many bad requests would come at the baseline's share
	// less than once in a thousand windows. The rule needs Consecutive
	// windows in a row; at 1/1000 a baseline-like window is called slow
	// once in ~300 runs of three.
	RecoveryAlpha = 0.001
	// RecoveryP99Share is the share of requests a p99 leaves above it:
	// "p99 within 10% of the baseline's" means at most 1% of requests
	// slower than 1.1 × the baseline's p99.
	RecoveryP99Share = 0.01
	// RecoveryDetect is the bad share a decided window must be able to
	// tell from the baseline's: a window whose bad share were this (or 3×
	// the baseline's, if more) is called slow with at least even odds.
	// Windows with fewer requests are undecided.
	RecoveryDetect = 0.10
	// RecoveryBaselineNoise: when the rule calls more than a tenth of the
	// baseline's own windows slow, the baseline is no steady reference
	// (its requests come in clusters the test does not expect) and
	// recovery is not judged. At RecoveryAlpha a steady baseline has one
	// such window in a thousand.
	RecoveryBaselineNoise = 0.10
)

// WindowState is how the recovery rule judged one window.
type WindowState string

// The window states.
const (
	WindowSlow      WindowState = "slow"      // clearly more bad requests than the baseline's share allows
	WindowRecovered WindowState = "recovered" // not slow, and enough requests to tell
	WindowUndecided WindowState = "undecided" // not slow, but too few requests to tell
)

// RecoveryWindow is one window as the recovery rule judged it.
type RecoveryWindow struct {
	analyze.RecoveryWindow
	State WindowState `json:"state"`
	// P is the chance of at least Bad bad requests of Judged at the
	// baseline's share: small means slow.
	P float64 `json:"p"`
}

// QueueDrain is when the engine's waiting queue came back to its
// baseline level after the burst, from its scraped gauge: reported beside
// the latency's recovery, as the method asks (docs/method.md §7).
type QueueDrain struct {
	Measured       bool    `json:"measured"`
	Reason         string  `json:"reason,omitempty"`           // why not measured
	BaselineMax    float64 `json:"baseline_max"`               // the most requests waiting in a baseline scrape
	Peak           float64 `json:"peak"`                       // the most waiting after the burst start
	Drained        bool    `json:"drained"`                    // back at or below BaselineMax, and stayed for a window
	DrainedMs      float64 `json:"drained_ms"`                 // after the burst end
	StillWaitingAt float64 `json:"still_waiting_at,omitempty"` // the last scrape's waiting, when not drained
}

// Recovery is the recovery rule's judgement of a burst run (docs/method.md
// §3, docs/metrics.md "Recovery"): PASS when it recovered, FAIL when it
// did not while observed, INCONCLUSIVE when the windows cannot tell (too
// few requests in them) or the rule does not apply (Reason).
type Recovery struct {
	Outcome   Outcome        `json:"outcome"`
	Recovered bool           `json:"recovered"`
	Reason    string         `json:"reason,omitempty"`
	Metric    analyze.Metric `json:"metric"`
	// BaselineP99Ms, ThresholdMs: a request is slow above the threshold,
	// (1 + tolerance) × the baseline's p99 of the metric.
	BaselineP99Ms   float64 `json:"baseline_p99_ms"`
	BaselineSamples int64   `json:"baseline_samples"`
	ThresholdMs     float64 `json:"threshold_ms"`
	// Share is the share of bad requests a window may have at the
	// baseline's level: RecoveryP99Share + the baseline's failure share.
	Share       float64 `json:"share"`
	Alpha       float64 `json:"alpha"`
	MinJudged   int64   `json:"min_judged"` // fewer requests leave a window undecided
	Consecutive int     `json:"consecutive"`
	// ResolutionMs is the window length; BurstEndMs when the burst ended
	// (from the run's origin); ObservedMs how long after it the run ran.
	ResolutionMs float64 `json:"resolution_ms"`
	BurstEndMs   float64 `json:"burst_end_ms"`
	ObservedMs   float64 `json:"observed_ms"`
	// RecoveryTimeMs is the recovery time (after the burst end) when
	// recovered: the latest time consistent with the windows (LatestMs).
	// EarliestMs is the earliest: the first window that starts
	// Consecutive windows none of which is slow (undecided ones taken
	// as recovered). Both are multiples of the resolution.
	RecoveryTimeMs float64 `json:"recovery_time_ms"`
	EarliestMs     float64 `json:"earliest_ms"`
	EarliestKnown  bool    `json:"earliest_known"`
	LatestMs       float64 `json:"latest_ms"`
	LatestKnown    bool    `json:"latest_known"`
	// BaselineWindows and BaselineSlow are the rule applied to the
	// baseline's own windows: how often it calls a baseline window slow.
	BaselineWindows int              `json:"baseline_windows"`
	BaselineSlow    int              `json:"baseline_slow"`
	Windows         []RecoveryWindow `json:"windows"`
	Queue           QueueDrain       `json:"engine_queue"`
	Message         string           `json:"message"`
}

// JudgeRecovery applies the recovery rule to a run's measured recovery
// windows, and finds the engine queue's return to its baseline level in
// samples (nil: not scraped).
//
// Each window's bad requests (slower than the threshold, or failed) are
// tested against Share = RecoveryP99Share + the baseline's failure share:
// slow when P(Binomial(judged, Share) ≥ bad) ≤ RecoveryAlpha; otherwise
// recovered when it holds at least MinJudged requests, undecided when
// fewer. The run recovered at the first window that starts Consecutive
// recovered windows in a row (LatestMs); EarliestMs counts undecided
// windows as recovered. INCONCLUSIVE when only the earliest is known.
func JudgeRecovery(a *analyze.Result, samples []scrape.Sample) Recovery {
	m := &a.Recovery
	rec := Recovery{
		Outcome: Inconclusive, Metric: m.Metric, Consecutive: m.Consecutive, Alpha: RecoveryAlpha,
		ResolutionMs: m.ResolutionMs, BurstEndMs: m.BurstEndMs, ObservedMs: m.ObservedMs,
		BaselineP99Ms: m.BaselineP99Ms, BaselineSamples: m.BaselineSamples, ThresholdMs: m.ThresholdMs,
		Windows: []RecoveryWindow{},
	}
	if !m.Measured {
		rec.Reason = m.Reason
		rec.Message = "recovery not judged: " + m.Reason
		return rec
	}
	rec.Queue = queueDrain(a, samples, m)
	failShare := ratio(m.BaselineFailed, m.BaselineJudged)
	rec.Share = min(1, RecoveryP99Share+failShare)
	if failShare >= 0.5 {
		rec.Reason = fmt.Sprintf("the baseline failed %s of its requests: too many to tell a recovery to it", pct(failShare))
		rec.Message = "recovery not judged: " + rec.Reason
		return rec
	}
	rec.MinJudged = minJudged(rec.Share)
	for _, w := range m.Baseline {
		if st, _ := rec.state(w); st == WindowSlow {
			rec.BaselineSlow++
		}
		rec.BaselineWindows++
	}
	for _, w := range m.Windows {
		st, p := rec.state(w)
		rec.Windows = append(rec.Windows, RecoveryWindow{RecoveryWindow: w, State: st, P: p})
	}
	if m.BaselineMs < float64(rec.Consecutive)*rec.ResolutionMs {
		rec.Reason = fmt.Sprintf("the baseline's %s is shorter than the %d windows of %s in a row a recovery needs: too short to show its own window-to-window variation (a longer --baseline)",
			analyze.FormatMs(m.BaselineMs), rec.Consecutive, analyze.FormatMs(rec.ResolutionMs))
		rec.Message = "recovery not judged: " + rec.Reason
		return rec
	}
	if rec.BaselineWindows >= 5 && float64(rec.BaselineSlow) > RecoveryBaselineNoise*float64(rec.BaselineWindows) {
		rec.Reason = fmt.Sprintf("the rule calls %d of the baseline's own %d windows slow: the baseline is too uneven to recover to (a longer --window, or a steadier baseline)", rec.BaselineSlow, rec.BaselineWindows)
		rec.Message = "recovery not judged: " + rec.Reason
		return rec
	}
	earliest := rec.firstRun(func(s WindowState) bool { return s != WindowSlow })
	latest := rec.firstRun(func(s WindowState) bool { return s == WindowRecovered })
	// The observation may end inside a run of windows that are not slow,
	// before it is Consecutive long: the service may have recovered
	// there, and no window says it did not.
	cut := false
	if earliest < 0 {
		earliest = rec.trailingRun(func(s WindowState) bool { return s != WindowSlow })
		cut = earliest >= 0
	}
	if earliest >= 0 {
		rec.EarliestKnown, rec.EarliestMs = true, rec.Windows[earliest].StartMs-rec.BurstEndMs
	}
	if latest >= 0 {
		rec.LatestKnown, rec.LatestMs = true, rec.Windows[latest].StartMs-rec.BurstEndMs
	}
	rule := fmt.Sprintf("%d windows in a row with no more requests slower than %s (%s × the baseline's p99 %s of %s) or failed than %s of them allows",
		rec.Consecutive, analyze.FormatMs(rec.ThresholdMs), trimZeros(fmt.Sprintf("%.2f", rec.ThresholdMs/rec.BaselineP99Ms)),
		analyze.FormatMs(rec.BaselineP99Ms), rec.Metric, pct(rec.Share))
	switch {
	case rec.LatestKnown:
		rec.Outcome, rec.Recovered, rec.RecoveryTimeMs = Pass, true, rec.LatestMs
		rec.Message = fmt.Sprintf("recovered %s after the burst ended%s: %s (resolution %s%s)",
			analyze.FormatMs(rec.RecoveryTimeMs), rec.between(), rule, analyze.FormatMs(rec.ResolutionMs), rec.baselineNote())
	case len(rec.Windows) == 0:
		rec.Reason = "no window after the burst was observed"
		rec.Message = "recovery inconclusive: " + rec.Reason
	case cut:
		rec.Reason = fmt.Sprintf("no slow window from %s after the burst on, but the observation ended after %d of the %d windows in a row a recovery needs (a longer --recovery-limit)",
			analyze.FormatMs(rec.EarliestMs), len(rec.Windows)-earliest, rec.Consecutive)
		rec.Message = "recovery inconclusive: " + rec.Reason
	case rec.EarliestKnown:
		rec.Reason = fmt.Sprintf("no slow window from %s after the burst on, but windows of fewer than %d requests cannot show a recovery", analyze.FormatMs(rec.EarliestMs), rec.MinJudged)
		rec.Message = "recovery inconclusive: " + rec.Reason
	default:
		rec.Outcome = Fail
		rec.Reason = fmt.Sprintf("observed %s after the burst ended (%d windows of %s) and no %s", analyze.FormatMs(rec.ObservedMs), len(rec.Windows), analyze.FormatMs(rec.ResolutionMs), rule)
		rec.Message = "did not recover within the planned window: " + rec.Reason
	}
	return rec
}

// baselineNote says how often the rule called the baseline's own windows
// slow, when it did.
func (r *Recovery) baselineNote() string {
	if r.BaselineSlow == 0 {
		return ""
	}
	return fmt.Sprintf("; it calls %d of the baseline's %d windows slow", r.BaselineSlow, r.BaselineWindows)
}

// between is " (earliest 20s)" when the earliest consistent time differs
// from the recovery time.
func (r *Recovery) between() string {
	if r.EarliestKnown && r.EarliestMs < r.LatestMs {
		return " (no slow window from " + analyze.FormatMs(r.EarliestMs) + " on)"
	}
	return ""
}

// state judges one window.
func (r *Recovery) state(w analyze.RecoveryWindow) (WindowState, float64) {
	p := analyze.BinomialSF(w.Judged, w.Bad, r.Share)
	switch {
	case w.Judged > 0 && p <= RecoveryAlpha:
		return WindowSlow, p
	case w.Judged >= r.MinJudged:
		return WindowRecovered, p
	}
	return WindowUndecided, p
}

// trailingRun is the index of the first of the windows at the end that
// all satisfy ok, or -1 when the last does not.
func (r *Recovery) trailingRun(ok func(WindowState) bool) int {
	i := len(r.Windows)
	for i > 0 && ok(r.Windows[i-1].State) {
		i--
	}
	if i == len(r.Windows) {
		return -1
	}
	return i
}

// firstRun is the index of the first window that starts Consecutive
// windows in a row satisfying ok, or -1.
func (r *Recovery) firstRun(ok func(WindowState) bool) int {
	run := 0
	for i, w := range r.Windows {
		if !ok(w.State) {
			run = 0
			continue
		}
		if run++; run == r.Consecutive {
			return i - run + 1
		}
	}
	return -1
}

// RecoveryWindowFor is the recovery windows' length for a baseline of rate
// req/s: the analysis window, or the smallest multiple of it in which
// the arrivals at that rate are enough to decide a window (minJudged at
// the baseline's nominal 1% share, 37) with three standard deviations of
// Poisson arrivals to spare (55 expected) — 10 s at 7 req/s, 30 s at 2
// req/s, 60 s at 1 req/s.
func RecoveryWindowFor(rate float64, window time.Duration) time.Duration {
	if rate <= 0 || window <= 0 {
		return window
	}
	n := float64(minJudged(RecoveryP99Share))
	need := time.Duration((n + 3*math.Sqrt(n)) / rate * float64(time.Second))
	k := max(1, (need+window-1)/window)
	return k * window
}

// minJudged is the fewest requests a window needs to be decided: the
// smallest n at which the window's test (RecoveryAlpha against share)
// calls a window of bad share max(RecoveryDetect, 3 × share) slow with
// at least even odds. About 40 at the defaults.
func minJudged(share float64) int64 {
	detect := min(0.99, max(RecoveryDetect, 3*share))
	for n := int64(1); n <= 100_000; n++ {
		k := int64(math.Ceil(float64(n) * share))
		for k <= n && analyze.BinomialSF(n, k, share) > RecoveryAlpha {
			k++
		}
		if k <= n && analyze.BinomialSF(n, k, detect) >= 0.5 {
			return n
		}
	}
	return 100_000
}

// queueDrain finds when the engine's waiting queue returned to the
// baseline's highest level after the burst: the first scrape after the
// burst's end from which the gauge stayed at or below it for a window
// (or to the last scrape).
func queueDrain(a *analyze.Result, samples []scrape.Sample, m *analyze.Recovery) QueueDrain {
	q := QueueDrain{}
	base, okBase := a.Phase(a.Settings.BaselinePhase)
	burst, okBurst := a.Phase(a.Settings.BurstPhase)
	if !okBase || !okBurst {
		q.Reason = "no baseline or burst phase"
		return q
	}
	ms := func(s scrape.Sample) float64 { return float64(s.TNs) / 1e6 }
	var pts []scrape.Sample
	baseSeen := false
	for _, s := range samples {
		if math.IsNaN(s.Waiting) {
			continue
		}
		t := ms(s)
		if t >= base.StartMs && t < base.EndMs {
			q.BaselineMax, baseSeen = max(q.BaselineMax, s.Waiting), true
		}
		if t >= burst.StartMs {
			q.Peak = max(q.Peak, s.Waiting)
		}
		if t >= m.BurstEndMs {
			pts = append(pts, s)
		}
	}
	switch {
	case len(samples) == 0:
		q.Reason = "the engine's metrics were not scraped"
		return q
	case !baseSeen:
		q.Reason = "no scrape of the waiting queue during the baseline"
		return q
	case len(pts) == 0:
		q.Reason = "no scrape of the waiting queue after the burst"
		return q
	}
	q.Measured = true
	for i := range pts {
		if pts[i].Waiting > q.BaselineMax {
			continue
		}
		held := true
		for j := i + 1; j < len(pts) && ms(pts[j])-ms(pts[i]) < m.ResolutionMs; j++ {
			if pts[j].Waiting > q.BaselineMax {
				held = false
				break
			}
		}
		if held {
			q.Drained, q.DrainedMs = true, max(0, ms(pts[i])-m.BurstEndMs)
			return q
		}
	}
	q.StillWaitingAt = pts[len(pts)-1].Waiting
	return q
}
