package webview

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/report/browsertest"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"8080": "127.0.0.1:8080", ":8080": "127.0.0.1:8080", "0.0.0.0:9": "0.0.0.0:9", "[::1]:7": "[::1]:7"} {
		if got, err := Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Normalize("localhost"); err == nil || !strings.Contains(err.Error(), `want host:port or a port, got "localhost"`) {
		t.Errorf("Normalize(localhost): %v", err)
	}
}

func TestListenOnAPortInUse(t *testing.T) {
	a, err := Listen("127.0.0.1:0", "t")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	addr := strings.TrimSuffix(strings.TrimPrefix(a.URL(), "http://"), "/")
	if _, err := Listen(addr, "t"); err == nil || !strings.Contains(err.Error(), "cannot listen on "+addr) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second Listen on %s: %v", addr, err)
	}
}

// newServer listens on a free loopback port for the test's length.
func newServer(t *testing.T, title string) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", title)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// snapshots publishes n snapshots of a burst run: the first half in its
// baseline, the rest in its burst.
func snapshots(s *Server, n int) {
	for i := range n {
		phase, rate := "baseline", 10.0
		if i >= n/2 {
			phase, rate = "burst", 50
		}
		ttft := 0.2 + float64(i)*0.05
		good := 0.995
		s.Publish(Snapshot{Run: "burst-5x", Phase: phase, ElapsedS: float64(i + 1), TotalS: float64(2 * n),
			Offered: rate, Sent: rate, Completed: rate * 0.9, Goodput: rate * 0.85, InFlight: int64(3 * rate), TTFTP95S: &ttft,
			Clauses: []Clause{{Name: "p95 TTFT", Value: &ttft, Limit: 1, Unit: "s"}, {Name: "goodput", Value: &good, Limit: 0.99, Unit: "%", Above: true, N: int64(40 * i)}}})
	}
}

// The live page mid-burst in headless Chromium: it draws its three charts
// from the history it was served with, shows the phase and the in-flight
// count, and runs without a JavaScript error. The screenshot is kept in
// $SURGE_ARTIFACTS (live-view.png).
func TestLivePageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	s := newServer(t, "surge burst")
	snapshots(s, 40)
	shot := filepath.Join(browsertest.ArtifactDir(t), "live-view.png")
	dom := browsertest.Run(t, "--timeout=2000", "--window-size=1300,1500", "--dump-dom", "--screenshot="+shot, s.URL())
	a := browsertest.BodyAttrs(t, dom)
	for k, want := range map[string]string{"data-js-errors": "", "data-live-updates": "40", "data-charts-drawn": "3", "data-phase": "burst", "data-run": "burst-5x", "data-in-flight": "150"} {
		if a[k] != want {
			t.Errorf("%s = %q, want %q", k, a[k], want)
		}
	}
	if !strings.Contains(string(dom), "HOLDS") {
		t.Errorf("no clause shown")
	}
}

// When the command ends the open page loads report.html from the server
// and Final returns once it has.
func TestLivePageBecomesTheReport(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	s := newServer(t, "surge run")
	snapshots(s, 6)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(`<!DOCTYPE html><html><body data-final-report="yes"><h1>the final report</h1></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	finalled := make(chan time.Duration, 1)
	go func() {
		// Once the browser's page is connected, the command ends.
		for {
			s.mu.Lock()
			n := len(s.pages)
			s.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		start := time.Now()
		s.Final(path, 30*time.Second)
		finalled <- time.Since(start)
	}()
	dom := browsertest.Run(t, "--virtual-time-budget=10000", "--dump-dom", s.URL())
	if a := browsertest.BodyAttrs(t, dom); a["data-final-report"] != "yes" {
		t.Fatalf("the page did not become report.html:\n%.600s", dom)
	}
	select {
	case d := <-finalled:
		if d >= 30*time.Second {
			t.Errorf("Final waited its whole %v: the page's fetch was not counted", d)
		}
	case <-time.After(time.Minute):
		t.Fatal("Final never returned")
	}
}

// A page that disconnects is forgotten; one that stops reading is dropped
// once its buffer is full; Publish never waits for either.
func TestPagesThatGoAwayOrStall(t *testing.T) {
	s := newServer(t, "t")
	snapshots(s, 2)
	open := func() *http.Response {
		resp, err := http.Get(s.URL() + "events")
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "id: ") {
			t.Fatalf("first line %q, %v", line, err)
		}
		return resp
	}
	gone := open()
	stalled := open() // never read again
	defer stalled.Body.Close()
	gone.Body.Close()
	// 20,000 snapshots of ~700 bytes: far beyond the stalled page's buffer
	// and its socket's; a Publish that waited would hang here.
	for range 10_000 {
		snapshots(s, 2)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.pages)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pages still held after the one gone and the one stalled", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The history keeps publishing for a new page.
	resp := open()
	resp.Body.Close()
	s.mu.Lock()
	h := len(s.history)
	s.mu.Unlock()
	if h > historyCap || h < historyCap/2 {
		t.Errorf("history of %d snapshots, want between %d and its cap %d", h, historyCap/2, historyCap)
	}
}

// A browser that reconnects (Last-Event-ID) gets the snapshots after the
// last one it holds, not the history again; a page of another run, or one
// without an id, gets the whole history.
func TestReconnectResumesAfterTheLastEvent(t *testing.T) {
	s := newServer(t, "t")
	snapshots(s, 10) // ids 0 … 9
	firstID := func(last string) string {
		req, _ := http.NewRequest("GET", s.URL()+"events?run=burst-5x&from=4", nil)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		return line
	}
	for last, want := range map[string]string{
		"":             "id: 4 burst-5x\n", // the page holds 0 … 3 (from=4)
		"7 burst-5x":   "id: 8 burst-5x\n",
		"3 burst-2x":   "id: 0 burst-5x\n", // another run's page
		"not a number": "id: 0 burst-5x\n",
	} {
		if got := firstID(last); got != want {
			t.Errorf("Last-Event-ID %q: first line %q, want %q", last, got, want)
		}
	}
}

// A command that ends without its report: Final does not wait, the pages
// are told so (report false), and report.html says why, not where.
func TestFinalWithoutAReport(t *testing.T) {
	s := newServer(t, "t")
	snapshots(s, 2)
	done := make(chan struct{})
	go func() { s.Final("", time.Minute); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Final waited for pages to fetch a report that does not exist")
	}
	resp, err := http.Get(s.URL() + "events")
	if err != nil {
		t.Fatal(err)
	}
	// The stream stays open: read until the final event's data.
	var body strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		body.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "data: {\"report\"") {
			break
		}
	}
	resp.Body.Close()
	if !strings.Contains(body.String(), "event: final\ndata: {\"report\":false}") {
		t.Errorf("events after Final(\"\"):\n%s", body.String())
	}
	rep, err := http.Get(s.URL() + "report.html")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(rep.Body)
	rep.Body.Close()
	if rep.StatusCode != 404 || !strings.Contains(string(msg), "ended without writing report.html") {
		t.Errorf("report.html: %d %q", rep.StatusCode, msg)
	}
}
