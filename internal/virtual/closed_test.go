package virtual

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// failedAtOnce reports whether r was answered at its send (429, 500, 503),
// after which its user pauses.
func failedAtOnce(r *record.Record) bool {
	return r.Outcome == record.RateLimited || r.Outcome == record.HTTPError
}

// checkClosedSends checks the closed loop's bookkeeping from its records
// alone: at every instant s before the loop's end,
//
//	sends(s) = Users·[s = 0] + #{requests that ended at s, not at once}
//	         + #{requests that failed at once at s − 100 ms}
//
// and nothing is sent from the end on: every user always has exactly one
// request in flight or one 100 ms pause (FailurePause) running.
func checkClosedSends(t *testing.T, loop schedule.ClosedLoop, recs []record.Record) {
	t.Helper()
	end := int64(loop.Warmup + loop.Duration)
	want := map[int64]int{0: loop.Users}
	for i := range recs {
		r := &recs[i]
		s := r.DoneNs
		if failedAtOnce(r) {
			s += int64(100 * time.Millisecond)
		}
		if s < end {
			want[s]++
		}
	}
	got := map[int64]int{}
	for _, r := range recs {
		got[r.SentNs]++
	}
	for s, n := range got {
		if s >= end {
			t.Errorf("%d requests sent at %v, after the loop's end", n, time.Duration(s))
		}
	}
	for s, n := range want {
		if got[s] != n {
			t.Fatalf("at %v: %d requests sent, want %d (users freed then)", time.Duration(s), got[s], n)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("sends at %d instants, want %d", len(got), len(want))
	}
}

func TestClosed(t *testing.T) {
	level := schedule.ClosedLoop{Users: 5, Warmup: 10 * time.Second, Duration: 40 * time.Second, Phase: "level"}
	cases := []struct {
		name  string
		edit  func(*Config)
		gen   func(t *testing.T) *workload.Generator
		loop  schedule.ClosedLoop
		check func(t *testing.T, out *Output)
	}{
		{"below the batch", func(*Config) {}, func(t *testing.T) *workload.Generator { return chatGen(t, 1) }, level,
			func(t *testing.T, out *Output) {
				if n := inFlight(out.Records); n != level.Users {
					t.Errorf("peak in flight %d, want exactly %d users", n, level.Users)
				}
				for _, r := range out.Records {
					if r.Outcome != record.OK || !r.Good {
						t.Errorf("seq %d: %s, good %v", r.Seq, r.Outcome, r.Good)
					}
				}
				if len(out.Records) < 20 {
					t.Errorf("only %d requests", len(out.Records))
				}
			}},
		{"one user, no warmup", func(*Config) {}, func(t *testing.T) *workload.Generator { return fixedGen(t, 100, 50) },
			schedule.ClosedLoop{Users: 1, Duration: 10 * time.Second, Phase: "level"},
			func(t *testing.T, out *Output) {
				for i := 1; i < len(out.Records); i++ {
					if out.Records[i].SentNs != out.Records[i-1].DoneNs {
						t.Fatalf("seq %d sent at %d, its predecessor ended at %d", i, out.Records[i].SentNs, out.Records[i-1].DoneNs)
					}
				}
			}},
		{"429 from a small queue: a pause after each", func(c *Config) { c.Sim.MaxWaiting, c.Sim.MaxNumSeqs = 1, 2 },
			func(t *testing.T) *workload.Generator { return fixedGen(t, 100, 50) }, level,
			func(t *testing.T, out *Output) {
				n := 0
				for _, r := range out.Records {
					if r.Outcome == record.RateLimited {
						n++
						if r.Status != 429 || r.DoneNs != r.SentNs || r.RetryAfterNs < int64(time.Second) {
							t.Fatalf("seq %d: %+v", r.Seq, r)
						}
					}
				}
				if n == 0 {
					t.Fatal("no 429")
				}
			}},
		{"500 and 503", func(c *Config) { c.Sim.Fault500, c.Sim.Fault503 = 0.2, 0.2 },
			func(t *testing.T) *workload.Generator { return fixedGen(t, 100, 50) }, level,
			func(t *testing.T, out *Output) {
				seen := map[int]bool{}
				for _, r := range out.Records {
					if r.Outcome == record.HTTPError {
						seen[r.Status] = true
					}
				}
				if !seen[500] || !seen[503] {
					t.Errorf("statuses seen %v, want 500 and 503", seen)
				}
			}},
		{"timeouts free the user at send + timeout", func(c *Config) { c.Timeout = 2 * time.Second },
			func(t *testing.T) *workload.Generator { return fixedGen(t, 100, 500) }, level,
			func(t *testing.T, out *Output) {
				for _, r := range out.Records {
					if r.Outcome != record.Timeout || r.DoneNs != r.SentNs+int64(2*time.Second) || r.Error != "timeout after 2s" {
						t.Fatalf("seq %d: %s, sent %d, done %d, %q", r.Seq, r.Outcome, r.SentNs, r.DoneNs, r.Error)
					}
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			tc.edit(&cfg)
			out, err := Closed(context.Background(), cfg, tc.gen(t), tc.loop)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Records) == 0 {
				t.Fatal("no records")
			}
			for i, r := range out.Records {
				want := tc.loop.Phase
				if time.Duration(r.SentNs) < tc.loop.Warmup {
					want = schedule.PhaseWarmup
				}
				if r.Seq != int64(i) || r.ID != fmt.Sprintf("run-%d", i) || r.Phase != want || r.ScheduledNs != r.SentNs || r.ConnNs != r.SentNs {
					t.Fatalf("record %d: seq %d id %q phase %q (want %q) scheduled %d sent %d", i, r.Seq, r.ID, r.Phase, want, r.ScheduledNs, r.SentNs)
				}
				if i > 0 && r.SentNs < out.Records[i-1].SentNs {
					t.Fatalf("seq %d sent before seq %d", i, i-1)
				}
			}
			if n := inFlight(out.Records); n > tc.loop.Users {
				t.Errorf("%d requests in flight at once, more than %d users", n, tc.loop.Users)
			}
			checkClosedSends(t, tc.loop, out.Records)
			admitted := 0
			for ph, w := range out.QueueWaits {
				if ph != tc.loop.Phase && ph != schedule.PhaseWarmup {
					t.Errorf("queue waits of phase %q", ph)
				}
				admitted += int(w.Count())
			}
			atOnce, ok := 0, 0
			for i := range out.Records {
				switch {
				case failedAtOnce(&out.Records[i]):
					atOnce++
				case out.Records[i].Outcome == record.OK:
					ok++
				}
			}
			if admitted < ok || admitted > len(out.Records)-atOnce {
				t.Errorf("%d queue waits; %d ok, %d of %d failed at once", admitted, ok, atOnce, len(out.Records))
			}
			for i, s := range out.Engine {
				if s.TNs != int64(i)*int64(time.Second) {
					t.Fatalf("sample %d at %d ns", i, s.TNs)
				}
			}
			tc.check(t, out)
		})
	}
}

// The same configuration and seed give the same closed loop.
func TestClosedDeterministic(t *testing.T) {
	cfg := baseConfig()
	cfg.Sim.MaxWaiting, cfg.Sim.Fault500, cfg.Timeout = 4, 0.05, 10*time.Second
	loop := schedule.ClosedLoop{Users: 30, Warmup: 5 * time.Second, Duration: 30 * time.Second, Phase: "level"}
	run := func(seed int64) *Output {
		t.Helper()
		c := cfg
		c.Sim.Seed = seed
		out, err := Closed(context.Background(), c, chatGen(t, 1), loop)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := run(1), run(1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two closed loops with the same seed differ")
	}
	if reflect.DeepEqual(a.Records, run(2).Records) {
		t.Error("another engine seed gave the same records")
	}
}
