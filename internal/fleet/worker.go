package fleet

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// WorkerConfig is what a worker needs besides its jobs. The zero values of
// the timing fields mean the defaults.
type WorkerConfig struct {
	Coordinator string // the coordinator's URL, e.g. http://10.0.0.5:7777
	Name        string // how the coordinator and the manifest name it (required)
	Version     string // this surge's version (the coordinator refuses another)
	// APIKey and Headers are this worker's own (its environment and flags,
	// as surge run reads them): the coordinator never sends them.
	APIKey  string
	Headers map[string]string
	// ConnectTimeout is how long to keep trying to reach the coordinator
	// at the start (0 = 30 s); past it, and whenever the coordinator stops
	// answering for LostAfter, the worker ends with an *UnreachableError.
	ConnectTimeout time.Duration
	LostAfter      time.Duration
	FlushEvery     time.Duration
	FlushRecords   int
	Log            io.Writer // progress lines (nil: none)
	// ClockSkew is added to every reading of this worker's clock: tests
	// give a worker a wrong clock with it.
	ClockSkew time.Duration
	// ClockDrift makes this worker's clock run that much faster than real
	// time (0.01: 10 ms a second): tests check that the drift is seen.
	ClockDrift float64
	// HTTP is the client for the coordinator (nil: a default one).
	HTTP *http.Client
}

// UnreachableError is a coordinator that cannot be reached (exit 3).
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("coordinator %s unreachable: %v", e.URL, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// RefusedError is a registration the coordinator refused (another surge
// version, a name taken, all workers there): exit 2.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return "the coordinator refused this worker: " + e.Why }

// NotCoordinatorError is an address that answers HTTP but not as a surge
// coordinator (a 404 to its clock, or no clock reading): retrying will not
// help, so the worker stops at once (exit 3, like an unreachable one).
type NotCoordinatorError struct {
	URL, Why string
}

func (e *NotCoordinatorError) Error() string {
	return fmt.Sprintf("%s %s: not a surge coordinator (wrong port?)", e.URL, e.Why)
}

// CheckURL says whether u can be a coordinator's URL (http:// or https://
// with a host): a usage error naming --coordinator otherwise.
func CheckURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("--coordinator: %q is not an http:// URL (e.g. http://10.0.0.5:7777)", u)
	}
	return nil
}

// InterruptedError is a worker interrupted on its own machine (Ctrl-C,
// SIGTERM): exit 1. It is a context.Canceled (errors.Is).
type InterruptedError struct {
	Job       bool  // a job was under way
	Cancelled int64 // its requests in flight, cancelled, whose records were sent
	// Err is why the job's last records did not reach the coordinator
	// (nil: they did, and it recorded the worker as interrupted).
	Err error
}

func (e *InterruptedError) Error() string {
	switch {
	case !e.Job:
		return "interrupted between runs; the coordinator was told"
	case e.Err != nil:
		return fmt.Sprintf("interrupted: the records of the run under way could not be sent: %v (the coordinator counts this worker lost)", e.Err)
	}
	return fmt.Sprintf("interrupted: %d %s in flight cancelled; every record was sent and the coordinator recorded this worker as interrupted",
		e.Cancelled, Plural(int(e.Cancelled), "request", "requests"))
}

func (e *InterruptedError) Unwrap() error { return context.Canceled }

// statusError is an answer other than 200 to a request of the protocol.
type statusError struct {
	what   string
	status string
	code   int
}

func (e *statusError) Error() string { return e.what + ": status " + e.status }

// worker is one RunWorker's state.
type worker struct {
	cfg   WorkerConfig
	base  string
	hc    *http.Client
	clock clock
	index int
}

