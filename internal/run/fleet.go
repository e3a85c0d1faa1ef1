package run

import (
	"context"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// Fleet sends a live open-loop run's arrivals to other processes (surge
// worker, package fleet) instead of this process's load generator. Set on
// Env.Fleet by the command (--workers N); the run, its folder and its
// analysis are otherwise unchanged: the records the workers send back go
// to the same sink as local ones.
type Fleet interface {
	// Drive prepares one run; its records go to sink (from many
	// goroutines).
	Drive(job FleetJob, sink loadgen.Sink) FleetDriver
	// Lead is how far ahead of now a run of that many arrivals sets its
	// origin, so that every worker has its job before the first is due.
	Lead(arrivals int) time.Duration
}

// FleetDriver is one run on a fleet, shaped like loadgen.Open.
type FleetDriver interface {
	// Run hands out the arrivals and returns once every worker has sent
	// its last record or was lost (its unsent arrivals then recorded as
	// generator_drop with the reason). Cancelling ctx (Ctrl-C) cancels the
	// workers' requests in flight and still waits for their records.
	Run(ctx context.Context) error
	// Stop ends the schedule early on every worker (Stopper).
	Stop()
	// Counters are the live totals, from the records received.
	Counters() *loadgen.Counters
	// Distribution is what the manifest records of the workers, after Run.
	Distribution() *record.Distribution
}

// FleetJob is everything a worker needs to send exactly the requests this
// process would: never the API key or headers (a worker has its own).
type FleetJob struct {
	Run         string             // request ids are "<run>-<seq>"
	Origin      time.Time          // the run's origin on this process's clock
	Arrivals    []schedule.Arrival // the whole schedule; the fleet splits it (schedule.Shard)
	Workload    workload.Config    // with the sizing, seed and salt of this run; no dataset
	Client      openai.Config      // no APIKey, no Headers
	MaxInFlight int
	Spin        time.Duration
	Profile     string
	// Judge and ProfileOf are the run's own, applied where the records
	// arrive (never sent).
	Judge     func(*record.Record) bool        `json:"-"`
	ProfileOf func(a *schedule.Arrival) string `json:"-"`
}

// FleetCheck refuses what a fleet cannot run yet, before anything is
// prepared: sessions (a worker would need the conversations' state), a
// budget (each request is reserved centrally before it is sent), OTLP
// spans (their trace ids carry the sending client's prefix) and datasets
// (the rows would have to travel). *field.Error named by the setting.
func (o *Options) FleetCheck() error {
	switch {
	case o.Shard != "":
		return &field.Error{Field: "shard", Message: "static shards and --workers are two ways to split one run; use one of them"}
	case o.Sessions:
		return &field.Error{Field: "sessions", Message: "sessions cannot be split between --workers yet; run them from one process"}
	case o.Budgeted():
		f := "max_cost" // the budget set, named as the user set it
		if o.MaxRequests != nil {
			f = "max_requests"
		} else if o.MaxOutputTokens != nil {
			f = "max_output_tokens"
		}
		return &field.Error{Field: f, Message: "a budget reserves each request before it is sent, in one process; --workers cannot honour it yet"}
	case o.OTLPListen != "":
		return &field.Error{Field: "otlp_listen", Message: "engine spans are matched by the sending client's trace prefix; --workers cannot join them yet"}
	case o.Dataset != "":
		return &field.Error{Field: "dataset", Message: "dataset rows would have to travel to the workers; --workers supports synthetic prompts and traces for now"}
	}
	return nil
}

// fleetLead is how far ahead the run's origin is set: the fleet's lead,
// 0 in one process.
func (e *Env) fleetLead(arrivals []schedule.Arrival) time.Duration {
	if e.Fleet == nil || e.Virtual {
		return 0
	}
	return e.Fleet.Lead(len(arrivals))
}

// fleetJob is the job of this run for e.Fleet.
func (e *Env) fleetJob(spec Spec, arrivals []schedule.Arrival, wcfg workload.Config, origin time.Time, lcfg loadgen.Config) FleetJob {
	c := e.ClientConfig(min(e.Opts.MaxInFlight, 4096))
	c.APIKey, c.Headers, c.Dial = "", nil, nil
	return FleetJob{Run: spec.Name, Origin: origin, Arrivals: arrivals, Workload: wcfg, Client: c,
		MaxInFlight: lcfg.MaxInFlight, Spin: lcfg.Spin, Profile: lcfg.Profile, Judge: lcfg.Judge, ProfileOf: lcfg.ProfileOf}
}
