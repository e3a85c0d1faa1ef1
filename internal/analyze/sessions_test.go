package analyze

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// turnRec labels r as turn of session (planned turns), with prompt tokens
// and the intended shared prefix.
func turnRec(r *record.Record, session int64, turn, planned, prompt, prefix int) record.Record {
	r.Session, r.Turn, r.SessionTurns, r.PromptTokens, r.PrefixTokens, r.UsageFromServer = session, turn, planned, prompt, prefix, true
	return *r
}

// Worked by hand: four sessions of two planned turns, the first in the
// warmup (excluded), one with a turn past its deadline, one cut after its
// first turn, one cancelled by Ctrl-C.
func TestSessionsByHand(t *testing.T) {
	cfg := Config{Phases: []Phase{{Name: "warmup", Start: 0, End: 10 * s, Excluded: true}, {Name: "main", Start: 10 * s, End: 100 * s}}, Deadlines: DefaultDeadlines, Timeout: 60 * s}
	cancelled := failRec(50*s, record.Cancelled)
	recs := []record.Record{
		// session 1 started in the warmup: not counted, not even its
		// second turn in the main phase
		turnRec(okRec(1*s, 0, 100*ms, 1*s), 1, 1, 2, 500, 0),
		turnRec(okRec(12*s, 0, 100*ms, 1*s), 1, 2, 2, 700, 600),
		// session 2: good (turn 1 at 100 ms, turn 2 at 300 ms from its ready time)
		turnRec(okRec(20*s, 0, 100*ms, 1*s), 2, 1, 2, 400, 0),
		turnRec(okRec(25*s, 0, 300*ms, 2*s), 2, 2, 2, 900, 500),
		// session 3: its second turn is 3 s late for its first token: bad
		turnRec(okRec(30*s, 0, 200*ms, 1*s), 3, 1, 2, 600, 0),
		turnRec(okRec(35*s, 0, 3*s, 4*s), 3, 2, 2, 1100, 700),
		// session 4: only its first turn ran (the plan ended): unfinished
		turnRec(okRec(40*s, 0, 400*ms, 1*s), 4, 1, 2, 800, 0),
		// session 5: its first turn cancelled in flight (Ctrl-C): unfinished
		turnRec(cancelled, 5, 1, 2, 0, 0),
	}
	got := Sessions(cfg, recs)
	if got == nil {
		t.Fatal("no session result")
	}
	if got.Sessions != 4 || got.Good != 1 || got.Bad != 1 || got.Unfinished != 2 || got.GoodputRatio != 0.5 {
		t.Fatalf("sessions %d good %d bad %d unfinished %d ratio %g; want 4, 1, 1, 2, 0.5", got.Sessions, got.Good, got.Bad, got.Unfinished, got.GoodputRatio)
	}
	if len(got.Turns) != 2 {
		t.Fatalf("%d turn rows, want 2", len(got.Turns))
	}
	t1, t2 := got.Turns[0], got.Turns[1]
	// turn 1: sessions 2, 3, 4 ok and good, 5 cancelled; prompts 400, 600, 800
	if t1.Turn != 1 || t1.Requests != 4 || t1.OK != 3 || t1.Good != 3 || t1.GoodputRatio != 0.75 || t1.PromptTokensP50 != 600 || t1.PrefixTokensP50 != 0 {
		t.Fatalf("turn 1: %+v", t1)
	}
	if !hdrNear(t1.TTFTSend.P50Ms, 200) || !t1.TTFTSend.Interrupted {
		t.Fatalf("turn 1 TTFT p50 %g (want 200), interrupted %v (one cancelled in flight)", t1.TTFTSend.P50Ms, t1.TTFTSend.Interrupted)
	}
	// turn 2: sessions 2, 3; prompts 900, 1100 (nearest-rank median: 900)
	if t2.Requests != 2 || t2.OK != 2 || t2.Good != 1 || t2.GoodputRatio != 0.5 || t2.PromptTokensP50 != 900 || t2.PrefixTokensP50 != 500 {
		t.Fatalf("turn 2: %+v", t2)
	}
	if !hdrNear(t2.TTFTSchedule.P95Ms, 3000) || t2.TTFTSchedule.Count != 2 {
		t.Fatalf("turn 2 TTFT from schedule p95 %g over %d, want 3000 over 2", t2.TTFTSchedule.P95Ms, t2.TTFTSchedule.Count)
	}
}

// Turns from maxTurnRows on share the last row; runs without sessions get
// no session result at all.
func TestSessionsRowsAndAbsence(t *testing.T) {
	cfg := Config{Phases: []Phase{{Name: "main", Start: 0, End: time.Hour}}, Deadlines: DefaultDeadlines, Timeout: 60 * s}
	var recs []record.Record
	for turn := 1; turn <= maxTurnRows+5; turn++ {
		recs = append(recs, turnRec(okRec(time.Duration(turn)*s, 0, 100*ms, time.Second), 1, turn, maxTurnRows+5, 100*turn, 0))
	}
	got := Sessions(cfg, recs)
	if len(got.Turns) != maxTurnRows || !got.Turns[maxTurnRows-1].AndLater || got.Turns[maxTurnRows-1].Requests != 6 || got.Good != 1 {
		t.Fatalf("rows %d, last %+v, good %d", len(got.Turns), got.Turns[len(got.Turns)-1], got.Good)
	}
	if Sessions(cfg, []record.Record{*okRec(s, 0, 100*ms, s)}) != nil {
		t.Fatal("a session result for a run without sessions")
	}
}

// A turn whose every request was cancelled in flight (Ctrl-C) has no TTFT
// at all: its percentiles are unbounded, shown "n/a (interrupted)", not
// "> 0".
func TestSessionsInterruptedTurn(t *testing.T) {
	cfg := Config{Phases: []Phase{{Name: "main", Start: 0, End: time.Hour}}, Deadlines: DefaultDeadlines, Timeout: 60 * s}
	recs := []record.Record{
		turnRec(okRec(1*s, 0, 100*ms, 1*s), 1, 1, 2, 500, 0),
		turnRec(failRec(5*s, record.Cancelled), 1, 2, 2, 0, 600),
	}
	got := Sessions(cfg, recs)
	t2 := got.Turns[1]
	if t2.OK != 0 || !t2.TTFTSend.Unbounded() || !t2.TTFTSchedule.Unbounded() {
		t.Fatalf("turn 2: %+v", t2)
	}
	if s := t2.TTFTSend.Text(Q50); s != "n/a (interrupted)" {
		t.Fatalf("turn 2 TTFT p50 %q", s)
	}
	if got.Turns[0].TTFTSend.Unbounded() {
		t.Fatal("turn 1 has a TTFT, yet unbounded")
	}
}
