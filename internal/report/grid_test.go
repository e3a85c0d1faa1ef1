package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/report/browsertest"
)

func levelFixture() Grid {
	return Grid{
		Title: "capacity search",
		Meta:  []KV{{Key: "target", Value: "sim"}},
		Columns: []Column{
			{Key: "step", Head: "step", Kind: KindText},
			{Key: "offered_rps", Head: "offered", Kind: KindRPS, Desc: "arrivals per second"},
			{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: KindMs},
			{Key: "goodput_ratio", Head: "goodput %", Kind: KindRatio},
			{Key: "samples", Head: "samples", Kind: KindCount},
			{Key: "verdict", Head: "verdict", Kind: KindText},
		},
		Rows: [][]Cell{
			{TextCell("step-01"), NumCell(Val(2)), NumCell(Val(123.4)), NumCell(Val(1)), NumCell(Val(240)), TextCell("PASS")},
			{TextCell("step-02"), NumCell(Val(4)), NumCell(Above(60000, "more than 5% timed out")), NumCell(Val(0.5)), NumCell(Val(480)), TextCell("FAIL | stopped")},
			{TextCell("step-03"), NumCell(Val(3)), NumCell(Unavailable("no samples")), NumCell(Val(0)), NumCell(Val(0)), TextCell("")},
		},
		Verdicts: []Verdict{{Scope: "step-01", Check: "p95 TTFT ≤ 2s", Status: VerdictPass, Detail: "123ms"}},
		Notes:    []string{"sustainable: 2 req/s"},
	}
}

func TestLevelTableRenderers(t *testing.T) {
	tbl := levelFixture()
	var md bytes.Buffer
	if err := WriteGridMarkdown(&md, tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# capacity search", "- target: sim", "| step    |", "123", "> 60s", `FAIL \| stopped`, "n/a",
		"step-02: TTFT p95 ms: more than 5% timed out", "step-03: TTFT p95 ms: no samples", "| TTFT p95 ms |",
		"    PASS  step-01  p95 TTFT ≤ 2s  123ms", "- sustainable: 2 req/s", "- offered: arrivals per second",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	var c bytes.Buffer
	if err := WriteGridCSV(&c, tbl); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"step", "offered_rps", "ttft_p95_ms", "goodput_ratio", "samples", "verdict"},
		{"step-01", "2", "123.4", "1", "240", "PASS"},
		{"step-02", "4", ">60000", "0.5", "480", "FAIL | stopped"},
		{"step-03", "3", "n/a", "0", "0", ""},
	}
	if len(recs) != len(want) {
		t.Fatalf("csv has %d lines, want %d", len(recs), len(want))
	}
	for i := range want {
		if strings.Join(recs[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("csv line %d = %q, want %q", i, recs[i], want[i])
		}
	}

	var j bytes.Buffer
	if err := WriteGridJSON(&j, tbl); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Title   string                       `json:"title"`
		Columns []map[string]string          `json:"columns"`
		Rows    []map[string]json.RawMessage `json:"rows"`
		Notes   []string                     `json:"notes"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, j.String())
	}
	if doc.Title != "capacity search" || len(doc.Rows) != 3 || doc.Columns[2]["kind"] != "ms" {
		t.Fatalf("json %+v", doc)
	}
	if got := string(doc.Rows[0]["offered_rps"]); got != "2" {
		t.Errorf("offered_rps = %s", got)
	}
	var compact bytes.Buffer
	json.Compact(&compact, doc.Rows[1]["ttft_p95_ms"])
	if got := compact.String(); !strings.Contains(got, `"lower_bound":60000`) {
		t.Errorf("censored value = %s", got)
	}
	if got := string(doc.Rows[2]["verdict"]); got != "null" {
		t.Errorf("empty text = %s, want null", got)
	}
}

func TestLevelTableRejectsRaggedRows(t *testing.T) {
	tbl := levelFixture()
	tbl.Rows[1] = tbl.Rows[1][:2]
	for name, write := range map[string]func(io.Writer, Grid) error{
		"markdown": WriteGridMarkdown, "csv": WriteGridCSV, "json": WriteGridJSON,
	} {
		var b bytes.Buffer
		err := write(&b, tbl)
		if err == nil || !strings.Contains(err.Error(), "row 1 has 2 cells, want 6") {
			t.Errorf("%s: err = %v", name, err)
		}
		if b.Len() != 0 {
			t.Errorf("%s wrote %d bytes before failing", name, b.Len())
		}
	}
}

func chartFixture() XYChart {
	return XYChart{
		Title: "throughput <vs> level", XLabel: "concurrency", YLabel: "tokens/s", LogX: true,
		Series: []XYSeries{
			{Label: "output tok/s", X: []float64{1, 4, 16, 64}, Y: []float64{50, 190, 700, 720}, Labels: []string{"c1", "c4", "c16", "c64"}},
			{Label: "gap", X: []float64{1, 4, 0, 64}, Y: []float64{10, math.NaN(), 20, 30}, Dash: true},
		},
		HRules: []XYRule{{Label: "budget", Value: 600}},
		VRules: []XYRule{{Label: "knee c16", Value: 16}},
	}
}

func TestXYChartSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteXYChartSVG(&b, chartFixture()); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	// Well-formed XML.
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed: %v\n%s", err, svg)
		}
	}
	for _, want := range []string{"throughput &lt;vs&gt; level", ">knee c16<", ">budget<", ">c16<", "<polyline", `stroke-dasharray="5 4"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if strings.Contains(svg, "<vs>") {
		t.Error("a label was not escaped")
	}
	// Four points of the first series are drawn; the second has no point
	// (dashed) and its x = 0 and NaN values break it into nothing drawable
	// on a log axis except 1 and 64, which are not adjacent.
	if n := strings.Count(svg, "<circle"); n != 4 {
		t.Errorf("%d points drawn, want 4", n)
	}
	if n := strings.Count(svg, "<polyline"); n != 1 {
		t.Errorf("%d lines drawn, want 1 (the gap series has no two adjacent usable points)", n)
	}

	bad := chartFixture()
	bad.Series[0].Y = bad.Series[0].Y[:3]
	if err := WriteXYChartSVG(io.Discard, bad); err == nil || !strings.Contains(err.Error(), "4 x and 3 y values") {
		t.Errorf("mismatched series: err = %v", err)
	}
}

