package schedule

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestPlanValidate(t *testing.T) {
	trace := &Trace{Name: "t.csv", Column: ColOffsetS, Entries: []TraceEntry{{Offset: 0}}}
	ok := func(mut func(*Phase)) Plan {
		ph := Phase{Name: "burst", Duration: time.Minute, Multiplier: 5}
		mut(&ph)
		return Plan{BaselineRPS: 8, Phases: []Phase{{Name: "baseline", Duration: time.Minute, Multiplier: 1}, ph}}
	}
	tests := []struct {
		name string
		plan Plan
		want string // "" = valid
	}{
		{"burst plan", Burst{BaselineRPS: 8, Multiplier: 10}.Plan(), ""},
		{"absolute rate without baseline", Plan{Phases: []Phase{{Name: "a", Duration: time.Second, Rate: 3, Arrival: ArrivalConstant}}}, ""},
		{"gamma", ok(func(p *Phase) { p.Arrival, p.Burstiness = ArrivalGamma, 0.5 }), ""},
		{"replay", ok(func(p *Phase) { p.Multiplier, p.Arrival, p.Trace, p.Speed = 0, ArrivalReplay, trace, 2 }), ""},

		{"no phases", Plan{BaselineRPS: 1}, `schedule: phases: none`},
		{"negative baseline", Plan{BaselineRPS: -1}, `schedule: baseline_rps: must be a finite number of requests/s >= 0, got -1`},
		{"NaN baseline", Plan{BaselineRPS: math.NaN()}, `schedule: baseline_rps: must be a finite number of requests/s >= 0, got NaN`},
		{"huge baseline", Plan{BaselineRPS: 1e7}, `schedule: baseline_rps: must be <= 1e+06, got 1e+07`},
		{"no name", ok(func(p *Phase) { p.Name = "" }), `schedule: phases[1]: name: required`},
		{"duplicate name", ok(func(p *Phase) { p.Name = "baseline" }), `schedule: phase "baseline": name: duplicate`},
		{"zero duration", ok(func(p *Phase) { p.Duration = 0 }), `schedule: phase "burst": duration: must be > 0, got 0s`},
		{"negative duration", ok(func(p *Phase) { p.Duration = -time.Second }), `schedule: phase "burst": duration: must be > 0, got -1s`},
		{"negative rate", ok(func(p *Phase) { p.Multiplier, p.Rate = 0, -2 }), `schedule: phase "burst": rate: must be a finite number of arrivals/s >= 0, got -2`},
		{"infinite rate", ok(func(p *Phase) { p.Multiplier, p.Rate = 0, math.Inf(1) }), `schedule: phase "burst": rate: must be a finite number of arrivals/s >= 0, got +Inf`},
		{"rate too high", ok(func(p *Phase) { p.Multiplier, p.Rate = 0, 2e6 }), `schedule: phase "burst": rate: must be <= 1e+06, got 2e+06`},
		{"negative multiplier", ok(func(p *Phase) { p.Multiplier = -1 }), `schedule: phase "burst": multiplier: must be a finite number > 0 (of baseline_rps), got -1`},
		{"rate and multiplier", ok(func(p *Phase) { p.Rate = 40 }), `schedule: phase "burst": multiplier: set rate or multiplier, not both`},
		{"neither rate nor multiplier", ok(func(p *Phase) { p.Multiplier = 0 }), `schedule: phase "burst": rate: set rate (arrivals/s > 0) or multiplier (> 0, of baseline_rps); with both 0 the phase would send nothing`},
		{"multiplier without baseline", Plan{Phases: []Phase{{Name: "burst", Duration: time.Second, Multiplier: 2}}}, `schedule: phase "burst": multiplier: needs baseline_rps > 0`},
		{"multiplier too high", ok(func(p *Phase) { p.Multiplier = 2e5 }), `schedule: phase "burst": multiplier: rate 200000 × 8 = 1.6e+06 exceeds 1e+06`},
		{"unknown arrival", ok(func(p *Phase) { p.Arrival = "uniform" }), `schedule: phase "burst": arrival: unknown process "uniform" (want constant, poisson, gamma, replay or none)`},
		{"gamma without burstiness", ok(func(p *Phase) { p.Arrival = ArrivalGamma }), `schedule: phase "burst": burstiness: must be > 0 for gamma arrivals`},
		{"gamma negative burstiness", ok(func(p *Phase) { p.Arrival, p.Burstiness = ArrivalGamma, -1 }), `schedule: phase "burst": burstiness: must be > 0, got -1`},
		{"burstiness on poisson", ok(func(p *Phase) { p.Burstiness = 2 }), `schedule: phase "burst": burstiness: only for gamma arrivals, not poisson`},
		{"speed on constant", ok(func(p *Phase) { p.Arrival, p.Speed = ArrivalConstant, 2 }), `schedule: phase "burst": speed: only for replay arrivals, not constant`},
		{"trace on poisson", ok(func(p *Phase) { p.TraceFile = "t.csv" }), `schedule: phase "burst": trace: only for replay arrivals, not poisson`},
		{"replay with rate", ok(func(p *Phase) { p.Multiplier, p.Arrival, p.Trace, p.Rate = 0, ArrivalReplay, trace, 3 }), `schedule: phase "burst": rate: not used by replay arrivals (use speed)`},
		{"replay with multiplier", ok(func(p *Phase) { p.Arrival, p.Trace = ArrivalReplay, trace }), `schedule: phase "burst": multiplier: not used by replay arrivals (use speed)`},
		{"replay without trace", ok(func(p *Phase) { p.Multiplier, p.Arrival = 0, ArrivalReplay }), `schedule: phase "burst": trace: required for replay arrivals`},
		{"replay trace not loaded", ok(func(p *Phase) { p.Multiplier, p.Arrival, p.TraceFile = 0, ArrivalReplay, "t.csv" }), `schedule: phase "burst": trace: "t.csv" not loaded (see Plan.LoadTraces)`},
		{"replay empty trace", ok(func(p *Phase) { p.Multiplier, p.Arrival, p.Trace = 0, ArrivalReplay, &Trace{} }), `schedule: phase "burst": trace: no entries`},
		{"replay negative speed", ok(func(p *Phase) { p.Multiplier, p.Arrival, p.Trace, p.Speed = 0, ArrivalReplay, trace, -1 }), `schedule: phase "burst": speed: must be > 0 (or 0 for 1), got -1`},
		{"total overflows", Plan{Phases: []Phase{
			{Name: "a", Duration: math.MaxInt64 / 2, Rate: 1},
			{Name: "b", Duration: math.MaxInt64/2 + 2, Rate: 1},
		}}, `schedule: phase "b": duration: plan longer than 2562047h47m16.854775807s`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.plan.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("no error, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestPhaseValidate(t *testing.T) {
	ph := Phase{Name: "burst", Duration: 0, Rate: 1}
	if err := ph.Validate(); err == nil || err.Error() != `schedule: phase "burst": duration: must be > 0, got 0s` {
		t.Errorf("Validate: %v", err)
	}
	ph.Duration = time.Second
	if err := ph.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestBurstPlanBounds(t *testing.T) {
	p := Burst{BaselineRPS: 8, Multiplier: 5, Arrival: ArrivalConstant}.Plan()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []PhaseBounds{
		{Name: PhaseWarmup, Start: 0, End: 2 * time.Minute, Arrival: ArrivalConstant, Rate: 8, Multiplier: 1, Expected: 960},
		{Name: PhaseBaseline, Start: 2 * time.Minute, End: 7 * time.Minute, Arrival: ArrivalConstant, Rate: 8, Multiplier: 1, Expected: 2400},
		{Name: PhaseBurst, Start: 7 * time.Minute, End: 8 * time.Minute, Arrival: ArrivalConstant, Rate: 40, Multiplier: 5, Expected: 2400},
		{Name: PhaseRecovery, Start: 8 * time.Minute, End: 13 * time.Minute, Arrival: ArrivalConstant, Rate: 8, Multiplier: 1, Expected: 2400},
	}
	if got := p.Bounds(); !reflect.DeepEqual(got, want) {
		t.Errorf("Bounds:\n got %+v\nwant %+v", got, want)
	}
	if got := p.Duration(); got != 13*time.Minute {
		t.Errorf("Duration = %v", got)
	}
	// Explicit durations override the defaults.
	q := Burst{BaselineRPS: 1, Multiplier: 2, Warmup: time.Second, Baseline: 2 * time.Second, Burst: 3 * time.Second, Recovery: 4 * time.Second}.Plan()
	if got := q.Duration(); got != 10*time.Second {
		t.Errorf("custom Duration = %v", got)
	}
	if got := q.Bounds()[2]; got.Arrival != DefaultArrival || got.Expected != 6 || got.Rate != 2 {
		t.Errorf("custom burst bounds %+v", got)
	}
}

func TestLoadTraces(t *testing.T) {
	p := Plan{Phases: []Phase{{Name: "replay", Duration: time.Minute, Arrival: ArrivalReplay, TraceFile: "good.csv"}}}
	if err := p.Validate(); err == nil {
		t.Fatal("validated before loading")
	}
	if err := p.LoadTraces("testdata"); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := p.Phases[0].Trace.Name; got != "testdata/good.csv" {
		t.Errorf("trace name %q", got)
	}
	bad := Plan{Phases: []Phase{{Name: "replay", Duration: time.Minute, Arrival: ArrivalReplay, TraceFile: "bad_offset.csv"}}}
	if err := bad.LoadTraces("testdata"); err == nil || err.Error() != `schedule: testdata/bad_offset.csv:4: offset_s: not a number (a 1-byte text, not shown)` {
		t.Errorf("bad trace: %v", err)
	}
}

// A phase without arrivals (a sessions run's drain) takes no rate and
// yields nothing; its bounds count zero.
func TestNoArrivalPhase(t *testing.T) {
	p := Plan{Phases: []Phase{{Name: "main", Duration: 10 * time.Second, Rate: 2, Arrival: ArrivalConstant}, {Name: PhaseDrain, Duration: 5 * time.Second, Arrival: ArrivalNone}}}
	arr, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(arr) != 20 || arr[len(arr)-1].Phase != "main" {
		t.Fatalf("%d arrivals, the last in %q; want 20 in main", len(arr), arr[len(arr)-1].Phase)
	}
	if b := p.Bounds()[1]; b.Start != 10*time.Second || b.End != 15*time.Second || b.Rate != 0 || b.Expected != 0 {
		t.Fatalf("drain bounds %+v", b)
	}
	ph := Phase{Name: PhaseDrain, Duration: time.Second, Arrival: ArrivalNone, Rate: 3}
	if err := ph.Validate(); err == nil || err.Error() != `schedule: phase "drain": rate: not used by a phase without arrivals` {
		t.Fatalf("rate on a phase without arrivals: %v", err)
	}
}

func TestPhaseNameAt(t *testing.T) {
	b := []PhaseBounds{{Name: "warmup", Start: 0, End: 10}, {Name: "main", Start: 10, End: 20}}
	for at, want := range map[time.Duration]string{-1: "", 0: "warmup", 9: "warmup", 10: "main", 25: "main"} {
		if got := PhaseNameAt(b, at); got != want {
			t.Errorf("PhaseNameAt(%d) = %q, want %q", at, got, want)
		}
	}
}
