package loadgen

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// fakeTarget answers every request after a fixed service time, in virtual
// time (the tests run inside a synctest bubble).
type fakeTarget struct {
	origin  time.Time
	service time.Duration
}

func (f *fakeTarget) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	rec.SentNs = int64(time.Since(f.origin))
	select {
	case <-time.After(f.service):
		rec.FirstTokenNs = int64(time.Since(f.origin))
		rec.DoneNs = rec.FirstTokenNs
		rec.Status, rec.Outcome = 200, record.OK
	case <-ctx.Done():
		rec.DoneNs = int64(time.Since(f.origin))
		rec.Outcome = record.Cancelled
	}
}

type collector struct {
	mu   sync.Mutex
	recs map[int64]record.Record
	dups int
}

func (c *collector) sink(r *record.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recs == nil {
		c.recs = map[int64]record.Record{}
	}
	if _, ok := c.recs[r.Seq]; ok {
		c.dups++
	}
	c.recs[r.Seq] = *r
}

func constant(n int, gap time.Duration) []schedule.Arrival {
	as := make([]schedule.Arrival, n)
	for i := range as {
		as[i] = schedule.Arrival{Seq: int64(i), At: time.Duration(i) * gap, Phase: "p"}
	}
	return as
}

func build(a *schedule.Arrival) workload.Request { return workload.Request{Seq: a.Seq, MaxTokens: 8} }

func TestOpenKeepsScheduleWithoutLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		o := NewOpen(Config{RunID: "t"}, origin, &fakeTarget{origin, 3 * time.Second}, build, c.sink)
		arr := constant(100, 10*time.Millisecond) // 100/s, each request lives 3 s: 300 in flight would be the steady state
		if err := o.Run(context.Background(), arr); err != nil {
			t.Fatal(err)
		}
		if len(c.recs) != 100 || c.dups != 0 {
			t.Fatalf("records %d dups %d", len(c.recs), c.dups)
		}
		for _, a := range arr {
			r := c.recs[a.Seq]
			if r.ScheduledNs != int64(a.At) || r.Lag() != 0 || r.Outcome != record.OK {
				t.Fatalf("seq %d: scheduled %d lag %d outcome %s", a.Seq, r.ScheduledNs, r.Lag(), r.Outcome)
			}
			if r.ID != "t-"+itoa(a.Seq) || r.MaxTokens != 8 {
				t.Fatalf("id %q max_tokens %d", r.ID, r.MaxTokens)
			}
		}
		if o.Counters.InFlight.Load() != 0 || o.Counters.Sent.Load() != 100 || o.Counters.Completed.Load() != 100 {
			t.Fatalf("counters: %+v", &o.Counters)
		}
	})
}

// A slow target must not slow the schedule down: arrivals beyond the cap
// are dropped at their scheduled time, never sent late.
func TestOpenDropsAtCapNeverDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		o := NewOpen(Config{MaxInFlight: 5}, origin, &fakeTarget{origin, time.Hour}, build, c.sink)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := o.Run(ctx, constant(20, 100*time.Millisecond))
		if err != context.DeadlineExceeded {
			t.Fatalf("err = %v", err)
		}
		var drops, cancelled int
		for _, r := range c.recs {
			switch r.Outcome {
			case record.GeneratorDrop:
				drops++
				if r.Sent() {
					t.Errorf("drop %d has a sent time", r.Seq)
				}
			case record.Cancelled:
				cancelled++
				if r.Lag() != 0 {
					t.Errorf("seq %d sent late: lag %d", r.Seq, r.Lag())
				}
			}
		}
		if drops != 15 || cancelled != 5 || len(c.recs) != 20 {
			t.Fatalf("drops %d cancelled %d records %d", drops, cancelled, len(c.recs))
		}
		if o.Counters.Dropped.Load() != 15 {
			t.Fatalf("dropped counter %d", o.Counters.Dropped.Load())
		}
		if p := o.Counters.PeakInFlight.Load(); p != 5 {
			t.Fatalf("peak in flight %d, want the cap, 5", p)
		}
	})
}

