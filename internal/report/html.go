package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

// The vendored chart library (see assets/uplot/README.md) and the page's own
// script, styles and template, all inlined into every report.
var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.html.tmpl
	reportTmpl string
)

var pageTmpl = template.Must(template.New("report.html").Funcs(template.FuncMap{
	// safeCSS marks colours chosen by this package (never user input) as CSS.
	"safeCSS": func(s string) template.CSS { return template.CSS(s) },
}).Parse(reportTmpl))

// HTMLReport is everything report.html shows: metadata, results tables and
// the charts of each run (one run per multiplier in a burst experiment).
type HTMLReport struct {
	Title  string  // page title and heading
	Meta   []KV    // what was tested: target, model, deployment, tool version…
	Tables []Table // results tables, rendered as HTML tables
	// Breakdowns are further tables of one row per group of requests
	// (a run's results by workload profile), shown after the results
	// tables; none for most runs.
	Breakdowns []Grid
	Runs       []RunCharts // one section of charts per run
}

// SelfSection is a run's self-accuracy section: the verdict on whether
// surge itself kept up, with its reasons, what to do, and the numbers it
// rests on.
type SelfSection struct {
	Badge  string // badge text and class: KEPT-UP, AT-RISK, BEHIND, NOT-JUDGED
	Title  string // the verdict in words
	Why    []string
	Advice string
	Facts  []KV       // the observations: send lag, CPU, streams, timer…
	Phases [][]string // per phase: name, sends, scheduled/s, sent/s, % of schedule, lag p99
}

// Series is one value per time window; NaN marks a window without a value
// (drawn as a gap). A nil Series is absent and not drawn.
type Series []float64

// MarshalJSON encodes s as an array of numbers with null for NaN and ±Inf.
func (s Series) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return append(b, ']'), nil
}

// LatencySeries holds P50, P95 and P99 per arrival window, in milliseconds,
// and N, the samples behind them (shown on hover; nil for unknown).
type LatencySeries struct {
	P50, P95, P99 Series
	N             Series
}

// Phase is a named interval of the run, drawn as a shaded band. Times are
// seconds since the run's start.
type Phase struct {
	Name       string
	Start, End float64
}

// MarkerKind names what a vertical marker shows; it selects the colour and
// the default label.
type MarkerKind string

// The marker kinds report.html knows.
const (
	MarkerBurstEnd          MarkerKind = "burst_end"          // the end of the burst phase
	MarkerRecovered         MarkerKind = "recovered"          // measured recovery
	MarkerPredictedRecovery MarkerKind = "predicted_recovery" // the backlog model's recovery
	// MarkerScaling is a scaling milestone (the simulator's autoscaler:
	// trigger, capacity requested, node, container and model ready, first
	// served, scale down); Label says which.
	MarkerScaling MarkerKind = "scaling"
)

// Marker is a vertical line at T seconds since the run's start.
type Marker struct {
	Kind  MarkerKind
	T     float64
	Label string // defaults to the kind's name, e.g. "predicted recovery"
}

