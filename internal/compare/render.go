package compare

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/report"
)

// textGrid is a table of text cells: the heads, then rows of one text
// per head. Comparisons are formatted here (units, bounds, "not tested")
// and rendered by report's writers.
func textGrid(title string, heads []string, rows [][]string) report.Grid {
	g := report.Grid{Title: title}
	for _, h := range heads {
		g.Columns = append(g.Columns, report.Column{Key: h, Head: h, Kind: report.KindText})
	}
	for _, r := range rows {
		var cells []report.Cell
		for _, s := range r {
			cells = append(cells, report.TextCell(s))
		}
		g.Rows = append(g.Rows, cells)
	}
	return g
}

// Tables returns the comparison's tables for people: the settings that
// differ, then one table per result row. Metrics no folder measured are
// left out of them (Omitted names them; compare.json keeps them).
func (c *Comparison) Tables() (vars report.Grid, rows []report.Grid, omitted []string) {
	varHeads := []string{"setting", "kind"}
	for _, f := range c.Folders {
		varHeads = append(varHeads, f.Label)
	}
	var varRows [][]string
	for _, v := range c.Variables {
		kind := v.Category
		switch {
		case v.Coverage:
			kind += " (coverage: rows only one side ran are not tested)"
		case v.Observation:
			kind += " (observation: changes what is measured, not the target)"
		}
		varRows = append(varRows, append([]string{v.Name, kind}, v.Values...))
	}
	vars = textGrid("Settings that differ", varHeads, varRows)
	heads := []string{"metric", c.Folders[0].Label}
	for _, f := range c.Folders[1:] {
		heads = append(heads, f.Label, "Δ "+f.Label+"−"+c.Folders[0].Label, f.Label+"/"+c.Folders[0].Label)
		if c.Repeats {
			heads = append(heads, "confidence "+f.Label)
		}
	}
	seen := map[string]bool{}
	for _, g := range c.Groups {
		var lines [][]string
		for _, m := range g.Metrics {
			any := false
			for _, s := range m.Sides {
				any = any || !s.NotTested
			}
			if !any {
				if !seen[m.Key] {
					seen[m.Key] = true
					omitted = append(omitted, m.Key)
				}
				continue
			}
			line := []string{m.Head, sideText(m.Kind, m.Sides[0])}
			for _, s := range m.Sides[1:] {
				line = append(line, sideText(m.Kind, s), deltaText(m.Kind, s), ratioText(s))
				if c.Repeats {
					line = append(line, s.Confidence)
				}
			}
			lines = append(lines, line)
		}
		rows = append(rows, textGrid(g.Key, heads, lines))
	}
	return vars, rows, omitted
}

// sideText formats one folder's value: the number, "> x" for a lower
// bound, text, or "not tested".
func sideText(kind string, s Side) string {
	if s.NotTested {
		return "not tested"
	}
	t := cellText(kind, s.Cell, false)
	if len(s.Runs) > 0 && kind != "text" {
		var rs []string
		for i, r := range s.Runs {
			if i < len(s.RunsAbove) && s.RunsAbove[i] {
				rs = append(rs, "> "+fmtKind(kind, r))
				continue
			}
			rs = append(rs, fmtKind(kind, r))
		}
		of := "runs "
		if s.OfRuns {
			t, of = "median "+t, "of "
		}
		t += " (" + of + strings.Join(rs, ", ") + ")"
	}
	return t
}

func cellText(kind string, c Cell, delta bool) string {
	f := func(v float64) string {
		if delta {
			return fmtDelta(kind, v)
		}
		return fmtKind(kind, v)
	}
	switch {
	case c.Value != nil:
		return f(*c.Value)
	case c.Lower != nil:
		return "> " + f(*c.Lower)
	case c.Upper != nil:
		return "≤ " + f(*c.Upper)
	case c.Text != "":
		return c.Text
	}
	return "n/a"
}

func deltaText(kind string, s Side) string {
	switch {
	case s.Same != nil && *s.Same:
		return "same"
	case s.Same != nil:
		return "differs"
	case s.Delta == nil:
		return "–"
	}
	d := *s.Delta
	if d.Upper != nil { // from a lower bound on the reference: B − A < x
		return "< " + fmtDelta(kind, *d.Upper)
	}
	return cellText(kind, d, true)
}

func ratioText(s Side) string {
	if s.Ratio == nil {
		return "–"
	}
	r := *s.Ratio
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "×" }
	switch {
	case r.Value != nil:
		return f(*r.Value)
	case r.Lower != nil:
		return "> " + f(*r.Lower)
	case r.Upper != nil:
		return "< " + f(*r.Upper)
	}
	return "–"
}