// RunWorker registers with the coordinator and runs the jobs it hands out
// until it says there are no more (nil), ctx ends (ctx's error) or the
// coordinator is lost (*UnreachableError).
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = DefaultLostAfter
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = DefaultFlushEvery
	}
	if cfg.FlushRecords <= 0 {
		cfg.FlushRecords = DefaultFlushRecords
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := CheckURL(cfg.Coordinator); err != nil {
		return err
	}
	w := &worker{cfg: cfg, base: strings.TrimRight(cfg.Coordinator, "/"), hc: cfg.HTTP, clock: clock{base: time.Now(), skew: cfg.ClockSkew, rate: cfg.ClockDrift}}
	if w.hc == nil {
		w.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		defer w.hc.CloseIdleConnections()
	}
	// Reach the coordinator (it may start after its workers), then measure.
	deadline := time.Now().Add(cfg.ConnectTimeout)
	for tries := 0; ; tries++ {
		_, _, err := w.sample(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *statusError
		var nc *NotCoordinatorError
		switch {
		case errors.As(err, &se) && (se.code == http.StatusNotFound || se.code == http.StatusMethodNotAllowed):
			return &NotCoordinatorError{URL: cfg.Coordinator, Why: "answered " + se.status + " to " + pathTime}
		case errors.As(err, &nc):
			return nc
		}
		if tries == 0 {
			fmt.Fprintf(cfg.Log, "worker %s: waiting for the coordinator at %s (up to %s): %v\n", cfg.Name, cfg.Coordinator, cfg.ConnectTimeout, err)
		}
		if time.Now().After(deadline) {
			return &UnreachableError{URL: cfg.Coordinator, Err: err}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	off, rtt, err := w.offset(ctx, 8)
	if err != nil {
		return &UnreachableError{URL: cfg.Coordinator, Err: err}
	}
	var wel welcome
	code, err := w.post(ctx, pathRegister, hello{Name: cfg.Name, Version: cfg.Version, Started: time.Now(), OffsetNs: off, RTTNs: rtt}, &wel)
	switch {
	case err != nil:
		return &UnreachableError{URL: cfg.Coordinator, Err: err}
	case code != http.StatusOK:
		return &RefusedError{Why: wel.Error}
	}
	w.index = wel.Index
	fmt.Fprintf(cfg.Log, "worker %s: registered with %s as %d of %d (clock offset %s, RTT %s)\n", cfg.Name, cfg.Coordinator, wel.Index, wel.Workers, fmtNs(off), fmtRTT(rtt))
	return w.control(ctx)
}

// control reads the control stream and runs its jobs one at a time. The
// stream outlives ctx: interrupted, the worker sends the job's last
// records and says goodbye before it closes the stream, so that the
// coordinator takes them and records an interruption, not a dropped
// connection.
func (w *worker) control(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streamCtx, closeStream := context.WithCancel(context.WithoutCancel(ctx))
	defer closeStream()
	req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, w.base+pathControl+"?w="+strconv.Itoa(w.index), nil)
	resp, err := w.hc.Do(req)
	if err != nil {
		return w.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &UnreachableError{URL: w.cfg.Coordinator, Err: fmt.Errorf("control stream: %s", resp.Status)}
	}
	lines := make(chan message)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		for {
			b, err := br.ReadBytes('\n')
			if err != nil {
				readErr <- err
				return
			}
			var m message
			if err := json.Unmarshal(b, &m); err != nil {
				readErr <- fmt.Errorf("control stream: %w", err)
				return
			}
			select {
			case lines <- m:
			case <-streamCtx.Done():
				return
			}
		}
	}()
	var cur *running
	jobDone := make(chan error, 1)
	for {
		select {
		case <-ctx.Done():
			if cur == nil {
				return w.leave(ctx, nil, nil)
			}
			cur.cancel()
			return w.leave(ctx, cur, <-jobDone)
		case err := <-readErr:
			if cur != nil {
				cur.cancel()
				<-jobDone
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the control stream ended before the coordinator said it was done (stopped or killed)")
			}
			return w.unreachable(ctx, err)
		case err := <-jobDone:
			if ctx.Err() != nil { // it ended because this worker was interrupted
				return w.leave(ctx, cur, err)
			}
			cur = nil
			var ue *UnreachableError
			if errors.As(err, &ue) {
				return err
			}
		case m := <-lines:
			switch {
			case m.Done:
				if cur != nil {
					cur.cancel()
					<-jobDone
				}
				fmt.Fprintf(w.cfg.Log, "worker %s: the coordinator has no more work\n", w.cfg.Name)
				return nil
			case m.Job != nil:
				if cur != nil {
					cur.cancel()
					<-jobDone
				}
				cur = w.start(ctx, m.Job, jobDone)
			case m.Cmd != "" && cur != nil && cur.id == m.ID:
				cur.command(m.Cmd)
			}
		}
	}
}

// unreachable is err as an *UnreachableError, or ctx's error once ctx ended.
func (w *worker) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &UnreachableError{URL: w.cfg.Coordinator, Err: err}
}

