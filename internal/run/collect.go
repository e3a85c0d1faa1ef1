package run

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
)

// collector keeps a run's records in memory (a few hundred bytes each) and
// knows the horizon up to which every scheduled arrival has finished. In
// sessions mode an arrival has finished when its whole session has: every
// record of a session is scheduled at or after its arrival, so the horizon
// still bounds every record still to come.
type collector struct {
	mu       sync.Mutex
	arrivals []schedule.Arrival
	index    map[int64]int // seq → position in arrivals
	done     []bool
	next     int // arrivals[:next] have all finished
	recs     []record.Record

	sessions bool
	got      map[int64]int // sessions: arrival seq → records received
	want     map[int64]int // sessions: arrival seq → records the ended session produced
}

func newCollector(arrivals []schedule.Arrival, sessions bool) *collector {
	// Sized to the schedule: one record per arrival, so the slice never
	// grows (and copies) while the run goes.
	c := &collector{arrivals: arrivals, done: make([]bool, len(arrivals)), index: make(map[int64]int, len(arrivals)),
		recs: make([]record.Record, 0, len(arrivals))}
	for i := range arrivals {
		c.index[arrivals[i].Seq] = i
	}
	if sessions {
		c.sessions, c.got, c.want = true, map[int64]int{}, map[int64]int{}
	}
	return c
}

// sessionEnded notes that the session of arrival seq ended with n records
// (they may still be on their way: the span join holds some).
func (c *collector) sessionEnded(seq int64, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want[seq] = n
	c.settle(seq)
}

// settle marks arrival seq finished once its session has ended and each
// of its records has arrived.
func (c *collector) settle(seq int64) {
	if n, ok := c.want[seq]; !ok || c.got[seq] < n {
		return
	}
	delete(c.want, seq)
	delete(c.got, seq)
	c.mark(seq)
}

func (c *collector) mark(seq int64) {
	if i, ok := c.index[seq]; ok {
		c.done[i] = true
	}
	for c.next < len(c.done) && c.done[c.next] {
		c.next++
	}
}

func (c *collector) add(r *record.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, *r)
	if c.sessions {
		c.got[r.Session-1]++
		c.settle(r.Session - 1)
		return
	}
	c.mark(r.Seq)
}

// complete returns a copy of the records scheduled before the horizon, and
// the horizon: the scheduled time of the first arrival not yet finished.
func (c *collector) complete() ([]record.Record, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	horizon := time.Duration(1<<63 - 1)
	if c.next < len(c.arrivals) {
		horizon = c.arrivals[c.next].At
	}
	out := make([]record.Record, 0, len(c.recs))
	for i := range c.recs {
		if time.Duration(c.recs[i].ScheduledNs) < horizon {
			out = append(out, c.recs[i])
		}
	}
	return out, horizon
}

// firstUnsent is the scheduled time of the first arrival without a record
// (one the schedule never sent, because it was cut), if any.
func (c *collector) firstUnsent() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.next; i < len(c.done); i++ {
		if !c.done[i] {
			return c.arrivals[i].At, true
		}
	}
	return 0, false
}

// recentLatency is the p95 TTFT and the p99 completion time, both from
// the scheduled arrival, of the successful requests that finished at or
// after sinceNs (live.NoData if none). The records are kept in completion
// order, so only the recent tail is read.
func (c *collector) recentLatency(sinceNs int64) (ttftP95, e2eP99 time.Duration) {
	c.mu.Lock()
	var ttft, e2e []int64
	for i := len(c.recs) - 1; i >= 0; i-- {
		r := &c.recs[i]
		if r.DoneNs == record.None {
			continue // a generator_drop: recorded at its arrival, never done
		}
		if r.DoneNs < sinceNs {
			break
		}
		if r.Outcome == record.OK {
			e2e = append(e2e, r.E2ESchedule())
			if t := r.TTFTSchedule(); t != record.None {
				ttft = append(ttft, t)
			}
		}
	}
	c.mu.Unlock()
	return nearestRank(ttft, 95), nearestRank(e2e, 99)
}

// nearestRank is the p-th percentile of v by nearest rank (v is sorted in
// place), live.NoData for none.
func nearestRank(v []int64, p int) time.Duration {
	if len(v) == 0 {
		return live.NoData
	}
	slices.Sort(v)
	return time.Duration(v[(p*len(v)+99)/100-1])
}

// records returns every record, in schedule order.
func (c *collector) records() []record.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]record.Record(nil), c.recs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// cutPlan returns p with its phases ending at t: the phase containing t is
// shortened and later phases dropped.
func cutPlan(p schedule.Plan, t time.Duration) schedule.Plan {
	out := p
	out.Phases = nil
	var start time.Duration
	for _, ph := range p.Phases {
		if start >= t {
			break
		}
		if start+ph.Duration > t {
			ph.Duration = t - start
		}
		out.Phases = append(out.Phases, ph)
		start += ph.Duration
	}
	return out
}

// writeEngineCSV writes the engine samples of a virtual run as engine.csv.
func writeEngineCSV(d *rundir.Dir, samples []scrape.Sample) error {
	f, err := d.EngineCSV()
	if err != nil {
		return err
	}
	w := scrape.NewCSVWriter(f)
	for _, s := range samples {
		if err := w.Write(s); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
