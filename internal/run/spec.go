package run

import (
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/otlp"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scaling"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
)

// Spec describes one run. Everything a run needs travels in it; nothing is
// carried on the Env between runs.
type Spec struct {
	Name    string        // run name, e.g. "burst-5x"
	Dir     *rundir.Dir   // the run folder (created by the caller)
	Command string        // the surge command, for the manifest
	Plan    schedule.Plan // phases
	Exclude []string      // phases left out of the overall aggregate (warmup)
	// Experiment is the experiment's own configuration, recorded in the
	// manifest next to the options (it must not embed secrets).
	Experiment any
	// Recovery is the recovery rule of the analysis (a burst's); zero for
	// none.
	Recovery analyze.RecoveryRule

	// Stop, when set, may end the schedule early (see Stopper).
	Stop Stopper
	// StopInVirtualTime also applies Stop in virtual time.
	StopInVirtualTime bool

	// Closed, when set, runs closed-loop users instead of an open-loop
	// schedule (concurrency sweeps only). Plan must then be Closed.Plan().
	Closed *schedule.ClosedLoop

	// Finish, when set, is called with the analysed result before its
	// files are written, so that an experiment can add what it knows of
	// the run (a burst's prediction, a queue-wait interval of its own) to
	// summary.json, which is written once.
	Finish func(*Result)

	// Rep and Repeats number a run among the repeated runs of one
	// configuration (1..Repeats; both 0 when it is not repeated): rep k
	// runs with the seed Options.Seed + k − 1 — schedule, workload and
	// engine model — so that repeats differ, and its manifest records
	// that seed and the numbers.
	Rep, Repeats int

	// Multiplier is a burst run's multiple of the named baseline, 0 for
	// any other run: a label of the pushed metrics (--metrics-out).
	Multiplier float64
}

// Seed is the seed of the run spec describes: the options' seed, + Rep − 1
// for a repeated run.
func (s *Spec) Seed(base int64) int64 {
	if s.Rep > 1 {
		return base + int64(s.Rep-1)
	}
	return base
}

// stopperList asks each of its Stoppers, each from its own CheckFrom on
// (by the horizon), and stops at the first that does.
type stopperList []Stopper

// stoppers is the Stopper of ss (nil ones left out).

func stoppers(ss ...Stopper) Stopper {
	var out stopperList
	for _, s := range ss {
		if s != nil {
			out = append(out, s)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

func (l stopperList) CheckFrom() time.Duration {
	from := time.Duration(1<<63 - 1)
	for _, s := range l {
		from = min(from, s.CheckFrom())
	}
	return from
}

func (l stopperList) Add(rec *record.Record) {
	for _, s := range l {
		s.Add(rec)
	}
}

func (l stopperList) Stop(horizon time.Duration) string {
	for _, s := range l {
		if horizon < s.CheckFrom() {
			continue
		}
		if why := s.Stop(horizon); why != "" {
			return why
		}
	}
	return ""
}

// Stopper lets an experiment end a run's schedule before its plan ends: a
// recovery phase once recovered, a hopeless capacity step.
//
// It is fed (Add) each record scheduled before the horizon — the
// scheduled time of the first arrival not yet finished — once, when the
// horizon passes it, so that no slow request still in flight is missing
// from what it judges; it keeps what it needs of them, not the records.
// It is asked (Stop) about once a second, from CheckFrom on, having seen
// every record scheduled before horizon. When it returns a reason, no
// further arrival is sent; requests in flight finish, and the last phase
// ends at the moment of the stop. Add and Stop are never called at once.
type Stopper interface {
	CheckFrom() time.Duration
	Add(rec *record.Record)
	Stop(horizon time.Duration) (why string)
}

// Result is what a run produced.
type Result struct {
	Spec     Spec
	Analysis *analyze.Result
	// Verdicts are the run's judgements (internal/judge): the SLO per
	// phase and overall, and the recovery after a burst.
	Verdicts  *judge.Verdicts
	Scrape    scrape.Status
	Engine    []scrape.Sample
	QueueWait map[string]analyze.QueueWait // engine-measured queue wait per phase
	// EngineTiming is the engine's per-request timing per phase (by
	// arrival) and "overall"; nil when no record carries any.
	EngineTiming map[string]analyze.EngineTiming
	// Spans is what the OTLP receiver got during the run (--otlp-listen).
	Spans *otlp.Report
	// Records streams the run's records from its requests.jsonl (nil when
	// there is none): no run holds its records in memory. Read with
	// Records.Each.
	Records  record.Source
	Recorded int64 // the number of records analysed
	// Diag is what the diagnosis and a burst's μ read of the records
	// (rejections, completions after the burst start), gathered in the
	// same pass; nil when the result was not analysed from its records.
	Diag *analyze.DiagTally
	// Sends is the generator check's view of the sends, gathered in the
	// same pass; nil when the result was not analysed from its records.
	Sends        *Sends
	Partial      bool
	PartialCause record.PartialCause // why, to branch on
	PartialWhy   string              // why, in words
	// Arrivals is what became of every arrival of the plan (nil where
	// unknown: closed loops, sessions).
	Arrivals  *record.Arrivals
	StoppedAt time.Duration // when the Stopper ended the schedule; 0 if it did not
	StopWhy   string
	// Unusable is why the run stopped early against a target whose first
	// requests all failed by a cause no load explains (judge.Unusable);
	// "" otherwise. The experiment stops there and exits 3.
	Unusable string
	Spend    Spend // what the run's requests spent, from their usage (budget.go)
	// SelfAccuracy is what surge observed of itself in a live run and
	// whether it kept up (judge.SelfAccuracy); nil in virtual time and on
	// a coordinator.
	SelfAccuracy *judge.SelfAccuracy
	self         *selfObs // its observations while the run went
	HTTPClient   string   // the transport the requests went through (openai.Client.TransportName); "" in virtual time and on a coordinator
	Simulated    bool     // the target was surge's simulator
	Virtual      bool     // the run was in virtual time
	Plan         schedule.Plan
	Started      time.Time
	Elapsed      time.Duration
	SimEvents    []sim.Event       // scaling milestones (simulator only)
	Burst        *rundir.BurstInfo // the burst experiment's view of this run
	Manifest     *record.Manifest  // what was tested
	// Prompt is how prompts were sized and how long the server found
	// them: intended vs server-reported prompt tokens.
	Prompt *record.PromptSizing
	// SharedPrefix counts the shared prefix of the prompts (--shared-prefix);
	// nil without one.
	SharedPrefix *record.SharedPrefix

	shardArrivals int64         // the arrivals this shard was given (--shard; shard.go)
	startLate     time.Duration // how late its origin was after --start-at
	// Scaling is the autoscaling timeline (scaling.json): from
	// --watch-k8s, or from the simulator's SimEvents; nil for none.
	Scaling *scaling.Timeline
	// Distributed is how workers generated the run (Env.Fleet); nil for
	// one process.
	Distributed *record.Distribution
}

// Count is the number of records.
func (r *Result) Count() int64 { return r.Recorded }
