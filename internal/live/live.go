// Package live shows a run while it goes: one status block redrawn in place
// when the output is a terminal, a plain line every few seconds otherwise,
// and optionally the same values as Prometheus gauges so that a Grafana
// next to the engine can watch the test.
package live

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/term"
)

// Status is what the live view shows at one moment.
type Status struct {
	Run      string        // run name, e.g. "burst-5x"
	Phase    string        // phase of the current scheduled time
	Elapsed  time.Duration // since the run origin
	Total    time.Duration // planned length (for the ETA); 0 if unknown
	Offered  float64       // arrivals/s in the last window
	Sent     float64       // sent/s in the last window
	OK       float64       // successful completions/s in the last window, by completion time (the tables' completed/s)
	Goodput  float64       // completions within the deadline/s in the last window
	InFlight int64
	Waiting  float64 // engine waiting queue (NaN when unknown)
	// TTFTP95 and P99 are the p95 TTFT and the p99 completion (both from
	// the schedule) of the successful requests that finished in the last
	// window; NoData when none did.
	TTFTP95 time.Duration
	P99     time.Duration
	Drops   int64
	LagMax  time.Duration // largest schedule lag so far
	Errors  int64         // failed requests so far (not counting the cancelled)
	// Cancelled counts the requests cancelled in flight so far — by a
	// Ctrl-C, or a worker of the fleet lost or interrupted: an interrupt,
	// not the target failing, so shown apart from Errors.
	Cancelled int64
	// Good and Judged are the run's requests so far that met the
	// per-request deadline, and that finished or were dropped (cancelled
	// ones excepted): the goodput clause as it stands.
	Good, Judged int64
}

// NoData marks a latency of a window in which no request finished.
const NoData time.Duration = -1

// Draining reports whether the plan's arrivals are over and the run only
// waits for the requests still in flight.
func (s Status) Draining() bool { return s.Total > 0 && s.Elapsed >= s.Total }

// Source returns the current status; it is called once per tick.
type Source func() Status

// View renders statuses to w.
type View struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	lines    int // lines drawn last time (tty mode)
	mu       sync.Mutex
}

// New returns a view on w. When w is a terminal the block redraws in place
// every interval; otherwise a plain line is printed every plainEvery.
func New(w io.Writer, interval, plainEvery time.Duration) *View {
	v := &View{w: w, interval: interval}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		v.tty = true
	} else {
		v.interval = plainEvery
	}
	return v
}

// Run draws src every interval until ctx is done, then draws once more and
// leaves the block on screen.
func (v *View) Run(ctx context.Context, src Source) {
	t := time.NewTicker(v.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if v.tty {
				v.Draw(src())
			}
			return
		case <-t.C:
			v.Draw(src())
		}
	}
}

// Draw renders one status.
func (v *View) Draw(s Status) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.tty {
		fmt.Fprintln(v.w, Line(s))
		return
	}
	var b strings.Builder
	if v.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.lines) // cursor up to the block's first line
	}
	block := Block(s)
	for _, l := range block {
		b.WriteString("\x1b[2K") // clear the line
		b.WriteString(l)
		b.WriteByte('\n')
	}
	v.lines = len(block)
	io.WriteString(v.w, b.String())
}

// Line is the one-line form of s, for logs and pipes.
func Line(s Status) string {
	return fmt.Sprintf("%s %s %s: offered %.1f/s sent %.1f/s completed %.1f/s goodput %.1f/s in-flight %d waiting %s TTFT p95 %s completion p99 %s drops %d lag %s errors %d%s",
		s.Run, fmtDur(s.Elapsed), s.phase(), s.Offered, s.Sent, s.OK, s.Goodput, s.InFlight, fmtNum(s.Waiting), fmtLatency(s.TTFTP95), fmtLatency(s.P99), s.Drops, fmtDur(s.LagMax), s.Errors, s.cancelled())
}

// cancelled is " cancelled N" once requests were cancelled, else "".
func (s Status) cancelled() string {
	if s.Cancelled == 0 {
		return ""
	}
	return fmt.Sprintf(" cancelled %d", s.Cancelled)
}

