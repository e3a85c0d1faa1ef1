package push

import (
	"math"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/live"
)

// The live values, pushed every second while a run goes (the live view's
// numbers: rates over the last second, latencies of the requests that
// finished in the last live.Window). Each carries the phase of the
// moment.
var (
	LiveOffered   = &Metric{"surge_offered_rps", "surge.offered_rate", "{request}/s", "Arrivals scheduled per second over the last second."}
	LiveSent      = &Metric{"surge_sent_rps", "surge.sent_rate", "{request}/s", "Requests sent per second over the last second."}
	LiveCompleted = &Metric{"surge_completed_rps", "surge.completed_rate", "{request}/s", "Successful completions per second over the last second, by completion time."}
	LiveGoodput   = &Metric{"surge_goodput_rps", "surge.goodput_rate", "{request}/s", "Completions within the per-request deadline per second over the last second."}
	LiveInFlight  = &Metric{"surge_in_flight", "surge.in_flight", "{request}", "Requests in flight."}
	LiveWaiting   = &Metric{"surge_engine_waiting", "surge.engine.waiting", "{request}", "The engine's waiting queue as last scraped (--metrics-url)."}
	LiveTTFTP95   = &Metric{"surge_window_ttft_p95_seconds", "surge.window.ttft.p95", "s", "P95 TTFT from the schedule of the requests that finished in the last 10 s."}
	LiveE2EP99    = &Metric{"surge_window_completion_p99_seconds", "surge.window.completion.p99", "s", "P99 completion time from the schedule of the requests that finished in the last 10 s."}
	LiveDrops     = &Metric{"surge_generator_drops", "surge.generator.drops", "{request}", "Arrivals dropped by the in-flight cap so far."}
	LiveErrors    = &Metric{"surge_errors", "surge.errors", "{request}", "Failed requests so far (not counting the cancelled)."}
	LiveLagMax    = &Metric{"surge_schedule_lag_max_seconds", "surge.schedule_lag.max", "s", "Largest schedule lag (sent − scheduled) so far."}
	LiveElapsed   = &Metric{"surge_elapsed_seconds", "surge.elapsed", "s", "Seconds since the run's origin."}
)

// Live is the batch of one live status at at: the gauges above, with the
// status's phase. A value not known (no request finished in the window,
// no engine scrape) is left out rather than sent as NaN.
func Live(s live.Status, at time.Time, common []Label) *Batch {
	ms := at.UnixMilli()
	phase := []Label{{"phase", s.Phase}}
	b := &Batch{Common: common}
	add := func(m *Metric, v float64) {
		if !math.IsNaN(v) {
			b.Points = append(b.Points, Point{Metric: m, Labels: phase, Value: v, AtMs: ms})
		}
	}
	add(LiveOffered, s.Offered)
	add(LiveSent, s.Sent)
	add(LiveCompleted, s.OK)
	add(LiveGoodput, s.Goodput)
	add(LiveInFlight, float64(s.InFlight))
	add(LiveWaiting, s.Waiting)
	if s.TTFTP95 != live.NoData {
		add(LiveTTFTP95, s.TTFTP95.Seconds())
	}
	if s.P99 != live.NoData {
		add(LiveE2EP99, s.P99.Seconds())
	}
	add(LiveDrops, float64(s.Drops))
	add(LiveErrors, float64(s.Errors))
	add(LiveLagMax, s.LagMax.Seconds())
	add(LiveElapsed, s.Elapsed.Seconds())
	return b
}

// StaleNaN is Prometheus's staleness marker: a sample with this value
// ends a series at once, rather than after the 5-minute lookback
// (prometheus/model/value.StaleNaN). OTLP sends it as a point with no
// recorded value.
var StaleNaN = math.Float64frombits(0x7ff0000000000002)

func isStale(v float64) bool { return math.Float64bits(v) == 0x7ff0000000000002 }

// LiveStale is a batch of staleness markers for the live series of phase
// at at: pushed when the phase (or the run) ends, so that Grafana stops
// drawing its last value.
func LiveStale(phase string, at time.Time, common []Label) *Batch {
	b := &Batch{Common: common}
	for _, m := range liveMetrics {
		b.Points = append(b.Points, Point{Metric: m, Labels: []Label{{"phase", phase}}, Value: StaleNaN, AtMs: at.UnixMilli()})
	}
	return b
}

var liveMetrics = []*Metric{LiveOffered, LiveSent, LiveCompleted, LiveGoodput, LiveInFlight, LiveWaiting, LiveTTFTP95, LiveE2EP99, LiveDrops, LiveErrors, LiveLagMax, LiveElapsed}

