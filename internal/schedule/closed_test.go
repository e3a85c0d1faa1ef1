package schedule

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestClosedLoopPlan(t *testing.T) {
	cases := []struct {
		name string
		loop ClosedLoop
		want []PhaseBounds
	}{
		{"with warmup", ClosedLoop{Users: 4, Warmup: 10 * time.Second, Duration: 40 * time.Second, Phase: "level"}, []PhaseBounds{
			{Name: PhaseWarmup, Start: 0, End: 10 * time.Second, Arrival: ArrivalClosed},
			{Name: "level", Start: 10 * time.Second, End: 50 * time.Second, Arrival: ArrivalClosed},
		}},
		{"without warmup", ClosedLoop{Users: 1, Duration: time.Minute, Phase: "level"}, []PhaseBounds{
			{Name: "level", Start: 0, End: time.Minute, Arrival: ArrivalClosed},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.loop.Plan()
			if got := p.Bounds(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("bounds\n got %+v\nwant %+v", got, tc.want)
			}
			if got, want := p.Duration(), tc.loop.Warmup+tc.loop.Duration; got != want {
				t.Errorf("duration %v, want %v", got, want)
			}
			// A closed plan is a label: it must never be built into a schedule.
			if _, err := Build(p, 1); err == nil {
				t.Error("Build accepted a closed-loop plan")
			}
			if _, err := Arrivals(p, 1); err == nil {
				t.Error("Arrivals accepted a closed-loop plan")
			}
		})
	}
}

func TestClosedLoopPhaseAt(t *testing.T) {
	cl := ClosedLoop{Users: 2, Warmup: 10 * time.Second, Duration: 20 * time.Second, Phase: "level"}
	cases := []struct {
		at   time.Duration
		want string
	}{
		{0, PhaseWarmup},
		{10*time.Second - 1, PhaseWarmup},
		{10 * time.Second, "level"},
		{30 * time.Second, "level"}, // after the end: still the level (requests in flight)
	}
	for _, tc := range cases {
		if got := cl.PhaseAt(tc.at); got != tc.want {
			t.Errorf("PhaseAt(%v) = %q, want %q", tc.at, got, tc.want)
		}
	}
	noWarmup := ClosedLoop{Users: 2, Duration: time.Second, Phase: "level"}
	if got := noWarmup.PhaseAt(0); got != "level" {
		t.Errorf("without warmup PhaseAt(0) = %q, want level", got)
	}
}

func TestClosedLoopValidate(t *testing.T) {
	good := ClosedLoop{Users: 3, Warmup: time.Second, Duration: time.Minute, Phase: "level"}
	cases := []struct {
		name string
		edit func(*ClosedLoop)
		want string // "" = valid
	}{
		{"valid", func(*ClosedLoop) {}, ""},
		{"no warmup", func(c *ClosedLoop) { c.Warmup = 0 }, ""},

		{"zero users", func(c *ClosedLoop) { c.Users = 0 }, "schedule: closed loop: users: must be ≥ 1, got 0"},
		{"negative users", func(c *ClosedLoop) { c.Users = -2 }, "schedule: closed loop: users: must be ≥ 1, got -2"},
		{"negative warmup", func(c *ClosedLoop) { c.Warmup = -time.Second }, "schedule: closed loop: warmup: must be ≥ 0, got -1s"},
		{"zero duration", func(c *ClosedLoop) { c.Duration = 0 }, "schedule: closed loop: duration: must be > 0, got 0s"},
		{"no phase", func(c *ClosedLoop) { c.Phase = "" }, "schedule: closed loop: phase: required"},
		{"phase named warmup", func(c *ClosedLoop) { c.Phase = PhaseWarmup }, `schedule: closed loop: phase: must differ from "warmup"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := good
			tc.edit(&cl)
			err := cl.Validate()
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

// The JSON field names are part of the manifest.
func TestClosedLoopJSON(t *testing.T) {
	b, err := json.Marshal(ClosedLoop{Users: 2, Warmup: time.Second, Duration: 2 * time.Second, Phase: "level"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"users":2,"warmup":1000000000,"duration":2000000000,"phase":"level"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
