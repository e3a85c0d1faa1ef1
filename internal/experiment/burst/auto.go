package burst

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/capacity"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

// autoBaseline runs the capacity search for `surge burst --baseline-rps
// auto` into d/capacity and sets the burst's baseline to its suggestion.
// It returns μ: the sustainable rate, unless --capacity-rps was given; the
// sustainable rate also becomes c.CapacityRPS.
func autoBaseline(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (mu capacityInfo, err error) {
	cc := capacity.DefaultConfig()
	cc.Options, cc.Simulate = c.Options, c.Simulate
	sub, err := d.Sub("capacity")
	if err != nil {
		return mu, err
	}
	fmt.Fprintf(w, "--baseline-rps auto: searching the sustainable capacity first (%s).\n", sub.Path())
	cr, err := capacity.Search(ctx, env, &cc, sub, w)
	if err != nil {
		return mu, err
	}
	if err := capacity.WriteReports(env, &cc, sub, cr); err != nil {
		return mu, err
	}
	capacity.PrintSummary(w, cr, sub.Path())
	if cr.SustainableRPS == 0 || cr.GeneratorLimited || cr.Partial {
		why := "no step met the SLO"
		switch {
		case cr.Partial:
			why = "the search was interrupted"
		case cr.GeneratorLimited:
			why = "the load generator could not reach the rates needed"
		}
		return mu, fmt.Errorf("--baseline-rps auto: %s; see %s or pass --baseline-rps: %w", why, filepath.Clean(sub.Path()), capacity.ErrNoSustainableRate)
	}
	c.BaselineRPS = cr.BaselineRPS
	mu = capacityInfo{c.CapacityRPS, "--capacity-rps"}
	if c.CapacityRPS == 0 {
		// The search's rate is μ as if given with --capacity-rps: it is
		// recorded in the manifest, and a burst's backlog does not replace
		// it with a measured μ.
		c.CapacityRPS = cr.SustainableRPS
		mu = capacityInfo{cr.SustainableRPS, fmt.Sprintf("capacity search: sustainable %s req/s", experiment.FmtRate(cr.SustainableRPS))}
	}
	fmt.Fprintf(w, "burst baseline: %s req/s (%g × the sustainable %s req/s)\n\n", experiment.FmtRate(c.BaselineRPS), cc.BaselineFraction, experiment.FmtRate(cr.SustainableRPS))
	return mu, nil
}