// RunCharts is the time series of one run. Every non-nil Series has one value
// per entry of T. Rates are requests per second, latencies milliseconds,
// counts requests and ages seconds.
type RunCharts struct {
	Name    string      // section heading, e.g. "burst 5× (40 req/s over 8 req/s)"
	Meta    []KV        // summary shown above the charts
	Summary *RunSummary // the verdict and diagnosis block above the charts; nil for none
	// Self is the run's self-accuracy section (did surge keep up?); nil
	// for none (virtual time, or a run folder from before it).
	Self *SelfSection
	T    []float64 // window start, seconds since the run's start, ascending

	Offered, Sent, Goodput Series // requests/s per arrival window
	Completed              Series // ok completions/s per window, by completion time
	Counts                 Series // requests scheduled in each window (sample counts on hover); nil for unknown

	TTFT       LatencySeries // by arrival window, ms
	Completion LatencySeries // by arrival window, ms
	// TTFTDeadlineMs and CompletionDeadlineMs draw the per-request deadline
	// as a horizontal line; 0 draws none.
	TTFTDeadlineMs, CompletionDeadlineMs float64

	InFlight      Series // requests sent and not finished (client side)
	EngineWaiting Series // engine's waiting queue, its peak within each window; nil without engine metrics
	EngineRunning Series // engine's running batch, its peak within each window; nil without engine metrics
	// EngineT are the times of the engine's own samples (seconds, its
	// scrape resolution), and EngineWaitingSamples and
	// EngineRunningSamples its queues at those times; nil without engine
	// metrics. They draw the engine's queue as it was scraped.
	EngineT, EngineWaitingSamples, EngineRunningSamples Series
	OldestWaitingAge                                    Series // seconds the oldest unanswered request has waited (client side)

	// The backlog chart: the prediction's backlog over time (requests,
	// internal/predict Timeline) against the measured one, each on its own
	// time axis (seconds since the run's start); nil for none.
	PredictedBacklogT, PredictedBacklog Series
	MeasuredBacklogT, MeasuredBacklog   Series
	MeasuredBacklogLabel                string // what the measured curve counts, e.g. "engine waiting"

	// Waterfall is where the time of each phase's requests went (nil:
	// not drawn).
	Waterfall []WaterfallRow
	// Quota is the rate-limit headers per window (a managed endpoint's
	// quotas): nil when no response carried any.
	Quota *QuotaSeries

	Phases  []Phase
	Markers []Marker
	// Bands are the scaling events (one new replica each, from its request
	// to the first request it served), drawn as strips along the bottom
	// of every chart; seconds since the run's start.
	Bands []Band
}

// QuotaSeries are the quota buckets per window, on RunCharts.T.
type QuotaSeries struct {
	// Buckets: per bucket the lowest remaining share of its limit (%) and
	// the longest reset projected (s) among the window's responses; NaN
	// where no response of the window carried it.
	Buckets []QuotaBucket
	// Throttled counts the window's 429s; RetryAfter is the longest
	// Retry-After of the window (s, NaN: none).
	Throttled, RetryAfter Series
}

// QuotaBucket is one bucket's series.
type QuotaBucket struct {
	Name             string // requests per minute, tokens per minute, tokens per day
	RemainingPercent Series
	ResetS           Series
}

// Band is one interval of a run drawn as a strip, e.g. "r1: pod created →
// first served".
type Band struct {
	Label      string
	Start, End float64
}

// WriteHTML writes r as one self-contained HTML page: the results tables,
// and per run charts of load, TTFT, completion latency and waiting requests
// drawn by the inlined uPlot from a JSON data block. It loads nothing from
// the network. It fails, before writing anything, when a run's series do not
// match its time axis.
func WriteHTML(w io.Writer, r HTMLReport) error {
	data, err := buildChartData(r)
	if err != nil {
		return err
	}
	js, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("report: encode chart data: %w", err)
	}
	page := htmlPage{
		Title:    r.Title,
		Meta:     r.Meta,
		UPlotCSS: template.CSS(uplotCSS),
		CSS:      template.CSS(reportCSS),
		UPlotJS:  template.JS(uplotJS),
		JS:       template.JS(reportJS),
		Data:     template.JS(js), // json.Marshal escapes <, > and &: no </script> inside
	}
	if page.Title == "" {
		page.Title = "surge report"
	}
	summarized := len(r.Runs) > 0
	for _, rc := range r.Runs {
		if rc.Summary == nil || len(rc.Summary.Verdicts) == 0 {
			summarized = false
		}
	}
	for _, t := range r.Tables {
		ht := newHTMLTable(t, summarized)
		if ht.Title == page.Title {
			ht.Title = "" // the page's heading already says it
		}
		page.Tables = append(page.Tables, ht)
	}
	if page.Breakdowns, err = breakdownHTML(r.Breakdowns); err != nil {
		return err
	}
	for i, run := range data.Runs {
		page.Runs = append(page.Runs, htmlRun{Index: i, Run: run, Meta: r.Runs[i].Meta, Summary: newHTMLSummary(r.Runs[i].Summary), Self: r.Runs[i].Self, Waterfall: newHTMLWaterfall(r.Runs[i].Waterfall)})
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, page); err != nil {
		return fmt.Errorf("report: render html: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("report: write html: %w", err)
	}
	return nil
}

