// Package scaling is the autoscaling timeline of a run: for every scaling
// event (a replica — a Kubernetes pod, or a simulator replica — that
// appeared during the run) the milestones from the burst's start to the
// first request the new replica served and the burst's recovery, and the
// distribution of each interval over the events (docs/metrics.md
// "Autoscaling timeline").
//
// Times are nanoseconds since the run's origin on surge's own clock
// (AtNs). Kubernetes stamps its objects with second-precision wall times;
// those are kept alongside (KubeNs, the wall time minus the run's wall
// origin, so also run-origin nanoseconds, a multiple of 1e9 off by the
// origin's sub-second part) but the intervals are computed from AtNs: the
// moment surge saw the change, one watch latency after it happened, with
// nanosecond resolution instead of a one-second step.
//
// The distribution of an interval over events is min / median / max, the
// median by nearest rank (the ⌈N/2⌉-th smallest: always one event's own
// value, as analyze.MedianOfRuns).
package scaling

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// The milestones of a scaling event, in the order they happen.
const (
	BurstStart       = "burst_start"       // the burst phase began (the load that called for capacity)
	Triggered        = "triggered"         // the autoscaler decided to scale (simulator only: Kubernetes does not say)
	PodCreated       = "pod_created"       // the new replica was requested: the pod object exists
	NodeReady        = "node_ready"        // the node added for it became Ready (only when a node was added)
	Scheduled        = "scheduled"         // the pod was bound to a node (PodScheduled condition)
	ContainerStarted = "container_started" // its containers are running
	Ready            = "ready"             // it passes its readiness probe (Ready condition): it receives requests
	FirstServed      = "first_served"      // the first request it served (its first token reached surge)
	Recovered        = "recovered"         // the burst's measured recovery (the same for every event of the run)
)

// Order lists the milestones in the order of the timeline. A node added
// for a pod becomes Ready before the pod is scheduled: the pod waits
// unschedulable while the cluster autoscaler provisions the node, and the
// scheduler binds it once the node is Ready.
var Order = []string{BurstStart, Triggered, PodCreated, NodeReady, Scheduled, ContainerStarted, Ready, FirstServed, Recovered}

// None marks an absent time.
const None int64 = -1

// Stamp is one milestone of one event.
type Stamp struct {
	Milestone string `json:"milestone"`
	AtNs      int64  `json:"at_ns"` // surge's clock, ns since the run's origin
	// KubeNs is Kubernetes' own time of the milestone (second precision),
	// in ns since the run's origin; absent (-1) when it has none.
	KubeNs int64 `json:"kube_ns"`
}

// Event is one scaling event: one new replica.
type Event struct {
	Replica string `json:"replica"`        // pod name, or "r3" for the simulator's replica 3 (its X-Surge-Replica value)
	Node    string `json:"node,omitempty"` // the node it ran on (Kubernetes)
	NewNode bool   `json:"new_node"`       // a node was added for it during the run
	// AfterRecovery marks a replica triggered (or, without a trigger,
	// created) at or after the run's recovery: the burst's load did not
	// call for it, so it carries no burst_start / recovered milestones and
	// is left out of the distribution over the burst's events.
	AfterRecovery bool `json:"after_recovery,omitempty"`
	// Milestones are the event's milestones in Order; absent ones are left out.
	Milestones []Stamp `json:"milestones"`
}

// At returns the time of milestone m (surge's clock) and whether it was reached.
func (e *Event) At(m string) (int64, bool) {
	for _, s := range e.Milestones {
		if s.Milestone == m {
			return s.AtNs, true
		}
	}
	return None, false
}

// Timeline is the autoscaling timeline of one run, saved as scaling.json.
type Timeline struct {
	Source string   `json:"source"`          // "simulator" or "kubernetes"
	Watch  string   `json:"watch,omitempty"` // NAMESPACE/SELECTOR watched (Kubernetes)
	Notes  []string `json:"notes,omitempty"` // what the watch could not see, e.g. a selector that matched nothing
	Events []Event  `json:"events"`
}

// Sources of a Timeline.
const (
	SourceSimulator  = "simulator"
	SourceKubernetes = "kubernetes"
)

// Run holds what the run itself knows about every event: when its burst
// began and when it recovered (None for either when it has none).
type Run struct {
	BurstStartNs int64
	RecoveredNs  int64
}

// Add puts the run's own milestones into e and sorts them in Order. An
// event that began (triggered, else pod created) at or after the recovery
// is not the burst's: it is marked AfterRecovery and gets neither.
func (r Run) Add(e *Event) {
	start, ok := e.At(Triggered)
	if !ok {
		start, ok = e.At(PodCreated)
	}
	if ok && r.RecoveredNs >= 0 && start >= r.RecoveredNs {
		e.AfterRecovery = true
		return
	}
	if r.BurstStartNs >= 0 {
		e.Milestones = append(e.Milestones, Stamp{Milestone: BurstStart, AtNs: r.BurstStartNs, KubeNs: None})
	}
	if r.RecoveredNs >= 0 {
		e.Milestones = append(e.Milestones, Stamp{Milestone: Recovered, AtNs: r.RecoveredNs, KubeNs: None})
	}
	slices.SortStableFunc(e.Milestones, func(a, b Stamp) int { return cmp.Compare(rank(a.Milestone), rank(b.Milestone)) })
}

func rank(m string) int { return slices.Index(Order, m) }

