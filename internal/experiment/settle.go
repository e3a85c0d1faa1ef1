package experiment

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
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

// settle waits until the target is back at baseline before a run: the
// engine's waiting queue is empty (when it can be seen), the replica count
// is back to its starting value (simulator), and a few probe requests are
// as fast as the reference probes measured before the first run. It gives
// up after c.SettleTimeout and says what was still off. It returns how long
// it waited, a note, and the reference probe latency.
func (e *Env) settle(ctx context.Context, c *BurstConfig, ref time.Duration, first bool) (time.Duration, string, time.Duration, error) {
	start := time.Now()
	client, err := e.probeClient()
	if err != nil {
		return 0, "", ref, err
	}
	defer client.CloseIdle()
	if first {
		lat, err := e.probe(ctx, client)
		if err != nil {
			return time.Since(start), "reference probes failed: " + err.Error(), 0, nil
		}
		return time.Since(start), "reference probe latency " + lat.Round(time.Millisecond).String(), lat, nil
	}
	deadline := start.Add(c.SettleTimeout)
	watch := e.watchEngine(ctx)
	defer watch.close()
	var why []string
	for {
		why = why[:0]
		if w, ok := watch.waiting(); ok && w > 0 {
			why = append(why, fmt.Sprintf("engine waiting %.0f", w))
		}
		if snap, ok := e.SimSnapshot(); ok {
			if snap.Running > 0 {
				why = append(why, fmt.Sprintf("engine running %d", snap.Running))
			}
			if snap.ReadyReplicas != e.Opts.Sim.Replicas || snap.StartingReplicas > 0 {
				why = append(why, fmt.Sprintf("replicas %d ready + %d starting, baseline %d", snap.ReadyReplicas, snap.StartingReplicas, e.Opts.Sim.Replicas))
			}
		}
		if len(why) == 0 {
			lat, err := e.probe(ctx, client)
			switch {
			case err != nil:
				why = append(why, "probe failed: "+err.Error())
			case ref > 0 && lat > time.Duration(float64(ref)*settleTolerance)+settleSlack:
				why = append(why, fmt.Sprintf("probe latency %s vs reference %s", lat.Round(time.Millisecond), ref.Round(time.Millisecond)))
			default:
				return time.Since(start), fmt.Sprintf("queue empty, probe latency %s (reference %s)", lat.Round(time.Millisecond), ref.Round(time.Millisecond)), ref, nil
			}
		}
		if ctx.Err() != nil {
			return time.Since(start), "interrupted", ref, nil
		}
		if time.Now().After(deadline) {
			note := "NOT settled within --settle-timeout " + c.SettleTimeout.String() + ": " + strings.Join(why, ", ") + "; the run starts anyway and its baseline may be disturbed"
			fmt.Fprintln(e.Stdout, "WARNING:", note)
			return time.Since(start), note, ref, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(settlePoll):
		}
	}
}

func (e *Env) probeClient() (*openai.Client, error) {
	cfg := e.clientConfig(2)
	cfg.Retries = 0
	c, err := openai.New(cfg, time.Now())
	if err != nil {
		return nil, &ConfigError{err}
	}
	return c, nil
}

// probe sends settleProbes small requests one after another and returns
// their median completion time.
func (e *Env) probe(ctx context.Context, c *openai.Client) (time.Duration, error) {
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

// engineWatcher scrapes the engine's waiting queue while a settle gate waits.
type engineWatcher struct {
	e    *Env
	scr  *scrape.Scraper
	stop context.CancelFunc
	done chan struct{}
}

func (e *Env) watchEngine(ctx context.Context) *engineWatcher {
	w := &engineWatcher{e: e}
	if _, ok := e.SimSnapshot(); ok || e.MetricsURL == "" {
		return w
	}
	overrides, _ := scrape.ParseOverrides(e.Opts.MetricOverride)
	scr, err := scrape.New(scrape.Config{URL: e.MetricsURL, Preset: e.Preset, Overrides: overrides, Interval: settlePoll}, time.Now(), e.Logger)
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
}

// waiting is the engine's waiting queue as last seen, if it can be seen.
func (w *engineWatcher) waiting() (float64, bool) {
	if snap, ok := w.e.SimSnapshot(); ok {
		return float64(snap.Waiting), true
	}
	if w.scr == nil {
		return 0, false
	}
	s := w.scr.Samples()
	if len(s) == 0 {
		return 0, false
	}
	v, ok := s[len(s)-1].Value(scrape.Waiting)
	return v, ok && !math.IsNaN(v)
}
