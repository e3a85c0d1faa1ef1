package sim

import "time"

type seqState uint8

const (
	stWaiting seqState = iota + 1
	stRunning
	stDone
	stCancelled
)

// seq is one request inside a replica.
type seq struct {
	id        uint64
	obs       Observer
	state     seqState
	replica   int
	prompt    int      // prompt tokens
	outLen    int      // output tokens it will generate
	kv        int      // KV tokens reserved while running: prompt + cap
	prefilled int      // prompt tokens prefilled so far
	generated int      // output tokens generated so far
	chunk     int      // prefill tokens scheduled in the step in progress
	blocks    []uint64 // prompt block hashes (prefix cache); emptied once prefilled
	cached    int      // prompt tokens served from the prefix cache at admission
	inserted  int      // leading blocks known to the replica's cache
	finish    string   // finish reason once outLen is reached
	arrived   time.Duration
	admitted  time.Duration
	firstTok  time.Duration
}

type replicaState uint8

const (
	repStarting replicaState = iota + 1
	repReady
	repRemoved
)

// milestone kinds of a starting replica, in order.
var milestoneKinds = [...]string{EventCapacityRequested, EventNodeReady, EventContainerReady, EventModelReady}

// drainWindow is the window, in whole seconds, over which a replica's
// completion rate is measured for Retry-After.
const drainWindow = 30

// replica is one engine: a FCFS waiting queue and a running batch.
type replica struct {
	index int
	state replicaState

	// autoscaled replicas only
	added       bool
	milestones  [len(milestoneKinds)]time.Duration
	nextMile    int
	firstServed bool

	waiting  []*seq // FCFS; cancelled entries are skipped lazily
	whead    int
	nWaiting int
	running  []*seq // admission order; cancelled entries are dropped at step end
	nRunning int
	kvRes    int          // KV tokens reserved by running sequences
	cache    *prefixCache // nil without a prefix cache

	busy        bool
	stepEnd     time.Duration
	stepDecode  int // decoding sequences in the step in progress
	stepPrefill int // prefill tokens in the step in progress
	idleSince   time.Duration

	firstBusy time.Duration           // start of its first step; Never before
	doneSec   [drainWindow + 1]int64  // second each bucket counts
	doneCnt   [drainWindow + 1]uint32 // completions in that second
	admitted  uint64
	finished  uint64
	steps     uint64
}

// headWaiting returns the oldest live waiting sequence, recycling cancelled
// ones it passes.
func (c *Cluster) headWaiting(r *replica) *seq {
	for r.whead < len(r.waiting) {
		s := r.waiting[r.whead]
		if s.state == stWaiting {
			return s
		}
		r.waiting[r.whead] = nil
		r.whead++
		c.recycle(s)
	}
	r.waiting = r.waiting[:0]
	r.whead = 0
	return nil
}

// popWaiting removes the head returned by headWaiting.
func (r *replica) popWaiting() {
	r.waiting[r.whead] = nil
	r.whead++
	r.nWaiting--
	if r.whead == len(r.waiting) {
		r.waiting = r.waiting[:0]
		r.whead = 0
	} else if r.whead >= 1024 && r.whead*2 >= len(r.waiting) {
		n := copy(r.waiting, r.waiting[r.whead:])
		clear(r.waiting[n:])
		r.waiting = r.waiting[:n]
		r.whead = 0
	}
}

// startStep schedules the next step of r at t, if there is work: every
// decoding sequence takes one token of the budget, then running sequences
// still in prefill take chunks in admission order, then waiting requests are
// admitted FCFS while the batch, the KV cache and the budget allow.
func (c *Cluster) startStep(r *replica, t time.Duration) {
	if r.busy || r.state != repReady {
		return
	}
	budget := c.cfg.MaxNumBatchedTokens
	decodes, prefill := 0, 0
	for _, s := range r.running {
		if s.state == stRunning && s.prefilled == s.prompt {
			decodes++
		}
	}
	budget -= decodes
	for _, s := range r.running {
		if s.state == stRunning && s.prefilled < s.prompt {
			s.chunk = min(s.prompt-s.prefilled, budget)
			budget -= s.chunk
			prefill += s.chunk
		}
	}
	for budget > 0 && r.nRunning < c.cfg.MaxNumSeqs {
		s := c.headWaiting(r)
		if s == nil || r.kvRes+s.kv > c.cfg.KVCacheTokens {
			break // strict FCFS: nothing overtakes a head that does not fit
		}
		r.popWaiting()
		c.waiting--
		s.state = stRunning
		s.admitted = t
		r.nRunning++
		r.kvRes += s.kv
		r.running = append(r.running, s)
		if r.cache != nil {
			c.lookup(r, s)
		}
		s.chunk = min(s.prompt-s.prefilled, budget)
		budget -= s.chunk
		prefill += s.chunk
		r.admitted++
		c.admitted++
		if r.added && !r.firstServed {
			r.firstServed = true
			c.emit(t, EventFirstServed, r.index, "")
		}
		if s.obs != nil {
			s.obs.Scheduled(t)
		}
	}
	if decodes+prefill == 0 {
		return
	}
	r.busy = true
	if r.firstBusy == Never {
		r.firstBusy = t
	}
	r.stepDecode, r.stepPrefill = decodes, prefill
	step := c.cfg.StepBase +
		c.cfg.StepPerDecodeSeq*time.Duration(decodes) +
		c.cfg.StepPerPrefillToken*time.Duration(prefill)
	if c.cfg.SlowdownPerHour > 0 && t > 0 {
		step = time.Duration(float64(step) * (1 + c.cfg.SlowdownPerHour*t.Hours()))
	}
	r.stepEnd = t + step
	if c.stepHook != nil {
		c.stepHook(r)
	}
}