// simKinds maps the simulator's milestone kinds to the timeline's.
var simKinds = map[string]string{
	sim.EventScaleTrigger:      Triggered,
	sim.EventCapacityRequested: PodCreated,
	sim.EventNodeReady:         NodeReady,
	sim.EventContainerReady:    ContainerStarted,
	sim.EventModelReady:        Ready,
	sim.EventFirstServed:       FirstServed,
}

// FromSim builds the timeline from the simulator's scaling milestones
// (run.Result.SimEvents, At since the run's start): one event per replica
// whose capacity was requested during the run. The simulator has no
// scheduler, so an event has no Scheduled milestone; its node is always
// new (each replica's start includes node_ready_delay). Nil when no
// replica was added.
func FromSim(events []sim.Event, r Run) *Timeline {
	byRep := map[int]*Event{}
	var reps []int
	for _, ev := range events {
		m, ok := simKinds[ev.Kind]
		if !ok {
			continue
		}
		e := byRep[ev.Replica]
		if e == nil {
			e = &Event{Replica: "r" + strconv.Itoa(ev.Replica)}
			byRep[ev.Replica] = e
			reps = append(reps, ev.Replica)
		}
		if _, seen := e.At(m); seen {
			continue
		}
		if m == NodeReady {
			e.NewNode = true
		}
		e.Milestones = append(e.Milestones, Stamp{Milestone: m, AtNs: int64(ev.At), KubeNs: None})
	}
	t := &Timeline{Source: SourceSimulator, Events: []Event{}}
	for _, i := range reps {
		e := byRep[i]
		if _, ok := e.At(PodCreated); !ok {
			continue // a first_served of a replica ready from the start
		}
		r.Add(e)
		t.Events = append(t.Events, *e)
	}
	if len(t.Events) == 0 {
		return nil
	}
	return t
}

// Interval is the distribution over events of the time from one milestone
// to another.
type Interval struct {
	From, To         string
	N                int           // events that reached both
	Min, Median, Max time.Duration // Median by nearest rank
}

// Intervals returns the distribution of every interval between
// consecutive milestones of Order (from each milestone to the next one an
// event reached), then of the two spans that sum them: pod created →
// first served (how long new capacity took to become useful) and burst
// start → first served. An interval no event has is left out, and so are
// the events Excluded names (see there).
func (t *Timeline) Intervals() []Interval {
	type key struct{ from, to string }
	vals := map[key][]time.Duration{}
	var keys []key
	put := func(k key, d time.Duration) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = append(vals[k], d)
	}
	for _, e := range t.Events {
		if e.AfterRecovery {
			continue
		}
		for i := 1; i < len(e.Milestones); i++ {
			a, b := e.Milestones[i-1], e.Milestones[i]
			if b.Milestone == Recovered && b.AtNs < a.AtNs {
				continue // recovered before this replica got there
			}
			put(key{a.Milestone, b.Milestone}, time.Duration(b.AtNs-a.AtNs))
		}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(rank(a.from), rank(b.from)), cmp.Compare(rank(a.to), rank(b.to)))
	})
	totals := []key{{PodCreated, FirstServed}, {BurstStart, FirstServed}}
	tv := map[key][]time.Duration{}
	for _, e := range t.Events {
		fs, ok := e.At(FirstServed)
		if !ok || e.AfterRecovery {
			continue
		}
		for _, k := range totals {
			if at, ok := e.At(k.from); ok {
				tv[k] = append(tv[k], time.Duration(fs-at))
			}
		}
	}
	var out []Interval
	dist := func(k key, v []time.Duration) {
		v = slices.Clone(v)
		slices.Sort(v)
		out = append(out, Interval{From: k.from, To: k.to, N: len(v), Min: v[0], Median: v[(len(v)+1)/2-1], Max: v[len(v)-1]})
	}
	for _, k := range keys {
		dist(k, vals[k])
	}
	for _, k := range totals {
		// A total equal to one consecutive interval (no milestone in
		// between) says nothing new.
		if v := tv[k]; len(v) > 0 && !slices.Contains(keys, k) {
			dist(k, v)
		}
	}
	return out
}

// BurstEvents counts the events the distribution is over: those not
// AfterRecovery.
func (t *Timeline) BurstEvents() int {
	n := 0
	for _, e := range t.Events {
		if !e.AfterRecovery {
			n++
		}
	}
	return n
}

// Excluded says, one line per case, what Intervals leaves out and why: a
// replica triggered after the run had recovered (not the burst's
// capacity; its intervals would mix an unrelated scale-up into the
// burst's), and a replica whose last milestone came after the recovery
// (its interval to "recovered" would be negative: the run recovered
// without it).
func (t *Timeline) Excluded() []string {
	var out []string
	sec := func(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 1, 64) + " s" }
	for _, e := range t.Events {
		if e.AfterRecovery {
			at, ok := e.At(Triggered)
			what := "triggered"
			if !ok {
				at, _ = e.At(PodCreated)
				what = "created"
			}
			out = append(out, e.Replica+" was "+what+" at "+sec(at)+", after the run had recovered: not the burst's capacity, left out of the distribution")
			continue
		}
		for i := 1; i < len(e.Milestones); i++ {
			a, b := e.Milestones[i-1], e.Milestones[i]
			if b.Milestone == Recovered && b.AtNs < a.AtNs {
				out = append(out, "the run recovered at "+sec(b.AtNs)+", before "+e.Replica+"'s "+strings.ReplaceAll(a.Milestone, "_", " ")+" at "+sec(a.AtNs)+": that negative interval to recovered is left out")
			}
		}
	}
	return out
}
