package run

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
)

// The manifest describes each replay phase's trace and counts repeated
// blocks over the entries the phase keeps; the cache state speaks of them
// only when a trace has blocks.
func TestReplayedTraces(t *testing.T) {
	p := schedule.Plan{Phases: []schedule.Phase{
		{Name: "a", Arrival: schedule.ArrivalReplay, TraceFile: "../schedule/testdata/mooncake_good.jsonl", Speed: 2},
		{Name: "b", Arrival: schedule.ArrivalReplay, TraceFile: "../schedule/testdata/azure_good.csv"},
		{Name: "c", Duration: 1, Rate: 1},
	}}
	if err := p.LoadTraces(""); err != nil {
		t.Fatal(err)
	}
	p.Phases[0].Duration = 1500 * time.Millisecond // 3 s of trace at speed 2: entries at 0, 1.5 s
	p.Phases[1].Duration = time.Second
	got := replayedTraces(p)
	if len(got) != 2 {
		t.Fatalf("traces %+v", got)
	}
	if a := got[0]; a.Format != "mooncake" || a.Rows != 6 || a.Kept != 2 || a.Speed != 2 || a.BlockTokens != 512 || a.PromptTokens != 2700 || a.RepeatedTokens != 1200 {
		t.Errorf("mooncake %+v", a)
	}
	if b := got[1]; b.Format != "azure" || b.Kept != 3 || b.Speed != 1 || b.BlockTokens != 0 || b.RepeatedTokens != 0 {
		t.Errorf("azure %+v", b)
	}
	if s := traceCacheState(got[1:], false); s != "" {
		t.Errorf("cache state without blocks %q", s)
	}
	s := traceCacheState(got, false)
	if !strings.Contains(s, "phase a: 44.4% of prompt tokens (1200 of 2700)") || !strings.HasSuffix(s, "each request's own part unique (nonce)") {
		t.Errorf("cache state %q", s)
	}
	if s := traceCacheState(got, true); !strings.HasSuffix(s, "(--no-nonce)") {
		t.Errorf("cache state with --no-nonce %q", s)
	}
}
