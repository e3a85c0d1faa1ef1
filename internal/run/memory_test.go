package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
)

func constantPlan(rate float64, d time.Duration) schedule.Plan {
	return schedule.Plan{Phases: []schedule.Phase{{Name: "main", Duration: d, Rate: rate, Arrival: schedule.ArrivalConstant}}}
}

// A virtual plan holds at most each phase's arrivals within one timeout
// (an engine that cannot keep up), at most the plan's arrivals; a plan
// over the memory available is refused before anything runs, naming
// what to change, and one under it is not.
func TestCheckMemory(t *testing.T) {
	o := DefaultOptions()
	o.Timeout = time.Minute
	held, _ := VirtualMemoryNeed(o, constantPlan(100000, 10*time.Minute))
	if held != 6_000_000 {
		t.Errorf("held %v at 100,000/s with a 60s timeout, want 6,000,000", held)
	}
	if held, _ := VirtualMemoryNeed(o, constantPlan(10, 5*time.Second)); held != 50 {
		t.Errorf("held %v for a 50-arrival plan, want 50", held)
	}
	defer func(f func() (uint64, string)) { availableMemory = f }(availableMemory)
	availableMemory = func() (uint64, string) { return 3 << 30, "the cgroup's memory limit" }

	err := CheckMemory(o, true, []schedule.Plan{constantPlan(100000, 10*time.Minute)})
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "6,000,000 requests") || !strings.Contains(err.Error(), "3.0 GiB is available (the cgroup's memory limit)") ||
		!strings.Contains(err.Error(), "--timeout") {
		t.Fatalf("huge plan: %v", err)
	}
	if err := CheckMemory(o, true, []schedule.Plan{constantPlan(5, time.Hour)}); err != nil {
		t.Errorf("a small plan refused: %v", err)
	}
	if err := CheckMemory(o, false, []schedule.Plan{constantPlan(500, 10*time.Minute)}); err != nil {
		t.Errorf("a live plan at the default --max-in-flight refused: %v", err)
	}
	wide := o
	wide.MaxInFlight = 200_000 // 6.1 GiB of streams
	if err := CheckMemory(wide, false, []schedule.Plan{constantPlan(500, time.Minute)}); !errors.As(err, &ce) ||
		!strings.Contains(err.Error(), "--max-in-flight: 200,000 requests in flight") || !strings.Contains(err.Error(), "lower --max-in-flight") {
		t.Errorf("a live plan of 200,000 streams: %v", err)
	}
	availableMemory = func() (uint64, string) { return 0, "" }
	if err := CheckMemory(o, true, []schedule.Plan{constantPlan(100000, 10*time.Minute)}); err != nil {
		t.Errorf("unknown memory refused: %v", err)
	}
}
