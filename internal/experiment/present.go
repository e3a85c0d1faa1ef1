package experiment

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
)

// PrintPhases writes the per-phase summary of a run, the way `surge run`
// shows it at the end.
func PrintPhases(w io.Writer, res *run.Result) {
	a := res.Analysis
	fmt.Fprintf(w, "\n%s — %d records in %s%s\n", res.Spec.Name, res.Count(), res.Spec.Dir.Path(), partialNote(res))
	report.WriteGridText(w, phaseGrid(res))
	if b := a.Settings.TokenDeadlineMs; b > 0 {
		var parts []string
		for i := range a.Phases {
			if p := &a.Phases[i]; !p.Excluded {
				parts = append(parts, fmt.Sprintf("%s %.1f%% (%.2f/s, goodput %.1f%%)", p.Name, 100*p.SmoothGoodputRatio, p.SmoothGoodputRPS, 100*p.GoodputRatio))
			}
		}
		fmt.Fprintf(w, "smooth goodput (every token i by the TTFT deadline %s + i × %s): %s\n",
			analyze.FormatMs(a.Settings.TTFTDeadlineMs), analyze.FormatMs(b), strings.Join(parts, ", "))
	}
	measured := slices.DeleteFunc(slices.Clone(a.Phases), func(p analyze.PhaseResult) bool { return budgetCut(res, p.Name) != "" })
	if line := judge.ArrivalVsCompletion(measured); line != "" {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	report.WriteGridText(w, latencyGrid(res))
	printProfiles(w, a)
	if line := inputsLine(a); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := bytesLine(a); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := outcomeLine(&a.Overall); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, line := range generatorNotes(res) {
		fmt.Fprintln(w, line)
	}
	for _, line := range WorkerLines(res) { // --workers (workers.go)
		fmt.Fprintln(w, line)
	}
	for _, line := range ClientNotes(res) {
		fmt.Fprintln(w, line)
	}
	// The scraper's own notes (missing metrics, a preset mismatch) were
	// logged once, when they arose: not repeated here.
	if why := EngineReason(res.Scrape, scrape.QueueTime); why != "" {
		fmt.Fprintf(w, "engine queue wait (histogram) n/a: %s%s\n", why, noQueueConsequence(res))
	}
	for _, line := range EngineTimingLines(res) {
		fmt.Fprintln(w, line)
	}
	if line := ScalingLine(res); line != "" { // the autoscaling timeline (scaling.go)
		fmt.Fprintln(w, line)
	}
}

// phaseGrid is the per-phase load table of a run's terminal summary:
// rates, goodput and failures per phase, then overall.
func phaseGrid(res *run.Result) report.Grid {
	a := res.Analysis
	retried := a.Overall.Client.Attempts > a.Overall.Sent
	g := report.Grid{Columns: []report.Column{
		{Key: "phase", Head: "phase", Kind: report.KindText},
		{Key: "offered_rps", Head: "offered/s", Kind: report.KindRPS},
		{Key: "sent_rps", Head: "sent/s", Kind: report.KindRPS},
		{Key: "completed_rps", Head: "completed/s", Kind: report.KindRPS},
		{Key: "arrivals_ok_ratio", Head: "arrivals ok %", Kind: report.KindRatio},
		{Key: "goodput_rps", Head: "goodput/s", Kind: report.KindRPS},
		{Key: "goodput_ratio", Head: "good %", Kind: report.KindRatio},
		{Key: "error_rate", Head: "err %", Kind: report.KindRatio},
		{Key: "rejection_rate", Head: "429 %", Kind: report.KindRatio},
		{Key: "timeout_rate", Head: "timeout %", Kind: report.KindRatio},
		{Key: "drops", Head: "drops", Kind: report.KindCount},
	}}
	if retried {
		g.Columns = append(g.Columns, report.Column{Key: "attempts_rps", Head: "attempts/s", Kind: report.KindRPS},
			report.Column{Key: "attempts_per_arrival", Head: "attempts/arrival", Kind: report.KindNumber})
	}
	row := func(name, phase string, s *analyze.Stats) {
		completed := report.Val(s.CompletedRPS)
		if why := budgetCut(res, phase); why != "" {
			completed = report.Unavailable(why)
		}
		r := []report.Cell{report.TextCell(name), report.NumCell(report.Val(s.OfferedRPS)), report.NumCell(report.Val(s.SentRPS)), report.NumCell(completed),
			report.NumCell(report.Val(s.ArrivalsOKRatio)), report.NumCell(report.Val(s.GoodputRPS)), report.NumCell(report.Val(s.GoodputRatio)),
			report.NumCell(report.Val(s.ErrorRate)), report.NumCell(report.Val(s.RateLimitRate)), report.NumCell(report.Val(s.TimeoutRate)),
			report.NumCell(report.Val(float64(s.Outcomes["generator_drop"])))}
		if retried {
			r = append(r, report.NumCell(report.Val(s.Client.AttemptsRPS)), report.NumCell(report.Val(s.Client.AttemptsPerArrival)))
		}
		g.Rows = append(g.Rows, r)
	}
	for i := range a.Phases {
		p := &a.Phases[i]
		name := p.Name
		if p.Excluded {
			name += " (excluded)"
		}
		row(name, p.Name, &p.Stats)
	}
	row("overall", "", &a.Overall)
	return g
}

// latencyGrid is the per-phase latency table of a run's terminal summary:
// P50, P95 and P99 of each latency, with its samples, for the measured
// phases.
func latencyGrid(res *run.Result) report.Grid {
	a := res.Analysis
	g := report.Grid{Columns: []report.Column{
		{Key: "phase", Head: "phase", Kind: report.KindText},
		{Key: "latency", Head: "latency", Kind: report.KindText},
		{Key: "p50_ms", Head: "p50", Kind: report.KindNumber},
		{Key: "p95_ms", Head: "p95", Kind: report.KindNumber},
		{Key: "p99_ms", Head: "p99", Kind: report.KindNumber},
		{Key: "samples", Head: "samples", Kind: report.KindCount},
	}}
	thought := a.Overall.Client.ThoughtFirst > 0
	type line struct {
		label string
		d     analyze.Dist
	}
	for i := range a.Phases {
		p := &a.Phases[i]
		if p.Excluded {
			continue
		}
		l := &p.Latency
		lines := []line{{"TTFT from schedule", l.TTFTSchedule}, {"TTFT from send", l.TTFTSend}}
		if thought { // some requests thought first: both TTFTs, labelled
			lines = []line{
				{"TTFT (any token) from schedule", l.TTFTSchedule}, {"TTFT (any token) from send", l.TTFTSend},
				{"TTFT (answer text) from schedule", l.TTFTTextSched}, {"TTFT (answer text) from send", l.TTFTTextSend},
			}
		}
		lines = append(lines, line{"completion (from send)", l.E2ESend}, line{"TPOT", l.TPOT})
		if !res.Virtual { // virtual time sends on schedule, over no connection
			lines = append(lines, line{"schedule lag", l.ScheduleLag}, line{"connection wait", l.ConnWait})
		}
		if l.GatewayWait.Count > 0 {
			lines = append(lines, line{"gateway wait", l.GatewayWait})
		}
		if l.Upstream.Count > 0 {
			lines = append(lines, line{"upstream (to headers)", l.Upstream})
		}
		for _, m := range lines {
			o := DistOpts(m.d)
			g.Rows = append(g.Rows, []report.Cell{report.TextCell(p.Name), report.TextCell(m.label),
				report.ShownCell(m.d.Text(analyze.Q50), o[0]), report.ShownCell(m.d.Text(analyze.Q95), o[1]), report.ShownCell(m.d.Text(analyze.Q99), o[2]),
				report.NumCell(report.Val(float64(m.d.Count)))})
		}
	}
	return g
}

// EngineReason says why the engine metric m is unavailable from a run
// whose scraping ended as st, or "" when scraping found it:
//   - no --metrics-url: scraping was off;
//   - unknown: a re-rendered run lost the summary.json that said (and
//     has no engine.csv to tell);
//   - scrape failed (N of M): no scrape succeeded, N of the M attempts failed;
//   - metric not exported by this engine: scrapes succeeded, but the
//     preset has no such metric (llama.cpp has no queue-time histogram) or
//     none of its names was in any scrape.
func EngineReason(st scrape.Status, m scrape.Metric) string {
	name := m.String()
	switch {
	case st.State == scrape.StateUnknown && st.Samples == 0:
		return st.Reason
	case st.State == scrape.StateUnknown: // engine.csv has samples: the metric is there or not
		return ""
	case st.State == scrape.StateDisabled || st.State == "":
		return report.ReasonNoMetricsURL
	case st.State == scrape.StateUnavailable || st.State == scrape.StatePending || st.Samples == 0:
		why := fmt.Sprintf("scrape failed (%d of %d)", st.Failures, st.Failures+st.Samples)
		if st.Reason != "" {
			why += ": " + st.Reason
		}
		return why
	case slices.Contains(st.NotExported, name):
		return fmt.Sprintf("%s: the %s preset has no %s (%d scrapes succeeded)", report.ReasonNotExported, orPreset(st.Preset), name, st.Samples)
	case slices.Contains(st.Missing, name) || slices.Contains(st.Absent, name):
		return fmt.Sprintf("%s: %s not found in %d scrapes", report.ReasonNotExported, name, st.Samples)
	}
	return ""
}

func orPreset(p string) string {
	if p == "" {
		return "engine's"
	}
	return p
}

// inputsLine is what the ok requests of an embeddings or rerank run
// carried per phase, by arrival, e.g. "inputs of ok requests per second,
// by arrival: baseline 12.0/s (3,072 prompt tokens/s), …"; empty for the
// generating APIs.
func inputsLine(a *analyze.Result) string {
	if a.Overall.Inputs == 0 {
		return ""
	}
	var parts []string
	for i := range a.Phases {
		if p := &a.Phases[i]; !p.Excluded {
			parts = append(parts, fmt.Sprintf("%s %.1f/s (%s prompt tokens/s)", p.Name, p.InputsPS, analyze.Thousands(int64(math.Round(p.PromptTokensPS)))))
		}
	}
	return "inputs (texts or documents) of ok requests per second, by arrival: " + strings.Join(parts, ", ")
}

// bytesLine is the request bandwidth per phase of a run that sent
// images, e.g. "request bodies sent, by arrival: baseline 1.2 MB/s (2.0
// images/s), burst 6.1 MB/s (10.0 images/s)"; empty without images.
func bytesLine(a *analyze.Result) string {
	if a.Overall.Images == 0 {
		return ""
	}
	var parts []string
	for i := range a.Phases {
		if p := &a.Phases[i]; !p.Excluded {
			parts = append(parts, fmt.Sprintf("%s %.2f MB/s (%.1f images/s)", p.Name, p.RequestBytesPS/1e6, float64(p.Images)/max(p.DurationMs/1000, 1e-9)))
		}
	}
	return "request bodies sent, by arrival: " + strings.Join(parts, ", ")
}

// outcomeLine lists the failure classes of a group, e.g. "failures:
// conn_error 16, timeout 2 (of 40 offered)"; empty when nothing failed.
func outcomeLine(s *analyze.Stats) string {
	var parts []string
	for _, o := range record.Outcomes {
		if o == record.OK {
			continue
		}
		if n := s.Outcomes[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("failures: %s (of %d offered; details per request in requests.jsonl)", strings.Join(parts, ", "), s.Offered)
}

func partialNote(res *run.Result) string {
	switch {
	case res.Partial && res.PartialWhy != "":
		return " (PARTIAL: " + res.PartialWhy + ")"
	case res.Partial:
		return " (PARTIAL: interrupted)"
	}
	return ""
}

// generatorNotes says plainly when the generator could not keep the
// schedule (the one verdict of analyze.GeneratorCheck), or had lag spikes.
func generatorNotes(res *run.Result) []string {
	var notes []string
	if n := run.ArrivalsLine(res.Arrivals); n != "" && res.Partial { // accounting.go
		// A run its Stopper ended (a burst's recovery decided) leaves the
		// rest of its plan unsent by design: only a cut run says so.
		notes = append(notes, n)
	}
	if n := ShardNote(res); n != "" { // shardnote.go
		notes = append(notes, n)
	}
	o := &res.Analysis.Overall
	if d := o.Outcomes["generator_drop"] - o.WorkerLostDrops; d > 0 {
		notes = append(notes, fmt.Sprintf("WARNING: %d arrivals were dropped by the in-flight cap (generator_drop): the target stopped keeping up; they count as failures.", d))
	}
	if d := o.WorkerLostDrops; d > 0 {
		notes = append(notes, fmt.Sprintf("WARNING: %d arrivals were never sent because a worker was lost or interrupted (generator_drop naming the worker; not the in-flight cap): the target was not tested with the full schedule; they count as failures.", d))
	}
	if res.Virtual || res.Spec.Closed != nil {
		return notes
	}
	g := generatorOf(res, 0, math.MaxInt64, o.Latency.ScheduleLag.P99Ms)
	switch {
	case g.Behind && res.SelfAccuracy != nil && res.SelfAccuracy.State == judge.SelfBehind:
		// The self-accuracy line (ClientNotes) says it, with the cause
		// and what to do.
	case g.Behind:
		notes = append(notes, "WARNING: "+g.Note+". Rates and TTFT-from-schedule include this lag; use a faster machine or fewer arrivals/s.")
	default:
		if n := analyze.LagNote(o.Latency.ScheduleLag); n != "" {
			notes = append(notes, n)
		}
	}
	return notes
}

// generatorOf is GeneratorOf of res's records, from the spans its
// analysis gathered when they cover the range, else by a pass.
func generatorOf(res *run.Result, fromNs, toNs int64, lagP99Ms float64) analyze.Generator {
	if sp, ok := res.Sends.In(fromNs, toNs); ok {
		return sp.Check(lagP99Ms)
	}
	return GeneratorOf(res.Records, fromNs, toNs, lagP99Ms)
}

// GeneratorOf applies analyze.GeneratorCheck to the records scheduled in
// [fromNs, toNs) that were sent, read in one pass (a file that cannot be
// read was reported by the run's analysis: what was read is judged).
func GeneratorOf(recs record.Source, fromNs, toNs int64, lagP99Ms float64) analyze.Generator {
	var sp analyze.GeneratorSpan
	_ = recs.Each(func(r *record.Record) error {
		if r.ScheduledNs >= fromNs && r.ScheduledNs < toNs && r.SentNs != record.None {
			sp.Add(r.ScheduledNs, r.SentNs)
		}
		return nil
	})
	return sp.Check(lagP99Ms)
}

// Row builds a results-table row (docs/method.md §13) from the phase named phase.
func Row(res *run.Result, o *run.Options, phase string) report.Row {
	a := res.Analysis
	r := report.Row{Model: o.Model, Workload: o.WorkloadName(), Deployment: o.Deployment, Samples: a.Overall.Offered, Partial: res.Partial}
	if r.Deployment == "" && res.Simulated {
		r.Deployment = "simulator"
	}
	if res.Partial {
		r.PartialReason = res.PartialWhy
	}
	p, ok := a.Phase(phase)
	if !ok {
		return r
	}
	v, _ := res.Verdicts.Phase(phase)
	return statsRow(r, res, phase, &p.Stats, v)
}

// OverallRow is the results-table row of a run's measured phases together
// (analyze's Overall and the run's SLO verdict), phase "overall": the line
// under a run's per-phase rows. The engine's queue wait is measured per
// phase only.
func OverallRow(res *run.Result, o *run.Options) report.Row {
	r := Row(res, o, "")
	r = statsRow(r, res, "", &res.Analysis.Overall, res.Verdicts.Overall)
	r.Phase = "overall"
	r.QueueWait = report.PercentilesNA("engine queue wait is measured per phase (see the phase rows)")
	r.EngineQueue = r.QueueWait
	return r
}

// statsRow fills r from one phase's statistics (phase names its engine
// measurements; "" for none) and its SLO verdict.
func statsRow(r report.Row, res *run.Result, phase string, s *analyze.Stats, slo judge.Verdict) report.Row {
	r.SLO = SLOStatus(slo)
	r.OfferedRPS, r.SentRPS, r.CompletedRPS, r.GoodputRPS = report.Val(s.OfferedRPS), report.Val(s.SentRPS), report.Val(s.CompletedRPS), report.Val(s.GoodputRPS)
	if why := budgetCut(res, phase); why != "" {
		r.CompletedRPS = report.Unavailable(why)
	}
	r.ArrivalsOK = report.Val(s.ArrivalsOKRatio)
	r.TTFT = percentiles(s.Latency.TTFTSchedule)
	r.TTFTText = report.PercentilesNA("no request thought first: TTFT (answer text) = TTFT")
	if s.Client.ThoughtFirst > 0 {
		r.TTFTText = percentiles(s.Latency.TTFTTextSched)
	}
	r.AttemptsPerArrival, r.AttemptsRPS = report.Val(s.Client.AttemptsPerArrival), report.Val(s.Client.AttemptsRPS)
	r.Completion = percentiles(s.Latency.E2ESchedule)
	r.ConnWait = percentiles(s.Latency.ConnWait)
	r.GatewayWait = percentiles(s.Latency.GatewayWait)
	r.Upstream = percentiles(s.Latency.Upstream)
	if res.Virtual {
		r.ConnWait = report.PercentilesNA("virtual time: no connections, no connection pool")
	}
	r.RejectionRate, r.TimeoutRate, r.ErrorRate, r.DropRate = report.Val(s.RateLimitRate), report.Val(s.TimeoutRate), report.Val(s.ErrorRate), report.Val(s.DropRate)
	r.Samples = s.Offered
	qw := res.QueueWait[phase]
	if qw.Available {
		r.QueueWait = report.Percentiles{P50: queueWaitOpt(qw, qw.P50Ms, qw.P50AtMost), P95: queueWaitOpt(qw, qw.P95Ms, qw.P95AtMost), P99: queueWaitOpt(qw, qw.P99Ms, qw.P99AtMost)}
		if qw.P99Above {
			r.QueueWait.P99 = report.Above(qw.P99Ms, "beyond the engine's largest histogram bucket")
		}
	} else {
		why := EngineReason(res.Scrape, scrape.QueueTime)
		if why == "" {
			why = "engine queue wait: " + qw.Reason
		} else if !res.Virtual {
			why += report.ExtraObservedLatency
		}
		r.QueueWait = report.PercentilesNA(why)
	}
	r.EngineQueue = report.PercentilesNA(report.ReasonNoEngineTiming)
	if et, ok := res.EngineTiming[phase]; ok && et.Queue.Available {
		q := et.Queue
		r.EngineQueue = report.Percentiles{P50: report.Val(q.P50Ms), P95: report.Val(q.P95Ms), P99: report.Val(q.P99Ms)}
	} else if ok && et.Timed > 0 {
		// llama.cpp's timings carry prefill and decode, not the wait
		// before them.
		r.EngineQueue = report.PercentilesNA(fmt.Sprintf("the engine's per-request timing (%s) has no queue time", et.Source))
	}
	return r
}

// queueWaitOpt is one engine queue-wait percentile: the value, or, when it
// lies inside the engine histogram's first bucket, that bucket's bound as an
// upper bound, with the exact mean in the reason.
func queueWaitOpt(qw analyze.QueueWait, ms float64, atMost bool) report.Opt {
	if !atMost {
		return report.Val(ms)
	}
	return report.AtMost(ms, "inside the engine histogram's first bucket, so only its bound is known; mean wait "+analyze.FormatMs(qw.MeanMs))
}

// NoBurst marks the burst-only cells of a row of an experiment without a
// burst as n/a for that reason (CSV and JSON keep those columns).
func NoBurst(r *report.Row) {
	na := report.Unavailable(report.ReasonNoBurst)
	r.Multiplier, r.BaselineRPS, r.BurstRPS = na, na, na
	r.Recovery, r.PredictedRecovery = report.RecoveryNA(report.ReasonNoBurst), report.RecoveryNA(report.ReasonNoBurst)
	r.Mu = na
}

func percentiles(d analyze.Dist) report.Percentiles {
	if d.Count == 0 && !d.P99Censored {
		return report.PercentilesNA("no samples")
	}
	if d.Unbounded() {
		return report.PercentilesNA("interrupted: every request was cancelled in flight before it gave a value")
	}
	one := func(q analyze.Quantile) report.Opt {
		v, cens := d.Value(q)
		if cens {
			why := "more than the percentile's share of requests timed out"
			if d.Interrupted {
				why = "interrupted: more than the percentile's share of requests timed out or were cancelled in flight"
			}
			return report.Above(v, why)
		}
		return report.Val(v)
	}
	return report.Percentiles{P50: one(analyze.Q50), P95: one(analyze.Q95), P99: one(analyze.Q99)}
}

// Waterfall is where the time of each measured phase's requests went:
// the means of schedule lag and connection wait (not in virtual time),
// of the gateway's wait (when announced), of the engine's queue (its
// per-request timing, else its scraped histogram), of the prefill (the
// engine's, else the rest of the time to the first token), and of the
// decode (completion − TTFT, from send).
func Waterfall(res *run.Result) []report.WaterfallRow {
	var rows []report.WaterfallRow
	for i := range res.Analysis.Phases {
		p := &res.Analysis.Phases[i]
		l := &p.Latency
		if p.Excluded || l.TTFTSend.Count == 0 {
			continue
		}
		mean := func(d analyze.Dist) float64 {
			if d.Count == 0 {
				return 0
			}
			return d.MeanMs
		}
		row := report.WaterfallRow{Phase: p.Name}
		add := func(name string, ms float64) {
			row.Stages = append(row.Stages, report.WaterfallStage{Name: name, Ms: ms})
		}
		var conn float64
		if !res.Virtual {
			conn = mean(l.ConnWait)
			add("schedule lag", mean(l.ScheduleLag))
			add("connection wait", conn)
		}
		gw := mean(l.GatewayWait)
		add("gateway", gw)
		queue, prefill := 0.0, math.NaN()
		if et, ok := res.EngineTiming[p.Name]; ok && et.Queue.Available {
			queue = et.Queue.MeanMs
			if et.Prefill.Available {
				prefill = et.Prefill.MeanMs
			}
		} else if q, ok := res.QueueWait[p.Name]; ok && q.Available {
			queue = q.MeanMs
		}
		add("engine queue", queue)
		if math.IsNaN(prefill) {
			prefill = max(mean(l.TTFTSend)-conn-gw-queue, 0)
		}
		add("prefill", prefill)
		add("decode", max(mean(l.E2ESend)-mean(l.TTFTSend), 0))
		rows = append(rows, row)
	}
	return rows
}

// quotaSeries is the quota chart's data from the windows' rate-limit
// headers; nil when no response carried any.
func quotaSeries(a *analyze.Result) *report.QuotaSeries {
	if a.Overall.Client.RateLimit.Responses == 0 {
		return nil
	}
	q := &report.QuotaSeries{}
	type bucket struct {
		remaining, limit func(*analyze.RateLimitStats) int64
		reset            func(*analyze.RateLimitStats) float64
	}
	all := []bucket{
		{func(r *analyze.RateLimitStats) int64 { return r.LowestRemainingRequests }, func(r *analyze.RateLimitStats) int64 { return r.LimitRequests },
			func(r *analyze.RateLimitStats) float64 { return r.LongestResetRequestsMs }},
		{func(r *analyze.RateLimitStats) int64 { return r.LowestRemainingTokens }, func(r *analyze.RateLimitStats) int64 { return r.LimitTokens },
			func(r *analyze.RateLimitStats) float64 { return r.LongestResetTokensMs }},
		{func(r *analyze.RateLimitStats) int64 { return r.LowestRemainingTokensDay }, func(r *analyze.RateLimitStats) int64 { return r.LimitTokensDay },
			func(r *analyze.RateLimitStats) float64 { return r.LongestResetTokensDayMs }},
	}
	overall := &a.Overall.Client.RateLimit
	for i, b := range all {
		if b.limit(overall) <= 0 && b.reset(overall) < 0 {
			continue // the headers never named this bucket
		}
		qb := report.QuotaBucket{Name: analyze.BucketNames[i]}
		for _, win := range a.Windows {
			rl := &win.Client.RateLimit
			pct, reset := math.NaN(), math.NaN()
			if rem, lim := b.remaining(rl), b.limit(rl); rem >= 0 && lim > 0 {
				pct = 100 * float64(rem) / float64(lim)
			}
			if ms := b.reset(rl); ms >= 0 {
				reset = ms / 1000
			}
			qb.RemainingPercent = append(qb.RemainingPercent, pct)
			qb.ResetS = append(qb.ResetS, reset)
		}
		q.Buckets = append(q.Buckets, qb)
	}
	for _, win := range a.Windows {
		q.Throttled = append(q.Throttled, float64(win.Outcomes[record.RateLimited]))
		retry := math.NaN()
		if ms := win.Client.RateLimit.LongestRetryAfterMs; ms >= 0 {
			retry = ms / 1000
		}
		q.RetryAfter = append(q.RetryAfter, retry)
	}
	return q
}

// Charts builds the HTML charts of one run.
func Charts(res *run.Result, o *run.Options, title string) report.RunCharts {
	a := res.Analysis
	c := report.RunCharts{Name: title, TTFTDeadlineMs: float64(o.TTFTDeadline.Milliseconds()), CompletionDeadlineMs: float64(o.E2EDeadline.Milliseconds()),
		Self: SelfSection(res.SelfAccuracy)}
	hasEngine := len(res.Engine) > 0
	for _, win := range a.Windows {
		c.T = append(c.T, win.StartMs/1000)
		c.Offered = append(c.Offered, win.OfferedRPS)
		c.Sent = append(c.Sent, win.SentRPS)
		c.Completed = append(c.Completed, win.CompletedRPS)
		c.Goodput = append(c.Goodput, win.GoodputRPS)
		c.Counts = append(c.Counts, float64(win.Offered))
		add := func(ls *report.LatencySeries, d analyze.Dist) {
			get := func(q analyze.Quantile) float64 {
				if d.Count == 0 {
					return math.NaN()
				}
				v, _ := d.Value(q)
				return v
			}
			ls.P50 = append(ls.P50, get(analyze.Q50))
			ls.P95 = append(ls.P95, get(analyze.Q95))
			ls.P99 = append(ls.P99, get(analyze.Q99))
			ls.N = append(ls.N, float64(d.Count))
		}
		add(&c.TTFT, win.Latency.TTFTSchedule)
		add(&c.Completion, win.Latency.E2ESchedule)
		tl := a.SampleAt(win.StartMs)
		c.InFlight = append(c.InFlight, float64(tl.InFlight))
		c.OldestWaitingAge = append(c.OldestWaitingAge, tl.OldestWaitingAgeMs/1000)
		if hasEngine {
			// The peak within the window, at the engine's own resolution.
			from, to := int64(win.StartMs*1e6), int64(win.EndMs*1e6)
			wv, _ := scrape.MaxIn(res.Engine, scrape.Waiting, from, to)
			rv, _ := scrape.MaxIn(res.Engine, scrape.Running, from, to)
			c.EngineWaiting = append(c.EngineWaiting, wv)
			c.EngineRunning = append(c.EngineRunning, rv)
		}
	}
	c.Quota = quotaSeries(a)
	c.Waterfall = Waterfall(res)
	for _, smp := range res.Engine {
		wv, wok := smp.Value(scrape.Waiting)
		rv, rok := smp.Value(scrape.Running)
		if !wok && !rok {
			continue
		}
		if !wok {
			wv = math.NaN()
		}
		if !rok {
			rv = math.NaN()
		}
		c.EngineT = append(c.EngineT, float64(smp.TNs)/1e9)
		c.EngineWaitingSamples = append(c.EngineWaitingSamples, wv)
		c.EngineRunningSamples = append(c.EngineRunningSamples, rv)
	}
	for _, p := range a.Phases {
		c.Phases = append(c.Phases, report.Phase{Name: p.Name, Start: p.StartMs / 1000, End: p.EndMs / 1000})
	}
	for _, e := range res.SimEvents {
		c.Markers = append(c.Markers, report.Marker{Kind: report.MarkerScaling, T: e.At.Seconds(), Label: milestoneLabel(e)})
	}
	c.Markers = append(c.Markers, scalingMarkers(res)...)
	c.Bands = scalingBands(res)
	return c
}

// milestoneLabel names a scaling milestone for the report, e.g. "model
// ready (replica 1)".
func milestoneLabel(e sim.Event) string {
	return strings.ReplaceAll(e.Kind, "_", " ") + " (replica " + strconv.Itoa(e.Replica) + ")"
}

// MeasuredBacklog is the backlog a run measured over time (seconds since
// its start, requests): the engine's waiting queue at every scrape when
// it was scraped (the fluid model's backlog is the work not yet served,
// so the running batch is not in it), else the client's in-flight count
// on the analysis timeline; label names which.
func MeasuredBacklog(res *run.Result) (t, v report.Series, label string) {
	if res.Analysis != nil && simGateway(res.Analysis) && len(res.Engine) > 0 {
		// A gateway in front holds its own queue, which the engine's
		// waiting count does not see: what waits anywhere is what the
		// client has in flight less what the engine is running.
		j, running := 0, 0.0
		for _, s := range res.Analysis.Timeline {
			for j < len(res.Engine) && float64(res.Engine[j].TNs)/1e6 <= s.TMs {
				if rv, ok := res.Engine[j].Value(scrape.Running); ok {
					running = rv
				}
				j++
			}
			t = append(t, s.TMs/1000)
			v = append(v, max(float64(s.InFlight)-running, 0))
		}
		if len(t) > 0 {
			return t, v, "client in flight − engine running (waiting at the gateway or in the engine)"
		}
	}
	for _, smp := range res.Engine {
		wv, wok := smp.Value(scrape.Waiting)
		if !wok {
			continue
		}
		t = append(t, float64(smp.TNs)/1e9)
		v = append(v, wv)
	}
	if len(t) > 0 {
		// The fluid model's backlog is the work not yet served: the
		// engine's waiting queue, not the batch it is running.
		return t, v, "engine waiting"
	}
	for _, s := range res.Analysis.Timeline {
		t = append(t, s.TMs/1000)
		v = append(v, float64(s.InFlight))
	}
	return t, v, "client in flight"
}

// HTMLMeta describes the target and run for the report header.
func HTMLMeta(env *run.Env) []report.KV {
	o := &env.Opts
	kv := []report.KV{
		{Key: "target", Value: env.TargetName()},
		{Key: "model", Value: o.Model},
		{Key: "workload", Value: o.WorkloadName()},
		{Key: "deadlines", Value: fmt.Sprintf("TTFT ≤ %s, completion ≤ %s from the scheduled arrival", o.TTFTDeadline, o.E2EDeadline)},
		{Key: "per-request timeout", Value: o.Timeout.String()},
		{Key: "surge", Value: env.Version},
	}
	if c := &env.Calibration; c.Method != "" {
		kv = append(kv, report.KV{Key: "prompt sizing", Value: c.Describe()})
	} else if env.CalibrationText != "" { // re-rendered: the calibration is the run's
		kv = append(kv, report.KV{Key: "prompt sizing", Value: env.CalibrationText})
	}
	if o.SharedPrefix > 0 || o.NoNonce { // the default (unique prompts) is in the manifest only
		kv = append(kv, report.KV{Key: "cache state", Value: run.CacheState(o, nil)})
	}
	if o.Target == "" && o.Sim.PrefixCache() {
		kv = append(kv, report.KV{Key: "simulator prefix cache", Value: fmt.Sprintf("%d tokens per replica, blocks of %d", o.Sim.PrefixCacheTokens, o.Sim.BlockTokens())})
	}
	return append(kv, spendMeta(env)...) // budget.go
}

// PromptMeta is the report line comparing the prompt lengths surge
// intended with the server's own counts, and a note when they differ by
// more than 5% at the median, or when a twentieth of the prompts on
// either side were counted more than 10% off their intended length (the
// per-request ratio's p5 or p95; nil when no request reported usage).
func PromptMeta(ps *record.PromptSizing) (kv []report.KV, notes []string) {
	if ps == nil || ps.Actual.Samples == 0 {
		return nil, nil
	}
	in, act := ps.Intended, ps.Actual
	kv = append(kv, report.KV{Key: "prompt tokens", Value: fmt.Sprintf("intended p50 %d / p95 %d, server-reported p50 %d / p95 %d (mean %.1f vs %.1f, n=%d)",
		in.P50, in.P95, act.P50, act.P95, in.Mean, act.Mean, act.Samples)})
	if in.P50 > 0 {
		if off := float64(act.P50-in.P50) / float64(in.P50); off > 0.05 || off < -0.05 {
			notes = append(notes, fmt.Sprintf("WARNING: the server counted prompts %+.0f%% off the intended length at the median (p50 %d vs %d; prompt sizing: %s).", 100*off, act.P50, in.P50, ps.Description))
		}
	}
	if r := ps.Ratio; r.Samples > 0 && (r.P5 < 900 || r.P95 > 1100) {
		notes = append(notes, fmt.Sprintf("WARNING: the server's prompt lengths spread wider than intended: request by request they were %.2f× (p5) to %.2f× (p95) the intended length (intended p5 %d / p95 %d, server p5 %d / p95 %d); the workload the target saw is not the one planned (prompt sizing: %s).",
			float64(r.P5)/1000, float64(r.P95)/1000, in.P5, in.P95, act.P5, act.P95, ps.Description))
	}
	return kv, notes
}

// WriteReports writes results.md/.csv/.json and report.html into d;
// results.md shows h's breakdown tables (by profile) after t.
func WriteReports(d *rundir.Dir, t report.Table, h report.HTMLReport) error {
	if err := d.WriteFile("results.md", func(w io.Writer) error {
		if err := report.WriteMarkdown(w, t); err != nil {
			return err
		}
		for _, b := range h.Breakdowns {
			fmt.Fprintln(w)
			if err := report.WriteGridMarkdown(w, b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := d.WriteFile("results.csv", func(w io.Writer) error { return report.WriteCSV(w, t) }); err != nil {
		return err
	}
	if err := d.WriteFile("results.json", func(w io.Writer) error { return report.WriteJSON(w, t) }); err != nil {
		return err
	}
	return d.WriteFile("report.html", func(w io.Writer) error { return report.WriteHTML(w, h) })
}

// SLOVerdicts turns a judged verdict into report verdict lines, one per
// clause, each with its evidence (judge.Clause.Brief).
func SLOVerdicts(scope string, v judge.Verdict) []report.Verdict {
	var out []report.Verdict
	for _, c := range v.Clauses {
		detail := c.Brief()
		if v.Partial && c.Outcome == judge.Pass {
			detail += ": held over what ran (the run was cut short)"
		}
		out = append(out, report.Verdict{Scope: scope, Check: clauseName(c), Status: clauseStatus(v, c), Detail: detail})
	}
	return out
}

func clauseName(c judge.Clause) string {
	switch c.Name {
	case judge.ClauseTTFTP95:
		return "p95 TTFT ≤ " + c.LimitText()
	case judge.ClauseE2EP99:
		return "p99 completion ≤ " + c.LimitText()
	}
	return "goodput ≥ " + c.LimitText() + " of offered"
}

// FmtRate prints a rate in req/s with up to three significant digits.
func FmtRate(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case v >= 10:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// RoundRate rounds a rate to three significant digits.
func RoundRate(v float64) float64 {
	if !(v > 0) {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-2)
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(v/p)*p, 'g', 3, 64), 64)
	return r
}

// DistOpts turns a distribution into P50/P95/P99 cells, censored values as
// lower bounds.
func DistOpts(d analyze.Dist) [3]report.Opt {
	p := percentiles(d)
	return [3]report.Opt{p.P50, p.P95, p.P99}
}

// DistValue is a percentile for a chart: NaN when unknown, the lower bound
// when censored.
func DistValue(d analyze.Dist, q analyze.Quantile) float64 {
	if d.Count == 0 && !d.P99Censored {
		return math.NaN()
	}
	v, _ := d.Value(q)
	return v
}

// Num is a numeric level-table cell.
func Num(v float64) report.Cell { return report.NumCell(report.Val(v)) }

// WriteLevelExperiment writes the top of a capacity search or a sweep: its
// result as name (JSON), then the level table, the docs/method.md §13 results table
// (both sharing lt's notes) and report.html with charts.
func WriteLevelExperiment(d *rundir.Dir, name string, v any, lt report.Grid, results report.Table, h report.GridReport, charts []report.XYChart) error {
	ht := results
	ht.Meta = nil // the page shows the same facts once, above the tables
	h.Tables = []report.Table{ht}
	h.Levels = []report.Grid{WithoutMeta(lt)}
	h.Charts = charts
	if err := d.WriteJSON(name, v); err != nil {
		return err
	}
	return WriteLevelReports(d, lt, nil, &results, h)
}

// WriteLevelReports writes results.md (the level table, then any extra
// tables), results.csv and results.json (the level table) and report.html.
func WriteLevelReports(d *rundir.Dir, lt report.Grid, extra []report.Grid, results *report.Table, h report.GridReport) error {
	if err := d.WriteFile("results.md", func(w io.Writer) error {
		for _, t := range append([]report.Grid{lt}, extra...) {
			if err := report.WriteGridMarkdown(w, t); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
		if results != nil {
			return report.WriteMarkdown(w, *results)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := d.WriteFile("results.csv", func(w io.Writer) error { return report.WriteGridCSV(w, lt) }); err != nil {
		return err
	}
	if err := d.WriteFile("results.json", func(w io.Writer) error { return report.WriteGridJSON(w, lt) }); err != nil {
		return err
	}
	return d.WriteFile("report.html", func(w io.Writer) error { return report.WriteGridHTML(w, h) })
}

// WithoutMeta is t without its metadata, for report.html, whose header
// already shows it.
func WithoutMeta(t report.Grid) report.Grid {
	t.Meta = nil
	return t
}

// SortedBy returns the indexes of xs in ascending order of key.
func SortedBy(n int, key func(i int) float64) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return key(idx[a]) < key(idx[b]) })
	return idx
}

// OrDash is s, or "-" when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// SLOText describes the SLO clauses that are checked.
func SLOText(o run.Judging) string {
	var parts []string
	if o.SLOTTFTP95 > 0 {
		parts = append(parts, "p95 TTFT ≤ "+o.SLOTTFTP95.String())
	}
	if o.SLOE2EP99 > 0 {
		parts = append(parts, "p99 completion ≤ "+o.SLOE2EP99.String())
	}
	if o.SLOGoodput > 0 {
		parts = append(parts, fmt.Sprintf("goodput ≥ %g%% of offered", 100*o.SLOGoodput))
	}
	return strings.Join(parts, ", ")
}

// LevelNotes are the notes one level or step of a sweep or capacity search
// adds to its experiment's results.md, each prefixed with scope: what the
// client saw (replays, retries, ignored max_tokens, rate limits), the
// engine's per-request timing, and prompts far from their intended length.
func LevelNotes(scope string, res *run.Result) []string {
	var out []string
	lines := append(ClientNotes(res), EngineTimingLines(res)...)
	if n := ShardNote(res); n != "" {
		lines = append(lines, n)
	}
	if n := WorkerSummary(res); n != "" { // --workers (workers.go)
		lines = append(lines, n)
	}
	if _, notes := PromptMeta(res.Prompt); len(notes) > 0 {
		lines = append(lines, notes...)
	}
	for _, l := range lines {
		out = append(out, scope+": "+l)
	}
	return out
}

// budgetCut says why completed/s of phase ("" = the measured phases
// together) does not measure the target, or "" when it does: the budget
// ended the schedule inside the run's last phase, so its length stops at
// the refused arrival while the requests in flight then complete after it
// — outside the phase, where completions by completion time do not count
// — and a short cut phase shows 0 completed/s next to its goodput/s (by
// arrival). The windows' completed/s (timeseries.csv) still show them.
func budgetCut(res *run.Result, phase string) string {
	a := res.Analysis
	if res.PartialCause != record.PartialBudget || len(a.Phases) == 0 {
		return ""
	}
	last := a.Phases[len(a.Phases)-1]
	if phase != last.Name && (phase != "" || last.Excluded) {
		return ""
	}
	return fmt.Sprintf("the budget cut phase %s at %s; its requests in flight completed after that, outside the phase, so completions by completion time do not measure it (goodput/s counts by arrival)",
		last.Name, schedule.ShowDuration(time.Duration(last.EndMs*float64(time.Millisecond))))
}
