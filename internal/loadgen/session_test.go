package loadgen

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// fakeConv is a session of turns turns, each with fanout sub-requests,
// think seconds apart; it remembers what it was told.
type fakeConv struct {
	session  int64
	turns    int
	fanout   int
	think    time.Duration
	answered []int
}

func (c *fakeConv) Turns() int { return c.turns }
func (c *fakeConv) Turn(turn int) []workload.Request {
	out := make([]workload.Request, 1+c.fanout)
	for b := range out {
		out[b] = workload.Request{MaxTokens: 8, Session: c.session, Turn: turn, Branch: b, SessionTurns: c.turns, PrefixTokens: 100 * (turn - 1)}
	}
	return out
}
func (c *fakeConv) Answered(turn, out int)  { c.answered = append(c.answered, turn) }
func (c *fakeConv) Think(int) time.Duration { return c.think }

// sessTarget answers after service(req), failing the requests fail picks.
type sessTarget struct {
	origin  time.Time
	service func(*workload.Request) time.Duration
	fail    func(*workload.Request) bool
}

func (f *sessTarget) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	rec.SentNs = int64(time.Since(f.origin))
	select {
	case <-time.After(f.service(req)):
		rec.FirstTokenNs = int64(time.Since(f.origin))
		rec.DoneNs = rec.FirstTokenNs
		rec.Status, rec.Outcome, rec.OutputTokens = 200, record.OK, 10
		if f.fail != nil && f.fail(req) {
			rec.Status, rec.Outcome = 500, record.HTTPError
		}
	case <-ctx.Done():
		rec.DoneNs = int64(time.Since(f.origin))
		rec.Outcome = record.Cancelled
	}
}

type sessSink struct {
	mu    sync.Mutex
	recs  []record.Record
	ended map[int64]int
}

func (s *sessSink) sink(r *record.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, *r)
}

func (s *sessSink) end(seq int64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = map[int64]int{}
	}
	s.ended[seq] = n
}

// bySession groups records by session, each in turn and branch order.
func (s *sessSink) bySession() map[int64][]record.Record {
	out := map[int64][]record.Record{}
	for _, r := range s.recs {
		out[r.Session] = append(out[r.Session], r)
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].Turn != rs[j].Turn {
				return rs[i].Turn < rs[j].Turn
			}
			return rs[i].Branch < rs[j].Branch
		})
	}
	return out
}

func plan(end time.Duration) SessionPlan {
	return SessionPlan{Phases: []schedule.PhaseBounds{{Name: "a", Start: 0, End: end / 2}, {Name: "b", Start: end / 2, End: end}}, End: end}
}

func starter(turns, fanout int, think time.Duration) (SessionFunc, *sync.Map) {
	var convs sync.Map
	return func(a *schedule.Arrival) Conversation {
		c := &fakeConv{session: a.Seq + 1, turns: turns, fanout: fanout, think: think}
		convs.Store(a.Seq, c)
		return c
	}, &convs
}

// Sessions start on schedule whatever the target does, and each later turn
// is ready when the turn before was answered plus the think time.
func TestSessionsTurnTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var out sessSink
		start, convs := starter(3, 0, 2*time.Second)
		tgt := &sessTarget{origin: origin, service: func(*workload.Request) time.Duration { return 5 * time.Second }}
		s := NewSessions(Config{RunID: "t", Profile: "chat"}, origin, tgt, start, out.sink)
		p := plan(time.Minute)
		p.Ended = out.end
		arr := constant(10, 100*time.Millisecond) // the target takes 5 s: a closed loop would send one
		if err := s.Run(context.Background(), arr, p); err != nil {
			t.Fatal(err)
		}
		if len(out.recs) != 30 {
			t.Fatalf("%d records, want 10 sessions × 3 turns", len(out.recs))
		}
		seqs := map[int64]bool{}
		for sess, rs := range out.bySession() {
			a := arr[sess-1]
			for i, r := range rs {
				if seqs[r.Seq] {
					t.Fatalf("seq %d twice", r.Seq)
				}
				seqs[r.Seq] = true
				if r.Turn != i+1 || r.SessionTurns != 3 || r.Outcome != record.OK || r.Lag() != 0 || r.ID != "t-"+itoa(r.Seq) || r.Profile != "chat" {
					t.Fatalf("session %d record %d: %+v", sess, i, r)
				}
				want := a.At + time.Duration(i)*(5*time.Second+2*time.Second)
				if r.ScheduledNs != int64(want) {
					t.Fatalf("session %d turn %d ready at %s, want %s (previous answer + think)", sess, r.Turn, time.Duration(r.ScheduledNs), want)
				}
				switch {
				case r.Turn == 1 && (r.Seq != a.Seq || r.Phase != a.Phase):
					t.Fatalf("turn 1 of session %d: seq %d phase %q, want its arrival's %d %q", sess, r.Seq, r.Phase, a.Seq, a.Phase)
				case r.Turn > 1 && r.Seq < 10:
					t.Fatalf("turn %d of session %d has seq %d among the arrivals'", r.Turn, sess, r.Seq)
				case r.Turn > 1 && r.Phase != "a":
					t.Fatalf("turn %d phase %q, want a", r.Turn, r.Phase)
				}
			}
			if out.ended[a.Seq] != 3 {
				t.Fatalf("session %d ended with %d records, want 3", sess, out.ended[a.Seq])
			}
			c, _ := convs.Load(a.Seq)
			if got := c.(*fakeConv).answered; len(got) != 3 {
				t.Fatalf("session %d answered %v", sess, got)
			}
		}
		if s.Counters.Offered.Load() != 30 || s.Counters.Completed.Load() != 30 || s.Counters.InFlight.Load() != 0 {
			t.Fatalf("counters %+v", &s.Counters)
		}
	})
}

