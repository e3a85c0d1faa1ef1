package experiment

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
)

// Summary is summary.json: the whole analysis of one run plus what the
// engine said about itself.
type Summary struct {
	Run        string               `json:"run"`
	Partial    bool                 `json:"partial"`
	Records    int64                `json:"records"`
	Analysis   *analyze.Result      `json:"analysis"`
	VLLM       analyze.VLLMBench    `json:"vllm_bench"` // vLLM bench field names, for cross-checks
	Engine     scrape.Status        `json:"engine_metrics"`
	EngineWait map[string]QueueWait `json:"engine_queue_wait"` // per phase
	SimEvents  []sim.Event          `json:"sim_events,omitempty"`
	Burst      *BurstInfo           `json:"burst,omitempty"`
}

// QueueWait is the engine-measured queue wait of one phase, in ms.
type QueueWait struct {
	Available bool    `json:"available"`
	Reason    string  `json:"reason,omitempty"`
	Count     float64 `json:"count"`
	MeanMs    float64 `json:"mean_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P99Above  bool    `json:"p99_above,omitempty"` // P99 is beyond the last finite bucket
}

func queueWait(st scrape.Stats, ok bool) QueueWait {
	if !ok || !st.Known() {
		reason := st.Reason
		if reason == "" {
			reason = "n/a"
		}
		return QueueWait{Reason: reason}
	}
	ms := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v * 1000
	}
	return QueueWait{Available: true, Count: st.Count, MeanMs: ms(st.Mean), P50Ms: ms(st.P50.Value), P95Ms: ms(st.P95.Value), P99Ms: ms(st.P99.Value), P99Above: st.P99.Above}
}

func writeRunFiles(dir string, res *Result) error {
	s := Summary{Run: res.Spec.Name, Partial: res.Partial, Records: res.Records, Analysis: res.Analysis,
		VLLM: res.Analysis.VLLM(), Engine: res.Scrape, EngineWait: res.QueueWait, SimEvents: res.SimEvents, Burst: res.Burst}
	if err := writeJSON(filepath.Join(dir, "summary.json"), s); err != nil {
		return err
	}
	return writeTimeseries(filepath.Join(dir, "timeseries.csv"), res)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("experiment: %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeTimeseries writes one row per arrival window: rates, percentiles,
// and the client and engine queue views at the window's start.
func writeTimeseries(path string, res *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "window_start_s,window_end_s,phase,offered_rps,sent_rps,success_rps,goodput_rps,samples,error_rate,rate_limit_rate,timeout_rate,drop_rate,ttft_p50_ms,ttft_p95_ms,ttft_p99_ms,e2e_p50_ms,e2e_p95_ms,e2e_p99_ms,lag_p99_ms,in_flight,client_waiting,oldest_waiting_age_s,engine_waiting,engine_running")
	for _, win := range res.Analysis.Windows {
		l := &win.Latency
		tl := timelineAt(res.Analysis.Timeline, win.StartMs)
		ew, er := engineAt(res.Engine, win.StartMs)
		fmt.Fprintf(w, "%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%s,%s,%s\n",
			f3(win.StartMs/1000), f3(win.EndMs/1000), win.Phase,
			f3(win.OfferedRPS), f3(win.SentRPS), f3(win.SuccessRPS), f3(win.GoodputRPS), win.Offered,
			f4(win.ErrorRate), f4(win.RateLimitRate), f4(win.TimeoutRate), f4(win.DropRate),
			pct(l.TTFTSchedule, analyze.Q50), pct(l.TTFTSchedule, analyze.Q95), pct(l.TTFTSchedule, analyze.Q99),
			pct(l.E2ESchedule, analyze.Q50), pct(l.E2ESchedule, analyze.Q95), pct(l.E2ESchedule, analyze.Q99),
			pct(l.ScheduleLag, analyze.Q99), tl.InFlight, tl.Waiting, f3(tl.OldestWaitingAgeMs/1000), ew, er)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func f4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// pct prints a percentile for CSV: empty when unknown, ">x" when censored.
func pct(d analyze.Dist, q analyze.Quantile) string {
	if d.Count == 0 && !d.P99Censored {
		return ""
	}
	v, cens := d.Value(q)
	if cens {
		return ">" + f3(v)
	}
	return f3(v)
}

func timelineAt(tl []analyze.Sample, ms float64) analyze.Sample {
	var best analyze.Sample
	for _, s := range tl {
		if s.TMs > ms {
			break
		}
		best = s
	}
	return best
}

func engineAt(samples []scrape.Sample, ms float64) (waiting, running string) {
	i := scrape.Nearest(samples, int64(ms*1e6))
	if i < 0 {
		return "", ""
	}
	if v, ok := samples[i].Value(scrape.Waiting); ok {
		waiting = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if v, ok := samples[i].Value(scrape.Running); ok {
		running = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return waiting, running
}

// PrintPhases writes the per-phase summary of a run, the way `surge run`
// shows it at the end.
func PrintPhases(w io.Writer, res *Result) {
	a := res.Analysis
	fmt.Fprintf(w, "\n%s — %d records in %s%s\n", res.Spec.Name, res.Records, res.Spec.Dir, partialNote(res))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\toffered/s\tsent/s\tok/s\tgoodput/s\tgood%\terr%\t429%\ttimeout%\tdrops\t")
	row := func(name string, s *analyze.Stats) {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%.2f\t%d\t\n", name, s.OfferedRPS, s.SentRPS, s.SuccessRPS, s.GoodputRPS,
			100*s.GoodputRatio, 100*s.ErrorRate, 100*s.RateLimitRate, 100*s.TimeoutRate, s.Outcomes["generator_drop"])
	}
	for i := range a.Phases {
		p := &a.Phases[i]
		name := p.Name
		if p.Excluded {
			name += " (excluded)"
		}
		row(name, &p.Stats)
	}
	row("overall", &a.Overall)
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tlatency\tp50\tp95\tp99\tsamples\t")
	lat := func(name string, s *analyze.Stats) {
		l := &s.Latency
		for _, m := range []struct {
			label string
			d     analyze.Dist
		}{
			{"TTFT from schedule", l.TTFTSchedule},
			{"TTFT from send", l.TTFTSend},
			{"completion (from send)", l.E2ESend},
			{"TPOT", l.TPOT},
			{"schedule lag", l.ScheduleLag},
		} {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t\n", name, m.label, m.d.Text(analyze.Q50), m.d.Text(analyze.Q95), m.d.Text(analyze.Q99), m.d.Count)
			name = ""
		}
	}
	for i := range a.Phases {
		if !a.Phases[i].Excluded {
			lat(a.Phases[i].Name, &a.Phases[i].Stats)
		}
	}
	tw.Flush()
	if line := outcomeLine(&a.Overall); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, line := range generatorNotes(a) {
		fmt.Fprintln(w, line)
	}
	if res.Scrape.State != scrape.StateOK && res.Scrape.State != scrape.StatePartial {
		fmt.Fprintf(w, "engine metrics: %s — load-induced latency above is extra observed latency, not queue time\n", scrapeReason(res.Scrape))
	}
	for _, m := range res.Scrape.Messages {
		fmt.Fprintln(w, "engine metrics:", m)
	}
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

func partialNote(res *Result) string {
	if res.Partial {
		return " (PARTIAL: interrupted)"
	}
	return ""
}

func scrapeReason(st scrape.Status) string {
	if st.Reason != "" {
		return st.Reason
	}
	return string(st.State)
}

// generatorNotes says plainly when the generator could not keep the schedule.
func generatorNotes(a *analyze.Result) []string {
	var notes []string
	o := &a.Overall
	if d := o.Outcomes["generator_drop"]; d > 0 {
		notes = append(notes, fmt.Sprintf("WARNING: %d arrivals were dropped by the in-flight cap (generator_drop): the target stopped keeping up; they count as failures.", d))
	}
	lag := o.Latency.ScheduleLag
	switch {
	case lag.Count > 0 && lag.P95Ms > 10:
		notes = append(notes, fmt.Sprintf("WARNING: the generator fell behind its schedule: schedule lag p95 %s, p99 %s, max %s. Rates and TTFT-from-schedule include this lag; use a faster machine or fewer arrivals/s.",
			lag.Text(analyze.Q95), lag.Text(analyze.Q99), analyze.FormatMs(lag.MaxMs)))
	case lag.Count > 0 && lag.P99Ms > 10:
		notes = append(notes, fmt.Sprintf("note: occasional schedule lag spikes (p99 %s, max %s) though the generator mostly kept its schedule (p95 %s); is the machine busy?",
			lag.Text(analyze.Q99), analyze.FormatMs(lag.MaxMs), lag.Text(analyze.Q95)))
	}
	return notes
}

// Row builds a results-table row (METHOD §13) from the phase named phase.
func Row(res *Result, o *Options, phase string) report.Row {
	a := res.Analysis
	r := report.Row{Model: o.Model, Workload: o.Profile, Deployment: o.Deployment, Samples: a.Overall.Offered, Partial: res.Partial}
	if r.Deployment == "" && res.Simulated {
		r.Deployment = "simulator"
	}
	if res.Partial {
		r.PartialReason = "interrupted before the plan completed"
	}
	p, ok := a.Phase(phase)
	if !ok {
		return r
	}
	s := &p.Stats
	r.OfferedRPS, r.SentRPS, r.SuccessRPS, r.GoodputRPS = report.Val(s.OfferedRPS), report.Val(s.SentRPS), report.Val(s.SuccessRPS), report.Val(s.GoodputRPS)
	r.TTFT = percentiles(s.Latency.TTFTSchedule)
	r.Completion = percentiles(s.Latency.E2ESchedule)
	r.RejectionRate, r.TimeoutRate, r.ErrorRate, r.DropRate = report.Val(s.RateLimitRate), report.Val(s.TimeoutRate), report.Val(s.ErrorRate), report.Val(s.DropRate)
	r.Samples = s.Offered
	qw := res.QueueWait[phase]
	if qw.Available {
		r.QueueWait = report.Percentiles{P50: report.Val(qw.P50Ms), P95: report.Val(qw.P95Ms), P99: report.Val(qw.P99Ms)}
		if qw.P99Above {
			r.QueueWait.P99 = report.Above(qw.P99Ms, "beyond the engine's largest histogram bucket")
		}
	} else {
		r.QueueWait = report.PercentilesNA(report.ReasonNoEngineTelemetry)
	}
	return r
}

func percentiles(d analyze.Dist) report.Percentiles {
	if d.Count == 0 && !d.P99Censored {
		return report.PercentilesNA("no samples")
	}
	one := func(q analyze.Quantile) report.Opt {
		v, cens := d.Value(q)
		if cens {
			return report.Above(v, "more than the percentile's share of requests timed out")
		}
		return report.Val(v)
	}
	return report.Percentiles{P50: one(analyze.Q50), P95: one(analyze.Q95), P99: one(analyze.Q99)}
}

// Charts builds the HTML charts of one run.
func Charts(res *Result, o *Options, title string) report.RunCharts {
	a := res.Analysis
	c := report.RunCharts{Name: title, TTFTDeadlineMs: float64(o.TTFTDeadline.Milliseconds()), CompletionDeadlineMs: float64(o.E2EDeadline.Milliseconds())}
	hasEngine := len(res.Engine) > 0
	for _, win := range a.Windows {
		c.T = append(c.T, win.StartMs/1000)
		c.Offered = append(c.Offered, win.OfferedRPS)
		c.Sent = append(c.Sent, win.SentRPS)
		c.Successful = append(c.Successful, win.SuccessRPS)
		c.Goodput = append(c.Goodput, win.GoodputRPS)
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
		}
		add(&c.TTFT, win.Latency.TTFTSchedule)
		add(&c.Completion, win.Latency.E2ESchedule)
		tl := timelineAt(a.Timeline, win.StartMs)
		c.InFlight = append(c.InFlight, float64(tl.InFlight))
		c.OldestWaitingAge = append(c.OldestWaitingAge, tl.OldestWaitingAgeMs/1000)
		if hasEngine {
			i := scrape.Nearest(res.Engine, int64(win.StartMs*1e6))
			wv, _ := res.Engine[i].Value(scrape.Waiting)
			rv, _ := res.Engine[i].Value(scrape.Running)
			c.EngineWaiting = append(c.EngineWaiting, wv)
			c.EngineRunning = append(c.EngineRunning, rv)
		}
	}
	for _, p := range a.Phases {
		c.Phases = append(c.Phases, report.Phase{Name: p.Name, Start: p.StartMs / 1000, End: p.EndMs / 1000})
	}
	return c
}

// HTMLMeta describes the target and run for the report header.
func HTMLMeta(env *Env) []report.KV {
	o := &env.Opts
	return []report.KV{
		{Key: "target", Value: env.TargetName()},
		{Key: "model", Value: o.Model},
		{Key: "workload", Value: o.Profile},
		{Key: "deadlines", Value: fmt.Sprintf("TTFT ≤ %s, completion ≤ %s from the scheduled arrival", o.TTFTDeadline, o.E2EDeadline)},
		{Key: "per-request timeout", Value: o.Timeout.String()},
		{Key: "surge", Value: env.Version},
	}
}

// writeReports writes results.md/.csv/.json and report.html into dir.
func writeReports(dir string, t report.Table, h report.HTMLReport) error {
	if err := writeFile(dir, "results.md", func(w io.Writer) error { return report.WriteMarkdown(w, t) }); err != nil {
		return err
	}
	if err := writeFile(dir, "results.csv", func(w io.Writer) error { return report.WriteCSV(w, t) }); err != nil {
		return err
	}
	if err := writeFile(dir, "results.json", func(w io.Writer) error { return report.WriteJSON(w, t) }); err != nil {
		return err
	}
	return writeFile(dir, "report.html", func(w io.Writer) error { return report.WriteHTML(w, h) })
}

// sloVerdicts turns an analysis verdict into report verdict lines.
func sloVerdicts(scope string, v analyze.Verdict) []report.Verdict {
	var out []report.Verdict
	for _, c := range v.Clauses {
		st := report.VerdictPass
		if !c.Pass {
			st = report.VerdictFail
		}
		out = append(out, report.Verdict{Scope: scope, Check: clauseName(c), Status: st, Detail: c.Text})
	}
	return out
}

func clauseName(c analyze.Clause) string {
	switch c.Name {
	case analyze.ClauseTTFTP95:
		return "p95 TTFT ≤ " + analyze.FormatMs(c.Limit)
	case analyze.ClauseE2EP99:
		return "p99 completion ≤ " + analyze.FormatMs(c.Limit)
	}
	return "goodput ≥ " + strconv.FormatFloat(100*c.Limit, 'f', -1, 64) + "% of offered"
}
