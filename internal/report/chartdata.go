package report

import (
	"fmt"
	"math"
	"strconv"
)

// chartData is the JSON block that report.js draws: everything it needs,
// already decided (which charts, which series, colours, labels), so that the
// script stays a thin layer over uPlot.
type chartData struct {
	Runs []chartRun `json:"runs"`
}

type chartRun struct {
	Name    string        `json:"name"`
	T       Series        `json:"t"`
	XMin    float64       `json:"x_min"` // x axis: the windows and the phases
	XMax    float64       `json:"x_max"`
	Charts  []chart       `json:"charts"`
	Phases  []chartPhase  `json:"phases"`
	Markers []chartMarker `json:"markers"`
	Notes   []string      `json:"notes"`
}

type chart struct {
	ID     string        `json:"id"`
	Title  string        `json:"title"`
	T      Series        `json:"t,omitempty"` // the chart's own time axis; empty: the run's windows
	Note   string        `json:"note,omitempty"`
	Y      string        `json:"y"`            // left axis label with unit
	Y2     string        `json:"y2,omitempty"` // right axis label, for series on scale "y2"
	Log    bool          `json:"log"`          // left axis on a log scale
	Series []chartSeries `json:"series"`
	Rules  []chartRule   `json:"rules"`
}

type chartSeries struct {
	Label  string `json:"label"`
	Unit   string `json:"unit"`
	Color  string `json:"color"`
	Dash   []int  `json:"dash,omitempty"`
	Scale  string `json:"scale"` // "y" or "y2"
	Values Series `json:"values"`
}

type chartRule struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
}

type chartPhase struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Color string  `json:"color"`
}

type chartMarker struct {
	Kind  MarkerKind `json:"kind"`
	T     float64    `json:"t"`
	Label string     `json:"label"`
	Color string     `json:"color"`
	Dash  []int      `json:"dash,omitempty"`
}

// NoteEngineUnavailable is shown for a run without engine metrics.
const NoteEngineUnavailable = "engine metrics unavailable: engine waiting and running are not drawn; waiting shown is client-side"

var phaseColors = map[string]string{
	"warmup":   "rgba(120,120,120,0.10)",
	"baseline": "rgba(31,119,180,0.07)",
	"burst":    "rgba(214,39,40,0.11)",
	"recovery": "rgba(44,160,44,0.08)",
}

const otherPhaseColor = "rgba(148,103,189,0.08)"

var markerStyles = map[MarkerKind]struct {
	label, color string
	dash         []int
}{
	MarkerBurstEnd:          {"burst end", "#d62728", nil},
	MarkerRecovered:         {"recovered (measured)", "#2ca02c", nil},
	MarkerPredictedRecovery: {"predicted recovery", "#7b3fb3", []int{6, 4}},
}

// buildChartData validates the runs and turns them into chart specs.
func buildChartData(r HTMLReport) (chartData, error) {
	d := chartData{Runs: make([]chartRun, 0, len(r.Runs))}
	for i := range r.Runs {
		run, err := buildRun(&r.Runs[i], i)
		if err != nil {
			return chartData{}, err
		}
		d.Runs = append(d.Runs, run)
	}
	return d, nil
}

