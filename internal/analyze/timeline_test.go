package analyze

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// A tiny hand-checked example, sampled every second over a 6 s run:
//
//	A  scheduled 0.5 s, sent 0.6 s, first token 3.2 s, done 4.0 s
//	B  scheduled 1.2 s, generator drop (never waits, never in flight)
//	C  scheduled 2.0 s, sent 2.0 s, no token, timed out at 5.5 s
//	D  scheduled 2.5 s, sent 2.5 s, neither token nor done (interrupted)
func TestTimelineHandExample(t *testing.T) {
	a := mustNew(t, Config{Phases: []Phase{{Name: "run", End: 6 * s}}})
	A := okRec(500*ms, 100*ms, 2700*ms, 3500*ms)
	B := failRec(1200*ms, record.GeneratorDrop)
	C := failRec(2*s, record.Timeout)
	C.DoneNs = int64(5500 * ms)
	D := failRec(2500*ms, record.Cancelled)
	D.DoneNs = record.None
	addAll(a, D, C, B, A) // any order

	want := []Sample{
		{TMs: 0, InFlight: 0, Waiting: 0, OldestWaitingAgeMs: 0},
		{TMs: 1000, InFlight: 1, Waiting: 1, OldestWaitingAgeMs: 500},  // A
		{TMs: 2000, InFlight: 2, Waiting: 2, OldestWaitingAgeMs: 1500}, // A, C
		{TMs: 3000, InFlight: 3, Waiting: 3, OldestWaitingAgeMs: 2500}, // A, C, D
		{TMs: 4000, InFlight: 2, Waiting: 2, OldestWaitingAgeMs: 2000}, // A has its token and is done at 4.0 s
		{TMs: 5000, InFlight: 2, Waiting: 2, OldestWaitingAgeMs: 3000}, // C, D
		{TMs: 6000, InFlight: 1, Waiting: 1, OldestWaitingAgeMs: 3500}, // C ended at 5.5 s; D still open
	}
	got := a.Result().Timeline
	if len(got) != len(want) {
		t.Fatalf("got %d samples, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestTimelineEdges(t *testing.T) {
	tests := []struct {
		name string
		rec  *record.Record
		at   int // sample index checked
		want Sample
	}{
		{"waiting ends exactly at a sample", okRec(1*s, 0, 1*s, 3*s), 2,
			Sample{TMs: 2000, InFlight: 1, Waiting: 0, OldestWaitingAgeMs: 0}},
		{"waiting starts exactly at a sample", okRec(1*s, 0, 1*s, 3*s), 1,
			Sample{TMs: 1000, InFlight: 1, Waiting: 1, OldestWaitingAgeMs: 0}},
		{"a failure without token stops waiting when it ends", failRec(1*s, record.HTTPError), 2,
			Sample{TMs: 2000}},
		{"a wait shorter than the step is never sampled", okRec(1100*ms, 0, 500*ms, 700*ms), 1,
			Sample{TMs: 1000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Config{Phases: []Phase{{Name: "run", End: 5 * s}}})
			a.Add(tc.rec)
			if got := a.Result().Timeline[tc.at]; got != tc.want {
				t.Errorf("sample %d = %+v, want %+v", tc.at, got, tc.want)
			}
		})
	}
	// A request that never ends is clipped at the timeline bound, not looped over forever.
	a := mustNew(t, Config{Phases: []Phase{{Name: "run", End: 5 * s}}, SampleEvery: time.Millisecond})
	r := okRec(1*s, 0, 1*s, 2*s)
	r.FirstTokenNs, r.DoneNs = record.None, int64(100*time.Hour)
	a.Add(r)
	want := (5*s + timelineTail) / time.Millisecond // samples 0 … 10m5s
	if res := a.Result(); res.Anomalies.TimelineClipped != 1 || len(res.Timeline) != int(want)+1 {
		t.Errorf("clipped = %d, samples = %d, want 1 and %d", res.Anomalies.TimelineClipped, len(res.Timeline), want+1)
	}
	if last := a.Result().Timeline[want]; last.InFlight != 1 || last.Waiting != 1 || last.OldestWaitingAgeMs != 604000 {
		t.Errorf("last sample %+v, want the clipped request still waiting and in flight", last)
	}
}
