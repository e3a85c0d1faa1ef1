package report

// Level tables and XY charts: the reports of experiments that run the same
// load at several levels (capacity steps, sweep levels, soak windows). A
// LevelTable has the columns its caller chooses, one row per level; an
// XYChart plots values against a level (or against each other) as an
// inline SVG, so it needs no script and no network.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// LevelKind selects how a LevelTable column is formatted for people.
type LevelKind int

// The kinds of level-table columns.
const (
	LevelText    LevelKind = iota // free text (a name, a verdict)
	LevelNumber                   // a plain number, two decimals
	LevelRPS                      // requests (or tokens) per second, two decimals
	LevelMs                       // milliseconds: "812", "7.5"
	LevelRatio                    // a fraction in [0, 1], shown as percent
	LevelCount                    // an integer count
	LevelSeconds                  // seconds: "42s", "7.5s"
)

// LevelColumn describes one column of a LevelTable.
type LevelColumn struct {
	Key  string    // CSV header and JSON field name, e.g. "ttft_p95_ms"
	Head string    // Markdown and HTML header, e.g. "TTFT p95"; "" for a column in CSV and JSON only
	Kind LevelKind // how values are formatted
	Desc string    // legend line; empty for self-explanatory columns
}

// LevelCell is one cell: Text for LevelText columns, Num for the others.
type LevelCell struct {
	Text string
	Num  Opt
}

// TextCell returns a text cell.
func TextCell(s string) LevelCell { return LevelCell{Text: s} }

// NumCell returns a numeric cell; an unavailable or censored Opt prints as
// n/a or "> x" like in the results table.
func NumCell(o Opt) LevelCell { return LevelCell{Num: o} }

// LevelTable is a table with one row per load level and the columns its
// caller chooses, with the context needed to read it.
type LevelTable struct {
	Title    string
	Meta     []KV
	Columns  []LevelColumn
	Rows     [][]LevelCell // each row has one cell per column, in column order
	Verdicts []Verdict
	Notes    []string
}

// SLOLevelColumns are the machine-readable verdicts of each SLO clause
// over a level (slo_ttft_p95, slo_e2e_p99, slo_goodput_ratio: PASS, FAIL
// or N/A), in CSV and JSON only; fill them with SLOLevelCells.
var SLOLevelColumns = func() []LevelColumn {
	var out []LevelColumn
	for _, c := range SLOClauses {
		out = append(out, LevelColumn{Key: "slo_" + c, Kind: LevelText})
	}
	return out
}()

// SLOLevelCells are the cells of SLOLevelColumns for one level's verdicts
// by clause name (see Row.SLO).
func SLOLevelCells(slo map[string]VerdictStatus) []LevelCell {
	var out []LevelCell
	for _, c := range SLOClauses {
		out = append(out, TextCell(slo[c].String()))
	}
	return out
}

// forPeople is t as Markdown and HTML show it: without its
// CSV-and-JSON-only columns (an empty Head), and with the unit in every
// millisecond column's head ("TTFT p95 ms") and a percent sign in every
// ratio's ("goodput %"); rates carry theirs in the head already
// ("goodput/s"), seconds in the cell ("42s").
func (t LevelTable) forPeople() LevelTable {
	keep := make([]bool, len(t.Columns))
	var cols []LevelColumn
	for j, c := range t.Columns {
		keep[j] = c.Head != ""
		if !keep[j] {
			continue
		}
		switch {
		case c.Kind == LevelMs && !strings.HasSuffix(c.Head, "ms") && !strings.HasSuffix(c.Head, "(ms)"):
			c.Head += " ms"
		case c.Kind == LevelRatio && !strings.Contains(c.Head, "%"):
			c.Head += " %"
		}
		cols = append(cols, c)
	}
	rows := make([][]LevelCell, len(t.Rows))
	for i, r := range t.Rows {
		for j, c := range r {
			if j < len(keep) && keep[j] {
				rows[i] = append(rows[i], c)
			}
		}
	}
	t.Columns, t.Rows = cols, rows
	return t
}