// leave ends an interrupted worker: the job under way (nil: none) ended
// with err after sending its last records, or failing to; then the
// coordinator is told.
func (w *worker) leave(ctx context.Context, job *running, err error) error {
	ie := &InterruptedError{}
	if job != nil {
		ie.Job, ie.Cancelled = true, job.cancelledSent.Load()
		if !errors.Is(err, context.Canceled) {
			ie.Err = err // nil, or why its last records did not go out
		}
	}
	w.bye(context.WithoutCancel(ctx))
	return ie
}

// bye tells the coordinator this worker leaves because it was interrupted
// (after the last records of a job under way): best effort, 2 s.
func (w *worker) bye(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.base+pathBye+"?w="+strconv.Itoa(w.index), nil)
	if resp, err := w.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// running is a job under way.
type running struct {
	id        int
	cancel    context.CancelFunc
	stopped   atomic.Bool
	cancelled atomic.Bool // by the coordinator
	open      atomic.Pointer[loadgen.Open]
	// interruptedNs is when the worker's own interruption (its parent
	// context ending, not the coordinator's cancel) reached the job, ns
	// since the run's origin; 0 until then. cancelledSent counts the
	// requests in flight it cancelled.
	interruptedNs atomic.Int64
	cancelledSent atomic.Int64
}

// interrupted reports whether the job was cut by the worker's own
// interruption (parent ended, the coordinator did not cancel), noting
// when at first sight: ns since the origin, at least 1.
func (r *running) interrupted(parent context.Context, origin time.Time) (int64, bool) {
	if parent.Err() == nil || r.cancelled.Load() {
		return 0, false
	}
	r.interruptedNs.CompareAndSwap(0, max(int64(time.Since(origin)), 1))
	return r.interruptedNs.Load(), true
}

func (r *running) command(cmd string) {
	switch cmd {
	case cmdStop:
		r.stopped.Store(true)
		if o := r.open.Load(); o != nil {
			o.Stop()
		}
	case cmdCancel:
		r.cancelled.Store(true)
		r.cancel()
	}
}

// start runs j on its own goroutine; its end goes to done.
func (w *worker) start(parent context.Context, j *job, done chan<- error) *running {
	ctx, cancel := context.WithCancel(parent)
	r := &running{id: j.ID, cancel: cancel}
	go func() {
		err := w.run(parent, ctx, j, r)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(w.cfg.Log, "worker %s: run %s: %v\n", w.cfg.Name, j.Run, err)
		}
		done <- err
	}()
	return r
}

// run sends j's arrivals with the load generator and streams the records.
// parent is the worker's own context: when it ends (Ctrl-C on the
// worker), the requests in flight are cancelled and their records say so
// (record.CauseWorkerInterrupted), and the last batch tells the
// coordinator.
func (w *worker) run(parent, ctx context.Context, j *job, r *running) error {
	off, rtt, err := w.offset(ctx, 5)
	if err != nil {
		return w.unreachable(ctx, err)
	}
	q := "?w=" + strconv.Itoa(j.Index) + "&job=" + strconv.Itoa(j.ID)
	out := newBatcher(w, q, w.cfg.FlushRecords)
	fail := func(err error) error {
		out.close(ctx, err.Error())
		return err
	}
	// The run's origin on this worker's clock.
	origin := w.clock.time(j.OriginNs + off)
	cc := j.Client
	cc.APIKey, cc.Headers = w.cfg.APIKey, w.cfg.Headers
	client, err := openai.New(cc, origin)
	if err != nil {
		return fail(err)
	}
	defer client.CloseIdle()
	labels, err := workload.New(j.Workload)
	if err != nil {
		return fail(err)
	}
	lcfg := loadgen.Config{MaxInFlight: j.MaxInFlight, Spin: j.Spin, RunID: j.Run, Profile: j.Profile, ProfileOf: labels.ProfileName}
	stopWatch := context.AfterFunc(parent, func() { r.interrupted(parent, origin) })
	defer stopWatch()
	gen := loadgen.NewOpen(lcfg, origin, client, requestBuilder(j.Workload), w.recordSink(parent, j, r, origin, out))
	r.open.Store(gen)
	if r.stopped.Load() {
		gen.Stop()
	}
	// How long before the origin this share is ready to go: the
	// coordinator's lead less the job's delivery and this setup.
	ready := j.OriginNs + off - w.clock.now()
	fmt.Fprintf(w.cfg.Log, "worker %s: run %s: %d arrivals (clock offset %s, RTT %s), ready %.1f ms before the origin\n",
		w.cfg.Name, j.Run, len(j.Arrivals), fmtNs(off), fmtRTT(rtt), float64(ready)/1e6)

	runErr, lostErr := w.runWithBeats(ctx, j, q, gen, out, beat{JobOffsetNs: off, JobRTTNs: rtt, ReadyBeforeNs: ready})
	if lostErr != nil {
		return w.unreachable(ctx, lostErr)
	}
	end := ""
	if at, ok := r.interrupted(parent, origin); ok {
		end = "&stop=" + stopInterrupted + "&at=" + strconv.FormatInt(at, 10)
	}
	if err := out.finish(context.WithoutCancel(ctx), end); err != nil {
		if end != "" {
			return err // the worker's own Ctrl-C: control says what became of the records
		}
		return w.unreachable(ctx, err)
	}
	fmt.Fprintf(w.cfg.Log, "worker %s: run %s: %d records sent\n", w.cfg.Name, j.Run, out.sent)
	return runErr
}

