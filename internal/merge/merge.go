// Package merge is `surge merge`: it makes the run folders of N static
// shards (--shard I/N) one run folder, as if one process had recorded
// everything.
//
// The shards must be one experiment: their manifests agree on every
// setting that defines it (Check: command, target, model, API, plan,
// workload, seed, SLOs, options, surge version, N), and they are N
// distinct shards 0..N−1. A disagreement is refused naming the field, both
// values and both folders; so are a missing or repeated shard and a
// folder that is not a shard's run folder.
//
// Records are merged by a k-way merge over the shards' requests.jsonl,
// streaming, ordered by (Seq, Shard): the shards' arrivals are one
// schedule, each Seq sent by exactly one shard. A live shard writes its
// records as they complete, so each shard's file is put back in Seq order
// through a bounded reorder window (Window records in all); a record
// later than that is written out of order, never dropped, and counted.
// Every record keeps its Shard.
//
// One time axis. Each shard's times (every *_ns field that is a time
// since the origin, and engine.csv's) are relative to its own origin, the
// wall clock in its manifest's Started. The merged origin is the earliest
// Started, and shard i's times are shifted by
//
//	offset_i = Started_i − min_j Started_j
//
// which places every request at the wall-clock moment it was sent —
// what the target saw. With --start-at the shards were told one origin,
// so the offsets are their start errors (and the clocks' disagreement:
// synchronise them, e.g. NTP); without it they started whenever each was
// launched, the merged run is not the planned one, and merge warns when
// the start skew (max offset) exceeds run.StartSkewWarn. Latencies and
// schedule lag are differences within one record and never change.
// Virtual-time shards share their origin by construction: no shift.
//
// Then the merged folder is analysed by the same code as `surge report`
// (package rerender), so its results are those of one process recording
// every record.
package merge

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scrape"
)

// Shard is one shard's run folder as merge reads it.
type Shard struct {
	Dir      string
	Manifest *record.Manifest
	Index    int           // its shard index (Distributed.Shard)
	Offset   time.Duration // added to its times: Started − the earliest Started (0 in virtual time)
}

// Result is what Runs merged.
type Result struct {
	Shards  []Shard
	Records int64
	Skew    time.Duration // the largest offset: how far apart the shards' origins were
	// OutOfOrder counts the records written after one with a higher seq:
	// later in their shard's file than its reorder window (Window).
	OutOfOrder int64
}

// refuse is a bad-input error (exit 2).
func refuse(format string, a ...any) error {
	return &run.ConfigError{Err: fmt.Errorf("merge: "+format, a...)}
}

// Open reads and checks the shards' folders: each a run folder of a
// shard, all of one experiment, the N shards 0..N−1 each once. The shards
// are returned by index, with their offsets.
func Open(dirs []string) ([]Shard, error) {
	if len(dirs) == 0 {
		return nil, refuse("no shard folders given")
	}
	seen := map[string]string{} // absolute path → as given
	var shards []Shard
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			if r, err := filepath.EvalSymlinks(abs); err == nil {
				abs = r
			}
		}
		if first, ok := seen[abs]; ok {
			return nil, refuse("%s is given twice (as %s and %s): each shard's folder once", abs, first, d)
		}
		seen[abs] = d
		s, err := openShard(d)
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
	}
	base := shards[0]
	for _, s := range shards[1:] {
		if err := Agree(base.Manifest, s.Manifest, base.Dir, s.Dir); err != nil {
			return nil, err
		}
	}
	n := base.Manifest.Distributed.Generators
	by := make([]*Shard, n)
	for i := range shards {
		s := &shards[i]
		if prev := by[s.Index]; prev != nil {
			return nil, refuse("shard %d of %d twice: %s and %s (each shard's folder once)", s.Index, n, prev.Dir, s.Dir)
		}
		by[s.Index] = s
	}
	var missing []string
	for i, s := range by {
		if s == nil {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, refuse("shard %s of %d missing (given %d of %d folders): a merge without a shard would not be the planned run — 1/%d of the arrivals absent at every moment; give every shard's folder",
			strings.Join(missing, ", "), n, len(shards), n, n)
	}
	out := make([]Shard, n)
	for i, s := range by {
		out[i] = *s
	}
	if !base.Manifest.VirtualTime {
		first := slices.MinFunc(out, func(a, b Shard) int { return a.Manifest.Started.Compare(b.Manifest.Started) }).Manifest.Started
		for i := range out {
			out[i].Offset = out[i].Manifest.Started.Sub(first)
		}
	}
	return out, nil
}