// endStep completes r's step at t: prefill chunks are applied (a prompt
// fully prefilled yields its first token), every decoding sequence gains a
// token, and sequences that reached their length finish and free their KV.
func (c *Cluster) endStep(r *replica, t time.Duration) {
	r.busy = false
	r.steps++
	c.steps++
	j := 0
	for i := 0; i < len(r.running); i++ {
		s := r.running[i]
		if s.state != stRunning {
			c.recycle(s)
			continue
		}
		if s.prefilled < s.prompt {
			s.prefilled += s.chunk
			c.promptTok += uint64(s.chunk)
			s.chunk = 0
			if r.cache != nil {
				c.cacheBlocks(r, s)
			}
			if s.prefilled < s.prompt {
				r.running[j] = s
				j++
				continue
			}
			s.firstTok = t
			if s.outLen == 0 { // prefill-only: done, no token
				c.finish(r, s, t)
				continue
			}
		}
		s.generated++
		c.genTok++
		if s.obs != nil {
			s.obs.Tokens(t, s.generated)
			if s.state != stRunning { // cancelled from the callback
				c.recycle(s)
				continue
			}
		}
		if s.generated >= s.outLen {
			c.finish(r, s, t)
			continue
		}
		r.running[j] = s
		j++
	}
	clear(r.running[j:])
	r.running = r.running[:j]
	c.startStep(r, t)
	if !r.busy {
		r.idleSince = t
	}
}

func (c *Cluster) finish(r *replica, s *seq, t time.Duration) {
	s.state = stDone
	r.nRunning--
	r.kvRes -= s.kv
	delete(c.seqs, s.id)
	sec := int64(t / time.Second)
	if b := sec % int64(len(r.doneSec)); r.doneSec[b] != sec || r.doneCnt[b] == 0 {
		r.doneSec[b], r.doneCnt[b] = sec, 1
	} else {
		r.doneCnt[b]++
	}
	r.finished++
	c.finished++
	if s.finish == "stop" {
		c.finishedStop++
	} else {
		c.finishedLength++
	}
	if s.obs != nil {
		s.obs.Finished(t, Result{
			PromptTokens: s.prompt, OutputTokens: s.generated, CachedTokens: s.cached, FinishReason: s.finish,
			Replica: r.index, QueueTime: s.admitted - s.arrived,
			ArrivedAt: s.arrived, AdmittedAt: s.admitted, FirstTokenAt: s.firstTok, DoneAt: t,
		})
	}
	c.recycle(s)
}

// lookup serves s's leading prompt blocks found in r's prefix cache: at
// most ⌊(prompt − 1) / B⌋ blocks (the last prompt token is always
// computed, as in vLLM), marked used; prefill starts after them.
func (c *Cluster) lookup(r *replica, s *seq) {
	b := c.cfg.blockTokens()
	n := r.cache.match(s.blocks[:min(len(s.blocks), (s.prompt-1)/b)])
	s.cached, s.inserted = n*b, n
	s.prefilled = s.cached
	c.promptTok += uint64(s.cached)
	c.cachedTok += uint64(s.cached)
	c.queriedTok += uint64(s.prompt)
}

// cacheBlocks adds to r's prefix cache the blocks of s that its prefill
// has completed (all of them once the prompt is prefilled).
func (c *Cluster) cacheBlocks(r *replica, s *seq) {
	full := len(s.blocks)
	if s.prefilled < s.prompt {
		full = min(full, s.prefilled/c.cfg.blockTokens())
	}
	for ; s.inserted < full; s.inserted++ {
		r.cache.add(s.blocks[s.inserted])
	}
	if s.prefilled == s.prompt {
		s.blocks = s.blocks[:0]
	}
}

// drainRate estimates r's completions per second over the last
// drainWindow seconds (or since its first step, if later); 0 when unknown.
func (r *replica) drainRate(now time.Duration) float64 {
	if r.firstBusy == Never {
		return 0
	}
	nowSec := int64(now / time.Second)
	from := nowSec - drainWindow + 1
	n := 0
	for b, sec := range r.doneSec {
		if r.doneCnt[b] > 0 && sec >= from && sec <= nowSec {
			n += int(r.doneCnt[b])
		}
	}
	span := (now - max(r.firstBusy, time.Duration(from)*time.Second)).Seconds()
	if n == 0 || span <= 0 {
		return 0
	}
	return float64(n) / span
}
