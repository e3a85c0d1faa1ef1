package live

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPlainViewPrintsLines(t *testing.T) {
	var buf bytes.Buffer
	v := New(&buf, time.Second, 5*time.Second)
	if v.tty {
		t.Fatal("a buffer is not a terminal")
	}
	v.Draw(Status{Run: "burst-5x", Phase: "burst", Elapsed: 75 * time.Second, Offered: 50, InFlight: 12, Waiting: math.NaN(), TTFTP95: NoData, P99: 1500 * time.Millisecond, Drops: 3})
	got := buf.String()
	for _, want := range []string{"burst-5x", "1m15s", "burst:", "offered 50.0/s", "in-flight 12", "waiting n/a", "TTFT p95 —", "completion p99 1.5s", "drops 3"} {
		if !strings.Contains(got, want) {
			t.Errorf("line %q lacks %q", got, want)
		}
	}
}

func TestTerminalBlockRedrawsInPlace(t *testing.T) {
	var buf bytes.Buffer
	v := &View{w: &buf, tty: true}
	v.Draw(Status{Run: "a", Total: time.Minute, Elapsed: 10 * time.Second})
	first := buf.Len()
	v.Draw(Status{Run: "a", Total: time.Minute, Elapsed: 11 * time.Second})
	second := buf.String()[first:]
	if !strings.HasPrefix(second, "\x1b[4A") {
		t.Fatalf("second draw must move the cursor up over the 4-line block: %q", second[:10])
	}
	if !strings.Contains(second, "ETA 49.0s") {
		t.Fatalf("ETA missing: %q", second)
	}
}

func TestExporterServesGauges(t *testing.T) {
	e, err := Serve("127.0.0.1:0", func() Status { return Status{Offered: 42, InFlight: 7, Waiting: 3} })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	resp, err := http.Get("http://" + e.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"surge_live_offered_rps 42", "surge_live_in_flight 7", "surge_live_engine_waiting 3"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if _, err := Serve("not-an-address", nil); err == nil || !strings.Contains(err.Error(), "--prometheus-addr") {
		t.Errorf("bad address: %v", err)
	}
}

// After the plan's end the view says it drains, with what is in flight,
// instead of an ETA of 0s; a window without requests shows "—".
func TestBlockDrainingAndNoData(t *testing.T) {
	b := strings.Join(Block(Status{Run: "r", Phase: "main", Total: time.Minute, Elapsed: 70 * time.Second, InFlight: 5, TTFTP95: NoData, P99: NoData}), "\n")
	for _, want := range []string{"phase draining", "plan over, waiting for 5 in flight", "TTFT p95        —", "completion p99        —"} {
		if !strings.Contains(b, want) {
			t.Errorf("block lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "ETA") || strings.Contains(b, "p95       0s") || strings.Contains(b, "p99       0s") {
		t.Errorf("a draining run shows an ETA or a zero latency:\n%s", b)
	}
	b = strings.Join(Block(Status{Run: "r", Phase: "main", Total: time.Minute, Elapsed: 10 * time.Second, TTFTP95: 250 * time.Millisecond, P99: 2 * time.Second}), "\n")
	for _, want := range []string{"phase main", "ETA 50.0s", "last 10.0s: TTFT p95    250ms  completion p99     2.0s"} {
		if !strings.Contains(b, want) {
			t.Errorf("block lacks %q:\n%s", want, b)
		}
	}
}

// Requests cancelled in flight (Ctrl-C, a lost or interrupted worker) are
// shown apart from the errors, and only once there are some.
func TestCancelledApartFromErrors(t *testing.T) {
	s := Status{Run: "r", Phase: "main", Errors: 2, Cancelled: 7, TTFTP95: NoData, P99: NoData}
	if l := Line(s); !strings.Contains(l, "errors 2 cancelled 7") {
		t.Errorf("line %q", l)
	}
	if b := strings.Join(Block(s), "\n"); !strings.Contains(b, "errors      2") || !strings.Contains(b, "cancelled 7") {
		t.Errorf("block:\n%s", b)
	}
	s.Cancelled = 0
	if l, b := Line(s), strings.Join(Block(s), "\n"); strings.Contains(l, "cancelled") || strings.Contains(b, "cancelled") {
		t.Errorf("no cancelled requests, yet: %q\n%s", l, b)
	}
}
