package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/report/browsertest"
)

// TestReportDrawsInChromium opens the fixture report in headless Chromium:
// every chart must be drawn by uPlot with no JavaScript or console error,
// each run must have the summary block and the new charts (arrivals,
// completed/s with μ, backlog), every chart's plot area must hold ink, and
// screenshots are kept for people to look at: the whole page, and the 5×
// run alone (SURGE_ARTIFACTS=/tmp/a go test ./internal/report/ -run
// Chromium keeps them in /tmp/a). README's picture comes from a real run:
// TestBurstReportInChromium in internal/experiment/burst.
func TestReportDrawsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	dir := browsertest.ArtifactDir(t)
	page := filepath.Join(dir, "report.html")
	rep := burstReport()
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := buildChartData(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, r := range d.Runs {
		want += len(r.Charts)
	}

	shot := filepath.Join(dir, "report.png")
	dom := browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1400,6400",
		"--dump-dom", "--screenshot="+shot, "file://"+page)
	attrs := browsertest.BodyAttrs(t, dom)
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	if got := attrs["data-charts-expected"]; got != strconv.Itoa(want) {
		t.Errorf("data-charts-expected = %q, want %d", got, want)
	}
	if got := attrs["data-charts-drawn"]; got != strconv.Itoa(want) {
		t.Errorf("data-charts-drawn = %q, want %d", got, want)
	}
	if b := attrs["data-charts-blank"]; b != "" {
		t.Errorf("charts whose series drew nothing: %s", b)
	}
	if n := bytes.Count(dom, []byte("<canvas")); n < want {
		t.Errorf("%d canvases, want at least %d", n, want)
	}
	if n := bytes.Count(dom, []byte(`class="u-legend`)); n < want {
		t.Errorf("%d uPlot legends, want at least %d", n, want)
	}
	if n := bytes.Count(dom, []byte(`<div class="summary">`)); n != len(rep.Runs) {
		t.Errorf("%d summary blocks, want %d (one per run)", n, len(rep.Runs))
	}
	for _, s := range []string{`<span class="badge LATE"`, `<span class="mode">backlogged</span>`, `<th>burst</th>`, `class="marker-list"`} {
		if !bytes.Contains(dom, []byte(s)) {
			t.Errorf("the page lacks %s", s)
		}
	}
	ids := map[string]int{}
	for _, c := range browsertest.ChartDivs(dom) {
		ids[c["data-chart-id"]]++
		ink, err := strconv.Atoi(c["data-ink"])
		if err != nil || ink < 5 {
			t.Errorf("chart %s (%s): data-ink = %q: the plot area is (nearly) blank", c["id"], c["data-chart-id"], c["data-ink"])
		}
		if c["data-points"] == "" || c["data-points"] == "0" {
			t.Errorf("chart %s (%s) drew no points", c["id"], c["data-chart-id"])
		}
	}
	for _, id := range []string{"load", "completed", "ttft", "completion", "backlog", "waiting"} {
		if ids[id] != len(rep.Runs) {
			t.Errorf("%d %q charts drawn, want %d (one per run)", ids[id], id, len(rep.Runs))
		}
	}
	browsertest.CheckShot(t, shot)

	// The 5× run alone, for README: summary, diagnosis, milestones, charts.
	one := HTMLReport{Title: rep.Title, Runs: rep.Runs[1:2]}
	b.Reset()
	if err := WriteHTML(&b, one); err != nil {
		t.Fatal(err)
	}
	page5 := filepath.Join(dir, "report-5x.html")
	if err := os.WriteFile(page5, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot5 := filepath.Join(dir, "report-5x.png")
	attrs = browsertest.BodyAttrs(t, browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1300,1560",
		"--dump-dom", "--screenshot="+shot5, "file://"+page5))
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors (5× page): %s", e)
	}
	browsertest.CheckShot(t, shot5)
	t.Logf("report and screenshots in %s", dir)
}

// TestChromiumCheckCatchesErrors shows that the check above can fail: a page
// whose chart library throws reports the error and draws nothing.
func TestChromiumCheckCatchesErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, smallReport()); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(b.String(), uplotJS, `throw new Error("uplot-broken")`, 1)
	if broken == b.String() {
		t.Fatal("uPlot not found in the page")
	}
	page := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(page, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	attrs := browsertest.BodyAttrs(t, browsertest.Run(t, "--virtual-time-budget=3000", "--dump-dom", "file://"+page))
	if e := attrs["data-js-errors"]; !strings.Contains(e, "uplot-broken") || !strings.Contains(e, "did not load") {
		t.Errorf("data-js-errors = %q, want the thrown error and the missing library", e)
	}
	if got := attrs["data-charts-drawn"]; got != "0" {
		t.Errorf("data-charts-drawn = %q, want 0", got)
	}
}