// fmtKind formats a value in its column's unit.
func fmtKind(kind string, v float64) string {
	switch kind {
	case "ms":
		if math.Abs(v) >= 10 {
			return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	case "rate":
		return strconv.FormatFloat(v, 'f', 2, 64) + "/s"
	case "ratio":
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	case "seconds":
		if v == math.Trunc(v) || math.Abs(v) >= 100 {
			return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " s"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " s"
	case "count":
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fmtDelta formats a difference: signed, a fraction's in percentage
// points.
func fmtDelta(kind string, v float64) string {
	sign := "+"
	if v < 0 {
		sign, v = "−", -v
	}
	if kind == "ratio" {
		return sign + strconv.FormatFloat(100*v, 'f', 2, 64) + " pp"
	}
	return sign + fmtKind(kind, v)
}

// head is the comparison's opening: the folders, the statement.
func (c *Comparison) head() []string {
	var out []string
	for _, f := range c.Folders {
		role := ""
		if f.Label == "A" {
			role = " (reference)"
		}
		out = append(out, fmt.Sprintf("%s%s: %s", f.Label, role, f.Path))
	}
	return out
}

// WriteMarkdown writes the comparison as Markdown: the folders, the
// statement about the differing settings, their table, and one table per
// result row.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# surge compare: %d folders, %s\n\n", len(c.Folders), c.Kind)
	for _, h := range c.head() {
		fmt.Fprintf(bw, "- %s\n", h)
	}
	fmt.Fprintf(bw, "\n%s\n\n", c.Statement)
	vars, rows, omitted := c.Tables()
	sections := slices.Clone(c.Lead)
	if len(vars.Rows) > 0 {
		sections = append(sections, vars)
	}
	for _, t := range append(sections, rows...) {
		if err := report.WriteGridSection(bw, t); err != nil {
			return err
		}
	}
	notes := append([]string(nil), c.Notes...)
	if len(omitted) > 0 {
		notes = append(notes, "not tested in any folder (left out above, in compare.json): "+strings.Join(omitted, ", "))
	}
	notes = append(notes, "metrics by the results table's heads (results.md's legend says what each is); compare.json names them by their results.json key")
	notes = append(notes, "Δ = folder − reference (percentage points for a %); ratio = folder / reference; \"not tested\": the folder did not measure it (never zero); > x: only a lower bound is known, and the Δ and ratio from it are bounds too.")
	fmt.Fprint(bw, "## Notes\n\n")
	for _, n := range notes {
		fmt.Fprintf(bw, "- %s\n", n)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("compare: write markdown: %w", err)
	}
	return nil
}

// WriteJSON writes the comparison as indented JSON (compare.json): the
// folders, the differing settings, the statement, and every metric of
// every row with each folder's value (null and not_tested when it was
// not measured), delta, ratio and confidence.
func (c *Comparison) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("compare: encode json: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("compare: write json: %w", err)
	}
	return nil
}

// HTMLReport is the comparison as report.html's kind of page: the tables
// of Tables as level tables, and charts (vary adds its own).
func (c *Comparison) HTMLReport(charts []report.XYChart) report.GridReport {
	title := fmt.Sprintf("surge compare: %d folders, %s", len(c.Folders), c.Kind)
	var meta []report.KV
	for _, f := range c.Folders {
		meta = append(meta, report.KV{Key: f.Label, Value: f.Path})
	}
	meta = append(meta, report.KV{Key: "settings", Value: c.Statement})
	vars, rows, omitted := c.Tables()
	levels := slices.Clone(c.Lead)
	if len(vars.Rows) > 0 {
		levels = append(levels, vars)
	}
	levels = append(levels, rows...)
	if len(levels) > 0 {
		last := &levels[len(levels)-1]
		last.Notes = append(last.Notes, c.Notes...)
		if len(omitted) > 0 {
			last.Notes = append(last.Notes, "not tested in any folder (in compare.json): "+strings.Join(omitted, ", "))
		}
	}
	return report.GridReport{HTMLReport: report.HTMLReport{Title: title, Meta: meta}, Levels: levels, Charts: charts}
}

// Files is what Write needs of a claimed folder (rundir.Dir).
type Files interface {
	WriteFile(name string, fn func(io.Writer) error) error
}

// Write writes compare.md, compare.json and compare.html into d.
func (c *Comparison) Write(d Files, charts []report.XYChart) error {
	if err := d.WriteFile("compare.md", c.WriteMarkdown); err != nil {
		return err
	}
	if err := d.WriteFile("compare.json", c.WriteJSON); err != nil {
		return err
	}
	return d.WriteFile("compare.html", func(w io.Writer) error { return report.WriteGridHTML(w, c.HTMLReport(charts)) })
}

// Glance is a short table of the comparison: one line per folder (named
// by names, or its label), and for every result row the metrics keys —
// the what-if's table of goodput and recovery per value.
func (c *Comparison) Glance(names []string, keys ...string) report.Grid {
	heads := []string{"folder"}
	var lines [][]string
	type col struct{ row, key, kind string }
	var cols []col
	for _, g := range c.Groups {
		for _, m := range g.Metrics {
			if !slices.Contains(keys, m.Key) {
				continue
			}
			cols = append(cols, col{g.Key, m.Key, m.Kind})
			head := m.Head
			if len(c.Groups) > 1 {
				head = g.Key + " " + head
			}
			heads = append(heads, head)
		}
	}
	for i, f := range c.Folders {
		name := f.Label
		if i < len(names) {
			name = names[i]
		}
		line := []string{name}
		for _, cl := range cols {
			s, _ := c.Value(cl.row, cl.key, i)
			line = append(line, sideText(cl.kind, s))
		}
		lines = append(lines, line)
	}
	return textGrid("At a glance", heads, lines)
}