func buildRun(rc *RunCharts, idx int) (chartRun, error) {
	name := rc.Name
	if name == "" {
		name = "run " + strconv.Itoa(idx+1)
	}
	fail := func(format string, a ...any) (chartRun, error) {
		return chartRun{}, fmt.Errorf("report: run %q: %s", name, fmt.Sprintf(format, a...))
	}
	for i, t := range rc.T {
		if !finite(t) {
			return fail("time %d is %v", i, t)
		}
		if i > 0 && t <= rc.T[i-1] {
			return fail("times not ascending at %d: %v after %v", i, t, rc.T[i-1])
		}
	}
	named := []struct {
		name string
		s    Series
	}{
		{"offered", rc.Offered}, {"sent", rc.Sent}, {"completed", rc.Completed}, {"goodput", rc.Goodput},
		{"TTFT p50", rc.TTFT.P50}, {"TTFT p95", rc.TTFT.P95}, {"TTFT p99", rc.TTFT.P99},
		{"completion p50", rc.Completion.P50}, {"completion p95", rc.Completion.P95}, {"completion p99", rc.Completion.P99},
		{"in flight", rc.InFlight}, {"engine waiting", rc.EngineWaiting}, {"engine running", rc.EngineRunning},
		{"oldest waiting age", rc.OldestWaitingAge},
	}
	for _, n := range named {
		if n.s != nil && len(n.s) != len(rc.T) {
			return fail("series %q has %d points, want %d (one per time window)", n.name, len(n.s), len(rc.T))
		}
	}
	run := chartRun{Name: name, T: Series(rc.T), Charts: []chart{}, Phases: []chartPhase{}, Markers: []chartMarker{}, Notes: []string{}}
	for _, p := range rc.Phases {
		if !finite(p.Start) || !finite(p.End) || p.End < p.Start {
			return fail("phase %q: bad interval [%v, %v]", p.Name, p.Start, p.End)
		}
		c, ok := phaseColors[p.Name]
		if !ok {
			c = otherPhaseColor
		}
		run.Phases = append(run.Phases, chartPhase{Name: p.Name, Start: p.Start, End: p.End, Color: c})
	}
	for _, m := range rc.Markers {
		if !finite(m.T) {
			return fail("marker %q: time is %v", m.Kind, m.T)
		}
		st, ok := markerStyles[m.Kind]
		if !ok {
			st.label, st.color = string(m.Kind), "#555555"
		}
		label := m.Label
		if label == "" {
			label = st.label
		}
		run.Markers = append(run.Markers, chartMarker{Kind: m.Kind, T: m.T, Label: label, Color: st.color, Dash: st.dash})
	}
	if len(rc.T) == 0 {
		run.Notes = append(run.Notes, "no time windows recorded: nothing to chart")
		return run, nil
	}
	run.XMin, run.XMax = rc.T[0], rc.T[len(rc.T)-1]
	for _, p := range rc.Phases {
		run.XMin, run.XMax = math.Min(run.XMin, p.Start), math.Max(run.XMax, p.End)
	}
	for _, m := range run.Markers {
		if m.T < run.XMin || m.T > run.XMax {
			run.Notes = append(run.Notes, fmt.Sprintf("%s at %s is outside the charted time (%s to %s)",
				m.Label, fmtSeconds(m.T), fmtSeconds(run.XMin), fmtSeconds(run.XMax)))
		}
	}

	add := func(c chart, emptyNote string) {
		if len(c.Series) == 0 {
			if emptyNote != "" {
				run.Notes = append(run.Notes, emptyNote)
			}
			return
		}
		if c.Rules == nil {
			c.Rules = []chartRule{}
		}
		run.Charts = append(run.Charts, c)
	}

	load := chart{ID: "load", Title: "Load per window", Y: "requests/s"}
	load.Series = present(
		chartSeries{Label: "offered", Color: "#8c8c8c", Dash: []int{5, 4}, Values: rc.Offered},
		chartSeries{Label: "sent", Color: "#1f77b4", Values: rc.Sent},
		chartSeries{Label: "completed (by completion time)", Color: "#2ca02c", Values: rc.Completed},
		chartSeries{Label: "goodput", Color: "#7b3fb3", Values: rc.Goodput},
	)
	withUnit(load.Series, "req/s", "y")
	add(load, "load series unavailable")

	for _, l := range []struct {
		id, title string
		s         LatencySeries
		deadline  float64
		what      string
	}{
		{"ttft", "TTFT by arrival window", rc.TTFT, rc.TTFTDeadlineMs, "TTFT"},
		{"completion", "Completion latency by arrival window", rc.Completion, rc.CompletionDeadlineMs, "completion"},
	} {
		c := chart{ID: l.id, Title: l.title, Y: "ms (log scale)", Log: true}
		c.Series = present(
			chartSeries{Label: "p50", Color: "#2ca02c", Values: positive(l.s.P50)},
			chartSeries{Label: "p95", Color: "#ff7f0e", Values: positive(l.s.P95)},
			chartSeries{Label: "p99", Color: "#d62728", Values: positive(l.s.P99)},
		)
		withUnit(c.Series, "ms", "y")
		if allGaps(c.Series) {
			c.Series = nil
		}
		if l.deadline > 0 && finite(l.deadline) {
			c.Rules = []chartRule{{Label: "deadline " + fmtSeconds(l.deadline/1000), Value: l.deadline}}
		}
		add(c, l.what+" latency unavailable: no samples")
	}

	q := chart{ID: "waiting", Title: "In flight and waiting", Y: "requests"}
	q.Series = present(
		chartSeries{Label: "in flight (client)", Color: "#1f77b4", Values: rc.InFlight},
		chartSeries{Label: "engine running", Color: "#2ca02c", Values: rc.EngineRunning},
		chartSeries{Label: "engine waiting", Color: "#d62728", Values: rc.EngineWaiting},
	)
	withUnit(q.Series, "", "y")
	if rc.OldestWaitingAge != nil {
		q.Y2 = "oldest waiting age (s)"
		q.Series = append(q.Series, chartSeries{Label: "oldest waiting age", Unit: "s", Color: "#8c564b", Dash: []int{2, 3}, Scale: "y2", Values: rc.OldestWaitingAge})
	}
	if rc.EngineWaiting == nil && rc.EngineRunning == nil {
		run.Notes = append(run.Notes, NoteEngineUnavailable)
		q.Note = "engine metrics unavailable"
	}
	add(q, "")

	if len(rc.EngineT) > 0 {
		for i, t := range rc.EngineT {
			if !finite(t) || i > 0 && t <= rc.EngineT[i-1] {
				return fail("engine sample times not ascending at %d", i)
			}
		}
		for _, s := range []Series{rc.EngineWaitingSamples, rc.EngineRunningSamples} {
			if s != nil && len(s) != len(rc.EngineT) {
				return fail("engine series has %d points, want %d (one per engine sample)", len(s), len(rc.EngineT))
			}
		}
		e := chart{ID: "engine", Title: "Engine queue, every scrape", Y: "requests", T: rc.EngineT,
			Note: "at the engine's scrape resolution; the chart above shows each window's peak"}
		e.Series = present(
			chartSeries{Label: "engine running", Color: "#2ca02c", Values: rc.EngineRunningSamples},
			chartSeries{Label: "engine waiting", Color: "#d62728", Values: rc.EngineWaitingSamples},
		)
		withUnit(e.Series, "", "y")
		add(e, "")
	}
	return run, nil
}

// present keeps the series that are not nil.
func present(ss ...chartSeries) []chartSeries {
	var out []chartSeries
	for _, s := range ss {
		if s.Values != nil {
			out = append(out, s)
		}
	}
	return out
}

func withUnit(ss []chartSeries, unit, scale string) {
	for i := range ss {
		ss[i].Unit, ss[i].Scale = unit, scale
	}
}

// positive replaces values a log axis cannot show (≤ 0) with gaps.
func positive(s Series) Series {
	if s == nil {
		return nil
	}
	out := make(Series, len(s))
	for i, v := range s {
		if v > 0 {
			out[i] = v
		} else {
			out[i] = math.NaN()
		}
	}
	return out
}

func allGaps(ss []chartSeries) bool {
	for _, s := range ss {
		for _, v := range s.Values {
			if finite(v) {
				return false
			}
		}
	}
	return true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
