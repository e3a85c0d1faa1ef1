// Package experiment holds what every experiment shares: the outcome that
// decides the exit code, the settle gate between runs, the level loop of
// capacity searches and sweeps, the presentation of a run (console,
// results tables, charts) and `surge run` itself — one run of arbitrary
// phases. The other experiments live in the packages below it (burst,
// capacity, sweep, soak); each is its configuration, its algorithm as
// plain functions over run results, and its table columns.
//
// An experiment is a sequence of runs (run.Env.Execute), each into a run
// folder of its own (rundir): a burst is one run per multiplier, a capacity
// search one per step, a sweep one per level, a soak and `surge run` a
// single run.
package experiment

import (
	"fmt"
	"io"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
)

// Outcome summarises an experiment for the exit code.
type Outcome struct {
	// Verdict decides the exit code: PASS when every SLO held, FAIL
	// when one failed, INCONCLUSIVE when none failed but one could not
	// be decided on its sample.
	Verdict  judge.Outcome
	Unusable bool // the target answered nothing usable
	// UnusableWhy is the one-line cause when a run stopped early against
	// an unusable target (run.Result.Unusable); "" otherwise.
	UnusableWhy string
	Partial     bool // interrupted, or stopped by a write error
	Dir         string
	// Meaning says in a few words what decided Verdict for this command,
	// for the exit-code line, e.g. "a sustainable rate was found (6.5
	// req/s)" or "no level stayed within the latency budget"; empty means
	// "every SLO held" or "an SLO failed".
	Meaning string
}

// VerdictWord is PASS or FAIL.
func VerdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// UnusableWhy is the cause of the first of results that stopped early
// against an unusable target (run.Result.Unusable), "" when none did.
func UnusableWhy(results ...*run.Result) string {
	for _, r := range results {
		if r != nil && r.Unusable != "" {
			return r.Unusable
		}
	}
	return ""
}

// Unusable reports a run that stopped early against an unusable target,
// or in which requests were sent and every one that finished failed
// (requests cancelled by Ctrl-C do not count either way).
func Unusable(res *run.Result) bool {
	if res.Unusable != "" {
		return true
	}
	if res.Analysis.Overall.Succeeded > 0 {
		return false
	}
	failed := int64(0)
	for _, p := range res.Analysis.Phases {
		if p.Succeeded > 0 {
			return false // e.g. only the (excluded) warmup succeeded
		}
		for out, n := range p.Outcomes {
			if out != record.OK && out != record.Cancelled && out != record.GeneratorDrop {
				failed += n
			}
		}
	}
	return failed > 0
}

// AnyOK reports whether any of the runs had a successful request.
func AnyOK(results ...*run.Result) bool {
	for _, r := range results {
		if r.Analysis.Overall.Succeeded > 0 {
			return true
		}
	}
	return false
}

// Announce says what the experiment runs against, when that is not the
// user's own target: the in-process simulator, or virtual time.
func Announce(w io.Writer, env *run.Env, command string) {
	switch {
	case env.Virtual:
		fmt.Fprintf(w, "surge %s --simulate — virtual time against the engine model; no requests leave this process.\n", command)
	case env.Simulated:
		fmt.Fprintf(w, "No --target: running against surge's built-in simulated engine at %s.\n", env.BaseURL)
	}
	AnnounceCalibration(w, env)
}

// AnnounceCalibration prints how prompts are sized for the target's
// tokenizer: one line, plus one for a fallback from /tokenize and a
// warning when calibration failed.
func AnnounceCalibration(w io.Writer, env *run.Env) {
	c := &env.Calibration
	if c.Method == "" {
		return
	}
	fmt.Fprintf(w, "prompt sizing: %s\n", c.Describe())
	if c.Fallback != "" {
		fmt.Fprintf(w, "  (%s)\n", c.Fallback)
	}
	if c.Warning != "" {
		fmt.Fprintln(w, "WARNING:", c.Warning)
	}
}