// openShard reads one shard's manifest and checks that it is one.
func openShard(dir string) (Shard, error) {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return Shard{}, refuse("%s: %v", dir, errors.Unwrap(err))
	case !st.IsDir():
		return Shard{}, refuse("%s: not a folder (give a shard's run folder, not one of its files)", dir)
	case !rundir.IsRun(dir):
		return Shard{}, refuse("%s: not a run folder: no requests.jsonl (give the folder a surge run, burst or capacity with --shard I/N wrote)", dir)
	}
	m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return Shard{}, refuse("%s: manifest.json: %v (merge checks that the shards are one experiment from their manifests)", dir, err)
	}
	d := m.Distributed
	switch {
	case d == nil:
		return Shard{}, refuse("%s: not a shard: its manifest has no distributed section (it was run without --shard I/N)", dir)
	case d.Mode != record.DistShard:
		return Shard{}, refuse("%s: distributed mode %q, not %q: a coordinated run is already one folder", dir, d.Mode, record.DistShard)
	case d.Shard < 0:
		return Shard{}, refuse("%s: already a merge of %d shards", dir, d.Generators)
	case d.Generators < 1 || d.Shard >= d.Generators:
		return Shard{}, refuse("%s: manifest says shard %d of %d", dir, d.Shard, d.Generators)
	case m.Finished.IsZero():
		return Shard{}, refuse("%s: the run has not finished (or stopped before writing its results): its manifest says so", dir)
	}
	return Shard{Dir: dir, Manifest: m, Index: d.Shard}, nil
}

// Runs merges the checked shards (Open) into the run folder out: its
// requests.jsonl (k-way, streaming), engine.csv (shard 0's: every shard
// scraped the same engine), summary.json (shard 0's, for what only a run
// knew — the analysis in it is written again by the re-render) and
// manifest.json (the experiment's, with every shard in distributed).
func Runs(ctx context.Context, shards []Shard, out *rundir.Dir) (*Result, error) {
	res := &Result{Shards: shards}
	for _, s := range shards {
		res.Skew = max(res.Skew, s.Offset)
	}
	w, err := out.Records()
	if err != nil {
		return nil, err
	}
	counts, late, err := mergeRecords(ctx, shards, w)
	res.OutOfOrder = late
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		res.Records += c
	}
	first := shards[0]
	if err := copyEngine(first, out); err != nil {
		return nil, err
	}
	// The prompt lengths, counted again over the merged records (the
	// shards' percentiles do not combine); none when they cannot be.
	var counted record.TokenStats
	var intended record.TokenStats
	if ps, err := run.RecountPrompts(first.Manifest, first.Manifest.PromptSizing, out.RecordsSource()); err == nil {
		intended, counted = ps.Intended, ps.Actual
	}
	if b, err := os.ReadFile(filepath.Join(first.Dir, "summary.json")); err == nil && json.Valid(b) {
		if b, err = summary(b, intended, counted); err != nil {
			return nil, refuse("%s: summary.json: %v", first.Dir, err)
		}
		if err := out.WriteFile("summary.json", func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return nil, err
		}
	}
	m := manifest(shards, counts, res.Skew, filepath.Base(out.Path()))
	if m.PromptSizing != nil {
		m.PromptSizing.Intended, m.PromptSizing.Actual = intended, counted
	}
	if err := out.WriteManifest(m); err != nil {
		return nil, err
	}
	return res, nil
}

// summary is shard 0's summary.json as the merged run's: what only a run
// knew about the engine (its scrape status and queue-wait histograms,
// the simulator's events, a burst's prediction and μ) is the same engine's;
// what shard 0 counted of its own records is dropped — the engine's
// per-request timing (the re-render would otherwise show shard 0's) and
// the prompt-length statistics (percentiles of 1/N of the prompts, which
// cannot be merged: intended and actual, counted again over the merged
// records, replace them) — and the analysis is written again by the
// re-render.
func summary(b []byte, intended, actual record.TokenStats) ([]byte, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	delete(s, "engine_timing")
	if p, ok := s["prompt_sizing"]; ok {
		var ps record.PromptSizing
		if err := json.Unmarshal(p, &ps); err != nil {
			return nil, err
		}
		ps.Intended, ps.Actual = intended, actual
		p, err := json.Marshal(ps)
		if err != nil {
			return nil, err
		}
		s["prompt_sizing"] = p
	}
	return json.MarshalIndent(s, "", "  ")
}

