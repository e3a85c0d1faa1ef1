package virtual

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sort"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// Open runs an open-loop schedule through the engine model in virtual time:
// each arrival is sent at its scheduled time whatever happened before, and
// its outcome converted into the Record the HTTP client would have written.
// arrivals must be sorted by At (schedule.Build's order); gen turns each
// into its request. planEnd is the plan's duration, the end of the stop
// checks. With a Stopper (stop may be nil) the run may end early: arrivals
// from the stop moment on are never sent (see the package doc).
//
// Open returns a *ConfigError for an unusable configuration and ctx's
// error, with no Output, when ctx is done before it returns.
func Open(ctx context.Context, cfg Config, gen *workload.Generator, arrivals []schedule.Arrival, planEnd time.Duration, stop Stopper) (*Output, error) {
	if err := cfg.validate(gen); err != nil {
		return nil, err
	}
	cl, err := cfg.cluster()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if stop == nil && cfg.Gate == nil && cfg.Sink != nil {
		return cfg.openStream(ctx, cl, gen, slices.Values(arrivals))
	}
	b := &batch{arrivals: arrivals, tags: make([]tag, len(arrivals))}
	in := make([]sim.Arrival, len(arrivals))
	for i := range arrivals {
		r := gen.Generate(arrivals[i])
		in[i] = sim.Arrival{At: arrivals[i].At, Req: sim.Request{PromptTokens: cfg.promptTokens(&r), MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS, PrefillOnly: r.Inputs != nil}}
		b.tags[i] = tagOf(&r)
	}
	// With the prefix cache on, each prompt is made again and hashed as it
	// is submitted (the generator is deterministic), rather than holding
	// every prompt's hashes for the whole run.
	var blocks sim.BlocksFunc
	if cfg.prefixCache() {
		blocks = func(i int, dst []uint64) []uint64 {
			r := gen.Generate(arrivals[i])
			return cfg.Blocks(&r, dst)
		}
	}
	var samples []scrape.Sample
	onSample := func(t time.Duration, s sim.Snapshot) { samples = append(samples, sample(t, s)) }
	b.outs = sim.SimulateBlocks(cl, in, blocks, cfg.Timeout, cfg.ScrapeInterval, onSample)
	var at time.Duration
	var why string
	var recs []record.Record
	if stop != nil || cfg.Gate != nil {
		recs = cfg.records(b)
	}
	if stop != nil {
		at, why = stopAt(stop, b, recs, planEnd)
	}
	n := len(arrivals)
	if why != "" {
		n = sort.Search(len(arrivals), func(i int) bool { return arrivals[i].At >= at })
	}
	if cfg.Gate != nil {
		if k := gateAt(cfg.Gate, b, in[:n], recs); k < n {
			n, at, why = k, arrivals[k].At, "" // the gate came first
		}
	}
	if n < len(arrivals) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Arrivals from the stop on are never sent: simulate the run again
		// without them (the engine then has less work after the stop).
		if cl, err = cfg.cluster(); err != nil {
			return nil, err
		}
		b = &batch{arrivals: arrivals[:n], tags: b.tags[:n]}
		samples = nil
		b.outs = sim.SimulateBlocks(cl, in[:n], blocks, cfg.Timeout, cfg.ScrapeInterval, onSample)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := cfg.output(b, samples, cl)
	out.StoppedAt, out.StopWhy = at, why
	return out, nil
}

// OpenStream is Open over a lazy schedule (schedule.Arrivals), without a
// Stopper or a Gate, each record going to cfg.Sink (which must be set) as
// the engine model makes it, in schedule order; Output.Records is nil.
// Neither the schedule nor the records are held: a run of any length
// holds its requests in flight, the engine samples and the queue waits.
func OpenStream(ctx context.Context, cfg Config, gen *workload.Generator, arrivals iter.Seq[schedule.Arrival]) (*Output, error) {
	if err := cfg.validate(gen); err != nil {
		return nil, err
	}
	if cfg.Sink == nil {
		return nil, &ConfigError{errors.New("virtual: OpenStream without a Sink")}
	}
	cl, err := cfg.cluster()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return cfg.openStream(ctx, cl, gen, arrivals)
}

