package run

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
)

// Static shards (--shard I/N, --start-at). Every process computes the
// whole schedule from the same seed and sends only its share, the
// arrivals (or sessions) whose Seq mod N is I (schedule.Shard); each
// writes its own run folder, and surge merge (package merge) makes the N
// folders one. Nothing is exchanged between the processes: they agree
// because they compute the same thing, and merge checks that they did.

// JobIndexEnv is the variable a Kubernetes Indexed Job sets to the pod's
// completion index; --shard auto/N reads it.
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// MaxShards is the largest N of --shard I/N.
const MaxShards = 10000

// MaxStartAhead is how far in the future --start-at may be: a later time
// is more likely a typo (a wrong day) than a plan.
const MaxStartAhead = 24 * time.Hour

// StartSkewWarn is the start skew above which surge merge warns that the
// shards did not start together.
const StartSkewWarn = 100 * time.Millisecond

// getenv reads the environment (a variable so that tests set it).
var getenv = os.Getenv

// ShardOf parses Options.Shard: "" is one process (0, 1); "I/N" shard I
// of N; "auto/N" takes I from JOB_COMPLETION_INDEX. A *field.Error named
// shard when it is malformed, the variable is missing or not a number,
// or I ≥ N.
func (o *Distribution) ShardOf() (i, n int, err error) {
	if o.Shard == "" {
		return 0, 1, nil
	}
	bad := func(format string, a ...any) (int, int, error) {
		return 0, 0, &field.Error{Field: "shard", Message: fmt.Sprintf(format, a...)}
	}
	is, ns, ok := strings.Cut(o.Shard, "/")
	if !ok {
		return bad("must be I/N (this process sends the arrivals whose seq mod N is I, e.g. 0/4) or auto/N (I from %s), got %q", JobIndexEnv, o.Shard)
	}
	n, err = strconv.Atoi(ns)
	if err != nil || n < 1 || n > MaxShards {
		return bad("N must be a whole number 1..%d, got %q in %q", MaxShards, ns, o.Shard)
	}
	from := ""
	if is == "auto" {
		v := strings.TrimSpace(getenv(JobIndexEnv))
		if v == "" {
			return bad("auto/%d reads the shard index from %s (set by a Kubernetes Indexed Job), which is not set; give the index, e.g. --shard 0/%d", n, JobIndexEnv, n)
		}
		is, from = v, " (from "+JobIndexEnv+")"
	}
	i, err = strconv.Atoi(is)
	switch {
	case err != nil || i < 0:
		return bad("the shard index%s must be a whole number 0..%d, got %q", from, n-1, is)
	case i >= n:
		return bad("the shard index %d%s must be below N = %d (shards are numbered 0..%d)", i, from, n, n-1)
	}
	return i, n, nil
}

// StartTime parses Options.StartAt (RFC 3339); zero when unset.
func (o *Distribution) StartTime() (time.Time, error) {
	if o.StartAt == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, o.StartAt)
	if err != nil {
		return time.Time{}, &field.Error{Field: "start_at", Message: fmt.Sprintf("must be an RFC 3339 time, e.g. 2026-12-02T10:00:00Z, got %q", o.StartAt)}
	}
	return t, nil
}

// validateShard checks --shard and --start-at (Validate).
func (o *Distribution) validateShard(bad func(field, format string, a ...any)) {
	if _, _, err := o.ShardOf(); err != nil {
		bad("shard", "%s", err.(*field.Error).Message)
	}
	t, err := o.StartTime()
	if err != nil {
		bad("start_at", "%s", err.(*field.Error).Message)
	} else if ahead := time.Until(t); ahead > MaxStartAhead {
		bad("start_at", "is %s away; at most %s ahead (a wrong day?), got %s", ahead.Round(time.Minute), MaxStartAhead, o.StartAt)
	}
}

// checkShard refuses what static shards cannot do with this setup
// (Check): virtual time has no wall clock to wait for.
func checkShard(o Options, virtual bool) error {
	if virtual && o.StartAt != "" {
		return &field.Error{Field: "start_at", Message: "waits for a wall-clock time, which virtual time (--simulate) does not have: virtual shards share their origin by construction; drop --start-at"}
	}
	return nil
}

