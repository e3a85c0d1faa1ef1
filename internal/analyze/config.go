package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultWindow         = 10 * time.Second // arrival-time window length
	defaultSampleEvery    = time.Second      // timeline sample step
	defaultBaselinePhase  = "baseline"       // phase whose latency recovery is compared with
	defaultBurstPhase     = "burst"          // phase whose end recovery is measured from
	defaultRecoveryTol    = 0.10             // P99 may exceed the baseline P99 by 10 %
	defaultFailureTol     = 0.01             // failure rate may exceed the baseline's by 1 point
	DefaultConsecutive    = 3                // qualifying windows in a row
	defaultRecoveryMetric = MetricE2ESchedule
)

// DefaultDeadlines are docs/method.md §1's per-request deadlines: first content token
// within 2 s and completion within 12 s of the scheduled arrival.
var DefaultDeadlines = Deadlines{TTFT: 2 * time.Second, E2E: 12 * time.Second}

// Phase is one phase of a run: requests scheduled in [Start, End) belong to it.
type Phase struct {
	Name     string        // warmup, baseline, burst, recovery, …
	Start    time.Duration // offset of the phase start from the run origin
	End      time.Duration // offset of the phase end (exclusive) from the run origin
	Rate     float64       // planned offered rate, requests/s (informational)
	Excluded bool          // left out of the overall aggregate (warmup)
}

// Deadlines is the per-request deadline that decides goodput. Both are
// measured from the scheduled arrival. A zero field disables that clause in
// Judge; a zero Deadlines in Config means DefaultDeadlines.
type Deadlines struct {
	TTFT time.Duration // first content token within this of the scheduled arrival
	E2E  time.Duration // completion within this of the scheduled arrival
	// TPOT, when set, is a clause of the per-request deadline too: time
	// per output token within this (DistServe's goodput: TTFT and TPOT).
	TPOT time.Duration
	// Token, when set, is the per-token budget of smooth goodput: token i
	// (0 = the first) is due at scheduled arrival + TTFT + i × Token, and a
	// request is smoothly good when every token met its due time
	// (smoothGood). It does not change Judge.
	Token time.Duration
}

// Metric names a latency distribution. The names are stable: they are JSON
// keys in summary.json.
type Metric string

// The distributions an Analyzer keeps, in their stable order.
const (
	MetricTTFTSchedule  Metric = "ttft_schedule"      // first content token − scheduled (ok)
	metricTTFTSend      Metric = "ttft_send"          // first content token − sent (ok)
	metricTPOT          Metric = "tpot"               // time per output token (ok)
	metricITLMax        Metric = "itl_max"            // longest inter-chunk gap of a request (ok)
	metricE2ESend       Metric = "e2e_send"           // done − sent (ok)
	MetricE2ESchedule   Metric = "e2e_schedule"       // done − scheduled (ok)
	metricScheduleLag   Metric = "schedule_lag"       // sent − scheduled (every sent request)
	metricConnWait      Metric = "conn_wait"          // connection acquired − sent
	metricConnToHeaders Metric = "conn_to_headers"    // response headers − connection acquired
	metricTTFTTextSend  Metric = "ttft_text_send"     // first answer text − sent (ok; differs from ttft_send when the model thought first)
	metricTTFTTextSched Metric = "ttft_text_schedule" // first answer text − scheduled (ok)
	metricGatewayWait   Metric = "gateway_wait"       // the gateway's own wait, as it announced it (every response that did)
	metricUpstream      Metric = "upstream"           // the upstream's time to its headers, as the gateway announced it
)

// Metrics lists every Metric in its stable order.
var Metrics = []Metric{
	MetricTTFTSchedule, metricTTFTSend, metricTPOT, metricITLMax,
	metricE2ESend, MetricE2ESchedule, metricScheduleLag, metricConnWait, metricConnToHeaders,
	metricTTFTTextSend, metricTTFTTextSched, metricGatewayWait, metricUpstream,
}

const numMetrics = 13

// maxWindows bounds the windows of a run (a week at 10 s).
const maxWindows = 60_480

// metric indexes, in the order of Metrics.
const (
	mTTFTSchedule = iota
	mTTFTSend
	mTPOT
	mITLMax
	mE2ESend
	mE2ESchedule
	mLag
	mConnWait
	mConnToHeaders
	mTTFTTextSend
	mTTFTTextSched
	mGatewayWait
	mUpstream
)

// censorable reports whether timeouts count in metric i's distribution:
// the time-to-first-token and completion latencies, where a timed-out
// request would have ranked above every value. Per-token metrics (TPOT,
// longest gap) say nothing about requests that timed out.
func censorable(i int) bool {
	switch i {
	case mTTFTSchedule, mTTFTSend, mE2ESend, mE2ESchedule, mTTFTTextSend, mTTFTTextSched:
		return true
	}
	return false
}

func metricIndex(m Metric) int {
	return slices.Index(Metrics, m)
}

// RecoveryRule decides when the system is back to baseline after a burst
// (docs/method.md §3). Zero fields take the defaults.
type RecoveryRule struct {
	Window           time.Duration // window length; 0 = Config.Window
	Tolerance        float64       // P99 may be at most baseline P99 × (1 + Tolerance); 0 = 0.10
	FailureTolerance float64       // failure rate may be at most baseline's + this; 0 = 0.01
	Consecutive      int           // qualifying windows in a row; 0 = 3
	Metric           Metric        // latency compared; "" = e2e_schedule (ttft_schedule is the other usual choice)
}

