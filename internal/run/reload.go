package run

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
)

// Reloaded is a run read back from its folder: enough to re-analyse it and
// render its reports again without sending anything.
type Reloaded struct {
	Dir        *rundir.Run
	Env        *Env            // the options and target as recorded (nothing to connect to)
	Plan       schedule.Plan   // the plan as executed
	Experiment json.RawMessage // the experiment's own settings, for it to decode
	Summary    rundir.Summary  // summary.json as written (the prediction made before the run, engine status)
	// SummaryOK says summary.json was there and decoded. Without it,
	// Summary.Engine says the scrape's status is unknown, and Save does
	// not write a summary.json: it would claim to know what only the run
	// knew.
	SummaryOK bool
	// Problems names each file that was missing or unreadable, or that
	// held too little, and what the re-rendered reports lack for it: one
	// line per file (rundir.Run.Problems and more).
	Problems []string
	// Cause and Why are why the run is partial ("" when it completed):
	// the manifest's, or read from an older surge's words, or
	// record.PartialKilled for a run that died before writing its end.
	Cause record.PartialCause
	Why   string
	// full is the plan as the killed run meant to send it, and end when
	// it was last seen alive (ns after its origin); end is -1 for a run
	// that wrote its end.
	full schedule.Plan
	end  int64
}

// Reload reads the run folder at path.
func Reload(path string) (*Reloaded, error) {
	d, err := rundir.Load(path)
	if err != nil {
		return nil, err
	}
	problems := d.Problems
	manifestOK := !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, "manifest.json: ") })
	plan, o, extra, err := LoadManifestConfig(d.Manifest)
	if err != nil {
		plan, o, extra = schedule.Plan{}, DefaultOptions(), nil
		problems = append(problems, fmt.Sprintf("manifest.json: its config does not decode (%v) — default options are used and the phases are taken from the records", err))
	}
	if len(plan.Phases) == 0 {
		if plan, err = planFromRecords(d.Records); err != nil {
			return nil, err
		}
		if manifestOK && err == nil {
			problems = append(problems, "manifest.json: no plan (an older surge version?) — the phases are taken from the records' scheduled arrivals, their boundaries approximate")
		}
	}
	name := d.Manifest.Target
	if name == "" {
		name = "unknown target (not in manifest.json)"
	}
	r := &Reloaded{Dir: d, Plan: plan, Experiment: extra,
		Env: &Env{Opts: o, Version: d.Manifest.Version, Simulated: d.Manifest.Simulated, Virtual: d.Manifest.VirtualTime, name: name}}
	if len(d.Summary) > 0 {
		if err := json.Unmarshal(d.Summary, &r.Summary); err != nil {
			r.Summary = rundir.Summary{}
			problems = append(problems, fmt.Sprintf("summary.json: does not decode (%v) — what only the run knew is unknown", err))
		} else {
			r.SummaryOK = true
		}
	}
	if d.EngineAbsent {
		switch m := d.Manifest; {
		case r.SummaryOK && r.Summary.Engine.Samples > 0:
			problems = append(problems, fmt.Sprintf("engine.csv: missing (summary.json counts %d engine samples) — %s", r.Summary.Engine.Samples, rundir.EngineCost))
		case !r.SummaryOK && manifestOK && m.VirtualTime:
			problems = append(problems, "engine.csv: missing (a run in virtual time writes the engine model's samples) — "+rundir.EngineCost)
		case !r.SummaryOK && manifestOK && m.MetricsURL != "":
			problems = append(problems, "engine.csv: missing (manifest.json names a metrics URL; without summary.json it is unknown whether a scrape succeeded) — if one did, "+rundir.EngineCost)
		}
	}
	if !r.SummaryOK {
		why := "not recorded: summary.json is missing or unreadable"
		if d.EngineAbsent {
			why += ", and there is no engine.csv"
		}
		r.Summary.Engine = scrape.Status{State: scrape.StateUnknown, Reason: why, Samples: len(d.Engine)}
	}
	if ps := cmp.Or(r.Summary.Prompt, d.Manifest.PromptSizing); ps != nil {
		r.Env.CalibrationText = ps.Description
	}
	switch v := d.Manifest.SchemaVersion; {
	case !manifestOK:
	case v == 0:
		problems = append(problems, "schema: written by a surge from before its files carried a schema_version (layout 1): read as that layout — a partial run's cause is read from its words, and what became of the arrivals it did not record is counted only for a run that died")
	case v > record.SchemaVersion:
		problems = append(problems, fmt.Sprintf("schema: written by a newer surge (schema_version %d; this one reads %d) — what this version does not know is left out", v, record.SchemaVersion))
	}
	r.Problems = problems
	if err := r.partial(); err != nil {
		return nil, err
	}
	return r, nil
}

