package compare

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/sim"
)

// manifestOf is the manifest a simulated run with these options writes,
// as far as Variables reads it.
func manifestOf(o run.Options, extra any) *record.Manifest {
	sc := "surge simulator " + mustJSON(o.Sim)
	return &record.Manifest{Tool: "surge", Version: "dev", Command: "burst", RunID: "burst-5x", Target: "engine model in virtual time (--simulate)",
		VirtualTime: true, Simulated: true, Model: o.Model, Seed: o.Seed, Serving: sc,
		Config: run.ManifestConfig{Options: o, Experiment: extra}}
}

func TestVariables(t *testing.T) {
	base := run.Options{Sim: sim.DefaultConfig()}
	base.Model, base.Timeout, base.Profile, base.Seed, base.Out, base.Quiet = "m", 60e9, "chat", 1, "out/a", true
	type burstExtra struct {
		Multiplier float64        `json:"multiplier"`
		Burst      map[string]any `json:"burst"`
	}
	extra := func(k float64, mults []float64) burstExtra {
		return burstExtra{k, map[string]any{"baseline_rps": 8, "multipliers": mults, "burst": 60e9}}
	}
	cases := []struct {
		name   string
		change func(o *run.Options)
		extra  burstExtra
		want   []string // the confounding variables
		others []string // coverage and observation
		values []string // of the first variable
	}{
		{"bookkeeping only", func(o *run.Options) { o.Out, o.Quiet, o.Force = "out/b", false, true }, extra(10, []float64{5}), nil, nil, nil},
		{"simulator knob", func(o *run.Options) { o.Sim.MaxWaiting = 20 }, extra(5, []float64{5}), []string{"max-waiting"}, nil, []string{"0", "20"}},
		{"duration knob", func(o *run.Options) { o.Sim.ModelReadyDelay = 90e9 }, extra(5, []float64{5}), []string{"model-ready-delay"}, nil, []string{"45s", "1m30s"}},
		{"option", func(o *run.Options) { o.Timeout = 30e9 }, extra(5, []float64{5}), []string{"timeout"}, nil, []string{"1m0s", "30s"}},
		{"model twice recorded, once named", func(o *run.Options) { o.Model = "n" }, extra(5, []float64{5}), []string{"model"}, nil, []string{"m", "n"}},
		{"seed in options, manifest and sim", func(o *run.Options) { o.Seed, o.Sim.Seed = 2, 2 }, extra(5, []float64{5}), []string{"seed"}, nil, []string{"1", "2"}},
		{"coverage and observation", func(o *run.Options) { o.MetricsURL = "http://x/metrics" }, extra(5, []float64{2, 5}), nil, []string{"metrics-url", "multipliers"}, nil},
		{"repeats", func(o *run.Options) {}, burstExtra{5, map[string]any{"baseline_rps": 8, "multipliers": []float64{5}, "burst": 60e9, "repeat": 3}}, nil, []string{"repeat"}, nil},
		{"experiment setting", func(o *run.Options) {}, burstExtra{5, map[string]any{"baseline_rps": 6, "multipliers": []float64{5}, "burst": 60e9}}, []string{"baseline-rps"}, nil, []string{"8", "6"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.change(&o)
			vs := Variables([]*record.Manifest{manifestOf(base, extra(5, []float64{5})), manifestOf(o, tc.extra)})
			var got, others []string
			for _, v := range vs {
				if v.confounds() {
					got = append(got, v.Name)
				} else {
					others = append(others, v.Name)
				}
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(others, tc.others) {
				t.Fatalf("variables %v, others %v; want %v, %v (%+v)", got, others, tc.want, tc.others, vs)
			}
			if tc.values != nil && !slices.Equal(vs[0].Values, tc.values) {
				t.Errorf("values %v, want %v", vs[0].Values, tc.values)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Review 14 finding 10: a burstiness is a number, not a duration (its
// name holds "burst"), 1 reads as Poisson; an unset mix or length is the
// profile's default, not "" or 0.
func TestValuesForPeople(t *testing.T) {
	base := run.Options{Sim: sim.DefaultConfig()}
	base.Model, base.Timeout, base.Profile, base.Seed = "m", 60e9, "chat", 1
	type extra struct {
		Burst map[string]any `json:"burst"`
	}
	vs := Variables([]*record.Manifest{manifestOf(base, extra{map[string]any{"burstiness": 1}}), manifestOf(base, extra{map[string]any{"burstiness": 0.5}})})
	if len(vs) != 1 || vs[0].Name != "burstiness" || !slices.Equal(vs[0].Values, []string{"1 (poisson)", "0.5"}) {
		t.Errorf("variables %+v, want burstiness 1 (poisson) → 0.5", vs)
	}
	for _, tc := range [][2]string{{"mix", `""`}, {"output-tokens", "0"}, {"prompt-tokens", "0"}} {
		if got := shown(tc[0], tc[1]); got != "profile default" {
			t.Errorf("%s %s shown as %q", tc[0], tc[1], got)
		}
	}
	if got := shown("max-waiting", "0"); got != "0" {
		t.Errorf("max-waiting 0 shown as %q", got)
	}
}