// The per-phase values, pushed once when a run's analysis is done: the
// same numbers as the run's summary.json ("analysis.phases") and its
// results.json rows, so that PromQL and the files agree.
var (
	PhaseOffered      = &Metric{"surge_phase_offered_requests", "surge.phase.offered", "{request}", "Arrivals scheduled in the phase (summary.json: offered)."}
	PhaseSucceeded    = &Metric{"surge_phase_completed_requests", "surge.phase.completed", "{request}", "Requests of the phase that completed successfully (summary.json: succeeded)."}
	PhaseGood         = &Metric{"surge_phase_good_requests", "surge.phase.good", "{request}", "Requests of the phase that met the per-request deadline (summary.json: good)."}
	PhaseOfferedRPS   = &Metric{"surge_phase_offered_rps", "surge.phase.offered_rate", "{request}/s", "Offered rate of the phase."}
	PhaseCompletedRPS = &Metric{"surge_phase_completed_rps", "surge.phase.completed_rate", "{request}/s", "Completions per second in the phase, by completion time."}
	PhaseGoodputRPS   = &Metric{"surge_phase_goodput_rps", "surge.phase.goodput_rate", "{request}/s", "Goodput of the phase: requests within the deadline per second."}
	PhaseGoodputRatio = &Metric{"surge_phase_goodput_ratio", "surge.phase.goodput_ratio", "1", "Good requests over offered arrivals."}
	PhaseFailureRate  = &Metric{"surge_phase_failure_rate", "surge.phase.failure_rate", "1", "Errors, 429s, timeouts and drops over offered arrivals."}
	PhaseTTFT         = &Metric{"surge_phase_ttft_seconds", "surge.phase.ttft", "s", "TTFT from the schedule, by quantile (0.5, 0.95, 0.99)."}
	PhaseCompletion   = &Metric{"surge_phase_completion_seconds", "surge.phase.completion", "s", "Completion time from the schedule, by quantile (0.5, 0.95, 0.99)."}
)

// Phases is the batch of a run's per-phase values at at. A percentile of
// a phase without a successful request is left out.
func Phases(r *analyze.Result, at time.Time, common []Label) *Batch {
	ms := at.UnixMilli()
	b := &Batch{Common: common}
	for i := range r.Phases {
		p := &r.Phases[i]
		ph := []Label{{"phase", p.Name}}
		add := func(m *Metric, v float64) {
			b.Points = append(b.Points, Point{Metric: m, Labels: ph, Value: v, AtMs: ms})
		}
		add(PhaseOffered, float64(p.Offered))
		add(PhaseSucceeded, float64(p.Succeeded))
		add(PhaseGood, float64(p.Good))
		add(PhaseOfferedRPS, p.OfferedRPS)
		add(PhaseCompletedRPS, p.CompletedRPS)
		add(PhaseGoodputRPS, p.GoodputRPS)
		add(PhaseGoodputRatio, p.GoodputRatio)
		add(PhaseFailureRate, p.FailureRate)
		// A censored percentile (beyond the timeout: only a lower bound is
		// known, summary.json says pNN_censored) is left out.
		quantiles := func(m *Metric, d analyze.Dist) {
			if d.Count == 0 {
				return
			}
			for _, q := range [...]struct {
				q        string
				ms       float64
				censored bool
			}{{"0.5", d.P50Ms, d.P50Censored}, {"0.95", d.P95Ms, d.P95Censored}, {"0.99", d.P99Ms, d.P99Censored}} {
				if !q.censored {
					b.Points = append(b.Points, Point{Metric: m, Labels: []Label{ph[0], {"quantile", q.q}}, Value: q.ms / 1e3, AtMs: ms})
				}
			}
		}
		quantiles(PhaseTTFT, p.Latency.TTFTSchedule)
		quantiles(PhaseCompletion, p.Latency.E2ESchedule)
	}
	return b
}

// Catalogue is every metric surge pushes (the Grafana dashboard's test
// checks that it names no other).
func Catalogue() []*Metric {
	return append(slices.Clone(liveMetrics),
		PhaseOffered, PhaseSucceeded, PhaseGood, PhaseOfferedRPS, PhaseCompletedRPS, PhaseGoodputRPS, PhaseGoodputRatio, PhaseFailureRate, PhaseTTFT, PhaseCompletion,
		GenAIDuration, GenAITTFC, GenAITokens)
}
