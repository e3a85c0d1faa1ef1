package experiment

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/scaling"
)

// ScalingTables are the autoscaling timeline's tables (docs/metrics.md
// "Autoscaling timeline"): one row per scaling event with its milestones
// in seconds since the run's start (and Kubernetes' own time beside
// surge's), and with several events the distribution of each interval
// over them. None without a timeline.
func ScalingTables(scope string, res *run.Result) []report.Grid {
	tl := res.Scaling
	if tl == nil || len(tl.Events) == 0 && len(tl.Notes) == 0 {
		return nil
	}
	title := "Autoscaling timeline"
	if scope != "" {
		title = scope + ": autoscaling timeline"
	}
	present := map[string]bool{}
	for _, e := range tl.Events {
		for _, s := range e.Milestones {
			present[s.Milestone] = true
		}
	}
	cols := []report.Column{{Key: "replica", Head: "replica", Kind: report.KindText}}
	if tl.Source == scaling.SourceKubernetes {
		cols = append(cols, report.Column{Key: "node", Head: "node", Kind: report.KindText})
	}
	var ms []string
	for _, m := range scaling.Order {
		if present[m] {
			ms = append(ms, m)
			cols = append(cols, report.Column{Key: m + "_s", Head: milestoneHead(m), Kind: report.KindText})
		}
	}
	t := report.Grid{Title: title, Columns: cols}
	src := "the simulator's autoscaler (engine model milestones)"
	if tl.Source == scaling.SourceKubernetes {
		src = "kubectl watch of " + tl.Watch + "; seconds on surge's clock, Kubernetes' own (1 s precision) in brackets"
	}
	t.Meta = []report.KV{{Key: "source", Value: src}, {Key: "events", Value: strconv.Itoa(len(tl.Events))}}
	for _, e := range tl.Events {
		name := e.Replica
		if e.AfterRecovery {
			name += " (after recovery)"
		}
		row := []report.Cell{report.TextCell(name)}
		if tl.Source == scaling.SourceKubernetes {
			n := OrDash(e.Node)
			if e.NewNode {
				n += " (added)"
			}
			row = append(row, report.TextCell(n))
		}
		for _, m := range ms {
			row = append(row, report.TextCell(stampText(e, m)))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes, tl.Notes...)
	if len(tl.Events) == 0 {
		t.Notes = append(t.Notes, "no scaling event: no new pod appeared during the run")
	}
	out := []report.Grid{t}
	n := tl.BurstEvents()
	if n < 2 {
		out[0].Notes = append(out[0].Notes, tl.Excluded()...)
		return out
	}
	d := report.Grid{
		Title: fmt.Sprintf("%s: distribution over %d events", title, n),
		Columns: []report.Column{
			{Key: "from", Head: "from", Kind: report.KindText}, {Key: "to", Head: "to", Kind: report.KindText},
			{Key: "events", Head: "events", Kind: report.KindCount},
			{Key: "min_s", Head: "min", Kind: report.KindSeconds}, {Key: "median_s", Head: "median", Kind: report.KindSeconds},
			{Key: "max_s", Head: "max", Kind: report.KindSeconds},
		},
		Notes: append([]string{"median by nearest rank (one event's own value); intervals on surge's clock"}, tl.Excluded()...),
	}
	for _, iv := range tl.Intervals() {
		d.Rows = append(d.Rows, []report.Cell{report.TextCell(milestoneHead(iv.From)), report.TextCell(milestoneHead(iv.To)),
			Num(float64(iv.N)), Num(iv.Min.Seconds()), Num(iv.Median.Seconds()), Num(iv.Max.Seconds())})
	}
	return append(out, d)
}

func milestoneHead(m string) string { return strings.ReplaceAll(m, "_", " ") }

func stampText(e scaling.Event, m string) string {
	for _, s := range e.Milestones {
		if s.Milestone != m {
			continue
		}
		txt := strconv.FormatFloat(float64(s.AtNs)/1e9, 'f', 1, 64) + "s"
		if s.KubeNs != scaling.None {
			txt += " (" + strconv.FormatFloat(float64(s.KubeNs)/1e9, 'f', 0, 64) + "s)"
		}
		return txt
	}
	return "—"
}

// scalingMarkers are the chart's vertical marks of a Kubernetes timeline's
// milestones (the simulator's come from its events directly).
func scalingMarkers(res *run.Result) []report.Marker {
	tl := res.Scaling
	if tl == nil || tl.Source != scaling.SourceKubernetes {
		return nil
	}
	var out []report.Marker
	for _, e := range tl.Events {
		for _, s := range e.Milestones {
			if s.Milestone == scaling.BurstStart || s.Milestone == scaling.Recovered {
				continue // the phases and the recovery marker show them
			}
			out = append(out, report.Marker{Kind: report.MarkerScaling, T: float64(s.AtNs) / 1e9, Label: milestoneHead(s.Milestone) + " (" + e.Replica + ")"})
		}
	}
	return out
}

// scalingBands are the chart strips of the timeline's events: from the
// pod's creation (the replica's request) to the first request it served,
// else to Ready, else to the last milestone it reached.
func scalingBands(res *run.Result) []report.Band {
	if res.Scaling == nil {
		return nil
	}
	var out []report.Band
	for _, e := range res.Scaling.Events {
		start, ok := e.At(scaling.PodCreated)
		if !ok {
			continue
		}
		end, ok := e.At(scaling.FirstServed)
		if !ok {
			end, ok = e.At(scaling.Ready)
		}
		if !ok {
			for _, s := range e.Milestones {
				if s.Milestone != scaling.Recovered && s.AtNs > end {
					end = s.AtNs
				}
			}
		}
		if end < start {
			end = start
		}
		out = append(out, report.Band{Label: e.Replica + ": pod created → first served", Start: float64(start) / 1e9, End: float64(end) / 1e9})
	}
	return out
}

// ScalingLine is the console's one line about the run's autoscaling
// timeline: how many new replicas, how long pod created → first served
// took (the median over the burst's events), and where the whole
// timeline is. Empty without a timeline.
func ScalingLine(res *run.Result) string {
	tl := res.Scaling
	if tl == nil {
		return ""
	}
	if len(tl.Events) == 0 {
		what := "no new replica appeared during the run"
		if tl.Watch != "" {
			what = "no new pod matching " + tl.Watch + " appeared during the run"
		}
		return "autoscaling timeline: " + what + " (" + run.ScalingFile + ")"
	}
	n := len(tl.Events)
	b := strings.Builder{}
	fmt.Fprintf(&b, "autoscaling timeline: %d new %s", n, plural(n, "replica", "replicas"))
	if late := n - tl.BurstEvents(); late > 0 {
		fmt.Fprintf(&b, " (%d triggered after the recovery)", late)
	}
	found := false
	for _, iv := range tl.Intervals() {
		if iv.From == scaling.PodCreated && iv.To == scaling.FirstServed {
			if iv.N == 1 {
				fmt.Fprintf(&b, ", pod created → first served %.1f s", iv.Median.Seconds())
			} else {
				fmt.Fprintf(&b, ", pod created → first served median %.1f s (%d events, %.1f–%.1f s)", iv.Median.Seconds(), iv.N, iv.Min.Seconds(), iv.Max.Seconds())
			}
			found = true
		}
	}
	if !found {
		b.WriteString(", first served unknown")
	}
	b.WriteString(" (" + run.ScalingFile + "; the table in results.md)")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
