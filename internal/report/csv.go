package report

import "io"

// WriteCSV writes t's rows as CSV: a header row of stable column names
// (the same names as the JSON fields), then one line per row in sorted
// order. Numbers are raw (rates as fractions, latencies in ms, recovery in
// seconds); unavailable values are n/a and lower bounds are written
// ">bound" (a censored P99 or a run that did not recover), so that a
// spreadsheet never mistakes them for measurements. Every column is
// written, whatever the table omits for people (Table.Omit): the file's
// schema does not depend on the experiment — but for rep, pooled and
// repeats, which end each line only when some row is of repeated runs.
func WriteCSV(w io.Writer, t Table) error {
	g := t.grid(false)
	if t.repeated() {
		for _, k := range repeatCSVHeader {
			g.Columns = append(g.Columns, Column{Key: k, Kind: KindText})
		}
		for i, r := range sortedRows(t.Rows) {
			for _, v := range repeatCSV(&r) {
				g.Rows[i] = append(g.Rows[i], fixedCell(formatted{raw: v}))
			}
		}
	}
	return WriteGridCSV(w, g)
}
