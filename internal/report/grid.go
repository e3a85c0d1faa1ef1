package report

// A Grid is a table with the columns its caller chooses and one row per
// thing compared (a run's phase or multiplier, a capacity step, a sweep
// level, a soak window, a folder of surge compare, a check, a cold-start
// cycle), with the context needed to read it; WriteGridMarkdown,
// WriteGridText, WriteGridCSV, WriteGridJSON and WriteGridHTML render it.
// Every table surge writes is a Grid: the results table of a run (Table)
// builds one (Table.grid).

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/surge-bench/surge/internal/record"
)

// Kind selects how a Grid column is formatted for people.
type Kind int

// The kinds of grid columns.
const (
	KindText     Kind = iota // free text (a name, a verdict)
	KindNumber               // a plain number, two decimals
	KindRPS                  // requests (or tokens) per second, two decimals
	KindMs                   // milliseconds: "812", "7.5"
	KindRatio                // a fraction in [0, 1], shown as percent
	KindCount                // an integer count
	KindSeconds              // seconds: "42s", "7.5s"
	KindDuration             // seconds to the millisecond below 10 s: "0.058s", "1.652s", "95.2s"
	KindMult                 // a burst multiplier: "2×", "0.5×"
)

// kindNames are the kinds as WriteGridJSON names them.
var kindNames = [...]string{"text", "number", "rate", "ms", "ratio", "count", "seconds", "duration", "multiplier"}

// Column describes one column of a Grid.
type Column struct {
	Key  string // CSV header and JSON field name, e.g. "ttft_p95_ms"
	Head string // Markdown and HTML header, e.g. "TTFT p95"; "" for a column in CSV and JSON only
	Kind Kind   // how values are formatted
	Desc string // legend line; empty for self-explanatory columns
	// Group names the sub-table the column is shown in, e.g. "Latency
	// (ms)"; "" for an identity column, shown in every sub-table. A grid
	// whose columns have no group is one table.
	Group string
}

// Cell is one cell: Text for KindText columns, Num for the others.
type Cell struct {
	Text string
	Num  Opt
	// fixed is a cell its maker formatted itself (the results table's,
	// whose CSV and JSON forms predate the grid): used as is.
	fixed *formatted
}

// TextCell returns a text cell.
func TextCell(s string) Cell { return Cell{Text: s} }

// NumCell returns a numeric cell; an unavailable or censored Opt prints as
// n/a or "> x" like in the results table.
func NumCell(o Opt) Cell { return Cell{Num: o} }

// ShownCell is a numeric cell its caller has already written for people
// (a latency in its own unit, "136ms" or "3.83s", from the analysis'
// formatter); CSV and JSON carry o.
func ShownCell(text string, o Opt) Cell {
	f := NumCell(o).format(KindNumber)
	f.text = text
	return fixedCell(f)
}

// formatted is one cell in every form: for people, for CSV and for JSON,
// with the reason when it is n/a or censored.
type formatted struct {
	text   string // for people (Markdown, HTML, terminal)
	raw    string // for CSV
	json   any    // for JSON
	reason string // why n/a or censored; empty otherwise
	na     bool   // unavailable
	bound  bool   // censored or not recovered: a lower bound
}

func fixedCell(f formatted) Cell { return Cell{fixed: &f} }

// Grid is a table with one row per thing compared and the columns its
// caller chooses, with the context needed to read it. Spreads and
// Diagnoses are the results table's (Table.grid): repeated runs' spread
// lines and how each run held or failed.
type Grid struct {
	Title     string
	Meta      []KV
	Columns   []Column
	Rows      [][]Cell // each row has one cell per column, in column order
	Verdicts  []Verdict
	Notes     []string
	Spreads   []Spread
	Diagnoses []Diagnosis
	// LegendIn names the file whose legend explains the columns; the
	// terminal text points to it.
	LegendIn string
}

// SLOColumns are the machine-readable verdicts of each SLO clause
// over a level (slo_ttft_p95, slo_e2e_p99, slo_goodput_ratio: PASS, FAIL
// or N/A), in CSV and JSON only; fill them with SLOCells.
var SLOColumns = func() []Column {
	var out []Column
	for _, c := range SLOClauses {
		out = append(out, Column{Key: "slo_" + c, Kind: KindText})
	}
	return out
}()