// validate reports a row whose width does not match the columns.
func (t *LevelTable) validate() error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("report: level table %q: no columns", t.Title)
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("report: level table %q: row %d has %d cells, want %d (one per column)", t.Title, i, len(r), len(t.Columns))
		}
	}
	return nil
}

// format returns the cell as people read it, its CSV form, its JSON value,
// and the reason when it is n/a or censored.
func (c LevelCell) format(kind LevelKind) (text, raw string, js any, reason string) {
	if kind == LevelText {
		if c.Text == "" {
			return NA, "", nil, ""
		}
		return c.Text, c.Text, c.Text, ""
	}
	o := c.Num
	valid, censored := o.state()
	switch {
	case valid:
		return levelFmt(kind, o.V), o.raw(), o.V, ""
	case censored:
		t := o.boundPrefix() + levelFmt(kind, o.V)
		if kind == LevelMs {
			t = fmtBoundMs(o.boundPrefix(), o.V)
		}
		return t, o.raw(), o, o.reason()
	}
	return NA, NA, o, orUnknown(o.reason())
}

func levelFmt(kind LevelKind, v float64) string {
	switch kind {
	case LevelRPS, LevelNumber:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case LevelMs:
		return fmtMs(v)
	case LevelRatio:
		return strconv.FormatFloat(100*v, 'f', 2, 64)
	case LevelCount:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case LevelSeconds:
		return fmtSeconds(v)
	}
	return rawFloat(v)
}

// cells formats every cell once: [row][column].
type levelView struct {
	text, raw [][]string
	js        [][]any
	reasons   []string // "row: column: reason", unique
}

func (t *LevelTable) view() levelView {
	var v levelView
	type reason struct{ row, col, why string }
	var all []reason
	count := map[[2]string]int{}
	seen := map[reason]bool{}
	for _, r := range t.Rows {
		var tx, rw []string
		var js []any
		for j, c := range r {
			col := t.Columns[j]
			a, b, x, why := c.format(col.Kind)
			tx, rw, js = append(tx, a), append(rw, b), append(js, x)
			if why != "" {
				label := col.Head
				if label == "" {
					label = col.Key
				}
				n := reason{rowLabel(t, r), label, why}
				if !seen[n] {
					seen[n] = true
					all = append(all, n)
					count[[2]string{label, why}]++
				}
			}
		}
		v.text, v.raw, v.js = append(v.text, tx), append(v.raw, rw), append(v.js, js)
	}
	// A reason every row shares is said once.
	once := map[[2]string]bool{}
	for _, n := range all {
		k := [2]string{n.col, n.why}
		if len(t.Rows) > 1 && count[k] == len(t.Rows) {
			if !once[k] {
				once[k] = true
				v.reasons = append(v.reasons, fmt.Sprintf("every row: %s: %s", n.col, n.why))
			}
			continue
		}
		v.reasons = append(v.reasons, fmt.Sprintf("%s: %s: %s", n.row, n.col, n.why))
	}
	return v
}

// rowLabel names a row by its first text cell.
func rowLabel(t *LevelTable, r []LevelCell) string {
	for j, c := range r {
		if t.Columns[j].Kind == LevelText && c.Text != "" {
			return c.Text
		}
	}
	return "row"
}

func numericKind(k LevelKind) bool { return k != LevelText }

