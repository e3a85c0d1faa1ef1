package judge

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
)

// The rules of the self-accuracy verdict (docs/metrics.md, "Self-accuracy:
// did the client keep up?"). A client is at risk before its numbers are
// wrong: when its lag or its CPU leaves no headroom; behind when the
// schedule slipped (analyze.GeneratorCheck's rule).
const (
	SelfLagRisk = 10 * time.Millisecond // send-lag p99 above this: at risk
	SelfCPURisk = 0.9                   // CPU used over the cores it may use, at or above: at risk
	// SelfTimerRisk: a 100 µs sleep overshot by more (median): at risk. Go's
	// sleeps on Linux take about 1 ms at the least (golang/go#44343), which
	// the send lag shows; a timer coarser than this quantises sends.
	SelfTimerRisk = 5 * time.Millisecond
	SelfClockStep = 100 * time.Millisecond
	// SelfPressureRisk: the machine was short of CPU (some runnable task
	// waited) for this share of the run or more: at risk. Measured
	// (bench/starved.sh, 2026-12-04): 4–16% with surge's core to itself,
	// 43–57% sharing it with a busy loop, where TTFT p95 was already 3–6 ms
	// late while the send lag p99 stayed at 3–6 ms.
	SelfPressureRisk = 0.30
	// SelfWaitRisk: surge's goroutines waited, runnable, this long or
	// longer at p99 before they ran: at risk (a read that waits stamps
	// its chunk late). 0.3–0.4 ms quiet, 0.5–3.1 ms starved.
	SelfWaitRisk = 2 * time.Millisecond
)

// SelfState is the self-accuracy verdict.
type SelfState string

// The verdicts, from good to bad.
const (
	SelfNotJudged SelfState = "not_judged" // too few sends, or no live client (virtual time)
	SelfKeptUp    SelfState = "kept_up"
	SelfAtRisk    SelfState = "at_risk" // kept the schedule with no headroom: its timings may be inflated
	SelfBehind    SelfState = "behind"  // fell behind: the run describes surge on this machine, not the target
)

// SelfPhase is one phase's send rate against its schedule.
type SelfPhase struct {
	Name         string  `json:"name"`
	Sends        int64   `json:"sends"`
	ScheduledRPS float64 `json:"scheduled_rps"` // 0 when too few sends to measure
	AchievedRPS  float64 `json:"achieved_rps"`
	LagP99Ms     float64 `json:"lag_p99_ms"`
	Behind       bool    `json:"behind"` // set by Judge
}

// SelfAccuracy is what surge observed of itself in a live run — its send
// lag, its send rate per phase, its CPU, the streams it held, its timer
// and clock — and whether it kept up. Run fills the observations;
// Judge sets State, Why and Advice.
type SelfAccuracy struct {
	State  SelfState `json:"state"`
	Why    []string  `json:"why,omitempty"`
	Advice string    `json:"advice,omitempty"`

	Sends    int64       `json:"sends"` // requests sent (scheduled ones, with a lag)
	LagP50Ms float64     `json:"lag_p50_ms"`
	LagP99Ms float64     `json:"lag_p99_ms"`
	LagMaxMs float64     `json:"lag_max_ms"`
	Phases   []SelfPhase `json:"phases"`

	// CPUSeconds is this process's CPU time (user + system) over the run;
	// negative when the platform does not say. It includes the built-in
	// simulator when that served the run in this process (InProcess).
	CPUSeconds      float64 `json:"cpu_s"`
	ElapsedS        float64 `json:"elapsed_s"`
	CPUPerRequestMs float64 `json:"cpu_per_request_ms"` // CPU over requests sent
	CoresUsed       float64 `json:"cores_used"`         // CPU over the run's wall time
	// CoresAvailable is what the Go runtime may run on at once: the least
	// of GOMAXPROCS, the CPUs and the cgroup's CPU quota.
	CoresAvailable float64 `json:"cores_available"`
	GOMAXPROCS     int     `json:"gomaxprocs"`
	NumCPU         int     `json:"num_cpu"`
	CPUQuotaCores  float64 `json:"cpu_quota_cores,omitempty"` // the cgroup's quota (cpu.max), 0 when none
	InProcess      bool    `json:"in_process_target,omitempty"`
	// SchedLatP50Us and SchedLatP99Us are how long surge's goroutines
	// waited, runnable, before they ran (the Go runtime's
	// /sched/latencies:seconds over the run, µs; −1 when unknown): a
	// goroutine that reads a chunk late stamps it late.
	SchedLatP50Us float64 `json:"sched_latency_p50_us"`
	SchedLatP99Us float64 `json:"sched_latency_p99_us"`
	// CPUPressure is the share of the run during which some runnable task
	// waited for a CPU (Linux PSI "some": of surge's cgroup where it has
	// cpu.pressure, else of the machine; −1 where there is none): short
	// of CPU.
	CPUPressure float64 `json:"cpu_pressure"`

	PeakInFlight int64 `json:"peak_in_flight"`
	// TimerOvershootUs is by how much a 100 µs sleep overshot (median of
	// 20, measured before the first run): how finely surge can time a
	// send on this machine (its timestamps are finer: the monotonic clock).
	TimerOvershootUs float64 `json:"timer_overshoot_us"`
	// ClockStepMs is how far the wall clock moved against the monotonic
	// clock during the run (a jump, NTP stepping): surge's times are
	// monotonic and unaffected; reported when it is not 0.
	ClockStepMs float64 `json:"clock_step_ms,omitempty"`
}