// requestBuilder is the generator's build function for a job's
// workload (validated by the caller): each arrival's request, made by a
// generator from a pool, as a generator is not safe for concurrent use.
func requestBuilder(cfg workload.Config) func(*schedule.Arrival) workload.Request {
	pool := sync.Pool{New: func() any {
		g, _ := workload.New(cfg) // validated by the caller
		return g
	}}
	return func(a *schedule.Arrival) workload.Request {
		g := pool.Get().(*workload.Generator)
		req := g.Generate(*a)
		pool.Put(g)
		return req
	}
}

// recordSink is the generator's sink for job j: each record, marked
// with the worker's shard (and, cancelled by this worker's interruption,
// with why), goes to the batches.
func (w *worker) recordSink(parent context.Context, j *job, r *running, origin time.Time, out *batcher) func(*record.Record) {
	return func(rec *record.Record) {
		rec.Shard = j.Index
		if at, ok := r.interrupted(parent, origin); ok && rec.Outcome == record.Cancelled {
			rec.Cause = record.CauseWorkerInterrupted
			rec.Error = endText(w.cfg.Name, true, fmt.Sprintf("%.1f s", float64(at)/1e9), whyInterrupted) + " (" + rec.Error + ")"
			r.cancelledSent.Add(1)
		}
		out.add(rec)
	}
}

// runWithBeats runs the generator over the job's arrivals with the
// heartbeats (each with b: the job's offset, RTT and readiness) and the
// batches' loop beside it; when either loses the coordinator, the run is
// cancelled. It returns the run's error, and that loss (nil when none).
func (w *worker) runWithBeats(ctx context.Context, j *job, q string, gen *loadgen.Open, out *batcher, b beat) (runErr, lostErr error) {
	// Heartbeats, each a further offset sample; and the batches.
	beatCtx, stopBeats := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	lost := make(chan error, 2)
	go func() {
		defer bg.Done()
		w.beats(beatCtx, q, gen, b, lost)
	}()
	go func() {
		defer bg.Done()
		if err := out.loop(beatCtx); err != nil {
			lost <- err
		}
	}()
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go func() {
		select {
		case err := <-lost:
			fmt.Fprintf(w.cfg.Log, "worker %s: run %s: %v; cancelling\n", w.cfg.Name, j.Run, err)
			lost <- err
			cancelRun()
		case <-runCtx.Done():
		}
	}()
	runErr = gen.Run(runCtx, j.arrivals())
	stopBeats()
	bg.Wait()
	select {
	case err := <-lost:
		return runErr, err
	default:
	}
	return runErr, nil
}

