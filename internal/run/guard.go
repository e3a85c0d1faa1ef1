package run

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
)

// guardEvery is how often a live run says it is alive and checks its
// memory: rewriting a manifest of a few KB (no fsync) four times a second
// costs nothing a run would notice, and a killed run's end is known
// within a quarter of a second.
const guardEvery = 250 * time.Millisecond

// memoryStopShare is how near the Go runtime's soft memory limit (90% of
// what was available at the start, SoftMemoryLimit) the process may come
// before the run is stopped: past the soft limit the collector cannot
// keep the heap down any more, and the next step is the runtime's fatal
// error or the kernel's out-of-memory killer, both of which lose the run.
const memoryStopShare = 1.05

// guard runs beside a live run until the returned stop is called. Every
// guardEvery it rewrites the pending manifest with how long the run has
// been alive (SeenNs), so that a run killed without a word still says
// when it died; and it ends the run with errMemory when the process's
// memory (stored in used) passes memoryStopShare × the soft limit.
func guard(d *rundir.Dir, pending *record.Manifest, origin time.Time, cancel context.CancelCauseFunc, used *atomic.Uint64) (stop func()) {
	limit := debug.SetMemoryLimit(-1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(guardEvery)
		defer t.Stop()
		m := *pending
		sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			m.SeenNs = int64(time.Since(origin))
			_ = d.WriteManifest(&m) // best effort: a full disk is seen by the records' writer
			if limit <= 0 || limit == math.MaxInt64 {
				continue
			}
			metrics.Read(sample)
			u := sample[0].Value.Uint64() - sample[1].Value.Uint64()
			if float64(u) > memoryStopShare*float64(limit) {
				used.Store(u)
				cancel(errMemory)
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// memoryWhy says how much memory the run had when the guard stopped it.
func memoryWhy(used uint64) string {
	return fmt.Sprintf("the process held %s of the %s soft limit (90%% of the memory available at the start); what ran is analysed — lower --max-in-flight or the rate, or give the process more memory",
		gib(float64(used)), gib(float64(debug.SetMemoryLimit(-1))))
}
