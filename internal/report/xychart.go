package report

// XY charts: values plotted against a level (or against each other) as
// an inline SVG, so they need no script and no network.

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

// XYSeries is one line of an XYChart: points (X[i], Y[i]) joined in order.
// A NaN in either breaks the line. Labels, when set, name each point.
type XYSeries struct {
	Label  string
	X, Y   []float64
	Labels []string
	Dash   bool // drawn dashed (a reference, a fitted line)
}

// XYRule is a reference line across a chart: horizontal at Y = Value on a
// chart's HRules, vertical at X = Value on its VRules.
type XYRule struct {
	Label string
	Value float64
}

// XYChart is a line chart of values against a level or against each other
// (throughput against latency), drawn as an inline SVG.
type XYChart struct {
	Title          string
	Note           string // shown beside the title
	XLabel, YLabel string // axis labels with units
	LogX, LogY     bool   // logarithmic axes (values ≤ 0 are left out)
	Series         []XYSeries
	HRules         []XYRule // budgets, limits
	VRules         []XYRule // knee, usable level, sustainable rate
	// XCategories, when set, make the x axis one of positions 1, 2, …
	// ticked with these names instead of numbers (values in the order
	// given, not on a scale).
	XCategories []string
}

var xyColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#7b3fb3", "#8c564b", "#e377c2", "#17becf"}

// Chart geometry, in SVG user units.
const (
	xyW, xyH                         = 640, 320
	xyLeft, xyRight, xyTop, xyBottom = 66, 16, 34, 46
)

// xyScale maps data to pixels on one axis.
type xyScale struct {
	lo, hi float64
	log    bool
	p0, p1 float64 // pixel positions of lo and hi
}

func (s xyScale) pos(v float64) float64 {
	a, b, x := s.lo, s.hi, v
	if s.log {
		a, b, x = math.Log10(a), math.Log10(b), math.Log10(v)
	}
	if b == a {
		return (s.p0 + s.p1) / 2
	}
	return s.p0 + (x-a)/(b-a)*(s.p1-s.p0)
}

// usable reports whether v can be drawn on s's axis.
func (s xyScale) usable(v float64) bool { return finite(v) && (!s.log || v > 0) }

// newXYScale spans vals (and zero on a linear axis) with a little margin.
func newXYScale(vals []float64, log bool, p0, p1 float64, fromZero bool) xyScale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if finite(v) && (!log || v > 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	s := xyScale{log: log, p0: p0, p1: p1}
	switch {
	case math.IsInf(lo, 1) && log:
		s.lo, s.hi = 1, 10
	case math.IsInf(lo, 1):
		s.lo, s.hi = 0, 1
	case log:
		s.lo, s.hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if s.hi <= s.lo {
			s.hi = s.lo * 10
		}
	default:
		if fromZero {
			lo = math.Min(lo, 0)
			hi = math.Max(hi, 0)
		}
		if hi == lo {
			hi = lo + math.Max(1, math.Abs(lo))
		}
		step := niceStep((hi - lo) / 5)
		s.lo, s.hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
		if hi > s.hi-0.04*(s.hi-s.lo) { // room for the top point and its label
			s.hi += step
		}
	}
	return s
}

// niceStep rounds a raw tick step up to 1, 2 or 5 × 10^k.
func niceStep(raw float64) float64 {
	if !(raw > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// ticks returns the tick values of s.
func (s xyScale) ticks() []float64 {
	var out []float64
	if s.log {
		for e := math.Floor(math.Log10(s.lo)); math.Pow(10, e) <= s.hi*1.0000001; e++ {
			out = append(out, math.Pow(10, e))
		}
		if len(out) <= 2 { // a narrow log axis: add 2× and 5×
			var more []float64
			for _, v := range out {
				for _, m := range []float64{1, 2, 5} {
					if x := v * m; x >= s.lo && x <= s.hi*1.0000001 {
						more = append(more, x)
					}
				}
			}
			out = more
		}
		return out
	}
	step := niceStep((s.hi - s.lo) / 5)
	for v := s.lo; v <= s.hi+step/1e6; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func tickText(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6:
		return trimFloat(v/1e6, 1) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3, 1) + "k"
	case a >= 10:
		return trimFloat(v, 0)
	case a >= 1:
		return trimFloat(v, 1)
	}
	return trimFloat(v, 3)
}

func trimFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// WriteXYChartSVG writes c as one self-contained <svg> element.
func WriteXYChartSVG(w io.Writer, c XYChart) error {
	if err := checkXYChart(c); err != nil {
		return err
	}
	sx, sy := xyScales(c)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="xychart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, xyW, xyH, xyW, xyH, template.HTMLEscapeString(c.Title))
	b.WriteString(`<style>text{font:11px system-ui,sans-serif;fill:#4b5563}.grid{stroke:#eef0f3}.axis{stroke:#9ca3af}.lbl{font-size:12px;fill:#1d2330}</style>`)
	writeXYAxes(&b, c, sx, sy)
	writeXYRules(&b, c, sx, sy)
	for i, s := range c.Series {
		writeXYSeries(&b, i, s, sx, sy)
	}
	b.WriteString(`</svg>`)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write svg: %w", err)
	}
	return nil
}