// openStream is Open without a Stopper or a Gate, each record going to
// cfg.Sink as the engine model makes it: the arrivals and their requests
// are made as the simulation reaches them, and an arrival and its labels
// kept until its record goes out, so a run holds its requests in flight
// only. The records, engine samples and queue waits are those of the
// batch path.
func (cfg *Config) openStream(ctx context.Context, cl *sim.Cluster, gen *workload.Generator, arrivals iter.Seq[schedule.Arrival]) (*Output, error) {
	out := &Output{QueueWaits: map[string]*analyze.WaitHist{}}
	pull, stopPull := iter.Pull(arrivals)
	defer stopPull()
	type pending struct {
		a schedule.Arrival
		t tag
	}
	var win []pending // arrivals base, base+1, … not yet emitted
	head, base := 0, 0
	var last schedule.Arrival // the latest made, for the prefix-cache hashes
	next := func(int) (sim.Arrival, bool) {
		a, ok := pull()
		if !ok {
			return sim.Arrival{}, false
		}
		r := gen.Generate(a)
		win = append(win, pending{a, tagOf(&r)})
		last = a
		return sim.Arrival{At: a.At, Req: sim.Request{PromptTokens: cfg.promptTokens(&r), MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS, PrefillOnly: r.Inputs != nil}}, true
	}
	var blocks sim.BlocksFunc
	if cfg.prefixCache() {
		// Asked for the arrival just made, as it is submitted.
		blocks = func(_ int, dst []uint64) []uint64 {
			r := gen.Generate(last)
			return cfg.Blocks(&r, dst)
		}
	}
	onSample := func(t time.Duration, s sim.Snapshot) { out.Engine = append(out.Engine, sample(t, s)) }
	var err error
	emit := func(i int, o *sim.Outcome) bool {
		if i%4096 == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		p := &win[head+i-base]
		a := &p.a
		rec := cfg.record(a, o, &p.t)
		rec.Good = analyze.Judge(&rec, cfg.Deadlines)
		addWait(out.QueueWaits, a.Phase, o)
		*p = pending{}
		if head, base = head+1, base+1; head > 1024 && head > len(win)/2 {
			win = append(win[:0], win[head:]...)
			head = 0
		}
		cfg.Sink(&rec)
		return true
	}
	sim.SimulateStream(cl, next, blocks, cfg.Timeout, cfg.ScrapeInterval, onSample, emit)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	out.Events = cl.Events()
	return out, nil
}

// stopAt asks stop what a live run would have asked it: at each virtual
// second t from stop.CheckFrom() (at least 1 s) to planEnd (excluded), the
// records of every arrival scheduled before the horizon — the scheduled
// time of the first arrival not finished by t — all of which had finished
// by t. It returns the first t at which stop gave a reason, and the reason;
// "" when it never did.
//
// The records come from a simulation of the whole plan. That is exact for
// the ones stop sees: a request that finished by t cannot have been
// affected by arrivals after t.
func stopAt(stop Stopper, b *batch, recs []record.Record, planEnd time.Duration) (time.Duration, string) {
	if len(b.arrivals) == 0 {
		return 0, ""
	}
	// doneBy[i] = the latest end among arrivals[0..i]: arrival i is past
	// the horizon at t exactly when doneBy[i] > t.
	doneBy := make([]time.Duration, len(b.outs))
	var m time.Duration
	for i := range b.outs {
		end := b.outs[i].DoneAt
		if end == sim.Never {
			end = time.Duration(1<<63 - 1)
		}
		m = max(m, end, b.arrivals[i].At)
		doneBy[i] = m
	}
	// A live run checks on whole seconds of its ticker.
	from := stop.CheckFrom()
	first := max(from.Truncate(time.Second), time.Second)
	if first < from {
		first += time.Second
	}
	fed := 0
	for t := first; t < planEnd; t += time.Second {
		n := sort.Search(len(doneBy), func(i int) bool { return doneBy[i] > t })
		horizon := time.Duration(1<<63 - 1)
		if n < len(b.arrivals) {
			horizon = b.arrivals[n].At
		}
		for ; fed < n; fed++ {
			stop.Add(&recs[fed])
		}
		if why := stop.Stop(horizon); why != "" {
			return t, why
		}
	}
	return 0, ""
}

// gateAt walks the arrivals in schedule order as a live run sends them:
// before arrival i, the gate is told of every request finished before its
// scheduled time, then asked to admit it. It returns the index of the
// first arrival refused, len(in) when none was.
//
// The finished requests come from the simulation of every arrival up to
// the one asked about, which is exact: what finished before t cannot have
// been affected by arrivals after t.
func gateAt(g Gate, b *batch, in []sim.Arrival, recs []record.Record) int {
	order := make([]int, len(in)) // by completion time
	for i := range order {
		order[i] = i
	}
	done := func(i int) time.Duration {
		if d := b.outs[i].DoneAt; d != sim.Never {
			return d
		}
		return time.Duration(1<<63 - 1)
	}
	sort.SliceStable(order, func(x, y int) bool { return done(order[x]) < done(order[y]) })
	j := 0
	for i := range in {
		t := b.arrivals[i].At
		for j < len(order) && order[j] < i && done(order[j]) <= t {
			g.Done(&recs[order[j]])
			j++
		}
		if !g.Admit(b.arrivals[i].Seq, t, in[i].Req.PromptTokens, in[i].Req.MaxTokens) {
			return i
		}
	}
	return len(in)
}
