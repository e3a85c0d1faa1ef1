package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
	Bands   []chartBand   `json:"bands,omitempty"` // scaling events, strips along each chart's bottom
}

// chartBand is one scaling event's strip: Row stacks overlapping ones.
type chartBand struct {
	Label string  `json:"label"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Row   int     `json:"row"`
	Color string  `json:"color"`
}

type chart struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	T     Series `json:"t,omitempty"` // the chart's own time axis; empty: the run's windows
	Note  string `json:"note,omitempty"`
	Y     string `json:"y"`            // left axis label with unit
	Y2    string `json:"y2,omitempty"` // right axis label, for series on scale "y2"
	Log   bool   `json:"log"`          // left axis on a log scale
	// Step draws each value as a flat line over its window (until the next
	// point): window statistics hold for the whole window.
	Step bool `json:"step,omitempty"`
	// Counts are the samples behind each point, shown on hover with
	// CountLabel ("requests", "samples"); empty for none.
	Counts     Series        `json:"counts,omitempty"`
	CountLabel string        `json:"count_label,omitempty"`
	Series     []chartSeries `json:"series"`
	Rules      []chartRule   `json:"rules"`
}

// chartSeries is one line. Series are drawn in order, so a later one lies
// on top; Width, Points and Dash tell apart lines that coincide.
type chartSeries struct {
	Label  string  `json:"label"`
	Unit   string  `json:"unit"`
	Color  string  `json:"color"`
	Dash   []int   `json:"dash,omitempty"`
	Width  float64 `json:"width,omitempty"`  // line width in CSS pixels; 0: 1.75
	Points bool    `json:"points,omitempty"` // draw a marker at every point
	Fill   string  `json:"fill,omitempty"`   // area fill under the line
	Span   bool    `json:"span,omitempty"`   // join across missing points (series on a merged time axis)
	Scale  string  `json:"scale"`            // "y" or "y2"
	Values Series  `json:"values"`
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

// chartMarker is a vertical mark. In the charts it carries only its
// number (N, from 1 in time order), staggered so that tags never collide;
// the key above the charts gives each number its label and time.
type chartMarker struct {
	N     int        `json:"n"`
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

// bandColor is the scaling strips' colour (the scaling markers' hue).
const bandColor = "rgba(184,134,11,0.55)"

var markerStyles = map[MarkerKind]struct {
	label, color string
	dash         []int
}{
	MarkerBurstEnd:          {"burst end", "#d62728", nil},
	MarkerRecovered:         {"recovered (measured)", "#2ca02c", nil},
	MarkerPredictedRecovery: {"predicted recovery", "#7b3fb3", []int{6, 4}},
	MarkerScaling:           {"scaling", "#b8860b", []int{2, 3}},
}

// maxDrawnPoints bounds the points of every drawn series: longer series are
// downsampled for drawing (never for the statistics, which the tables and
// files keep whole), so a report of a long run stays small.
const maxDrawnPoints = 1200

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

// buildRun validates one run and turns it into its chart specs.
func buildRun(rc *RunCharts, idx int) (chartRun, error) {
	name := rc.Name
	if name == "" {
		name = "run " + strconv.Itoa(idx+1)
	}
	fail := func(err error) (chartRun, error) {
		return chartRun{}, fmt.Errorf("report: run %q: %v", name, err)
	}
	if err := checkWindows(rc); err != nil {
		return fail(err)
	}
	run := chartRun{Name: name, T: Series(rc.T), Charts: []chart{}, Notes: []string{}}
	var err error
	if run.Phases, err = chartPhases(rc.Phases); err != nil {
		return fail(err)
	}
	if run.Markers, err = chartMarkers(rc.Markers); err != nil {
		return fail(err)
	}
	if run.Bands, err = chartBands(rc.Bands); err != nil {
		return fail(err)
	}
	if len(run.Bands) > 0 {
		run.Notes = append(run.Notes, "the strips along the bottom of each chart: each new replica from its request (pod created) to the first request it served (else to Ready)")
	}
	if err := checkBacklog(rc); err != nil {
		return fail(err)
	}
	if len(rc.T) == 0 {
		run.Notes = append(run.Notes, "no time windows recorded: nothing to chart")
		return run, nil
	}
	run.setTimeAxis(rc)

	// A last window much shorter than the others (the run's end cut it)
	// is not drawn: its few or no samples would show as a drop to zero
	// and be the legends' "latest".
	rc = mergeTailWindow(rc, run.XMax)
	run.addWindowCharts(rc)

	e, err := engineChart(rc)
	if err != nil {
		return fail(err)
	}
	if e != nil {
		run.add(*e, "")
	}
	return run, nil
}

// checkWindows checks the run's time windows: finite, ascending times, and
// every per-window series one point per window.
func checkWindows(rc *RunCharts) error {
	for i, t := range rc.T {
		if !finite(t) {
			return fmt.Errorf("time %d is %v", i, t)
		}
		if i > 0 && t <= rc.T[i-1] {
			return fmt.Errorf("times not ascending at %d: %v after %v", i, t, rc.T[i-1])
		}
	}
	named := []namedSeries{
		{"offered", rc.Offered}, {"sent", rc.Sent}, {"completed", rc.Completed}, {"goodput", rc.Goodput},
		{"TTFT p50", rc.TTFT.P50}, {"TTFT p95", rc.TTFT.P95}, {"TTFT p99", rc.TTFT.P99},
		{"completion p50", rc.Completion.P50}, {"completion p95", rc.Completion.P95}, {"completion p99", rc.Completion.P99},
		{"TTFT samples", rc.TTFT.N}, {"completion samples", rc.Completion.N}, {"counts", rc.Counts},
		{"in flight", rc.InFlight}, {"engine waiting", rc.EngineWaiting}, {"engine running", rc.EngineRunning},
		{"oldest waiting age", rc.OldestWaitingAge},
	}
	if q := rc.Quota; q != nil {
		named = append(named, namedSeries{"429s", q.Throttled}, namedSeries{"Retry-After", q.RetryAfter})
		for _, b := range q.Buckets {
			named = append(named, namedSeries{b.Name + " remaining", b.RemainingPercent}, namedSeries{b.Name + " reset", b.ResetS})
		}
	}
	for _, n := range named {
		if n.s != nil && len(n.s) != len(rc.T) {
			return fmt.Errorf("series %q has %d points, want %d (one per time window)", n.name, len(n.s), len(rc.T))
		}
	}
	return nil
}

// namedSeries is a series and its name, for errors.
type namedSeries struct {
	name string
	s    Series
}

// chartPhases checks the phases' intervals and gives each its colour.
func chartPhases(phases []Phase) ([]chartPhase, error) {
	out := []chartPhase{}
	for _, p := range phases {
		if !finite(p.Start) || !finite(p.End) || p.End < p.Start {
			return nil, fmt.Errorf("phase %q: bad interval [%v, %v]", p.Name, p.Start, p.End)
		}
		c, ok := phaseColors[p.Name]
		if !ok {
			c = otherPhaseColor
		}
		out = append(out, chartPhase{Name: p.Name, Start: p.Start, End: p.End, Color: c})
	}
	return out, nil
}

// chartMarkers puts the markers in time order, numbered from 1, each with
// its kind's style and a label (its kind's when it has none).
func chartMarkers(markers []Marker) ([]chartMarker, error) {
	markers = slices.Clone(markers)
	slices.SortStableFunc(markers, func(a, b Marker) int { return cmp.Compare(a.T, b.T) })
	out := []chartMarker{}
	for _, m := range markers {
		if !finite(m.T) {
			return nil, fmt.Errorf("marker %q: time is %v", m.Kind, m.T)
		}
		st, ok := markerStyles[m.Kind]
		if !ok {
			st.label, st.color = string(m.Kind), "#555555"
		}
		label := m.Label
		if label == "" {
			label = st.label
		}
		out = append(out, chartMarker{N: len(out) + 1, Kind: m.Kind, T: m.T, Label: label, Color: st.color, Dash: st.dash})
	}
	return out, nil
}

// chartBands gives each scaling event its strip, stacking overlapping ones
// in rows: each goes in the first row free at its start. Nil for none.
func chartBands(bands []Band) ([]chartBand, error) {
	var out []chartBand
	bandEnds := []float64{}
	for _, b := range bands {
		if !finite(b.Start) || !finite(b.End) || b.End < b.Start {
			return nil, fmt.Errorf("band %q: bad interval [%v, %v]", b.Label, b.Start, b.End)
		}
		row := 0 // the first row free at b.Start
		for row < len(bandEnds) && bandEnds[row] > b.Start {
			row++
		}
		if row == len(bandEnds) {
			bandEnds = append(bandEnds, 0)
		}
		bandEnds[row] = b.End
		out = append(out, chartBand{Label: b.Label, Start: b.Start, End: b.End, Row: row, Color: bandColor})
	}
	return out, nil
}

// checkBacklog checks the predicted and measured backlog: one value per
// time, times ascending.
func checkBacklog(rc *RunCharts) error {
	for _, s := range []struct {
		name string
		t, v Series
	}{{"predicted backlog", rc.PredictedBacklogT, rc.PredictedBacklog}, {"measured backlog", rc.MeasuredBacklogT, rc.MeasuredBacklog}} {
		if len(s.t) != len(s.v) {
			return fmt.Errorf("%s has %d points on %d times", s.name, len(s.v), len(s.t))
		}
		if err := ascending(s.t); err != nil {
			return fmt.Errorf("%s: %v", s.name, err)
		}
	}
	return nil
}

// setTimeAxis sets the x axis to cover the windows and the phases, with a
// note for each marker outside it.
func (run *chartRun) setTimeAxis(rc *RunCharts) {
	// Times are seconds since the run's start: the axis starts there, and
	// windows before it (records scheduled before the first phase) are off
	// the chart.
	run.XMin, run.XMax = 0, rc.T[len(rc.T)-1]
	for _, p := range rc.Phases {
		run.XMax = math.Max(run.XMax, p.End)
	}
	for _, m := range run.Markers {
		if m.T < run.XMin || m.T > run.XMax {
			run.Notes = append(run.Notes, fmt.Sprintf("%s at %s is outside the charted time (%s to %s)",
				m.Label, fmtSeconds(m.T), fmtSeconds(run.XMin), fmtSeconds(run.XMax)))
		}
	}
}

// add appends c to the run's charts, or when it has no series, emptyNote
// (if any) to its notes.
func (run *chartRun) add(c chart, emptyNote string) {
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

// addWindowCharts adds the charts drawn on the run's windows: arrivals,
// completions, backlog, waiting and the latencies.
func (run *chartRun) addWindowCharts(rc *RunCharts) {
	// The windows, downsampled for drawing when there are too many: each
	// drawn point stands for a run of windows (rates averaged, latencies
	// and queues at their peak, counts summed).
	ds := newBuckets(len(rc.T))
	run.T = ds.first(rc.T)
	winNote := ""
	if ds.per > 1 {
		winNote = fmt.Sprintf("each point is %d windows: rates averaged, latencies and queues at their peak", ds.per)
	}

	run.add(loadChart(rc, ds, winNote), "load series unavailable")
	run.add(completedChart(rc, ds, winNote), "")
	if b := backlogChart(rc); b != nil {
		run.add(*b, "")
	}
	if rc.EngineWaiting == nil && rc.EngineRunning == nil {
		run.Notes = append(run.Notes, NoteEngineUnavailable)
	}
	run.add(waitingChart(rc, ds, winNote), "")
	if rc.Quota != nil {
		run.add(quotaChart(rc, ds, winNote), "")
	}
	run.add(latencyChart("ttft", "TTFT by arrival window", rc.TTFT, rc.TTFTDeadlineMs, ds, winNote),
		"TTFT latency unavailable: no samples")
	run.add(latencyChart("completion", "Completion latency by arrival window", rc.Completion, rc.CompletionDeadlineMs, ds, winNote),
		"completion latency unavailable: no samples")
}

// stepped draws c as steps, each value flat over its window, and adds
// winNote (how the windows were downsampled, if they were) to its note.
func stepped(c chart, winNote string) chart {
	c.Step = true
	if winNote != "" {
		c.Note = strings.TrimPrefix(c.Note+"; "+winNote, "; ")
	}
	return c
}

// loadChart is the arrivals chart: offered, sent and goodput per window.
func loadChart(rc *RunCharts, ds buckets, winNote string) chart {
	// Arrivals: when all is well offered, sent and goodput coincide, so
	// goodput is a shaded area, offered a wide dashed line over it, and sent
	// a thin line with a marker at every point, drawn last, on top.
	load := stepped(chart{ID: "load", Title: "Arrivals: offered, sent and goodput by arrival window", Y: "requests/s",
		Counts: ds.sum(rc.Counts), CountLabel: "requests"}, winNote)
	load.Series = present(
		chartSeries{Label: "goodput", Color: "#7b3fb3", Fill: "rgba(123,63,179,0.16)", Width: 1.5, Values: ds.mean(rc.Goodput)},
		chartSeries{Label: "offered", Color: "#8c8c8c", Dash: []int{8, 4}, Width: 3.5, Values: ds.mean(rc.Offered)},
		chartSeries{Label: "sent", Color: "#0b4f8a", Width: 1, Points: true, Values: ds.mean(rc.Sent)},
	)
	withUnit(load.Series, "req/s", "y")
	return load
}

// completedChart is completions per window, with the run's μ as a rule.
func completedChart(rc *RunCharts, ds buckets, winNote string) chart {
	done := chart{ID: "completed", Title: "Completed/s by completion time", Y: "requests/s"}
	if sm := rc.Summary; sm != nil && sm.Mu > 0 && finite(sm.Mu) {
		done.Rules = []chartRule{{Label: "μ " + strconv.FormatFloat(sm.Mu, 'f', 2, 64) + " req/s", Value: sm.Mu}}
		done.Note = "μ is a rate over the drain, tens of seconds: a short window can rise above it when a full batch finishes together, its neighbours fall below it; a backlog drains at μ − offered on average"
	}
	done = stepped(done, winNote)
	done.Series = present(chartSeries{Label: "completed (by completion time)", Color: "#2ca02c", Width: 2, Values: ds.mean(rc.Completed)})
	withUnit(done.Series, "req/s", "y")
	return done
}

// waitingChart is the engine's queue and batch against the client's
// requests in flight, with the oldest waiting age on the right axis.
func waitingChart(rc *RunCharts, ds buckets, winNote string) chart {
	// Waiting: the engine's running batch is a pale area, its queue a solid
	// line, and the client's in-flight count a dashed line drawn last, on
	// top, so that it shows where it equals the engine's count.
	q := stepped(chart{ID: "waiting", Title: "In flight and waiting", Y: "requests", Counts: ds.sum(rc.Counts), CountLabel: "requests"}, winNote)
	q.Series = present(
		chartSeries{Label: "engine running", Color: "#2ca02c", Fill: "rgba(44,160,44,0.12)", Width: 1.5, Values: ds.max(rc.EngineRunning)},
		chartSeries{Label: "engine waiting", Color: "#d62728", Width: 2, Values: ds.max(rc.EngineWaiting)},
		chartSeries{Label: "in flight (client)", Color: "#1f77b4", Dash: []int{6, 3}, Width: 2, Values: ds.max(rc.InFlight)},
	)
	withUnit(q.Series, "", "y")
	if rc.OldestWaitingAge != nil {
		q.Y2 = "oldest waiting age (s)"
		q.Series = append(q.Series, chartSeries{Label: "oldest waiting age", Unit: "s", Color: "#8c564b", Dash: []int{2, 3}, Scale: "y2", Values: ds.max(rc.OldestWaitingAge)})
	}
	if rc.EngineWaiting == nil && rc.EngineRunning == nil {
		q.Note = strings.TrimPrefix("engine metrics unavailable; "+q.Note, "; ")
		q.Note = strings.TrimSuffix(q.Note, "; ")
	}
	return q
}

// quotaColors are the buckets' colours, in the order of QuotaSeries.Buckets.
var quotaColors = []string{"#1f77b4", "#d62728", "#9467bd"}

// quotaChart is a managed endpoint's quota per window: each bucket's
// lowest remaining share of its limit, and on the right axis its longest
// reset projected and the longest Retry-After; the 429s are the counts
// on hover.
func quotaChart(rc *RunCharts, ds buckets, winNote string) chart {
	q := rc.Quota
	c := stepped(chart{ID: "quota", Title: "Quota: remaining and refill by arrival window", Y: "remaining, % of limit", Y2: "seconds until refill",
		Counts: ds.sum(q.Throttled), CountLabel: "429s"}, winNote)
	for i, b := range q.Buckets {
		color := quotaColors[i%len(quotaColors)]
		c.Series = append(c.Series, chartSeries{Label: b.Name + " remaining", Color: color, Width: 2, Unit: "%", Scale: "y", Values: ds.min(b.RemainingPercent)})
		c.Series = append(c.Series, chartSeries{Label: b.Name + " reset", Color: color, Dash: []int{5, 3}, Width: 1.5, Scale: "y2", Unit: "s", Values: ds.max(b.ResetS)})
	}
	c.Series = append(c.Series, chartSeries{Label: "Retry-After (longest)", Color: "#8c564b", Dash: []int{2, 3}, Scale: "y2", Unit: "s", Values: ds.max(q.RetryAfter)})
	c.Series = present(c.Series...)
	if allGaps(c.Series) {
		c.Series = nil
	}
	return c
}

// latencyChart is one latency's p50, p95 and p99 per window on a log
// scale, with its deadline (ms) as a rule; no series when it has no samples.
func latencyChart(id, title string, s LatencySeries, deadline float64, ds buckets, winNote string) chart {
	// The ticks carry their unit (100 ms, 1 s, 10 s). When saturated
	// windows put p95 and p99 together, p95 is a wide line and p99 a
	// thin dashed one on top of it: both stay visible.
	c := stepped(chart{ID: id, Title: title, Y: "latency (log scale)", Log: true, Counts: ds.sum(s.N), CountLabel: "samples"}, winNote)
	c.Series = present(
		chartSeries{Label: "p50", Color: "#2ca02c", Values: ds.max(positive(s.P50))},
		chartSeries{Label: "p95", Color: "#ff7f0e", Width: 3.5, Values: ds.max(positive(s.P95))},
		chartSeries{Label: "p99", Color: "#b91c1c", Width: 1.5, Dash: []int{5, 3}, Values: ds.max(positive(s.P99))},
	)
	withUnit(c.Series, "ms", "y")
	if allGaps(c.Series) {
		c.Series = nil
	}
	if deadline > 0 && finite(deadline) {
		c.Rules = []chartRule{{Label: "deadline " + fmtSeconds(deadline/1000), Value: deadline}}
	}
	return c
}

// engineChart checks the engine's own samples and draws its queue at every
// scrape (downsampled to each group's peak); nil when there are none.
func engineChart(rc *RunCharts) (*chart, error) {
	if len(rc.EngineT) == 0 {
		return nil, nil
	}
	if err := ascending(rc.EngineT); err != nil {
		return nil, fmt.Errorf("engine sample %v", err)
	}
	for _, s := range []Series{rc.EngineWaitingSamples, rc.EngineRunningSamples} {
		if s != nil && len(s) != len(rc.EngineT) {
			return nil, fmt.Errorf("engine series has %d points, want %d (one per engine sample)", len(s), len(rc.EngineT))
		}
	}
	eb := newBuckets(len(rc.EngineT))
	e := &chart{ID: "engine", Title: "Engine queue, every scrape", Y: "requests", T: eb.first(rc.EngineT),
		Note: "at the engine's scrape resolution; the chart above shows each window's peak"}
	if eb.per > 1 {
		e.Note = fmt.Sprintf("the peak of every %d scrapes (%d in all); the chart above shows each window's peak", eb.per, len(rc.EngineT))
	}
	e.Series = present(
		chartSeries{Label: "engine running", Color: "#2ca02c", Fill: "rgba(44,160,44,0.12)", Width: 1.5, Values: eb.max(rc.EngineRunningSamples)},
		chartSeries{Label: "engine waiting", Color: "#d62728", Width: 2, Values: eb.max(rc.EngineWaitingSamples)},
	)
	withUnit(e.Series, "", "y")
	return e, nil
}

// mergeTailWindow returns rc, or for drawing a copy of it whose last window
// is merged into the one before when it is shorter than half the windows'
// typical (median) length: that window's point becomes the end of the one
// before (time end, the same values, no count), so that the step of the last
// full window reaches the end of the run and nothing drops to zero. end is
// where the last window ends; statistics (tables, files) are untouched.
func mergeTailWindow(rc *RunCharts, end float64) *RunCharts {
	n := len(rc.T)
	if n < 3 {
		return rc
	}
	d := make([]float64, 0, n-1)
	for i := 1; i < n; i++ {
		d = append(d, rc.T[i]-rc.T[i-1])
	}
	slices.Sort(d)
	w := d[len(d)/2]
	tail := end - rc.T[n-1]
	if !(tail > 0 && tail < w/2) {
		return rc
	}
	c := *rc
	c.T = slices.Clone(rc.T)
	c.T[n-1] = end
	repeat := func(s Series) Series {
		if s == nil {
			return nil
		}
		s = slices.Clone(s)
		s[n-1] = s[n-2]
		return s
	}
	blank := func(s Series) Series {
		if s == nil {
			return nil
		}
		s = slices.Clone(s)
		s[n-1] = math.NaN()
		return s
	}
	c.Offered, c.Sent, c.Goodput, c.Completed = repeat(rc.Offered), repeat(rc.Sent), repeat(rc.Goodput), repeat(rc.Completed)
	c.InFlight, c.EngineWaiting, c.EngineRunning, c.OldestWaitingAge = repeat(rc.InFlight), repeat(rc.EngineWaiting), repeat(rc.EngineRunning), repeat(rc.OldestWaitingAge)
	c.TTFT = LatencySeries{P50: repeat(rc.TTFT.P50), P95: repeat(rc.TTFT.P95), P99: repeat(rc.TTFT.P99), N: blank(rc.TTFT.N)}
	c.Completion = LatencySeries{P50: repeat(rc.Completion.P50), P95: repeat(rc.Completion.P95), P99: repeat(rc.Completion.P99), N: blank(rc.Completion.N)}
	c.Counts = blank(rc.Counts)
	if q := rc.Quota; q != nil {
		nq := QuotaSeries{Throttled: blank(q.Throttled), RetryAfter: repeat(q.RetryAfter)}
		for _, b := range q.Buckets {
			nq.Buckets = append(nq.Buckets, QuotaBucket{Name: b.Name, RemainingPercent: repeat(b.RemainingPercent), ResetS: repeat(b.ResetS)})
		}
		c.Quota = &nq
	}
	return &c
}

// backlogChart draws the prediction's backlog against the measured one on
// one time axis (the union of both, each series joined across the other's
// times); nil when neither is there.
func backlogChart(rc *RunCharts) *chart {
	if len(rc.PredictedBacklog) == 0 && len(rc.MeasuredBacklog) == 0 {
		return nil
	}
	pb, mb := newBuckets(len(rc.PredictedBacklogT)), newBuckets(len(rc.MeasuredBacklogT))
	pt, pv := pb.first(rc.PredictedBacklogT), pb.max(rc.PredictedBacklog)
	mt, mv := mb.first(rc.MeasuredBacklogT), mb.max(rc.MeasuredBacklog)
	t := slices.Concat(pt, mt)
	slices.Sort(t)
	t = slices.Compact(t)
	spread := func(at, v Series) Series {
		out := make(Series, len(t))
		j := 0
		for i, x := range t {
			out[i] = math.NaN()
			if j < len(at) && at[j] == x {
				out[i] = v[j]
				j++
			}
		}
		return out
	}
	label := rc.MeasuredBacklogLabel
	if label == "" {
		label = "measured"
	}
	c := &chart{ID: "backlog", Title: "Backlog: predicted against measured", Y: "requests", T: t,
		Note: "the model counts requests queued beyond μ, from an empty queue at the burst start; the measured curve is the engine's waiting queue when it was scraped (the batch being served is in neither), else the client's requests in flight"}
	if len(rc.MeasuredBacklog) > 0 {
		c.Series = append(c.Series, chartSeries{Label: "measured: " + label, Color: "#1f77b4", Fill: "rgba(31,119,180,0.10)", Width: 2, Span: true, Values: spread(mt, mv)})
	}
	if len(rc.PredictedBacklog) > 0 {
		c.Series = append(c.Series, chartSeries{Label: "predicted (fluid model)", Color: "#7b3fb3", Dash: []int{6, 4}, Width: 2.25, Span: true, Values: spread(pt, pv)})
	}
	withUnit(c.Series, "", "y")
	c.Rules = []chartRule{}
	return c
}

// buckets groups n consecutive points into runs of per for drawing, so that
// at most maxDrawnPoints remain; per is 1 (no grouping) for short series.
type buckets struct{ n, per int }

func newBuckets(n int) buckets {
	return buckets{n: n, per: max(1, (n+maxDrawnPoints-1)/maxDrawnPoints)}
}

func (b buckets) fold(s Series, f func(run Series) float64) Series {
	if s == nil || b.per == 1 {
		return s
	}
	out := make(Series, 0, (len(s)+b.per-1)/b.per)
	for i := 0; i < len(s); i += b.per {
		out = append(out, f(s[i:min(i+b.per, len(s))]))
	}
	return out
}

// first keeps each run's first value: the time axis (a point is drawn at
// the start of what it stands for).
func (b buckets) first(s Series) Series { return b.fold(s, func(r Series) float64 { return r[0] }) }

// max keeps each run's largest finite value (NaN when none): peaks survive.
func (b buckets) max(s Series) Series {
	return b.fold(s, func(r Series) float64 {
		m := math.NaN()
		for _, v := range r {
			if finite(v) && (math.IsNaN(m) || v > m) {
				m = v
			}
		}
		return m
	})
}

// min keeps each run's smallest finite value (NaN when none): what
// remains of a quota.
func (b buckets) min(s Series) Series {
	return b.fold(s, func(r Series) float64 {
		m := math.NaN()
		for _, v := range r {
			if finite(v) && (math.IsNaN(m) || v < m) {
				m = v
			}
		}
		return m
	})
}

// mean averages each run's finite values (NaN when none): rates.
func (b buckets) mean(s Series) Series {
	return b.fold(s, func(r Series) float64 {
		var sum float64
		n := 0
		for _, v := range r {
			if finite(v) {
				sum += v
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return sum / float64(n)
	})
}

// sum adds each run's finite values: counts.
func (b buckets) sum(s Series) Series {
	return b.fold(s, func(r Series) float64 {
		var sum float64
		for _, v := range r {
			if finite(v) {
				sum += v
			}
		}
		return sum
	})
}

func ascending(t Series) error {
	for i, x := range t {
		if !finite(x) || i > 0 && x <= t[i-1] {
			return fmt.Errorf("times not ascending at %d", i)
		}
	}
	return nil
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