// beats sends a heartbeat every second until ctx ends, each with a fresh
// offset sample (the best of five round trips, taken just before); a
// coordinator silent for LostAfter, or one that closed this share, ends
// the job.
func (w *worker) beats(ctx context.Context, q string, gen *loadgen.Open, job beat, lost chan<- error) {
	t := time.NewTicker(DefaultBeatEvery)
	defer t.Stop()
	last := time.Now()
	first := true
	for {
		b := job // the job's offset, RTT and readiness
		b.InFlight = gen.Counters.InFlight.Load()
		b.Offered, b.Sent = gen.Counters.Offered.Load(), gen.Counters.Sent.Load()
		if !first { // the job's own measurement was just taken
			b.SampleOffsetNs, b.SampleRTTNs, _ = w.offset(ctx, 5)
		}
		first = false
		code, err := w.post(ctx, pathBeat+q, b, &clockReading{})
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && code == http.StatusGone:
			lost <- errors.New("the coordinator closed this worker's share of the run (it counted the worker lost)")
			return
		case err == nil && code == http.StatusOK:
			last = time.Now()
		case time.Since(last) > w.cfg.LostAfter:
			if err == nil {
				err = fmt.Errorf("heartbeat: status %d", code)
			}
			lost <- fmt.Errorf("no answer for %s: %w", w.cfg.LostAfter, err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample is one offset sample: (t0+t1)/2 − s and the round trip.
func (w *worker) sample(ctx context.Context) (offset, rtt int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.base+pathTime, nil)
	t0 := w.clock.now()
	resp, err := w.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return 0, 0, &statusError{what: "clock", status: resp.Status, code: resp.StatusCode}
	}
	var cr clockReading
	err = json.NewDecoder(resp.Body).Decode(&cr)
	t1 := w.clock.now()
	if err != nil || cr.Now == 0 {
		return 0, 0, &NotCoordinatorError{URL: w.cfg.Coordinator, Why: "answered " + pathTime + " without a clock reading"}
	}
	return (t0+t1)/2 - cr.Now, t1 - t0, nil
}

// offset is the sample with the smallest round trip of n.
func (w *worker) offset(ctx context.Context, n int) (offset, rtt int64, err error) {
	rtt = -1
	for range n {
		o, r, err := w.sample(ctx)
		if err != nil {
			return 0, 0, err
		}
		if rtt < 0 || r < rtt {
			offset, rtt = o, r
		}
	}
	return offset, rtt, nil
}

// post sends v as JSON and decodes the answer into out (when it is JSON).
func (w *worker) post(ctx context.Context, path string, v, out any) (int, error) {
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		json.NewDecoder(resp.Body).Decode(out)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, nil
}

// batcher collects finished records and sends them in gzip batches.
type batcher struct {
	w     *worker
	q     string
	limit int
	mu    sync.Mutex
	buf   []byte
	n     int
	full  chan struct{}
	sent  int64
	send  sync.Mutex // one batch at a time, in order
}

func newBatcher(w *worker, q string, limit int) *batcher {
	return &batcher{w: w, q: q, limit: limit, full: make(chan struct{}, 1)}
}

func (b *batcher) add(r *record.Record) {
	b.mu.Lock()
	b.buf = r.AppendJSON(b.buf)
	b.buf = append(b.buf, '\n')
	b.n++
	full := b.n >= b.limit
	b.mu.Unlock()
	if full {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

// loop sends a batch every FlushEvery or when one is full, until ctx ends.
func (b *batcher) loop(ctx context.Context) error {
	t := time.NewTicker(b.w.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-b.full:
		}
		// A batch under way is sent whole even when ctx ends meanwhile.
		if err := b.flush(context.WithoutCancel(ctx), false, ""); err != nil {
			return err
		}
	}
}

// close sends what is left with final=1 (and the failure, if any).
func (b *batcher) close(ctx context.Context, failure string) error {
	q := ""
	if failure != "" {
		q = "&error=" + url.QueryEscape(failure)
	}
	return b.flush(ctx, true, q)
}

// finish sends what is left with final=1 and end (a query suffix saying
// how the share ended, "" when it ran its course).
func (b *batcher) finish(ctx context.Context, end string) error {
	return b.flush(ctx, true, end)
}

// flush sends the records collected so far (final: the last, with extra
// appended to the query); a failed send is retried until LostAfter has
// passed, so no record is lost to a brief glitch.
func (b *batcher) flush(ctx context.Context, final bool, extra string) error {
	b.send.Lock()
	defer b.send.Unlock()
	b.mu.Lock()
	lines, n := b.buf, b.n
	b.buf, b.n = nil, 0
	b.mu.Unlock()
	if n == 0 && !final {
		return nil
	}
	var z bytes.Buffer
	gz := gzip.NewWriter(&z)
	gz.Write(lines)
	gz.Close()
	q := b.q
	if final {
		q += "&final=1" + extra
	}
	start := time.Now()
	for {
		err := b.post(ctx, q, z.Bytes())
		if err == nil {
			b.sent += int64(n)
			return nil
		}
		if errors.Is(err, errGone) || time.Since(start) > b.w.cfg.LostAfter || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var errGone = errors.New("the coordinator closed this worker's share of the run (it counted the worker lost)")

func (b *batcher) post(ctx context.Context, q string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.w.base+pathRecords+q, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := b.w.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusOK:
		return nil
	case http.StatusGone:
		return errGone
	}
	return fmt.Errorf("records: status %s", resp.Status)
}
