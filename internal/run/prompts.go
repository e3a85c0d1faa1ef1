package run

import (
	"errors"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// RecountPrompts is a run folder's intended vs server-reported prompt
// lengths (record.PromptSizing's Intended and Actual) counted again from
// its records, as the run itself counts them while it analyses: for
// surge merge, whose shards' percentiles cannot be combined. The
// server's counts are the records'; the intended lengths are the
// workload's draws, made again from the manifest's workload, seed and
// plan (a synthetic length depends on those and the arrival only, not on
// the prompt sizing). The rest of sizing (calibration) is ps's. A dataset
// workload is not redrawn (its file may not be at hand): an error says so.
func RecountPrompts(m *record.Manifest, ps *record.PromptSizing, records record.Source) (*record.PromptSizing, error) {
	plan, o, _, err := LoadManifestConfig(m)
	if err != nil {
		return nil, err
	}
	if o.Dataset != "" {
		return nil, errors.New("the intended lengths of a dataset's prompts need the dataset file")
	}
	wcfg, err := o.WorkloadConfig()
	if err != nil {
		return nil, err
	}
	wcfg.Seed = m.Seed // the run's seed (Spec.Seed)
	lazy, err := schedule.Arrivals(plan, m.Seed)
	if err != nil {
		return nil, err
	}
	ax := newArrivalIndex(nil, lazy)
	defer ax.close()
	p := newPromptAcc(&record.PromptSizing{}, ax)
	if ps != nil {
		c := *ps
		p.ps = &c
	}
	if p.gen, err = workload.New(wcfg); err != nil {
		return nil, err
	}
	if err := records.Each(func(r *record.Record) error { p.add(r); return nil }); err != nil {
		return nil, err
	}
	return p.result(), nil
}
