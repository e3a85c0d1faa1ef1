package analyze

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestExactQueueWait(t *testing.T) {
	ms100 := make([]float64, 100) // 1 ms … 100 ms, in seconds
	for i := range ms100 {
		ms100[i] = float64(100-i) / 1000
	}
	ms20 := make([]float64, 20) // 1 ms … 20 ms
	for i := range ms20 {
		ms20[i] = float64(i+1) / 1000
	}
	cases := []struct {
		name  string
		waits []float64
		want  QueueWait
	}{
		// Sorted 0.125, 0.25, 0.5, 1 s; mean 1.875 / 4 = 0.46875 s.
		// p50: k = ⌈2⌉ − 1 = 1; p95: ⌈3.8⌉ − 1 = 3; p99: ⌈3.96⌉ − 1 = 3.
		{"four waits", []float64{0.5, 0.125, 1, 0.25}, QueueWait{Available: true, Count: 4, MeanMs: 468.75, P50Ms: 250, P95Ms: 1000, P99Ms: 1000}},
		// k = 49, 94, 98: the 50th, 95th and 99th smallest; mean 50.5 ms.
		{"a hundred waits", ms100, QueueWait{Available: true, Count: 100, MeanMs: 50.5, P50Ms: 50, P95Ms: 95, P99Ms: 99}},
		// p95: k = ⌈19⌉ − 1 = 18, the 19th; p99: ⌈19.8⌉ − 1 = 19, the largest.
		{"twenty waits", ms20, QueueWait{Available: true, Count: 20, MeanMs: 10.5, P50Ms: 10, P95Ms: 19, P99Ms: 20}},
		{"one wait", []float64{0.25}, QueueWait{Available: true, Count: 1, MeanMs: 250, P50Ms: 250, P95Ms: 250, P99Ms: 250}},
		{"zero waits are waits", []float64{0, 0, 0}, QueueWait{Available: true, Count: 3}},
		// Sad paths.
		{"no waits", nil, QueueWait{Reason: "no observations"}},
		{"empty", []float64{}, QueueWait{Reason: "no observations"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.waits)
			got := exactQueueWait(tc.waits)
			if got.Available != tc.want.Available || got.Reason != tc.want.Reason || got.Count != tc.want.Count || got.P99Above ||
				!near(got.MeanMs, tc.want.MeanMs) || !near(got.P50Ms, tc.want.P50Ms) || !near(got.P95Ms, tc.want.P95Ms) || !near(got.P99Ms, tc.want.P99Ms) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if !slices.Equal(in, tc.waits) {
				t.Errorf("waits modified: %v, was %v", tc.waits, in)
			}
		})
	}
}

// summary.json's "engine_queue_wait" keeps the field names it had when
// QueueWait lived in experiment.
func TestQueueWaitJSON(t *testing.T) {
	cases := []struct {
		qw   QueueWait
		want string
	}{
		{QueueWait{Available: true, Count: 4, MeanMs: 468.75, P50Ms: 250, P95Ms: 1000, P99Ms: 1000, P99Above: true},
			`{"available":true,"count":4,"mean_ms":468.75,"p50_ms":250,"p95_ms":1000,"p99_ms":1000,"p99_above":true}`},
		{exactQueueWait(nil), `{"available":false,"reason":"no observations","count":0,"mean_ms":0,"p50_ms":0,"p95_ms":0,"p99_ms":0}`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(tc.qw)
		if err != nil || string(b) != tc.want {
			t.Errorf("got  %s (%v)\nwant %s", b, err, tc.want)
		}
	}
}
