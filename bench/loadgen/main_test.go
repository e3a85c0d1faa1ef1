package main

import (
	"os"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

func TestRank(t *testing.T) {
	v := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name string
		v    []int64
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"one value", []int64{7}, 0.5, 7},
		{"median of ten is the fifth", v, 0.50, 5},
		{"p99 of ten is the largest", v, 0.99, 10},
		{"p90 of ten is the ninth", v, 0.90, 9},
		{"p100", v, 1, 10},
		{"p0 clamps to the first", v, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rank(tc.v, tc.q); got != tc.want {
				t.Errorf("rank(%v, %v) = %v, want %v", tc.v, tc.q, got, tc.want)
			}
		})
	}
}

// rec returns a sent, completed record scheduled at sched and sent lag later.
func rec(seq int64, sched, lag time.Duration) record.Record {
	r := record.New("x", seq, "bench", int64(sched))
	r.SentNs = int64(sched + lag)
	r.FirstTokenNs = r.SentNs + int64(50*time.Millisecond)
	r.DoneNs = r.FirstTokenNs + int64(300*time.Millisecond)
	r.Outcome, r.Status, r.Good = record.OK, 200, true
	return r
}

func TestAnalyze(t *testing.T) {
	const rate = 10.0 // arrivals/s: one every 100 ms over 1 s
	onTime := func() []record.Record {
		var out []record.Record
		for i := range 10 {
			out = append(out, rec(int64(i), time.Duration(i)*100*time.Millisecond, 0))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		recs     []record.Record
		achieved float64
		sent     int64
		lagMax   time.Duration
		drops    int64
	}{
		{"on schedule: achieved is the asked rate", onTime(), 10, 10, 0, 0},
		{"the last send 1 s late: 10 in 2 s", func() []record.Record {
			r := onTime()
			r[9] = rec(9, 900*time.Millisecond, time.Second)
			return r
		}(), 5, 10, time.Second, 0},
		{"a drop is neither sent nor completed", func() []record.Record {
			r := onTime()
			d := record.New("x", 9, "bench", int64(900*time.Millisecond))
			d.Outcome = record.GeneratorDrop
			r[9] = d
			return r
		}(), 10, 9, 0, 1},
		{"nothing sent", nil, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &Stats{Asked: rate, Outcomes: map[record.Outcome]int64{}}
			st.analyze(tc.recs)
			if st.Achieved < tc.achieved-1e-9 || st.Achieved > tc.achieved+1e-9 {
				t.Errorf("achieved %v/s, want %v/s", st.Achieved, tc.achieved)
			}
			if st.Sent != tc.sent || st.Completed != tc.sent {
				t.Errorf("sent %d, completed %d, want %d each", st.Sent, st.Completed, tc.sent)
			}
			if st.LagMax != tc.lagMax {
				t.Errorf("lag max %v, want %v", st.LagMax, tc.lagMax)
			}
			if got := st.Outcomes[record.GeneratorDrop]; got != tc.drops {
				t.Errorf("%d drops, want %d", got, tc.drops)
			}
		})
	}
}

func TestProcCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"this process", selfPID(), true},
		{"no pid", 0, false},
		{"a pid that does not exist", 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := procCPU(tc.pid)
			if (got >= 0) != tc.ok {
				t.Errorf("procCPU(%d) = %v, want a value: %v", tc.pid, got, tc.ok)
			}
		})
	}
}

func selfPID() int { return os.Getpid() }
