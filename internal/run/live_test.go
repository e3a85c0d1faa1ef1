package run

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/workload"
)

// The live view of a run in virtual time: a plain line every 5 s, its
// rates over the interval just ended and labelled with the phase of that
// interval's middle, and the P99 of what finished in the last 10 s.
func TestLiveStatusLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := DefaultOptions()
		o.OutputTokens = workload.FixedLength(16)
		var view strings.Builder
		env := bubbleEnv(t, o, &view)
		// 7/3 arrivals/s: none falls on a multiple of 5 s, where the view
		// draws, so the counts at each line are exact.
		plan := schedule.Plan{Phases: []schedule.Phase{
			{Name: "warmup", Duration: 6 * time.Second, Rate: 7.0 / 3, Arrival: schedule.ArrivalConstant},
			{Name: "main", Duration: 6 * time.Second, Rate: 14.0 / 3, Arrival: schedule.ArrivalConstant},
		}}
		res, err := env.Execute(context.Background(), Spec{Name: "live", Dir: testDir(t), Command: "test", Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(view.String()), "\n")
		if len(lines) < 2 {
			t.Fatalf("%d lines:\n%s", len(lines), view.String())
		}
		// At 5 s: 12 arrivals (k·3/7 s for k = 0..11) over 5 s, in the
		// warmup (the interval's middle, 2.5 s).
		if want := "live 5.0s warmup: offered 2.4/s sent 2.4/s"; !strings.HasPrefix(lines[0], want) {
			t.Errorf("first line %q, want it to start %q", lines[0], want)
		}
		// At 10 s: 14 warmup arrivals (up to 5.57 s) and 19 main ones
		// (6 s + k·3/14 for k = 0..18), minus the first 12, over 5 s; the
		// interval's middle (7.5 s) is in the main phase.
		if want := "live 10.0s main: offered 4.2/s sent 4.2/s"; !strings.HasPrefix(lines[1], want) {
			t.Errorf("second line %q, want it to start %q", lines[1], want)
		}
		if !strings.Contains(lines[1], " p99 ") || strings.Contains(lines[1], " p99 0s ") {
			t.Errorf("no window P99 in %q", lines[1])
		}
		if res.Count() != 14+28 {
			t.Errorf("%d records", res.Count())
		}
	})
}

// The window P99: nearest rank over the successful requests that finished
// at or after the window's start, computed by hand.
func TestRecentLatency(t *testing.T) {
	c := newCollector(nil, false, nil)
	add := func(seq int64, sched, done time.Duration, out record.Outcome) {
		r := record.New("x", seq, "p", int64(sched))
		r.DoneNs, r.Outcome = int64(done), out
		r.FirstTokenNs = int64(sched + (done-sched)/2) // TTFT: half the completion time
		c.add(&r)
	}
	// Completion order, as the sink sees it.
	add(0, 0, 1*time.Second, record.OK)              // 1 s, before the window
	add(1, 1*time.Second, 12*time.Second, record.OK) // 11 s
	add(2, 5*time.Second, 13*time.Second, record.HTTPError)
	for i := range 98 { // 98 requests of 2 s each, done at 14 s…
		add(int64(3+i), 12*time.Second, 14*time.Second, record.OK)
	}
	// Since 10 s: 99 successes (one of 11 s, 98 of 2 s); the error does not
	// count. Nearest rank: ⌈0.99·99⌉ = 99th of the sorted values = 11 s.
	if ttft, got := c.recentLatency(int64(10 * time.Second)); got != 11*time.Second || ttft != time.Second {
		t.Errorf("P99 %s, TTFT p95 %s; want 11s and 1s (⌈0.95·99⌉ = 95th value: a 2 s request's)", got, ttft)
	}
	// Since 13 s: the 98 of 2 s only.
	if _, got := c.recentLatency(int64(13 * time.Second)); got != 2*time.Second {
		t.Errorf("P99 %s, want 2s", got)
	}
	// A generator_drop (no done time) recorded after them does not hide
	// the window: its record comes last, at its arrival.
	drop := record.New("x", 101, "p", int64(14*time.Second))
	drop.Outcome = record.GeneratorDrop
	c.add(&drop)
	if _, got := c.recentLatency(int64(13 * time.Second)); got != 2*time.Second {
		t.Errorf("P99 after a drop %s, want 2s", got)
	}
	if ttft, got := c.recentLatency(int64(20 * time.Second)); got != live.NoData || ttft != live.NoData {
		t.Errorf("an empty window: P99 %s, TTFT p95 %s; want NoData", got, ttft)
	}
}

