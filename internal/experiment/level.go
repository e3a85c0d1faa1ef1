package experiment

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
)

// What the generator must achieve for a level to be judged on the target:
// below these it is the generator that could not keep up (METHOD §2).
const (
	generatorMinSendRatio = 0.95                   // achieved send rate ≥ 95% of the scheduled rate
	generatorMaxLagP99    = 100 * time.Millisecond // schedule lag p99
	generatorMinSamples   = 20                     // fewer sends say nothing about rates
)

// Measure is what one run says about its measured phase beyond the
// analysis: rates by completion time, which is what a throughput knee is
// about, and whether the generator kept its schedule.
//
// Throughput counts requests by when they completed, not when they were
// scheduled: with T = [start, end) the measured phase,
//
//	request rate   = ok requests completed in T / |T|   (requests/s)
//	output tok/s   = output tokens of those requests / |T|
//	total tok/s    = (prompt + output tokens) of those requests / |T|
//
// so a level above capacity shows the capacity, not the offered rate (by
// scheduled arrival every request eventually counts).
//
// The generator check compares, over the phase's sent requests (n ≥ 20),
// the rate they were sent at with the rate they were scheduled at:
//
//	scheduled rate = (n − 1) / (last scheduled − first scheduled)
//	achieved rate  = (n − 1) / (last sent − first sent)
//
// A run whose achieved rate is below 95% of the scheduled rate, or whose
// schedule-lag p99 exceeds 100 ms, was limited by the generator: its
// numbers describe surge on this machine, not the target.
type Measure struct {
	Phase       analyze.PhaseResult `json:"-"`
	StartS      float64             `json:"start_s"` // the measured phase, seconds since the run start
	EndS        float64             `json:"end_s"`
	CompletedOK int64               `json:"completed_ok"` // ok requests completed within the phase
	RequestRPS  float64             `json:"request_rps"`
	OutputTPS   float64             `json:"output_tokens_per_s"`
	TotalTPS    float64             `json:"total_tokens_per_s"`

	ScheduledRPS     float64 `json:"scheduled_rps"` // 0 when not measurable (closed loop, too few sends)
	AchievedRPS      float64 `json:"achieved_send_rps"`
	LagP99Ms         float64 `json:"lag_p99_ms"`
	GeneratorLimited bool    `json:"generator_limited"`
	GeneratorNote    string  `json:"generator_note,omitempty"`
}

