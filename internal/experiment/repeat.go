package experiment

import (
	"fmt"
	"math"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
)

// Repeated trials (--repeat N; docs/method.md "Repeated trials"): N
// separate runs of one configuration, each in its own folder rep-1 …
// rep-N, the settle gate before each, rep k with the seed + k − 1. They
// are reported per run, then pooled — the runs' raw observations analysed
// together (analyze.Pool), never their percentiles averaged — and with
// the spread of each run's P99s, goodput and recovery (analyze.SpreadOf).

// RepDir is the folder of rep k (1-based) inside a repeated
// configuration's folder.
func RepDir(k int) string { return fmt.Sprintf("rep-%d", k) }

// RepeatUsage is the help of --repeat.
const RepeatUsage = "run each configuration this many times, each run in its own folder rep-1 … rep-N with the settle gate between them and rep k seeded with --seed + k − 1; reported per run, pooled (raw observations merged) and with the spread (min/median/max, a 95% bootstrap interval from 5 runs on)"

// ValidateRepeat checks a --repeat count.
func ValidateRepeat(n int) error {
	if n < 1 {
		var errs field.Errors
		errs.Add("repeat", "must be ≥ 1 (the number of runs of each configuration), got %d", n)
		return errs.Err()
	}
	return nil
}

// Pooled is the results of repeated runs analysed as one (analyze.Pool):
// a Result whose Analysis holds the merged phases and overall, for
// Row and OverallRow. Its recovery, windows and engine queue are per run,
// not pooled.
func Pooled(env *run.Env, results []*run.Result) (*run.Result, error) {
	var runs []analyze.PoolRun
	partial, interrupted := false, false
	why, cause := "", record.PartialCause("")
	for _, r := range results {
		cfg := env.AnalyzeConfig(r.Plan, r.Spec.Exclude, r.Spec.Recovery)
		runs = append(runs, analyze.PoolRun{Config: cfg, Records: r.Records})
		if r.Partial {
			partial, why, cause = true, r.PartialWhy, r.PartialCause
		}
		interrupted = interrupted || r.PartialCause.CutRequests()
	}
	a, err := analyze.Pool(runs)
	if err != nil {
		return nil, err
	}
	slo := env.Opts.SLO()
	slo.Interrupted = interrupted
	first := results[0]
	return &run.Result{Spec: first.Spec, Analysis: a, Verdicts: judge.Pooled(a, slo, partial), Partial: partial, PartialCause: cause, PartialWhy: why, Simulated: first.Simulated, Virtual: first.Virtual, Plan: first.Plan,
		QueueWait: map[string]analyze.QueueWait{}}, nil
}

// WholeRuns splits repeated runs into the ones that ran their whole plan
// (indexes into results) and the notes naming the others: a run cut short
// (Ctrl-C, a budget) is not a trial of the configuration, so the pooled
// row and the spread leave it out — its phases end early, and its P99 is
// of fewer, earlier requests. scope prefixes the notes.
func WholeRuns(scope string, results []*run.Result) (whole []int, notes []string) {
	for i, r := range results {
		if r.Partial {
			notes = append(notes, fmt.Sprintf("%s: rep %d is left out of the pooled row and the spread: it was cut short (%s)", scope, r.Spec.Rep, r.PartialWhy))
			continue
		}
		whole = append(whole, i)
	}
	if len(whole) < 2 && len(notes) > 0 {
		notes = append(notes, fmt.Sprintf("%s: fewer than 2 whole runs: no pooled row and no spread", scope))
	}
	return whole, notes
}

// PoolRow marks a row built from Pooled as the pooled row of n runs: the
// engine's own measurements are per run — n/a for the reason the first
// run's row (first) gives when it has none either, e.g. no --metrics-url.
func PoolRow(r *report.Row, n int, first report.Row) {
	r.Rep, r.Pooled, r.Repeats = 0, true, n
	r.QueueWait, r.EngineQueue = report.PercentilesNA(reasonPooledEngine), report.PercentilesNA(reasonPooledEngine)
	if !first.QueueWait.P50.Valid && !first.QueueWait.P50.Censored {
		r.QueueWait = first.QueueWait
	}
	if !first.EngineQueue.P50.Valid && !first.EngineQueue.P50.Censored {
		r.EngineQueue = first.EngineQueue
	}
}

