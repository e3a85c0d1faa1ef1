package run

import (
	"context"
	"iter"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/virtual"
	"github.com/surge-bench/surge/internal/workload"
)

// executeVirtual runs the plan (or the closed loop) through the engine
// model in virtual time and hands every record to sink, as a live run
// would. The client side is ideal there: everything measured is the
// engine's doing.
func (e *Env) executeVirtual(ctx context.Context, spec Spec, arrivals []schedule.Arrival, lazy iter.Seq[schedule.Arrival], wcfg workload.Config, sess *workload.Sessions, sink loadgen.Sink, res *Result) error {
	o := &e.Opts
	gen, err := workload.New(wcfg)
	if err != nil {
		return configErr(err)
	}
	cfg := virtual.Config{Sim: o.Sim, Timeout: o.Timeout, ScrapeInterval: o.ScrapeInterval, Deadlines: o.Deadlines(), Run: spec.Name, Profile: o.Profile,
		CountPrompt: e.modelCount(), Blocks: e.modelBlocks()}
	cfg.Shard, cfg.Shards, _ = o.ShardOf() // later session turns' seqs unique across shards (shard.go)
	cfg.Sim.Seed = spec.Seed(cfg.Sim.Seed) // a repeat's engine model differs too
	if err := e.CheckBudget(spec.Closed != nil); err != nil {
		return err
	}
	if e.budget.limited() {
		cfg.Gate = gate{e.budget}
	}
	// An open-loop run without a stop or a gate streams its records
	// (virtual.Config.Sink); the others come in out.Records.
	cfg.Sink = sink
	var out *virtual.Output
	if sess != nil {
		var stop virtual.Stopper
		if spec.Stop != nil && spec.StopInVirtualTime {
			stop = spec.Stop
		}
		out, err = virtual.Sessions(ctx, cfg, sess, arrivals, spec.Plan.Bounds(), spec.Plan.Duration(), stop)
	} else if spec.Closed != nil {
		out, err = virtual.Closed(ctx, cfg, gen, *spec.Closed)
	} else if lazy != nil {
		out, err = virtual.OpenStream(ctx, cfg, gen, lazy) // Env.streamsSchedule
	} else {
		var stop virtual.Stopper
		if spec.Stop != nil && spec.StopInVirtualTime {
			stop = spec.Stop
		}
		out, err = virtual.Open(ctx, cfg, gen, arrivals, spec.Plan.Duration(), stop)
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return configErr(err)
	}
	res.Engine, res.SimEvents = out.Engine, out.Events
	res.StoppedAt, res.StopWhy = out.StoppedAt, out.StopWhy
	res.Scrape = scrape.Status{State: scrape.StateOK, Preset: "sim", Samples: len(out.Engine)}
	res.QueueWait = map[string]analyze.QueueWait{}
	for _, b := range spec.Plan.Bounds() {
		res.QueueWait[b.Name] = out.QueueWaits[b.Name].QueueWait() // nil: no observations
	}
	if err := writeEngineCSV(spec.Dir, out.Engine); err != nil {
		return err
	}
	for i := range out.Records {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sink(&out.Records[i])
	}
	out.Records = nil
	return nil
}

// gate is the budget as virtual time asks it (virtual.Gate).
type gate struct{ m *meter }

func (g gate) Admit(seq int64, at time.Duration, prompt, maxTokens int) bool {
	return g.m.admit(seq, at, prompt, maxTokens)
}
func (g gate) Done(rec *record.Record) { g.m.done(rec) }
