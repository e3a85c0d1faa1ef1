package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/golden"
)

func TestChartDataGolden(t *testing.T) {
	d, err := buildChartData(smallReport())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "html/chartdata.json", append(b, '\n'))
}

// TestHTMLDataBlockIsTheChartData checks that the page carries exactly the
// golden-tested data, parseable as JSON.
func TestHTMLDataBlockIsTheChartData(t *testing.T) {
	page := renderHTML(t, smallReport())
	m := regexp.MustCompile(`(?s)<script type="application/json" id="surge-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data block")
	}
	var got, want any
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("data block is not JSON: %v", err)
	}
	d, err := buildChartData(smallReport())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("data block differs from the chart data:\n%s\n%s", gb, wb)
	}
}

func renderHTML(t *testing.T, r HTMLReport) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHTMLLoadsNothingFromTheNetwork checks that no src, href, url(),
// @import, srcset or action points off the page, and that the only http(s)
// text at all is uPlot's licence banner comment.
func TestHTMLLoadsNothingFromTheNetwork(t *testing.T) {
	page := renderHTML(t, burstReport())
	fetching := regexp.MustCompile(`(?i)(\b(src|href|srcset|action|poster|data)\s*=\s*["']?\s*(https?:)?//)|url\(\s*["']?\s*(https?:)?//|@import|<link\b|<iframe\b|<img\b|\bfetch\(|XMLHttpRequest|\bimport\(`)
	if m := fetching.FindAllString(page, -1); len(m) > 0 {
		t.Errorf("page references the network: %q", m)
	}
	urls := regexp.MustCompile(`(?i)https?://[^\s"'<>)]*`).FindAllStringIndex(page, -1)
	for _, u := range urls {
		ctx := page[max(0, u[0]-4):u[1]]
		if ctx != "/*! https://github.com/leeoniya/uPlot" {
			t.Errorf("unexpected URL in page: %q", ctx)
		}
	}
	if len(urls) > 1 {
		t.Errorf("%d URLs in page, want only uPlot's banner", len(urls))
	}
	if !strings.Contains(page, uplotJS) || !strings.Contains(page, uplotCSS) {
		t.Error("uPlot is not inlined unchanged")
	}
}

// TestHTMLVerdictsCompact: a table's verdicts are a grid of one row per
// scope and one column per SLO clause, not a flat list; collapsed when every
// run's summary repeats them by phase, open (with the observed values shown)
// otherwise.
func TestHTMLVerdictsCompact(t *testing.T) {
	rep := burstReport()
	page := renderHTML(t, rep)
	if !strings.Contains(page, `<details class="verdicts">`) {
		t.Errorf("verdicts not collapsed although every run has a summary")
	}
	grid := page[strings.Index(page, `<details class="verdicts"`):]
	grid = grid[:strings.Index(grid, "</details>")]
	if got := strings.Count(grid, "<tr><td>"); got != 3 {
		t.Errorf("%d verdict rows, want 3 (2×, 5×, 10×)", got)
	}
	if got := strings.Count(grid, "<th>"); got != 5 {
		t.Errorf("%d verdict heads, want 5 (scope and 4 clauses)", got)
	}
	if strings.Contains(page, `<ul class="verdicts">`) {
		t.Error("the flat verdict list is still there")
	}
	for i := range rep.Runs {
		rep.Runs[i].Summary = nil
	}
	page = renderHTML(t, rep)
	if !strings.Contains(page, `<details class="verdicts" open>`) || !strings.Contains(page, `<span class="detail">observed 70.14%</span>`) {
		t.Errorf("without run summaries the verdicts should be open with their details")
	}
}

func TestHTMLContent(t *testing.T) {
	page := renderHTML(t, burstReport())
	for _, want := range []string{
		`<h1>surge burst: llama-3.1-8b-instruct on vllm-0.6 1×L4</h1>`,
		`<dt>hardware</dt><dd><span class="na">n/a</span></dd>`, // empty meta is n/a
		`<td class="bound num" title="` + ReasonCensoredP99 + `">&gt; 60s</td>`,
		`<td class="na num" title="` + ReasonNoEngineTelemetry + `">n/a</td>`,
		`did not recover within 300s`,
		`<td class="bad" title="interrupted (SIGINT) at 2m41s, during the burst">PARTIAL</td>`,
		`<span class="badge FAIL" title="observed 70.14%">FAIL</span>`,
		NoteEngineUnavailable,
		`predicted recovery at 560s is outside the charted time (0s to 260s)`,
		`id="chart-2-3"`, // 10× run: the waiting chart exists, without engine series
		`<h3>Load (requests/s)</h3>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="chart-3-0"`) {
		t.Error("a chart for a run that does not exist")
	}
}

// TestHTMLEscaping checks that names cannot break out of the page or the
// data block.
func TestHTMLEscaping(t *testing.T) {
	r := smallReport()
	evil := `</script><script>alert(1)</script>`
	r.Title = evil
	r.Runs[0].Name = evil
	r.Runs[0].Phases[0].Name = evil
	r.Meta = []KV{{Key: evil, Value: evil}}
	page := renderHTML(t, r)
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("unescaped markup from input in the page")
	}
	if n := strings.Count(page, "</script>"); n != 3 {
		t.Errorf("%d </script> tags, want 3 (data, report.js, uPlot)", n)
	}
}

func TestHTMLValidation(t *testing.T) {
	ok := func() RunCharts { return smallReport().Runs[0] }
	tests := []struct {
		name string
		edit func(*RunCharts)
		want string
	}{
		{"short series", func(r *RunCharts) { r.Sent = r.Sent[:4] }, `report: run "burst 2×": series "sent" has 4 points, want 6 (one per time window)`},
		{"long latency", func(r *RunCharts) { r.TTFT.P99 = append(r.TTFT.P99, 1) }, `report: run "burst 2×": series "TTFT p99" has 7 points, want 6 (one per time window)`},
		{"engine series", func(r *RunCharts) { r.EngineWaiting = Series{} }, `report: run "burst 2×": series "engine waiting" has 0 points, want 6 (one per time window)`},
		{"time not ascending", func(r *RunCharts) { r.T[3] = 10 }, `report: run "burst 2×": times not ascending at 3: 10 after 10`},
		{"time NaN", func(r *RunCharts) { r.T[0] = math.NaN() }, `report: run "burst 2×": time 0 is NaN`},
		{"phase reversed", func(r *RunCharts) { r.Phases[1].End = 5 }, `report: run "burst 2×": phase "burst": bad interval [10, 5]`},
		{"phase infinite", func(r *RunCharts) { r.Phases[0].End = math.Inf(1) }, `report: run "burst 2×": phase "baseline": bad interval [0, +Inf]`},
		{"marker NaN", func(r *RunCharts) { r.Markers[0].T = math.NaN() }, `report: run "burst 2×": marker "burst_end": time is NaN`},
		{"unnamed run", func(r *RunCharts) { r.Name = ""; r.Offered = nil; r.Goodput = Series{1} }, `report: run "run 1": series "goodput" has 1 points, want 6 (one per time window)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := ok()
			rc.T = append([]float64(nil), rc.T...)
			tc.edit(&rc)
			var b bytes.Buffer
			err := WriteHTML(&b, HTMLReport{Runs: []RunCharts{rc}})
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v\nwant    %s", err, tc.want)
			}
			if b.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", b.Len())
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		if err := WriteHTML(&bytes.Buffer{}, HTMLReport{Runs: []RunCharts{ok(), {Name: "empty"}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestVendoredAssetsMatchREADME ties the embedded uPlot files to the
// version and checksums recorded beside them.
func TestVendoredAssetsMatchREADME(t *testing.T) {
	readme, err := os.ReadFile("assets/uplot/README.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"uPlot.iife.min.js": uplotJS, "uPlot.min.css": uplotCSS}
	lic, err := os.ReadFile("assets/uplot/LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	files["LICENSE"] = string(lic)
	for name, content := range files {
		sum := sha256.Sum256([]byte(content))
		line := "| `" + name + "` | `" + hex.EncodeToString(sum[:]) + "` |"
		if !strings.Contains(string(readme), line) {
			t.Errorf("README lacks %s", line)
		}
	}
	if !strings.HasPrefix(uplotJS, "/*! https://github.com/leeoniya/uPlot (v1.6.32) */") {
		t.Error("embedded uPlot is not v1.6.32")
	}
	if !strings.Contains(string(readme), "| version | 1.6.32 |") {
		t.Error("README does not record version 1.6.32")
	}
}

// The engine's own samples get a chart on their own time axis.
func TestEngineChartAtScrapeResolution(t *testing.T) {
	rc := RunCharts{T: []float64{0, 10}, InFlight: Series{1, 2}, EngineWaiting: Series{4, 2}, EngineRunning: Series{8, 8},
		EngineT: Series{0, 2.5, 5, 7.5, 10}, EngineWaitingSamples: Series{2, 3, 4, 3, 2}, EngineRunningSamples: Series{8, 8, 8, 8, 8}}
	run, err := buildRun(&rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range run.Charts {
		if c.ID == "engine" {
			if len(c.T) != 5 || len(c.Series) != 2 || c.Series[1].Values[2] != 4 {
				t.Fatalf("engine chart %+v", c)
			}
			return
		}
	}
	t.Fatalf("no engine chart in %+v", run.Charts)
}

// The summary block shows μ with its source, predicted against measured
// backlog and recovery, LATE for a late recovery, the verdicts as a grid of
// clauses by phase (— where a clause was not judged), and the diagnosis
// with each hint's evidence and check.
func TestHTMLRunSummary(t *testing.T) {
	rc := smallReport().Runs[0]
	rc.Summary = &RunSummary{
		Mu: 9.1416, MuSource: "simulated engine", PredictedPeakBacklog: 651.5, MeasuredPeakBacklog: 686,
		MeasuredBacklogSource: "engine waiting", PredictedRecoveryS: 126.7, MeasuredRecoveryS: 190,
		RecoveryLate: true, RecoveryNote: "recovery was extended",
		Verdicts: []Verdict{
			{Scope: "overall", Check: "p95 TTFT ≤ 2s", Status: VerdictFail, Detail: "> 60s"},
			{Scope: "baseline", Check: "p95 TTFT ≤ 2s", Status: VerdictPass, Detail: "343ms"},
			{Scope: "burst", Check: "goodput ≥ 99% of offered", Status: VerdictFail, Detail: "3.1%"},
		},
		Diagnosis: &Diagnosis{Scope: "5×", Mode: "backlogged", Summary: "TTFT p95 rose 343ms → 60s in the burst",
			Hints: []Hint{{Hypothesis: "requests wait outside the engine", Evidence: "engine waiting stayed 0 <b>", Check: "the gateway's queue"}}},
	}
	page := renderHTML(t, HTMLReport{Runs: []RunCharts{rc}})
	for _, want := range []string{
		`<dt>capacity μ</dt><dd>9.14 req/s <span class="detail">(simulated engine)</span></dd>`,
		`<dd>predicted 652, measured 686 requests <span class="detail">(measured: engine waiting)</span></dd>`,
		`<dd>predicted 126.7 s, measured 190.0 s <span class="badge LATE"`,
		`<th>SLO clause</th><th>baseline</th><th>burst</th><th>overall</th>`,
		`<tr><td>p95 TTFT ≤ 2s</td><td><span class="badge PASS" title="343ms">PASS</span> <span class="detail">343ms</span></td><td><span class="na">—</span></td><td><span class="badge FAIL"`,
		`<tr><td>goodput ≥ 99% of offered</td><td><span class="na">—</span></td><td><span class="badge FAIL"`,
		`<span class="mode">backlogged</span> TTFT p95 rose 343ms → 60s in the burst`,
		`<b>Hypothesis:</b> requests wait outside the engine`,
		`<b>evidence:</b> engine waiting stayed 0 &lt;b&gt;`,
		`<b>check:</b> the gateway&#39;s queue`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	rc.Summary = &RunSummary{Mu: math.NaN(), MuSource: "μ unknown: pass --capacity-rps", PredictedPeakBacklog: math.NaN(), MeasuredPeakBacklog: 3, PredictedRecoveryS: math.NaN(), MeasuredRecoveryS: math.NaN()}
	page = renderHTML(t, HTMLReport{Runs: []RunCharts{rc}})
	for _, want := range []string{`<dd>n/a <span class="detail">(μ unknown: pass --capacity-rps)</span></dd>`, `predicted n/a, measured 3 requests`, `predicted n/a, measured n/a`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, `class="badge LATE"`) || strings.Contains(page, `<div class="diagnosis">`) || strings.Contains(page, `<table class="verdict-grid">`) {
		t.Error("a summary without late recovery, diagnosis or verdicts shows them")
	}
	rc.Summary = nil
	if page := renderHTML(t, HTMLReport{Runs: []RunCharts{rc}}); strings.Contains(page, `<div class="summary">`) {
		t.Error("a run without a summary shows the block")
	}
}

// The new charts: completed/s with the μ line, the backlog chart on the
// union of both time axes, scaling milestones numbered in time order.
func TestChartsBacklogMuAndMilestones(t *testing.T) {
	rc := smallReport().Runs[0]
	run, err := buildRun(&rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]chart{}
	for _, c := range run.Charts {
		byID[c.ID] = c
	}
	if c := byID["completed"]; len(c.Rules) != 1 || c.Rules[0].Value != 10 || c.Rules[0].Label != "μ 10.00 req/s" {
		t.Errorf("completed chart rules = %+v, want the μ line at 10", c.Rules)
	}
	b, ok := byID["backlog"]
	if !ok {
		t.Fatal("no backlog chart")
	}
	if want := (Series{0, 10, 15, 20, 27.5, 30}); !slices.Equal(b.T, want) {
		t.Errorf("backlog t = %v, want the union %v", b.T, want)
	}
	if len(b.Series) != 2 || b.Series[0].Label != "measured: engine waiting" || !b.Series[1].Span {
		t.Fatalf("backlog series %+v", b.Series)
	}
	if got := b.Series[1].Values; !math.IsNaN(got[0]) || got[2] != 30 || got[4] != 0 {
		t.Errorf("predicted on the union axis = %v", got)
	}
	var labels []string
	for i, m := range run.Markers {
		if m.N != i+1 || i > 0 && m.T < run.Markers[i-1].T {
			t.Errorf("marker %d: n %d at %v: not numbered in time order", i, m.N, m.T)
		}
		labels = append(labels, m.Label)
	}
	if labels[0] != "scale trigger (replica 1)" {
		t.Errorf("first marker %q, want the scale trigger at 12 s", labels[0])
	}
	if run.XMin != 0 {
		t.Errorf("x starts at %v, want 0", run.XMin)
	}
	if c := byID["ttft"]; !c.Step || c.CountLabel != "samples" || byID["load"].Counts[2] != 80 {
		t.Errorf("windows not drawn as steps with counts: ttft %+v", c)
	}
}

// Long series are downsampled for drawing: peaks kept for latencies and
// queues, rates averaged, counts summed; short ones are drawn as they are.
func TestDownsampledForDrawing(t *testing.T) {
	n := 3*maxDrawnPoints + 7
	rc := RunCharts{}
	for i := range n {
		rc.T = append(rc.T, float64(i))
		rc.Offered = append(rc.Offered, float64(i%3))
		rc.Counts = append(rc.Counts, 1)
		rc.TTFT.P99 = append(rc.TTFT.P99, 100)
		rc.InFlight = append(rc.InFlight, 1)
	}
	rc.TTFT.P99[1000] = 9000
	run, err := buildRun(&rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.T) > maxDrawnPoints || run.T[1] != 4 {
		t.Fatalf("%d drawn windows (t[1] = %v), want at most %d in runs of 4", len(run.T), run.T[1], maxDrawnPoints)
	}
	for _, c := range run.Charts {
		switch c.ID {
		case "load":
			if c.Series[0].Values[0] != 0.75 || c.Counts[0] != 4 || !strings.Contains(c.Note, "each point is 4 windows") {
				t.Errorf("load: offered %v, counts %v, note %q; want the mean 0.75, the sum 4 and a note", c.Series[0].Values[0], c.Counts[0], c.Note)
			}
		case "ttft":
			if c.Series[0].Values[250] != 9000 {
				t.Errorf("ttft p99 of the run holding the spike = %v, want its peak 9000", c.Series[0].Values[250])
			}
		}
	}
	short := smallReport().Runs[0]
	r2, err := buildRun(&short, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.T) != len(short.T) {
		t.Errorf("a short run drawn with %d of its %d windows", len(r2.T), len(short.T))
	}
}

// millionRecordReport is a burst report as 1 M records make it: three runs
// of 333,334 records each at 10 req/s (9.3 h each), 10 s windows, the
// engine scraped every second and the client timeline every second, with
// a scaling milestone every 10 minutes.
func millionRecordReport() HTMLReport {
	rep := burstReport()
	for i := range rep.Runs {
		rc := &rep.Runs[i]
		const secs = 333_334 / 10
		*rc = RunCharts{Name: rc.Name, Summary: rc.Summary, TTFTDeadlineMs: 2000, CompletionDeadlineMs: 12000,
			Phases: []Phase{{"warmup", 0, 600}, {"baseline", 600, 10_000}, {"burst", 10_000, 10_600}, {"recovery", 10_600, secs}}}
		for t := 0.0; t < secs; t += 10 {
			w := 1 + 0.1*math.Sin(t/37)
			rc.T = append(rc.T, t)
			for _, s := range []*Series{&rc.Offered, &rc.Sent, &rc.Completed, &rc.Goodput} {
				*s = append(*s, 10*w+0.0123456789)
			}
			rc.Counts = append(rc.Counts, 100)
			for _, l := range []*LatencySeries{&rc.TTFT, &rc.Completion} {
				l.P50, l.P95, l.P99 = append(l.P50, 180.123*w), append(l.P95, 310.456*w), append(l.P99, 420.789*w)
				l.N = append(l.N, 100)
			}
			rc.InFlight = append(rc.InFlight, 27.3*w)
			rc.EngineWaiting, rc.EngineRunning = append(rc.EngineWaiting, 3.1*w), append(rc.EngineRunning, 24.2*w)
			rc.OldestWaitingAge = append(rc.OldestWaitingAge, 0.2345*w)
		}
		for t := 0.0; t < secs; t++ {
			w := 1 + 0.1*math.Sin(t/37)
			rc.EngineT = append(rc.EngineT, t+0.000123)
			rc.EngineWaitingSamples = append(rc.EngineWaitingSamples, math.Round(3*w))
			rc.EngineRunningSamples = append(rc.EngineRunningSamples, math.Round(24*w))
			rc.MeasuredBacklogT = append(rc.MeasuredBacklogT, t+0.000123)
			rc.MeasuredBacklog = append(rc.MeasuredBacklog, math.Round(27*w))
			if t >= 10_000 && t < 12_000 {
				rc.PredictedBacklogT = append(rc.PredictedBacklogT, t)
				rc.PredictedBacklog = append(rc.PredictedBacklog, math.Max(0, 600-math.Abs(t-10_600)))
			}
		}
		for t := 600.0; t < secs; t += 600 {
			rc.Markers = append(rc.Markers, Marker{Kind: MarkerScaling, T: t, Label: "scale trigger (replica 1)"})
		}
	}
	return rep
}

// A report of 1 M records stays under 5 MB: the drawn series are
// downsampled (the statistics in the tables are not touched).
func TestMillionRecordReportSize(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, millionRecordReport()); err != nil {
		t.Fatal(err)
	}
	t.Logf("report.html of 1 M records: %d bytes", b.Len())
	if b.Len() > 5_000_000 {
		t.Errorf("report.html of 1 M records is %d bytes, want under 5 MB", b.Len())
	}
	d, err := buildChartData(millionRecordReport())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Runs {
		for _, c := range r.Charts {
			n := len(r.T)
			if c.T != nil {
				n = len(c.T)
			}
			if n > 2*maxDrawnPoints { // the backlog chart joins two axes of maxDrawnPoints each
				t.Errorf("%s, %s: %d points drawn", r.Name, c.ID, n)
			}
		}
	}
}

// TestPartialTailWindowMerged: a last window of 0.135 s (the run's end cut
// it; no samples) is not drawn as a drop to zero: its point becomes the end
// of the window before, with that window's values and no count, so that the
// legends' "latest" (the last point before the end) is the last full window.
// A last window of ordinary length is drawn as it is.
func TestPartialTailWindowMerged(t *testing.T) {
	nan := math.NaN()
	rc := RunCharts{
		Name:       "2×",
		T:          []float64{46, 51, 56, 61},
		Offered:    Series{4, 3.2, 4, 0},
		Sent:       Series{4, 3.2, 4, 0},
		Goodput:    Series{4, 3.2, 3.9, 0},
		Completed:  Series{4, 3.4, 4.1, 0},
		Counts:     Series{20, 16, 20, 0},
		InFlight:   Series{5, 4, 6, 0},
		TTFT:       LatencySeries{P50: Series{300, 310, 320, nan}, P95: Series{600, 610, 620, nan}, P99: Series{700, 710, 720, nan}, N: Series{20, 16, 20, 0}},
		Completion: LatencySeries{P50: Series{3000, 3100, 3200, nan}, P95: Series{6000, 6100, 6200, nan}, P99: Series{7000, 7100, 7200, nan}, N: Series{20, 16, 20, 0}},
		Phases:     []Phase{{"recovery", 46, 61.135}},
	}
	d, err := buildChartData(HTMLReport{Runs: []RunCharts{rc}})
	if err != nil {
		t.Fatal(err)
	}
	run := d.Runs[0]
	if got := run.T[len(run.T)-1]; got != 61.135 || run.XMax != 61.135 {
		t.Errorf("last drawn time %v, x max %v: want the run's end 61.135", got, run.XMax)
	}
	for _, c := range run.Charts {
		if c.T != nil {
			continue
		}
		for _, s := range c.Series {
			if n := len(s.Values); s.Values[n-1] != s.Values[n-2] {
				t.Errorf("%s / %s: tail %v, want the last full window's %v", c.ID, s.Label, s.Values[n-1], s.Values[n-2])
			}
		}
		if c.Counts != nil && !math.IsNaN(c.Counts[len(c.Counts)-1]) {
			t.Errorf("%s: the merged tail has a count %v, want none", c.ID, c.Counts[len(c.Counts)-1])
		}
	}
	if rc.Sent[3] != 0 || rc.T[3] != 61 {
		t.Error("the report's own series were changed")
	}

	rc.Phases[0].End = 64 // a 3 s tail of a 5 s window: drawn as it is
	d, err = buildChartData(HTMLReport{Runs: []RunCharts{rc}})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Runs[0].T[3]; got != 61 {
		t.Errorf("a 3 s tail moved to %v", got)
	}
	if got := d.Runs[0].Charts[0].Series[2].Values[3]; got != 0 {
		t.Errorf("a 3 s tail's sent = %v, want its own 0", got)
	}
}

// TestHTMLSelfAccuracy: a run's self-accuracy section shows its verdict,
// reasons, advice, observations and per-phase rates, open unless the
// client kept up; a run without one shows none.
func TestHTMLSelfAccuracy(t *testing.T) {
	self := &SelfSection{Badge: "AT-RISK", Title: "kept its schedule without headroom",
		Why:    []string{"the machine was short of CPU for 52% of the run"},
		Advice: "pin surge with taskset",
		Facts:  []KV{{Key: "send lag (actual − scheduled)", Value: "p50 0.03 ms"}, {Key: "CPU pressure", Value: ""}},
		Phases: [][]string{{"steady", "3000", "100.00", "99.98", "100.0%", "1.10 ms"}}}
	page := renderHTML(t, HTMLReport{Runs: []RunCharts{{Name: "run", Self: self}}})
	for _, want := range []string{`<details class="self-accuracy" open>`, `<span class="badge AT-RISK">AT-RISK</span>`,
		"short of CPU for 52% of the run", "<b>What to do:</b> pin surge with taskset", "p50 0.03 ms",
		"<dt>CPU pressure</dt><dd><span class=\"na\">n/a</span>", `<td>steady</td><td class="num">3000</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the section lacks %q", want)
		}
	}
	self.Badge = "KEPT-UP"
	if page := renderHTML(t, HTMLReport{Runs: []RunCharts{{Name: "run", Self: self}}}); !strings.Contains(page, `<details class="self-accuracy">`) {
		t.Error("a client that kept up: the section should be closed")
	}
	if page := renderHTML(t, HTMLReport{Runs: []RunCharts{{Name: "run"}}}); strings.Contains(page, "self-accuracy\"") || strings.Contains(page, "<b>Self-accuracy</b>") {
		t.Error("a run without the section shows one")
	}
}
