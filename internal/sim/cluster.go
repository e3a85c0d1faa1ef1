package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Cluster is the simulated service: replicas behind a least-loaded router,
// with an optional autoscaler. It is a pure state machine driven by the
// times its methods are given; it never reads the wall clock and starts no
// goroutines. It is not safe for concurrent use.
type Cluster struct {
	cfg        Config
	now        time.Duration
	advancing  bool
	submitting bool

	reps     []*replica
	ready    int
	starting int
	waiting  int // total over replicas

	seqs   map[uint64]*seq
	free   []*seq
	nextID uint64

	lenRNG   *rand.Rand
	faultRNG *rand.Rand
	lnMu     float64 // location of the natural-length lognormal

	events        []Event
	scaleSince    time.Duration // scale-up condition true since; Never when false
	lastScaleDown time.Duration

	submitted, rejected, failed, admitted, finished uint64
	finishedStop, finishedLength, cancelled, steps  uint64
	promptTok, genTok, cachedTok, queriedTok        uint64

	stepHook func(*replica) // tests: called when a step starts
}

// NewCluster validates cfg and returns a cluster with cfg.Replicas ready
// replicas at time 0, or none when it scales from zero (ScalesFromZero).
func NewCluster(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:           cfg,
		seqs:          make(map[uint64]*seq),
		lenRNG:        rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed_1e46)),
		faultRNG:      rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfa17)),
		lnMu:          math.Log(cfg.OutputMean) - cfg.OutputSigma*cfg.OutputSigma/2,
		scaleSince:    Never,
		lastScaleDown: Never,
	}
	for i := 0; i < cfg.initialReplicas(); i++ {
		c.reps = append(c.reps, c.newReplica(i, repReady))
		c.ready++
	}
	return c, nil
}

// newReplica returns replica i in state st, with an empty prefix cache when
// the cache is on.
func (c *Cluster) newReplica(i int, st replicaState) *replica {
	r := &replica{index: i, state: st, firstBusy: Never}
	if c.cfg.PrefixCache() {
		r.cache = newPrefixCache(c.cfg.PrefixCacheTokens / c.cfg.blockTokens())
	}
	return r
}

// Config returns the cluster's configuration.
func (c *Cluster) Config() Config { return c.cfg }

// Events returns a copy of the scaling milestones reached so far, in time order.
func (c *Cluster) Events() []Event { return append([]Event(nil), c.events...) }

func (c *Cluster) emit(t time.Duration, kind string, rep int, detail string) {
	c.events = append(c.events, Event{At: t, Kind: kind, Replica: rep, Detail: detail})
}

func (c *Cluster) newSeq() *seq {
	if n := len(c.free); n > 0 {
		s := c.free[n-1]
		c.free = c.free[:n-1]
		return s
	}
	return new(seq)
}

func (c *Cluster) recycle(s *seq) {
	blocks := s.blocks[:0] // keep the buffer for the next request
	*s = seq{blocks: blocks}
	c.free = append(c.free, s)
}

// plan draws the output length and the fault of one request. Both draws
// happen for every request so that one request's flags never shift the
// random streams of the next.
func (c *Cluster) plan(r Request) (outLen int, finish string, f FaultPlan) {
	z := c.lenRNG.NormFloat64()
	natural := int(math.Round(math.Exp(c.lnMu + c.cfg.OutputSigma*z)))
	natural = max(natural, 1)
	limit := c.cfg.outputCap(r)
	switch {
	case r.PrefillOnly:
		outLen, finish = 0, "stop"
	case r.IgnoreEOS || natural >= limit:
		outLen, finish = limit, "length"
	default:
		outLen, finish = natural, "stop"
	}

	u, v := c.faultRNG.Float64(), c.faultRNG.Float64()
	at := 0 // prefill-only: no token to strike at
	if outLen > 0 {
		at = 1 + min(int(v*float64(outLen)), outLen-1)
	}
	cfg := &c.cfg
	for _, k := range [...]struct {
		p    float64
		kind FaultKind
	}{
		{cfg.Fault500, Fault500}, {cfg.Fault503, Fault503}, {cfg.FaultReset, FaultReset},
		{cfg.FaultMalformed, FaultMalformed}, {cfg.FaultStall, FaultStall}, {cfg.FaultSlowHeaders, FaultSlowHeaders},
	} {
		if u < k.p {
			f.Kind = k.kind
			break
		}
		u -= k.p
	}
	switch f.Kind {
	case FaultReset, FaultMalformed:
		f.AtToken = at
	case FaultStall:
		f.AtToken, f.Delay = at, cfg.FaultStallDelay
	case FaultSlowHeaders:
		f.Delay = cfg.FaultSlowHeadersDelay
	}
	return outLen, finish, f
}