// partial finds why the run is partial. A manifest still marked
// unfinished belongs to a run that died without writing its end (the
// caller holds the folder's lock, so it is not running): it was killed,
// at about the last time it was seen alive — its heartbeat, or its latest
// record — and the plan is cut there.
func (r *Reloaded) partial() error {
	m, s := r.Dir.Manifest, &r.Summary
	r.end = -1
	r.Cause, r.Why = m.PartialCause, cmp.Or(m.PartialWhy, s.PartialWhy)
	if r.Cause == "" {
		r.Cause = cmp.Or(s.PartialCause, record.LegacyCause(m.Partial || s.Partial, r.Why))
	}
	if r.Cause != record.PartialUnfinished {
		return nil
	}
	var t tally
	if err := r.Dir.Records(func(rec *record.Record) error { t.add(rec); return nil }); err != nil {
		return err
	}
	r.end = max(m.SeenNs, t.latest)
	seen := "its latest record"
	if m.SeenNs >= t.latest {
		seen = "the last time it said it was alive"
	}
	r.Cause = record.PartialKilled
	r.Why = fmt.Sprintf("killed: the run ended without writing its results, at about +%s (%s); the records it had not yet written are lost",
		schedule.ShowDuration(time.Duration(r.end)), seen)
	r.full = r.Plan
	// A run killed before anything shows it alive still had its first
	// millisecond: the phases need a length to be analysed.
	r.Plan = cutPlan(r.Plan, max(time.Duration(r.end), time.Millisecond))
	return nil
}

// arrivals rebuilds the schedule of plan as the run built it (its seed,
// its shard), or nil where the run's arrivals were not a schedule (a
// closed loop, sessions, a coordinator's workers) or it cannot be rebuilt.
func (r *Reloaded) arrivals(plan schedule.Plan) iter.Seq[schedule.Arrival] {
	m, o := r.Dir.Manifest, &r.Env.Opts
	if o.Sessions || (m.Distributed != nil && m.Distributed.Mode == record.DistCoordinator) {
		return nil
	}
	for _, ph := range plan.Phases {
		if ph.Arrival == schedule.ArrivalClosed {
			return nil
		}
	}
	all, err := schedule.Arrivals(plan, m.Seed)
	if err != nil {
		return nil
	}
	i, n, err := o.ShardOf()
	if err != nil || n <= 1 {
		return all
	}
	return func(yield func(schedule.Arrival) bool) {
		for a := range all {
			if schedule.ShardOf(a.Seq, n) == i && !yield(a) {
				return
			}
		}
	}
}

// Save writes again the files a re-render derives from the records into
// dir: timeseries.csv, and summary.json when the folder had a readable
// one (it also holds what only the run knew — the prediction, the
// engine's status, the settle time — which a summary.json rebuilt from
// the records would claim to know). manifest.json, the record of what was
// tested, is never written: a second re-render finds what the first found
// missing.
func (r *Reloaded) Save(dir *rundir.Dir, res *Result) error {
	if r.SummaryOK {
		if err := dir.WriteJSON("summary.json", res.summary()); err != nil {
			return err
		}
	}
	return dir.WriteFile("timeseries.csv", func(w io.Writer) error { return rundir.WriteTimeseries(w, res.Analysis, res.Engine) })
}