// Judge decides the verdict from the observations, by the rules above.
func (s *SelfAccuracy) Judge() {
	s.Why, s.Advice = nil, ""
	if s.Sends < analyze.GeneratorMinSamples {
		s.State = SelfNotJudged
		s.Why = []string{fmt.Sprintf("%d sends: at least %d are needed to judge the send rate", s.Sends, analyze.GeneratorMinSamples)}
		return
	}
	s.State = SelfKeptUp
	lagBad := float64(analyze.GeneratorMaxLagP99) / 1e6
	for i := range s.Phases {
		p := &s.Phases[i]
		p.Behind = false
		if p.ScheduledRPS > 0 && p.AchievedRPS < analyze.GeneratorMinSendRatio*p.ScheduledRPS {
			p.Behind = true
			s.Why = append(s.Why, fmt.Sprintf("%s: sent %.2f req/s of the %.2f scheduled (%.0f%%)", p.Name, p.AchievedRPS, p.ScheduledRPS, 100*p.AchievedRPS/p.ScheduledRPS))
		}
		if p.Sends >= analyze.GeneratorMinSamples && p.LagP99Ms > lagBad && s.LagP99Ms <= lagBad {
			p.Behind = true
			s.Why = append(s.Why, fmt.Sprintf("%s: send lag p99 %s > %s", p.Name, analyze.FormatMs(p.LagP99Ms), analyze.FormatMs(lagBad)))
		}
		if p.Behind {
			s.State = SelfBehind
		}
	}
	switch {
	case s.LagP99Ms > lagBad:
		s.State = SelfBehind
		s.Why = append(s.Why, fmt.Sprintf("send lag p99 %s > %s", analyze.FormatMs(s.LagP99Ms), analyze.FormatMs(lagBad)))
	case s.LagP99Ms > float64(SelfLagRisk)/1e6:
		s.Why = append(s.Why, fmt.Sprintf("send lag p99 %s > %s", analyze.FormatMs(s.LagP99Ms), analyze.FormatMs(float64(SelfLagRisk)/1e6)))
		s.State = worseSelf(s.State, SelfAtRisk)
	}
	cpuBound := s.CoresAvailable > 0 && s.CoresUsed >= SelfCPURisk*s.CoresAvailable
	if cpuBound {
		s.Why = append(s.Why, fmt.Sprintf("it used %.2f of the %s it may use", s.CoresUsed, cores(s.CoresAvailable)))
		s.State = worseSelf(s.State, SelfAtRisk)
	}
	if s.TimerOvershootUs > float64(SelfTimerRisk)/1e3 {
		s.Why = append(s.Why, fmt.Sprintf("a 100 µs sleep overshoots by %.0f µs", s.TimerOvershootUs))
		s.State = worseSelf(s.State, SelfAtRisk)
	}
	pressed := s.CPUPressure >= SelfPressureRisk
	if pressed {
		s.Why = append(s.Why, fmt.Sprintf("the machine was short of CPU for %.0f%% of the run", 100*s.CPUPressure))
		s.State = worseSelf(s.State, SelfAtRisk)
	}
	// With the built-in simulator in this process, the runtime's waits
	// are its goroutines' too (thousands of streams woken together): not
	// surge's alone, so not judged.
	if !s.InProcess && s.SchedLatP99Us >= float64(SelfWaitRisk)/1e3 {
		s.Why = append(s.Why, fmt.Sprintf("its goroutines waited p99 %.1f ms to run", s.SchedLatP99Us/1e3))
		s.State = worseSelf(s.State, SelfAtRisk)
	}
	if s.State == SelfKeptUp {
		return
	}
	switch {
	case pressed && !cpuBound:
		s.Advice = fmt.Sprintf("other work competed for the CPU while surge used %.2f of the %s it may use: run surge where nothing else needs its cores (pin it with taskset to cores of its own, or a quieter machine), or spread the load (--workers N)", s.CoresUsed, cores(s.CoresAvailable))
	case cpuBound || s.CoresAvailable > 0 && s.CoresUsed >= 0.5*s.CoresAvailable:
		s.Advice = fmt.Sprintf("give surge more CPU: it may use %s (GOMAXPROCS %d, %d CPUs%s); raise the CPU quota or GOMAXPROCS, or spread the load over generators (--workers N, or --shard I/N on N machines)",
			cores(s.CoresAvailable), s.GOMAXPROCS, s.NumCPU, quotaNote(s.CPUQuotaCores))
		if s.InProcess {
			s.Advice += "; the built-in simulator ran in this process and used part of it: give it its own process (surge sim) or machine"
		}
	case s.TimerOvershootUs > float64(SelfTimerRisk)/1e3:
		s.Advice = "this machine's timer is coarse: sends and timestamps are no finer than the overshoot; --spin 1ms sends by spinning the last millisecond"
	default:
		s.Advice = fmt.Sprintf("surge used %.2f of the %s it may use, so another process may hold the cores (pin surge with taskset, or move it to a quieter machine), or spread the load (--workers N)", s.CoresUsed, cores(s.CoresAvailable))
	}
}

