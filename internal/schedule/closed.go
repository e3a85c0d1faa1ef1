package schedule

import (
	"fmt"
	"time"
)

// ArrivalClosed is the arrival process named in the plan of a closed-loop
// run: nothing is scheduled, users send when they are ready. It is a label
// only: Plan.Validate, Build and Arrivals reject it (a closed loop has no
// schedule to build), while Plan.Bounds and Plan.Duration accept it and
// report its phases with rate 0 and 0 expected arrivals.
const ArrivalClosed = "closed"

// ClosedLoop is one closed-loop level. Closed loops exist only for
// concurrency sweeps (docs/method.md §2) and are labelled as such: Users concurrent
// users each send their next request as soon as the previous one ended,
// from the run's start until Warmup + Duration; requests in flight then run
// to completion. A request belongs to the phase of the moment its user
// sent it: warmup (excluded) before Warmup, Phase after. Its scheduled time
// is that moment, so schedule lag is zero by construction and TTFT from the
// schedule equals TTFT from the send.
type ClosedLoop struct {
	Users    int           `json:"users"`
	Warmup   time.Duration `json:"warmup"`
	Duration time.Duration `json:"duration"`
	Phase    string        `json:"phase"`
}

// Validate checks the loop: at least one user, Warmup ≥ 0, Duration > 0 and
// a Phase name other than warmup. Errors name the field, e.g.
// `schedule: closed loop: users: must be ≥ 1, got 0`.
func (cl ClosedLoop) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("schedule: closed loop: %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case cl.Users < 1:
		return bad("users", "must be ≥ 1, got %d", cl.Users)
	case cl.Warmup < 0:
		return bad("warmup", "must be ≥ 0, got %v", cl.Warmup)
	case cl.Duration <= 0:
		return bad("duration", "must be > 0, got %v", cl.Duration)
	case cl.Phase == "":
		return bad("phase", "required")
	case cl.Phase == PhaseWarmup:
		return bad("phase", "must differ from %q", PhaseWarmup)
	}
	return nil
}

// Plan names the phases of a closed-loop run for the analysis and the
// manifest: warmup over [0, Warmup) when Warmup > 0, then Phase over
// [Warmup, Warmup + Duration). It is never scheduled: its arrival process
// is ArrivalClosed and its rates are 0.
func (cl ClosedLoop) Plan() Plan {
	var p Plan
	if cl.Warmup > 0 {
		p.Phases = append(p.Phases, Phase{Name: PhaseWarmup, Duration: cl.Warmup, Arrival: ArrivalClosed})
	}
	p.Phases = append(p.Phases, Phase{Name: cl.Phase, Duration: cl.Duration, Arrival: ArrivalClosed})
	return p
}

// PhaseAt returns the phase of a request sent at t since the run's start:
// warmup before Warmup, Phase from then on (also after the loop's end, for
// requests still being labelled then).
func (cl ClosedLoop) PhaseAt(t time.Duration) string {
	if t < cl.Warmup {
		return PhaseWarmup
	}
	return cl.Phase
}
