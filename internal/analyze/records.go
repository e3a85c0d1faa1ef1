package analyze

import (
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Records analyses recs with cfg in one go. When horizon > 0, phases are cut at
// the horizon and later records ignored.
func Records(cfg Config, recs []record.Record, horizon time.Duration) (*Result, error) {
	if horizon > 0 {
		var ps []Phase
		for _, p := range cfg.Phases {
			if p.Start >= horizon {
				break
			}
			p.End = min(p.End, horizon)
			ps = append(ps, p)
		}
		cfg.Phases = ps
	}
	an, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if horizon > 0 && time.Duration(recs[i].ScheduledNs) >= horizon {
			continue
		}
		an.Add(&recs[i])
	}
	return an.Result(), nil
}
