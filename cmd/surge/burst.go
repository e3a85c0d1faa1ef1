package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/burst"
	"github.com/surge-bench/surge/internal/experiment/vary"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

func newBurstCmd() *cobra.Command {
	cfg := burst.DefaultConfig()
	var file string
	cmd := &cobra.Command{
		Use:   "burst",
		Short: "The burst experiment: 2x/5x/10x bursts over a named baseline, goodput and recovery time",
		Long: `Run the burst experiment. For each multiplier k (default 2, 5, 10) surge
makes a separate run of four phases — warmup (excluded), baseline, burst at
k × baseline, recovery at baseline — after waiting for the target to settle
back to baseline. It reports, per multiplier: offered, sent, successful and
goodput RPS, TTFT and completion P50/P95/P99, engine queue wait (when the
engine's metrics are scraped), 429/timeout/error/drop rates, and the recovery
time: how long after the burst ended the P99 latency was back within 10% of
the baseline's for three consecutive windows — next to what the backlog
model predicted.

With no --target, surge runs a ~3-minute demo against its built-in simulated
engine. With --simulate, the whole experiment runs in virtual time against
the engine model in seconds: a what-if tool for capacity planning.` + exitCodesBurst,
		Example: `  # the demo: the built-in simulator, short phases, about 3 minutes
  surge burst

  # a real endpoint: a named, sustainable baseline of 8 req/s, vLLM metrics scraped
  OPENAI_API_KEY=... surge burst --target https://llm.example.com/v1 --model my-model \
    --baseline-rps 8 --metrics-url https://llm.example.com/metrics --metrics-preset vllm

  # what if: two replicas and a 429 limit of 50 waiting requests, in virtual time
  surge burst --simulate --baseline-rps 12 --replicas 2 --max-waiting 50

  # five runs of each multiplier (burst-5x/rep-1 … rep-5): each P99 and recovery,
  # the pooled row, min/median/max and a 95% bootstrap interval
  surge burst --simulate --baseline-rps 8 --multipliers 2,5 --repeat 5

  # what if, one setting at a time: the whole experiment per value, then their comparison
  surge burst --simulate --baseline-rps 8 --multipliers 5 --vary max-waiting=0,20,50

  # the plan of every multiplier and its workload, before anything is sent
  surge burst --baseline-rps 8 --multipliers 2,5,10 --dry-run

  # the bursts with real prompts: chat request bodies from production logs, max_tokens capped
  surge burst --target http://127.0.0.1:8000/v1 --baseline-rps 8 \
    --dataset requests.jsonl --dataset-format openai-jsonl --max-tokens-cap 1024

  # agent-like traffic: a burst of 5x new sessions of 4 turns, each turn fanning
  # out into 2 parallel sub-requests (the built-in simulator over HTTP); the rate
  # is of sessions: 0.2/s × 4 turns × (1 + 2) requests ≈ 2.4 req/s at the baseline
  surge burst --sessions --baseline-rps 0.2 --multipliers 5 --session-turns 4 --fanout 2`,

		Args: cobra.NoArgs,
	}
	f := newFlags(cmd.Flags())
	f.fileFlag(&file)
	f.value(baselineFlag{&cfg}, "baseline_rps", "baseline-rps", "the named baseline in requests/s (must be sustainable; required with --target), or auto: run a capacity search first and use its suggestion")
	f.floats(&cfg.Multipliers, "multipliers", "multipliers", "burst multipliers; each is a separate run at baseline × k (one listed twice, 5,5, is two runs of it: repeats)")
	f.dur(&cfg.Warmup, "warmup", "warmup", "warmup phase at the baseline rate (excluded from results)")
	f.dur(&cfg.Baseline, "baseline", "baseline", "baseline phase: reference latency and goodput")
	f.dur(&cfg.Burst, "burst", "burst", "burst phase at baseline × k")
	f.dur(&cfg.Recovery, "recovery", "recovery", "planned recovery phase at the baseline rate")
	f.dur(&cfg.RecoveryLimit, "recovery_limit", "recovery-limit", "keep watching recovery up to this long if not recovered in the planned window")
	f.str(&cfg.Arrival, "arrival", "arrival", "arrival process: constant, poisson, gamma")
	f.f64(&cfg.Burstiness, "burstiness", "burstiness", "gamma shape (with --arrival gamma)")
	f.str(&cfg.RecoveryMetric, "recovery_metric", "recovery-metric", "latency judged for recovery: e2e (completion) or ttft")
	f.f64(&cfg.CapacityRPS, "capacity_rps", "capacity-rps", "the target's capacity μ in requests/s for the prediction (default: estimate)")
	f.integer(&cfg.QueueLimit, "queue_limit", "queue-limit", "the target's admission limit for the prediction: it rejects (429) what finds this many requests waiting; with --retries the model sends them again (default: unknown, an unbounded queue; the simulator's --max-waiting × replicas)")
	f.f64(&cfg.BoostRPS, "boost_rps", "boost-rps", "prediction: capacity in requests/s once a scale-up lands (0 = none)")
	f.dur(&cfg.BoostAfter, "boost_after", "boost-after", "prediction: when the scale-up lands, after the burst starts")
	f.dur(&cfg.SettleTimeout, "settle_timeout", "settle-timeout", "longest wait for the target to return to baseline before each run")
	f.boolean(&cfg.Simulate, "simulate", "simulate", "run the whole experiment in virtual time against the engine model (seconds, not minutes)")
	f.integer(&cfg.Repeat, "repeat", "repeat", experiment.RepeatUsage+"; per listing of a multiplier, in rounds of the list: burst-<k>x/rep-1 …")
	f.options(&cfg.Options)
	var dry bool
	f.fs.BoolVar(&dry, "dry-run", false, dryRunUsage+" (one plan per multiplier)")
	var varySpec string // --vary: what-if per value of a simulator setting (vary.go)
	var what *vary.Config
	f.fs.StringVar(&varySpec, "vary", "", varyUsage)
	cmd.RunE = experimentCmd{command: "burst", flags: f, file: &file, config: &cfg, validate: cfg.Validate, options: &cfg.Options, simulate: &cfg.Simulate, fleet: addFleetFlags(f.fs),
		dryRun: &dry, planned: func() ([]experiment.PlannedRun, error) {
			runs, err := cfg.Planned()
			if err != nil || what == nil {
				return runs, err
			}
			return what.Planned(runs), nil // --vary: every value runs the plan
		},
		prepare: func(map[string]*yaml.Node) error {
			if file == "" {
				cfg.ApplyDemo(f.set)
			}
			if varySpec != "" {
				if !cfg.Simulate {
					return usageErr("--vary: needs --simulate: it runs the experiment once per value against the engine model in virtual time")
				}
				var err error
				if what, err = parseVary(varySpec, cfg.Options.Sim); err == nil && dry {
					fmt.Fprintf(cmd.OutOrStdout(), "--vary %s: the experiment once per value (%s), each into OUT/%s-<value>/ with the same arrivals: the plan below lists every value's runs\n", what.Knob, strings.Join(what.Values(), ", "), what.Knob)
				}
				return err
			}
			return nil
		},
		run: func(ctx context.Context, env *run.Env, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
			if what != nil {
				what.Burst = cfg
				return vary.Burst(ctx, env, what, d, w)
			}
			return burst.Burst(ctx, env, &cfg, d, w)
		}}.runE
	return cmd
}

// baselineFlag is --baseline-rps: a rate in requests/s, or "auto".
type baselineFlag struct{ c *burst.Config }

// String returns the rate, or "auto".
func (f baselineFlag) String() string {
	if f.c.BaselineAuto {
		return "auto"
	}
	return strconv.FormatFloat(f.c.BaselineRPS, 'g', -1, 64)
}

// Set parses a rate or "auto".
func (f baselineFlag) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		f.c.BaselineAuto, f.c.BaselineRPS = true, 0
		return nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("want requests/s or auto, got %q", s)
	}
	f.c.BaselineAuto, f.c.BaselineRPS = false, v
	return nil
}

// Type names the value in --help.
func (f baselineFlag) Type() string { return "rps|auto" }
