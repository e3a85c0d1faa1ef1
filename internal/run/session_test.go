package run

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

func sessionOptions(turns string, think time.Duration) Options {
	o := quietOptions()
	o.Sessions = true
	o.SessionTurns, _ = workload.ParseLength(turns)
	o.ThinkTime = workload.FixedThink(think)
	return o
}

// A sessions run against the simulator over (in-memory) HTTP: every
// session's turns are answered in order, each resends the conversation, so
// the server's prompt tokens grow turn by turn; the first turn keeps its
// arrival's seq and every record's seq is unique.
func TestExecuteSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, sessionOptions("3", time.Second), nil)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(1, 30*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		bySession := map[int64][]record.Record{}
		seqs := map[int64]bool{}
		for _, r := range recordsOf(t, res) {
			if seqs[r.Seq] {
				t.Fatalf("seq %d twice", r.Seq)
			}
			seqs[r.Seq] = true
			if r.Outcome != record.OK || r.Session == 0 || r.SessionTurns != 3 {
				t.Fatalf("record %+v", r)
			}
			bySession[r.Session] = append(bySession[r.Session], r)
		}
		if len(bySession) != 30 {
			t.Fatalf("%d sessions, want one per arrival (30)", len(bySession))
		}
		complete := 0
		for s, rs := range bySession {
			for i := range rs {
				r := &rs[i]
				if r.Turn != i+1 {
					t.Fatalf("session %d: turns out of order", s)
				}
				if r.Turn == 1 && r.Seq != s-1 {
					t.Fatalf("session %d: first turn seq %d, want its arrival's %d", s, r.Seq, s-1)
				}
				if i > 0 {
					prev := &rs[i-1]
					if r.PromptTokens <= prev.PromptTokens+prev.OutputTokens {
						t.Fatalf("session %d turn %d: %d prompt tokens, not above the turn before's prompt and answer (%d + %d)", s, r.Turn, r.PromptTokens, prev.PromptTokens, prev.OutputTokens)
					}
					if r.ScheduledNs < prev.DoneNs+int64(time.Second) || r.PrefixTokens <= prev.PrefixTokens {
						t.Fatalf("session %d turn %d ready at %d, the turn before done at %d", s, r.Turn, r.ScheduledNs, prev.DoneNs)
					}
				}
			}
			if len(rs) == 3 {
				complete++
			}
		}
		if complete < 20 {
			t.Fatalf("only %d of 30 sessions ran their 3 turns", complete)
		}
		if res.Prompt == nil || res.Prompt.Intended.Samples != 30 {
			t.Fatalf("prompt sizing compares %+v, want the 30 first turns only", res.Prompt)
		}
		ss := res.Analysis.Sessions
		if ss == nil || ss.Sessions != 30 || len(ss.Turns) != 3 || ss.Good+ss.Bad+ss.Unfinished != 30 {
			t.Fatalf("session analysis %+v", ss)
		}
		for k := 1; k < 3; k++ {
			if ss.Turns[k].PromptTokensP50 <= ss.Turns[k-1].PromptTokensP50 {
				t.Fatalf("median server prompt tokens of turn %d (%d) not above turn %d's (%d)", k+1, ss.Turns[k].PromptTokensP50, k, ss.Turns[k-1].PromptTokensP50)
			}
		}
	})
}

// seenStop remembers which records each check had been given.
type seenStop struct {
	stopAt
	given map[int64]bool
	seen  []map[int64]bool
}

func (s *seenStop) Add(r *record.Record) {
	if s.given == nil {
		s.given = map[int64]bool{}
	}
	s.given[r.Seq] = true
	s.stopAt.Add(r)
}

func (s *seenStop) Stop(horizon time.Duration) string {
	s.seen = append(s.seen, maps.Clone(s.given))
	return s.stopAt.Stop(horizon)
}

