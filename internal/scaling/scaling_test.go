package scaling

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

func TestFromSim(t *testing.T) {
	s := time.Second
	evs := []sim.Event{
		{At: 0, Kind: sim.EventFirstServed, Replica: 0}, // the replica ready from the start: no event
		{At: 12 * s, Kind: sim.EventScaleTrigger, Replica: 1},
		{At: 13 * s, Kind: sim.EventCapacityRequested, Replica: 1},
		{At: 43 * s, Kind: sim.EventNodeReady, Replica: 1},
		{At: 53 * s, Kind: sim.EventContainerReady, Replica: 1},
		{At: 73 * s, Kind: sim.EventModelReady, Replica: 1},
		{At: 73*s + 5*time.Millisecond, Kind: sim.EventFirstServed, Replica: 1},
		{At: 74 * s, Kind: sim.EventScaleTrigger, Replica: 2},
		{At: 75 * s, Kind: sim.EventCapacityRequested, Replica: 2},
		{At: 95 * s, Kind: sim.EventNodeReady, Replica: 2},
		{At: 105 * s, Kind: sim.EventContainerReady, Replica: 2},
		{At: 135 * s, Kind: sim.EventModelReady, Replica: 2},
		{At: 136 * s, Kind: sim.EventFirstServed, Replica: 2},
		{At: 200 * s, Kind: sim.EventScaleDown, Replica: 2},
	}
	tl := FromSim(evs, Run{BurstStartNs: int64(10 * s), RecoveredNs: int64(150 * s)})
	if tl == nil || len(tl.Events) != 2 {
		t.Fatalf("timeline %+v, want 2 events", tl)
	}
	var got []string
	for _, m := range tl.Events[0].Milestones {
		got = append(got, m.Milestone)
	}
	want := []string{BurstStart, Triggered, PodCreated, NodeReady, ContainerStarted, Ready, FirstServed, Recovered}
	if !slices.Equal(got, want) || tl.Events[0].Replica != "r1" || !tl.Events[0].NewNode {
		t.Errorf("event 1: %v %+v", got, tl.Events[0])
	}
	ivs := tl.Intervals()
	find := func(from, to string) Interval {
		for _, iv := range ivs {
			if iv.From == from && iv.To == to {
				return iv
			}
		}
		t.Fatalf("no interval %s → %s in %+v", from, to, ivs)
		return Interval{}
	}
	// node ready after capacity requested: 30 s and 20 s.
	if iv := find(PodCreated, NodeReady); iv.N != 2 || iv.Min != 20*s || iv.Max != 30*s || iv.Median != 20*s {
		t.Errorf("pod created → node ready: %+v", iv)
	}
	// pod created → first served: 60.005 s and 61 s; median by nearest rank is the smaller.
	if iv := find(PodCreated, FirstServed); iv.N != 2 || iv.Min != 60*s+5*time.Millisecond || iv.Median != iv.Min || iv.Max != 61*s {
		t.Errorf("pod created → first served: %+v", iv)
	}
	if iv := find(BurstStart, FirstServed); iv.Max != 126*s {
		t.Errorf("burst start → first served: %+v", iv)
	}
	if FromSim(evs[:1], Run{BurstStartNs: None, RecoveredNs: None}) != nil {
		t.Error("no replica added: want no timeline")
	}
}

func TestMedianOfThree(t *testing.T) {
	tl := &Timeline{}
	for _, d := range []int64{5, 1, 3} {
		tl.Events = append(tl.Events, Event{Milestones: []Stamp{{Milestone: PodCreated, AtNs: 0}, {Milestone: Ready, AtNs: d}}})
	}
	iv := tl.Intervals()
	if len(iv) != 1 || iv[0].Min != 1 || iv[0].Median != 3 || iv[0].Max != 5 || iv[0].N != 3 {
		t.Errorf("%+v", iv)
	}
}

// TestAfterRecovery: REVIEW15 #17. A replica triggered after the run had
// recovered is not the burst's (no burst_start/recovered milestones, out
// of the distribution), and a replica that first served after the
// recovery has no negative "first served → recovered" interval.
func TestAfterRecovery(t *testing.T) {
	s := time.Second
	evs := []sim.Event{
		{At: 436 * s, Kind: sim.EventScaleTrigger, Replica: 1},
		{At: 441 * s, Kind: sim.EventCapacityRequested, Replica: 1},
		{At: 531 * s, Kind: sim.EventFirstServed, Replica: 1},
		{At: 500 * s, Kind: sim.EventScaleTrigger, Replica: 2},
		{At: 505 * s, Kind: sim.EventCapacityRequested, Replica: 2},
		{At: 560 * s, Kind: sim.EventFirstServed, Replica: 2},  // after the recovery at 540 s
		{At: 546 * s, Kind: sim.EventScaleTrigger, Replica: 3}, // after the recovery
		{At: 551 * s, Kind: sim.EventCapacityRequested, Replica: 3},
		{At: 642 * s, Kind: sim.EventFirstServed, Replica: 3},
	}
	tl := FromSim(evs, Run{BurstStartNs: int64(420 * s), RecoveredNs: int64(540 * s)})
	if tl == nil || len(tl.Events) != 3 || tl.BurstEvents() != 2 {
		t.Fatalf("%+v", tl)
	}
	r3 := tl.Events[2]
	if !r3.AfterRecovery || tl.Events[0].AfterRecovery || tl.Events[1].AfterRecovery {
		t.Errorf("after recovery flags: %+v", tl.Events)
	}
	if _, ok := r3.At(BurstStart); ok {
		t.Errorf("r3 carries the burst's start: %+v", r3)
	}
	for _, iv := range tl.Intervals() {
		if iv.Min < 0 {
			t.Errorf("negative interval in the distribution: %+v", iv)
		}
		if iv.From == BurstStart && iv.To == Triggered && (iv.N != 2 || iv.Max != 80*s) {
			t.Errorf("burst start → triggered mixes r3 in: %+v", iv)
		}
		if iv.To == Recovered && iv.N != 1 {
			t.Errorf("first served → recovered: %+v, want r1 only", iv)
		}
	}
	ex := tl.Excluded()
	if len(ex) != 2 || !strings.Contains(ex[0], "r2's first served at 560.0 s") || !strings.Contains(ex[1], "r3 was triggered at 546.0 s, after the run had recovered") {
		t.Errorf("excluded: %q", ex)
	}
}
