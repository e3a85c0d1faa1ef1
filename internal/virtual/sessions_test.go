package virtual

import (
	"context"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

func testSessions(t *testing.T, turns, fanout int, think time.Duration) *workload.Sessions {
	t.Helper()
	p := workload.Profile{Name: "fixed", Prompt: workload.Fixed(200), Output: workload.Fixed(20), MaxTokens: 20}
	s, err := workload.NewSessions(workload.Config{Profile: p, Seed: 1, IgnoreEOS: true},
		workload.SessionConfig{Turns: workload.FixedLength(turns), Think: workload.FixedThink(think), TurnTokens: workload.FixedLength(50), Fanout: fanout})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bySession(recs []record.Record) map[int64][]record.Record {
	out := map[int64][]record.Record{}
	for _, r := range recs {
		out[r.Session] = append(out[r.Session], r)
	}
	return out
}

// Sessions in virtual time keep the live driver's rules: a later turn is
// ready at the previous turn's end (its slowest request) + think time, its
// engine prompt carries the conversation so far, the first turn keeps its
// arrival's seq, and no turn is sent at or after the end.
func TestSessions(t *testing.T) {
	cfg := baseConfig()
	cfg.CountPrompt = func(texts ...string) int { return cfg.Sim.PromptTokens(true, texts...) }
	arr := constant(t, "main", 2, 10*time.Second)
	phases := []schedule.PhaseBounds{{Name: "main", Start: 0, End: 10 * time.Second}, {Name: "drain", Start: 10 * time.Second, End: time.Minute}}
	out, err := Sessions(context.Background(), cfg, testSessions(t, 3, 1, time.Second), arr, phases, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 20*3*2 {
		t.Fatalf("%d records, want 20 sessions × 3 turns × (turn + 1 branch)", len(out.Records))
	}
	seqs := map[int64]bool{}
	for s, rs := range bySession(out.Records) {
		byTurn := map[int][]record.Record{}
		for _, r := range rs {
			if seqs[r.Seq] {
				t.Fatalf("seq %d twice", r.Seq)
			}
			seqs[r.Seq] = true
			if r.Outcome != record.OK || r.SessionTurns != 3 {
				t.Fatalf("record %+v", r)
			}
			byTurn[r.Turn] = append(byTurn[r.Turn], r)
		}
		for turn := 1; turn <= 3; turn++ {
			rs := byTurn[turn]
			if len(rs) != 2 {
				t.Fatalf("session %d turn %d: %d requests, want 2", s, turn, len(rs))
			}
			for _, r := range rs {
				if turn == 1 && r.Branch == 0 && r.Seq != s-1 {
					t.Fatalf("session %d: first turn seq %d", s, r.Seq)
				}
				if turn == 1 {
					continue
				}
				prev := byTurn[turn-1]
				done := max(prev[0].DoneNs, prev[1].DoneNs)
				if r.ScheduledNs != done+int64(time.Second) || r.SentNs != r.ScheduledNs {
					t.Fatalf("session %d turn %d ready at %d, want %d (slowest previous request + 1 s)", s, turn, r.ScheduledNs, done+int64(time.Second))
				}
				if r.PromptTokens <= prev[0].PromptTokens+prev[0].OutputTokens {
					t.Fatalf("session %d turn %d: %d prompt tokens, the turn before had %d + %d", s, turn, r.PromptTokens, prev[0].PromptTokens, prev[0].OutputTokens)
				}
				if want := "main"; r.ScheduledNs >= int64(10*time.Second) {
					want = "drain"
					if r.Phase != want {
						t.Fatalf("turn at %d labelled %q", r.ScheduledNs, r.Phase)
					}
				}
			}
		}
	}
	// The same with the end at 3 s: later turns are cut, first turns not.
	out, err = Sessions(context.Background(), cfg, testSessions(t, 3, 0, time.Second), arr[:6], phases[:1], 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Records {
		if r.ScheduledNs >= int64(3*time.Second) {
			t.Fatalf("a turn ready at %s, after the end", time.Duration(r.ScheduledNs))
		}
	}
	if n := len(out.Records); n < 6 || n >= 18 {
		t.Fatalf("%d records, want the 6 first turns and fewer than all", n)
	}
}

// stopSeen stops at its third question and remembers what it saw.
type stopSeen struct {
	asked    []time.Duration
	horizons []time.Duration
	seen     []map[int64]bool
	recs     []record.Record // given so far
}

func (s *stopSeen) CheckFrom() time.Duration { return 3 * time.Second }
func (s *stopSeen) Add(r *record.Record)     { s.recs = append(s.recs, *r) }
func (s *stopSeen) Stop(horizon time.Duration) string {
	m := map[int64]bool{}
	for _, r := range s.recs {
		if time.Duration(r.ScheduledNs) >= horizon || r.DoneNs == record.None {
			panic("the stopper saw a record past the horizon or unfinished")
		}
		m[r.Seq] = true
	}
	s.seen, s.horizons = append(s.seen, m), append(s.horizons, horizon)
	s.asked = append(s.asked, horizon)
	if len(s.asked) == 3 {
		return "enough"
	}
	return ""
}

// The Stopper is asked once a virtual second, sees every record before its
// horizon, and ends the run: nothing is sent after the stop.
func TestSessionsStop(t *testing.T) {
	cfg := baseConfig()
	arr := constant(t, "main", 2, time.Minute)
	stop := &stopSeen{}
	out, err := Sessions(context.Background(), cfg, testSessions(t, 4, 0, 2*time.Second), arr, []schedule.PhaseBounds{{Name: "main", End: time.Minute}}, time.Minute, stop)
	if err != nil {
		t.Fatal(err)
	}
	if out.StoppedAt != 5*time.Second || out.StopWhy != "enough" {
		t.Fatalf("stopped at %s (%q), want 5s", out.StoppedAt, out.StopWhy)
	}
	for _, r := range out.Records {
		if time.Duration(r.ScheduledNs) > out.StoppedAt {
			t.Fatalf("sent at %s, after the stop", time.Duration(r.ScheduledNs))
		}
	}
	for k, h := range stop.horizons {
		for _, r := range out.Records {
			if time.Duration(r.ScheduledNs) < h && !stop.seen[k][r.Seq] {
				t.Fatalf("check %d (horizon %s) missed seq %d (turn %d)", k, h, r.Seq, r.Turn)
			}
		}
	}
}
