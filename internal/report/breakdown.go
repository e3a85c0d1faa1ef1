package report

import (
	"bytes"
	"fmt"
	"html/template"
)

// breakdownHTML renders report.html's breakdown tables (a run's results by
// workload profile) as one section, in the level tables' layout; "" when
// there are none.
func breakdownHTML(ts []Grid) (template.HTML, error) {
	if len(ts) == 0 {
		return "", nil
	}
	tables, err := levelHTMLTables(ts)
	if err != nil {
		return "", err
	}
	data := struct {
		Tables []levelHTMLTable
		Charts []levelHTMLChart
	}{Tables: tables}
	var b bytes.Buffer
	if err := levelSectionTmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("report: render breakdowns: %w", err)
	}
	// The section is built by this package's template, which escapes
	// every value.
	return template.HTML(b.String()), nil
}
