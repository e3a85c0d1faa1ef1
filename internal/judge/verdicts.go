package judge

import (
	"fmt"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/scrape"
)

// Verdicts is every judgement of one run: the SLO per phase and over
// the measured phases together, and the recovery after a burst.
type Verdicts struct {
	Phases   []PhaseVerdict `json:"phases"`
	Overall  Verdict        `json:"overall"`  // the SLO over the phases that are not excluded
	Recovery Recovery       `json:"recovery"` // after the burst; Outcome INCONCLUSIVE with a reason when there is none
}

// PhaseVerdict is the SLO's verdict on one phase.
type PhaseVerdict struct {
	Name     string `json:"name"`
	Excluded bool   `json:"excluded,omitempty"`
	Verdict
}

// Phase returns the verdict of the named phase (none of a nil v).
func (v *Verdicts) Phase(name string) (Verdict, bool) {
	if v == nil {
		return Verdict{}, false
	}
	for _, p := range v.Phases {
		if p.Name == name {
			return p.Verdict, true
		}
	}
	return Verdict{}, false
}

// Rules are what a run is judged by.
type Rules struct {
	SLO SLO
	// Partial marks a run cut short (Ctrl-C, a budget, a write error):
	// its verdicts are Partial.
	Partial bool
	// Engine is the engine's scraped samples over the run (nil when not
	// scraped): the waiting queue's return to its baseline level is
	// reported beside the latency's recovery.
	Engine []scrape.Sample
}

// Run judges one run's analysis.
func Run(a *analyze.Result, r Rules) *Verdicts {
	v := &Verdicts{}
	for i := range a.Phases {
		p := &a.Phases[i]
		pv := PhaseVerdict{Name: p.Name, Excluded: p.Excluded, Verdict: r.SLO.Check(&p.Stats)}
		pv.Partial = r.Partial
		v.Phases = append(v.Phases, pv)
	}
	v.Overall = r.SLO.Check(&a.Overall)
	v.Overall.Partial = r.Partial
	v.Recovery = JudgeRecovery(a, r.Engine)
	return v
}

// Pooled judges the pooled analysis of repeated runs (analyze.Pool):
// the SLO per phase and overall; recovery is per run.
func Pooled(a *analyze.Result, slo SLO, partial bool) *Verdicts {
	return Run(a, Rules{SLO: slo, Partial: partial})
}

// ArrivalVsCompletion explains, for the first measured phase where it
// matters, why goodput/s can be above completed/s: goodput counts a
// phase's arrivals that met the deadline, whenever they finished, and
// completed/s the completions that fell inside the phase. It matters when
// goodput/s is more than 5% and 0.5 req/s above completed/s (below that,
// the two differ by the requests that straddle a phase's edges); "" when
// no phase is. The caller leaves out phases whose completed/s is not
// measured (a budget cut the phase short).
func ArrivalVsCompletion(phases []analyze.PhaseResult) string {
	for i := range phases {
		if p := &phases[i]; !p.Excluded && p.GoodputRPS > p.CompletedRPS*1.05 && p.GoodputRPS-p.CompletedRPS > 0.5 {
			return fmt.Sprintf("goodput/s counts a phase's requests by arrival, completed/s the completions in its time: %s's good requests finished after it ended, so its goodput/s (%.2f) is above its completed/s (%.2f)",
				p.Name, p.GoodputRPS, p.CompletedRPS)
		}
	}
	return ""
}
