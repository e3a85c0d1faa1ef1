package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// WriteMarkdown writes t as Markdown that also reads well in a terminal:
// metadata, one aligned sub-table per column group (load, latency, failures
// and recovery), notes giving the reason for every n/a and censored value,
// the verdicts and a short legend. Identity columns (model, workload,
// deployment) whose value is the same on every row are printed once above
// the tables instead of on every row.
func WriteMarkdown(w io.Writer, t Table) error {
	bw := bufio.NewWriter(w)
	v := newTableView(t)

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

	if len(v.rows) == 0 {
		fmt.Fprintln(bw, "No rows: nothing was measured.")
		fmt.Fprintln(bw)
	}
	for _, g := range []string{groupLoad, groupLatency, groupFailures} {
		if len(v.rows) == 0 {
			break
		}
		fmt.Fprintf(bw, "## %s\n\n", g)
		v.writeMarkdown(bw, v.groupCols(g))
		fmt.Fprintln(bw)
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
			fmt.Fprintf(bw, "- %s: %s: %s\n", n.row, strings.Join(n.cols, ", "), n.reason)
		}
		for _, n := range t.Notes {
			fmt.Fprintf(bw, "- %s\n", n)
		}
		fmt.Fprintln(bw)
	}

	if len(t.Verdicts) > 0 {
		fmt.Fprint(bw, "## Verdicts\n\n")
		scopeW, checkW := 0, 0
		for _, vd := range t.Verdicts {
			scopeW = max(scopeW, utf8.RuneCountInString(vd.Scope))
			checkW = max(checkW, utf8.RuneCountInString(vd.Check))
		}
		for _, vd := range t.Verdicts {
			line := fmt.Sprintf("    %-4s  %s  %s", vd.Status, pad(vd.Scope, scopeW, false), pad(vd.Check, checkW, false))
			if vd.Detail != "" {
				line += "  " + vd.Detail
			}
			fmt.Fprintln(bw, strings.TrimRight(line, " "))
		}
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

	fmt.Fprint(bw, "## Legend\n\n")
	for i := range v.cols {
		c := &v.cols[i]
		if c.desc != "" && !c.csvOnly() {
			fmt.Fprintf(bw, "- %s: %s\n", c.legendHead(), c.desc)
		}
	}
	fmt.Fprintln(bw, "- n/a: unavailable (reason in the notes); > x: only a lower bound is known")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// WriteTerminalTables writes t's rows for a terminal: its heading (the
// command and target, as results.md names them), the identity shared by
// every row, one aligned sub-table per column group and the reasons for
// n/a and censored cells — no verdicts, diagnoses or legend: the command
// prints its verdicts its own way, and the legend (what each column
// means) is in legendFile, which the last line points to.
func WriteTerminalTables(w io.Writer, t Table, legendFile string) error {
	bw := bufio.NewWriter(w)
	v := newTableView(t)
	fmt.Fprintf(bw, "# %s\n\n", t.Title)
	for _, kv := range v.meta(nil) {
		fmt.Fprintf(bw, "- %s: %s\n", kv.Key, orNA(kv.Value))
	}
	fmt.Fprintln(bw)
	for _, g := range []string{groupLoad, groupLatency, groupFailures} {
		if len(v.rows) == 0 {
			fmt.Fprintln(bw, "No rows: nothing was measured.")
			break
		}
		fmt.Fprintf(bw, "## %s\n\n", g)
		v.writeMarkdown(bw, v.groupCols(g))
		fmt.Fprintln(bw)
	}
	if len(t.Spreads) > 0 {
		fmt.Fprintf(bw, "%s (the pooled row merges the runs' observations; never averaged percentiles):\n", spreadHeading)
		for _, s := range t.Spreads {
			fmt.Fprintf(bw, "- %s\n", s.Text())
		}
		fmt.Fprintln(bw)
	}
	if notes := v.notes(); len(notes) > 0 {
		for _, n := range notes {
			fmt.Fprintf(bw, "- %s: %s: %s\n", n.row, strings.Join(n.cols, ", "), n.reason)
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintf(bw, "Column meanings: the legend in %s; n/a: unavailable; > x: only a lower bound is known.\n", legendFile)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write tables: %w", err)
	}
	return nil
}

// tableView is a table prepared for people: rows sorted, constant identity
// columns lifted out, every cell formatted once.
type tableView struct {
	cols   []column // the table's columns
	rows   []Row
	cells  [][]cell // [row][column index in columns]
	idCols []int    // indexes into columns
	common []KV
	labels []string
}

func newTableView(t Table) *tableView {
	v := &tableView{rows: sortedRows(t.Rows), cols: t.cols()}
	columns := v.cols
	for _, r := range v.rows {
		cs := make([]cell, len(columns))
		for i := range columns {
			cs[i] = columns[i].get(&r)
		}
		v.cells = append(v.cells, cs)
	}
	varying := make([]bool, len(columns))
	for i := range columns {
		c := &columns[i]
		if c.group != groupID {
			continue
		}
		if c.kind != kindText || len(v.rows) == 0 {
			v.idCols = append(v.idCols, i)
			continue
		}
		for _, cs := range v.cells[1:] {
			if cs[i].text != v.cells[0][i].text {
				varying[i] = true
			}
		}
		if varying[i] {
			v.idCols = append(v.idCols, i)
		} else {
			v.common = append(v.common, KV{Key: c.head, Value: v.cells[0][i].text})
		}
	}
	for ri, cs := range v.cells {
		var parts []string
		for i := range columns {
			if varying[i] || (columns[i].kind == kindMult && !cs[i].na) {
				parts = append(parts, cs[i].text)
			}
		}
		if len(parts) == 0 {
			parts = []string{fmt.Sprintf("row %d", ri+1)}
		}
		v.labels = append(v.labels, strings.Join(parts, " · "))
	}
	return v
}

// note is the reason shared by some n/a or censored cells of one row.
type note struct {
	row    string
	cols   []string
	reason string
}

// notes lists, per row and in column order, why cells are n/a or censored.
func (v *tableView) notes() []note {
	var out []note
	for ri, cs := range v.cells {
		byReason := map[string]int{}
		var rowNotes []note
		for i := range v.cols {
			c := cs[i]
			if c.reason == "" || v.cols[i].csvOnly() {
				continue
			}
			j, ok := byReason[c.reason]
			if !ok {
				j = len(rowNotes)
				byReason[c.reason] = j
				rowNotes = append(rowNotes, note{row: v.labels[ri], reason: c.reason})
			}
			rowNotes[j].cols = append(rowNotes[j].cols, v.cols[i].head)
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

// groupCols returns the identity columns shown on every row followed by the
// group's columns, as indexes into columns.
func (v *tableView) groupCols(group string) []int {
	cols := append([]int(nil), v.idCols...)
	for i := range v.cols {
		if v.cols[i].group == group && !v.cols[i].csvOnly() {
			cols = append(cols, i)
		}
	}
	return cols
}

// writeMarkdown writes one aligned Markdown table of the given columns.
func (v *tableView) writeMarkdown(w io.Writer, cols []int) {
	columns := v.cols
	width := make([]int, len(cols))
	for j, ci := range cols {
		width[j] = max(3, utf8.RuneCountInString(columns[ci].head))
		for _, cs := range v.cells {
			width[j] = max(width[j], utf8.RuneCountInString(mdEscape(cs[ci].text)))
		}
	}
	numeric := func(j int) bool { return columns[cols[j]].kind != kindText }
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
	line(func(j int) string { return columns[cols[j]].head }, numeric)
	line(func(j int) string {
		if numeric(j) {
			return strings.Repeat("-", width[j]-1) + ":"
		}
		return ":" + strings.Repeat("-", width[j]-1)
	}, func(int) bool { return false })
	for _, cs := range v.cells {
		line(func(j int) string { return mdEscape(cs[cols[j]].text) }, numeric)
	}
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// pad pads s with spaces to width runes, on the left when right-aligned.
func pad(s string, width int, right bool) string {
	n := width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

func orNA(s string) string {
	if s == "" {
		return NA
	}
	return s
}

// meta is the header list: the columns common to every row, then the
// table's own entries except those a common column already lists.
func (v *tableView) meta(extra []KV) []KV {
	meta := slices.Clone(v.common)
	for _, kv := range extra {
		if !slices.Contains(v.common, kv) {
			meta = append(meta, kv)
		}
	}
	return meta
}