// Block is the multi-line form of s, for a terminal.
func Block(s Status) []string {
	eta := "ETA ?"
	switch {
	case s.Draining():
		eta = fmt.Sprintf("plan over, waiting for %d in flight", s.InFlight)
	case s.Total > 0:
		eta = "ETA " + fmtDur(max(0, s.Total-s.Elapsed))
	}
	return []string{
		fmt.Sprintf("── %s ── phase %-9s elapsed %s  %s", s.Run, s.phase(), fmtDur(s.Elapsed), eta),
		fmt.Sprintf("   offered %7.1f/s  sent %7.1f/s  completed %7.1f/s  goodput %7.1f/s", s.Offered, s.Sent, s.OK, s.Goodput),
		fmt.Sprintf("   in-flight %6d  engine waiting %6s  last %s: TTFT p95 %8s  completion p99 %8s", s.InFlight, fmtNum(s.Waiting), fmtDur(Window), fmtLatency(s.TTFTP95), fmtLatency(s.P99)),
		fmt.Sprintf("   drops %6d  errors %6d  schedule lag max %8s%s", s.Drops, s.Errors, fmtDur(s.LagMax), s.cancelled()),
	}
}

// Window is the span of finished requests the live latencies describe.
const Window = 10 * time.Second

// phase is the phase shown: "draining" once the plan is over.
func (s Status) phase() string {
	if s.Draining() {
		return "draining"
	}
	return s.Phase
}

// fmtLatency is a window latency, "—" when the window had no request.
func fmtLatency(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmtDur(d)
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Truncate(time.Second).String()
	}
}

func fmtNum(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", f)
}

// Exporter serves the live status as Prometheus gauges (surge_live_*).
type Exporter struct {
	srv *http.Server
	ln  net.Listener
}

// Serve starts an exporter on addr; every scrape reads src.
func Serve(addr string, src Source) (*Exporter, error) {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func(Status) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "surge_live_" + name, Help: help},
			func() float64 { return f(src()) }))
	}
	gauge("offered_rps", "Arrivals per second scheduled in the last window.", func(s Status) float64 { return s.Offered })
	gauge("sent_rps", "Requests per second sent in the last window.", func(s Status) float64 { return s.Sent })
	gauge("ok_rps", "Successful completions per second in the last window.", func(s Status) float64 { return s.OK })
	gauge("goodput_rps", "Completions within the per-request deadline per second in the last window.", func(s Status) float64 { return s.Goodput })
	gauge("in_flight", "Requests in flight.", func(s Status) float64 { return float64(s.InFlight) })
	gauge("engine_waiting", "Engine waiting queue as last scraped (NaN when unknown).", func(s Status) float64 { return s.Waiting })
	gauge("p99_seconds", "P99 completion latency (from schedule) of requests finished in the last window (NaN when none did).", func(s Status) float64 { return seconds(s.P99) })
	gauge("ttft_p95_seconds", "P95 TTFT (from schedule) of requests finished in the last window (NaN when none did).", func(s Status) float64 { return seconds(s.TTFTP95) })
	gauge("generator_drops", "Arrivals dropped by the in-flight cap so far.", func(s Status) float64 { return float64(s.Drops) })
	gauge("schedule_lag_max_seconds", "Largest schedule lag so far.", func(s Status) float64 { return s.LagMax.Seconds() })
	gauge("elapsed_seconds", "Seconds since the run origin.", func(s Status) float64 { return s.Elapsed.Seconds() })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("live: --prometheus-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	e := &Exporter{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go e.srv.Serve(ln)
	return e, nil
}

// seconds is a window latency in seconds, NaN for NoData.
func seconds(d time.Duration) float64 {
	if d < 0 {
		return math.NaN()
	}
	return d.Seconds()
}

// Addr is the address the exporter listens on.
func (e *Exporter) Addr() string { return e.ln.Addr().String() }

// Close stops the exporter.
func (e *Exporter) Close() error { return e.srv.Close() }