// planFromRecords rebuilds a plan from the records alone, for a folder
// whose manifest is missing or holds none: one phase per phase label, in
// the order of their first scheduled arrival, each lasting until the next
// one's first arrival (the first from 0, the last until one mean gap
// after its last arrival), at the rate of its arrivals.
func planFromRecords(recs record.Source) (schedule.Plan, error) {
	type span struct {
		name        string
		first, last int64
		n           int
	}
	var spans []*span
	by := map[string]*span{}
	err := recs.Each(func(r *record.Record) error {
		s, ok := by[r.Phase]
		if !ok {
			s = &span{name: r.Phase, first: r.ScheduledNs, last: r.ScheduledNs}
			by[r.Phase] = s
			spans = append(spans, s)
		}
		s.first, s.last, s.n = min(s.first, r.ScheduledNs), max(s.last, r.ScheduledNs), s.n+1
		return nil
	})
	if err != nil {
		return schedule.Plan{}, err
	}
	slices.SortStableFunc(spans, func(a, b *span) int { return cmp.Compare(a.first, b.first) })
	var p schedule.Plan
	for i, s := range spans {
		start := s.first
		if i == 0 {
			start = 0
		}
		end := s.last + max(1, (s.last-start)/int64(max(1, s.n)))
		if i+1 < len(spans) {
			end = spans[i+1].first
		}
		d := time.Duration(max(1, end-start))
		p.Phases = append(p.Phases, schedule.Phase{Name: s.name, Duration: d, Rate: float64(s.n) / d.Seconds()})
	}
	return p, nil
}

// Result re-analyses the records with the recovery rule of the experiment
// (zero for none) and returns the run's result as Execute returned it, its
// files to be written again into dir (the folder it was read from).
func (r *Reloaded) Result(dir *rundir.Dir, rule analyze.RecoveryRule) (*Result, error) {
	var exclude []string
	for _, p := range r.Plan.Phases {
		if p.Name == schedule.PhaseWarmup {
			exclude = append(exclude, p.Name)
		}
	}
	m := r.Dir.Manifest
	acfg := r.Env.AnalyzeConfig(r.Plan, exclude, rule)
	slo := r.Env.Opts.SLO()
	slo.Interrupted = r.Cause.CutRequests()
	st, err := newAnalysis(acfg, slo)
	if err != nil {
		return nil, fmt.Errorf("run: %s: %w", r.Dir.Path, err)
	}
	var t tally
	if err := r.Dir.Records(func(rec *record.Record) error { t.add(rec); return st.add(rec) }); err != nil {
		return nil, err // names the file and line
	}
	// The arrivals without a record count as offered (accounting.go).
	arrivals := m.Arrivals
	switch {
	case r.end >= 0: // killed: the whole plan is accounted for here
		if all := r.arrivals(r.full); all != nil {
			a, err := t.settle(all, r.end, st.add)
			if err != nil {
				return nil, err
			}
			arrivals = &a
		}
	case arrivals != nil && arrivals.Unrecorded > 0:
		if all := r.arrivals(r.Plan); all != nil {
			if _, err := t.settle(all, arrivals.EndNs, st.add); err != nil {
				return nil, err
			}
		}
	}
	s := &r.Summary
	res := &Result{
		Spec:   Spec{Name: m.RunID, Dir: dir, Command: m.Command, Plan: r.Plan, Exclude: exclude, Recovery: rule, Rep: m.Rep, Repeats: m.Repeats},
		Scrape: s.Engine, Engine: r.Dir.Engine, Records: r.Dir.Records,
		Partial: r.Cause != "", PartialCause: r.Cause, PartialWhy: r.Why, Arrivals: arrivals, Simulated: m.Simulated, Virtual: m.VirtualTime,
		Plan: r.Plan, Started: m.Started, Elapsed: m.Finished.Sub(m.Started),
		SimEvents: s.SimEvents, QueueWait: s.EngineWait, Burst: s.Burst, Manifest: m,
		EngineTiming: s.EngineTiming, Spans: s.EngineSpans,
		Prompt: s.Prompt, SelfAccuracy: s.SelfAccuracy,
	}
	if res.Prompt == nil {
		res.Prompt = m.PromptSizing
	}
	if r.end >= 0 {
		res.Elapsed = time.Duration(r.end)
	}
	if d := m.Distributed; d != nil && d.Mode == record.DistCoordinator {
		res.Distributed = d // the per-worker lines, as the run wrote them
	}
	res.Scaling = loadScaling(r.Dir.Path, res)
	if res.QueueWait == nil {
		res.QueueWait = map[string]analyze.QueueWait{}
		if !r.SummaryOK && len(res.Engine) > 0 { // engine.csv holds the queue-time histogram the summary derived it from
			for _, b := range r.Plan.Bounds() {
				res.QueueWait[b.Name] = QueueWaitOf(scrape.PhaseStats(res.Engine, scrape.QueueTime, int64(b.Start), int64(b.End)))
			}
		}
	}
	st.finish(res)
	return res, nil
}
