package schedule

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestPlanYAML(t *testing.T) {
	const doc = `
baseline_rps: 8
phases:
  - {name: warmup, duration: 2m, multiplier: 1}
  - {name: baseline, duration: 5m, multiplier: 1, arrival: constant}
  - {name: burst, duration: 1m, rate: 80, arrival: gamma, burstiness: 0.5}
  - {name: replay, duration: 10s, arrival: replay, trace: good.csv, speed: 2}
`
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var p Plan
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if err := p.LoadTraces("testdata"); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []PhaseBounds{
		{Name: "warmup", Start: 0, End: 2 * time.Minute, Arrival: ArrivalPoisson, Rate: 8, Multiplier: 1, Expected: 960},
		{Name: "baseline", Start: 2 * time.Minute, End: 7 * time.Minute, Arrival: ArrivalConstant, Rate: 8, Multiplier: 1, Expected: 2400},
		{Name: "burst", Start: 7 * time.Minute, End: 8 * time.Minute, Arrival: ArrivalGamma, Rate: 80, Multiplier: 10, Expected: 4800},
		{Name: "replay", Start: 8 * time.Minute, End: 8*time.Minute + 10*time.Second, Arrival: ArrivalReplay, Rate: 0.5, Multiplier: 0.5 / 8, Expected: 5},
	}
	got := p.Bounds()
	if len(got) != len(want) {
		t.Fatalf("bounds %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("phase %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	// Strict decoding rejects unknown fields.
	dec = yaml.NewDecoder(strings.NewReader("phases:\n  - {name: a, duration: 1s, rps: 3}\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&Plan{}); err == nil || !strings.Contains(err.Error(), "field rps not found") {
		t.Errorf("unknown field: %v", err)
	}
}
