package workload

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestDistValidate(t *testing.T) {
	tests := []struct {
		name string
		d    Dist
		want string // "" = valid
	}{
		{"lognormal", LogNormal(500, 0.6, 32, 4096), ""},
		{"lognormal sigma 0", LogNormal(10, 0, 10, 10), ""},
		{"uniform", Uniform(3000, 4000), ""},
		{"uniform single value", Uniform(5, 5), ""},
		{"fixed", Fixed(7), ""},

		{"no kind", Dist{}, "kind: required (lognormal, uniform, normal, empirical or fixed)"},
		{"unknown kind", Dist{Kind: "gamma"}, `kind: unknown "gamma" (want lognormal, uniform, normal, empirical or fixed)`},
		{"normal without range", Dist{Kind: KindNormal, MeanTokens: 500, SD: 100}, "min: must be in [1, 1048576], got 0"},
		{"normal sd", Dist{Kind: KindNormal, MeanTokens: 500, SD: -1, Min: 1, Max: 900}, "sd: must be >= 0, got -1"},
		{"normal mean outside", Dist{Kind: KindNormal, MeanTokens: 1000, SD: 1, Min: 1, Max: 900}, "mean: must be in [min, max] = [1, 900], got 1000"},
		{"empirical mismatched", Dist{Kind: KindEmpirical, Values: []int{1, 2}, Counts: []int64{1}}, "values, counts: want as many counts as values, at least one (got 2 and 1)"},
		{"empirical unsorted", Dist{Kind: KindEmpirical, Values: []int{5, 2}, Counts: []int64{1, 1}}, "values[1]: must be above values[0] (5), got 2"},
		{"empirical all zero", Dist{Kind: KindEmpirical, Values: []int{5}, Counts: []int64{0}}, "counts: at least one must be > 0"},
		{"empirical with median", Dist{Kind: KindEmpirical, Values: []int{5}, Counts: []int64{1}, Median: 3}, "median: not used by empirical"},
		{"negative sigma", LogNormal(500, -1, 32, 4096), "sigma: must be >= 0, got -1"},
		{"NaN sigma", LogNormal(500, math.NaN(), 32, 4096), "sigma: must be >= 0, got NaN"},
		{"lognormal without clamp", LogNormal(500, 0.5, 0, 0), "min: must be in [1, 1048576], got 0"},
		{"lognormal max too big", LogNormal(500, 0.5, 1, 1<<21), "max: must be in [1, 1048576], got 2097152"},
		{"median outside clamp", LogNormal(5000, 0.5, 1, 4096), "median: must be in [min, max] = [1, 4096], got 5000"},
		{"NaN median", LogNormal(math.NaN(), 0.5, 1, 4096), "median: must be in [min, max] = [1, 4096], got NaN"},
		{"value on lognormal", Dist{Kind: KindLogNormal, Median: 5, Min: 1, Max: 9, Value: 3}, "value: not used by lognormal"},
		{"uniform reversed", Uniform(10, 5), "max: must be >= min (10), got 5"},
		{"uniform zero min", Uniform(0, 5), "min: must be in [1, 1048576], got 0"},
		{"sigma on uniform", Dist{Kind: KindUniform, Min: 1, Max: 2, Sigma: 1}, "sigma: not used by uniform"},
		{"fixed zero", Fixed(0), "value: must be in [1, 1048576], got 0"},
		{"min on fixed", Dist{Kind: KindFixed, Value: 3, Min: 1}, "min: not used by fixed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestProfileValidate(t *testing.T) {
	chat, _ := Lookup(ProfileChat)
	tests := []struct {
		name string
		mut  func(*Profile)
		want string
	}{
		{"default", func(*Profile) {}, ""},
		{"no name", func(p *Profile) { p.Name = "" }, "workload: profile: name: required"},
		{"bad prompt", func(p *Profile) { p.Prompt = Fixed(-1) }, `workload: profile "chat": prompt: value: must be in [1, 1048576], got -1`},
		{"bad output", func(p *Profile) { p.Output.Sigma = -1 }, `workload: profile "chat": output: sigma: must be >= 0, got -1`},
		{"no cap", func(p *Profile) { p.MaxTokens = 0 }, `workload: profile "chat": max_tokens: must be in [1, 1048576], got 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := chat
			tc.mut(&p)
			err := p.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	if got, want := Names(), []string{"chat", "longgen", "rag"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	for _, p := range DefaultProfiles() {
		if err := p.Validate(); err != nil {
			t.Errorf("default profile %s: %v", p.Name, err)
		}
		got, err := Lookup(p.Name)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("Lookup(%q) = %+v, %v", p.Name, got, err)
		}
	}
	if _, err := Lookup("code"); err == nil || err.Error() != `workload: unknown profile "code" (known: chat, longgen, rag)` {
		t.Errorf("Lookup(code): %v", err)
	}
	// DefaultProfiles returns copies: changing one does not change the next.
	DefaultProfiles()[0].MaxTokens = 1
	if p, _ := Lookup(ProfileChat); p.MaxTokens != 1024 {
		t.Errorf("defaults were mutated: %d", p.MaxTokens)
	}
}

// TestDefaultProfileShapes pins the documented shapes: chat ≈ 500/150,
// rag 3000–4000/≈200, longgen ≈ 300/1000, and the documented means.
func TestDefaultProfileShapes(t *testing.T) {
	tests := []struct {
		name                       string
		promptMedian, outputMedian float64
		promptMean, outputMean     float64 // as documented in DefaultProfiles
	}{
		{ProfileChat, 500, 150, 598, 170},
		{ProfileRAG, 3500, 200, 3500, 217},
		{ProfileLongGen, 300, 1000, 340, 1044},
	}
	for _, tc := range tests {
		p, err := Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Prompt.Mean(); math.Abs(got-tc.promptMean) > 1 {
			t.Errorf("%s prompt mean %.1f, documented %v", tc.name, got, tc.promptMean)
		}
		if got := p.Output.Mean(); math.Abs(got-tc.outputMean) > 1 {
			t.Errorf("%s output mean %.1f, documented %v", tc.name, got, tc.outputMean)
		}
		if p.Prompt.Kind == KindLogNormal && p.Prompt.Median != tc.promptMedian {
			t.Errorf("%s prompt median %v", tc.name, p.Prompt.Median)
		}
		if p.Output.Median != tc.outputMedian {
			t.Errorf("%s output median %v", tc.name, p.Output.Median)
		}
	}
}

// TestDistSampling checks, for a fixed seed, that draws stay within the
// clamps and that the sample median and mean lie within 4 standard errors
// of the configured median and Dist.Mean.
func TestDistSampling(t *testing.T) {
	const n = 50_000
	dists := map[string]Dist{
		"narrow lognormal":        LogNormal(150, 0.5, 8, 1024),
		"wide lognormal, clamped": LogNormal(500, 1.5, 100, 2000),
		"sigma 0":                 LogNormal(77, 0, 1, 100),
		"uniform":                 Uniform(3000, 4000),
		"fixed":                   Fixed(42),
	}
	for _, p := range DefaultProfiles() {
		dists[p.Name+" prompt"], dists[p.Name+" output"] = p.Prompt, p.Output
	}
	for name, d := range dists {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			xs := make([]float64, n)
			var sum, sumSq float64
			lo, hi := math.MaxInt, 0
			for i := range xs {
				v := d.Sample(rng)
				lo, hi = min(lo, v), max(hi, v)
				xs[i] = float64(v)
				sum += xs[i]
				sumSq += xs[i] * xs[i]
			}
			wantLo, wantHi := d.Min, d.Max
			if d.Kind == KindFixed {
				wantLo, wantHi = d.Value, d.Value
			}
			if lo < wantLo || hi > wantHi {
				t.Errorf("draws in [%d, %d], clamp [%d, %d]", lo, hi, wantLo, wantHi)
			}
			if d.Kind == KindUniform && (lo != d.Min || hi != d.Max) {
				t.Errorf("uniform draws in [%d, %d], want both ends hit", lo, hi)
			}
			mean := sum / n
			sd := math.Sqrt(max(sumSq/n-mean*mean, 0))
			// Rounding to whole tokens moves the mean by < 0.5.
			if tol := 4*sd/math.Sqrt(n) + 0.5; math.Abs(mean-d.Mean()) > tol {
				t.Errorf("mean %.2f, want %.2f ± %.2f", mean, d.Mean(), tol)
			}
			if d.Kind == KindLogNormal && d.Sigma > 0 {
				// The sample median of ln L has standard error ≈ 1.2533·σ/√n.
				slices.Sort(xs)
				median := xs[n/2]
				tol := math.Exp(4*1.2533*d.Sigma/math.Sqrt(n)) - 1
				if math.Abs(median/d.Median-1) > tol+0.5/d.Median {
					t.Errorf("median %.1f, want %.1f ± %.1f%%", median, d.Median, 100*tol)
				}
			}
		})
	}
}
