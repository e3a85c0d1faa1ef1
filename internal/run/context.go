package run

import (
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// warnContext says before a run when some of its requests cannot fit the
// model's context: intended prompt tokens + max_tokens over the context
// length the target reported (calibrate.Result.ContextTokens). vLLM, and
// the simulator, refuse such a request with 400 before doing any work,
// so they would show up as failures that no load explains. The draws are
// the run's own: a generator of its own walks the arrivals in order, as
// the budget's shaper does. Sessions are not checked (a later turn's
// context grows with the conversation), nor a schedule made lazily.
func (e *Env) warnContext(arrivals []schedule.Arrival, wcfg workload.Config) {
	limit := e.Calibration.ContextTokens
	if limit <= 0 || len(arrivals) == 0 || e.Opts.Sessions {
		return
	}
	gen, err := workload.New(wcfg)
	if err != nil {
		return // Execute reports it
	}
	over, most := 0, 0
	for i := range arrivals {
		prompt, maxTok := gen.Shape(arrivals[i])
		if need := prompt + maxTok; need > limit {
			over++
			most = max(most, need)
		}
	}
	if over == 0 {
		return
	}
	e.say("WARNING: %d of %d requests ask for more than the model's context of %d tokens (prompt + max_tokens, up to %d): the target will refuse them (vLLM answers 400); shorten --prompt-tokens or --output-tokens, or pick a profile with shorter prompts",
		over, len(arrivals), limit, most)
}
