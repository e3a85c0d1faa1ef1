package experiment

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scrape"
)

// Every n/a of the engine's queue wait carries its true reason: scraping
// off, scrapes that failed, or an engine that does not export the metric
// although 127 scrapes succeeded (llama.cpp has no queue-time histogram) —
// never a blanket "no engine telemetry".
func TestQueueWaitReasons(t *testing.T) {
	cases := []struct {
		name string
		st   scrape.Status
		want string
	}{
		{"no metrics url", scrape.Status{State: scrape.StateDisabled, Reason: "no --metrics-url given"}, "no --metrics-url"},
		{"llama.cpp", scrape.Status{State: scrape.StateOK, Preset: "llamacpp", Samples: 127, NotExported: []string{"queue_time", "ttft", "e2e", "success"}},
			"metric not exported by this engine: the llamacpp preset has no queue_time (127 scrapes succeeded)"},
		{"renamed or absent", scrape.Status{State: scrape.StatePartial, Preset: "vllm", Samples: 40, Missing: []string{"queue_time"}},
			"metric not exported by this engine: queue_time not found in 40 scrapes"},
		{"scrapes failed", scrape.Status{State: scrape.StateUnavailable, Failures: 3, Reason: "connection refused"},
			"scrape failed (3 of 3): connection refused"},
		{"found, no observations", scrape.Status{State: scrape.StateOK, Preset: "vllm", Samples: 10}, "engine queue wait: no observations"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &run.Result{Analysis: &analyze.Result{Phases: []analyze.PhaseResult{{Name: "main"}}}, Scrape: tc.st,
				QueueWait: map[string]analyze.QueueWait{"main": {Reason: "no observations"}}}
			r := Row(res, &run.Options{}, "main")
			b, err := json.Marshal(r.QueueWait.P50)
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ Reason string }
			if err := json.Unmarshal(b, &got); err != nil || got.Reason != tc.want {
				t.Fatalf("queue wait n/a reason %q (%s), want %q", got.Reason, b, tc.want)
			}
			if strings.Contains(got.Reason, report.ReasonNoEngineTelemetry) {
				t.Fatalf("blanket reason: %q", got.Reason)
			}
		})
	}
}

// The end-of-run summary names the reason once and does not repeat the
// scraper's own notes (already logged), let alone with a doubled
// "engine metrics: engine metrics:" prefix.
func TestPrintPhasesEngineNotes(t *testing.T) {
	d, err := rundir.Create(t.TempDir()+"/r", rundir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	res := &run.Result{Spec: run.Spec{Name: "r", Dir: d}, Analysis: &analyze.Result{Phases: []analyze.PhaseResult{{Name: "main"}}},
		Scrape: scrape.Status{State: scrape.StateOK, Preset: "llamacpp", Samples: 127, NotExported: []string{"queue_time"},
			Messages: []string{"engine metrics: kv_usage not exported by this engine build (looked for llamacpp:kv_cache_usage_ratio; optional: recent builds removed it)"}},
		Virtual: true}
	var b bytes.Buffer
	PrintPhases(&b, res)
	out := b.String()
	if strings.Contains(out, "engine metrics: engine metrics:") || strings.Count(out, "kv_usage") != 0 {
		t.Fatalf("repeated or doubled notes:\n%s", out)
	}
	if strings.Count(out, "queue_time") != 1 || !strings.Contains(out, "engine queue wait n/a: metric not exported by this engine") {
		t.Fatalf("want the reason once:\n%s", out)
	}
}