// manifest is the merged run's: the experiment's settings (they agree),
// the earliest start and the latest finish, partial when a shard is, the
// spend summed, and every shard in distributed.
func manifest(shards []Shard, counts []int64, skew time.Duration, name string) *record.Manifest {
	m := *shards[0].Manifest
	m.RunID = name
	d := &record.Distribution{Mode: record.DistShard, Generators: len(shards), Shard: -1, StartSkewNs: int64(skew)}
	var why []string
	var cause record.PartialCause // the shards' own when they agree
	var spent *record.Spent
	var prefix *record.SharedPrefix
	for i, s := range shards {
		sm := s.Manifest
		if sm.Started.Before(m.Started) {
			m.Started = sm.Started
		}
		if sm.Finished.After(m.Finished) {
			m.Finished = sm.Finished
		}
		g := record.Generator{Index: s.Index, Version: sm.Version, Started: sm.Started}
		if e := sm.Distributed.Each; len(e) > 0 {
			g = e[0]
		}
		g.Index, g.Name, g.Records = s.Index, s.Dir, counts[i]
		g.Partial, g.PartialWhy = sm.Partial, sm.PartialWhy
		d.Each = append(d.Each, g)
		if sm.Partial {
			c := cmp.Or(sm.PartialCause, record.LegacyCause(true, sm.PartialWhy))
			if len(why) == 0 {
				cause = c
			} else if c != cause {
				cause = record.PartialWorker
			}
			why = append(why, fmt.Sprintf("%s (shard %d, %s)", cmp.Or(sm.PartialWhy, "partial"), s.Index, s.Dir))
		}
		if sp := sm.SharedPrefix; sp != nil {
			if prefix == nil {
				prefix = &record.SharedPrefix{Tokens: sp.Tokens, Placement: sp.Placement}
			}
			prefix.Requests += sp.Requests
			prefix.PromptTokens += sp.PromptTokens
			prefix.Lengthened += sp.Lengthened
		}
		if sp := sm.Spent; sp != nil {
			if spent == nil {
				c := *sp
				c.CostUSD = nil
				if sp.CostUSD != nil {
					v := *sp.CostUSD
					c.CostUSD = &v
				}
				spent = &c
				continue
			}
			spent.Requests += sp.Requests
			spent.InputTokens += sp.InputTokens
			spent.OutputTokens += sp.OutputTokens
			if spent.CostUSD != nil && sp.CostUSD != nil {
				*spent.CostUSD += *sp.CostUSD
			}
		}
	}
	m.Spent = spent
	if prefix != nil && prefix.PromptTokens > 0 {
		prefix.Share = float64(prefix.Tokens) * float64(prefix.Requests) / float64(prefix.PromptTokens)
	}
	if m.SharedPrefix = prefix; prefix != nil {
		if _, o, _, err := run.LoadManifestConfig(&m); err == nil {
			m.CacheState = run.CacheState(&o, prefix)
		}
	}
	if ps := m.PromptSizing; ps != nil { // shard 0's counts: see summary
		c := *ps
		c.Intended, c.Actual = record.TokenStats{}, record.TokenStats{}
		m.PromptSizing = &c
	}
	m.Partial = len(why) > 0
	m.PartialCause, m.PartialWhy = cause, strings.Join(why, "; ")
	m.Arrivals = sumArrivals(shards)
	// The merged run is the whole schedule, not shard 0 of it: its
	// options say so (distributed says how it was generated).
	if plan, o, extra, err := run.LoadManifestConfig(&m); err == nil {
		o.Shard = ""
		m.Config = run.ManifestConfig{Plan: plan, Options: o, Experiment: extra}
	}
	m.Distributed = d
	return &m
}

// sumArrivals adds up the shards' accounting of their arrivals; nil
// unless every shard has one. The merged run ended when its last shard did.
func sumArrivals(shards []Shard) *record.Arrivals {
	var sum record.Arrivals
	for _, s := range shards {
		a := s.Manifest.Arrivals
		if a == nil {
			return nil
		}
		sum.Planned += a.Planned
		sum.Recorded += a.Recorded
		sum.Unrecorded += a.Unrecorded
		sum.Unsent += a.Unsent
		sum.EndNs = max(sum.EndNs, a.EndNs)
	}
	return &sum
}

