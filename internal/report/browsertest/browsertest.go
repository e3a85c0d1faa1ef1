// Package browsertest opens surge's HTML reports in headless Chromium for
// tests: it runs the browser with a fresh profile and no background
// network, reads the attributes report.js sets on the page, and keeps
// screenshots in $SURGE_ARTIFACTS. Tests skip when Chromium is missing.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// ChromiumPath is where Debian's chromium package installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// Run runs headless Chromium with a fresh profile and every
// background network feature off, and returns its standard output.
func Run(t *testing.T, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Skipf("browser check skipped: %s not found (apt-get install -y chromium)", ChromiumPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, ChromiumPath, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// ArtifactDir is $SURGE_ARTIFACTS (kept after the test) or a temp dir.
func ArtifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SURGE_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// BodyAttrs returns the attributes of the <body> tag of a dumped DOM.
func BodyAttrs(t *testing.T, dom []byte) map[string]string {
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

// ChartDivs returns, for every chart element of a dumped DOM, its
// attributes (data-chart-id, data-points, data-ink, id…).
func ChartDivs(dom []byte) []map[string]string {
	var out []map[string]string
	for _, m := range regexp.MustCompile(`<div class="plot"([^>]*)>`).FindAllSubmatch(dom, -1) {
		attrs := map[string]string{}
		for _, a := range regexp.MustCompile(`([\w-]+)="([^"]*)"`).FindAllSubmatch(m[1], -1) {
			attrs[string(a[1])] = string(a[2])
		}
		out = append(out, attrs)
	}
	return out
}

// CheckShot fails t unless path is a screenshot of a page that drew
// something (a blank page compresses to a few kilobytes).
func CheckShot(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if st.Size() < 20_000 {
		t.Errorf("screenshot %s is only %d bytes: blank page?", path, st.Size())
	}
}
