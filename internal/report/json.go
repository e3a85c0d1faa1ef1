package report

import (
	"encoding/json"

	"fmt"
	"io"

	"github.com/surge-bench/surge/internal/record"
)

// WriteJSON writes t as indented JSON:
//
//	{"schema_version": 2, "title": …, "meta": [{"key", "value"}], "rows": [{…}], "verdicts": […], "diagnoses": […], "notes": […]}
//
// and, for a run cut short, "partial": {"cause", "why", "arrivals"}
// (Partial). docs/schema/results.schema.json is its JSON Schema.
//
// Each diagnosis is {"scope", "mode", "summary", "hints": [{"hypothesis",
// "evidence", "check"}]} (see Diagnosis).
//
// Each row has the same fields, in the same order, as the CSV header. A
// number that can be unavailable is an object: {"value": 12.5} when
// measured, {"value": null, "reason": "…"} when unavailable and
// {"value": null, "lower_bound": 60000, "reason": "…"} when censored.
// Recovery columns add "status" (recovered, not_recovered, never, n/a).
// Unknown model, workload or deployment names are null. A row of repeated
// runs adds "rep": k; the pooled row "rep": 0, "pooled": true, "repeats":
// N; the document then has "spreads" (report.Spread), after "notes".
func WriteJSON(w io.Writer, t Table) error {
	g := t.grid(false) // every column: the schema does not depend on the experiment
	v := g.view()
	rows := make([]json.RawMessage, 0, len(t.Rows))
	for i, r := range sortedRows(t.Rows) {
		b, err := v.rowObject(i)
		if err != nil {
			return err
		}
		if f := repeatFields(&r); f != "" {
			b = append(b[:len(b)-1:len(b)-1], f+"}"...)
		}
		rows = append(rows, b)
	}
	doc := struct {
		Schema    int               `json:"schema_version"`
		Title     string            `json:"title"`
		Meta      []KV              `json:"meta"`
		Rows      []json.RawMessage `json:"rows"`
		Verdicts  []Verdict         `json:"verdicts"`
		Diagnoses []Diagnosis       `json:"diagnoses"`
		Notes     []string          `json:"notes"`
		Spreads   []Spread          `json:"spreads,omitempty"` // repeated runs only
		Partial   *Partial          `json:"partial,omitempty"`
	}{record.SchemaVersion, t.Title, nonNil(t.Meta), rows, nonNil(t.Verdicts), nonNil(t.Diagnoses), nonNil(t.Notes), t.Spreads, t.Partial}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode json: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
