package judge

import (
	"strings"
	"testing"
)

// healthy is a client that kept up: 1,000/s on 2 cores, a quarter used.
func healthy() SelfAccuracy {
	return SelfAccuracy{Sends: 25000, LagP50Ms: 0.03, LagP99Ms: 1.1, LagMaxMs: 9,
		Phases:     []SelfPhase{{Name: "main", Sends: 25000, ScheduledRPS: 1000, AchievedRPS: 999.9, LagP99Ms: 1.1}},
		CPUSeconds: 12.5, ElapsedS: 25, CPUPerRequestMs: 0.5, CoresUsed: 0.5, CoresAvailable: 2, GOMAXPROCS: 2, NumCPU: 2,
		PeakInFlight: 400, TimerOvershootUs: 60, CPUPressure: 0.05, SchedLatP50Us: 40, SchedLatP99Us: 400}
}

func TestSelfAccuracyRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*SelfAccuracy)
		state  SelfState
		why    string // in Why
		advice string // in Advice
	}{
		{"healthy", func(*SelfAccuracy) {}, SelfKeptUp, "", ""},
		{"too few sends", func(s *SelfAccuracy) { s.Sends = 12 }, SelfNotJudged, "12 sends: at least 20", ""},
		{"lag p99 over 10 ms", func(s *SelfAccuracy) { s.LagP99Ms = 14 }, SelfAtRisk, "send lag p99 14ms > 10ms", "another process may hold the cores"},
		{"lag p99 over 100 ms", func(s *SelfAccuracy) { s.LagP99Ms = 180 }, SelfBehind, "send lag p99 180ms > 100ms", ""},
		{"a phase sent under 95 %", func(s *SelfAccuracy) { s.Phases[0].AchievedRPS = 900 }, SelfBehind, "main: sent 900.00 req/s of the 1000.00 scheduled (90%)", ""},
		{"a phase's lag alone", func(s *SelfAccuracy) { s.Phases[0].LagP99Ms = 150 }, SelfBehind, "main: send lag p99 150ms", ""},
		{"CPU saturated, lag still fine", func(s *SelfAccuracy) { s.CoresUsed = 1.85 }, SelfAtRisk, "it used 1.85 of the 2 cores it may use", "give surge more CPU"},
		{"one core under a quota", func(s *SelfAccuracy) { s.CoresAvailable, s.CPUQuotaCores, s.CoresUsed = 0.5, 0.5, 0.48 }, SelfAtRisk, "of the 0.50 cores", "a CPU quota of 0.50"},
		{"a machine short of CPU", func(s *SelfAccuracy) { s.CPUPressure = 0.5 }, SelfAtRisk, "short of CPU for 50% of the run", "pin it with taskset"},
		{"goroutines waited to run", func(s *SelfAccuracy) { s.SchedLatP99Us = 3146 }, SelfAtRisk, "waited p99 3.1 ms to run", "another process may hold the cores"},
		{"waits of the in-process simulator", func(s *SelfAccuracy) { s.SchedLatP99Us, s.InProcess = 2621, true }, SelfKeptUp, "", ""},
		{"no PSI, no runtime metric", func(s *SelfAccuracy) { s.CPUPressure, s.SchedLatP50Us, s.SchedLatP99Us = -1, -1, -1 }, SelfKeptUp, "", ""},
		{"a coarse timer", func(s *SelfAccuracy) { s.TimerOvershootUs = 15000 }, SelfAtRisk, "overshoots by 15000 µs", "--spin 1ms"},
		{"behind and CPU-bound: the simulator shares it", func(s *SelfAccuracy) { s.LagP99Ms, s.CoresUsed, s.InProcess = 400, 1.95, true }, SelfBehind, "send lag p99", "the built-in simulator ran in this process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			tc.change(&s)
			s.Judge()
			why := strings.Join(s.Why, "; ")
			if s.State != tc.state || !strings.Contains(why, tc.why) || !strings.Contains(s.Advice, tc.advice) || (tc.state == SelfAtRisk || tc.state == SelfBehind) == (s.Advice == "") {
				t.Errorf("state %s, why %q, advice %q; want %s, %q, %q", s.State, why, s.Advice, tc.state, tc.why, tc.advice)
			}
		})
	}
}

// The line names the verdict, the lag, the rates per phase, the CPU, the
// peak and the timer; a bad verdict adds why and what to do.
func TestSelfAccuracyLine(t *testing.T) {
	s := healthy()
	s.Judge()
	want := "self-accuracy: the client KEPT UP · send lag p50 0.03ms, p99 1.1ms, max 9ms over 25000 sends · sent of the schedule: main 100.0% · CPU 0.50 ms per request, 0.50 of 2 cores · CPU pressure 5% · goroutine wait p50 40 µs, p99 400 µs · peak 400 in flight · timer +60 µs"
	if got := s.Line(); got != want {
		t.Errorf("line\n%s\nwant\n%s", got, want)
	}
	s.CoresUsed, s.ClockStepMs = 1.9, -3600000
	s.Judge()
	got := s.Line()
	for _, w := range []string{"the client is AT RISK", "the wall clock stepped", "— it used 1.90 of the 2 cores", ". What to do: give surge more CPU"} {
		if !strings.Contains(got, w) {
			t.Errorf("line lacks %q:\n%s", w, got)
		}
	}
}
