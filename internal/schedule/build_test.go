package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func demoPlan(arrival string, burstiness float64) Plan {
	return Burst{
		BaselineRPS: 20, Multiplier: 5, Arrival: arrival, Burstiness: burstiness,
		Warmup: 10 * time.Second, Baseline: 30 * time.Second, Burst: 10 * time.Second, Recovery: 30 * time.Second,
	}.Plan()
}

func mustBuild(t *testing.T, p Plan, seed int64) []Arrival {
	t.Helper()
	as, err := Build(p, seed)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// byPhase returns each phase's arrival offsets relative to the phase start.
func byPhase(p Plan, as []Arrival) map[string][]time.Duration {
	start := map[string]time.Duration{}
	for _, b := range p.Bounds() {
		start[b.Name] = b.Start
	}
	out := map[string][]time.Duration{}
	for _, a := range as {
		out[a.Phase] = append(out[a.Phase], a.At-start[a.Phase])
	}
	return out
}

func TestBuildDeterministic(t *testing.T) {
	for _, kind := range []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma} {
		t.Run(kind, func(t *testing.T) {
			b := 0.0
			if kind == ArrivalGamma {
				b = 0.3
			}
			p := demoPlan(kind, b)
			a1, a2 := mustBuild(t, p, 99), mustBuild(t, p, 99)
			if !reflect.DeepEqual(a1, a2) {
				t.Fatal("same plan and seed gave different arrivals")
			}
			a3 := mustBuild(t, p, 100)
			if same := reflect.DeepEqual(a1, a3); same != (kind == ArrivalConstant) {
				t.Errorf("seed 99 vs 100 identical = %v; want identical only for constant", same)
			}
		})
	}
}

func TestBuildPhasesIndependent(t *testing.T) {
	// Changing the burst phase (rate, process, duration) leaves every other
	// phase's offsets, relative to its own start, unchanged.
	base := demoPlan(ArrivalPoisson, 0)
	changed := demoPlan(ArrivalPoisson, 0)
	changed.Phases[2].Multiplier = 10
	changed.Phases[2].Arrival, changed.Phases[2].Burstiness = ArrivalGamma, 0.2
	changed.Phases[2].Duration = 17 * time.Second
	x, y := byPhase(base, mustBuild(t, base, 5)), byPhase(changed, mustBuild(t, changed, 5))
	for _, name := range []string{PhaseWarmup, PhaseBaseline, PhaseRecovery} {
		if len(x[name]) == 0 || !reflect.DeepEqual(x[name], y[name]) {
			t.Errorf("phase %s changed when only the burst did", name)
		}
	}
	if reflect.DeepEqual(x[PhaseBurst], y[PhaseBurst]) {
		t.Error("burst unchanged; the test cannot tell")
	}
	// And the phase streams differ from each other (derived by name).
	if reflect.DeepEqual(x[PhaseBaseline][:10], x[PhaseRecovery][:10]) {
		t.Error("baseline and recovery share a random stream")
	}
}