// checkXYChart checks that every series has one y, and one label if any,
// per x.
func checkXYChart(c XYChart) error {
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("report: chart %q: series %d (%q) has %d x and %d y values", c.Title, i, s.Label, len(s.X), len(s.Y))
		}
		if s.Labels != nil && len(s.Labels) != len(s.X) {
			return fmt.Errorf("report: chart %q: series %d (%q) has %d labels for %d points", c.Title, i, s.Label, len(s.Labels), len(s.X))
		}
	}
	return nil
}

// xyScales are the chart's x and y axes, spanning its points and rules
// (the x axis its categories' positions when it has them).
func xyScales(c XYChart) (sx, sy xyScale) {
	var xs, ys []float64
	for _, s := range c.Series {
		xs = append(xs, s.X...)
		ys = append(ys, s.Y...)
	}
	for _, r := range c.VRules {
		xs = append(xs, r.Value)
	}
	for _, r := range c.HRules {
		ys = append(ys, r.Value)
	}
	sx = newXYScale(xs, c.LogX, xyLeft, xyW-xyRight, false)
	if n := len(c.XCategories); n > 0 { // positions 1..n with half a step of room each side
		sx.lo, sx.hi = 0.5, float64(n)+0.5
	}
	sy = newXYScale(ys, c.LogY, xyH-xyBottom, xyTop, true)
	return sx, sy
}

// xyNum formats a pixel position for the SVG, to a tenth of a unit.
func xyNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// writeXYAxes writes the grid, the ticks with their values (or the x
// categories' names), the two axes and their labels.
func writeXYAxes(b *strings.Builder, c XYChart, sx, sy xyScale) {
	esc, f := template.HTMLEscapeString, xyNum
	xticks, xtext := sx.ticks(), tickText
	if c.XCategories != nil {
		xticks, xtext = nil, func(v float64) string { return c.XCategories[int(v)-1] }
		for i := range c.XCategories {
			xticks = append(xticks, float64(i+1))
		}
	}
	for _, v := range xticks {
		x := sx.pos(v)
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%d"/>`, f(x), xyTop, f(x), xyH-xyBottom)
		fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`, f(x), xyH-xyBottom+14, esc(xtext(v)))
	}
	for _, v := range sy.ticks() {
		y := sy.pos(v)
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, xyLeft, f(y), xyW-xyRight, f(y))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, xyLeft-5, f(y+4), tickText(v))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, xyLeft, xyH-xyBottom, xyW-xyRight, xyH-xyBottom)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, xyLeft, xyTop, xyLeft, xyH-xyBottom)
	fmt.Fprintf(b, `<text class="lbl" x="%d" y="%d" text-anchor="middle">%s</text>`, (xyLeft+xyW-xyRight)/2, xyH-8, esc(c.XLabel))
	fmt.Fprintf(b, `<text class="lbl" transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`, (xyTop+xyH-xyBottom)/2, esc(c.YLabel))
}

// writeXYRules writes the horizontal and vertical rules with their labels,
// leaving out those off their axis.
func writeXYRules(b *strings.Builder, c XYChart, sx, sy xyScale) {
	esc, f := template.HTMLEscapeString, xyNum
	for _, r := range c.HRules {
		if !sy.usable(r.Value) {
			continue
		}
		y := sy.pos(r.Value)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#444" stroke-dasharray="4 4"/>`, xyLeft, f(y), xyW-xyRight, f(y))
		fmt.Fprintf(b, `<text x="%d" y="%s">%s</text>`, xyLeft+4, f(y-4), esc(r.Label))
	}
	for i, r := range c.VRules {
		if !sx.usable(r.Value) {
			continue
		}
		x := sx.pos(r.Value)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#7b3fb3" stroke-width="1.5" stroke-dasharray="6 3"/>`, f(x), xyTop, f(x), xyH-xyBottom)
		anchor, dx := "start", 3.0
		if x > xyLeft+0.7*(xyW-xyLeft-xyRight) {
			anchor, dx = "end", -3
		}
		fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="%s" fill="#7b3fb3">%s</text>`, f(x+dx), xyTop+12+14*i, anchor, esc(r.Label))
	}
}

// writeXYSeries writes series i: its line, broken where a point cannot be
// drawn, its points and their labels, and its entry in the legend.
func writeXYSeries(b *strings.Builder, i int, s XYSeries, sx, sy xyScale) {
	esc, f := template.HTMLEscapeString, xyNum
	color := xyColors[i%len(xyColors)]
	dash := ""
	if s.Dash {
		dash = ` stroke-dasharray="5 4"`
	}
	var pts []string
	flush := func() {
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`, color, dash, strings.Join(pts, " "))
		}
		pts = pts[:0]
	}
	for j := range s.X {
		if !sx.usable(s.X[j]) || !sy.usable(s.Y[j]) {
			flush()
			continue
		}
		x, y := sx.pos(s.X[j]), sy.pos(s.Y[j])
		pts = append(pts, f(x)+","+f(y))
		if !s.Dash {
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.8" fill="%s"/>`, f(x), f(y), color)
		}
		if s.Labels != nil && s.Labels[j] != "" {
			fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s">%s</text>`, f(x+4), f(y-5), color, esc(s.Labels[j]))
		}
	}
	flush()
	// Legend, left to right along the top.
	lx := xyLeft + 4 + 130*i
	fmt.Fprintf(b, `<line x1="%d" y1="14" x2="%d" y2="14" stroke="%s" stroke-width="2"%s/><text x="%d" y="18">%s</text>`, lx, lx+16, color, dash, lx+20, esc(s.Label))
}
