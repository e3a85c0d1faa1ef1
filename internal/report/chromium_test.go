package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// runChromium runs headless Chromium with a fresh profile and every
// background network feature off, and returns its standard output.
func runChromium(t *testing.T, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("browser check skipped: %s not found (apt-get install -y chromium)", chromiumPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// artifactDir is $SURGE_ARTIFACTS (kept after the test) or a temp dir.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SURGE_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// bodyAttrs returns the attributes of the <body> tag of a dumped DOM.
func bodyAttrs(t *testing.T, dom []byte) map[string]string {
	t.Helper()
	m := regexp.MustCompile(`<body([^>]*)>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no <body> in the dumped DOM:\n%.2000s", dom)
	}
	attrs := map[string]string{}
	for _, a := range regexp.MustCompile(`([\w-]+)="([^"]*)"`).FindAllSubmatch(m[1], -1) {
		attrs[string(a[1])] = string(a[2])
	}
	return attrs
}

// TestReportDrawsInChromium opens the fixture report in headless Chromium:
// every chart must be drawn by uPlot with no JavaScript error, and a
// screenshot is kept for people to look at (one browser start does both).
func TestReportDrawsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	dir := artifactDir(t)
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
	dom := runChromium(t, "--virtual-time-budget=5000", "--window-size=1400,2000",
		"--dump-dom", "--screenshot="+shot, "file://"+page)
	attrs := bodyAttrs(t, dom)
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	if got := attrs["data-charts-expected"]; got != strconv.Itoa(want) {
		t.Errorf("data-charts-expected = %q, want %d", got, want)
	}
	if got := attrs["data-charts-drawn"]; got != strconv.Itoa(want) {
		t.Errorf("data-charts-drawn = %q, want %d", got, want)
	}
	if n := bytes.Count(dom, []byte("<canvas")); n < want {
		t.Errorf("%d canvases, want at least %d", n, want)
	}
	if n := bytes.Count(dom, []byte(`class="u-legend`)); n < want {
		t.Errorf("%d uPlot legends, want at least %d", n, want)
	}

	st, err := os.Stat(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if st.Size() < 20_000 {
		t.Errorf("screenshot is only %d bytes: blank page?", st.Size())
	}
	t.Logf("report and screenshot in %s", dir)
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
	attrs := bodyAttrs(t, runChromium(t, "--virtual-time-budget=3000", "--dump-dom", "file://"+page))
	if e := attrs["data-js-errors"]; !strings.Contains(e, "uplot-broken") || !strings.Contains(e, "did not load") {
		t.Errorf("data-js-errors = %q, want the thrown error and the missing library", e)
	}
	if got := attrs["data-charts-drawn"]; got != "0" {
		t.Errorf("data-charts-drawn = %q, want 0", got)
	}
}
