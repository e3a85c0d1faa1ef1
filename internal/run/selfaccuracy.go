package run

import (
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/loadgen"
)

// selfObs is what a live run observes of surge itself while it goes (the
// self-accuracy section, judge.SelfAccuracy): its CPU over the run, the
// run's wall and monotonic lengths, and the most streams in flight.
type selfObs struct {
	cpu0      float64
	sched0    *metrics.Float64Histogram // /sched/latencies:seconds at the origin
	sched     schedLat                  // its change over the run
	psi0      float64                   // /proc/pressure/cpu "some" total (µs) at the origin; < 0: unknown
	pressure  float64                   // its share of the run; < 0: unknown
	mono      time.Time                 // the run's origin, with its monotonic reading
	cpuS      float64                   // < 0: unknown on this platform
	elapsed   time.Duration
	clockStep time.Duration
	counters  *loadgen.Counters
}

// startSelf notes the CPU time at the run's origin.
func startSelf(origin time.Time, c *loadgen.Counters) *selfObs {
	s := &selfObs{mono: origin, counters: c, sched0: readSchedLat()}
	s.cpu0, s.psi0 = cpuSeconds(), cpuPressureTotal()
	return s
}

// stop notes the CPU used and the clocks' lengths since the origin.
func (s *selfObs) stop() {
	now := time.Now()
	s.elapsed = now.Sub(s.mono)
	s.clockStep = now.Round(0).Sub(s.mono.Round(0)) - s.elapsed // wall − monotonic
	s.cpuS = -1
	if c := cpuSeconds(); c >= 0 && s.cpu0 >= 0 {
		s.cpuS = c - s.cpu0
	}
	s.sched = deltaSchedLat(s.sched0, readSchedLat())
	s.pressure = -1
	if p := cpuPressureTotal(); p >= 0 && s.psi0 >= 0 && s.elapsed > 0 {
		s.pressure = (p - s.psi0) / 1e6 / s.elapsed.Seconds()
	}
}

// probeTimer is the median overshoot of 20 sleeps of 100 µs, in µs: how
// finely this machine can time a send. It takes about 20 ms (a Go sleep
// on Linux lasts about 1 ms at the least).
func probeTimer() float64 {
	const want = 100 * time.Microsecond
	over := make([]float64, 20)
	for i := range over {
		t0 := time.Now()
		time.Sleep(want)
		over[i] = float64(time.Since(t0)-want) / 1e3
	}
	slices.Sort(over)
	return max(0, over[len(over)/2])
}

// cpuQuota is the cgroup's CPU quota in cores (cgroup v2 cpu.max, or v1's
// cfs quota over period); 0 when there is none or it cannot be read.
func cpuQuota() float64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && q > 0 && p > 0 {
				return q / p
			}
		}
		return 0
	}
	qb, err1 := os.ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
	pb, err2 := os.ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
	if err1 != nil || err2 != nil {
		return 0
	}
	q, err1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
	p, err2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0
	}
	return q / p
}

// selfAccuracy is the run's self-accuracy section, judged: nil in
// virtual time, on a coordinator (its workers send), or when nothing was
// observed.
func (e *Env) selfAccuracy(res *Result, obs *selfObs) *judge.SelfAccuracy {
	if obs == nil || e.Virtual || e.Fleet != nil || res.Analysis == nil {
		return nil
	}
	lag := res.Analysis.Overall.Latency.ScheduleLag
	s := &judge.SelfAccuracy{
		Sends: lag.Count, LagP50Ms: lag.P50Ms, LagP99Ms: lag.P99Ms, LagMaxMs: lag.MaxMs,
		CPUSeconds: obs.cpuS, ElapsedS: obs.elapsed.Seconds(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), CPUQuotaCores: cpuQuota(),
		InProcess: e.Simulated, PeakInFlight: obs.counters.PeakInFlight.Load(), TimerOvershootUs: e.timerUs,
	}
	if step := obs.clockStep; step > judge.SelfClockStep || step < -judge.SelfClockStep {
		s.ClockStepMs = float64(step) / 1e6
	}
	s.CoresAvailable = float64(min(s.GOMAXPROCS, s.NumCPU))
	if s.CPUQuotaCores > 0 {
		s.CoresAvailable = math.Min(s.CoresAvailable, s.CPUQuotaCores)
	}
	s.SchedLatP50Us, s.SchedLatP99Us = obs.sched.quantile(0.5), obs.sched.quantile(0.99)
	s.CPUPressure = obs.pressure
	if s.CPUSeconds >= 0 && s.ElapsedS > 0 {
		s.CoresUsed = s.CPUSeconds / s.ElapsedS
		if sent := obs.counters.Sent.Load(); sent > 0 {
			s.CPUPerRequestMs = 1e3 * s.CPUSeconds / float64(sent)
		}
	}
	if res.Sends != nil {
		for i, ph := range res.Sends.phases {
			sp := &res.Sends.spans[i]
			p := judge.SelfPhase{Name: ph.Name, Sends: int64(sp.N())}
			if r, ok := res.Analysis.Phase(ph.Name); ok {
				p.LagP99Ms = r.Latency.ScheduleLag.P99Ms
			}
			g := sp.Check(p.LagP99Ms)
			p.ScheduledRPS, p.AchievedRPS = g.ScheduledRPS, g.AchievedRPS
			s.Phases = append(s.Phases, p)
		}
	}
	s.Judge()
	return s
}

// schedLat is the histogram of goroutine scheduling latencies over a run
// (runtime/metrics' /sched/latencies:seconds, end minus start).
type schedLat struct {
	counts  []uint64
	buckets []float64
}

const schedLatMetric = "/sched/latencies:seconds"

func readSchedLat() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedLatMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := s[0].Value.Float64Histogram()
	return &metrics.Float64Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
}

func deltaSchedLat(a, b *metrics.Float64Histogram) schedLat {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return schedLat{}
	}
	d := schedLat{counts: make([]uint64, len(b.Counts)), buckets: b.Buckets}
	for i := range b.Counts {
		d.counts[i] = b.Counts[i] - a.Counts[i]
	}
	return d
}

// quantile is the q-quantile in µs (a bucket's upper bound, its lower
// one for the last, unbounded bucket); −1 when nothing was counted.
func (h schedLat) quantile(q float64) float64 {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	if n == 0 {
		return -1
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			hi := h.buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = h.buckets[i]
			}
			return hi * 1e6
		}
	}
	return -1
}

// cpuPressureTotal is Linux's CPU pressure (PSI): the total µs during
// which some runnable task waited for a CPU — of surge's own cgroup
// (cgroup v2 cpu.pressure) where it has one, else of the machine
// (/proc/pressure/cpu); −1 where there is neither.
func cpuPressureTotal() float64 {
	for _, path := range []string{cgroupPressurePath(), "/proc/pressure/cpu"} {
		if path == "" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		line, _, _ := strings.Cut(string(b), "\n")
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				if t, err := strconv.ParseFloat(v, 64); err == nil {
					return t
				}
			}
		}
	}
	return -1
}

// cgroupPressurePath is this process's cgroup v2 cpu.pressure file, ""
// when it has none (cgroup v1, or the root).
func cgroupPressurePath() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok && rest != "/" && rest != "" {
			return "/sys/fs/cgroup" + rest + "/cpu.pressure"
		}
	}
	return ""
}