type htmlPage struct {
	Title             string
	Meta              []KV
	Tables            []htmlTable
	Breakdowns        template.HTML // the Breakdowns section, rendered by this package; "" for none
	Runs              []htmlRun
	UPlotCSS, CSS     template.CSS
	UPlotJS, JS, Data template.JS
}

type htmlRun struct {
	Index     int
	Run       chartRun
	Meta      []KV
	Summary   *htmlSummary
	Self      *SelfSection
	Waterfall *htmlWaterfall
}

// htmlSummary is a RunSummary prepared for the template: facts in words,
// and the verdicts as a grid of SLO clauses by phase.
type htmlSummary struct {
	Facts     []htmlFact
	Scopes    []string // column heads: baseline, burst, recovery, overall (those present)
	Rows      []htmlVerdictRow
	Diagnosis *Diagnosis
}

type htmlFact struct {
	Key, Value, Note string
	Late             bool // flagged: a recovery later than predicted
}

type htmlVerdictRow struct {
	Check string
	Cells []htmlVerdictCell // one per scope; Status "" for a clause not judged there
}

type htmlVerdictCell struct {
	Status, Detail string
}

// summaryScopes is the order of the verdict grid's columns.
var summaryScopes = []string{"baseline", "burst", "recovery", "overall"}