func TestBuildPhasesJoinProperty(t *testing.T) {
	kinds := []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma, ArrivalReplay}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 300 {
		p := Plan{BaselineRPS: 1 + rng.Float64()*50}
		for j := range 1 + rng.IntN(6) {
			ph := Phase{Name: fmt.Sprintf("p%d", j), Duration: time.Duration(1 + rng.Int64N(int64(5*time.Second)))}
			switch ph.Arrival = kinds[rng.IntN(len(kinds))]; ph.Arrival {
			case ArrivalReplay:
				tr := &Trace{}
				var off time.Duration
				for range 1 + rng.IntN(50) {
					off += time.Duration(rng.Int64N(int64(200 * time.Millisecond)))
					tr.Entries = append(tr.Entries, TraceEntry{Offset: off})
				}
				ph.Trace, ph.Speed = tr, 0.5+rng.Float64()*2
			case ArrivalGamma:
				ph.Burstiness = 0.1 + rng.Float64()*3
				fallthrough
			default:
				if rng.IntN(2) == 0 {
					ph.Rate = rng.Float64() * 200
				} else {
					ph.Multiplier = rng.Float64() * 10
				}
				if ph.Rate == 0 && ph.Multiplier == 0 {
					ph.Rate = 1
				}
			}
			p.Phases = append(p.Phases, ph)
		}
		as := mustBuild(t, p, int64(i))
		bounds := p.Bounds()
		if bounds[0].Start != 0 || bounds[len(bounds)-1].End != p.Duration() {
			t.Fatalf("plan %d: bounds %+v do not cover [0, %v)", i, bounds, p.Duration())
		}
		for k := 1; k < len(bounds); k++ {
			if bounds[k].Start != bounds[k-1].End {
				t.Fatalf("plan %d: gap or overlap between phases %d and %d: %+v", i, k-1, k, bounds)
			}
		}
		for k, a := range as {
			if a.Seq != int64(k) {
				t.Fatalf("plan %d: arrival %d has seq %d", i, k, a.Seq)
			}
			if k > 0 && a.At < as[k-1].At {
				t.Fatalf("plan %d: arrival %d at %v before %v", i, k, a.At, as[k-1].At)
			}
			// The label is the phase whose [Start, End) holds At.
			var holder string
			for _, b := range bounds {
				if a.At >= b.Start && a.At < b.End {
					holder = b.Name
				}
			}
			if a.Phase != holder {
				t.Fatalf("plan %d: arrival at %v labelled %q, lies in %q", i, a.At, a.Phase, holder)
			}
		}
		// Exact counts where the count is deterministic.
		got := map[string]int{}
		for _, a := range as {
			got[a.Phase]++
		}
		for _, b := range bounds {
			if (b.Arrival == ArrivalConstant || b.Arrival == ArrivalReplay) && float64(got[b.Name]) != b.Expected {
				t.Fatalf("plan %d phase %s (%s): %d arrivals, expected %v", i, b.Name, b.Arrival, got[b.Name], b.Expected)
			}
		}
	}
}

func TestBuildConstantBoundary(t *testing.T) {
	// 2/s for 1s then 4/s for 1s: phase one has arrivals at 0 and 0.5s; the
	// arrival that would fall at 1s belongs to phase two, which restarts at
	// its own start.
	p := Plan{Phases: []Phase{
		{Name: "a", Duration: time.Second, Rate: 2, Arrival: ArrivalConstant},
		{Name: "b", Duration: time.Second, Rate: 4, Arrival: ArrivalConstant},
	}}
	want := []Arrival{
		{Seq: 0, At: 0, Phase: "a"},
		{Seq: 1, At: 500 * time.Millisecond, Phase: "a"},
		{Seq: 2, At: 1000 * time.Millisecond, Phase: "b"},
		{Seq: 3, At: 1250 * time.Millisecond, Phase: "b"},
		{Seq: 4, At: 1500 * time.Millisecond, Phase: "b"},
		{Seq: 5, At: 1750 * time.Millisecond, Phase: "b"},
	}
	if got := mustBuild(t, p, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestBuildReplay(t *testing.T) {
	tr, err := ReadTraceFile("testdata/good.csv")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		speed    float64
		duration time.Duration
		wantN    int
	}{
		{"as recorded", 0, tr.Span(0), 5},
		{"speed 1", 1, tr.Span(1), 5},
		{"twice as fast", 2, tr.Span(2), 5},
		{"half speed", 0.5, tr.Span(0.5), 5},
		{"cut at the phase end", 1, 2500 * time.Millisecond, 4}, // the entry at 2.5 s is outside
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Plan{BaselineRPS: 3, Phases: []Phase{
				{Name: "warm", Duration: 2 * time.Second, Rate: 3, Arrival: ArrivalConstant},
				{Name: "replay", Duration: tc.duration, Arrival: ArrivalReplay, Trace: tr, Speed: tc.speed},
				{Name: "after", Duration: time.Second, Multiplier: 1, Arrival: ArrivalConstant},
			}}
			as := mustBuild(t, p, 1)
			var got []Arrival
			for _, a := range as {
				if a.Phase == "replay" {
					got = append(got, a)
				}
			}
			if len(got) != tc.wantN {
				t.Fatalf("%d replayed arrivals, want %d", len(got), tc.wantN)
			}
			speed := tc.speed
			if speed == 0 {
				speed = 1
			}
			for i, a := range got {
				e := tr.Entries[i]
				want := 2*time.Second + time.Duration(math.Round(float64(e.Offset)/speed))
				if a.At != want || a.PromptTokens != e.PromptTokens || a.OutputTokens != e.OutputTokens {
					t.Errorf("arrival %d = %+v, want at %v with tokens %d/%d", i, a, want, e.PromptTokens, e.OutputTokens)
				}
				if a.Seq != int64(6+i) { // after 2 s × 3/s in "warm"
					t.Errorf("arrival %d seq %d, want %d", i, a.Seq, 6+i)
				}
			}
			b := p.Bounds()[1]
			if b.Expected != float64(tc.wantN) || b.Rate != float64(tc.wantN)/tc.duration.Seconds() || b.Multiplier != b.Rate/3 {
				t.Errorf("replay bounds %+v", b)
			}
		})
	}
}

