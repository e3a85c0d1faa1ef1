package sim

import (
	"fmt"
	"math"
	"time"
)

// The rules of Capacity's search; its doc comment explains each.
const (
	capacitySamples   = 60   // snapshot intervals in the measured half
	capacityTurnovers = 10.0 // measured half ≥ this many mean times in the batch
	capacityOverload  = 1.25 // an accepted trial offers ≥ this × its μ
	capacityRetry     = 1.5  // rate of the retry after a barely saturated trial, × μ
)

// capacityLimits bound Capacity's search. Capacity uses
// defaultCapacityLimits; tests shrink them.
type capacityLimits struct {
	startRPS  float64       // first offered rate, requests/s per replica
	window    time.Duration // first longest trial W
	arrivals  float64       // first most arrivals per trial A
	maxRPS    float64       // highest rate offered, requests/s (all replicas)
	maxTrials int           // most trials in one estimate
}

var defaultCapacityLimits = capacityLimits{startRPS: 1, window: 120 * time.Second, arrivals: 1 << 17, maxRPS: 1e5, maxTrials: 20}

// CapacityTrial is one constant-rate run of Capacity's search, described
// over its measured half [Window/2, Window] of virtual time.
type CapacityTrial struct {
	// OfferedRPS is the constant arrival rate λ, requests/s over all replicas.
	OfferedRPS float64
	// Window is the trial's length T; the measured half is [T/2, T].
	Window time.Duration
	// Completed is the number of requests that finished in the measured half.
	Completed int
	// RPS is the completion rate Completed / (T/2), requests/s.
	RPS float64
	// MinWaiting is the fewest waiting requests seen on any one replica at
	// any sample of the measured half (61 samples T/120 apart, T/2 to T).
	MinWaiting int
	// WaitingStart and WaitingEnd are the waiting requests (all replicas)
	// at T/2 and at T.
	WaitingStart, WaitingEnd int
	// MeanRunning is the mean over the same samples of the sequences in the
	// running batches (all replicas).
	MeanRunning float64
	// Turnovers is Completed / MeanRunning: how many times the batch was
	// replaced during the measured half, i.e. the half's length over the
	// mean time a request spends in the batch (Little's law); 0 when no
	// sequence was running at any sample.
	Turnovers float64
	// Saturated is MinWaiting ≥ 1 and WaitingEnd > WaitingStart: every
	// replica had a waiting queue at every sample and the queue grew.
	Saturated bool
}

// CapacityResult is Capacity's estimate: the accepted trial, whose RPS is
// μ, and every trial of the search in the order they ran. When Capacity
// returns an error after running trials, the embedded trial is the last
// one run (its Saturated or Turnovers says what was missing).
type CapacityResult struct {
	CapacityTrial
	Trials []CapacityTrial
}

// String summarises a trial on one line, for reports and logs.
func (t CapacityTrial) String() string {
	return fmt.Sprintf("λ = %.4g req/s for %v: %.4g completions/s, fewest waiting on a replica %d, waiting %d → %d, %.1f turnovers, saturated %t",
		t.OfferedRPS, t.Window, t.RPS, t.MinWaiting, t.WaitingStart, t.WaitingEnd, t.Turnovers, t.Saturated)
}

// String gives μ, the number of trials and the accepted trial, on one line.
func (r CapacityResult) String() string {
	return fmt.Sprintf("μ = %.4g req/s after %d trials (accepted: %v)", r.RPS, len(r.Trials), r.CapacityTrial)
}

// Capacity measures the cluster's sustained completion rate μ (requests/s)
// for requests drawn by next, in virtual time, by raising a constant load
// until the engine has a waiting queue. It reads no clock and starts no
// goroutine; for the default configuration it takes about 8 ms of CPU
// (BenchmarkCapacity).
//
// The autoscaler, the admission limit (max_waiting) and fault injection are
// switched off (of the faults only 500 and 503 would change the engine's
// work; the others are plans a client enacts); every other field of cfg,
// including replicas and slowdown_per_hour, is used as given (a cluster
// that scales from zero is measured with at least one replica). A trial
// offers λ requests/s for T = min(W, A/λ) seconds of virtual time to a
// fresh cluster: arrivals at t_i = i/λ (i = 0, 1, …, t_i < T) carrying
// next(i), so a next that depends only on i offers every trial the same
// requests (next is called once per arrival, about λT times per trial).
// Snapshots are taken at 61 instants T/120 apart over the measured half
// [T/2, T], each before the arrivals due at that instant, and the trial is
// judged on them:
//
//	saturated    every replica had ≥ 1 waiting request at every sample,
//	             and the waiting queue (all replicas) was longer at T than at T/2
//	μ            completions in [T/2, T] / (T/2)
//	turnovers    completions in [T/2, T] / mean running sequences
//	             (= (T/2) / mean time in the batch, by Little's law)
//
// Both clauses of "saturated" are needed: when arrivals are closer together
// than a step, every sample finds the requests that arrived during the step
// in progress although the engine keeps up; a backlog left by slow early
// requests is waiting at every sample while it drains.
//
// The search starts at λ = 1 request/s per replica, W = 120 s and
// A = 131,072 arrivals (so T = 120 s up to λ ≈ 1,092 requests/s; a trial
// holds at most A arrivals). After each trial:
//
//  1. not saturated: λ ← 2λ (the engine kept up; offer more);
//  2. saturated, turnovers < 10: W ← 2T and A ← 2A, so T doubles
//     (requests stay in the batch so long that a cohort admitted together
//     could bias the count by more than a tenth);
//  3. saturated, λ < 1.25 μ: λ ← 1.5 μ (barely saturated; measure again
//     under a clear overload, where the queue grows by ≥ μ/4 per second);
//  4. saturated, turnovers ≥ 10 and λ ≥ 1.25 μ: accept; μ is this trial's RPS.
//
// Steps 2 and 3 may apply together. The search fails rather than report
// an unsaturated rate: "sim: capacity: the engine never saturated up to X
// req/s" when doubling would pass 10⁵ requests/s, "sim: capacity: the
// search needs X req/s, above its bound of 1e+05 req/s" when step 3 would,
// "sim: capacity: no saturated, stable trial in 20 trials (last: …)"; an
// invalid request from next ("sim: capacity: request i: …", wrapping
// ErrInvalidRequest) or an invalid cfg is an error too. On error the
// result carries the trials run so far. For the default configuration on
// 500-token prompts with exactly 150 output tokens, the search runs
// λ = 1, 2, 4, 8 (not saturated), 16 for 120 s (6 turnovers), then 16 for
// 240 s, and finds μ = 9.87 requests/s (TestCapacityDefaultSearch).
func Capacity(cfg Config, next func(i int) Request) (CapacityResult, error) {
	return capacity(cfg, next, defaultCapacityLimits)
}