// measure reads the run's requests.jsonl and measures the named phase.
// closed marks a closed loop, whose sends are not scheduled (no generator
// check).
func measure(res *Result, phase string, closed bool) (Measure, error) {
	p, ok := res.Analysis.Phase(phase)
	if !ok {
		return Measure{}, fmt.Errorf("experiment: run %s has no phase %q", res.Spec.Name, phase)
	}
	m := Measure{Phase: p, StartS: p.StartMs / 1000, EndS: p.EndMs / 1000, LagP99Ms: p.Latency.ScheduleLag.P99Ms}
	start, end := int64(p.StartMs*1e6), int64(p.EndMs*1e6)
	var prompt, output int64
	var sched, sent []int64
	err := record.ReadFile(filepath.Join(res.Spec.Dir, "requests.jsonl"), func(r *record.Record) error {
		if r.Outcome == record.OK && r.DoneNs >= start && r.DoneNs < end {
			m.CompletedOK++
			prompt += int64(max(0, r.PromptTokens))
			output += int64(max(0, r.OutputTokens))
		}
		if r.ScheduledNs >= start && r.ScheduledNs < end && r.SentNs != record.None {
			sched = append(sched, r.ScheduledNs)
			sent = append(sent, r.SentNs)
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	if d := m.EndS - m.StartS; d > 0 {
		m.RequestRPS = float64(m.CompletedOK) / d
		m.OutputTPS = float64(output) / d
		m.TotalTPS = float64(prompt+output) / d
	}
	if !closed {
		m.generatorCheck(sched, sent)
	}
	return m, nil
}

func (m *Measure) generatorCheck(sched, sent []int64) {
	if len(sent) < generatorMinSamples {
		return
	}
	slices := func(v []int64) float64 {
		lo, hi := v[0], v[0]
		for _, x := range v {
			lo, hi = min(lo, x), max(hi, x)
		}
		return float64(hi-lo) / 1e9
	}
	ss, sn := slices(sched), slices(sent)
	if ss <= 0 || sn <= 0 {
		return
	}
	n := float64(len(sent) - 1)
	m.ScheduledRPS, m.AchievedRPS = n/ss, n/sn
	var why []string
	if m.AchievedRPS < generatorMinSendRatio*m.ScheduledRPS {
		why = append(why, fmt.Sprintf("it sent %.2f req/s of the %.2f scheduled (%.0f%%)", m.AchievedRPS, m.ScheduledRPS, 100*m.AchievedRPS/m.ScheduledRPS))
	}
	if m.LagP99Ms > float64(generatorMaxLagP99.Milliseconds()) {
		why = append(why, "schedule lag p99 "+analyze.FormatMs(m.LagP99Ms))
	}
	if len(why) > 0 {
		m.GeneratorLimited = true
		m.GeneratorNote = "the load generator could not keep its schedule: " + strings.Join(why, ", ") +
			". This is surge's limit on this machine, not the target's"
	}
}

// fmtRate prints a rate in req/s with up to three significant digits.
func fmtRate(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case v >= 10:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// roundRate rounds a rate to three significant digits.
func roundRate(v float64) float64 {
	if !(v > 0) {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-2)
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(v/p)*p, 'g', 3, 64), 64)
	return r
}

// distOpts turns a distribution into P50/P95/P99 cells, censored values as
// lower bounds.
func distOpts(d analyze.Dist) [3]report.Opt {
	p := percentiles(d)
	return [3]report.Opt{p.P50, p.P95, p.P99}
}

// distValue is a percentile for a chart: NaN when unknown, the lower bound
// when censored.
func distValue(d analyze.Dist, q analyze.Quantile) float64 {
	if d.Count == 0 && !d.P99Censored {
		return math.NaN()
	}
	v, _ := d.Value(q)
	return v
}

func num(v float64) report.LevelCell { return report.NumCell(report.Val(v)) }

// writeLevelExperiment writes the top of a capacity search or a sweep: its
// result as name (JSON), then the level table, the METHOD §13 results table
// (both sharing lt's notes) and report.html with charts.
func writeLevelExperiment(dir, name string, v any, lt report.LevelTable, results report.Table, h report.LevelReport, charts []report.XYChart) error {
	results.Notes = lt.Notes
	ht := results
	ht.Meta = nil // the page shows the same facts once, above the tables
	h.Tables = []report.Table{ht}
	h.Levels = []report.LevelTable{withoutMeta(lt)}
	h.Charts = charts
	if err := writeJSON(filepath.Join(dir, name), v); err != nil {
		return err
	}
	return writeLevelReports(dir, lt, nil, &results, h)
}

// writeLevelReports writes results.md (the level table, then any extra
// tables), results.csv and results.json (the level table) and report.html.
func writeLevelReports(dir string, lt report.LevelTable, extra []report.LevelTable, results *report.Table, h report.LevelReport) error {
	if err := writeFile(dir, "results.md", func(w fileWriter) error {
		for _, t := range append([]report.LevelTable{lt}, extra...) {
			if err := report.WriteLevelMarkdown(w, t); err != nil {
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
	if err := writeFile(dir, "results.csv", func(w fileWriter) error { return report.WriteLevelCSV(w, lt) }); err != nil {
		return err
	}
	if err := writeFile(dir, "results.json", func(w fileWriter) error { return report.WriteLevelJSON(w, lt) }); err != nil {
		return err
	}
	return writeFile(dir, "report.html", func(w fileWriter) error { return report.WriteLevelHTML(w, h) })
}

type fileWriter = io.Writer

// writeFile creates dir/name and writes it with fn.
func writeFile(dir, name string, fn func(w fileWriter) error) error {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	bw := bufio.NewWriter(f)
	if err := fn(bw); err != nil {
		f.Close()
		return fmt.Errorf("experiment: %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("experiment: %s: %w", name, err)
	}
	return f.Close()
}

// withoutMeta is t without its metadata, for report.html, whose header
// already shows it.
func withoutMeta(t report.LevelTable) report.LevelTable {
	t.Meta = nil
	return t
}

// sortedBy returns the indexes of xs in ascending order of key.
func sortedBy(n int, key func(i int) float64) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return key(idx[a]) < key(idx[b]) })
	return idx
}