const reasonPooledEngine = "pooled: the engine's queue wait is measured per run (see the runs' rows)"

// ReasonPooledRecovery is the pooled row's recovery: one value per scaling
// event, so the spread line gives the runs' distribution instead.
const ReasonPooledRecovery = "pooled: recovery is one value per run (scaling event); the spread line gives the runs' min/median/max"

// SpreadMetrics are the columns a spread line is given for.
var SpreadMetrics = []string{"ttft_p99_ms", "completion_p99_ms", "goodput_rps", "recovery_s"}

// Spreads is the spread of each SpreadMetrics column over the rows of one
// configuration's runs (rep order), for scope; recovery only where some
// run judged it. seed makes the bootstrap reproducible.
func Spreads(scope string, rows []report.Row, seed int64) []report.Spread {
	var out []report.Spread
	for _, m := range SpreadMetrics {
		vals := make([]analyze.RunValue, len(rows))
		shown := make([]report.Opt, len(rows))
		any := false
		for i := range rows {
			o := rowValue(&rows[i], m)
			shown[i] = o
			vals[i] = analyze.RunValue{V: math.NaN()}
			switch {
			case o.Valid:
				vals[i], any = analyze.RunValue{V: o.V}, true
			case o.Censored && !o.AtMost:
				vals[i], any = analyze.RunValue{V: o.V, Bound: true}, true
			}
		}
		if !any {
			continue
		}
		s := analyze.SpreadOf(vals, uint64(seed))
		opt := func(v float64) report.Opt {
			if s.Bounds > 0 && v >= minBound(vals) {
				return report.Above(v, "some runs' values are lower bounds")
			}
			return report.Val(v)
		}
		sp := report.Spread{Scope: scope, Metric: m, Values: shown, Min: opt(s.Min), Median: opt(s.Median), Max: opt(s.Max),
			CILow: report.Unavailable(s.NoCI), CIHigh: report.Unavailable(s.NoCI)}
		if s.CI {
			sp.CILow, sp.CIHigh, sp.CILevel, sp.Resamples = report.Val(s.CILow), report.Val(s.CIHigh), s.CILevel, s.Resample
		}
		out = append(out, sp)
	}
	return out
}

// minBound is the smallest lower bound among vals (+Inf when none): a
// statistic at or above it may be a bound itself.
func minBound(vals []analyze.RunValue) float64 {
	m := math.Inf(1)
	for _, v := range vals {
		if v.Bound {
			m = min(m, v.V)
		}
	}
	return m
}

// rowValue is a row's value of a spread metric.
func rowValue(r *report.Row, metric string) report.Opt {
	switch metric {
	case "ttft_p99_ms":
		return r.TTFT.P99
	case "completion_p99_ms":
		return r.Completion.P99
	case "goodput_rps":
		return r.GoodputRPS
	case "recovery_s":
		switch r.Recovery.State {
		case report.Recovered:
			return report.Val(r.Recovery.Seconds)
		case report.NotRecovered:
			return report.Above(r.Recovery.Seconds, "did not recover in the time watched")
		}
		return report.Unavailable(r.Recovery.Reason)
	}
	return report.Unavailable("unknown metric")
}

// RepeatCounts is how many runs each configuration gets: the times it is
// listed × repeat. Listing a multiplier twice (--multipliers 5,5) asks
// for two runs of it, not two runs into one folder.
func RepeatCounts[K comparable](keys []K, repeat int) (order []K, runs map[K]int) {
	runs = map[K]int{}
	for _, k := range keys {
		if runs[k] == 0 {
			order = append(order, k)
		}
		runs[k] += max(1, repeat)
	}
	return order, runs
}
