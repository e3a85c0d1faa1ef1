package analyze

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestGeneratorCheck(t *testing.T) {
	mk := func(n int, gap, lagPer time.Duration) (sched, sent []int64) {
		for i := range n {
			s := int64(i) * int64(gap)
			sched, sent = append(sched, s), append(sent, s+int64(i)*int64(lagPer))
		}
		return
	}
	cases := []struct {
		name    string
		n       int
		lagPer  time.Duration // lag added per arrival: a generator falling behind
		lagP99  float64
		limited bool
		want    string
	}{
		{"keeps up", 200, 0, 1, false, ""},
		{"falls behind", 200, time.Millisecond, 1, true, "it sent"},
		{"lag only", 200, 0, 250, true, "schedule lag p99 250ms"},
		{"too few sends", 10, 5 * time.Millisecond, 500, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sched, sent := mk(tc.n, 10*time.Millisecond, tc.lagPer)
			g := GeneratorCheck(sched, sent, tc.lagP99)
			if g.Behind != tc.limited || !strings.Contains(g.Note, tc.want) {
				t.Fatalf("limited %v note %q", g.Behind, g.Note)
			}
			if tc.limited && !strings.Contains(g.Note, "not the target's") {
				t.Errorf("note does not say whose limit it is: %q", g.Note)
			}
		})
	}
}