// copyEngine writes shard 0's engine samples, shifted to the merged
// origin, as the merged run's engine.csv (none when it has none).
func copyEngine(s Shard, out *rundir.Dir) error {
	f, err := os.Open(filepath.Join(s.Dir, "engine.csv"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return refuse("%s: %v", s.Dir, err)
	}
	samples, err := scrape.ReadCSV(f)
	f.Close()
	if err != nil {
		return refuse("%s: engine.csv: %v", s.Dir, err)
	}
	w, err := out.EngineCSV()
	if err != nil {
		return err
	}
	cw := scrape.NewCSVWriter(w)
	for _, smp := range samples {
		smp.TNs += int64(s.Offset)
		if err := cw.Write(smp); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// Window is how many records merge holds in all (split between the
// shards, at least MinWindow each) to put each shard's records back in
// seq order: a live run writes records as they complete, so a record
// comes after the later arrivals that completed before it. A record
// later than its shard's window is still written, out of order, and
// counted (Result.OutOfOrder).
const (
	Window    = 1 << 16
	MinWindow = 256
)

// windowOf is each of n shards' reorder window (a variable for tests).
var windowOf = func(n int) int { return max(MinWindow, Window/n) }

// mergeRecords writes the shards' records to w in (Seq, Shard) order,
// each shifted by its shard's offset, and returns how many each had and
// how many were written after a record with a higher seq.
func mergeRecords(ctx context.Context, shards []Shard, w *record.Writer) (counts []int64, outOfOrder int64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type item struct {
		rec *record.Record
		err error
	}
	chans := make([]chan item, len(shards))
	for i, s := range shards {
		ch := make(chan item, 256)
		chans[i] = ch
		path := filepath.Join(s.Dir, "requests.jsonl")
		if _, err := os.Stat(path); err != nil {
			path += ".gz"
		}
		go func() {
			defer close(ch)
			err := record.ReadFile(path, func(r *record.Record) error {
				c := *r
				select {
				case ch <- item{rec: &c}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil && ctx.Err() == nil {
				select {
				case ch <- item{err: err}:
				case <-ctx.Done():
				}
			}
		}()
	}
	window := windowOf(len(shards))
	counts = make([]int64, len(shards))
	bufs := make([]heads, len(shards)) // each shard's reorder window
	open := make([]bool, len(shards))
	for i := range open {
		open[i] = true
	}
	// fill tops shard i's window up from its file.
	fill := func(i int) error {
		for open[i] && len(bufs[i]) < window {
			it, ok := <-chans[i]
			switch {
			case !ok:
				open[i] = false
				return nil
			case it.err != nil:
				return refuse("%s: %v", shards[i].Dir, it.err)
			}
			r := it.rec
			if r.Shard != shards[i].Index {
				return refuse("%s: record %s (seq %d) says shard %d, its manifest shard %d: the folder does not hold one shard's records", shards[i].Dir, r.ID, r.Seq, r.Shard, shards[i].Index)
			}
			shift(r, int64(shards[i].Offset))
			counts[i]++
			heap.Push(&bufs[i], head{r, i})
		}
		return nil
	}
	h := &heads{} // the next record of each shard
	next := func(i int) error {
		if err := fill(i); err != nil {
			return err
		}
		if len(bufs[i]) > 0 {
			heap.Push(h, heap.Pop(&bufs[i]))
		}
		return nil
	}
	for i := range shards {
		if err := next(i); err != nil {
			return nil, 0, err
		}
	}
	last := int64(-1 << 63)
	for h.Len() > 0 {
		top := heap.Pop(h).(head)
		if top.rec.Seq < last {
			outOfOrder++
		}
		last = max(last, top.rec.Seq)
		if err := w.Write(top.rec); err != nil {
			return nil, 0, err
		}
		if err := next(top.shard); err != nil {
			return nil, 0, err
		}
	}
	return counts, outOfOrder, ctx.Err()
}

// shift moves a record's times (those since the origin, never durations)
// by d nanoseconds; absent times stay absent.
func shift(r *record.Record, d int64) {
	if d == 0 {
		return
	}
	for _, p := range []*int64{&r.ScheduledNs, &r.SentNs, &r.ConnNs, &r.HeadersNs, &r.FirstChunkNs, &r.FirstTokenNs, &r.FirstTextNs, &r.DoneNs} {
		if *p != record.None {
			*p += d
		}
	}
}

// head is the next record of one shard.
type head struct {
	rec   *record.Record
	shard int
}

// heads is a min-heap of the shards' next records by (Seq, Shard).
type heads []head

func (h heads) Len() int { return len(h) }
func (h heads) Less(i, j int) bool {
	if h[i].rec.Seq != h[j].rec.Seq {
		return h[i].rec.Seq < h[j].rec.Seq
	}
	return h[i].shard < h[j].shard
}
func (h heads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heads) Push(x any)   { *h = append(*h, x.(head)) }
func (h *heads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