func worseSelf(a, b SelfState) SelfState {
	rank := map[SelfState]int{SelfNotJudged: 0, SelfKeptUp: 1, SelfAtRisk: 2, SelfBehind: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func cores(n float64) string {
	if n == 1 {
		return "1 core"
	}
	return fmt.Sprintf("%s cores", trimFloat(n))
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

func quotaNote(q float64) string {
	if q <= 0 {
		return ""
	}
	return ", a CPU quota of " + trimFloat(q)
}

// Line is the section in one line, for the terminal and the notes.
func (s *SelfAccuracy) Line() string {
	var b strings.Builder
	b.WriteString("self-accuracy: ")
	b.WriteString(map[SelfState]string{SelfNotJudged: "NOT JUDGED", SelfKeptUp: "the client KEPT UP", SelfAtRisk: "the client is AT RISK", SelfBehind: "the client FELL BEHIND"}[s.State])
	fmt.Fprintf(&b, " · send lag p50 %s, p99 %s, max %s over %d sends", analyze.FormatMs(s.LagP50Ms), analyze.FormatMs(s.LagP99Ms), analyze.FormatMs(s.LagMaxMs), s.Sends)
	var rates []string
	for _, p := range s.Phases {
		if p.ScheduledRPS > 0 {
			rates = append(rates, fmt.Sprintf("%s %.1f%%", p.Name, 100*p.AchievedRPS/p.ScheduledRPS))
		}
	}
	if len(rates) > 0 {
		b.WriteString(" · sent of the schedule: " + strings.Join(rates, ", "))
	}
	if s.CPUSeconds >= 0 {
		fmt.Fprintf(&b, " · CPU %.2f ms per request, %.2f of %s", s.CPUPerRequestMs, s.CoresUsed, cores(s.CoresAvailable))
		if s.InProcess {
			b.WriteString(" (the built-in simulator included)")
		}
	}
	if s.CPUPressure >= 0 {
		fmt.Fprintf(&b, " · CPU pressure %.0f%%", 100*s.CPUPressure)
	}
	if s.SchedLatP99Us >= 0 {
		fmt.Fprintf(&b, " · goroutine wait p50 %.0f µs, p99 %.0f µs", s.SchedLatP50Us, s.SchedLatP99Us)
	}
	fmt.Fprintf(&b, " · peak %d in flight · timer +%.0f µs", s.PeakInFlight, s.TimerOvershootUs)
	if s.ClockStepMs != 0 {
		fmt.Fprintf(&b, " · the wall clock stepped %s during the run (surge's times are monotonic)", analyze.FormatMs(s.ClockStepMs))
	}
	if len(s.Why) > 0 && s.State != SelfNotJudged {
		b.WriteString(" — " + strings.Join(s.Why, "; "))
	}
	if s.Advice != "" {
		b.WriteString(". What to do: " + s.Advice)
	}
	return b.String()
}
