package experiment

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// PlannedRun is one run an experiment would make, as --dry-run shows it:
// its name, its phases, the phases excluded from the results, and notes
// (how a trace was fitted, a phase that ends early). Rep numbers a run
// among repeats (1..N; 0 when not repeated): rep k draws its arrivals and
// workload with the seed + k − 1, as the run will (run.Spec.Seed).
type PlannedRun struct {
	Name    string
	Plan    schedule.Plan
	Exclude []string
	Notes   []string
	Rep     int
}

// Seed is the seed the run draws with: base, + Rep − 1 for a repeat.
func (r PlannedRun) Seed(base int64) int64 {
	s := run.Spec{Rep: r.Rep}
	return s.Seed(base)
}

// DryRun prints what an experiment would send, and sends and writes
// nothing: for each planned run its phases — start, duration, process,
// rate, multiplier of the baseline, expected arrivals and the arrivals the
// seed actually schedules (schedule.Build, as the run would) — and the
// workload summary of exactly those arrivals (workload.Summarize with the
// run's own workload.Config). Histograms are drawn for the first run only;
// the others differ in their arrivals, not in the distributions.
func DryRun(w io.Writer, command string, o *run.Options, virtual bool, runs []PlannedRun) error {
	wcfg, sess, err := o.WorkloadPreview()
	if err != nil {
		return &run.ConfigError{Err: err}
	}
	target := "the built-in simulated engine"
	switch {
	case virtual:
		target = "the engine model in virtual time (--simulate)"
	case o.Target != "":
		target = record.RedactURL(o.Target)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "surge %s --dry-run: the plan below is what would be sent; nothing is sent and nothing is written.\n", command)
	fmt.Fprintf(&b, "target: %s; model %s; api %s; seed %d\n", target, o.Model, o.API, o.Seed)
	if i, n, err := o.ShardOf(); err == nil && o.Shard != "" { // --shard (run/shard.go)
		fmt.Fprintf(&b, "shard %d of %d (--shard %s): this process sends only the arrivals whose seq mod %d is %d, about 1/%d of the whole schedule below (the plan and workload shown, and the estimate, are the whole schedule's)\n", i, n, o.Shard, n, i, n)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for i, r := range runs {
		n := len(r.Plan.Phases)
		if r.Plan, err = o.SessionPlan(r.Plan); err != nil {
			return &run.ConfigError{Err: err}
		}
		if len(r.Plan.Phases) > n {
			r.Notes = append(slices.Clone(r.Notes), fmt.Sprintf("%s (--session-drain): sessions already started may send turns for %s more; no session starts in it", schedule.PhaseDrain, o.SessionDrain))
		}
		seed := r.Seed(o.Seed)
		arrivals, err := schedule.Build(r.Plan, seed)
		if err != nil {
			return &run.ConfigError{Err: err}
		}
		b.Reset()
		writePlan(&b, r, arrivals, seed)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		rcfg := wcfg
		rcfg.Seed = r.Seed(wcfg.Seed)
		s, err := workload.Summarize(rcfg, sess, arrivals)
		if err != nil {
			return &run.ConfigError{Err: err}
		}
		fmt.Fprintf(w, "workload of these %d arrivals (excluded phases included: they are sent too):\n", len(arrivals))
		if err := s.WriteText(w, i == 0); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return PrintEstimate(w, o, runs) // budget.go: the same arrivals and draws
}

// writePlan writes one run's phase table.
func writePlan(b *strings.Builder, r PlannedRun, arrivals []schedule.Arrival, seed int64) {
	actual := map[string]int{}
	for _, a := range arrivals {
		actual[a.Phase]++
	}
	show := schedule.ShowDuration
	fmt.Fprintf(b, "\n%s: %d phase(s), %s in all", r.Name, len(r.Plan.Phases), show(r.Plan.Duration()))
	if r.Plan.BaselineRPS > 0 {
		fmt.Fprintf(b, "; baseline %g req/s", r.Plan.BaselineRPS)
	}
	if r.Rep > 0 {
		fmt.Fprintf(b, "; seed %d", seed)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "  %-16s %9s %9s %-9s %9s %6s %10s %9s\n", "phase", "start", "duration", "arrival", "rate/s", "×base", "expected", "arrivals")
	var expected float64
	for _, ph := range r.Plan.Bounds() {
		mult := "-"
		if ph.Multiplier > 0 {
			mult = fmt.Sprintf("%g", ph.Multiplier)
		}
		name := ph.Name
		if slices.Contains(r.Exclude, ph.Name) {
			name += " (excl.)"
		}
		fmt.Fprintf(b, "  %-16s %9s %9s %-9s %9.2f %6s %10.1f %9d\n", name, show(ph.Start), show(ph.End-ph.Start), ph.Arrival, ph.Rate, mult, ph.Expected, actual[ph.Name])
		expected += ph.Expected
	}
	fmt.Fprintf(b, "  %-16s %9s %9s %-9s %9s %6s %10.1f %9d\n", "total", time.Duration(0), show(r.Plan.Duration()), "", "", "", expected, len(arrivals))
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, "note: ") && !strings.HasPrefix(n, "WARNING: ") { // FitTrace's notes say which they are
			n = "note: " + n
		}
		fmt.Fprintf(b, "  %s\n", n)
	}
}
