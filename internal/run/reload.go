package run

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

// Reloaded is a run read back from its folder: enough to re-analyse it and
// render its reports again without sending anything.
type Reloaded struct {
	Dir        *rundir.Run
	Env        *Env            // the options and target as recorded (nothing to connect to)
	Plan       schedule.Plan   // the plan as executed
	Experiment json.RawMessage // the experiment's own settings, for it to decode
	Summary    rundir.Summary  // summary.json as written (the prediction made before the run, engine status)
	// Problems names each file that was missing or unreadable, or that
	// held too little, and what the re-rendered reports lack for it: one
	// line per file (rundir.Run.Problems and more).
	Problems []string
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
		plan = planFromRecords(d.Records)
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
		}
	}
	r.Problems = problems
	return r, nil
}

// planFromRecords rebuilds a plan from the records alone, for a folder
// whose manifest is missing or holds none: one phase per phase label, in
// the order of their first scheduled arrival, each lasting until the next
// one's first arrival (the first from 0, the last until one mean gap
// after its last arrival), at the rate of its arrivals.
func planFromRecords(recs []record.Record) schedule.Plan {
	type span struct {
		name        string
		first, last int64
		n           int
	}
	var spans []*span
	by := map[string]*span{}
	for i := range recs {
		r := &recs[i]
		s, ok := by[r.Phase]
		if !ok {
			s = &span{name: r.Phase, first: r.ScheduledNs, last: r.ScheduledNs}
			by[r.Phase] = s
			spans = append(spans, s)
		}
		s.first, s.last, s.n = min(s.first, r.ScheduledNs), max(s.last, r.ScheduledNs), s.n+1
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
	return p
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
	an, err := analyze.Records(acfg, r.Dir.Records, 0)
	if err != nil {
		return nil, fmt.Errorf("run: %s: %w", r.Dir.Path, err)
	}
	an.Sessions = analyze.Sessions(acfg, r.Dir.Records)
	s := &r.Summary
	res := &Result{
		Spec:     Spec{Name: m.RunID, Dir: dir, Command: m.Command, Plan: r.Plan, Exclude: exclude, Recovery: rule},
		Analysis: an, Scrape: s.Engine, Engine: r.Dir.Engine, Records: r.Dir.Records,
		Partial: m.Partial, PartialWhy: m.PartialWhy, Simulated: m.Simulated, Virtual: m.VirtualTime,
		Plan: r.Plan, Started: m.Started, Elapsed: m.Finished.Sub(m.Started),
		SimEvents: s.SimEvents, QueueWait: s.EngineWait, Burst: s.Burst, Manifest: m,
		EngineTiming: s.EngineTiming, Spans: s.EngineSpans,
		Prompt: s.Prompt,
	}
	if res.Prompt == nil {
		res.Prompt = m.PromptSizing
	}
	if res.QueueWait == nil {
		res.QueueWait = map[string]analyze.QueueWait{}
	}
	for i := range res.Records {
		if res.Records[i].Outcome == record.OK {
			res.DoneOK = append(res.DoneOK, res.Records[i].DoneNs)
		}
	}
	slices.Sort(res.DoneOK)
	return res, nil
}