// The Stopper of a sessions run sees every record before its horizon, all
// finished, although later turns are scheduled long after their arrival.
func TestExecuteSessionsEarlyStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := sessionOptions("5", time.Second)
		o.OutputTokens = workload.FixedLength(400) // answers take seconds: turns are in flight at every check
		env := bubbleEnv(t, o, nil)
		stop := &seenStop{stopAt: stopAt{from: 5 * time.Second}}
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(2, time.Minute), Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		if res.StoppedAt == 0 || len(stop.asked) != 3 {
			t.Fatalf("stopped at %s after %d checks", res.StoppedAt, len(stop.asked))
		}
		for k, h := range stop.asked {
			for _, r := range recordsOf(t, res) {
				if time.Duration(r.ScheduledNs) < h && !stop.seen[k][r.Seq] {
					t.Fatalf("check %d (horizon %s) missed turn %d of session %d, scheduled at %s", k, h, r.Turn, r.Session, time.Duration(r.ScheduledNs))
				}
			}
		}
		for _, r := range recordsOf(t, res) {
			if time.Duration(r.ScheduledNs) > res.StoppedAt {
				t.Fatalf("a turn ready at %s, after the stop at %s", time.Duration(r.ScheduledNs), res.StoppedAt)
			}
		}
	})
}

// In virtual time (--simulate) sessions run through the engine model with
// the same rules, and the same analysis follows.
func TestExecuteSessionsVirtual(t *testing.T) {
	o := sessionOptions("3", time.Second)
	o.Quiet = true
	env, err := PrepareWith(context.Background(), o, true, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(1, 30*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ss := res.Analysis.Sessions
	if ss == nil || ss.Sessions != 30 || len(ss.Turns) != 3 {
		t.Fatalf("session analysis %+v", ss)
	}
	for k := 1; k < 3; k++ {
		if ss.Turns[k].PromptTokensP50 <= ss.Turns[k-1].PromptTokensP50 {
			t.Fatalf("median engine prompt tokens of turn %d (%d) not above turn %d's (%d)", k+1, ss.Turns[k].PromptTokensP50, k, ss.Turns[k-1].PromptTokensP50)
		}
	}
}

func TestSessionsRefused(t *testing.T) {
	o := sessionOptions("3", time.Second)
	var fe *field.Error
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, o, nil)
		cl := schedule.ClosedLoop{Phase: "c4", Users: 4, Duration: 10 * time.Second}
		_, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: cl.Plan(), Closed: &cl})
		if !errors.As(err, &fe) || fe.Field != "sessions" {
			t.Fatalf("closed loop with sessions: %v", err)
		}
	})
	o.Sessions, o.Fanout = false, 2
	if err := o.Validate(); err == nil {
		t.Fatal("--fanout without --sessions accepted")
	}
	// 0 turns or 0-token later messages mean nothing: refused, not
	// replaced by the defaults; without --sessions they are not looked at.
	for _, key := range []string{"session_turns", "turn_tokens"} {
		o := sessionOptions("3", time.Second)
		if key == "session_turns" {
			o.SessionTurns, _ = workload.ParseLength("0")
		} else {
			o.TurnTokens, _ = workload.ParseLength("0")
		}
		err := o.Validate()
		if fe, ok := field.As(err); !ok || fe[0].Field != key || !strings.Contains(fe[0].Message, "must be ≥ 1") {
			t.Fatalf("%s 0: %v", key, err)
		}
		o.Sessions = false
		if err := o.Validate(); err != nil {
			t.Fatalf("%s 0 without --sessions: %v", key, err)
		}
	}
}

// In sessions mode an arrival counts as finished only when its session has
// ended and every record it produced has arrived (the span join may hold
// some), so the horizon never passes a turn still to come.
func TestCollectorSessionHorizon(t *testing.T) {
	arr := []schedule.Arrival{{Seq: 0, At: 0}, {Seq: 1, At: time.Second}, {Seq: 2, At: 2 * time.Second}}
	stop := &countStop{}
	c := newCollector(arr, true, stop)
	turn := func(session int64, seq int64, at time.Duration) *record.Record {
		r := record.New("", seq, "p", int64(at))
		r.Session, r.DoneNs = session, int64(at)+1
		return &r
	}
	horizon := func() time.Duration { c.mu.Lock(); defer c.mu.Unlock(); return c.horizonLocked() }
	c.add(turn(1, 0, 0))
	c.add(turn(2, 1, time.Second))
	if h := horizon(); h != 0 {
		t.Fatalf("horizon %s before session 1 ended, want 0", h)
	}
	c.sessionEnded(1, 1) // session 2: one record, all in
	c.sessionEnded(0, 2) // session 1: two records, one still held
	if h := horizon(); h != 0 {
		t.Fatalf("horizon %s with a record of session 1 still to come, want 0", h)
	}
	c.add(turn(1, 3, 1500*time.Millisecond))
	if h := horizon(); h != 2*time.Second {
		t.Fatalf("horizon %s, want the third arrival's 2s", h)
	}
	if stop.n != 3 {
		t.Fatalf("the Stopper was given %d records before the horizon, want 3", stop.n)
	}
}

