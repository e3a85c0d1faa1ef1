package experiment

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/scrape"
)

// Diagnose is judge.Diagnose of one run, for the reports: the
// generator verdict over the judged phase's sends (the burst phase, or
// the measured phases of a run without one), the engine's waiting and
// running gauges and its queue wait per phase, and the records.
func Diagnose(scope string, res *run.Result) report.Diagnosis {
	if d, ok := unusable(scope, res); ok {
		return d
	}
	return ReportDiagnosis(judge.Diagnose(DiagnosisInput(scope, res)))
}

// unusable is the diagnosis of a run stopped early against an unusable
// target (run.Result.Unusable), over all its phases.
func unusable(scope string, res *run.Result) (report.Diagnosis, bool) {
	if res.Unusable == "" {
		return report.Diagnosis{}, false
	}
	var faults analyze.FaultCounts
	if res.Diag != nil {
		var phases []string
		for _, p := range res.Analysis.Phases {
			phases = append(phases, p.Name)
		}
		faults = res.Diag.Faults(phases)
	}
	return ReportDiagnosis(judge.UnusableDiagnosis(scope, res.Unusable, faults, res.Diag)), true
}

// DiagnoseWith is Diagnose with the capacity μ the run knows and the
// fluid model's prediction (a burst's), which the hints compare the
// measured throughput and recovery with.
func DiagnoseWith(scope string, res *run.Result, capacity judge.DiagCapacity) report.Diagnosis {
	if d, ok := unusable(scope, res); ok {
		return d
	}
	in := DiagnosisInput(scope, res)
	in.Capacity = capacity
	return ReportDiagnosis(judge.Diagnose(in))
}

// DiagnosisInput gathers what judge.Diagnose looks at from a run.
func DiagnosisInput(scope string, res *run.Result) judge.DiagnosisInput {
	a := res.Analysis
	in := judge.DiagnosisInput{Scope: scope, Result: a, Verdicts: res.Verdicts, Simulated: res.Simulated && !simGateway(a), Records: res.Records, Tally: res.Diag, Capacity: judge.DiagCapacity{PredictedRecoveryMs: math.NaN()}}
	for _, e := range res.SimEvents {
		in.Scaling = append(in.Scaling, judge.ScaleEvent{AtMs: float64(e.At) / 1e6, Kind: e.Kind, Replica: e.Replica})
	}
	from, to := int64(math.MaxInt64), int64(math.MinInt64)
	judged := false
	for _, p := range a.Phases {
		if p.Name == a.Settings.BurstPhase {
			from, to, judged = int64(p.StartMs*1e6), int64(p.EndMs*1e6), true
			break
		}
	}
	if !judged {
		for _, p := range a.Phases {
			if !p.Excluded {
				from, to = min(from, int64(p.StartMs*1e6)), max(to, int64(p.EndMs*1e6))
			}
		}
	}
	if !res.Virtual && res.Spec.Closed == nil && from < to {
		var lag float64
		if p, ok := a.Phase(a.Settings.BurstPhase); ok {
			lag = p.Latency.ScheduleLag.P99Ms
		} else {
			lag = a.Overall.Latency.ScheduleLag.P99Ms
		}
		in.Generator = generatorOf(res, from, to, lag)
	}
	if len(res.Engine) == 0 {
		return in
	}
	in.Engine = map[string]judge.EngineQueue{}
	queue := func(name string, fromNs, toNs int64) {
		w := scrape.Gauge(res.Engine, scrape.Waiting, fromNs, toNs)
		r := scrape.Gauge(res.Engine, scrape.Running, fromNs, toNs)
		e := judge.EngineQueue{Scrapes: w.N, WaitingMax: w.Max, WaitingMean: w.Mean, RunningMax: r.Max}
		if et, ok := res.EngineTiming[name]; ok && et.Queue.Available {
			e.Wait = et.Queue
		} else {
			e.Wait = res.QueueWait[name]
		}
		in.Engine[name] = e
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, p := range a.Phases {
		s, e := int64(p.StartMs*1e6), int64(p.EndMs*1e6)
		queue(p.Name, s, e)
		if !p.Excluded {
			lo, hi = min(lo, s), max(hi, e)
		}
	}
	if lo < hi {
		queue("overall", lo, hi)
	}
	return in
}

// ReportDiagnosis converts an analysis diagnosis for the reports.
func ReportDiagnosis(d judge.Diagnosis) report.Diagnosis {
	out := report.Diagnosis{Scope: d.Scope, Mode: d.Mode, Summary: d.Summary}
	for _, h := range d.Hints {
		out.Hints = append(out.Hints, report.Hint{Hypothesis: h.Hypothesis, Evidence: h.Evidence, Check: h.Check})
	}
	return out
}

// WithDiagnosis returns s with its Diagnosis set to d; a nil s becomes a
// summary holding only the diagnosis, every number unknown (NaN).
func WithDiagnosis(s *report.RunSummary, d report.Diagnosis) *report.RunSummary {
	if s == nil {
		nan := math.NaN()
		s = &report.RunSummary{Mu: nan, PredictedPeakBacklog: nan, MeasuredPeakBacklog: nan, PredictedRecoveryS: nan, MeasuredRecoveryS: nan}
	}
	s.Diagnosis = &d
	return s
}

// PrintDiagnoses writes the diagnosis of each run right after the
// verdicts: one line per scope ("  5×  backlogged: <summary>") and its
// first hint, if any, on the line below — the others are in results.md.
// It prints nothing without diagnoses.
func PrintDiagnoses(w io.Writer, ds []report.Diagnosis) {
	if len(ds) == 0 {
		return
	}
	width := 0
	for _, d := range ds {
		width = max(width, len([]rune(d.Scope)))
	}
	var b strings.Builder
	b.WriteString("\nDiagnosis (hypotheses to check, not conclusions; evidence and every hint in results.md):\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "  %s%s  %s: %s\n", d.Scope, strings.Repeat(" ", width-len([]rune(d.Scope))), d.Mode, d.Summary)
		if len(d.Hints) > 0 {
			// The evidence stays in results.md: the terminal keeps the
			// hypothesis and what to check, one line.
			fmt.Fprintf(&b, "  %s  suggests %s; check %s\n", strings.Repeat(" ", width), d.Hints[0].Hypothesis, d.Hints[0].Check)
		}
	}
	io.WriteString(w, b.String())
}

// simGateway reports whether the simulator answered with its gateway's
// rate-limit headers (--quota-*): it then has a layer in front of its
// engine, and the diagnosis must not say it has none.
func simGateway(a *analyze.Result) bool { return a.Overall.Client.RateLimit.Responses > 0 }
