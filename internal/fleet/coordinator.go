package fleet

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
)

// Config tunes a Coordinator. The zero value means the defaults.
type Config struct {
	Version   string        // this surge's version; a worker of another is refused
	LostAfter time.Duration // silence after which a worker is lost; 0 = DefaultLostAfter
	Log       io.Writer     // registrations, refusals, each run's line per worker (nil: none)
}

// Coordinator serves the fleet protocol and drives runs on its workers
// (run.Fleet). Make it with Listen or Serve; Close it when the command ends.
type Coordinator struct {
	cfg   Config
	clock clock
	ln    net.Listener
	srv   *http.Server

	mu      sync.Mutex
	workers []*member
	want    int           // how many workers the command waits for
	joined  chan struct{} // closed and replaced at each registration
	cur     *drive        // the run under way
	jobs    int           // job ids handed out
	done    bool          // Close was called
}

// member is a registered worker.
type member struct {
	index            int
	name, version    string
	started          time.Time
	offsetNs, rttNs  int64
	out              chan message // to its control stream
	lost             bool
	interrupted      bool // lost because it was interrupted on its machine and said so
	lostWhy          string
	lostAt           time.Time
	streaming        bool
	streamEnded      chan struct{}
	closeStreamEnded sync.Once
}

var _ run.Fleet = (*Coordinator)(nil)

// Listen starts a coordinator on addr (host:port).
func Listen(addr string, want int, cfg Config) (*Coordinator, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fleet: listen on %s: %w", addr, err)
	}
	return Serve(ln, want, cfg), nil
}

// Serve starts a coordinator on ln, to wait for want workers.
func Serve(ln net.Listener, want int, cfg Config) *Coordinator {
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = DefaultLostAfter
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	c := &Coordinator{cfg: cfg, clock: newClock(0), ln: ln, want: want, joined: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathTime, c.serveTime)
	mux.HandleFunc("POST "+pathRegister, c.serveRegister)
	mux.HandleFunc("GET "+pathControl, c.serveControl)
	mux.HandleFunc("POST "+pathBeat, c.serveBeat)
	mux.HandleFunc("POST "+pathRecords, c.serveRecords)
	mux.HandleFunc("POST "+pathBye, c.serveBye)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go c.srv.Serve(ln)
	return c
}

// URL is where workers reach the coordinator (its listening address).
func (c *Coordinator) URL() string { return "http://" + c.ln.Addr().String() }

// Wait returns once the coordinator's workers have registered and opened
// their control streams, or fails after timeout naming how many came.
func (c *Coordinator) Wait(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n, names, ch := 0, []string{}, c.joined
		for _, m := range c.workers {
			if m.streaming && !m.lost {
				n++
				names = append(names, m.name)
			}
		}
		c.mu.Unlock()
		if n >= c.want {
			return nil
		}
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("fleet: interrupted while waiting for workers: %s registered", registered(n, c.want, names))
		case <-deadline.C:
			return fmt.Errorf("fleet: only %s registered within %s; start the others with: surge worker --coordinator %s", registered(n, c.want, names), timeout, c.URL())
		}
	}
}