// SLOCells are the cells of SLOColumns for one level's verdicts
// by clause name (see Row.SLO).
func SLOCells(slo map[string]VerdictStatus) []Cell {
	var out []Cell
	for _, c := range SLOClauses {
		out = append(out, TextCell(slo[c].String()))
	}
	return out
}

// grouped reports whether t is shown as one sub-table per column group.
func (t *Grid) grouped() bool {
	return slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Group != "" })
}

// forPeople is t as Markdown, HTML and the terminal show it: without its
// CSV-and-JSON-only columns (an empty Head), and, in a table without
// groups (whose heads name the units), with the unit in every
// millisecond column's head ("TTFT p95 ms") and a percent sign in every
// ratio's ("goodput %"); rates carry theirs in the head already
// ("goodput/s"), seconds in the cell ("42s").
func (t Grid) forPeople() Grid {
	grouped := t.grouped()
	keep := make([]bool, len(t.Columns))
	var cols []Column
	for j, c := range t.Columns {
		keep[j] = c.Head != ""
		if !keep[j] {
			continue
		}
		switch {
		case grouped:
		case c.Kind == KindMs && !strings.HasSuffix(c.Head, "ms") && !strings.HasSuffix(c.Head, "(ms)"):
			c.Head += " ms"
		case c.Kind == KindRatio && !strings.Contains(c.Head, "%"):
			c.Head += " %"
		}
		cols = append(cols, c)
	}
	rows := make([][]Cell, len(t.Rows))
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
func (t *Grid) validate() error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("report: table %q: no columns", t.Title)
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("report: table %q: row %d has %d cells, want %d (one per column)", t.Title, i, len(r), len(t.Columns))
		}
	}
	return nil
}

// format returns the cell in every form.
func (c Cell) format(kind Kind) formatted {
	if c.fixed != nil {
		return *c.fixed
	}
	if kind == KindText {
		if c.Text == "" {
			return formatted{text: NA}
		}
		return formatted{text: c.Text, raw: c.Text, json: c.Text}
	}
	o := c.Num
	valid, censored := o.state()
	switch {
	case valid:
		return formatted{text: fmtKind(kind, o.V), raw: o.raw(), json: o.V}
	case censored:
		t := o.boundPrefix() + fmtKind(kind, o.V)
		if kind == KindMs {
			t = fmtBoundMs(o.boundPrefix(), o.V)
		}
		return formatted{text: t, raw: o.raw(), json: o, reason: o.reason(), bound: true}
	}
	return formatted{text: NA, raw: NA, json: o, reason: orUnknown(o.reason()), na: true}
}

