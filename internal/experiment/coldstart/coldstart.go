package coldstart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// ErrPortInUse is returned before anything is started when the target's
// host:port already accepts connections: the measurement would time that
// other server, not the one the command starts.
var ErrPortInUse = errors.New("coldstart: the target's port is already in use")

// ErrNotReady is returned when a cycle got no successful token within
// Config.StartTimeout.
var ErrNotReady = errors.New("coldstart: no successful token")

// StartError is a started server that exited by itself (before it served,
// or while it was measured).
type StartError struct {
	Cycle  int
	Status string // "exit status 127"
	After  time.Duration
	While  string // "before it accepted a connection", …
	Log    string // the log file's path
}

// Error implements error.
func (e *StartError) Error() string {
	return fmt.Sprintf("coldstart: cycle %d: the start command exited (%s) %v after it started, %s; its output is in %s",
		e.Cycle, e.Status, e.After.Round(time.Millisecond), e.While, e.Log)
}

// Run measures cfg.Cycles() cold starts of the target that client
// reaches, printing one line per milestone to w, and returns the report —
// also on error, with what was measured until then. Ctrl-C (ctx done)
// stops the cycle in progress, stops a started server and returns the
// report marked interrupted, with a nil error.
func Run(ctx context.Context, cfg Config, client openai.Config, w io.Writer) (*Report, error) {
	rep := &Report{
		Mode: cfg.Mode(), Target: cfg.Target, Model: client.Model, StartCmd: cfg.StartCmd,
		Started: time.Now().UTC(), Cycles: []Cycle{},
		Rule: WarmRule{Window: cfg.WarmWindow, Tolerance: cfg.WarmTolerance, FloorMs: ms(WarmFloor), Max: cfg.WarmMax},
	}
	if err := cfg.Validate(); err != nil {
		return rep, err
	}
	client.Timeout, client.Retries, client.Stream, client.MaxConns = cfg.StartTimeout, 0, true, 2
	m := &meter{cfg: cfg, client: client, w: w}
	if cfg.StartCmd != "" {
		m.addr, _ = cfg.hostPort()
		if cfg.Log == nil {
			return rep, fmt.Errorf("coldstart: no log file for the started server")
		}
	}
	defer func() { rep.Summary = summarize(rep) }()
	n := cfg.Cycles()
	for k := 1; k <= n; k++ {
		if k > 1 && cfg.StartCmd == "" && cfg.Idle > 0 {
			fmt.Fprintf(w, "waiting %v (--idle) for the endpoint to scale back to zero\n", cfg.Idle)
			if !sleep(ctx, cfg.Idle) {
				rep.Interrupted = true
				return rep, nil
			}
		}
		c, err := m.cycle(ctx, k)
		if err != nil {
			c.Problem = strings.Replace(strings.TrimPrefix(err.Error(), "coldstart: "), fmt.Sprintf("cycle %d: ", k), "", 1)
		}
		rep.Cycles = append(rep.Cycles, c)
		fmt.Fprintln(w, c.line())
		if ctx.Err() != nil {
			rep.Interrupted = true
			return rep, nil
		}
		if err != nil {
			rep.Problem = err.Error()
			return rep, err
		}
	}
	return rep, nil
}

// meter runs cycles.
type meter struct {
	cfg    Config
	client openai.Config
	w      io.Writer
	addr   string // host:port a started server opens
	seq    int64  // probes sent, over all cycles
}