// WriteLevelMarkdown writes t as one aligned Markdown table, with the
// metadata above it and the verdicts, notes (including the reason for every
// n/a and censored value) and legend below.
func WriteLevelMarkdown(w io.Writer, t LevelTable) error {
	if err := t.validate(); err != nil {
		return err
	}
	t = t.forPeople()
	bw := bufio.NewWriter(w)
	v := t.view()
	title := t.Title
	if title == "" {
		title = "surge results"
	}
	fmt.Fprintf(bw, "# %s\n\n", title)
	for _, kv := range t.Meta {
		fmt.Fprintf(bw, "- %s: %s\n", kv.Key, orNA(kv.Value))
	}
	if len(t.Meta) > 0 {
		fmt.Fprintln(bw)
	}
	if len(t.Rows) == 0 {
		fmt.Fprint(bw, "No rows: nothing was measured.\n\n")
	} else {
		width := make([]int, len(t.Columns))
		for j, c := range t.Columns {
			width[j] = max(3, utf8.RuneCountInString(c.Head))
			for i := range v.text {
				width[j] = max(width[j], utf8.RuneCountInString(mdEscape(v.text[i][j])))
			}
		}
		line := func(cell func(j int) string, align bool) {
			var b strings.Builder
			b.WriteString("|")
			for j := range t.Columns {
				b.WriteString(" ")
				b.WriteString(pad(cell(j), width[j], align && numericKind(t.Columns[j].Kind)))
				b.WriteString(" |")
			}
			fmt.Fprintln(bw, b.String())
		}
		line(func(j int) string { return t.Columns[j].Head }, true)
		line(func(j int) string {
			if numericKind(t.Columns[j].Kind) {
				return strings.Repeat("-", width[j]-1) + ":"
			}
			return ":" + strings.Repeat("-", width[j]-1)
		}, false)
		for i := range v.text {
			line(func(j int) string { return mdEscape(v.text[i][j]) }, true)
		}
		fmt.Fprintln(bw)
	}
	if len(t.Verdicts) > 0 {
		fmt.Fprint(bw, "## Verdicts\n\n")
		for _, vd := range t.Verdicts {
			line := fmt.Sprintf("- %s %s: %s", vd.Status, vd.Scope, vd.Check)
			if vd.Detail != "" {
				line += " — " + vd.Detail
			}
			fmt.Fprintln(bw, line)
		}
		fmt.Fprintln(bw)
	}
	if len(t.Notes)+len(v.reasons) > 0 {
		fmt.Fprint(bw, "## Notes\n\n")
		for _, n := range t.Notes {
			fmt.Fprintf(bw, "- %s\n", n)
		}
		for _, n := range v.reasons {
			fmt.Fprintf(bw, "- %s\n", n)
		}
		fmt.Fprintln(bw)
	}
	legend := false
	for _, c := range t.Columns {
		if c.Desc == "" {
			continue
		}
		if !legend {
			fmt.Fprint(bw, "## Legend\n\n")
			legend = true
		}
		fmt.Fprintf(bw, "- %s: %s\n", c.Head, c.Desc)
	}
	if legend {
		fmt.Fprintln(bw, "- n/a: unavailable (reason in the notes); > x: only a lower bound is known")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// WriteLevelText writes t for a terminal the way surge's other terminal
// tables look: the title as a plain line, the metadata indented below it,
// the columns aligned (numbers to the right) without Markdown's pipes,
// and the reason for every n/a or censored value; no legend (results.md
// has it).
func WriteLevelText(w io.Writer, t LevelTable) error {
	if err := t.validate(); err != nil {
		return err
	}
	t = t.forPeople()
	v := t.view()
	bw := bufio.NewWriter(w)
	if t.Title != "" {
		fmt.Fprintf(bw, "%s\n", t.Title)
	}
	for _, kv := range t.Meta {
		fmt.Fprintf(bw, "  %s: %s\n", kv.Key, orNA(kv.Value))
	}
	width := make([]int, len(t.Columns))
	for j, c := range t.Columns {
		width[j] = utf8.RuneCountInString(c.Head)
		for i := range v.text {
			width[j] = max(width[j], utf8.RuneCountInString(v.text[i][j]))
		}
	}
	line := func(cell func(j int) string) {
		var b strings.Builder
		for j := range t.Columns {
			b.WriteString("  ")
			b.WriteString(pad(cell(j), width[j], numericKind(t.Columns[j].Kind)))
		}
		fmt.Fprintln(bw, strings.TrimRight(b.String(), " "))
	}
	if len(t.Rows) > 0 {
		line(func(j int) string { return t.Columns[j].Head })
		for i := range v.text {
			line(func(j int) string { return v.text[i][j] })
		}
	}
	for _, n := range v.reasons {
		fmt.Fprintf(bw, "  n/a: %s\n", n)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write text: %w", err)
	}
	return nil
}

// WriteLevelCSV writes t as CSV: a header of column keys, then one line per
// row with raw values (rates per second, latencies in ms, ratios as
// fractions; "n/a" when unavailable, ">x" when only a lower bound is known).
func WriteLevelCSV(w io.Writer, t LevelTable) error {
	if err := t.validate(); err != nil {
		return err
	}
	v := t.view()
	cw := csv.NewWriter(w)
	head := make([]string, len(t.Columns))
	for j, c := range t.Columns {
		head[j] = c.Key
	}
	cw.Write(head)
	for _, r := range v.raw {
		cw.Write(r)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("report: write csv: %w", err)
	}
	return nil
}

// WriteLevelJSON writes t as one JSON object: title, meta, columns (key,
// head, kind, description), rows (objects keyed by column key; numbers as
// plain values, unavailable or censored ones as {"value": null, …} like the
// results table), verdicts and notes.
func WriteLevelJSON(w io.Writer, t LevelTable) error {
	if err := t.validate(); err != nil {
		return err
	}
	v := t.view()
	type colJSON struct {
		Key  string `json:"key"`
		Head string `json:"head"`
		Kind string `json:"kind"`
		Desc string `json:"description,omitempty"`
	}
	kinds := [...]string{"text", "number", "rate", "ms", "ratio", "count", "seconds"}
	out := struct {
		Title    string            `json:"title"`
		Meta     []KV              `json:"meta"`
		Columns  []colJSON         `json:"columns"`
		Rows     []json.RawMessage `json:"rows"`
		Verdicts []Verdict         `json:"verdicts"`
		Notes    []string          `json:"notes"`
	}{Title: t.Title, Meta: nonNil(t.Meta), Verdicts: nonNil(t.Verdicts), Notes: nonNil(append(append([]string(nil), t.Notes...), v.reasons...))}
	for _, c := range t.Columns {
		k := "text"
		if int(c.Kind) >= 0 && int(c.Kind) < len(kinds) {
			k = kinds[c.Kind]
		}
		out.Columns = append(out.Columns, colJSON{Key: c.Key, Head: c.Head, Kind: k, Desc: c.Desc})
	}
	out.Rows = []json.RawMessage{}
	for _, r := range v.js {
		// An object with the columns in their order.
		var b bytes.Buffer
		b.WriteByte('{')
		for j, x := range r {
			if j > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(t.Columns[j].Key)
			val, err := json.Marshal(x)
			if err != nil {
				return fmt.Errorf("report: encode %s: %w", t.Columns[j].Key, err)
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(val)
		}
		b.WriteByte('}')
		out.Rows = append(out.Rows, b.Bytes())
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode json: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

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
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("report: chart %q: series %d (%q) has %d x and %d y values", c.Title, i, s.Label, len(s.X), len(s.Y))
		}
		if s.Labels != nil && len(s.Labels) != len(s.X) {
			return fmt.Errorf("report: chart %q: series %d (%q) has %d labels for %d points", c.Title, i, s.Label, len(s.Labels), len(s.X))
		}
	}
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
	sx := newXYScale(xs, c.LogX, xyLeft, xyW-xyRight, false)
	if n := len(c.XCategories); n > 0 { // positions 1..n with half a step of room each side
		sx.lo, sx.hi = 0.5, float64(n)+0.5
	}
	sy := newXYScale(ys, c.LogY, xyH-xyBottom, xyTop, true)

	var b strings.Builder
	esc := template.HTMLEscapeString
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="xychart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, xyW, xyH, xyW, xyH, esc(c.Title))
	b.WriteString(`<style>text{font:11px system-ui,sans-serif;fill:#4b5563}.grid{stroke:#eef0f3}.axis{stroke:#9ca3af}.lbl{font-size:12px;fill:#1d2330}</style>`)
	// Grid and ticks.
	xticks, xtext := sx.ticks(), tickText
	if c.XCategories != nil {
		xticks, xtext = nil, func(v float64) string { return c.XCategories[int(v)-1] }
		for i := range c.XCategories {
			xticks = append(xticks, float64(i+1))
		}
	}
	for _, v := range xticks {
		x := sx.pos(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%d"/>`, f(x), xyTop, f(x), xyH-xyBottom)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`, f(x), xyH-xyBottom+14, esc(xtext(v)))
	}
	for _, v := range sy.ticks() {
		y := sy.pos(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, xyLeft, f(y), xyW-xyRight, f(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, xyLeft-5, f(y+4), tickText(v))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, xyLeft, xyH-xyBottom, xyW-xyRight, xyH-xyBottom)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, xyLeft, xyTop, xyLeft, xyH-xyBottom)
	fmt.Fprintf(&b, `<text class="lbl" x="%d" y="%d" text-anchor="middle">%s</text>`, (xyLeft+xyW-xyRight)/2, xyH-8, esc(c.XLabel))
	fmt.Fprintf(&b, `<text class="lbl" transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`, (xyTop+xyH-xyBottom)/2, esc(c.YLabel))
	// Rules.
	for _, r := range c.HRules {
		if !sy.usable(r.Value) {
			continue
		}
		y := sy.pos(r.Value)
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#444" stroke-dasharray="4 4"/>`, xyLeft, f(y), xyW-xyRight, f(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s">%s</text>`, xyLeft+4, f(y-4), esc(r.Label))
	}
	for i, r := range c.VRules {
		if !sx.usable(r.Value) {
			continue
		}
		x := sx.pos(r.Value)
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#7b3fb3" stroke-width="1.5" stroke-dasharray="6 3"/>`, f(x), xyTop, f(x), xyH-xyBottom)
		anchor, dx := "start", 3.0
		if x > xyLeft+0.7*(xyW-xyLeft-xyRight) {
			anchor, dx = "end", -3
		}
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="%s" fill="#7b3fb3">%s</text>`, f(x+dx), xyTop+12+14*i, anchor, esc(r.Label))
	}
	// Series.
	for i, s := range c.Series {
		color := xyColors[i%len(xyColors)]
		dash := ""
		if s.Dash {
			dash = ` stroke-dasharray="5 4"`
		}
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`, color, dash, strings.Join(pts, " "))
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
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.8" fill="%s"/>`, f(x), f(y), color)
			}
			if s.Labels != nil && s.Labels[j] != "" {
				fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s">%s</text>`, f(x+4), f(y-5), color, esc(s.Labels[j]))
			}
		}
		flush()
		// Legend, left to right along the top.
		lx := xyLeft + 4 + 130*i
		fmt.Fprintf(&b, `<line x1="%d" y1="14" x2="%d" y2="14" stroke="%s" stroke-width="2"%s/><text x="%d" y="18">%s</text>`, lx, lx+16, color, dash, lx+20, esc(s.Label))
	}
	b.WriteString(`</svg>`)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write svg: %w", err)
	}
	return nil
}