// shardArrivals keeps this process's share of the arrivals (Execute).
// A closed loop has no schedule to split.
func (e *Env) shardArrivals(spec Spec, arrivals []schedule.Arrival) ([]schedule.Arrival, error) {
	i, n, err := e.Opts.ShardOf()
	if err != nil || n <= 1 {
		return arrivals, err
	}
	if spec.Closed != nil {
		return nil, &field.Error{Field: "shard", Message: "splits a schedule of arrivals, which a closed loop (a concurrency sweep) does not have: its users send when ready; use a rate sweep, run, burst or capacity"}
	}
	return schedule.Shard(arrivals, i, n), nil
}

// awaitStart waits for --start-at before the command's first run (later
// runs follow it as they would in one process). It returns how late the
// origin is after the start time: ≈ 0 when it waited, more when the time
// had passed (the run starts at once; a warning says how late).
func (e *Env) awaitStart(ctx context.Context) (late time.Duration, err error) {
	at, _ := e.Opts.StartTime()
	if at.IsZero() || e.Virtual || !e.startPending.CompareAndSwap(false, true) {
		return 0, nil
	}
	if d := time.Until(at); d > 0 {
		e.say("waiting for --start-at %s (in %s)", e.Opts.StartAt, showWait(d))
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return 0, startInterrupted(e.Opts.StartAt)
		case <-t.C:
		}
	}
	late = time.Since(at)
	if late > StartSkewWarn {
		e.say("WARNING: --start-at %s had passed %s ago: this shard started at once, not together with the others (surge merge will report the start skew)", e.Opts.StartAt, late.Round(time.Millisecond))
	}
	return late, nil
}

// say prints one line of the command's own on the console, in the words
// and format of the rest of its output ("WARNING: …" for a warning), not
// as a log record. Without a console (check, coldstart) a warning goes to
// the logger, as before.
func (e *Env) say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	switch {
	case e.console != nil:
		fmt.Fprintln(e.console, line)
	case e.Logger != nil && strings.HasPrefix(line, "WARNING: "):
		e.Logger.Warn(strings.TrimPrefix(line, "WARNING: "))
	}
}

// showWait is a wait as a person reads it: whole seconds, or
// milliseconds under one.
func showWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// startInterrupted is a Ctrl-C while waiting for --start-at: an
// ErrInterrupted (nothing was written) with its own words.
type startInterrupted string

func (s startInterrupted) Error() string {
	return "interrupted while waiting for --start-at " + string(s) + "; nothing was written"
}
func (startInterrupted) Is(target error) bool { return target == ErrInterrupted }

// shardDistribution is the manifest's distribution of a shard's run
// folder (nil for one process): this generator alone, with what it was
// given and what it recorded.
func (e *Env) shardDistribution(res *Result) *record.Distribution {
	i, n, err := e.Opts.ShardOf()
	if err != nil || e.Opts.Shard == "" {
		return nil
	}
	g := record.Generator{Index: i, Name: res.Spec.Name, Version: e.Version, Started: res.Started,
		Arrivals: res.shardArrivals, Records: res.Count(), StartLateNs: int64(res.startLate)}
	if res.Analysis != nil {
		g.LagP99Ms = res.Analysis.Overall.Latency.ScheduleLag.P99Ms
	}
	if at, _ := e.Opts.StartTime(); !at.IsZero() {
		g.StartAt = at
	}
	return &record.Distribution{Mode: record.DistShard, Generators: n, Shard: i, Each: []record.Generator{g}}
}

// stampShard marks a record with this process's shard index.
func (e *Env) stampShard(sink func(*record.Record)) func(*record.Record) {
	i, n, err := e.Opts.ShardOf()
	if err != nil || n <= 1 {
		return sink
	}
	return func(r *record.Record) {
		r.Shard = i
		sink(r)
	}
}
