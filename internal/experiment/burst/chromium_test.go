package burst

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/report/browsertest"
)

// TestBurstReportInChromium opens the report.html of a whole burst
// experiment — a 5× burst over the simulator in virtual time, with its
// autoscaler adding a replica — in headless Chromium: every chart draws,
// with no JavaScript error, and the summary block, the diagnosis and the
// scaling milestones are on the page. Its screenshot is README's
// (SURGE_ARTIFACTS=/tmp/a go test ./internal/experiment/burst/ -run
// Chromium; cp /tmp/a/burst-5x-run.png docs/report-burst.png).
func TestBurstReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	_, dir, out := virtualBurst(t, func(c *Config) {
		c.Multipliers = []float64{5}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, time.Minute, 30*time.Second, 2*time.Minute, 4*time.Minute
		s := &c.Options.Sim
		s.Autoscale, s.MinReplicas, s.MaxReplicas = true, 1, 2
	})
	page := filepath.Join(dir, "report.html")
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	art := browsertest.ArtifactDir(t)
	shot := filepath.Join(art, "burst-5x.png")
	dom := browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1300,1800",
		"--dump-dom", "--screenshot="+shot, "file://"+page)
	attrs := browsertest.BodyAttrs(t, dom)
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	want, drawn := attrs["data-charts-expected"], attrs["data-charts-drawn"]
	if n, err := strconv.Atoi(want); err != nil || n < 6 || drawn != want {
		t.Errorf("%s of %s charts drawn, want every one of at least 6", drawn, want)
	}
	for _, c := range browsertest.ChartDivs(dom) {
		if ink, err := strconv.Atoi(c["data-ink"]); err != nil || ink < 5 {
			t.Errorf("chart %s: data-ink %q: the plot area is (nearly) blank", c["data-chart-id"], c["data-ink"])
		}
	}
	for _, s := range []string{`<div class="summary">`, `<span class="mode">`, `class="marker-list"`, "scale trigger", `"id":"backlog"`} {
		if !strings.Contains(string(dom), s) && !strings.Contains(string(html), s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	browsertest.CheckShot(t, shot)

	// README's picture: the multiplier's section alone (summary,
	// diagnosis, milestones, charts), the results tables hidden.
	runOnly := strings.Replace(string(html), "</head>", "<style>section.results{display:none}</style></head>", 1)
	page5 := filepath.Join(t.TempDir(), "run.html")
	if err := os.WriteFile(page5, []byte(runOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	shot5 := filepath.Join(art, "burst-5x-run.png")
	attrs = browsertest.BodyAttrs(t, browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1300,1700",
		"--dump-dom", "--screenshot="+shot5, "file://"+page5))
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors (run section): %s", e)
	}
	browsertest.CheckShot(t, shot5)
	if os.Getenv("SURGE_ARTIFACTS") != "" {
		if err := os.WriteFile(filepath.Join(art, "burst-5x.html"), html, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