// The runs of an experiment share one logger that says each distinct
// warning once: every run's scraper notes the same missing metric at its
// first scrape.
func TestEnvLoggerWarnsOnce(t *testing.T) {
	var b strings.Builder
	env, err := PrepareWith(context.Background(), quietOptions(), true, Setup{Version: "test",
		Logger: slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for range 3 {
		env.Logger.Warn("engine metrics: missing queue_time (looked for x)")
		env.Logger.Info("engine metrics: scraping again")
	}
	env.Logger.Warn("engine metrics: scrape failed", "reason", "a")
	env.Logger.Warn("engine metrics: scrape failed", "reason", "b")
	out := b.String()
	if n := strings.Count(out, "missing queue_time"); n != 1 {
		t.Errorf("warning printed %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "scraping again"); n != 3 {
		t.Errorf("info printed %d times, want each time:\n%s", n, out)
	}
	if n := strings.Count(out, "scrape failed"); n != 2 {
		t.Errorf("distinct warnings printed %d times, want 2:\n%s", n, out)
	}
}

// countStop counts what a Stopper is given and checks the horizon rule.
type countStop struct {
	n    int64
	last int64 // latest scheduled time given
}

func (s *countStop) CheckFrom() time.Duration { return 0 }
func (s *countStop) Add(r *record.Record)     { s.n++; s.last = max(s.last, r.ScheduledNs) }
func (s *countStop) Stop(horizon time.Duration) string {
	if time.Duration(s.last) >= horizon {
		panic("a record past the horizon")
	}
	return ""
}

// The collector keeps no record: over a long run (100,000 arrivals at
// 1,000/s, each finishing 2 s after its arrival, completion order a little
// shuffled, one request stuck for 30 s) what it holds stays bounded by
// what is in flight — the finished arrivals beyond the first unfinished
// one, the records held back for the Stopper until the horizon passes
// them, the live view's recent window — while the Stopper is given every
// record once, and only those the horizon has passed.
func TestCollectorIsBounded(t *testing.T) {
	const n, gap = 100_000, time.Millisecond
	arrivals := make([]schedule.Arrival, n)
	for i := range arrivals {
		arrivals[i] = schedule.Arrival{Seq: int64(i), At: time.Duration(i) * gap, Phase: "p"}
	}
	stop := &countStop{}
	c := newCollector(arrivals, false, stop)
	rec := func(i int) record.Record {
		r := record.New("x", int64(i), "p", int64(arrivals[i].At))
		d := 2 * time.Second
		if i == 5000 {
			d = 30 * time.Second // stuck: the horizon waits for it
		}
		r.DoneNs, r.Outcome, r.FirstTokenNs = int64(arrivals[i].At+d), record.OK, int64(arrivals[i].At+d/2)
		return r
	}
	// Completion order: by done time, with pairs swapped.
	var maxAhead, maxHeld, maxRecent int
	pending := []record.Record{}
	flush := func(upTo int64) {
		slices.SortFunc(pending, func(a, b record.Record) int { return cmp.Compare(a.DoneNs, b.DoneNs) })
		k := 0
		for k < len(pending) && pending[k].DoneNs <= upTo {
			k++
		}
		for j := 0; j+1 < k; j += 2 {
			pending[j], pending[j+1] = pending[j+1], pending[j]
		}
		for j := range k {
			c.add(&pending[j])
			maxAhead, maxHeld, maxRecent = max(maxAhead, len(c.ahead)), max(maxHeld, c.held.Len()), max(maxRecent, len(c.recent)-c.head)
		}
		pending = append(pending[:0], pending[k:]...)
	}
	for i := range n {
		pending = append(pending, rec(i))
		if i%1000 == 999 {
			flush(int64(arrivals[i].At))
		}
	}
	flush(1 << 62)
	if stop.n != n || c.received() != n {
		t.Fatalf("the Stopper was given %d records, the collector received %d; want %d each", stop.n, c.received(), n)
	}
	if _, ok := c.firstUnsent(); ok || c.next != n {
		t.Errorf("every arrival finished, yet next = %d", c.next)
	}
	// In flight at most: 2 s × 1,000/s; behind the stuck request: 30 s ×
	// 1,000/s finished ahead of it and held for the Stopper; recent: two
	// 10 s view windows × 1,000/s.
	if maxAhead > 31_000 || maxHeld > 31_000 || maxRecent > 2*int(live.Window/gap)+2000 {
		t.Errorf("held at most %d finished arrivals ahead, %d records for the Stopper, %d recent; want ≤ 31,000, 31,000, %d",
			maxAhead, maxHeld, maxRecent, 2*int(live.Window/gap)+2000)
	}
	if len(c.ahead) != 0 || c.held.Len() != 0 {
		t.Errorf("after the run: %d ahead, %d held; want none", len(c.ahead), c.held.Len())
	}
}

// The live status's errors are the failed requests: the cancelled ones (a
// Ctrl-C, a lost or interrupted worker's) are counted apart (REVIEW15).
func TestLiveErrorsExcludeCancelled(t *testing.T) {
	var c loadgen.Counters
	c.Completed.Store(10)
	c.OK.Store(6)
	c.Cancelled.Store(3) // and one failure
	plan := schedule.Plan{Phases: []schedule.Phase{{Name: "main", Duration: time.Second, Rate: 1}}}
	l := newLiveState(Spec{Name: "r", Plan: plan}, &c, time.Now(), nil, newCollector(nil, false, nil))
	if s := l.status(); s.Errors != 1 || s.Cancelled != 3 {
		t.Fatalf("errors %d cancelled %d, want 1 and 3", s.Errors, s.Cancelled)
	}
}

// Warnings reach the console in its own format — "WARNING: …", like the
// rest of a command's output — not as slog's key=value lines (REVIEW15):
// the Env's own (--retries with --simulate), the scraper's (given
// env.Logger, as every run's scraper and the --watch-k8s watch are) with
// their attributes, each once.
func TestWarningsReachTheConsole(t *testing.T) {
	var console, logged strings.Builder
	o := quietOptions()
	o.Retries = 1
	env, err := PrepareWith(context.Background(), o, true, Setup{Version: "test", View: &console,
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/metrics"
	ln.Close() // nothing answers there
	scr, err := scrape.New(scrape.Config{URL: url, Attempts: 1, Interval: time.Millisecond}, time.Now(), env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	scr.Run(context.Background()) // returns once the endpoint is unavailable
	for range 2 {
		env.Logger.Warn("engine metrics: scrape failed; samples will have a gap", "reason", "refused")
	}
	env.Logger.Info("engine metrics: scraping again")
	got := console.String()
	for _, want := range []string{
		"WARNING: --retries has no effect with --simulate",
		"WARNING: engine metrics unavailable: " + url,
		"WARNING: engine metrics: scrape failed; samples will have a gap (reason: refused)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("console lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "level=") || strings.Count(got, "scrape failed") != 1 {
		t.Errorf("console:\n%s", got)
	}
	// Below a warning, the logger given still decides.
	if l := logged.String(); strings.Contains(l, "WARN") || !strings.Contains(l, "scraping again") {
		t.Errorf("logger: %s", l)
	}
}
