package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/scaling"
	"github.com/surge-bench/surge/internal/sim"
)

// TestScalingLine: REVIEW15 #18. A run with a timeline says so on the
// console, in one line, with the median of pod created → first served
// over the burst's events and where the timeline is.
func TestScalingLine(t *testing.T) {
	s := time.Second
	evs := []sim.Event{
		{At: 436 * s, Kind: sim.EventScaleTrigger, Replica: 1},
		{At: 441 * s, Kind: sim.EventCapacityRequested, Replica: 1},
		{At: 492 * s, Kind: sim.EventFirstServed, Replica: 1},
		{At: 546 * s, Kind: sim.EventScaleTrigger, Replica: 2}, // after the recovery at 540 s
		{At: 551 * s, Kind: sim.EventCapacityRequested, Replica: 2},
		{At: 642 * s, Kind: sim.EventFirstServed, Replica: 2},
	}
	res := &run.Result{Scaling: scaling.FromSim(evs, scaling.Run{BurstStartNs: int64(420 * s), RecoveredNs: int64(540 * s)})}
	got := ScalingLine(res)
	want := "autoscaling timeline: 2 new replicas (1 triggered after the recovery), pod created → first served 51.0 s (scaling.json"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q…", got, want)
	}
	res.Scaling = &scaling.Timeline{Source: scaling.SourceKubernetes, Watch: "llm/app=vllm", Events: []scaling.Event{}}
	if got := ScalingLine(res); !strings.Contains(got, "no new pod matching llm/app=vllm") {
		t.Errorf("no event: %q", got)
	}
	if ScalingLine(&run.Result{}) != "" {
		t.Error("no timeline: want no line")
	}
}
