package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
)

// RunConfig is one experiment of arbitrary phases (`surge run`). Either
// Phases (usually from a YAML file) or the single-phase flags describe the
// load.
type RunConfig struct {
	Options     `yaml:",inline"`
	BaselineRPS float64          `yaml:"baseline_rps"` // the named baseline that phase multipliers refer to
	Phases      []schedule.Phase `yaml:"phases"`

	Rate       float64       `yaml:"rate"`       // single phase: arrivals/s
	Duration   time.Duration `yaml:"duration"`   // single phase: length
	Arrival    string        `yaml:"arrival"`    // single phase: constant, poisson, gamma, replay
	Burstiness float64       `yaml:"burstiness"` // single phase: gamma shape
	Trace      string        `yaml:"trace"`      // single phase: replay this trace (CSV or JSONL)
	Speed      float64       `yaml:"speed"`      // single phase: replay speed factor
	Warmup     time.Duration `yaml:"warmup"`     // single phase: warmup at the same rate, excluded

	// ConfigFile is the YAML file the config came from; replay trace paths
	// are relative to its folder.
	ConfigFile string `yaml:"-"`
}

// DefaultRunConfig is a 30 s Poisson run at 5 requests/s.
func DefaultRunConfig() RunConfig {
	return RunConfig{Options: DefaultOptions(), Rate: 5, Duration: 30 * time.Second, Arrival: schedule.ArrivalPoisson, Burstiness: 1}
}

// RegisterFlags binds the flags of `surge run`.
func (c *RunConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&c.Rate, "rate", c.Rate, "arrivals per second (single phase)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of the measured phase")
	fs.StringVar(&c.Arrival, "arrival", c.Arrival, "arrival process: constant, poisson, gamma, replay")
	fs.Float64Var(&c.Burstiness, "burstiness", c.Burstiness, "gamma shape: 1 = Poisson, < 1 burstier, > 1 smoother")
	fs.StringVar(&c.Trace, "trace", c.Trace, "replay arrivals from this trace (CSV or JSONL with offset_s/offset_ms/timestamp)")
	fs.Float64Var(&c.Speed, "speed", c.Speed, "replay speed factor (2 = twice as fast)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "warmup at the same rate before the measured phase (excluded from results)")
	fs.Float64Var(&c.BaselineRPS, "baseline-rps", c.BaselineRPS, "named baseline for phases given as multipliers (YAML)")
	c.Options.RegisterFlags(fs)
}

// Plan turns the configuration into a schedule plan.
func (c *RunConfig) Plan() (schedule.Plan, []string, error) {
	p := schedule.Plan{BaselineRPS: c.BaselineRPS, Phases: c.Phases}
	var exclude []string
	if len(p.Phases) == 0 {
		main := schedule.Phase{Name: "main", Duration: c.Duration, Rate: c.Rate, Arrival: c.Arrival, Burstiness: c.Burstiness, TraceFile: c.Trace, Speed: c.Speed}
		if c.Arrival == schedule.ArrivalReplay || c.Trace != "" {
			main.Arrival, main.Rate = schedule.ArrivalReplay, 0
		}
		if c.Arrival != schedule.ArrivalGamma {
			main.Burstiness = 0
		}
		if c.Warmup > 0 {
			w := main
			w.Name, w.Duration = schedule.PhaseWarmup, c.Warmup
			p.Phases = append(p.Phases, w)
			exclude = append(exclude, schedule.PhaseWarmup)
		}
		p.Phases = append(p.Phases, main)
	} else {
		for _, ph := range p.Phases {
			if ph.Name == schedule.PhaseWarmup {
				exclude = append(exclude, ph.Name)
			}
		}
	}
	dir := "."
	if c.ConfigFile != "" {
		dir = filepath.Dir(c.ConfigFile)
	}
	if err := p.LoadTraces(dir); err != nil {
		return p, nil, err
	}
	if err := p.Validate(); err != nil {
		if len(c.Phases) == 0 {
			return p, nil, flagPhaseError(err)
		}
		return p, nil, err
	}
	return p, exclude, nil
}

// flagPhaseError names the flag behind an error in the phases that the
// single-phase flags built: `schedule: phase "main": rate: …` → `--rate: …`.
func flagPhaseError(err error) error {
	msg := err.Error()
	for _, field := range []string{"rate", "duration", "arrival", "burstiness", "trace", "speed"} {
		for _, phase := range []string{"main", schedule.PhaseWarmup} {
			prefix := `schedule: phase "` + phase + `": ` + field + ": "
			if strings.HasPrefix(msg, prefix) {
				flag := field
				if phase == schedule.PhaseWarmup && field == "duration" {
					flag = "warmup"
				}
				return fmt.Errorf("--%s: %s", flag, strings.TrimPrefix(msg, prefix))
			}
		}
	}
	return err
}

// Outcome summarises an experiment for the exit code.
type Outcome struct {
	SLOPass  bool // every SLO held
	Unusable bool // the target answered nothing usable
	Partial  bool // interrupted
	Dir      string
}

// Run executes `surge run`: one run of the configured phases, then the
// per-phase summary on stdout and the reports in the run folder.
func Run(ctx context.Context, env *Env, c *RunConfig, dir string) (Outcome, error) {
	plan, exclude, err := c.Plan()
	if err != nil {
		return Outcome{}, &ConfigError{err}
	}
	if env.Simulated && !env.Virtual {
		fmt.Fprintf(env.Stdout, "No --target: running against surge's built-in simulated engine at %s.\n", env.BaseURL)
	}
	fmt.Fprintf(env.Stdout, "surge run: %d phase(s), %s in all; writing %s\n", len(plan.Phases), plan.Duration(), dir)
	res, err := env.Execute(ctx, Spec{Name: filepath.Base(dir), Dir: dir, Command: "run", Plan: plan, Exclude: exclude, Extra: c})
	if err != nil {
		return Outcome{}, err
	}
	PrintPhases(env.Stdout, res)

	if err := writeRunReports(env, res, dir); err != nil {
		return Outcome{}, err
	}
	out := Outcome{SLOPass: res.Analysis.Verdict.Pass, Partial: res.Partial, Dir: dir, Unusable: unusable(res)}
	fmt.Fprintf(env.Stdout, "\nSLO (overall): %s\nreports: %s\n", verdictWord(res.Analysis.Verdict.Pass), filepath.Join(dir, "results.md"))
	if out.Unusable {
		fmt.Fprintln(env.Stdout, "The target was unusable: no request succeeded. See the error classes above and requests.jsonl.")
	}
	return out, nil
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// unusable reports a run in which requests were sent and every one that
// finished failed (requests cancelled by Ctrl-C do not count either way).
func unusable(res *Result) bool {
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
