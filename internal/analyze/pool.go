package analyze

import (
	"fmt"
	"slices"

	"github.com/surge-bench/surge/internal/record"
)

// PoolRun is one of the runs Pool analyses together: the configuration it
// was analysed with (its own phase bounds: a recovery stopped early ends
// its last phase sooner) and its records (a run's requests.jsonl, read once).
type PoolRun struct {
	Config  Config
	Records record.Source
}

// Pool analyses repeated runs of the same phases as one sample (docs/method.md
// §7: never average percentiles, merge raw observations). Each run is
// analysed with its own configuration; then, phase by phase, their
// accumulators are merged — histograms bucket by bucket, losslessly, as
// Merge does — so a pooled percentile is the nearest-rank percentile of
// every run's values together, with every run's timeouts ranked above
// them. A pooled rate is the runs' counts over their summed durations:
// the runs laid end to end. The runs must have the same phases (names, in
// order). Windows, the timeline and recovery are not pooled: they are
// per run (recovery is one value per scaling event, so its pooled view is
// the distribution of the runs' values, Spread), and the Result says so
// in Recovery.Reason.
func Pool(runs []PoolRun) (*Result, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("analyze: pool: no runs")
	}
	var ans []*Analyzer
	for i, r := range runs {
		a, err := New(r.Config)
		if err != nil {
			return nil, fmt.Errorf("analyze: pool: run %d: %w", i+1, err)
		}
		if err := r.Records.Each(func(rec *record.Record) error { a.Add(rec); return nil }); err != nil {
			return nil, fmt.Errorf("analyze: pool: run %d: %w", i+1, err)
		}
		if i > 0 && !slices.EqualFunc(a.cfg.Phases, ans[0].cfg.Phases, func(p, q Phase) bool { return p.Name == q.Name && p.Excluded == q.Excluded }) {
			return nil, fmt.Errorf("analyze: pool: run %d has other phases than run 1", i+1)
		}
		ans = append(ans, a)
	}
	first := ans[0]
	c := &first.cfg
	r := first.Result() // the settings, the anomalies' shape
	r.Anomalies = Anomalies{}
	r.Windows, r.Timeline, r.Profiles, r.Sessions = nil, nil, nil, nil
	r.Recovery = Recovery{Reason: "pooled: recovery is one value per run (per scaling event); see the runs' spread", Windows: []RecoveryWindow{}, Baseline: []RecoveryWindow{}}
	if first.burst >= 0 {
		r.Recovery.Metric = c.Recovery.Metric
	}
	timeoutMs := durMs(c.Timeout)
	overall := &acc{}
	var overallNs int64
	r.Phases = r.Phases[:0]
	for i, p := range c.Phases {
		merged := &acc{}
		var d int64
		for _, a := range ans {
			merged.merge(a.phases[i])
			ph := a.cfg.Phases[i]
			d += int64(ph.End - ph.Start)
		}
		st := merged.stats(d, timeoutMs)
		r.Phases = append(r.Phases, PhaseResult{Name: p.Name, StartMs: durMs(p.Start), EndMs: durMs(p.End), Rate: p.Rate, Excluded: p.Excluded,
			Stats: st})
		if !p.Excluded {
			overall.merge(merged)
			overallNs += d
		}
	}
	for _, a := range ans {
		r.Anomalies.add(a.anom)
	}
	r.Overall = overall.stats(overallNs, timeoutMs)
	return r, nil
}
