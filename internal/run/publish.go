package run

import (
	"context"
	"math"
	"os"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/push"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/webview"
)

// publishEvery is how often a live run publishes its live values to
// --metrics-out's endpoints and --web's page.
const publishEvery = time.Second

// publishing is a live run's publisher goroutine.
type publishing struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
	last   func()
}

// startPublish publishes the live status every publishEvery while the
// run goes, and once more when it stops: pushed with the GenAI histograms
// (--metrics-out), and shown on the live page (--web). sink is wrapped
// to count each finished request into the histograms. Without either it
// does nothing and returns sink as it is.
func (e *Env) startPublish(spec Spec, origin time.Time, sink loadgen.Sink) (loadgen.Sink, *publishing) {
	pu := &publishing{cancel: func() {}, last: func() {}}
	if e.pusher == nil && e.web == nil {
		return sink, pu
	}
	var g *push.GenAI
	if e.pusher != nil {
		g = push.NewGenAI(genAIOperation(e.Opts.API), e.Opts.Model, origin)
		inner := sink
		sink = func(r *record.Record) { g.Observe(r); inner(r) }
	}
	labels := e.pushLabels(spec)
	slo := e.Opts.SLO()
	phase := "" // of the last push: its series end when it changes
	once := func(last bool) {
		now := time.Now()
		st := e.liveStatus()
		if e.pusher != nil {
			b := push.Live(st, now, labels)
			g.AddTo(b, now)
			e.pusher.Push(b)
			if phase != "" && phase != st.Phase {
				e.pusher.Push(push.LiveStale(phase, now, labels))
			}
			phase = st.Phase
			if last { // the run is over: its live series end
				e.pusher.Push(push.LiveStale(phase, now.Add(time.Millisecond), labels))
			}
		}
		e.web.Publish(snapshot(st, slo.TTFTP95, slo.E2EP99, slo.GoodputRatio))
	}
	ctx, cancel := context.WithCancel(context.Background())
	pu.cancel, pu.last = cancel, func() { once(true) }
	pu.done.Add(1)
	go func() {
		defer pu.done.Done()
		t := time.NewTicker(publishEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				once(false)
			}
		}
	}()
	return sink, pu
}

// stop ends the publishing with one last status (the final counts); once.
func (p *publishing) stop() {
	p.once.Do(func() {
		p.cancel()
		p.done.Wait()
		p.last()
	})
}

// snapshot is the live page's view of st, with the SLO's clauses as they
// stand: the window's p95 TTFT and p99 completion, and the goodput of
// the requests judged so far (a clause whose limit is 0 is not shown).
func snapshot(st live.Status, ttftP95, e2eP99 time.Duration, goodput float64) webview.Snapshot {
	secs := func(d time.Duration) *float64 {
		if d == live.NoData {
			return nil
		}
		v := d.Seconds()
		return &v
	}
	sn := webview.Snapshot{Run: st.Run, Phase: st.Phase, ElapsedS: st.Elapsed.Seconds(), TotalS: st.Total.Seconds(),
		Offered: st.Offered, Sent: st.Sent, Completed: st.OK, Goodput: st.Goodput, InFlight: st.InFlight,
		TTFTP95S: secs(st.TTFTP95), E2EP99S: secs(st.P99), Errors: st.Errors, Drops: st.Drops, LagMaxS: st.LagMax.Seconds()}
	if st.Draining() {
		sn.Phase = "draining"
	}
	if !math.IsNaN(st.Waiting) {
		w := st.Waiting
		sn.Waiting = &w
	}
	if ttftP95 > 0 {
		sn.Clauses = append(sn.Clauses, webview.Clause{Name: "p95 TTFT, requests finished in the last 10 s", Value: sn.TTFTP95S, Limit: ttftP95.Seconds(), Unit: "s"})
	}
	if e2eP99 > 0 {
		sn.Clauses = append(sn.Clauses, webview.Clause{Name: "p99 completion, requests finished in the last 10 s", Value: sn.E2EP99S, Limit: e2eP99.Seconds(), Unit: "s"})
	}
	if goodput > 0 {
		c := webview.Clause{Name: "goodput of the requests finished or dropped so far", Limit: goodput, Unit: "%", Above: true, N: st.Judged}
		if st.Judged > 0 {
			v := float64(st.Good) / float64(st.Judged)
			c.Value = &v
		}
		sn.Clauses = append(sn.Clauses, c)
	}
	return sn
}

// WebURL is the live page's address (--web), "" without one.
func (e *Env) WebURL() string {
	if e.web == nil {
		return ""
	}
	return e.web.URL()
}

// FinishWeb tells the live page that the command is done and its report
// is at reportHTML, and waits (5 s at most) until each open page has
// loaded it; when the command ended without writing it, the pages say so.
func (e *Env) FinishWeb(reportHTML string) {
	if _, err := os.Stat(reportHTML); err != nil {
		reportHTML = ""
	}
	e.web.Final(reportHTML, 5*time.Second)
}