func TestXYScaleTicks(t *testing.T) {
	cases := []struct {
		name   string
		vals   []float64
		log    bool
		lo, hi float64
	}{
		{"linear from zero", []float64{3, 47}, false, 0, 50},
		{"log decades", []float64{1, 64}, true, 1, 100},
		{"log ignores zero", []float64{0, 5, 700}, true, 1, 1000},
		{"empty linear", nil, false, 0, 1},
		{"constant", []float64{5, 5}, false, 0, 6},
		{"top point gets room", []float64{0, 495}, false, 0, 600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newXYScale(tc.vals, tc.log, 0, 100, true)
			if s.lo != tc.lo || s.hi != tc.hi {
				t.Fatalf("range [%v, %v], want [%v, %v]", s.lo, s.hi, tc.lo, tc.hi)
			}
			ticks := s.ticks()
			if len(ticks) < 2 || ticks[0] != s.lo || ticks[len(ticks)-1] > s.hi*1.000001 {
				t.Fatalf("ticks %v for range [%v, %v]", ticks, s.lo, s.hi)
			}
		})
	}
}

func TestWriteLevelHTML(t *testing.T) {
	rep := GridReport{HTMLReport: smallReport(), Levels: []Grid{levelFixture()}, Charts: []XYChart{chartFixture()}}
	var b bytes.Buffer
	if err := WriteGridHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	main := strings.Index(page, "<main>")
	sec := strings.Index(page, `<section class="levels">`)
	if main < 0 || sec < main {
		t.Fatalf("level section not inside <main> (main %d, section %d)", main, sec)
	}
	for _, want := range []string{"<svg", "capacity search", `class="bound num"`, `title="no samples"`, "surge-data"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The rest of the page is what WriteHTML writes.
	var plain bytes.Buffer
	if err := WriteHTML(&plain, smallReport()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Replace(page, page[sec:strings.Index(page, "</section>\n")+len("</section>\n")], "", 1); got != strings.Replace(plain.String(), "<main>", "<main>\n", 1) {
		t.Error("the level section changed the rest of the page")
	}

	bad := rep
	bad.Levels = []Grid{{Title: "empty"}}
	if err := WriteGridHTML(io.Discard, bad); err == nil || !strings.Contains(err.Error(), "no columns") {
		t.Errorf("err = %v", err)
	}
}

// The level report renders in a browser: the SVG charts are in the DOM and
// the page's own charts still draw without errors.
func TestLevelReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	dir := browsertest.ArtifactDir(t)
	page := filepath.Join(dir, "levels.html")
	var b bytes.Buffer
	if err := WriteGridHTML(&b, GridReport{HTMLReport: smallReport(), Levels: []Grid{levelFixture()}, Charts: []XYChart{chartFixture(), chartFixture()}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1400,2000", "--dump-dom", "--screenshot="+filepath.Join(dir, "levels.png"), "file://"+page)
	attrs := browsertest.BodyAttrs(t, dom)
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	if got, want := attrs["data-charts-drawn"], attrs["data-charts-expected"]; got != want {
		t.Errorf("charts drawn %q of %q", got, want)
	}
	if n := bytes.Count(dom, []byte(`class="xychart"`)); n != 2 {
		t.Errorf("%d SVG charts in the DOM, want 2", n)
	}
}

// The SLO verdict columns of a level table are in CSV and JSON only:
// people read the verdicts below the table.
func TestSLOLevelColumnsMachineOnly(t *testing.T) {
	lt := Grid{Title: "t", Columns: append([]Column{{Key: "level", Head: "level", Kind: KindText}}, SLOColumns...)}
	lt.Rows = [][]Cell{append([]Cell{TextCell("c1")}, SLOCells(map[string]VerdictStatus{"ttft_p95": VerdictPass, "goodput_ratio": VerdictFail})...)}
	var md, c, j bytes.Buffer
	if err := WriteGridMarkdown(&md, lt); err != nil {
		t.Fatal(err)
	}
	if err := WriteGridCSV(&c, lt); err != nil {
		t.Fatal(err)
	}
	if err := WriteGridJSON(&j, lt); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "PASS") || strings.Contains(md.String(), "slo_") {
		t.Errorf("markdown shows a machine-only column:\n%s", md.String())
	}
	if want := "level,slo_ttft_p95,slo_e2e_p99,slo_goodput_ratio\nc1,PASS,N/A,FAIL\n"; c.String() != want {
		t.Errorf("csv %q, want %q", c.String(), want)
	}
	if !strings.Contains(j.String(), `"slo_goodput_ratio": "FAIL"`) {
		t.Errorf("json lacks the verdict:\n%s", j.String())
	}
	var h bytes.Buffer
	if err := WriteGridHTML(&h, GridReport{HTMLReport: HTMLReport{Title: "t"}, Levels: []Grid{lt}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.String(), ">PASS<") {
		t.Errorf("html shows a machine-only column")
	}
}

// The terminal form of a level table is plain like surge's other terminal
// tables: a title line, indented metadata and aligned columns, no
// Markdown headings or pipes, units in the heads.
func TestWriteLevelText(t *testing.T) {
	lt := Grid{Title: "Sessions, per turn", Meta: []KV{{Key: "sessions", Value: "3 started"}},
		Columns: []Column{{Key: "turn", Head: "turn", Kind: KindText}, {Key: "ttft_ms", Head: "TTFT p95", Kind: KindMs}, {Key: "g", Head: "goodput", Kind: KindRatio}},
		Rows:    [][]Cell{{TextCell("1"), NumCell(Val(105)), NumCell(Val(1))}, {TextCell("2"), NumCell(Unavailable("no samples")), NumCell(Val(0.5))}}}
	var b bytes.Buffer
	if err := WriteGridText(&b, lt); err != nil {
		t.Fatal(err)
	}
	want := `Sessions, per turn
  sessions: 3 started
  turn  TTFT p95 ms  goodput %
  1             105     100.00
  2             n/a      50.00
  n/a: 2: TTFT p95 ms: no samples
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A note names its row by the first text cell, and by the text cells
// after it where the first is shared (a phase × latency table), so that
// "main: p99: no samples" never leaves the latency unsaid.
func TestGridNoteLabelsUnique(t *testing.T) {
	g := Grid{Columns: []Column{{Key: "phase", Head: "phase", Kind: KindText}, {Key: "latency", Head: "latency", Kind: KindText}, {Key: "p99", Head: "p99", Kind: KindNumber}},
		Rows: [][]Cell{
			{TextCell("main"), TextCell("TTFT"), NumCell(Val(12))},
			{TextCell("main"), TextCell("TPOT"), NumCell(Unavailable("no samples"))},
		}}
	var b bytes.Buffer
	if err := WriteGridText(&b, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "n/a: main · TPOT: p99: no samples") {
		t.Errorf("note does not name the latency:\n%s", b.String())
	}
	// Unique first cells stay short.
	g.Rows[1][0] = TextCell("burst")
	b.Reset()
	if err := WriteGridText(&b, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "n/a: burst: p99: no samples") {
		t.Errorf("a unique row name grew:\n%s", b.String())
	}
}