// A turn that would become ready at or after the plan's end is not sent:
// the session ends there, with fewer turns than planned.
func TestSessionsCutAtPlanEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var out sessSink
		start, _ := starter(10, 0, time.Second)
		tgt := &sessTarget{origin: origin, service: func(*workload.Request) time.Duration { return time.Second }}
		s := NewSessions(Config{}, origin, tgt, start, out.sink)
		p := plan(9 * time.Second)
		p.Ended = out.end
		// sessions at 0 s and 4 s; turns every 2 s: 0,2,4,6,8 and 4,6,8
		if err := s.Run(context.Background(), []schedule.Arrival{{Seq: 0, Phase: "a"}, {Seq: 1, At: 4 * time.Second, Phase: "a"}}, p); err != nil {
			t.Fatal(err)
		}
		bs := out.bySession()
		if len(bs[1]) != 5 || len(bs[2]) != 3 || out.ended[0] != 5 || out.ended[1] != 3 {
			t.Fatalf("turns %d and %d, ended %v; want 5 and 3", len(bs[1]), len(bs[2]), out.ended)
		}
		for _, r := range out.recs {
			if r.ScheduledNs >= int64(9*time.Second) || r.SessionTurns != 10 {
				t.Fatalf("turn ready at %s (plan ends at 9s), planned %d", time.Duration(r.ScheduledNs), r.SessionTurns)
			}
			if want := "a"; r.ScheduledNs >= int64(4500*time.Millisecond) && r.Phase != "b" || r.ScheduledNs < int64(4500*time.Millisecond) && r.Phase != want {
				t.Fatalf("turn at %s labelled %q", time.Duration(r.ScheduledNs), r.Phase)
			}
		}
	})
}

// A fan-out turn sends its sub-requests at once; the next turn waits for
// the slowest of them. A failed request ends its session.
func TestSessionsFanoutAndFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var out sessSink
		start, _ := starter(3, 2, 0)
		tgt := &sessTarget{origin: origin,
			service: func(r *workload.Request) time.Duration { return time.Duration(r.Branch+1) * time.Second },
			fail:    func(r *workload.Request) bool { return r.Session == 2 && r.Turn == 2 && r.Branch == 1 },
		}
		s := NewSessions(Config{}, origin, tgt, start, out.sink)
		if err := s.Run(context.Background(), constant(2, 0), plan(time.Hour)); err != nil {
			t.Fatal(err)
		}
		bs := out.bySession()
		if len(bs[1]) != 9 || len(bs[2]) != 6 {
			t.Fatalf("session 1: %d records (want 3 turns × 3), session 2: %d (want 2 turns × 3, ended by a failure)", len(bs[1]), len(bs[2]))
		}
		for _, r := range bs[1] {
			if want := int64(r.Turn-1) * int64(3*time.Second); r.ScheduledNs != want || r.Lag() != 0 {
				t.Fatalf("turn %d branch %d ready at %s, want %s (after the slowest branch)", r.Turn, r.Branch, time.Duration(r.ScheduledNs), time.Duration(want))
			}
		}
	})
}

// At the in-flight cap a turn is a generator_drop with its reason, never
// sent late, and its session ends.
func TestSessionsDropAtCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var out sessSink
		start, _ := starter(2, 0, 0)
		tgt := &sessTarget{origin: origin, service: func(r *workload.Request) time.Duration { return 10 * time.Second }}
		s := NewSessions(Config{MaxInFlight: 3}, origin, tgt, start, out.sink)
		if err := s.Run(context.Background(), constant(5, time.Second), plan(time.Hour)); err != nil {
			t.Fatal(err)
		}
		var drops, ok int
		for _, r := range out.recs {
			switch r.Outcome {
			case record.GeneratorDrop:
				drops++
				if r.Sent() || r.Error != "in-flight cap 3 reached" || r.Turn != 1 {
					t.Fatalf("drop %+v", r)
				}
			case record.OK:
				ok++
				if r.Lag() != 0 {
					t.Fatalf("sent late: %+v", r)
				}
			}
		}
		// sessions 1–3 fill the cap until 10 s; 4 and 5 (at 3 s, 4 s) are dropped and end
		if drops != 2 || ok != 6 {
			t.Fatalf("drops %d ok %d, want 2 and 6", drops, ok)
		}
	})
}