func newHTMLSummary(s *RunSummary) *htmlSummary {
	if s == nil {
		return nil
	}
	h := &htmlSummary{Diagnosis: s.Diagnosis}
	num := func(v float64, prec int) string {
		if !finite(v) {
			return "n/a"
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	mu := htmlFact{Key: "capacity μ", Value: "n/a", Note: s.MuSource}
	if s.Mu > 0 && finite(s.Mu) {
		mu.Value = num(s.Mu, 2) + " req/s"
	}
	h.Facts = append(h.Facts, mu)
	backlog := htmlFact{Key: "peak backlog", Value: "predicted " + num(s.PredictedPeakBacklog, 0) + ", measured " + num(s.MeasuredPeakBacklog, 0) + " requests"}
	if s.MeasuredBacklogSource != "" {
		backlog.Note = "measured: " + s.MeasuredBacklogSource
	}
	h.Facts = append(h.Facts, backlog)
	secs := func(v float64) string {
		if !finite(v) {
			return "n/a"
		}
		return num(v, 1) + " s"
	}
	h.Facts = append(h.Facts, htmlFact{Key: "recovery after the burst",
		Value: "predicted " + secs(s.PredictedRecoveryS) + ", measured " + secs(s.MeasuredRecoveryS),
		Note:  s.RecoveryNote, Late: s.RecoveryLate})

	idx := map[string]int{}
	for _, sc := range summaryScopes {
		for _, v := range s.Verdicts {
			if v.Scope == sc {
				idx[sc] = len(h.Scopes)
				h.Scopes = append(h.Scopes, sc)
				break
			}
		}
	}
	for _, v := range s.Verdicts {
		if _, ok := idx[v.Scope]; !ok {
			idx[v.Scope] = len(h.Scopes)
			h.Scopes = append(h.Scopes, v.Scope)
		}
	}
	rows := map[string]int{}
	for _, v := range s.Verdicts {
		ri, ok := rows[v.Check]
		if !ok {
			ri = len(h.Rows)
			rows[v.Check] = ri
			h.Rows = append(h.Rows, htmlVerdictRow{Check: v.Check})
		}
		r := &h.Rows[ri]
		for len(r.Cells) < len(h.Scopes) {
			r.Cells = append(r.Cells, htmlVerdictCell{})
		}
		r.Cells[idx[v.Scope]] = htmlVerdictCell{Status: v.Status.String(), Detail: v.Detail}
	}
	for i := range h.Rows {
		for len(h.Rows[i].Cells) < len(h.Scopes) {
			h.Rows[i].Cells = append(h.Rows[i].Cells, htmlVerdictCell{})
		}
	}
	return h
}

// htmlTable is a results table prepared for the template: like the Markdown
// one, one sub-table per column group, each led by the identity columns.
type htmlTable struct {
	Title    string
	Meta     []KV
	Parts    []htmlPart
	Notes    []string
	Spreads  []string // the spread lines of repeated runs
	Verdicts *htmlVerdicts
	Legend   []KV
}

// htmlVerdicts is a table's verdicts as a compact grid: one row per scope
// (a multiplier and phase, "2× burst"), one column per SLO clause, the
// observed value on hover. Open unless every run's summary below repeats
// them by phase.
type htmlVerdicts struct {
	Checks     []string
	Rows       []htmlVerdictScope
	Pass, Fail int
	Other      int // N/A
	Open       bool
}

type htmlVerdictScope struct {
	Scope string
	Cells []htmlVerdictCell // one per check; Status "" for a clause not judged there
}

func newHTMLVerdicts(vs []Verdict, open bool) *htmlVerdicts {
	if len(vs) == 0 {
		return nil
	}
	h := &htmlVerdicts{Open: open}
	col, row := map[string]int{}, map[string]int{}
	for _, v := range vs {
		if _, ok := col[v.Check]; !ok {
			col[v.Check] = len(h.Checks)
			h.Checks = append(h.Checks, v.Check)
		}
	}
	for _, v := range vs {
		ri, ok := row[v.Scope]
		if !ok {
			ri = len(h.Rows)
			row[v.Scope] = ri
			h.Rows = append(h.Rows, htmlVerdictScope{Scope: v.Scope, Cells: make([]htmlVerdictCell, len(h.Checks))})
		}
		h.Rows[ri].Cells[col[v.Check]] = htmlVerdictCell{Status: v.Status.String(), Detail: v.Detail}
		switch v.Status.String() {
		case "PASS":
			h.Pass++
		case "FAIL":
			h.Fail++
		default:
			h.Other++
		}
	}
	return h
}

type htmlPart struct {
	Name  string
	Heads []htmlHead
	Rows  [][]htmlCell
}

type htmlHead struct {
	Text, Title string
	Numeric     bool
}

type htmlCell struct {
	Text, Title, Class string
}

// newHTMLTable prepares t; summarized says that every run's summary in the
// page repeats its verdicts (they are then collapsed here).
func newHTMLTable(t Table, summarized bool) htmlTable {
	g := t.grid(true).forPeople()
	v := g.view()
	h := htmlTable{Title: t.Title, Meta: v.meta(t.Meta), Verdicts: newHTMLVerdicts(t.Verdicts, !summarized), Legend: v.legend()}
	if len(g.Rows) > 0 {
		h.Parts = v.htmlParts()
	}
	for _, n := range v.notes() {
		h.Notes = append(h.Notes, n.String())
	}
	h.Notes = append(h.Notes, t.Notes...)
	for _, s := range t.Spreads {
		h.Spreads = append(h.Spreads, s.Text())
	}
	return h
}

// htmlParts is v's sub-tables (view.parts) for the page's template.
func (v *view) htmlParts() []htmlPart {
	var out []htmlPart
	for _, p := range v.parts() {
		hp := htmlPart{Name: p.name}
		for _, ci := range p.cols {
			c := v.cols[ci]
			hp.Heads = append(hp.Heads, htmlHead{Text: c.Head, Title: c.Desc, Numeric: numericKind(c.Kind)})
		}
		for _, fs := range v.cells {
			row := make([]htmlCell, 0, len(p.cols))
			for _, ci := range p.cols {
				row = append(row, newHTMLCell(v.cols[ci], fs[ci]))
			}
			hp.Rows = append(hp.Rows, row)
		}
		out = append(out, hp)
	}
	return out
}

func newHTMLCell(col Column, c formatted) htmlCell {
	hc := htmlCell{Text: c.text, Title: c.reason}
	switch {
	case c.na:
		hc.Class = "na"
	case c.bound:
		hc.Class = "bound"
	case col.Key == "partial" && c.reason != "":
		hc.Class = "bad"
	}
	if numericKind(col.Kind) {
		hc.Class = strings.TrimSpace(hc.Class + " num")
	}
	return hc
}