// cycle measures one cold start.
func (m *meter) cycle(ctx context.Context, k int) (c Cycle, err error) {
	c = Cycle{N: k, ProbeFailures: map[string]int{}}
	var srv *server
	if m.cfg.StartCmd != "" {
		if accepts(ctx, m.addr) {
			if k == 1 {
				return c, fmt.Errorf("%w: %s accepts connections before the start command runs — another server listens there and measuring it would be wrong; stop it or pick another port", ErrPortInUse, m.addr)
			}
			return c, fmt.Errorf("%w: %s still accepts connections after cycle %d's server was stopped", ErrPortInUse, m.addr, k-1)
		}
		fmt.Fprintf(m.cfg.Log, "\n--- surge coldstart: cycle %d: sh -c started at %s ---\n", k, time.Now().UTC().Format(time.RFC3339Nano))
		if srv, err = start(m.cfg.StartCmd, m.cfg.Log); err != nil {
			return c, err
		}
		defer func() {
			if serr := m.stop(srv, &c); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	t0 := time.Now()
	c.Started = t0.UTC()
	cl, err := openai.New(m.client, t0)
	if err != nil {
		return c, err
	}
	defer cl.CloseIdle()
	since := func() time.Duration { return time.Since(t0) }
	exited := func(while string) error {
		if srv == nil || !srv.exited() {
			return nil
		}
		c.Exit = srv.status()
		return &StartError{Cycle: k, Status: c.Exit, After: since(), While: while, Log: m.cfg.LogPath}
	}
	tctx, cancel := context.WithDeadline(ctx, t0.Add(m.cfg.StartTimeout))
	defer cancel()

	// listen
	if srv != nil {
		for !accepts(tctx, m.addr) {
			if err := exited("before it accepted a connection"); err != nil {
				return c, err
			}
			if !sleep(tctx, m.cfg.Poll) {
				return c, m.timedOut(ctx, k, "accepted no connection on "+m.addr)
			}
		}
		c.ListenS = sec(since())
		fmt.Fprintf(m.w, "cycle %d: %s accepts connections after %s\n", k, m.addr, fmtS(c.ListenS))
	}

	// first token
	if got, err := m.untilFirstToken(ctx, tctx, cl, t0, &c, exited); !got {
		return c, err
	}

	// warm
	if err := m.untilWarm(ctx, cl, t0, &c, exited); err != nil {
		return c, err
	}
	// t0 → first token, failed probes included: a gateway that answers
	// 503 while it scales up has a quick successful request, not a warm one
	if c.WarmS != nil && m.cfg.StartCmd == "" && *c.FirstTokenS <= 2**c.WarmTTFTS {
		c.WarmStart = true
	}
	return c, nil
}

// untilFirstToken probes until one probe is answered with a token, and
// notes in c when (since t0) and that probe's TTFT. When none is by the
// deadline of tctx, or the started server exits first, it reports false
// with the cycle's error (nil when ctx is done: interrupted).
func (m *meter) untilFirstToken(ctx, tctx context.Context, cl *openai.Client, t0 time.Time, c *Cycle, exited func(while string) error) (bool, error) {
	k := c.N
	for {
		rec := m.probe(tctx, cl, t0)
		c.Probes++
		if ok(rec) {
			c.FirstTokenS = sec(time.Duration(rec.FirstTokenNs))
			c.ColdTTFTS = sec(time.Duration(rec.FirstTokenNs - rec.SentNs))
			break
		}
		c.ProbeFailures[failure(rec)]++
		if err := exited("before it answered with a token"); err != nil {
			return false, err
		}
		if rec.Status == http.StatusNotFound && c.ProbeFailures[failure(rec)] == 1 { // once a cycle
			if why := wrongModel(tctx, cl, m.client.BaseURL, m.client.Model); why != "" {
				return false, fmt.Errorf("%w: cycle %d: %s", ErrModel, k, why)
			}
		}
		if tctx.Err() != nil || !sleep(tctx, m.cfg.Poll) {
			return false, m.timedOut(ctx, k, fmt.Sprintf("answered no probe with a token (%d probes: %s)", c.Probes, failures(c.ProbeFailures)))
		}
	}
	fmt.Fprintf(m.w, "cycle %d: first token after %s (probe %d, its TTFT %s)\n", k, fmtS(c.FirstTokenS), c.Probes, fmtMs(c.ColdTTFTS))
	return true, nil
}

// untilWarm probes one request after the other until the last
// WarmWindow TTFTs are steady, or WarmMax requests were sent, or ctx is
// done, and notes in c when the first of the steady ones was sent (since
// t0) and their median. A failed request starts the window over. The
// error is the started server's exit.
func (m *meter) untilWarm(ctx context.Context, cl *openai.Client, t0 time.Time, c *Cycle, exited func(while string) error) error {
	var win []float64 // TTFTs, seconds
	var sent []int64
	for c.WarmRequests < m.cfg.WarmMax && ctx.Err() == nil {
		rec := m.probe(ctx, cl, t0)
		c.WarmRequests++
		if !ok(rec) {
			c.WarmFailures++
			win, sent = win[:0], sent[:0]
			if err := exited("while it was measured warm"); err != nil {
				return err
			}
			sleep(ctx, m.cfg.Poll)
			continue
		}
		win = append(win, time.Duration(rec.FirstTokenNs-rec.SentNs).Seconds())
		sent = append(sent, rec.SentNs)
		if len(win) > m.cfg.WarmWindow {
			win, sent = win[1:], sent[1:]
		}
		if med, yes := steady(win, m.cfg.WarmWindow, m.cfg.WarmTolerance); yes {
			c.WarmS, c.WarmTTFTS = sec(time.Duration(sent[0])), &med
			break
		}
	}
	return nil
}

// timedOut is the error of a cycle whose deadline passed: ErrNotReady,
// or nil when ctx itself is done (interrupted).
func (m *meter) timedOut(ctx context.Context, k int, what string) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("%w: cycle %d: the target %s within --start-timeout %v", ErrNotReady, k, what, m.cfg.StartTimeout)
}

// stop stops a started server and waits for its port to close, noting
// how long that took — nothing when the command had already exited by
// itself: no stop was measured.
func (m *meter) stop(srv *server, c *Cycle) error {
	t := time.Now()
	byItself := srv.exited()
	c.Killed = srv.stop(m.cfg.StopGrace)
	if c.Exit == "" {
		c.Exit = srv.status()
	}
	ctx := context.Background() // Ctrl-C or not, the port must be seen closed
	if !waitClosed(ctx, m.addr, m.cfg.Poll, DefaultPortClose) {
		return fmt.Errorf("coldstart: cycle %d: %s still accepts connections %v after the start command's process group was stopped: a process outside the group serves it", c.N, m.addr, DefaultPortClose)
	}
	if !byItself {
		c.StopS = sec(time.Since(t))
	}
	return nil
}

// probe sends one tiny streamed request; its times are since t0.
func (m *meter) probe(ctx context.Context, cl *openai.Client, t0 time.Time) record.Record {
	m.seq++
	req := workload.Request{
		Seq: m.seq, Profile: "coldstart", PromptTokens: 16, MaxTokens: m.cfg.MaxTokens,
		Prompt: fmt.Sprintf("Cold start probe %d. Answer with a few words about the weather.", m.seq),
	}
	rec := record.New(fmt.Sprintf("coldstart-%d", m.seq), m.seq, "coldstart", int64(time.Since(t0)))
	cl.Do(ctx, &req, &rec)
	return rec
}

// ok reports whether rec is a successful request with a token.
func ok(rec record.Record) bool {
	return rec.Outcome == record.OK && rec.FirstTokenNs != record.None && rec.SentNs != record.None
}

// failure names how rec failed: its outcome, and its status for an HTTP
// error ("http_error 503").
func failure(rec record.Record) string {
	switch {
	case rec.Outcome == record.OK:
		return "no token"
	case rec.Status != 0 && rec.Outcome != record.RateLimited:
		return fmt.Sprintf("%s %d", rec.Outcome, rec.Status)
	}
	return string(rec.Outcome)
}

// steady applies the warm rule to the last TTFTs (seconds): k of them,
// each within max(tol × median, WarmFloor) of their median.
func steady(ttfts []float64, k int, tol float64) (median float64, ok bool) {
	if len(ttfts) < k {
		return 0, false
	}
	med := analyze.MedianOfRuns(ttfts)
	slack := max(tol*med, WarmFloor.Seconds())
	for _, v := range ttfts {
		if v-med > slack || med-v > slack {
			return med, false
		}
	}
	return med, true
}

func sec(d time.Duration) *float64 {
	v := d.Seconds()
	return &v
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// PortFree checks, for a start command, that nothing accepts connections
// on the target's host:port yet (ErrPortInUse otherwise).
func PortFree(ctx context.Context, cfg Config) error {
	if cfg.StartCmd == "" {
		return nil
	}
	addr, err := cfg.hostPort()
	if err != nil {
		return nil // Validate says so
	}
	if accepts(ctx, addr) {
		return fmt.Errorf("%w: %s accepts connections before the start command runs — another server listens there and measuring it would be wrong; stop it or pick another port", ErrPortInUse, addr)
	}
	return nil
}