// fmtKind formats an available value for people.
func fmtKind(kind Kind, v float64) string {
	switch kind {
	case KindRPS, KindNumber:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case KindMs:
		return fmtMs(v)
	case KindRatio:
		return strconv.FormatFloat(100*v, 'f', 2, 64)
	case KindCount:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case KindSeconds:
		return fmtSeconds(v)
	case KindDuration:
		if math.Abs(v) < 10 {
			return strconv.FormatFloat(v, 'f', 3, 64) + "s"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + "s"
	case KindMult:
		return fmtMultiplier(v)
	}
	return rawFloat(v)
}

func numericKind(k Kind) bool { return k != KindText }

// view is a grid prepared for rendering: every cell formatted once, a
// label per row for the notes, and, in a grouped grid, the identity
// columns whose value is the same on every row lifted out into the
// metadata.
type view struct {
	cols    []Column
	cells   [][]formatted // [row][column]
	idCols  []int         // grouped: the identity columns every sub-table repeats
	common  []KV          // grouped: identity values every row shares
	labels  []string
	grouped bool
}

func (t *Grid) view() *view {
	v := &view{cols: t.Columns, grouped: t.grouped()}
	for _, r := range t.Rows {
		fs := make([]formatted, len(r))
		for j, c := range r {
			fs[j] = c.format(t.Columns[j].Kind)
		}
		v.cells = append(v.cells, fs)
	}
	if !v.grouped {
		v.labels = flatLabels(t)
		return v
	}
	varying := make([]bool, len(v.cols))
	for i, c := range v.cols {
		if c.Group != "" {
			continue
		}
		if c.Kind != KindText || len(v.cells) == 0 {
			v.idCols = append(v.idCols, i)
			continue
		}
		for _, fs := range v.cells[1:] {
			if fs[i].text != v.cells[0][i].text {
				varying[i] = true
			}
		}
		if varying[i] {
			v.idCols = append(v.idCols, i)
		} else {
			v.common = append(v.common, KV{Key: c.Head, Value: v.cells[0][i].text})
		}
	}
	for ri, fs := range v.cells {
		var parts []string
		for i, c := range v.cols {
			if varying[i] || (c.Kind == KindMult && !fs[i].na) {
				parts = append(parts, fs[i].text)
			}
		}
		if len(parts) == 0 {
			parts = []string{fmt.Sprintf("row %d", ri+1)}
		}
		v.labels = append(v.labels, strings.Join(parts, " · "))
	}
	return v
}

// flatLabels names each row of a grid without groups by its first text
// cell, joined with the text cells after it while two rows would share a
// name ("main · TTFT from send" in a table of phases × latencies).
func flatLabels(t *Grid) []string {
	var text []int // the text columns, in order
	for j, c := range t.Columns {
		if c.Kind == KindText {
			text = append(text, j)
		}
	}
	labels := make([]string, len(t.Rows))
	for n := 1; n <= max(1, len(text)); n++ {
		seen := map[string]bool{}
		unique := true
		for i, r := range t.Rows {
			var parts []string
			for _, j := range text {
				if r[j].Text != "" && len(parts) < n {
					parts = append(parts, r[j].Text)
				}
			}
			labels[i] = strings.Join(parts, " · ")
			if labels[i] == "" {
				labels[i] = "row"
			}
			unique = unique && !seen[labels[i]]
			seen[labels[i]] = true
		}
		if unique {
			break
		}
	}
	return labels
}

// meta is the header list: the identity values every row shares, then
// the grid's own entries except those already listed.
func (v *view) meta(extra []KV) []KV {
	meta := slices.Clone(v.common)
	for _, kv := range extra {
		if !slices.Contains(v.common, kv) {
			meta = append(meta, kv)
		}
	}
	return meta
}

// parts are the sub-tables people read: one per column group, each led
// by the identity columns, or the whole grid when it has no groups.
type part struct {
	name string
	cols []int // indexes into view.cols
}

func (v *view) parts() []part {
	if !v.grouped {
		all := make([]int, len(v.cols))
		for i := range all {
			all[i] = i
		}
		return []part{{cols: all}}
	}
	var out []part
	for _, c := range v.cols {
		if c.Group == "" || slices.ContainsFunc(out, func(p part) bool { return p.name == c.Group }) {
			continue
		}
		p := part{name: c.Group, cols: slices.Clone(v.idCols)}
		for i, d := range v.cols {
			if d.Group == c.Group {
				p.cols = append(p.cols, i)
			}
		}
		out = append(out, p)
	}
	return out
}

// note is the reason shared by some n/a or censored cells of one row.
type note struct {
	row    string
	cols   []string
	reason string
}

func (n note) String() string { return n.row + ": " + strings.Join(n.cols, ", ") + ": " + n.reason }

// notes lists, per row and in column order, why cells are n/a or
// censored; a note every row has is said once, for "every row".
func (v *view) notes() []note {
	var out []note
	for ri, fs := range v.cells {
		byReason := map[string]int{}
		var rowNotes []note
		for i, c := range v.cols {
			f := fs[i]
			if f.reason == "" || c.Head == "" {
				continue
			}
			j, ok := byReason[f.reason]
			if !ok {
				j = len(rowNotes)
				byReason[f.reason] = j
				rowNotes = append(rowNotes, note{row: v.labels[ri], reason: f.reason})
			}
			rowNotes[j].cols = append(rowNotes[j].cols, c.Head)
		}
		out = append(out, rowNotes...)
	}
	return collapseNotes(out, len(v.cells))
}

// collapseNotes prints once, for "every row", a note that every one of
// the rows has (the same columns for the same reason).
func collapseNotes(in []note, rows int) []note {
	if rows < 2 {
		return in
	}
	key := func(n note) string { return strings.Join(n.cols, "\x00") + "\x00" + n.reason }
	count := map[string]int{}
	for _, n := range in {
		count[key(n)]++
	}
	var out []note
	done := map[string]bool{}
	for _, n := range in {
		k := key(n)
		switch {
		case count[k] < rows:
			out = append(out, n)
		case !done[k]:
			done[k] = true
			n.row = "every row"
			out = append(out, n)
		}
	}
	return out
}

// legend is the description of each column people see; a P50 column
// stands for its P95 and P99 siblings, which carry no description.
func (v *view) legend() []KV {
	var out []KV
	for _, c := range v.cols {
		if c.Desc == "" || c.Head == "" {
			continue
		}
		head := c.Head
		if base, ok := strings.CutSuffix(head, "p50"); ok {
			head = base + "p50/p95/p99"
		}
		out = append(out, KV{Key: head, Value: c.Desc})
	}
	return out
}

// WriteGridMarkdown writes t as Markdown that also reads well in a
// terminal: the metadata (with the identity values every row shares), one
// aligned table (one per column group in a grouped grid, each led by the
// identity columns), the spread over repeats, notes giving the reason
// for every n/a and censored value, the verdicts, the diagnoses and a
// legend of the columns.
func WriteGridMarkdown(w io.Writer, t Grid) error {
	if err := t.validate(); err != nil {
		return err
	}
	t = t.forPeople()
	v := t.view()
	bw := bufio.NewWriter(w)
	title := t.Title
	if title == "" {
		title = "surge results"
	}
	fmt.Fprintf(bw, "# %s\n\n", title)
	meta := v.meta(t.Meta)
	for _, kv := range meta {
		fmt.Fprintf(bw, "- %s: %s\n", kv.Key, orNA(kv.Value))
	}
	if len(meta) > 0 {
		fmt.Fprintln(bw)
	}
	if len(t.Rows) == 0 {
		fmt.Fprint(bw, "No rows: nothing was measured.\n\n")
	} else {
		for _, p := range v.parts() {
			if p.name != "" {
				fmt.Fprintf(bw, "## %s\n\n", p.name)
			}
			writeMDTable(bw, v, p.cols)
			fmt.Fprintln(bw)
		}
	}
	if len(t.Spreads) > 0 {
		fmt.Fprintf(bw, "## %s\n\n%s\n\n", spreadHeading, spreadIntro)
		for _, s := range t.Spreads {
			fmt.Fprintf(bw, "- %s\n", s.Text())
		}
		fmt.Fprintln(bw)
	}
	notes := v.notes()
	if len(notes)+len(t.Notes) > 0 {
		fmt.Fprint(bw, "## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(bw, "- %s\n", n)
		}
		for _, n := range t.Notes {
			fmt.Fprintf(bw, "- %s\n", n)
		}
		fmt.Fprintln(bw)
	}
	if len(t.Verdicts) > 0 {
		fmt.Fprint(bw, "## Verdicts\n\n")
		writeVerdicts(bw, t.Verdicts, "    ")
		fmt.Fprintln(bw)
	}
	if len(t.Diagnoses) > 0 {
		fmt.Fprint(bw, "## Diagnosis\n\n")
		fmt.Fprint(bw, "How each run held or failed, and what the metrics' relationships suggest: hypotheses to check, not conclusions.\n\n")
		for _, d := range t.Diagnoses {
			fmt.Fprintf(bw, "- **%s %s**: %s\n", d.Scope, d.Mode, d.Summary)
			for _, h := range d.Hints {
				fmt.Fprintf(bw, "  - %s\n", h.Text())
			}
		}
		fmt.Fprintln(bw)
	}
	if legend := v.legend(); len(legend) > 0 {
		fmt.Fprint(bw, "## Legend\n\n")
		for _, kv := range legend {
			fmt.Fprintf(bw, "- %s: %s\n", kv.Key, kv.Value)
		}
		fmt.Fprintln(bw, "- n/a: unavailable (reason in the notes); > x: only a lower bound is known")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// writeVerdicts writes one aligned line per verdict: status, scope,
// check, detail.
func writeVerdicts(w io.Writer, vs []Verdict, indent string) {
	scopeW, checkW := 0, 0
	for _, vd := range vs {
		scopeW = max(scopeW, utf8.RuneCountInString(vd.Scope))
		checkW = max(checkW, utf8.RuneCountInString(vd.Check))
	}
	for _, vd := range vs {
		line := fmt.Sprintf("%s%-4s  %s  %s", indent, vd.Status, pad(vd.Scope, scopeW, false), pad(vd.Check, checkW, false))
		if vd.Detail != "" {
			line += "  " + vd.Detail
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// writeMDTable writes the given columns of v as an aligned Markdown
// table: numbers to the right, text to the left.
func writeMDTable(w io.Writer, v *view, cols []int) {
	width := make([]int, len(cols))
	for j, ci := range cols {
		width[j] = max(3, utf8.RuneCountInString(v.cols[ci].Head))
		for _, fs := range v.cells {
			width[j] = max(width[j], utf8.RuneCountInString(mdEscape(fs[ci].text)))
		}
	}
	numeric := func(j int) bool { return numericKind(v.cols[cols[j]].Kind) }
	line := func(cell func(j int) string, right func(int) bool) {
		var b strings.Builder
		b.WriteString("|")
		for j := range cols {
			b.WriteString(" ")
			b.WriteString(pad(cell(j), width[j], right(j)))
			b.WriteString(" |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(func(j int) string { return v.cols[cols[j]].Head }, numeric)
	line(func(j int) string {
		if numeric(j) {
			return strings.Repeat("-", width[j]-1) + ":"
		}
		return ":" + strings.Repeat("-", width[j]-1)
	}, func(int) bool { return false })
	for _, fs := range v.cells {
		line(func(j int) string { return mdEscape(fs[cols[j]].text) }, numeric)
	}
}

// WriteGridSection writes t as one section of a larger Markdown document:
// "## Title", the table, and the reason for every n/a or censored value;
// no metadata, verdicts, notes or legend (the document has its own).
func WriteGridSection(w io.Writer, t Grid) error {
	if err := t.validate(); err != nil {
		return err
	}
	t = t.forPeople()
	v := t.view()
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "## %s\n\n", t.Title)
	if len(t.Rows) == 0 {
		fmt.Fprint(bw, "No rows.\n\n")
	} else {
		for _, p := range v.parts() {
			if p.name != "" {
				fmt.Fprintf(bw, "### %s\n\n", p.name)
			}
			writeMDTable(bw, v, p.cols)
			fmt.Fprintln(bw)
		}
	}
	notes := v.notes()
	for _, n := range notes {
		fmt.Fprintf(bw, "- n/a: %s\n", n)
	}
	if len(notes) > 0 {
		fmt.Fprintln(bw)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// WriteGridText writes t for a terminal: the title as a plain line, the
// metadata indented below it, the columns aligned (numbers to the right)
// without Markdown's pipes — one block per column group, under the
// group's name — the spread over repeats, the reason for every n/a or
// censored value, the verdicts, and a pointer to the legend (LegendIn).
func WriteGridText(w io.Writer, t Grid) error {
	if err := t.validate(); err != nil {
		return err
	}
	t = t.forPeople()
	v := t.view()
	bw := bufio.NewWriter(w)
	if t.Title != "" {
		fmt.Fprintf(bw, "%s\n", t.Title)
	}
	for _, kv := range v.meta(t.Meta) {
		fmt.Fprintf(bw, "  %s: %s\n", kv.Key, orNA(kv.Value))
	}
	if len(t.Rows) == 0 {
		fmt.Fprintln(bw, "  No rows: nothing was measured.")
	}
	for _, p := range v.parts() {
		if len(t.Rows) == 0 {
			break
		}
		if p.name != "" {
			fmt.Fprintf(bw, "\n%s\n", p.name)
		}
		writeTextTable(bw, v, p.cols)
	}
	if len(t.Spreads) > 0 {
		fmt.Fprintf(bw, "\n%s (the pooled row merges the runs' observations; never averaged percentiles):\n", spreadHeading)
		for _, s := range t.Spreads {
			fmt.Fprintf(bw, "  %s\n", s.Text())
		}
	}
	notes := v.notes()
	if v.grouped && len(notes) > 0 {
		fmt.Fprintln(bw)
	}
	for _, n := range notes {
		fmt.Fprintf(bw, "  n/a: %s\n", n)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(bw, "  %s\n", n)
	}
	if len(t.Verdicts) > 0 {
		writeVerdicts(bw, t.Verdicts, "  ")
	}
	if t.LegendIn != "" {
		fmt.Fprintf(bw, "Column meanings: the legend in %s; n/a: unavailable; > x: only a lower bound is known.\n", t.LegendIn)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write text: %w", err)
	}
	return nil
}

// writeTextTable writes the given columns of v aligned, two spaces
// between columns and before the first, numbers to the right.
func writeTextTable(w io.Writer, v *view, cols []int) {
	width := make([]int, len(cols))
	for j, ci := range cols {
		width[j] = utf8.RuneCountInString(v.cols[ci].Head)
		for _, fs := range v.cells {
			width[j] = max(width[j], utf8.RuneCountInString(fs[ci].text))
		}
	}
	line := func(cell func(j int) string) {
		var b strings.Builder
		for j, ci := range cols {
			b.WriteString("  ")
			b.WriteString(pad(cell(j), width[j], numericKind(v.cols[ci].Kind)))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(func(j int) string { return v.cols[cols[j]].Head })
	for _, fs := range v.cells {
		line(func(j int) string { return fs[cols[j]].text })
	}
}

// WriteGridCSV writes t as CSV: a header of column keys, then one line per
// row with raw values (rates per second, latencies in ms, ratios as
// fractions; "n/a" when unavailable, ">x" when only a lower bound is known).
func WriteGridCSV(w io.Writer, t Grid) error {
	if err := t.validate(); err != nil {
		return err
	}
	v := t.view()
	cw := csv.NewWriter(w)
	rec := make([]string, len(t.Columns))
	for j, c := range t.Columns {
		rec[j] = c.Key
	}
	cw.Write(rec)
	for _, fs := range v.cells {
		for j := range fs {
			rec[j] = fs[j].raw
		}
		cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("report: write csv: %w", err)
	}
	return nil
}

// rowObject encodes one row of v as a JSON object whose fields follow the
// columns' order.
func (v *view) rowObject(i int) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for j, f := range v.cells[i] {
		if j > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(v.cols[j].Key)
		val, err := json.Marshal(f.json)
		if err != nil {
			return nil, fmt.Errorf("report: encode json: %s: %w", v.cols[j].Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteGridJSON writes t as one JSON object: title, meta, columns (key,
// head, kind, description), rows (objects keyed by column key; numbers as
// plain values, unavailable or censored ones as {"value": null, …} like the
// results table), verdicts and notes.
func WriteGridJSON(w io.Writer, t Grid) error {
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
	var notes []string
	for _, n := range v.notes() {
		notes = append(notes, n.String())
	}
	out := struct {
		Schema   int               `json:"schema_version"`
		Title    string            `json:"title"`
		Meta     []KV              `json:"meta"`
		Columns  []colJSON         `json:"columns"`
		Rows     []json.RawMessage `json:"rows"`
		Verdicts []Verdict         `json:"verdicts"`
		Notes    []string          `json:"notes"`
	}{Schema: record.SchemaVersion, Title: t.Title, Meta: nonNil(t.Meta), Verdicts: nonNil(t.Verdicts), Notes: nonNil(append(slices.Clone(t.Notes), notes...))}
	for _, c := range t.Columns {
		k := "text"
		if int(c.Kind) >= 0 && int(c.Kind) < len(kindNames) {
			k = kindNames[c.Kind]
		}
		out.Columns = append(out.Columns, colJSON{Key: c.Key, Head: c.Head, Kind: k, Desc: c.Desc})
	}
	out.Rows = []json.RawMessage{}
	for i := range v.cells {
		row, err := v.rowObject(i)
		if err != nil {
			return err
		}
		out.Rows = append(out.Rows, row)
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