// Ctrl-C: requests in flight end as cancelled, waiting sessions send
// nothing more, every session ends, and Run returns the context's error.
func TestSessionsInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var out sessSink
		start, _ := starter(5, 0, 3*time.Second)
		tgt := &sessTarget{origin: origin, service: func(*workload.Request) time.Duration { return 2 * time.Second }}
		s := NewSessions(Config{}, origin, tgt, start, out.sink)
		p := plan(time.Hour)
		p.Ended = out.end
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		defer cancel()
		// session 1: turn 1 0–2 s, turn 2 5–7 s (cancelled at 6 s);
		// session 2 at 3 s: turn 1 3–5 s, thinking at 6 s
		err := s.Run(ctx, []schedule.Arrival{{Seq: 0, Phase: "a"}, {Seq: 1, At: 3 * time.Second, Phase: "a"}, {Seq: 2, At: 7 * time.Second, Phase: "a"}}, p)
		if err != context.DeadlineExceeded {
			t.Fatalf("err %v", err)
		}
		bs := out.bySession()
		if len(bs) != 2 || len(bs[1]) != 2 || bs[1][1].Outcome != record.Cancelled || len(bs[2]) != 1 || bs[2][0].Outcome != record.OK {
			t.Fatalf("records %+v", bs)
		}
		if out.ended[0] != 2 || out.ended[1] != 1 || len(out.ended) != 2 {
			t.Fatalf("ended %v", out.ended)
		}
	})
}

// Stop ends the run like the plan's end: nothing starts or is sent after it.
func TestSessionsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var out sessSink
		start, _ := starter(5, 0, time.Second)
		tgt := &sessTarget{origin: origin, service: func(*workload.Request) time.Duration { return time.Second }}
		s := NewSessions(Config{}, origin, tgt, start, out.sink)
		time.AfterFunc(2500*time.Millisecond, s.Stop)
		if err := s.Run(context.Background(), constant(10, time.Second), plan(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for _, r := range out.recs {
			if r.ScheduledNs > int64(2500*time.Millisecond) {
				t.Fatalf("sent after the stop: %+v", r)
			}
		}
		// sessions at 0, 1, 2 s; session 1's turn 2 at 2 s
		if len(out.recs) != 4 {
			t.Fatalf("%d records, want 4", len(out.recs))
		}
	})
}

// Shards of one sessions run (--shard I/N) send every seq once between
// them: a later turn or sub-request takes a seq above the whole schedule's
// arrivals that names its shard (seq mod N), like its session's arrival.
// One process numbers them 10, 11, … straight on from its arrivals.
func TestSessionsShardSeqs(t *testing.T) {
	for _, n := range []int{1, 3} {
		synctest.Test(t, func(t *testing.T) {
			all := constant(10, time.Second)
			seqs := map[int64]int{} // seq → shard
			var later []int64
			for i := range n {
				origin := time.Now()
				var out sessSink
				start, _ := starter(3, 1, time.Second)
				tgt := &sessTarget{origin: origin, service: func(*workload.Request) time.Duration { return time.Second }}
				p := plan(time.Hour)
				p.Shard, p.Shards = i, n
				if err := NewSessions(Config{}, origin, tgt, start, out.sink).Run(context.Background(), schedule.Shard(all, i, n), p); err != nil {
					t.Fatal(err)
				}
				if len(out.recs) != len(schedule.Shard(all, i, n))*6 {
					t.Fatalf("shard %d/%d: %d records, want 6 per session", i, n, len(out.recs))
				}
				for _, r := range out.recs {
					if j, dup := seqs[r.Seq]; dup {
						t.Fatalf("seq %d sent by shard %d and shard %d of %d", r.Seq, j, i, n)
					}
					seqs[r.Seq] = i
					if got := schedule.ShardOf(r.Seq, n); got != i || schedule.ShardOf(r.Session-1, n) != i {
						t.Fatalf("shard %d/%d sent seq %d (session %d), which names shard %d", i, n, r.Seq, r.Session, got)
					}
					if r.Turn > 1 || r.Branch > 0 {
						if r.Seq < 10 {
							t.Fatalf("later request seq %d among the arrivals'", r.Seq)
						}
						later = append(later, r.Seq)
					}
				}
			}
			if n == 1 {
				slices.Sort(later)
				for k, s := range later {
					if s != int64(10+k) {
						t.Fatalf("one process: later seqs %v, want 10, 11, … (as always)", later)
					}
				}
			}
		})
	}
}
