package run

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
)

func withJobIndex(t *testing.T, v string) {
	t.Helper()
	old := getenv
	getenv = func(k string) string {
		if k == JobIndexEnv {
			return v
		}
		return ""
	}
	t.Cleanup(func() { getenv = old })
}

func TestShardOf(t *testing.T) {
	cases := []struct {
		shard, env string
		i, n       int
		err        string // in the message; "" = valid
	}{
		{"", "", 0, 1, ""},
		{"0/2", "", 0, 2, ""},
		{"1/2", "", 1, 2, ""},
		{"auto/4", "3", 3, 4, ""},
		{"auto/4", " 2\n", 2, 4, ""},
		// sad
		{"2/2", "", 0, 0, "the shard index 2 must be below N = 2"},
		{"-1/2", "", 0, 0, "must be a whole number 0..1"},
		{"x/2", "", 0, 0, `got "x"`},
		{"1/0", "", 0, 0, "N must be a whole number 1..10000"},
		{"1", "", 0, 0, "must be I/N"},
		{"auto/4", "", 0, 0, "JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job), which is not set"},
		{"auto/4", "4", 0, 0, "the shard index 4 (from JOB_COMPLETION_INDEX) must be below N = 4"},
		{"auto/4", "one", 0, 0, `(from JOB_COMPLETION_INDEX) must be a whole number 0..3, got "one"`},
	}
	for _, c := range cases {
		t.Run(c.shard+"/"+c.env, func(t *testing.T) {
			withJobIndex(t, c.env)
			o := DefaultOptions()
			o.Shard = c.shard
			i, n, err := o.ShardOf()
			if c.err == "" {
				if err != nil || i != c.i || n != c.n {
					t.Fatalf("ShardOf(%q) = %d, %d, %v; want %d, %d", c.shard, i, n, err, c.i, c.n)
				}
				return
			}
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != "shard" || !strings.Contains(fe.Message, c.err) {
				t.Fatalf("ShardOf(%q) err = %v, want a shard field error with %q", c.shard, err, c.err)
			}
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestStartAtRefused(t *testing.T) {
	for _, c := range []struct {
		at      string
		virtual bool
		want    string
	}{
		{"tomorrow", false, "must be an RFC 3339 time"},
		{time.Now().Add(48 * time.Hour).Format(time.RFC3339), false, "at most 24h0m0s ahead"},
		{time.Now().Add(time.Minute).Format(time.RFC3339), true, "virtual time (--simulate) does not have"},
	} {
		o := DefaultOptions()
		o.StartAt = c.at
		err := Check(o, c.virtual)
		if err == nil || !strings.Contains(err.Error(), "start_at") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--start-at %s (virtual %v): %v, want %q", c.at, c.virtual, err, c.want)
		}
	}
}

// Each shard sends only its arrivals, the same ones (the same times, the
// same requests) as one process sends of the whole schedule, and says
// so in every record and in its manifest.
func TestExecuteShardVirtual(t *testing.T) {
	plan := onePhase(20, 10*time.Second)
	execute := func(shard string) *Result {
		o := quietOptions()
		o.Shard = shard
		env, err := Prepare(context.Background(), o, true, nil, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	whole := execute("")
	if whole.Manifest.Distributed != nil {
		t.Errorf("one process: distributed %+v, want none", whole.Manifest.Distributed)
	}
	bySeq := map[int64]record.Record{}
	for _, r := range recordsOf(t, whole) {
		bySeq[r.Seq] = r
	}
	total := 0
	for i := range 3 {
		res := execute(string(rune('0'+i)) + "/3")
		total += len(recordsOf(t, res))
		want := schedule.Shard(mustBuild(t, plan), i, 3)
		if len(recordsOf(t, res)) != len(want) {
			t.Fatalf("shard %d: %d records, want its %d arrivals", i, len(recordsOf(t, res)), len(want))
		}
		for j, r := range recordsOf(t, res) {
			w := bySeq[r.Seq]
			if r.Seq != want[j].Seq || r.Shard != i || r.ScheduledNs != w.ScheduledNs || r.MaxTokens != w.MaxTokens || r.PromptTokens != w.PromptTokens {
				t.Fatalf("shard %d record %d: seq %d shard %d scheduled %d max_tokens %d prompt %d; one process: seq %d scheduled %d max_tokens %d prompt %d",
					i, j, r.Seq, r.Shard, r.ScheduledNs, r.MaxTokens, r.PromptTokens, w.Seq, w.ScheduledNs, w.MaxTokens, w.PromptTokens)
			}
		}
		d := res.Manifest.Distributed
		if d == nil || d.Mode != record.DistShard || d.Generators != 3 || d.Shard != i || len(d.Each) != 1 || d.Each[0].Arrivals != int64(len(want)) || d.Each[0].Records != int64(len(want)) {
			t.Fatalf("shard %d: distributed %+v", i, d)
		}
	}
	if total != len(recordsOf(t, whole)) {
		t.Errorf("the shards sent %d, one process %d", total, len(recordsOf(t, whole)))
	}
}

// Sessions are split whole: every turn of a session is sent by the shard
// of its first arrival, and every seq by one shard only — a later turn's
// seq names its shard too (schedule.LaterSeqs) — so the shards hold the
// requests of one process, each once.
func TestExecuteShardSessions(t *testing.T) {
	execute := func(shard string) []record.Record {
		o := quietOptions()
		o.Sessions, o.Shard = true, shard
		env, err := Prepare(context.Background(), o, true, nil, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(6, 20*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		return recordsOf(t, res)
	}
	type req struct{ session, turn, branch, maxTokens int64 }
	key := func(r record.Record) req {
		return req{r.Session, int64(r.Turn), int64(r.Branch), int64(r.MaxTokens)}
	}
	// Each shard's engine model sees 1/N of the load, so later turns
	// (ready at a previous turn's end) may be cut at the plan's end in one
	// run and not in another: the sessions and their first turns compare.
	once := map[req]bool{}
	for _, r := range execute("") {
		if r.Turn == 1 {
			once[key(r)] = true
		}
	}
	seqs := map[int64]int{}
	sharded := map[req]bool{}
	later := 0
	for i := range 2 {
		for _, r := range execute(string(rune('0'+i)) + "/2") {
			if r.Shard != i || schedule.ShardOf(r.Session-1, 2) != i || schedule.ShardOf(r.Seq, 2) != i {
				t.Fatalf("shard %d: record seq %d of session %d turn %d says shard %d", i, r.Seq, r.Session, r.Turn, r.Shard)
			}
			if j, dup := seqs[r.Seq]; dup {
				t.Fatalf("seq %d sent by shard %d and shard %d (session %d turn %d)", r.Seq, j, i, r.Session, r.Turn)
			}
			seqs[r.Seq] = i
			if r.Turn == 1 {
				sharded[key(r)] = true
			}
			if r.Turn > 1 {
				later++
			}
		}
	}
	if later == 0 {
		t.Fatal("no later turns: the test proves nothing")
	}
	if !maps.Equal(sharded, once) {
		t.Errorf("the shards sent %d first turns (session, branch, max_tokens), one process %d: not the same", len(sharded), len(once))
	}
}

func TestShardClosedLoopRefused(t *testing.T) {
	o := quietOptions()
	o.Shard = "0/2"
	env, err := Prepare(context.Background(), o, true, nil, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	_, err = env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(1, time.Second), Closed: &schedule.ClosedLoop{Users: 2, Duration: time.Second}})
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "shard" || !strings.Contains(fe.Message, "closed loop") {
		t.Fatalf("err = %v", err)
	}
}

// --start-at: a live shard's origin is the start time (in a synctest
// bubble, exactly), its arrivals are its share, and later runs do not
// wait; a time already past starts at once and says how late.
func TestStartAtLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := quietOptions()
		at := time.Now().Add(90 * time.Second).Truncate(time.Second)
		o.Shard, o.StartAt = "0/2", at.Format(time.RFC3339Nano)
		var console strings.Builder
		env := bubbleEnv(t, o, &console)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(4, 5*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		// The wait is said on the console, not done in silence.
		if want := "waiting for --start-at " + o.StartAt + " (in 1m"; !strings.Contains(console.String(), want) {
			t.Errorf("console %q, want %q", console.String(), want)
		}
		if !res.Started.Equal(at) {
			t.Errorf("started %v, want the start time %v", res.Started, at)
		}
		for _, r := range recordsOf(t, res) {
			if r.Seq%2 != 0 || r.Shard != 0 {
				t.Fatalf("record seq %d shard %d in shard 0/2", r.Seq, r.Shard)
			}
		}
		g := res.Manifest.Distributed.Each[0]
		if !g.StartAt.Equal(at) || g.StartLateNs != 0 || len(recordsOf(t, res)) != 10 {
			t.Errorf("%d records; generator %+v", len(recordsOf(t, res)), g)
		}
		before := time.Now()
		if _, err := env.Execute(context.Background(), Spec{Name: "r2", Dir: testDir(t), Command: "test", Plan: onePhase(4, time.Second)}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(before); took > 10*time.Second {
			t.Errorf("the second run took %s: it waited again", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		var console strings.Builder
		o := quietOptions()
		o.StartAt = time.Now().Add(-3 * time.Second).Format(time.RFC3339Nano)
		env := bubbleEnv(t, o, &console)
		env.Logger = slog.New(slog.NewTextHandler(&log, nil))
		late, err := env.awaitStart(context.Background())
		// The warning is the console's own "WARNING: …" line, not a log record.
		if err != nil || late != 3*time.Second || !strings.HasPrefix(console.String(), "WARNING: --start-at ") ||
			!strings.Contains(console.String(), "had passed 3s ago") || log.Len() != 0 {
			t.Errorf("late %s err %v console %q log %q", late, err, console.String(), log.String())
		}
	})
	synctest.Test(t, func(t *testing.T) { // Ctrl-C while waiting: nothing is written
		o := quietOptions()
		o.StartAt = time.Now().Add(time.Hour).Format(time.RFC3339Nano)
		env := bubbleEnv(t, o, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Minute, cancel)
		d := testDir(t)
		_, err := env.Execute(ctx, Spec{Name: "r", Dir: d, Command: "test", Plan: onePhase(4, time.Second)})
		if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "waiting for --start-at") {
			t.Fatalf("err = %v, want ErrInterrupted while waiting", err)
		}
		if entries, _ := os.ReadDir(d.Path()); len(entries) > 1 { // the lock file
			t.Errorf("written while waiting: %v", entries)
		}
	})
}

func mustBuild(t *testing.T, p schedule.Plan) []schedule.Arrival {
	t.Helper()
	a, err := schedule.Build(p, DefaultOptions().Seed)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The OTLP join takes a shard's spans: its arrivals are every Nth seq of
// the schedule (the bound is the highest, not their count), and a sessions
// shard's later turns number with a stride of N.
func TestSpanBoundsShard(t *testing.T) {
	all := mustBuild(t, onePhase(10, 10*time.Second)) // seqs 0…99
	cases := []struct {
		name      string
		arrivals  []schedule.Arrival
		unplanned bool
		shards    int
		limit     int
		below     int64
	}{
		{"one process", all, false, 1, 100, 100},
		{"shard 3 of 4", schedule.Shard(all, 3, 4), false, 4, 25, 100},
		{"shard 0 of 4", schedule.Shard(all, 0, 4), false, 4, 25, 97},
		{"sessions, one process", all, true, 1, closedSpanCap, closedSpanCap},
		{"sessions, shard of 4", schedule.Shard(all, 1, 4), true, 4, closedSpanCap, 4 * closedSpanCap},
		{"no arrivals", nil, false, 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit, below := spanBounds(tc.arrivals, tc.unplanned, tc.shards)
			if limit != tc.limit || below != tc.below {
				t.Errorf("spanBounds = %d, %d; want %d, %d", limit, below, tc.limit, tc.below)
			}
		})
	}
}

// A shard's analysis finds each record's arrival (the prompt accumulators
// read its trace-given sizes) among its every-Nth arrivals.
func TestArrivalIndexShard(t *testing.T) {
	all := mustBuild(t, onePhase(10, 10*time.Second))
	for i := range all {
		all[i].PromptTokens = 1000 + int(all[i].Seq)
	}
	x := newArrivalIndex(schedule.Shard(all, 2, 3), nil)
	defer x.close()
	for _, seq := range []int64{2, 5, 50, 98} {
		if a := x.of(seq); a.Seq != seq || a.PromptTokens != 1000+int(seq) {
			t.Errorf("of(%d) = seq %d prompt %d, want its arrival (prompt %d)", seq, a.Seq, a.PromptTokens, 1000+seq)
		}
	}
	if a := x.of(7); a.PromptTokens != 0 { // shard 1's, not this one's
		t.Errorf("of(7) = %+v, want no arrival", a)
	}
}