// route picks the ready replica with the fewest waiting + running requests,
// the lowest index on ties.
func (c *Cluster) route() *replica {
	var best *replica
	for _, r := range c.reps {
		if r.state != repReady {
			continue
		}
		if best == nil || r.nWaiting+r.nRunning < best.nWaiting+best.nRunning {
			best = r
		}
	}
	return best
}

// Submit routes a request arriving at now. It returns the ticket and, when
// admission control refuses it, a *QueueFullError (errors.Is ErrQueueFull);
// an invalid request gets an error wrapping ErrInvalidRequest and no ticket.
// A request whose fault plan is Fault500 or Fault503 returns a ticket and a
// nil error but never enters the engine: the caller answers the error.
// Faults are decided before admission control. obs may be nil.
func (c *Cluster) Submit(now time.Duration, r Request, obs Observer) (Ticket, error) {
	if c.advancing || c.submitting {
		panic("sim: Submit called from an Observer callback")
	}
	now = c.sync(now)
	c.submitting = true
	defer func() { c.submitting = false }()
	if err := c.cfg.CheckRequest(r); err != nil {
		return Ticket{}, err
	}
	c.submitted++
	outLen, finish, fault := c.plan(r)
	c.nextID++
	rep := c.route()
	if rep == nil { // scaled to zero: the request waits for the replica starting
		rep = c.coldReplica(now)
	}
	t := Ticket{ID: c.nextID, Replica: rep.index, Fault: fault}
	if fault.Kind == Fault500 || fault.Kind == Fault503 {
		c.failed++
		return t, nil
	}
	if c.cfg.MaxWaiting > 0 && rep.nWaiting >= c.cfg.MaxWaiting {
		c.rejected++
		return t, &QueueFullError{Replica: rep.index, Waiting: rep.nWaiting, RetryAfter: c.retryAfter(rep, now)}
	}
	s := c.newSeq()
	limit := c.cfg.outputCap(r)
	blocks := s.blocks[:0]
	if c.cfg.PrefixCache() {
		blocks = append(blocks, r.Blocks...)
	}
	*s = seq{
		id: t.ID, obs: obs, state: stWaiting, replica: rep.index,
		prompt: r.PromptTokens, outLen: outLen, kv: r.PromptTokens + limit, finish: finish,
		arrived: now, admitted: Never, firstTok: Never, blocks: blocks,
	}
	c.seqs[s.id] = s
	rep.waiting = append(rep.waiting, s)
	rep.nWaiting++
	c.waiting++
	c.startStep(rep, now)
	c.evalScale(now)
	return t, nil
}

// coldReplica returns the replica that takes arrivals while none is ready
// (only when scaling from zero): the first one starting, or a new one,
// started at now without waiting for scale_up_hold — the arrival itself is
// the trigger, as with Knative's activator or KEDA's 0 → 1.
func (c *Cluster) coldReplica(now time.Duration) *replica {
	for _, r := range c.reps {
		if r.state == repStarting {
			return r
		}
	}
	c.emit(now, EventScaleTrigger, len(c.reps), "scale from zero: a request arrived with no replica ready")
	c.startReplica(now)
	return c.reps[len(c.reps)-1]
}

// retryAfter estimates how long rep's waiting queue takes to drain at its
// recent completion rate (or, before any completion, at a rate estimated
// from the configuration), rounded up to whole seconds, at least 1 s. A
// replica still starting (scale from zero) adds the time to its model_ready.
func (c *Cluster) retryAfter(rep *replica, now time.Duration) time.Duration {
	var cold time.Duration
	if rep.state == repStarting {
		cold = max(rep.milestones[len(rep.milestones)-1]-now, 0)
	}
	rate := rep.drainRate(now)
	if rate <= 0 {
		// a full batch of mean-length requests, decode cost only
		step := c.cfg.StepBase + c.cfg.StepPerDecodeSeq*time.Duration(c.cfg.MaxNumSeqs)
		rate = float64(c.cfg.MaxNumSeqs) / (c.cfg.OutputMean * step.Seconds())
	}
	secs := math.Ceil(float64(rep.nWaiting)/rate + cold.Seconds())
	if !(secs >= 1) {
		secs = 1
	}
	secs = min(secs, 3600)
	return time.Duration(secs) * time.Second
}