// LevelReport is report.html for an experiment that runs several load
// levels: its level tables and XY charts first, then everything an
// HTMLReport shows (results tables and the time-series charts of each run).
type LevelReport struct {
	HTMLReport
	Levels []LevelTable
	Charts []XYChart
}

var levelSectionTmpl = template.Must(template.New("levels").Parse(`
<section class="levels">
{{- range .Tables}}
<h2>{{.Title}}</h2>
{{- if .Meta}}
<dl class="meta small">
{{- range .Meta}}
<div><dt>{{.Key}}</dt><dd>{{if .Value}}{{.Value}}{{else}}<span class="na">n/a</span>{{end}}</dd></div>
{{- end}}
</dl>
{{- end}}
<div class="table-wrap">
<table class="results-table level-table">
<thead><tr>{{range .Heads}}<th{{if .Title}} title="{{.Title}}"{{end}}{{if .Numeric}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
</div>
{{- if .Verdicts}}
<ul class="verdicts">
{{- range .Verdicts}}
<li><span class="badge {{.Status.String}}">{{.Status.String}}</span> <b>{{.Scope}}</b> {{.Check}}{{if .Detail}} <span class="detail">— {{.Detail}}</span>{{end}}</li>
{{- end}}
</ul>
{{- end}}
{{- if .Notes}}
<ul class="notes">
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
{{- end}}
{{- if .Charts}}
<div class="charts xycharts">
{{- range .Charts}}
<figure class="chart"><figcaption>{{.Title}}{{if .Note}} <span class="chart-note">({{.Note}})</span>{{end}}</figcaption>{{.SVG}}</figure>
{{- end}}
</div>
{{- end}}
</section>
`))

