package report

// report.html of an experiment that runs several load levels: its grids
// and XY charts, then the results tables and time series of its runs.

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
)

// GridReport is report.html for an experiment that runs several load
// levels: its level tables and XY charts first, then everything an
// HTMLReport shows (results tables and the time-series charts of each run).
type GridReport struct {
	HTMLReport
	Levels []Grid
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

// WriteGridHTML writes r as one self-contained page: the level tables and
// XY charts (inline SVG), followed by what WriteHTML shows for
// r.HTMLReport. It fails before writing anything when a table or chart is
// malformed.
func WriteGridHTML(w io.Writer, r GridReport) error {
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
func levelHTMLTables(ts []Grid) ([]levelHTMLTable, error) {
	var out []levelHTMLTable
	for _, t := range ts {
		if err := t.validate(); err != nil {
			return nil, err
		}
		t = t.forPeople()
		v := t.view()
		ht := levelHTMLTable{Title: t.Title, Meta: t.Meta, Verdicts: t.Verdicts, Notes: slices.Clone(t.Notes)}
		for _, n := range v.notes() {
			ht.Notes = append(ht.Notes, n.String())
		}
		p := v.htmlParts()[0]
		ht.Heads, ht.Rows = p.Heads, p.Rows
		out = append(out, ht)
	}
	return out, nil
}