// Config describes how to analyze a run. Its zero value is not usable: at
// least one phase is required. Zero fields otherwise take the defaults.
type Config struct {
	Phases        []Phase       // the run's phases; non-overlapping
	Window        time.Duration // arrival-time window length; 0 = 10 s
	Deadlines     Deadlines     // per-request deadline for goodput; zero = DefaultDeadlines
	Timeout       time.Duration // the per-request timeout in use, shown in "> timeout"; 0 = unknown
	Recovery      RecoveryRule  // recovery rule; zero fields = defaults
	BaselinePhase string        // "" = "baseline"
	BurstPhase    string        // "" = "burst"
	SampleEvery   time.Duration // timeline sample step; 0 = 1 s
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Deadlines == (Deadlines{}) {
		c.Deadlines = DefaultDeadlines
	}
	if c.BaselinePhase == "" {
		c.BaselinePhase = defaultBaselinePhase
	}
	if c.BurstPhase == "" {
		c.BurstPhase = defaultBurstPhase
	}
	if c.SampleEvery == 0 {
		c.SampleEvery = defaultSampleEvery
	}
	r := &c.Recovery
	if r.Window == 0 {
		r.Window = c.Window
	}
	if r.Tolerance == 0 {
		r.Tolerance = defaultRecoveryTol
	}
	if r.FailureTolerance == 0 {
		r.FailureTolerance = defaultFailureTol
	}
	if r.Consecutive == 0 {
		r.Consecutive = DefaultConsecutive
	}
	if r.Metric == "" {
		r.Metric = defaultRecoveryMetric
	}
	c.Phases = slices.Clone(c.Phases)
	return c
}

// Validate reports every problem with c (after defaults), naming the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("analyze: config: "+format, args...))
	}
	if len(c.Phases) == 0 {
		bad("phases: at least one phase is required")
	}
	seen := map[string]bool{}
	for i, p := range c.Phases {
		switch {
		case p.Name == "":
			bad("phases[%d]: name is empty", i)
		case seen[p.Name]:
			bad("phases[%d]: duplicate name %q", i, p.Name)
		}
		seen[p.Name] = true
		if p.Start < 0 {
			bad("phases[%d] %q: start %v is negative", i, p.Name, p.Start)
		}
		if p.End <= p.Start {
			bad("phases[%d] %q: end %v must be after start %v", i, p.Name, p.End, p.Start)
		}
		if p.Rate < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) {
			bad("phases[%d] %q: rate %v must be a finite number ≥ 0", i, p.Name, p.Rate)
		}
	}
	sorted := slices.Clone(c.Phases)
	slices.SortFunc(sorted, func(a, b Phase) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Start < sorted[i-1].End {
			bad("phases: %q [%v, %v) overlaps %q [%v, %v)", sorted[i].Name, sorted[i].Start, sorted[i].End,
				sorted[i-1].Name, sorted[i-1].Start, sorted[i-1].End)
		}
	}
	var span time.Duration // from the first phase start to the last phase end
	if len(sorted) > 0 {
		span = slices.MaxFunc(sorted, func(a, b Phase) int { return cmp.Compare(a.End, b.End) }).End - sorted[0].Start
	}
	switch {
	case c.Window < 0:
		bad("window: %v must be > 0", c.Window)
	case c.Window > 0 && span/c.Window > maxWindows:
		bad("window: %v gives more than %d windows over the run's %v", c.Window, maxWindows, span)
	}
	switch {
	case c.SampleEvery < 0:
		bad("sample_every: %v must be > 0", c.SampleEvery)
	case c.SampleEvery > 0 && span/c.SampleEvery >= maxTimelineSamples:
		bad("sample_every: %v gives more than %d timeline samples over the run's %v", c.SampleEvery, maxTimelineSamples, span)
	}
	if c.Deadlines.TTFT < 0 {
		bad("deadlines.ttft: %v is negative", c.Deadlines.TTFT)
	}
	if c.Deadlines.E2E < 0 {
		bad("deadlines.e2e: %v is negative", c.Deadlines.E2E)
	}
	if c.Deadlines.TPOT < 0 {
		bad("deadlines.tpot: %v is negative", c.Deadlines.TPOT)
	}
	if c.Deadlines.Token < 0 {
		bad("deadlines.token: %v is negative", c.Deadlines.Token)
	}
	if c.Timeout < 0 {
		bad("timeout: %v is negative", c.Timeout)
	}
	r := c.Recovery
	switch {
	case r.Window < 0:
		bad("recovery.window: %v must be > 0", r.Window)
	case r.Window > 0 && span/r.Window > maxWindows:
		bad("recovery.window: %v gives more than %d windows over the run's %v", r.Window, maxWindows, span)
	}
	if r.Tolerance < 0 || math.IsNaN(r.Tolerance) || math.IsInf(r.Tolerance, 0) {
		bad("recovery.tolerance: %v must be a finite number ≥ 0", r.Tolerance)
	}
	if r.FailureTolerance < 0 || r.FailureTolerance > 1 || math.IsNaN(r.FailureTolerance) {
		bad("recovery.failure_tolerance: %v must be within [0, 1]", r.FailureTolerance)
	}
	if r.Consecutive < 0 {
		bad("recovery.consecutive: %d must be ≥ 1", r.Consecutive)
	}
	if i := metricIndex(r.Metric); i < 0 || !censorable(i) {
		bad("recovery.metric: %q is not a latency metric (use ttft_schedule, ttft_send, tpot, itl_max, e2e_send or e2e_schedule)", r.Metric)
	}
	return errors.Join(errs...)
}
