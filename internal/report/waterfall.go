package report

import (
	"fmt"
	"math"
)

// WaterfallRow is where the time of one phase's requests went, stage by
// stage in the order a request meets them: schedule lag, connection wait,
// gateway, engine queue, prefill (or the rest of the time to the first
// token), decode. Each stage is a mean over the requests that have it (ms;
// a stage not measured is absent), so the row adds up to a mean request.
type WaterfallRow struct {
	Phase  string
	Stages []WaterfallStage
}

// WaterfallStage is one stage's mean, ms.
type WaterfallStage struct {
	Name string
	Ms   float64
}

// WaterfallStages are the stage names in order, with their colours.
var WaterfallStages = []struct{ Name, Color string }{
	{"schedule lag", "#8c8c8c"},
	{"connection wait", "#17becf"},
	{"gateway", "#9467bd"},
	{"engine queue", "#d62728"},
	{"prefill", "#ff7f0e"},
	{"decode", "#2ca02c"},
}

// htmlWaterfall is a run's waterfall prepared for the template: each
// segment's width a share of the longest row.
type htmlWaterfall struct {
	Rows   []htmlWaterfallRow
	Legend []htmlLegend
}

type htmlWaterfallRow struct {
	Phase, Total string
	Segments     []htmlSegment
}

type htmlSegment struct{ Style, Title string }

type htmlLegend struct{ Name, Style string }

func newHTMLWaterfall(rows []WaterfallRow) *htmlWaterfall {
	longest := 0.0
	for _, r := range rows {
		t := 0.0
		for _, s := range r.Stages {
			t += math.Max(s.Ms, 0)
		}
		longest = math.Max(longest, t)
	}
	if longest <= 0 {
		return nil
	}
	w := &htmlWaterfall{}
	for _, st := range WaterfallStages {
		w.Legend = append(w.Legend, htmlLegend{Name: st.Name, Style: "background: " + st.Color})
	}
	for _, r := range rows {
		hr := htmlWaterfallRow{Phase: r.Phase}
		total := 0.0
		for _, s := range r.Stages {
			if !(s.Ms > 0) || !finite(s.Ms) {
				continue
			}
			total += s.Ms
			hr.Segments = append(hr.Segments, htmlSegment{
				Style: fmt.Sprintf("width: %.3f%%; background: %s", 100*s.Ms/longest, stageColor(s.Name)),
				Title: fmt.Sprintf("%s: %s ms", s.Name, fmtMs(s.Ms)),
			})
		}
		hr.Total = fmtMs(total) + " ms"
		w.Rows = append(w.Rows, hr)
	}
	return w
}

func stageColor(name string) string {
	for _, st := range WaterfallStages {
		if st.Name == name {
			return st.Color
		}
	}
	return "#bbbbbb"
}