// registered says how many of want workers came, and which: "1 of 2
// workers (w0)", "0 of 1 worker".
func registered(n, want int, names []string) string {
	s := fmt.Sprintf("%d of %d %s", n, want, Plural(want, "worker", "workers"))
	if len(names) > 0 {
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Close tells every worker there is no more work and stops serving.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.done = true
	ws := slices.Clone(c.workers)
	c.mu.Unlock()
	for _, m := range ws {
		select {
		case m.out <- message{Done: true}:
		default:
		}
	}
	// Let the control streams deliver "done" (at most a second).
	wait := time.After(time.Second)
	for _, m := range ws {
		select {
		case <-m.streamEnded:
		case <-wait:
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.srv.Shutdown(ctx); err != nil {
		return c.srv.Close()
	}
	return nil
}

func (c *Coordinator) serveTime(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, clockReading{Now: c.clock.now()})
}

func (c *Coordinator) serveRegister(w http.ResponseWriter, r *http.Request) {
	var h hello
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&h); err != nil || h.Name == "" {
		writeJSON(w, http.StatusBadRequest, welcome{Error: "registration: a JSON body with a name is required"})
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	refuse := func(why string) {
		fmt.Fprintf(c.cfg.Log, "coordinator: worker %s refused: %s\n", h.Name, why)
		writeJSON(w, http.StatusConflict, welcome{Error: why})
	}
	switch {
	case h.Version != c.cfg.Version:
		refuse(fmt.Sprintf("worker %s runs surge %s, the coordinator surge %s: run the same version everywhere", h.Name, h.Version, c.cfg.Version))
		return
	case c.done:
		refuse("the coordinator is closing")
		return
	}
	index := len(c.workers) // a new index, or a lost worker's to take over
	for i, m := range c.workers {
		if m.name == h.Name && !m.lost {
			refuse(fmt.Sprintf("a worker named %s is registered already: give each worker its own --name", h.Name))
			return
		}
		if m.lost && index == len(c.workers) {
			index = i
		}
	}
	if index >= c.want {
		refuse(fmt.Sprintf("the coordinator has its %d workers already", c.want))
		return
	}
	m := &member{index: index, name: h.Name, version: h.Version, started: h.Started, offsetNs: h.OffsetNs, rttNs: h.RTTNs,
		out: make(chan message, 16), streamEnded: make(chan struct{})}
	what := fmt.Sprintf("%d of %d", index+1, c.want)
	if index < len(c.workers) {
		// It takes the lost worker's share from the next run on (a run
		// under way keeps its generator_drop records for that share).
		what = fmt.Sprintf("in place of %s, lost", c.workers[index].name)
		c.workers[index] = m
	} else {
		c.workers = append(c.workers, m)
	}
	fmt.Fprintf(c.cfg.Log, "coordinator: worker %s registered (%s, surge %s, clock offset %s, RTT %s)\n",
		m.name, what, m.version, fmtNs(m.offsetNs), fmtRTT(m.rttNs))
	writeJSON(w, http.StatusOK, welcome{Index: m.index, Workers: c.want})
}

// member returns worker i of the request's "w" parameter, or nil.
func (c *Coordinator) member(r *http.Request) *member {
	i, err := strconv.Atoi(r.URL.Query().Get("w"))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || i < 0 || i >= len(c.workers) {
		return nil
	}
	return c.workers[i]
}

// serveControl is a worker's control stream: jobs and commands down, pings
// every second; when it ends before "done" the worker is lost.
func (c *Coordinator) serveControl(w http.ResponseWriter, r *http.Request) {
	m := c.member(r)
	if m == nil {
		http.Error(w, "unknown worker", http.StatusNotFound)
		return
	}
	defer m.closeStreamEnded.Do(func() { close(m.streamEnded) })
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(msg message) bool {
		if enc.Encode(msg) != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	if !send(message{Ping: true}) {
		c.lose(m, "connection dropped")
		return
	}
	c.mu.Lock()
	m.streaming = true
	close(c.joined)
	c.joined = make(chan struct{})
	c.mu.Unlock()
	ping := time.NewTicker(DefaultBeatEvery)
	defer ping.Stop()
	for {
		select {
		case msg := <-m.out:
			if !send(msg) {
				c.lose(m, "connection dropped")
				return
			}
			if msg.Done {
				return
			}
		case <-ping.C:
			if !send(message{Ping: true}) {
				c.lose(m, "connection dropped")
				return
			}
		case <-r.Context().Done():
			c.lose(m, "connection dropped")
			return
		}
	}
}

// lose marks m lost (for good) and its share of the run under way.
func (c *Coordinator) lose(m *member, cause string) {
	if !c.gone(m, false, cause) {
		return
	}
	c.mu.Lock()
	d := c.cur
	c.mu.Unlock()
	if d != nil {
		if s := d.share(m.index); s != nil {
			d.lose(s, cause)
			return
		}
	}
	fmt.Fprintf(c.cfg.Log, "coordinator: worker %s lost between runs: %s\n", m.name, cause)
}

// gone marks m lost for why (interrupted: it said it was interrupted);
// false when it was already, or the coordinator is closing.
func (c *Coordinator) gone(m *member, interrupted bool, why string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.lost || c.done {
		return false
	}
	m.lost, m.interrupted, m.lostAt, m.lostWhy = true, interrupted, time.Now(), why
	return true
}

// serveBye is a worker leaving because it was interrupted on its machine
// (Ctrl-C or SIGTERM there), after its last records: it is gone for good,
// as "interrupted" rather than a dropped connection, and a share of the
// run under way that it did not close yet is closed so.
func (c *Coordinator) serveBye(w http.ResponseWriter, r *http.Request) {
	m := c.member(r)
	if m == nil {
		http.Error(w, "unknown worker", http.StatusNotFound)
		return
	}
	if c.gone(m, true, whyInterrupted) {
		c.mu.Lock()
		d := c.cur
		c.mu.Unlock()
		if s := d.shareOf(m); s == nil || !d.interrupt(s, int64(time.Since(d.j.Origin))) {
			fmt.Fprintf(c.cfg.Log, "coordinator: worker %s interrupted between runs: %s\n", m.name, whyInterrupted)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// job returns the run under way and worker i's share of it, for a request
// naming them (w, job); nil when the job is over or the worker lost.
func (c *Coordinator) job(r *http.Request) (*drive, *share) {
	q := r.URL.Query()
	i, err1 := strconv.Atoi(q.Get("w"))
	id, err2 := strconv.Atoi(q.Get("job"))
	c.mu.Lock()
	d := c.cur
	c.mu.Unlock()
	if err1 != nil || err2 != nil || d == nil || d.id != id {
		return nil, nil
	}
	return d, d.share(i)
}

func (c *Coordinator) serveBeat(w http.ResponseWriter, r *http.Request) {
	var b beat
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b); err != nil {
		http.Error(w, "bad beat", http.StatusBadRequest)
		return
	}
	d, s := c.job(r)
	if s == nil {
		http.Error(w, "no such job", http.StatusGone)
		return
	}
	if !d.beat(s, b) {
		http.Error(w, "this worker's share of the run is closed: "+s.why, http.StatusGone)
		return
	}
	writeJSON(w, http.StatusOK, clockReading{Now: c.clock.now()})
}

func (c *Coordinator) serveRecords(w http.ResponseWriter, r *http.Request) {
	d, s := c.job(r)
	if s == nil {
		http.Error(w, "no such job", http.StatusGone)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}
	q := r.URL.Query()
	end := workerEnd{failure: q.Get("error")}
	if q.Get("stop") == stopInterrupted {
		end.interrupted = true
		end.atNs, _ = strconv.ParseInt(q.Get("at"), 10, 64)
	}
	if err := d.receive(s, body, q.Get("final") == "1", end); err != nil {
		if errors.Is(err, errClosed) {
			http.Error(w, "this worker's share of the run is closed: "+s.why, http.StatusGone)
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Lead is how far ahead of now a run of that many arrivals sets its origin
// (run.Fleet): long enough for every worker to receive its job (half a
// round trip, plus encoding, sending and decoding its arrivals: about 2 µs
// each), measure its clock offset again (five round trips) and build its
// load generator (250 ms allowed: ~10 ms measured on loopback, ten times
// that under -race or on a busy machine) before the first arrival is due. Ten of
// the slowest worker's registration RTTs cover the round trips twice over;
// at most MaxLead.
func (c *Coordinator) Lead(arrivals int) time.Duration {
	c.mu.Lock()
	var rtt time.Duration
	for _, m := range c.workers {
		if !m.lost {
			rtt = max(rtt, time.Duration(m.rttNs))
		}
	}
	c.mu.Unlock()
	return leadFor(rtt, arrivals)
}

func leadFor(rtt time.Duration, arrivals int) time.Duration {
	return min(10*rtt+time.Duration(arrivals)*2*time.Microsecond+250*time.Millisecond, MaxLead)
}

// Drive prepares one run on the registered workers (run.Fleet).
func (c *Coordinator) Drive(j run.FleetJob, sink loadgen.Sink) run.FleetDriver {
	c.mu.Lock()
	c.jobs++
	id := c.jobs
	ws := slices.Clone(c.workers)
	c.mu.Unlock()
	n := c.want
	d := &drive{c: c, id: id, j: j, sink: sink, n: n, finished: make(chan struct{})}
	d.originNs = c.clock.at(j.Origin)
	for i := range n {
		s := &share{index: i, arrivals: schedule.Shard(j.Arrivals, i, n), lag: hdr.New(1, int64(time.Hour/time.Microsecond), 3)}
		s.reported, s.lastSeen = make([]bool, len(s.arrivals)), time.Now()
		if i < len(ws) {
			s.m = ws[i]
		}
		d.shares = append(d.shares, s)
	}
	return d
}

// drive is one run on the fleet.
type drive struct {
	c        *Coordinator
	id       int
	j        run.FleetJob
	sink     loadgen.Sink
	n        int
	originNs int64
	leadNs   int64 // origin − the moment the jobs went out
	shares   []*share
	counters loadgen.Counters

	stopAt   atomic.Int64 // ns since origin when stopped or cancelled (0: not)
	left     atomic.Int64 // shares not finished
	finished chan struct{}
	once     sync.Once
}

// share is worker i's part of a run.
type share struct {
	index    int
	m        *member
	arrivals []schedule.Arrival // its arrivals, in Seq order
	mu       sync.Mutex
	reported []bool // by position in arrivals
	records  int64  // records received from the worker
	done     bool   // final batch received, or lost
	lost     bool
	// interrupted: lost because the worker was interrupted on its machine
	// and said so (its final batch or a bye), not a dropped connection.
	interrupted bool
	why         string
	lastSeen    time.Time
	inFlight    int64
	// The share's live offered and sent counts: the larger of the
	// worker's heartbeat (requests due and sent so far) and the records
	// received (recOffered, recSent); liveOffered and liveSent are what
	// the drive's counters hold for it.
	beatOffered, beatSent, recOffered, recSent, liveOffered, liveSent int64
	// lostInFlight and lostUnsent count the arrivals without a record
	// when the worker was lost: due before it (cancelled records) and
	// after it (generator_drop records). For a worker interrupted on its
	// machine, lostInFlight counts the cancelled records it sent itself.
	lostInFlight, lostUnsent int64
	lag                      *hdr.Histogram // schedule lag, µs
	offsetNs                 int64          // the job's offset and its RTT
	rttNs                    int64
	driftNs                  int64
	readyNs                  int64 // how long before the origin the worker was ready
}

func (d *drive) share(i int) *share {
	if i < 0 || i >= len(d.shares) {
		return nil
	}
	return d.shares[i]
}

// shareOf is m's share of d (nil when d is nil or m has none).
func (d *drive) shareOf(m *member) *share {
	if d == nil {
		return nil
	}
	if s := d.share(m.index); s != nil && s.m == m {
		return s
	}
	return nil
}

// Counters are the run's live totals (run.FleetDriver).
func (d *drive) Counters() *loadgen.Counters { return &d.counters }

// Run hands every worker its job and waits for their last records
// (run.FleetDriver).
func (d *drive) Run(ctx context.Context) error {
	for _, a := range d.j.Arrivals {
		if a.Blocks != nil {
			return &run.ConfigError{Err: errors.New("--workers: a trace with shared prompt blocks (Mooncake hash_ids) cannot be split between workers yet; replay it from one process")}
		}
	}
	c := d.c
	c.mu.Lock()
	c.cur = d
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cur = nil
		c.mu.Unlock()
	}()
	d.left.Store(int64(len(d.shares)))
	d.leadNs = int64(time.Until(d.j.Origin))
	for _, s := range d.shares {
		if s.m == nil {
			d.lose(s, "never registered")
			continue
		}
		c.mu.Lock()
		lost, interrupted, why, at := s.m.lost, s.m.interrupted, s.m.lostWhy, s.m.lostAt
		c.mu.Unlock()
		if lost {
			d.loseAs(s, endText(s.m.name, interrupted, at.UTC().Format(time.TimeOnly)+", before this run", why), -1, interrupted)
			continue
		}
		jb := &job{ID: d.id, Index: s.index, Workers: d.n, Run: d.j.Run, OriginNs: d.originNs, Arrivals: wireArrivals(s.arrivals),
			Workload: d.j.Workload, Client: d.j.Client, MaxInFlight: workerCap(d.j.MaxInFlight, d.n, s.index), Spin: d.j.Spin, Profile: d.j.Profile}
		select {
		case s.m.out <- message{Job: jb}:
		default:
			d.lose(s, "its control stream is blocked")
		}
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	cancelled := false
	for {
		select {
		case <-d.finished:
			d.report()
			return ctx.Err()
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				d.command(cmdCancel)
			}
		case <-tick.C:
			for _, s := range d.shares {
				s.mu.Lock()
				silent := !s.done && time.Since(s.lastSeen) > c.cfg.LostAfter
				s.mu.Unlock()
				if silent {
					d.lose(s, "no heartbeat for "+c.cfg.LostAfter.String())
				}
			}
		}
	}
}

// Stop ends the schedule on every worker (run.FleetDriver).
func (d *drive) Stop() { d.command(cmdStop) }

func (d *drive) command(cmd string) {
	at := int64(time.Since(d.j.Origin))
	d.stopAt.CompareAndSwap(0, max(at, 1))
	for _, s := range d.shares {
		if s.m == nil {
			continue
		}
		select {
		case s.m.out <- message{Cmd: cmd, ID: d.id}:
		default:
		}
	}
}

// beat notes a heartbeat; false when the share is closed.
func (d *drive) beat(s *share, b beat) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.lastSeen = time.Now()
	d.counters.InFlight.Add(b.InFlight - s.inFlight)
	s.inFlight = b.InFlight
	s.beatOffered, s.beatSent = max(s.beatOffered, b.Offered), max(s.beatSent, b.Sent)
	d.syncLive(s)
	if b.JobRTTNs > 0 {
		s.offsetNs, s.rttNs, s.readyNs = b.JobOffsetNs, b.JobRTTNs, b.ReadyBeforeNs
	}
	// A sample is as good as its round trip (error ≤ RTT/2): those within
	// sampleTolerance count.
	if b.SampleRTTNs > 0 && s.rttNs > 0 && b.SampleRTTNs <= sampleTolerance(s.rttNs) {
		if dr := b.SampleOffsetNs - s.offsetNs; abs(dr) > abs(s.driftNs) {
			s.driftNs = dr
		}
	}
	return true
}

// sampleTolerance is the longest round trip of a heartbeat's offset sample
// that counts toward the drift, for a job whose offset was measured over
// jobRTT: twice it plus 5 ms (±2.5 ms at worst, on a busy machine).
func sampleTolerance(jobRTT int64) int64 { return 2*jobRTT + int64(5*time.Millisecond) }

// driftError bounds the error of a measured drift (a sample's offset less
// the job's, each off by at most half its round trip): for a clock that
// does not drift, the drift recorded is within ±driftError(jobRTT).
func driftError(jobRTT int64) int64 { return (sampleTolerance(jobRTT) + jobRTT) / 2 }

var errClosed = errors.New("fleet: share closed")

// workerEnd is how a worker's last batch of a job says its share ended
// early: a failure on its side (the text), or an interruption on its
// machine atNs after the origin.
type workerEnd struct {
	failure     string
	interrupted bool
	atNs        int64
}

// receive takes a batch of records from s's worker into the run's sink.
func (d *drive) receive(s *share, body io.Reader, final bool, end workerEnd) error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return errClosed
	}
	s.lastSeen = time.Now()
	err := record.Read(body, "records from worker "+s.m.name, func(r *record.Record) error {
		k, ok := slices.BinarySearchFunc(s.arrivals, r.Seq, func(a schedule.Arrival, seq int64) int { return int(a.Seq - seq) })
		if !ok || s.reported[k] {
			return nil // not its arrival, or sent twice: counted once
		}
		s.reported[k] = true
		s.records++
		r.Shard = s.index
		if r.Cause == record.CauseWorkerInterrupted {
			s.lostInFlight++ // its own request in flight, cancelled by its interruption
		}
		d.deliver(s, r)
		return nil
	})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	switch {
	case end.interrupted && final:
		// Its last records are in: it leaves, interrupted on its machine.
		if s.m != nil {
			d.c.gone(s.m, true, whyInterrupted)
		}
		d.interrupt(s, end.atNs)
	case end.failure != "":
		d.lose(s, end.failure)
	case final && d.unsent(s) > 0:
		// A worker that ends its share early (interrupted on its own
		// machine) leaves arrivals without records: recorded as drops.
		d.lose(s, fmt.Sprintf("its run ended with %d arrivals unsent", d.unsent(s)))
	case final:
		d.finish(s, "")
	}
	return nil
}

// unsent counts s's arrivals without a record that were due before the
// schedule was stopped (all of them if it was not).
func (d *drive) unsent(s *share) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	stop := time.Duration(d.stopAt.Load())
	n := 0
	for k := range s.arrivals {
		if !s.reported[k] && (stop == 0 || s.arrivals[k].At <= stop) {
			n++
		}
	}
	return n
}

// deliver judges r and hands it to the sink (s.mu held).
func (d *drive) deliver(s *share, r *record.Record) {
	if d.j.Judge != nil && r.Outcome != record.GeneratorDrop {
		r.Good = d.j.Judge(r)
	}
	c := &d.counters
	s.recOffered++
	switch {
	case r.Outcome == record.GeneratorDrop:
		c.Dropped.Add(1)
	default:
		s.recSent++
		c.Completed.Add(1)
	}
	d.syncLive(s)
	switch r.Outcome {
	case record.OK:
		c.OK.Add(1)
	case record.Cancelled:
		c.Cancelled.Add(1)
	}
	if r.Good {
		c.Good.Add(1)
	}
	if lag := r.Lag(); lag != record.None {
		s.lag.RecordValue(max(lag/1000, 1))
		for cur := c.LagMaxNs.Load(); lag > cur && !c.LagMaxNs.CompareAndSwap(cur, lag); cur = c.LagMaxNs.Load() {
		}
	}
	d.sink(r)
}

// syncLive brings the live offered and sent counts up to s's (s.mu held):
// from its heartbeats while requests are in flight, from its records once
// they are back.
func (d *drive) syncLive(s *share) {
	if o := max(s.beatOffered, s.recOffered); o > s.liveOffered {
		d.counters.Offered.Add(o - s.liveOffered)
		s.liveOffered = o
	}
	if n := max(s.beatSent, s.recSent); n > s.liveSent {
		d.counters.Sent.Add(n - s.liveSent)
		s.liveSent = n
	}
}

// lose closes s because its worker was lost. Its arrivals without a
// record that were due before the loss (when the connection dropped; when
// the coordinator last heard from it, for a silent worker) were sent or
// being sent: cancelled records, "lost with the request in flight". Those
// due after it (up to the moment the schedule was stopped, if it was) were
// never sent: generator_drop records. Both name the worker, when and why.
func (d *drive) lose(s *share, cause string) {
	name := "w" + strconv.Itoa(s.index)
	if s.m != nil {
		name = s.m.name
	}
	s.mu.Lock()
	cut := time.Now()
	if strings.HasPrefix(cause, "no heartbeat") || strings.HasPrefix(cause, "its control stream") {
		cut = s.lastSeen
	}
	s.mu.Unlock()
	if strings.HasPrefix(cause, "its run ended") || cause == "never registered" {
		cut = d.j.Origin.Add(-1) // it said it was done, or never began: nothing in flight (not even an arrival at 0)
	}
	d.loseAs(s, endText(name, false, fmt.Sprintf("%.1f s", time.Since(d.j.Origin).Seconds()), cause), cut.Sub(d.j.Origin), false)
}

// interrupt closes s because its worker was interrupted on its machine at
// atNs after the origin and said so, after its last records: its requests
// in flight came back as its own cancelled records, so every arrival
// without a record was never sent (generator_drop), naming the
// interruption. False when s was closed already (its share was done).
func (d *drive) interrupt(s *share, atNs int64) bool {
	name := "w" + strconv.Itoa(s.index)
	if s.m != nil {
		name = s.m.name
	}
	return d.loseAs(s, endText(name, true, fmt.Sprintf("%.1f s", float64(atNs)/1e9), whyInterrupted), -1, true)
}

// whyInterrupted is why a worker that said it was interrupted left.
const whyInterrupted = "Ctrl-C or SIGTERM on the worker"

// endText is the error of a record a lost or interrupted worker left, and
// the manifest's LostWhy: "worker NAME lost at WHEN: WHY", "worker NAME
// interrupted at WHEN: WHY". It is for people: the analysis reads the
// record's Cause.
func endText(name string, interrupted bool, when, why string) string {
	verb := " lost at "
	if interrupted {
		verb = " interrupted at "
	}
	return "worker " + name + verb + when + ": " + why
}

// loseAs closes s as lost (or interrupted) for why: its arrivals without
// a record due at or before cut are cancelled (in flight when it was
// lost), the rest generator_drop (never sent); each carries the cause.
// False when s was closed already.
func (d *drive) loseAs(s *share, why string, cut time.Duration, interrupted bool) bool {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return false
	}
	cause := record.CauseWorkerLost
	if interrupted {
		cause = record.CauseWorkerInterrupted
	}
	s.lost, s.interrupted, s.why = true, interrupted, why
	stop := time.Duration(d.stopAt.Load())
	for k := range s.arrivals {
		a := &s.arrivals[k]
		if s.reported[k] || (stop > 0 && a.At > stop) {
			continue
		}
		s.reported[k] = true
		rec := record.New(requestID(d.j.Run, a.Seq), a.Seq, a.Phase, int64(a.At))
		rec.Profile = d.j.Profile
		if d.j.ProfileOf != nil {
			rec.Profile = d.j.ProfileOf(a)
		}
		rec.Shard, rec.Cause = s.index, cause
		if a.At <= cut {
			rec.Outcome, rec.Error = record.Cancelled, why+" (the worker was lost with the request in flight; its answer never came back)"
			s.lostInFlight++
		} else {
			rec.Outcome, rec.Error = record.GeneratorDrop, why+" (never sent)"
			s.lostUnsent++
		}
		d.deliver(s, &rec)
	}
	inFlight, unsent := s.lostInFlight, s.lostUnsent
	s.mu.Unlock()
	if cause == record.CauseWorkerInterrupted {
		fmt.Fprintf(d.c.cfg.Log, "coordinator: %s; it cancelled its %d requests in flight and sent their records (cancelled), %d arrivals never sent (recorded as generator_drop)\n", why, inFlight, unsent)
	} else {
		fmt.Fprintf(d.c.cfg.Log, "coordinator: %s; %d of its arrivals were in flight (recorded as cancelled), %d never sent (recorded as generator_drop)\n", why, inFlight, unsent)
	}
	d.finish(s, why)
	return true
}

// finish closes s; the run ends when every share is closed.
func (d *drive) finish(s *share, why string) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	s.done = true
	d.counters.InFlight.Add(-s.inFlight)
	s.inFlight = 0
	s.mu.Unlock()
	if d.left.Add(-1) == 0 {
		d.once.Do(func() { close(d.finished) })
	}
}

// Distribution is what the manifest records of the workers (run.FleetDriver).
func (d *drive) Distribution() *record.Distribution {
	dist := &record.Distribution{Mode: record.DistCoordinator, Generators: d.n, Shard: -1, LeadNs: d.leadNs}
	for _, s := range d.shares {
		s.mu.Lock()
		g := record.Generator{Index: s.index, Arrivals: int64(len(s.arrivals)), Records: s.records, Lost: s.lost, LostWhy: s.why, Interrupted: s.interrupted,
			ClockOffsetNs: s.offsetNs, RTTNs: s.rttNs, OffsetDriftNs: s.driftNs, ReadyBeforeNs: s.readyNs,
			LostInFlight: s.lostInFlight, LostUnsent: s.lostUnsent, Due: int64(len(s.arrivals))}
		if stop := time.Duration(d.stopAt.Load()); stop > 0 {
			g.Due = 0
			for k := range s.arrivals {
				if s.reported[k] || s.arrivals[k].At <= stop {
					g.Due++
				}
			}
		}
		if s.lag.TotalCount() > 0 {
			g.LagP99Ms = float64(s.lag.ValueAtQuantile(99)) / 1000
		}
		if m := s.m; m != nil {
			g.Name, g.Version, g.Started = m.name, m.version, m.started
			if g.RTTNs == 0 {
				g.ClockOffsetNs, g.RTTNs = m.offsetNs, m.rttNs
			}
		}
		s.mu.Unlock()
		dist.Each = append(dist.Each, g)
	}
	return dist
}

// report prints the run's line per worker: records, lag p99 (a slow
// worker shows here), offset, loss.
func (d *drive) report() {
	var b strings.Builder
	fmt.Fprintf(&b, "workers (%s, origin set %.0f ms ahead of the jobs):", d.j.Run, float64(d.leadNs)/1e6)
	for _, g := range d.Distribution().Each {
		fmt.Fprintf(&b, "\n  %-12s %6d of %6d arrivals recorded%s, lag p99 %.1f ms, ready %.1f ms before the origin, clock offset %s (RTT %s, drift %s)",
			g.Name, g.Records, g.Due, notDue(g), g.LagP99Ms, float64(g.ReadyBeforeNs)/1e6, fmtNs(g.ClockOffsetNs), fmtRTT(g.RTTNs), fmtNs(g.OffsetDriftNs))
		switch {
		case g.Interrupted:
			fmt.Fprintf(&b, "\n  %-12s INTERRUPTED: %s", "", g.LostWhy)
		case g.Lost:
			fmt.Fprintf(&b, "\n  %-12s LOST: %s", "", g.LostWhy)
		}
	}
	fmt.Fprintln(d.c.cfg.Log, b.String())
}

// notDue says how many of g's arrivals were handed out but not due (the
// schedule was stopped): "" when none.
func notDue(g record.Generator) string {
	if g.Due >= g.Arrivals {
		return ""
	}
	return fmt.Sprintf(" (%d handed out, %d not due: the schedule was stopped)", g.Arrivals, g.Arrivals-g.Due)
}

// requestID is loadgen's id of an arrival ("<run>-<seq>").
func requestID(run string, seq int64) string {
	if run == "" {
		return strconv.FormatInt(seq, 10)
	}
	return run + "-" + strconv.FormatInt(seq, 10)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// fmtRTT is a round trip, which has no sign: "0.154 ms".
func fmtRTT(ns int64) string {
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}

func fmtNs(ns int64) string {
	return fmt.Sprintf("%+.3f ms", float64(ns)/1e6)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
