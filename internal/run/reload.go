package run

import (
	"encoding/json"
	"fmt"
	"slices"

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
}

// Reload reads the run folder at path.
func Reload(path string) (*Reloaded, error) {
	d, err := rundir.Load(path)
	if err != nil {
		return nil, err
	}
	plan, o, extra, err := LoadManifestConfig(d.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &Reloaded{Dir: d, Plan: plan, Experiment: extra,
		Env: &Env{Opts: o, Version: d.Manifest.Version, Simulated: d.Manifest.Simulated, Virtual: d.Manifest.VirtualTime, name: d.Manifest.Target}}
	if len(d.Summary) > 0 {
		if err := json.Unmarshal(d.Summary, &r.Summary); err != nil {
			return nil, fmt.Errorf("run: %s: summary.json: %w", path, err)
		}
	}
	return r, nil
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