// Interrupting a run leaves exactly one record for every arrival whose time
// has come, and none for arrivals still in the future.
func TestOpenInterruptRecordsEveryDueArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		o := NewOpen(Config{}, origin, &fakeTarget{origin, 2 * time.Second}, build, c.sink)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(5*time.Second + 50*time.Millisecond)
			cancel()
		}()
		err := o.Run(ctx, constant(1000, 100*time.Millisecond)) // 100 s of arrivals
		if err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
		// arrivals at 0, 0.1, …, 5.0 s are due: 51 records.
		if len(c.recs) != 51 || c.dups != 0 {
			t.Fatalf("records %d dups %d", len(c.recs), c.dups)
		}
		var ok, cancelled int
		for _, r := range c.recs {
			switch r.Outcome {
			case record.OK:
				ok++
			case record.Cancelled:
				cancelled++
			default:
				t.Errorf("unexpected outcome %s", r.Outcome)
			}
		}
		// requests sent before 3.05 s finished (2 s service): 0..3.0 s = 31.
		if ok != 31 || cancelled != 20 {
			t.Fatalf("ok %d cancelled %d", ok, cancelled)
		}
		// The counters (the live view's) count the cancelled apart.
		if n, done, good := o.Counters.Cancelled.Load(), o.Counters.Completed.Load(), o.Counters.OK.Load(); n != 20 || done != 51 || good != 31 {
			t.Fatalf("counters: cancelled %d, completed %d, ok %d", n, done, good)
		}
	})
}

func TestJudgeSetsGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		judge := func(r *record.Record) bool { return r.E2ESchedule() <= int64(time.Second) }
		o := NewOpen(Config{Judge: judge}, origin, &fakeTarget{origin, 2 * time.Second}, build, c.sink)
		if err := o.Run(context.Background(), constant(3, time.Second)); err != nil {
			t.Fatal(err)
		}
		for _, r := range c.recs {
			if r.Good {
				t.Fatalf("seq %d judged good with e2e %d", r.Seq, r.E2ESchedule())
			}
		}
		if o.Counters.Good.Load() != 0 || o.Counters.OK.Load() != 3 {
			t.Fatalf("good %d ok %d", o.Counters.Good.Load(), o.Counters.OK.Load())
		}
	})
}

func TestClosedLoopKeepsUsersBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		cl := NewClosed(Config{}, origin, &fakeTarget{origin, 500 * time.Millisecond}, build, c.sink)
		next, err := cl.Run(context.Background(), "c4", 4, 0, 10*time.Second, 100)
		if err != nil {
			t.Fatal(err)
		}
		// 4 users × (10 s / 0.5 s) = 80 requests, seqs 100..179.
		if len(c.recs) != 80 || next != 180 {
			t.Fatalf("records %d next %d", len(c.recs), next)
		}
		for _, r := range c.recs {
			if r.Phase != "c4" || r.Lag() != 0 {
				t.Fatalf("%+v", r)
			}
		}
		if _, err := cl.Run(context.Background(), "c0", 0, 0, time.Second, 0); err == nil {
			t.Fatal("0 users must be an error")
		}
	})
}

func itoa(i int64) string { return requestID("", i) }

// Stop ends the schedule but lets requests in flight finish normally.
func TestOpenStopFinishesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		o := NewOpen(Config{}, origin, &fakeTarget{origin, 2 * time.Second}, build, c.sink)
		go func() {
			time.Sleep(3*time.Second + 50*time.Millisecond)
			o.Stop()
			o.Stop() // idempotent
		}()
		if err := o.Run(context.Background(), constant(100, 100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if len(c.recs) != 31 {
			t.Fatalf("records %d, want 31 (arrivals at 0..3.0 s)", len(c.recs))
		}
		for _, r := range c.recs {
			if r.Outcome != record.OK {
				t.Fatalf("seq %d: %s; in-flight requests must finish after Stop", r.Seq, r.Outcome)
			}
		}
	})
}

// A generator that has fallen behind and is then interrupted still records
// every arrival whose time had come.
func TestInterruptWhileBehindRecordsOverdueArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now().Add(-time.Second) // the run "started" a second ago: 100 arrivals are overdue
		var c collector
		o := NewOpen(Config{}, origin, &fakeTarget{origin, time.Second}, build, c.sink)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // interrupted before the dispatcher ever ran
		err := o.Run(ctx, constant(1000, 10*time.Millisecond))
		if err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
		// arrivals at 0 … 1.0 s were due: 101 records, all cancelled, none twice
		if len(c.recs) != 101 || c.dups != 0 {
			t.Fatalf("records %d dups %d; every overdue arrival needs exactly one", len(c.recs), c.dups)
		}
		for _, r := range c.recs {
			if r.Outcome != record.Cancelled {
				t.Fatalf("seq %d: %s", r.Seq, r.Outcome)
			}
		}
	})
}