// capacity is Capacity within lim.
func capacity(cfg Config, next func(i int) Request, lim capacityLimits) (CapacityResult, error) {
	if cfg.ScalesFromZero() { // measured as the one replica its first arrival starts
		cfg.MinReplicas, cfg.Replicas = 1, max(cfg.Replicas, 1)
	}
	cfg.Autoscale, cfg.MaxWaiting = false, 0
	cfg.Fault500, cfg.Fault503, cfg.FaultReset, cfg.FaultMalformed, cfg.FaultStall, cfg.FaultSlowHeaders = 0, 0, 0, 0, 0, 0
	if err := cfg.Validate(); err != nil {
		return CapacityResult{}, err
	}
	var res CapacityResult
	rate := lim.startRPS * float64(cfg.Replicas)
	longest, arrivals := lim.window, lim.arrivals
	for len(res.Trials) < lim.maxTrials {
		if rate > lim.maxRPS {
			return res, fmt.Errorf("sim: capacity: the search needs %.4g req/s, above its bound of %.4g req/s", rate, lim.maxRPS)
		}
		window := min(longest, time.Duration(arrivals/rate*float64(time.Second)))
		tr, err := capacityTrial(cfg, next, rate, window)
		if err != nil {
			return res, err
		}
		res.Trials = append(res.Trials, tr)
		res.CapacityTrial = tr
		if !tr.Saturated {
			if 2*rate > lim.maxRPS {
				return res, fmt.Errorf("sim: capacity: the engine never saturated up to %.4g req/s", rate)
			}
			rate *= 2
			continue
		}
		stable, overloaded := tr.Turnovers >= capacityTurnovers, rate >= capacityOverload*tr.RPS
		if stable && overloaded {
			return res, nil
		}
		if !stable {
			longest, arrivals = 2*window, 2*arrivals
		}
		if !overloaded {
			rate = capacityRetry * tr.RPS
		}
	}
	return res, fmt.Errorf("sim: capacity: no saturated, stable trial in %d trials (last: %v)", lim.maxTrials, res.CapacityTrial)
}

// capacityTrial offers rate requests/s from next to a fresh cluster for
// window and judges the second half (see Capacity).
func capacityTrial(cfg Config, next func(i int) Request, rate float64, window time.Duration) (CapacityTrial, error) {
	c, err := NewCluster(cfg)
	if err != nil {
		return CapacityTrial{}, err
	}
	tr := CapacityTrial{OfferedRPS: rate, Window: window, MinWaiting: math.MaxInt}
	gap := float64(time.Second) / rate
	i := 0
	// submit offers every arrival due before t.
	submit := func(t time.Duration) error {
		for {
			at := time.Duration(float64(i) * gap)
			if at >= t {
				return nil
			}
			if _, err := c.Submit(at, next(i), nil); err != nil {
				return fmt.Errorf("sim: capacity: request %d: %w", i, err)
			}
			i++
		}
	}
	half := window / 2
	var finished0 uint64
	running := 0
	for k := range capacitySamples + 1 {
		at := half + (window-half)*time.Duration(k)/capacitySamples
		if err := submit(at); err != nil {
			return tr, err
		}
		s := c.Snapshot(at)
		for _, r := range s.Replicas {
			tr.MinWaiting = min(tr.MinWaiting, r.Waiting)
		}
		running += s.Running
		switch k {
		case 0:
			finished0, tr.WaitingStart = s.Finished, s.Waiting
		case capacitySamples:
			tr.Completed, tr.WaitingEnd = int(s.Finished-finished0), s.Waiting
		}
	}
	tr.RPS = float64(tr.Completed) / (window - half).Seconds()
	tr.MeanRunning = float64(running) / (capacitySamples + 1)
	if tr.MeanRunning > 0 {
		tr.Turnovers = float64(tr.Completed) / tr.MeanRunning
	}
	tr.Saturated = tr.MinWaiting >= 1 && tr.WaitingEnd > tr.WaitingStart
	return tr, nil
}