// Every rate and note computed by hand.
func TestGeneratorCheckByHand(t *testing.T) {
	// n requests scheduled every schedGap and sent every sentGap.
	even := func(n int, schedGap, sentGap time.Duration) (sched, sent []int64) {
		for i := range n {
			sched, sent = append(sched, int64(i)*int64(schedGap)), append(sent, int64(i)*int64(sentGap))
		}
		return
	}
	pair := func(sched, sent []int64) [2][]int64 { return [2][]int64{sched, sent} }
	const whose = ". This is surge's limit on this machine, not the target's"
	s200, t200 := even(200, 10*time.Millisecond, 11*time.Millisecond)
	same := make([]int64, 20) // 20 requests scheduled at one instant
	cases := []struct {
		name   string
		times  [2][]int64
		lagP99 float64
		want   Generator // LagP99Ms is always lagP99
	}{
		// 199 intervals of 10 ms: 199 / 1.99 s = 100/s; of 11 ms: 199 / 2.189 s = 90.91/s, 91 %.
		{"falls behind", pair(s200, t200), 1,
			Generator{ScheduledRPS: 100, AchievedRPS: 1000.0 / 11, Behind: true, Note: "the load generator could not keep its schedule: it sent 90.91 req/s of the 100.00 scheduled (91%)" + whose}},
		{"falls behind and lags", pair(s200, t200), 250,
			Generator{ScheduledRPS: 100, AchievedRPS: 1000.0 / 11, Behind: true, Note: "the load generator could not keep its schedule: it sent 90.91 req/s of the 100.00 scheduled (91%), schedule lag p99 250ms" + whose}},
		// 20 requests, 19 intervals: 96 ms vs 100 ms is 96 % of the schedule, 94 ms vs 100 ms is 94 %.
		{"96% of the schedule", pair(even(20, 96*time.Millisecond, 100*time.Millisecond)), 1,
			Generator{ScheduledRPS: 1000.0 / 96, AchievedRPS: 10}},
		{"94% of the schedule", pair(even(20, 94*time.Millisecond, 100*time.Millisecond)), 1,
			Generator{ScheduledRPS: 1000.0 / 94, AchievedRPS: 10, Behind: true, Note: "the load generator could not keep its schedule: it sent 10.00 req/s of the 10.64 scheduled (94%)" + whose}},
		{"lag p99 exactly 100 ms", pair(even(20, 100*time.Millisecond, 100*time.Millisecond)), 100,
			Generator{ScheduledRPS: 10, AchievedRPS: 10}},
		{"lag p99 101 ms", pair(even(20, 100*time.Millisecond, 100*time.Millisecond)), 101,
			Generator{ScheduledRPS: 10, AchievedRPS: 10, Behind: true, Note: "the load generator could not keep its schedule: schedule lag p99 101ms" + whose}},
		{"exactly 20 sends are judged", pair(even(20, 10*time.Millisecond, 20*time.Millisecond)), 1,
			Generator{ScheduledRPS: 100, AchievedRPS: 50, Behind: true, Note: "the load generator could not keep its schedule: it sent 50.00 req/s of the 100.00 scheduled (50%)" + whose}},
		{"any order", pair(reversed(s200), reversed(t200)), 1,
			Generator{ScheduledRPS: 100, AchievedRPS: 1000.0 / 11, Behind: true, Note: "the load generator could not keep its schedule: it sent 90.91 req/s of the 100.00 scheduled (91%)" + whose}},

		// Sad paths: not judged, however bad.
		{"19 sends", pair(even(19, 10*time.Millisecond, 20*time.Millisecond)), 500, Generator{}},
		{"no sends", pair(nil, nil), 500, Generator{}},
		{"all scheduled at one instant", pair(same, s200[:20]), 500, Generator{}},
		{"all sent at one instant", pair(s200[:20], same), 500, Generator{}},
		{"lengths differ", pair(s200[:21], t200[:20]), 500, Generator{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := GeneratorCheck(tc.times[0], tc.times[1], tc.lagP99)
			want := tc.want
			want.LagP99Ms = tc.lagP99
			if got.Behind != want.Behind || got.Note != want.Note || got.LagP99Ms != want.LagP99Ms ||
				!near(got.ScheduledRPS, want.ScheduledRPS) || !near(got.AchievedRPS, want.AchievedRPS) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// The verdict keeps the JSON names of experiment.Measure's generator fields.
func TestGeneratorJSON(t *testing.T) {
	b, err := json.Marshal(Generator{ScheduledRPS: 100, AchievedRPS: 90, LagP99Ms: 1, Behind: true, Note: "n"})
	const want = `{"scheduled_rps":100,"achieved_send_rps":90,"lag_p99_ms":1,"generator_limited":true,"generator_note":"n"}`
	if err != nil || string(b) != want {
		t.Errorf("got  %s (%v)\nwant %s", b, err, want)
	}
	if b, _ := json.Marshal(Generator{}); strings.Contains(string(b), "generator_note") {
		t.Errorf("empty note written: %s", b)
	}
}

func TestLagNote(t *testing.T) {
	cases := []struct {
		name string
		lag  Dist
		want string
	}{
		{"spikes", Dist{Count: 1000, P50Ms: 0.2, P95Ms: 4, P99Ms: 35, MaxMs: 180},
			"note: occasional schedule lag spikes (p99 35ms, max 180ms) though the generator mostly kept its schedule (p95 4ms); is the machine busy?"},
		{"p95 exactly at the threshold", Dist{Count: 1000, P95Ms: 10, P99Ms: 12.5, MaxMs: 40},
			"note: occasional schedule lag spikes (p99 12.5ms, max 40ms) though the generator mostly kept its schedule (p95 10ms); is the machine busy?"},
		{"sustained lag", Dist{Count: 1000, P95Ms: 25, P99Ms: 60, MaxMs: 1520},
			"note: the generator lagged its schedule (p95 25ms, p99 60ms, max 1.52s); rates and TTFT-from-schedule include this lag. Is the machine busy?"},
		// Sad paths: nothing worth a line.
		{"p99 exactly at the threshold", Dist{Count: 1000, P95Ms: 2, P99Ms: 10, MaxMs: 50}, ""},
		{"keeps its schedule", Dist{Count: 1000, P95Ms: 0.5, P99Ms: 1, MaxMs: 3}, ""},
		{"no samples", Dist{P95Ms: 50, P99Ms: 50}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LagNote(tc.lag); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
