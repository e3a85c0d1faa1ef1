package experiment

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
)

// A coordinated run names each worker's lag, marks the slow one, and says
// why a lost worker was lost; one process has no such lines.
func TestWorkerLines(t *testing.T) {
	if l := WorkerLines(&run.Result{}); l != nil {
		t.Fatalf("one process: %q", l)
	}
	res := &run.Result{Distributed: &record.Distribution{Mode: record.DistCoordinator, Generators: 3, Shard: -1, Each: []record.Generator{
		{Index: 0, Name: "a", Arrivals: 10, Records: 10, LagP99Ms: 1.5},
		{Index: 1, Name: "b", Arrivals: 10, Records: 10, LagP99Ms: 80},
		{Index: 3, Name: "d", Arrivals: 93, Records: 33, Due: 33, LagP99Ms: 1.5},
		{Index: 2, Name: "c", Arrivals: 10, Records: 4, LagP99Ms: 2, Lost: true, LostWhy: "worker c lost at 1.2 s: connection dropped", LostInFlight: 2, LostUnsent: 4},
		{Index: 4, Name: "e", Arrivals: 10, Records: 6, LagP99Ms: 2, Lost: true, Interrupted: true, LostWhy: "worker e interrupted at 0.9 s: Ctrl-C or SIGTERM on the worker", LostInFlight: 3, LostUnsent: 4},
	}}}
	got := strings.Join(WorkerLines(res), "\n")
	for _, want := range []string{
		"worker 0 a (surge ): 10 of 10 arrivals recorded by it, schedule lag p99 1.5 ms;",
		"worker 1 b (surge ): 10 of 10 arrivals recorded by it, schedule lag p99 80.0 ms — SLOW",
		"worker 3 d (surge ): 33 of 33 arrivals due before the schedule was stopped (93 planned) recorded by it,",
		"worker 2 c LOST: worker c lost at 1.2 s: connection dropped; 2 of its arrivals were in flight (cancelled records), 4 never sent (generator_drop records).",
		"worker 4 e INTERRUPTED: worker e interrupted at 0.9 s: Ctrl-C or SIGTERM on the worker; it cancelled its 3 requests in flight (its cancelled records), 4 arrivals never sent (generator_drop records).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Count(got, "LOST") != 1 {
		t.Errorf("one lost worker (the interrupted one is not):\n%s", got)
	}
	if strings.Count(got, "SLOW") != 1 {
		t.Errorf("one slow worker:\n%s", got)
	}
}

// A burst's or capacity step's row gets the same facts in one line, and a
// capacity step's notes (LevelNotes) carry it.
func TestWorkerSummary(t *testing.T) {
	if s := WorkerSummary(&run.Result{}); s != "" {
		t.Fatalf("one process: %q", s)
	}
	res := &run.Result{Distributed: &record.Distribution{Mode: record.DistCoordinator, Generators: 2, Shard: -1, Each: []record.Generator{
		{Index: 0, Name: "a", Arrivals: 10, Records: 10, LagP99Ms: 1.5},
		{Index: 1, Name: "b", Arrivals: 10, Records: 4, LagP99Ms: 80, Lost: true, LostWhy: "connection dropped"},
	}}}
	want := "2 workers: a 10/10 recorded, lag p99 1.5 ms; b 4/10 recorded, lag p99 80.0 ms SLOW LOST (connection dropped)."
	if s := WorkerSummary(res); s != want {
		t.Errorf("summary %q, want %q", s, want)
	}
	res.Analysis = &analyze.Result{}
	if n := strings.Join(LevelNotes("step 3", res), "\n"); !strings.Contains(n, "step 3: "+want) {
		t.Errorf("level notes:\n%s", n)
	}
}

// A lost worker's drops are not called the in-flight cap's in the
// console's WARNING; the cap's own drops still are.
func TestGeneratorNotesWorkerLost(t *testing.T) {
	res := &run.Result{Virtual: true, Analysis: &analyze.Result{}}
	res.Analysis.Overall.Outcomes = map[record.Outcome]int64{record.GeneratorDrop: 7}
	res.Analysis.Overall.WorkerLostDrops = 5
	got := strings.Join(generatorNotes(res), "\n")
	for _, want := range []string{"WARNING: 2 arrivals were dropped by the in-flight cap", "WARNING: 5 arrivals were never sent because a worker was lost"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// A busy host's noise between workers (55 vs 27 ms p99, REVIEW15 #8) is
// not SLOW; the RTT is printed without a sign.
func TestWorkerLinesNoiseNotSlow(t *testing.T) {
	res := &run.Result{Distributed: &record.Distribution{Mode: record.DistCoordinator, Generators: 2, Shard: -1, Each: []record.Generator{
		{Index: 0, Name: "w0", Arrivals: 365, Records: 365, LagP99Ms: 26.9, RTTNs: 154000},
		{Index: 1, Name: "w1", Arrivals: 365, Records: 365, LagP99Ms: 55.4, RTTNs: 154000},
	}}}
	got := strings.Join(WorkerLines(res), "\n") + WorkerSummary(res)
	if strings.Contains(got, "SLOW") || strings.Contains(got, "RTT +") || !strings.Contains(got, "RTT 0.154 ms") {
		t.Errorf("noise:\n%s", got)
	}
}