type levelHTMLTable struct {
	Title    string
	Meta     []KV
	Heads    []htmlHead
	Rows     [][]htmlCell
	Verdicts []Verdict
	Notes    []string
}

type levelHTMLChart struct {
	Title, Note string
	SVG         template.HTML
}

// WriteLevelHTML writes r as one self-contained page: the level tables and
// XY charts (inline SVG), followed by what WriteHTML shows for
// r.HTMLReport. It fails before writing anything when a table or chart is
// malformed.
func WriteLevelHTML(w io.Writer, r LevelReport) error {
	var page bytes.Buffer
	if err := WriteHTML(&page, r.HTMLReport); err != nil {
		return err
	}
	data := struct {
		Tables []levelHTMLTable
		Charts []levelHTMLChart
	}{}
	var err error
	if data.Tables, err = levelHTMLTables(r.Levels); err != nil {
		return err
	}
	for _, c := range r.Charts {
		var svg strings.Builder
		if err := WriteXYChartSVG(&svg, c); err != nil {
			return err
		}
		// The SVG is built here from escaped labels and numbers only.
		data.Charts = append(data.Charts, levelHTMLChart{Title: c.Title, Note: c.Note, SVG: template.HTML(svg.String())})
	}
	var section bytes.Buffer
	if err := levelSectionTmpl.Execute(&section, data); err != nil {
		return fmt.Errorf("report: render level section: %w", err)
	}
	html := page.Bytes()
	i := bytes.Index(html, []byte("<main>"))
	if i < 0 {
		return fmt.Errorf("report: level report: no <main> element in the page")
	}
	i += len("<main>")
	var out bytes.Buffer
	out.Grow(len(html) + section.Len())
	out.Write(html[:i])
	out.Write(section.Bytes())
	out.Write(html[i:])
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write html: %w", err)
	}
	return nil
}

