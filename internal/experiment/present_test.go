package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
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
			if err := json.Unmarshal(b, &got); err != nil || !strings.HasPrefix(got.Reason, tc.want) {
				t.Fatalf("queue wait n/a reason %q (%s), want %q", got.Reason, b, tc.want)
			}
			if tc.name != "found, no observations" && !strings.Contains(got.Reason, "extra observed latency") {
				t.Fatalf("reason %q does not say load-induced latency is extra observed latency", got.Reason)
			}
			if strings.Contains(got.Reason, report.ReasonNoEngineTelemetry) {
				t.Fatalf("blanket reason: %q", got.Reason)
			}
		})
	}
}

// The per-request queue column says why it is empty: no per-request
// timing at all, or timing that has no queue (llama.cpp's timings carry
// prefill and decode only).
func TestEngineQueueReasons(t *testing.T) {
	reason := func(et map[string]analyze.EngineTiming) string {
		res := &run.Result{Analysis: &analyze.Result{Phases: []analyze.PhaseResult{{Name: "main"}}}, EngineTiming: et}
		b, _ := json.Marshal(Row(res, &run.Options{}, "main").EngineQueue.P50)
		var got struct{ Reason string }
		_ = json.Unmarshal(b, &got)
		return got.Reason
	}
	if got := reason(nil); got != report.ReasonNoEngineTiming {
		t.Errorf("no timing: %q", got)
	}
	llama := map[string]analyze.EngineTiming{"main": {Source: analyze.EngineSourceResponse, OK: 10, Timed: 10, Prefill: analyze.QueueWait{Available: true}}}
	if got := reason(llama); !strings.Contains(got, "has no queue time") {
		t.Errorf("llama.cpp timings: %q", got)
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
	if strings.Count(out, "queue_time") != 1 || !strings.Contains(out, "engine queue wait (histogram) n/a: metric not exported by this engine") {
		t.Fatalf("want the reason once:\n%s", out)
	}
}

// The engine's queue peaks at 4 at 5 s, between two window starts (0 and
// 10 s) where it reads 2: the charts and timeseries.csv show each window's
// peak (4), not the sample at its start (2), and the chart data also
// carries every sample at the scrape resolution.
func TestEngineQueueAtItsOwnResolution(t *testing.T) {
	var engine []scrape.Sample
	for i, w := range []float64{2, 3, 4, 3, 2, 2, 1, 1, 1, 1} { // every 2.5 s from 0
		s := scrape.EmptySample(int64(i) * 2500e6)
		s.Has = s.Has.With(scrape.Waiting).With(scrape.Running)
		s.Waiting, s.Running = w, 8
		engine = append(engine, s)
	}
	a := &analyze.Result{Windows: []analyze.WindowResult{{StartMs: 0, EndMs: 10_000}, {StartMs: 10_000, EndMs: 20_000}, {StartMs: 20_000, EndMs: 30_000}}}
	res := &run.Result{Analysis: a, Engine: engine}
	c := Charts(res, &run.Options{}, "r")
	if len(c.EngineWaiting) != 3 || c.EngineWaiting[0] != 4 || c.EngineWaiting[1] != 2 {
		t.Errorf("engine waiting per window %v, want the peaks [4 2 …]", c.EngineWaiting)
	}
	if c.EngineWaiting[2] != 1 { // no sample in [20 s, 30 s): the nearest one
		t.Errorf("window without a sample: %v, want the nearest sample's 1", c.EngineWaiting[2])
	}
	if len(c.EngineT) != len(engine) || c.EngineT[2] != 5 || c.EngineWaitingSamples[2] != 4 {
		t.Errorf("engine samples %v at %v, want every scrape", c.EngineWaitingSamples, c.EngineT)
	}
	var b strings.Builder
	if err := rundir.WriteTimeseries(&b, a, engine); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	first := strings.Split(lines[1], ",")
	if got := first[len(first)-2]; got != "4" {
		t.Errorf("timeseries.csv engine_waiting of the first window %q, want the peak 4:\n%s", got, b.String())
	}
}

// Connection wait (connection acquired − sent, the client's own queue)
// is its own boundary: a row's columns and a line of the end-of-run
// summary.
func TestConnWaitIsReported(t *testing.T) {
	an, err := analyze.New(analyze.Config{Phases: []analyze.Phase{{Name: "main", End: 10e9}}, Timeout: 60e9})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		r := record.New("r", int64(i), "main", int64(i)*100e6)
		r.SentNs = r.ScheduledNs
		r.ConnNs = r.SentNs + 40e6 // 40 ms waiting for a connection
		r.HeadersNs, r.FirstTokenNs, r.DoneNs = r.ConnNs+1e6, r.ConnNs+2e6, r.ConnNs+3e6
		r.Status, r.Outcome = 200, record.OK
		an.Add(&r)
	}
	d, err := rundir.Create(t.TempDir()+"/r", rundir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	res := &run.Result{Spec: run.Spec{Name: "r", Dir: d}, Analysis: an.Result()}
	row := Row(res, &run.Options{}, "main")
	// In virtual time there is no connection to wait for: n/a, not 0.
	if v := Row(&run.Result{Spec: res.Spec, Analysis: res.Analysis, Virtual: true}, &run.Options{}, "main").ConnWait.P95; v.Valid {
		t.Error("a virtual-time run reports a connection wait")
	}
	var b bytes.Buffer
	if err := report.WriteCSV(&b, report.Table{Rows: []report.Row{row}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	head, vals := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	found := false
	for i, h := range head {
		if h == "conn_wait_p95_ms" {
			found = true
			if !strings.HasPrefix(vals[i], "40") {
				t.Errorf("conn_wait_p95_ms = %q, want 40 ms", vals[i])
			}
		}
	}
	if !found {
		t.Fatalf("no conn_wait_p95_ms column: %s", lines[0])
	}
	b.Reset()
	PrintPhases(&b, res)
	if !strings.Contains(b.String(), "connection wait") {
		t.Errorf("summary lacks the connection wait:\n%s", b.String())
	}
}

// `surge run --trace` replays the whole trace by default — not the first
// 30 s (the default --duration) — and an explicit --duration shorter than
// the trace cuts it with a warning.
func TestRunReplaysWholeTrace(t *testing.T) {
	path := t.TempDir() + "/prod.csv"
	var b strings.Builder
	b.WriteString("offset_s\n")
	for i := range 120 {
		fmt.Fprintf(&b, "%d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := DefaultRunConfig()
	c.Trace = path
	p, _, notes, err := c.PlanNotes()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Duration(); got != 120*time.Second || len(notes) != 0 {
		t.Fatalf("replay of %s, notes %q; want the whole trace (119 s and one gap: 120 arrivals at 1/s), silently", got, notes)
	}
	c.Duration, c.DurationSet = time.Minute, true
	p, _, notes, err = c.PlanNotes()
	if err != nil {
		t.Fatal(err)
	}
	if p.Duration() != time.Minute || len(notes) != 1 || !strings.Contains(notes[0], "cuts the trace") {
		t.Fatalf("replay of %s, notes %q; want 1m cut with a warning", p.Duration(), notes)
	}
}

// TestRowQueueWaitInFirstBucket follows the case found against vLLM 0.32
// from the engine's histogram to the results row: 500 waits of 0.03 ms on
// average, all in the first bucket (le 0.3 s), read as "≤ 300ms" with the
// mean in the reason, never as 150/285/297 ms.
func TestRowQueueWaitInFirstBucket(t *testing.T) {
	bounds := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 20, 40, 80, 160, 640, 2560, 5120, 10240, 20480, math.Inf(1)}
	zero, end := make([]float64, len(bounds)), make([]float64, len(bounds))
	for i := range end {
		end[i] = 500
	}
	st := scrape.DeltaStats(scrape.Hist{Bounds: bounds, Counts: zero}, scrape.Hist{Bounds: bounds, Counts: end, Count: 500, Sum: 0.015})
	res := &run.Result{
		Analysis:  &analyze.Result{Phases: []analyze.PhaseResult{{Name: "main"}}},
		QueueWait: map[string]analyze.QueueWait{"main": run.QueueWaitOf(st)},
	}
	r := Row(res, &run.Options{}, "main")
	for name, o := range map[string]struct {
		v               float64
		censored, upper bool
		reason          string
	}{
		"p50": {r.QueueWait.P50.V, r.QueueWait.P50.Censored, r.QueueWait.P50.AtMost, r.QueueWait.P50.Reason},
		"p95": {r.QueueWait.P95.V, r.QueueWait.P95.Censored, r.QueueWait.P95.AtMost, r.QueueWait.P95.Reason},
		"p99": {r.QueueWait.P99.V, r.QueueWait.P99.Censored, r.QueueWait.P99.AtMost, r.QueueWait.P99.Reason},
	} {
		if o.v != 300 || !o.censored || !o.upper {
			t.Errorf("queue wait %s = %+v, want at most 300 ms", name, o)
		}
		if !strings.Contains(o.reason, "mean wait 0.03ms") {
			t.Errorf("queue wait %s reason %q lacks the exact mean", name, o.reason)
		}
	}
}

// The simulator's scaling milestones become numbered marks on every chart,
// and the measured backlog is the engine's waiting + running at each scrape
// when scraped, else the client's in-flight timeline.
func TestChartsMilestonesAndMeasuredBacklog(t *testing.T) {
	a := &analyze.Result{Windows: []analyze.WindowResult{{StartMs: 0, EndMs: 10_000}}, Timeline: []analyze.Sample{{TMs: 0, InFlight: 3}, {TMs: 1000, InFlight: 5}}}
	res := &run.Result{Analysis: a, SimEvents: []sim.Event{
		{At: 12 * time.Second, Kind: sim.EventScaleTrigger, Replica: 1},
		{At: 47 * time.Second, Kind: sim.EventModelReady, Replica: 1},
	}}
	c := Charts(res, &run.Options{}, "r")
	if len(c.Markers) != 2 || c.Markers[1].Kind != report.MarkerScaling || c.Markers[1].T != 47 || c.Markers[1].Label != "model ready (replica 1)" {
		t.Errorf("markers %+v", c.Markers)
	}
	bt, bv, label := MeasuredBacklog(res)
	if label != "client in flight" || len(bt) != 2 || bt[1] != 1 || bv[1] != 5 {
		t.Errorf("backlog without engine metrics: %v %v %q", bt, bv, label)
	}
	s := scrape.EmptySample(2e9)
	s.Has = s.Has.With(scrape.Waiting).With(scrape.Running)
	s.Waiting, s.Running = 7, 8
	res.Engine = []scrape.Sample{s}
	bt, bv, label = MeasuredBacklog(res)
	if label != "engine waiting" || len(bt) != 1 || bt[0] != 2 || bv[0] != 7 {
		t.Errorf("backlog with engine metrics: %v %v %q", bt, bv, label)
	}
}

// The prompt-size warning looks at the spread too: a fixed 64-token
// prompt counted as 47–85 tokens has the right median and a wrong
// workload.
func TestPromptMetaSpread(t *testing.T) {
	ps := func(ratioP5, ratioP95, p50 int) *record.PromptSizing {
		return &record.PromptSizing{Description: "probe",
			Intended: record.TokenStats{Samples: 100, P5: 64, P50: 64, P95: 64},
			Actual:   record.TokenStats{Samples: 100, P5: 64 * ratioP5 / 1000, P50: p50, P95: 64 * ratioP95 / 1000},
			Ratio:    record.TokenStats{Samples: 100, P5: ratioP5, P50: 1000, P95: ratioP95}}
	}
	for _, tc := range []struct {
		name  string
		ps    *record.PromptSizing
		warns []string
	}{
		{"exact", ps(1000, 1000, 64), nil},
		{"within 10%", ps(920, 1080, 64), nil},
		{"spread", ps(734, 1328, 64), []string{"request by request they were 0.73× (p5) to 1.33× (p95) the intended length"}},
		{"median off", ps(1200, 1300, 80), []string{"+25% off the intended length at the median", "1.20× (p5) to 1.30× (p95)"}},
	} {
		_, notes := PromptMeta(tc.ps)
		all := strings.Join(notes, "\n")
		if len(notes) == 0 && len(tc.warns) > 0 || len(tc.warns) == 0 && len(notes) > 0 {
			t.Errorf("%s: notes %q", tc.name, notes)
		}
		for _, w := range tc.warns {
			if !strings.Contains(all, w) {
				t.Errorf("%s: notes lack %q: %s", tc.name, w, all)
			}
		}
	}
}
