package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
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
	golden(t, "html/chartdata.json", append(b, '\n'))
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

func TestHTMLContent(t *testing.T) {
	page := renderHTML(t, burstReport())
	for _, want := range []string{
		`<h1>surge burst: llama-3.1-8b-instruct on vllm-0.6 1×L4</h1>`,
		`<dt>hardware</dt><dd><span class="na">n/a</span></dd>`, // empty meta is n/a
		`<td class="bound num" title="` + ReasonCensoredP99 + `">&gt; 60s</td>`,
		`<td class="na num" title="` + ReasonNoEngineTelemetry + `">n/a</td>`,
		`did not recover within 300s`,
		`<td class="bad" title="interrupted (SIGINT) at 2m41s, during the burst">PARTIAL</td>`,
		`<span class="badge FAIL">FAIL</span>`,
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
	r.Meta = []KV{{evil, evil}}
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