// With a session drain the plan gains a phase without arrivals in which
// sessions already started finish their turns; without it, no turn is
// sent after the plan's end.
func TestExecuteSessionDrain(t *testing.T) {
	for _, drain := range []time.Duration{0, 40 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			o := sessionOptions("4", 2*time.Second)
			o.SessionDrain = drain
			env := bubbleEnv(t, o, nil)
			res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(1, 10*time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			inDrain := 0
			for _, r := range recordsOf(t, res) {
				switch {
				case r.Phase == schedule.PhaseDrain && r.Turn > 1:
					inDrain++
				case r.Phase != "main":
					t.Fatalf("record in phase %q", r.Phase)
				}
			}
			ss := res.Analysis.Sessions
			switch {
			case drain == 0 && (inDrain != 0 || len(res.Plan.Phases) != 1 || ss.Unfinished == 0):
				t.Fatalf("no drain: %d turns in a drain, %d phases, %d unfinished sessions", inDrain, len(res.Plan.Phases), ss.Unfinished)
			case drain > 0 && (inDrain == 0 || len(res.Plan.Phases) != 2 || ss.Unfinished != 0 || ss.Good != 10):
				t.Fatalf("drain: %d turns in it, %d phases, sessions %+v", inDrain, len(res.Plan.Phases), ss)
			}
		})
	}
}

// Sessions with a shared prefix and the engine's prefix cache on: over
// HTTP and in virtual time alike, turn 1 is labelled with the shared
// prefix and later turns find their history in the cache; the two paths
// agree on the cached tokens of each turn.
func TestSessionsPrefixCache(t *testing.T) {
	o := sessionOptions("3", time.Second)
	o.SharedPrefix = 256
	o.Sim.PrefixCacheTokens = 200_000
	plan := onePhase(1, 20*time.Second)
	// meanCached is each turn's mean cached tokens; every record's labels
	// are checked on the way.
	meanCached := func(res *Result) [3]int {
		var sum, n [3]int
		for _, r := range recordsOf(t, res) {
			if r.Outcome != record.OK || r.Branch != 0 {
				continue
			}
			if r.Turn == 1 && r.PrefixTokens != 256 {
				t.Fatalf("turn 1 record %d: prefix_tokens %d, want the shared 256", r.Seq, r.PrefixTokens)
			}
			if r.Turn > 1 && r.PrefixTokens <= 256 {
				t.Fatalf("turn %d record %d: prefix_tokens %d, want the history (above 256)", r.Turn, r.Seq, r.PrefixTokens)
			}
			sum[r.Turn-1] += r.CachedTokens
			n[r.Turn-1]++
		}
		var out [3]int
		for k := range out {
			if n[k] == 0 {
				t.Fatalf("no successful turn %d", k+1)
			}
			out[k] = sum[k] / n[k]
		}
		return out
	}
	var http [3]int
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, o, nil)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		http = meanCached(res)
		if !strings.Contains(res.Manifest.CacheState, "first turns share the 256-token prefix") {
			t.Fatalf("cache_state %q", res.Manifest.CacheState)
		}
	})
	o.Quiet = true
	env, err := PrepareWith(context.Background(), o, true, Setup{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	virt := meanCached(res)
	t.Logf("mean cached tokens by turn: HTTP %v, virtual %v", http, virt)
	for k := range virt {
		if virt[k] == 0 || virt[k] < http[k]*3/4 || virt[k] > http[k]*4/3 {
			t.Errorf("turn %d: %d cached tokens in virtual time, %d over HTTP", k+1, virt[k], http[k])
		}
	}
	if virt[1] <= virt[0] {
		t.Errorf("turn 2 caches %d tokens, turn 1 %d: the history is not found", virt[1], virt[0])
	}
}
