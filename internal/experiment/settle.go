package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/workload"
)

// Settle-gate tuning.
const (
	settleProbes    = 3                      // sequential probe requests per check
	settleTolerance = 1.5                    // probe latency may be this × the reference
	settleSlack     = 100 * time.Millisecond // … plus this, for very fast targets
	settlePoll      = time.Second
)

// Gate waits, before each run of an experiment, until the target is back
// at the state it was in before the first run. The first call measures
// that reference: the engine's queues as scraped (waiting, running,
// replicas — whichever the engine exposes) and the median latency of a
// few sequential probe requests. Each later call waits until the engine
// has no request waiting, no more running, as many replicas as in the
// reference and none starting, and the probes are within 1.5× the
// reference latency (+100 ms); it gives up after Timeout and says what was still off. The engine
// is read through the same scrape path for every target, the built-in
// simulator included.
type Gate struct {
	Env     *run.Env
	Timeout time.Duration // longest wait; the run starts anyway after it, with a warning
	Out     io.Writer     // where a warning goes

	ref     time.Duration // reference probe latency (0 = unknown)
	engine  engineState   // the engine's state at the reference
	checked bool          // the reference was taken
}

// engineState is the engine's queues as last scraped; NaN = not exposed.
type engineState struct{ waiting, running, replicas, starting float64 }

// Wait runs the gate. It returns how long it waited and a note saying
// what it found.
func (g *Gate) Wait(ctx context.Context) (time.Duration, string, error) {
	start := time.Now()
	client, err := openai.New(g.probeConfig(), start)
	if err != nil {
		return 0, "", err
	}
	defer client.CloseIdle()
	watch := watchEngine(ctx, g.Env)
	defer watch.close()
	if !g.checked {
		g.checked = true
		g.engine = watch.state(ctx)
		lat, err := probe(ctx, client)
		if err != nil {
			return time.Since(start), "reference probes failed: " + err.Error(), nil
		}
		g.ref = lat
		return time.Since(start), "reference probe latency " + lat.Round(time.Millisecond).String(), nil
	}
	deadline := start.Add(g.Timeout)
	var why []string
	for {
		why = why[:0]
		now := watch.state(ctx)
		if now.waiting > 0 {
			why = append(why, fmt.Sprintf("engine waiting %.0f", now.waiting))
		}
		refRunning := g.engine.running
		if math.IsNaN(refRunning) {
			refRunning = 0 // no reference sample: an idle engine runs nothing
		}
		if now.running > refRunning {
			why = append(why, fmt.Sprintf("engine running %.0f (reference %.0f)", now.running, refRunning))
		}
		if !math.IsNaN(now.replicas) && !math.IsNaN(g.engine.replicas) && now.replicas != g.engine.replicas {
			why = append(why, fmt.Sprintf("replicas %.0f, reference %.0f", now.replicas, g.engine.replicas))
		}
		if now.starting > 0 {
			why = append(why, fmt.Sprintf("%.0f replicas starting", now.starting))
		}
		if len(why) == 0 {
			lat, err := probe(ctx, client)
			switch {
			case err != nil:
				why = append(why, "probe failed: "+err.Error())
			case g.ref > 0 && lat > time.Duration(float64(g.ref)*settleTolerance)+settleSlack:
				why = append(why, fmt.Sprintf("probe latency %s vs reference %s", lat.Round(time.Millisecond), g.ref.Round(time.Millisecond)))
			default:
				return time.Since(start), fmt.Sprintf("queue empty, probe latency %s (reference %s)", lat.Round(time.Millisecond), g.ref.Round(time.Millisecond)), nil
			}
		}
		if ctx.Err() != nil {
			return time.Since(start), "interrupted", nil
		}
		if time.Now().After(deadline) {
			note := "NOT settled within --settle-timeout " + g.Timeout.String() + ": " + strings.Join(why, ", ") + "; the run starts anyway and its baseline may be disturbed"
			if g.Out != nil {
				fmt.Fprintln(g.Out, "WARNING:", note)
			}
			return time.Since(start), note, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(settlePoll):
		}
	}
}

func (g *Gate) probeConfig() openai.Config {
	cfg := g.Env.ClientConfig(2)
	cfg.Retries = 0
	return cfg
}

// probe sends settleProbes small requests one after another and returns
// their median completion time.
func probe(ctx context.Context, c *openai.Client) (time.Duration, error) {
	var lats []time.Duration
	for i := 0; i < settleProbes; i++ {
		req := workload.Request{Seq: int64(i), Profile: "probe", Prompt: fmt.Sprintf("[probe %d %d] Say hello.", time.Now().UnixNano(), i), PromptTokens: 8, MaxTokens: 16}
		rec := record.New("probe", int64(i), "settle", 0)
		c.Do(ctx, &req, &rec)
		if rec.Outcome != record.OK {
			return 0, fmt.Errorf("%s %s", rec.Outcome, rec.Error)
		}
		lats = append(lats, time.Duration(rec.E2ESend()))
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	return lats[len(lats)/2], nil
}

// engineWatcher scrapes the engine's queues while a gate waits.
type engineWatcher struct {
	hc   *http.Client // nil: scrape's own
	scr  *scrape.Scraper
	stop context.CancelFunc
	done chan struct{}
}

func watchEngine(ctx context.Context, env *run.Env) *engineWatcher {
	w := &engineWatcher{}
	if env.MetricsURL == "" {
		return w
	}
	overrides, _ := scrape.ParseOverrides(env.Opts.MetricOverride) // validated by Options.Validate
	w.hc = env.ScrapeClient()
	scr, err := scrape.New(scrape.Config{URL: env.MetricsURL, Preset: env.Preset, Overrides: overrides, Interval: settlePoll, Client: w.hc}, time.Now(), env.Logger)
	if err != nil {
		return w
	}
	ctx, w.stop = context.WithCancel(ctx)
	w.scr, w.done = scr, make(chan struct{})
	go func() { defer close(w.done); scr.Run(ctx) }()
	return w
}

func (w *engineWatcher) close() {
	if w.stop != nil {
		w.stop()
		<-w.done
	}
	if w.hc != nil {
		w.hc.CloseIdleConnections()
	}
}

// state is the engine's queues as scraped: it waits (up to two scrape
// periods) for a sample taken after the call began, so that a gate never
// judges a stale one. NaN marks what the engine does not expose.
func (w *engineWatcher) state(ctx context.Context) engineState {
	st := engineState{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if w.scr == nil {
		return st
	}
	n := len(w.scr.Samples())
	until := time.Now().Add(2 * settlePoll)
	for len(w.scr.Samples()) == n && time.Now().Before(until) && ctx.Err() == nil && w.scr.Status().State != scrape.StateUnavailable {
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	s := w.scr.Samples()
	if len(s) == 0 {
		return st
	}
	last := s[len(s)-1]
	get := func(m scrape.Metric) float64 {
		if v, ok := last.Value(m); ok {
			return v
		}
		return math.NaN()
	}
	return engineState{get(scrape.Waiting), get(scrape.Running), get(scrape.Replicas), get(scrape.ReplicasStarting)}
}