func TestBuildReplayExactOffsets(t *testing.T) {
	// Speed 1 reproduces arbitrary nanosecond offsets exactly.
	rng := rand.New(rand.NewPCG(1, 1))
	tr := &Trace{}
	var off time.Duration
	for range 10000 {
		off += time.Duration(rng.Int64N(int64(time.Second)))
		tr.Entries = append(tr.Entries, TraceEntry{Offset: off, PromptTokens: rng.IntN(100), OutputTokens: rng.IntN(100)})
	}
	p := Plan{Phases: []Phase{{Name: "r", Duration: tr.Span(1), Arrival: ArrivalReplay, Trace: tr}}}
	as := mustBuild(t, p, 0)
	if len(as) != len(tr.Entries) {
		t.Fatalf("%d arrivals from %d entries", len(as), len(tr.Entries))
	}
	for i, a := range as {
		if e := tr.Entries[i]; a.At != e.Offset || a.PromptTokens != e.PromptTokens || a.OutputTokens != e.OutputTokens {
			t.Fatalf("arrival %d = %+v, entry %+v", i, a, e)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(Plan{}, 1); err == nil || err.Error() != "schedule: phases: none" {
		t.Errorf("empty plan: %v", err)
	}
	huge := Plan{Phases: []Phase{{Name: "soak", Duration: 24 * time.Hour, Rate: 1000}}}
	if _, err := Build(huge, 1); err == nil || err.Error() != "schedule: plan: 86400000 expected arrivals exceed the 20000000 a plan may hold in memory: shorten the duration or lower the rate" {
		t.Errorf("huge plan: %v", err)
	}
	// Streaming the same plan works and stops when asked.
	all, err := Arrivals(huge, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for a := range all {
		if a.Seq != int64(n) {
			t.Fatalf("seq %d at %d", a.Seq, n)
		}
		if n++; n == 1000 {
			break
		}
	}
	if n != 1000 {
		t.Errorf("streamed %d", n)
	}
}

func TestArrivalsMatchesBuild(t *testing.T) {
	p := demoPlan(ArrivalGamma, 0.7)
	built := mustBuild(t, p, 3)
	all, err := Arrivals(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	var streamed []Arrival
	for a := range all {
		streamed = append(streamed, a)
	}
	if !reflect.DeepEqual(built, streamed) {
		t.Error("Arrivals and Build differ")
	}
}

func BenchmarkBuildPoisson(b *testing.B) {
	p := Plan{Phases: []Phase{{Name: "p", Duration: 100 * time.Second, Rate: 1000}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(p, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e5, "ns/arrival")
}
