package run

import (
	"container/heap"
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

// collector follows a live run's records as they arrive, without keeping
// them (the run's requests.jsonl is their record; the analysis reads it
// once at the end). It knows the horizon up to which every scheduled
// arrival has finished, and feeds the run's Stopper, if any, each record
// scheduled before the horizon, once: a record scheduled after it waits
// until the horizon passes it. In sessions mode an arrival has finished
// when its whole session has: every record of a session is scheduled at
// or after its arrival, so the horizon still bounds every record still to
// come.
//
// What it holds is bounded by what is in flight, not by the run's length:
// the finished arrivals beyond the first unfinished one (ahead), the
// records waiting for the horizon (held, only with a Stopper), the
// sessions under way (got, want) and the finished requests of the live
// view's window (recent, 32 bytes each). The schedule itself (arrivals)
// is the run's, shared with the load generator.
type collector struct {
	mu       sync.Mutex
	arrivals []schedule.Arrival
	next     int              // arrivals[:next] have all finished
	ahead    map[int]struct{} // positions ≥ next that have finished
	count    int64            // records received

	stop Stopper    // nil: no record is held
	held recordHeap // records scheduled at or after the horizon, for stop

	recent []recentDone // the live view's finished requests, in arrival order, from head on
	head   int

	sessions bool
	got      map[int64]int // sessions: arrival seq → records received
	want     map[int64]int // sessions: arrival seq → records the ended session produced
}

// recentDone is what the live view reads of a finished request.
type recentDone struct {
	done, ttft, e2e int64 // ttft record.None when none; e2e for ok only
	ok              bool
}

func newCollector(arrivals []schedule.Arrival, sessions bool, stop Stopper) *collector {
	c := &collector{arrivals: arrivals, ahead: map[int]struct{}{}, stop: stop}
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
	c.release()
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

// position is the index in arrivals of the arrival numbered seq, -1 if
// none: arrivals are in Seq order, and Seq is the position unless the
// schedule was filtered (a shard).
func (c *collector) position(seq int64) int {
	if seq >= 0 && seq < int64(len(c.arrivals)) && c.arrivals[seq].Seq == seq {
		return int(seq)
	}
	i := sort.Search(len(c.arrivals), func(i int) bool { return c.arrivals[i].Seq >= seq })
	if i < len(c.arrivals) && c.arrivals[i].Seq == seq {
		return i
	}
	return -1
}

func (c *collector) mark(seq int64) {
	i := c.position(seq)
	if i < c.next {
		return // unknown, or already finished
	}
	c.ahead[i] = struct{}{}
	for {
		if _, ok := c.ahead[c.next]; !ok {
			return
		}
		delete(c.ahead, c.next)
		c.next++
	}
}

// horizonLocked is the scheduled time of the first arrival not yet
// finished (the largest duration when all have).
func (c *collector) horizonLocked() time.Duration {
	if c.next < len(c.arrivals) {
		return c.arrivals[c.next].At
	}
	return time.Duration(1<<63 - 1)
}

// release feeds the Stopper the held records the horizon has passed.
func (c *collector) release() {
	if c.stop == nil {
		return
	}
	h := int64(c.horizonLocked())
	for c.held.Len() > 0 && c.held.recs[0].ScheduledNs < h {
		r := heap.Pop(&c.held).(record.Record)
		c.stop.Add(&r)
	}
}

func (c *collector) add(r *record.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count++
	if r.DoneNs != record.None {
		d := recentDone{done: r.DoneNs, ok: r.Outcome == record.OK, ttft: record.None}
		if d.ok {
			d.e2e, d.ttft = r.E2ESchedule(), r.TTFTSchedule()
		}
		c.recent = append(c.recent, d)
		// Nothing that finished two view windows before the latest is ever
		// read again (recentLatency): drop it as the run goes.
		for cut := r.DoneNs - int64(2*live.Window); c.head < len(c.recent) && c.recent[c.head].done < cut; c.head++ {
		}
		if c.head > len(c.recent)/2 {
			c.recent = append(c.recent[:0], c.recent[c.head:]...)
			c.head = 0
		}
	}
	if c.stop != nil {
		if r.ScheduledNs < int64(c.horizonLocked()) {
			c.stop.Add(r)
		} else {
			heap.Push(&c.held, *r)
		}
	}
	if c.sessions {
		c.got[r.Session-1]++
		c.settle(r.Session - 1)
	} else {
		c.mark(r.Seq)
	}
	c.release()
}

// check asks the Stopper, which has seen every record scheduled before
// the horizon, whether to stop.
func (c *collector) check() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stop.Stop(c.horizonLocked())
}

// received is the number of records the run has produced so far.
func (c *collector) received() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// firstUnsent is the scheduled time of the first arrival without a record
// (one the schedule never sent, because it was cut), if any.
func (c *collector) firstUnsent() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.next; i < len(c.arrivals); i++ {
		if _, ok := c.ahead[i]; !ok {
			return c.arrivals[i].At, true
		}
	}
	return 0, false
}

// recentLatency is the p95 TTFT and the p99 completion time, both from
// the scheduled arrival, of the successful requests that finished at or
// after sinceNs (live.NoData if none). The finished requests are kept in
// arrival (completion) order, and only the recent tail is read; what
// lies before the first one older than sinceNs is never read again
// (sinceNs only grows).
func (c *collector) recentLatency(sinceNs int64) (ttftP95, e2eP99 time.Duration) {
	c.mu.Lock()
	var ttft, e2e []int64
	i := len(c.recent) - 1
	for ; i >= c.head; i-- {
		r := &c.recent[i]
		if r.done < sinceNs {
			break
		}
		if r.ok {
			e2e = append(e2e, r.e2e)
			if r.ttft != record.None {
				ttft = append(ttft, r.ttft)
			}
		}
	}
	c.head = max(c.head, i)
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

// recordHeap holds records by scheduled time, earliest first.
type recordHeap struct{ recs []record.Record }

func (h *recordHeap) Len() int           { return len(h.recs) }
func (h *recordHeap) Less(i, j int) bool { return h.recs[i].ScheduledNs < h.recs[j].ScheduledNs }
func (h *recordHeap) Swap(i, j int)      { h.recs[i], h.recs[j] = h.recs[j], h.recs[i] }
func (h *recordHeap) Push(x any)         { h.recs = append(h.recs, x.(record.Record)) }
func (h *recordHeap) Pop() any {
	n := len(h.recs) - 1
	r := h.recs[n]
	h.recs[n] = record.Record{}
	h.recs = h.recs[:n]
	return r
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
