package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// syntheticRecords: one ok request every gap from 0 to end, sent on time,
// waiting ttft(t) for its first token and done a second later; good(t)
// says whether it met its deadline.
func syntheticRecords(gap, end time.Duration, ttft func(t time.Duration) time.Duration, good func(t time.Duration) bool) []record.Record {
	var recs []record.Record
	for t, i := time.Duration(0), int64(0); t < end; t, i = t+gap, i+1 {
		r := record.New("x", i, "step", int64(t))
		r.SentNs = int64(t)
		r.FirstTokenNs = int64(t + ttft(t))
		r.DoneNs = r.FirstTokenNs + int64(time.Second)
		r.Outcome, r.Status, r.Good = record.OK, 200, good(t)
		recs = append(recs, r)
	}
	return recs
}

func TestHopelessJudge(t *testing.T) {
	always := func(time.Duration) bool { return true }
	flat := func(time.Duration) time.Duration { return 300 * time.Millisecond }
	growing := func(t time.Duration) time.Duration { return 500*time.Millisecond + t/2 } // backlog builds up
	before := func(d time.Duration) func(time.Duration) bool { return func(t time.Duration) bool { return t >= d } }
	h := Hopeless{StepStart: 0, Planned: 1000, Goodput: 0.99, LimitMs: 2000}
	cases := []struct {
		name    string
		recs    []record.Record
		horizon time.Duration
		check   Hopeless
		want    string // substring; "" = not hopeless
	}{
		{"steady below capacity", syntheticRecords(100*time.Millisecond, 30*time.Second, flat, always), 30 * time.Second, h, ""},
		// TTFT = 500 ms + t/2: slope 500 ms per second, 500 + 500·30 = 15.5 s at the horizon.
		{"growing backlog above the limit", syntheticRecords(100*time.Millisecond, 30*time.Second, growing, always), 30 * time.Second, h,
			"over-saturated: requests waiting for a first token grow by "},
		{"growing backlog, the TTFT trend", syntheticRecords(100*time.Millisecond, 30*time.Second, growing, always), 30 * time.Second, h,
			"and TTFT from the schedule by 500ms per second, now about 15.5s (limit 2s)"},
		{"growing but still under the limit", syntheticRecords(100*time.Millisecond, 2*time.Second, growing, always), 2 * time.Second, h, ""},
		{"growing, limit from the deadline", syntheticRecords(100*time.Millisecond, 30*time.Second, growing, always), 30 * time.Second,
			Hopeless{Planned: 1000, LimitMs: 60_000}, ""},
		{"goodput budget spent", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, func(t time.Duration) bool { return t%(400*time.Millisecond) != 0 }), 5 * time.Second, h,
			"goodput can no longer reach 99%: 13 of the 1000 planned"},
		{"goodput budget not yet spent", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, func(t time.Duration) bool { return t != 0 }), 5 * time.Second, h, ""},
		// (1 − 0.99)·1000 = 10 misses are allowed; the 11th is one too many.
		{"goodput budget exactly spent", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, before(time.Second)), 5 * time.Second, h, ""},
		{"goodput budget one over", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, before(1100*time.Millisecond)), 5 * time.Second, h,
			"goodput can no longer reach 99%: 11 of the 1000 planned requests already missed the deadline"},
		{"warmup failures do not count", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, before(2*time.Second)), 5 * time.Second,
			Hopeless{StepStart: 2 * time.Second, Planned: 1000, Goodput: 0.99, LimitMs: 2000}, ""},
		// Sad paths: nothing to judge.
		{"too few records", syntheticRecords(time.Second, 5*time.Second, growing, always), 5 * time.Second, Hopeless{Planned: 5, LimitMs: 100}, ""},
		{"zero value", syntheticRecords(100*time.Millisecond, 30*time.Second, growing, func(time.Duration) bool { return false }), 30 * time.Second, Hopeless{}, ""},
		{"goodput without a plan", syntheticRecords(100*time.Millisecond, 5*time.Second, flat, func(time.Duration) bool { return false }), 5 * time.Second,
			Hopeless{Goodput: 0.99, LimitMs: 2000}, ""},
		{"no records", nil, 30 * time.Second, h, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.check.Judge(tc.recs, tc.horizon)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Judge = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOverSaturatedSadPaths(t *testing.T) {
	growing := func(t time.Duration) time.Duration { return 500*time.Millisecond + t/2 }
	recs := syntheticRecords(100*time.Millisecond, 30*time.Second, growing, func(time.Duration) bool { return true })
	// The growing backlog itself is over-saturated, just: its fitted TTFT at
	// the horizon is 500 + 500·30 = 15 500 ms.
	if _, ok := OverSaturated(recs, 0, 30*time.Second, 15_500-1); !ok {
		t.Fatal("the growing backlog is not over-saturated") // the cases below would pass for nothing
	}
	drops := make([]record.Record, len(recs))
	for i := range recs {
		drops[i] = record.New("d", int64(i), "step", recs[i].ScheduledNs)
		drops[i].Outcome = record.GeneratorDrop
	}
	cases := []struct {
		name          string
		recs          []record.Record
		from, horizon time.Duration
		limitMs       float64
	}{
		{"horizon at the step start", recs, 30 * time.Second, 30 * time.Second, 2000},
		{"horizon before the step start", recs, 10 * time.Second, 5 * time.Second, 2000},
		{"no limit", recs, 0, 30 * time.Second, 0},
		{"negative limit", recs, 0, 30 * time.Second, -1},
		{"above the limit only later", recs, 0, 30 * time.Second, 15_500 + 1},
		{"generator drops never wait", drops, 0, 30 * time.Second, 2000},
		// 14 requests over 0.7 s, but at the minimum 100 ms step only 7
		// backlog samples, one too few.
		{"too few backlog samples", syntheticRecords(50*time.Millisecond, 700*time.Millisecond, growing, func(time.Duration) bool { return true }), 0, 700 * time.Millisecond, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := OverSaturated(tc.recs, tc.from, tc.horizon, tc.limitMs); ok || why != "" {
				t.Fatalf("over-saturated: %q", why)
			}
		})
	}
}

// A virtual run whose every arrival was sent passes a horizon of "never"
// (virtual.stopAt): the backlog is sampled up to the last observation, not
// stepped towards 2⁶³ ns until the sample slices fill the memory.
func TestOverSaturatedUnboundedHorizon(t *testing.T) {
	growing := func(t time.Duration) time.Duration { return 500*time.Millisecond + t/2 }
	recs := syntheticRecords(100*time.Millisecond, 30*time.Second, growing, func(time.Duration) bool { return true })
	var last int64
	for i := range recs {
		last = max(last, recs[i].FirstTokenNs)
	}
	want, wantOK := OverSaturated(recs, 0, time.Duration(last)+1, 2000)
	got, ok := OverSaturated(recs, 0, time.Duration(1<<63-1), 2000)
	if ok != wantOK || got != want {
		t.Fatalf("horizon never: %q %v; want %q %v (the horizon at the last observation)", got, ok, want, wantOK)
	}
}
