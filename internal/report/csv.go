package report

import (
	"encoding/csv"
	"fmt"
	"io"
)

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
	cw := csv.NewWriter(w)
	rep := t.repeated()
	rec := make([]string, len(columns))
	for i := range columns {
		rec[i] = columns[i].key
	}
	if rep {
		rec = append(rec, repeatCSVHeader...)
	}
	if err := cw.Write(rec); err != nil {
		return fmt.Errorf("report: write csv: %w", err)
	}
	for _, r := range sortedRows(t.Rows) {
		for i := range columns {
			rec[i] = columns[i].get(&r).raw
		}
		if rep {
			copy(rec[len(columns):], repeatCSV(&r))
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("report: write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("report: write csv: %w", err)
	}
	return nil
}
