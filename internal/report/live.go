package report

import (
	_ "embed"
	"html/template"
	"io"
)

var (
	//go:embed assets/live.html.tmpl
	liveTmpl string
	//go:embed assets/live.js
	liveJS string
)

var livePage = template.Must(template.New("live.html").Parse(liveTmpl))

// WriteLivePage writes the live page of a run (--web): the same chart
// library and styles as report.html, drawing state — JSON
// {"run","from","history":[snapshots]}, the values so far — at once and
// then the values it receives over server-sent events from /events.
func WriteLivePage(w io.Writer, title string, state []byte) error {
	// The state is JSON built with encoding/json, which escapes <, > and
	// &: no </script> inside.
	return livePage.Execute(w, struct {
		Title             string
		UPlotCSS, CSS     template.CSS
		JS, UPlotJS, Data template.JS
	}{title, template.CSS(uplotCSS), template.CSS(reportCSS), template.JS(liveJS), template.JS(uplotJS), template.JS(state)})
}