// Cancel removes request id (the client went away): from the waiting queue,
// or from the running batch, freeing its KV reservation and its batch slot
// at once. Its observer is not called again. Unknown or finished ids are
// ignored. A step in progress keeps the duration it was scheduled with.
func (c *Cluster) Cancel(now time.Duration, id uint64) {
	now = c.sync(now)
	s := c.seqs[id]
	if s == nil {
		return
	}
	r := c.reps[s.replica]
	switch s.state {
	case stWaiting:
		r.nWaiting--
		c.waiting--
	case stRunning:
		r.nRunning--
		r.kvRes -= s.kv
	}
	s.state = stCancelled
	s.obs = nil
	delete(c.seqs, id)
	c.cancelled++
	c.evalScale(now)
}

// sync advances to now unless called from an observer callback (inside
// Advance or Submit), and returns the effective time (never earlier than the last).
func (c *Cluster) sync(now time.Duration) time.Duration {
	if !c.advancing && !c.submitting {
		c.Advance(now)
	}
	return max(now, c.now)
}

type evKind uint8

const (
	evNone evKind = iota
	evStep
	evMilestone
	evScaleUp
	evScaleDown
)

// next returns the earliest pending internal event. Ties resolve in this
// order: step ends (by replica index), replica milestones (by index), the
// scale-up trigger, the scale-down.
func (c *Cluster) next() (time.Duration, evKind, *replica) {
	at, kind := Never, evNone
	var rep *replica
	consider := func(t time.Duration, k evKind, r *replica) {
		if kind == evNone || t < at {
			at, kind, rep = t, k, r
		}
	}
	for _, r := range c.reps {
		if r.state == repReady && r.busy {
			consider(r.stepEnd, evStep, r)
		}
	}
	if !c.cfg.Autoscale {
		return at, kind, rep
	}
	for _, r := range c.reps {
		if r.state == repStarting {
			consider(r.milestones[r.nextMile], evMilestone, r)
		}
	}
	if c.scaleSince != Never {
		consider(c.scaleSince+c.cfg.ScaleUpHold, evScaleUp, nil)
	}
	if r, t := c.scaleDownCandidate(); r != nil {
		consider(t, evScaleDown, r)
	}
	return at, kind, rep
}

// scaleDownCandidate returns the idle ready replica that is due for removal
// first (the highest index on ties) and when, if the cluster is above
// min_replicas. Successive removals are at least scale_down_idle apart.
func (c *Cluster) scaleDownCandidate() (*replica, time.Duration) {
	if c.ready <= c.cfg.MinReplicas {
		return nil, 0
	}
	var best *replica
	var bestAt time.Duration
	for _, r := range c.reps {
		if r.state != repReady || r.busy || r.nWaiting > 0 || r.nRunning > 0 {
			continue
		}
		at := max(r.idleSince, c.lastScaleDown) + c.cfg.ScaleDownIdle
		if best == nil || at <= bestAt {
			best, bestAt = r, at
		}
	}
	return best, bestAt
}

// NextEvent returns when the next engine step ends or the next scaling
// milestone is due; false when nothing is pending (idle).
func (c *Cluster) NextEvent() (time.Duration, bool) {
	t, k, _ := c.next()
	return t, k != evNone
}

// Advance runs every step end and scaling milestone due at or before now,
// in time order, calling observers as it goes.
func (c *Cluster) Advance(now time.Duration) {
	if c.advancing {
		return
	}
	c.advancing = true
	defer func() { c.advancing = false }()
	for {
		t, k, r := c.next()
		if k == evNone || t > now {
			break
		}
		t = max(t, c.now)
		c.now = t
		switch k {
		case evStep:
			c.endStep(r, t)
		case evMilestone:
			c.milestone(r, t)
		case evScaleUp:
			c.scaleUp(t)
		case evScaleDown:
			c.scaleDown(r, t)
		}
		c.evalScale(t)
	}
	c.now = max(c.now, now)
}

// evalScale re-evaluates the scale-up condition at t: autoscaling on, no
// replica starting, room below max_replicas, and more than scale_up_waiting
// waiting requests per ready replica.
func (c *Cluster) evalScale(t time.Duration) {
	if !c.cfg.Autoscale {
		return
	}
	cond := c.starting == 0 && c.ready < c.cfg.MaxReplicas &&
		float64(c.waiting) > c.cfg.ScaleUpWaiting*float64(c.ready)
	switch {
	case !cond:
		c.scaleSince = Never
	case c.scaleSince == Never:
		c.scaleSince = t
	}
}