// TestChromiumCheckCatchesBlankCharts shows that the "charts drew" check
// can fail: in a run whose every series is NaN, each chart is drawn (bands,
// grid, deadlines, milestones) but its series put nothing on the canvas, and
// in a run where only the completions are NaN, that chart alone is blank.
func TestChromiumCheckCatchesBlankCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	rep := smallReport()
	full := rep.Runs[0]
	nans := func(s Series) Series {
		if s == nil {
			return nil
		}
		out := make(Series, len(s))
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	empty := full
	empty.Name = "every series NaN"
	for _, s := range []*Series{&empty.Offered, &empty.Sent, &empty.Goodput, &empty.Completed, &empty.InFlight,
		&empty.EngineWaiting, &empty.EngineRunning, &empty.OldestWaitingAge, &empty.PredictedBacklog, &empty.MeasuredBacklog,
		&empty.TTFT.P50, &empty.TTFT.P95, &empty.TTFT.P99, &empty.Completion.P50, &empty.Completion.P95, &empty.Completion.P99} {
		*s = nans(*s)
	}
	oneBlank := full
	oneBlank.Name = "completions NaN"
	oneBlank.Completed = nans(full.Completed)
	rep.Runs = []RunCharts{empty, oneBlank}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "blank.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1400,4000", "--dump-dom", "file://"+page)
	attrs := browsertest.BodyAttrs(t, dom)
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	blank := map[string]bool{}
	for _, f := range strings.Fields(attrs["data-charts-blank"]) {
		blank[f] = true
	}
	charts := browsertest.ChartDivs(dom)
	if len(charts) == 0 {
		t.Fatal("no charts")
	}
	for _, c := range charts {
		id := c["id"] + ":" + c["data-chart-id"]
		ink, err := strconv.Atoi(c["data-ink"])
		if err != nil {
			t.Fatalf("chart %s: data-ink = %q", id, c["data-ink"])
		}
		wantBlank := c["data-run"] == "0" || c["data-chart-id"] == "completed"
		if wantBlank {
			if ink >= 5 || c["data-points"] != "0" || !blank[id] {
				t.Errorf("chart %s has no values but data-ink = %d, data-points = %s, in data-charts-blank: %v", id, ink, c["data-points"], blank[id])
			}
			continue
		}
		if ink < 5 || c["data-points"] == "0" || blank[id] {
			t.Errorf("chart %s has values but data-ink = %d, data-points = %s, in data-charts-blank: %v", id, ink, c["data-points"], blank[id])
		}
	}
}