// levelHTMLTables prepares level tables for the template.
func levelHTMLTables(ts []LevelTable) ([]levelHTMLTable, error) {
	var out []levelHTMLTable
	for _, t := range ts {
		if err := t.validate(); err != nil {
			return nil, err
		}
		t = t.forPeople()
		v := t.view()
		ht := levelHTMLTable{Title: t.Title, Meta: t.Meta, Verdicts: t.Verdicts, Notes: append(append([]string(nil), t.Notes...), v.reasons...)}
		for _, c := range t.Columns {
			ht.Heads = append(ht.Heads, htmlHead{Text: c.Head, Title: c.Desc, Numeric: numericKind(c.Kind)})
		}
		for i, row := range t.Rows {
			var cells []htmlCell
			for j, c := range row {
				_, _, _, why := c.format(t.Columns[j].Kind)
				hc := htmlCell{Text: v.text[i][j], Title: why}
				valid, censored := c.Num.state()
				switch {
				case t.Columns[j].Kind == LevelText:
				case censored:
					hc.Class = "bound"
				case !valid:
					hc.Class = "na"
				}
				if numericKind(t.Columns[j].Kind) {
					hc.Class = strings.TrimSpace(hc.Class + " num")
				}
				cells = append(cells, hc)
			}
			ht.Rows = append(ht.Rows, cells)
		}
		out = append(out, ht)
	}
	return out, nil
}
