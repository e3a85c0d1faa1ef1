package report

// A Grid is a table with the columns its caller chooses and one row per
// thing compared (a capacity step, a sweep level, a soak window, a
// folder of surge compare, a check, a cold-start cycle), with the context
// needed to read it; WriteGridMarkdown, WriteGridText, WriteGridCSV,
// WriteGridJSON and WriteGridHTML render it. Every table surge writes
// except the results table of a run (Table) is a Grid.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
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
)

// Column describes one column of a Grid.
type Column struct {
	Key  string // CSV header and JSON field name, e.g. "ttft_p95_ms"
	Head string // Markdown and HTML header, e.g. "TTFT p95"; "" for a column in CSV and JSON only
	Kind Kind   // how values are formatted
	Desc string // legend line; empty for self-explanatory columns
}

// Cell is one cell: Text for KindText columns, Num for the others.
type Cell struct {
	Text string
	Num  Opt
}

// TextCell returns a text cell.
func TextCell(s string) Cell { return Cell{Text: s} }

// NumCell returns a numeric cell; an unavailable or censored Opt prints as
// n/a or "> x" like in the results table.
func NumCell(o Opt) Cell { return Cell{Num: o} }

// Grid is a table with one row per load level and the columns its
// caller chooses, with the context needed to read it.
type Grid struct {
	Title    string
	Meta     []KV
	Columns  []Column
	Rows     [][]Cell // each row has one cell per column, in column order
	Verdicts []Verdict
	Notes    []string
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

// forPeople is t as Markdown and HTML show it: without its
// CSV-and-JSON-only columns (an empty Head), and with the unit in every
// millisecond column's head ("TTFT p95 ms") and a percent sign in every
// ratio's ("goodput %"); rates carry theirs in the head already
// ("goodput/s"), seconds in the cell ("42s").
func (t Grid) forPeople() Grid {
	keep := make([]bool, len(t.Columns))
	var cols []Column
	for j, c := range t.Columns {
		keep[j] = c.Head != ""
		if !keep[j] {
			continue
		}
		switch {
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

// format returns the cell as people read it, its CSV form, its JSON value,
// and the reason when it is n/a or censored.
func (c Cell) format(kind Kind) (text, raw string, js any, reason string) {
	if kind == KindText {
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
		if kind == KindMs {
			t = fmtBoundMs(o.boundPrefix(), o.V)
		}
		return t, o.raw(), o, o.reason()
	}
	return NA, NA, o, orUnknown(o.reason())
}

func levelFmt(kind Kind, v float64) string {
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
	}
	return rawFloat(v)
}

// cells formats every cell once: [row][column].
type levelView struct {
	text, raw [][]string
	js        [][]any
	reasons   []string // "row: column: reason", unique
}

func (t *Grid) view() levelView {
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
func rowLabel(t *Grid, r []Cell) string {
	for j, c := range r {
		if t.Columns[j].Kind == KindText && c.Text != "" {
			return c.Text
		}
	}
	return "row"
}

func numericKind(k Kind) bool { return k != KindText }

// WriteGridMarkdown writes t as one aligned Markdown table, with the
// metadata above it and the verdicts, notes (including the reason for every
// n/a and censored value) and legend below.
func WriteGridMarkdown(w io.Writer, t Grid) error {
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
		writeMDTable(bw, &t, &v)
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

// writeMDTable writes t's rows (formatted in v) as an aligned Markdown
// table: numbers to the right, text to the left; then a blank line.
func writeMDTable(bw *bufio.Writer, t *Grid, v *levelView) {
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

// WriteGridSection writes t as one section of a larger Markdown document:
// "## Title", the table, and the reason for every n/a or censored value;
// no metadata, verdicts, notes or legend (the document has its own).
func WriteGridSection(w io.Writer, t Grid) error {
	if err := t.validate(); err != nil {
		return err
	}
	t = t.forPeople()
	bw := bufio.NewWriter(w)
	v := t.view()
	fmt.Fprintf(bw, "## %s\n\n", t.Title)
	if len(t.Rows) == 0 {
		fmt.Fprint(bw, "No rows.\n\n")
	} else {
		writeMDTable(bw, &t, &v)
	}
	for _, n := range v.reasons {
		fmt.Fprintf(bw, "- n/a: %s\n", n)
	}
	if len(v.reasons) > 0 {
		fmt.Fprintln(bw)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// WriteGridText writes t for a terminal the way surge's other terminal
// tables look: the title as a plain line, the metadata indented below it,
// the columns aligned (numbers to the right) without Markdown's pipes,
// and the reason for every n/a or censored value; no legend (results.md
// has it).
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

// WriteGridCSV writes t as CSV: a header of column keys, then one line per
// row with raw values (rates per second, latencies in ms, ratios as
// fractions; "n/a" when unavailable, ">x" when only a lower bound is known).
func WriteGridCSV(w io.Writer, t Grid) error {
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