// TestLegendLatestAndHoverCounts checks the legends in a browser: away from
// the chart they show each series' latest value (not "—"); with the cursor
// on a window they show its value and the window's sample count.
func TestLegendLatestAndHoverCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	rep := smallReport()
	rep.Runs = rep.Runs[:1]
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	// After drawing, note the first chart's legend, move the cursor onto
	// the third window (t = 10 s) and note it again.
	probe := `<script>window.addEventListener("load", function () {
  function legend(p) { return Array.prototype.map.call(p.root.querySelectorAll(".u-legend .u-value"), function (e) { return e.textContent; }).join("|"); }
  var p = window.surgePlots[0].plot;
  document.body.setAttribute("data-legend-idle", legend(p));
  p.setCursor({ left: p.valToPos(10, "x"), top: 10 });
  document.body.setAttribute("data-legend-hover", legend(p));
});</script></body>`
	page := filepath.Join(t.TempDir(), "legend.html")
	if err := os.WriteFile(page, []byte(strings.Replace(b.String(), "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	attrs := browsertest.BodyAttrs(t, browsertest.Run(t, "--virtual-time-budget=5000", "--dump-dom", "file://"+page))
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	// The arrivals chart: time, goodput, offered, sent.
	if got, want := attrs["data-legend-idle"], "latest (25 s)|8.00 req/s|8.00 req/s|8.00 req/s"; got != want {
		t.Errorf("idle legend %q, want %q", got, want)
	}
	if got, want := attrs["data-legend-hover"], "10 s · 80 requests|6.00 req/s|16.00 req/s|16.00 req/s"; got != want {
		t.Errorf("legend on the 10 s window %q, want %q", got, want)
	}
}

// TestLegendLatestSkipsPartialTail: with a 0.135 s last window of no
// samples, the legends' latest is the last full window (56 s), not 0.
func TestLegendLatestSkipsPartialTail(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	rc := RunCharts{
		Name: "2×", T: []float64{46, 51, 56, 61},
		Offered: Series{4, 3.2, 4, 0}, Sent: Series{4, 3.2, 4, 0}, Goodput: Series{4, 3.2, 3.9, 0},
		Counts: Series{20, 16, 20, 0}, Phases: []Phase{{"recovery", 46, 61.135}},
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, HTMLReport{Runs: []RunCharts{rc}}); err != nil {
		t.Fatal(err)
	}
	probe := `<script>window.addEventListener("load", function () {
  var p = window.surgePlots[0].plot;
  document.body.setAttribute("data-legend-idle", Array.prototype.map.call(p.root.querySelectorAll(".u-legend .u-value"), function (e) { return e.textContent; }).join("|"));
});</script></body>`
	page := filepath.Join(t.TempDir(), "tail.html")
	if err := os.WriteFile(page, []byte(strings.Replace(b.String(), "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	attrs := browsertest.BodyAttrs(t, browsertest.Run(t, "--virtual-time-budget=5000", "--dump-dom", "file://"+page))
	if got, want := attrs["data-legend-idle"], "latest (56 s)|3.90 req/s|4.00 req/s|4.00 req/s"; got != want {
		t.Errorf("idle legend %q, want %q", got, want)
	}
}

// TestMarkerTagsNeverOverlap draws twelve milestones within three seconds
// of each other: their numbered tags are stacked in rows above the plot
// area (none reaches into it, so none hides data), and no two rectangles
// intersect; every phase band gets its name.
func TestMarkerTagsNeverOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	rep := smallReport()
	rep.Runs = rep.Runs[:1]
	rc := &rep.Runs[0]
	for i := range 12 {
		rc.Markers = append(rc.Markers, Marker{Kind: MarkerScaling, T: 12 + float64(i)*0.25, Label: fmt.Sprintf("milestone %d", i)})
	}
	// Three scaling events, two overlapping: strips on two rows.
	rc.Bands = []Band{{Label: "r1", Start: 5, End: 14}, {Label: "r2", Start: 8, End: 20}, {Label: "r3", Start: 15, End: 22}}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "tags.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1400,3000", "--dump-dom", "file://"+page)
	if e := browsertest.BodyAttrs(t, dom)["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	strips := regexp.MustCompile(`data-scaling-strips="(\d+)"`).FindAllSubmatch(dom, -1)
	if len(strips) == 0 {
		t.Error("no chart reports its scaling strips")
	}
	for _, m := range strips {
		if string(m[1]) != "3" {
			t.Errorf("a chart drew %s scaling strips, want 3", m[1])
		}
	}
	charts := regexp.MustCompile(`data-band-labels="([^"]*)" data-tags="([^"]*)" data-tags-skipped="(\d+)" data-plot-top="(\d+)"`).FindAllSubmatch(dom, -1)
	if len(charts) == 0 {
		t.Fatal("no chart reports its tags")
	}
	for ci, m := range charts {
		// Every band gets its name (above the plot area, where no line
		// crosses it), even the narrow ones.
		if got, want := string(m[1]), "baseline,burst,recovery,extended"; got != want {
			t.Errorf("chart %d: band labels %q, want %q", ci, got, want)
		}
		plotTop := mustAtoi(t, string(m[4]))
		var rects [][4]int
		for _, f := range strings.Fields(string(m[2])) {
			var r [4]int
			if _, err := fmt.Sscanf(f, "%d,%d,%d,%d", &r[0], &r[1], &r[2], &r[3]); err != nil {
				t.Fatalf("tag %q: %v", f, err)
			}
			rects = append(rects, r)
			if r[1]+r[3] > plotTop {
				t.Errorf("chart %d: tag %v reaches into the plot area (top %d)", ci, r, plotTop)
			}
		}
		inRange := len(rc.Markers) - 1 // the fixture's "scale_up" at 40 s is beyond the charted 35 s
		if len(rects)+mustAtoi(t, string(m[3])) != inRange {
			t.Errorf("chart %d: %d tags placed + %s skipped, want %d markers", ci, len(rects), m[3], inRange)
		}
		if len(rects) < 12 {
			t.Errorf("chart %d: only %d of %d tags found room", ci, len(rects), len(rc.Markers))
		}
		for i, a := range rects {
			for _, c := range rects[i+1:] {
				if a[0] < c[0]+c[2] && c[0] < a[0]+a[2] && a[1] < c[1]+c[3] && c[1] < a[1]+a[3] {
					t.Errorf("chart %d: tags %v and %v overlap", ci, a, c)
				}
			}
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