func (c *Cluster) scaleUp(t time.Duration) {
	c.emit(t, EventScaleTrigger, len(c.reps), fmt.Sprintf("%d waiting over %d ready replicas > %g per replica since %v",
		c.waiting, c.ready, c.cfg.ScaleUpWaiting, c.scaleSince))
	c.startReplica(t)
}

// startReplica adds a replica at t that goes through the four milestones.
func (c *Cluster) startReplica(t time.Duration) {
	r := c.newReplica(len(c.reps), repStarting)
	r.added = true
	at := t + c.cfg.ScaleRequestDelay
	r.milestones[0] = at
	at += c.cfg.NodeReadyDelay
	r.milestones[1] = at
	at += c.cfg.ContainerReadyDelay
	r.milestones[2] = at
	at += c.cfg.ModelReadyDelay
	r.milestones[3] = at
	c.reps = append(c.reps, r)
	c.starting++
	c.scaleSince = Never
}

func (c *Cluster) milestone(r *replica, t time.Duration) {
	kind := milestoneKinds[r.nextMile]
	detail := ""
	if kind == EventCapacityRequested {
		detail = fmt.Sprintf("replicas %d → %d", c.ready+c.starting-1, c.ready+c.starting)
	}
	c.emit(t, kind, r.index, detail)
	r.nextMile++
	if r.nextMile == len(milestoneKinds) {
		r.state = repReady
		r.idleSince = t
		c.starting--
		c.ready++
		c.startStep(r, t) // requests that waited for it (scale from zero)
	}
}

func (c *Cluster) scaleDown(r *replica, t time.Duration) {
	r.state = repRemoved
	c.ready--
	c.lastScaleDown = t
	c.emit(t, EventScaleDown, r.index, fmt.Sprintf("idle since %v; replicas %d → %d", r.idleSince, c.ready+1, c.ready))
	r.waiting, r.running = nil, nil
}

// Snapshot advances to now and returns the cluster's state.
func (c *Cluster) Snapshot(now time.Duration) Snapshot {
	now = c.sync(now)
	s := Snapshot{
		At: now, ReadyReplicas: c.ready, StartingReplicas: c.starting,
		Submitted: c.submitted, Rejected: c.rejected, Failed: c.failed, Admitted: c.admitted,
		Finished: c.finished, FinishedStop: c.finishedStop, FinishedLength: c.finishedLength,
		Cancelled: c.cancelled, PromptTokens: c.promptTok, CachedTokens: c.cachedTok, QueriedTokens: c.queriedTok, GenerationTokens: c.genTok, Steps: c.steps,
	}
	kvRes, kvCap := 0, 0
	for _, r := range c.reps {
		switch r.state {
		case repStarting:
			rs := ReplicaStats{
				Index: r.index, State: "starting", Awaiting: milestoneKinds[r.nextMile],
				Waiting: r.nWaiting, KVCapacityTokens: c.cfg.KVCacheTokens,
			}
			if h := c.headWaiting(r); h != nil { // scale from zero: arrivals wait for it
				rs.OldestWaiting = now - h.arrived
			}
			s.Waiting += rs.Waiting
			s.OldestWaiting = max(s.OldestWaiting, rs.OldestWaiting)
			s.Replicas = append(s.Replicas, rs)
		case repReady:
			rs := ReplicaStats{
				Index: r.index, State: "ready", Waiting: r.nWaiting, Running: r.nRunning,
				KVReservedTokens: r.kvRes, KVCapacityTokens: c.cfg.KVCacheTokens,
				KVUsage:  float64(r.kvRes) / float64(c.cfg.KVCacheTokens),
				Admitted: r.admitted, Finished: r.finished, Steps: r.steps,
			}
			for _, q := range r.running {
				if q.state == stRunning {
					rs.KVUsedTokens += q.prefilled + q.generated
				}
			}
			if h := c.headWaiting(r); h != nil {
				rs.OldestWaiting = now - h.arrived
			}
			s.Waiting += rs.Waiting
			s.Running += rs.Running
			s.OldestWaiting = max(s.OldestWaiting, rs.OldestWaiting)
			kvRes += r.kvRes
			kvCap += c.cfg.KVCacheTokens
			s.Replicas = append(s.Replicas, rs)
		}
	}
	if kvCap > 0 {
		s.KVUsage = float64(kvRes) / float64(kvCap)
	}
	return s
}
