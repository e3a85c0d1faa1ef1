package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// The distribution kinds of a Dist.
const (
	KindLogNormal = "lognormal" // median·e^(σZ), Z standard normal, clamped to [Min, Max]
	KindUniform   = "uniform"   // every integer in [Min, Max] equally likely
	KindFixed     = "fixed"     // always Value
	KindNormal    = "normal"    // round(MeanTokens + SD·Z), clamped to [Min, Max]
	KindEmpirical = "empirical" // Values[i] with probability Counts[i] / ΣCounts
)

// MaxPromptTokens bounds every length, in tokens (about 4 MiB of prompt).
const MaxPromptTokens = 1 << 20

// Dist is a distribution of lengths in tokens. Fields that do not apply to
// Kind must be zero.
type Dist struct {
	Kind   string  `yaml:"kind"`             // lognormal, uniform or fixed
	Median float64 `yaml:"median,omitempty"` // lognormal: median length, tokens (e^μ)
	Sigma  float64 `yaml:"sigma,omitempty"`  // lognormal: standard deviation of ln(length)
	Min    int     `yaml:"min,omitempty"`    // lognormal: clamp floor; uniform: lowest value
	Max    int     `yaml:"max,omitempty"`    // lognormal: clamp ceiling; uniform: highest value
	Value  int     `yaml:"value,omitempty"`  // fixed: the length

	MeanTokens float64 `yaml:"mean,omitempty"`   // normal: mean length, tokens
	SD         float64 `yaml:"sd,omitempty"`     // normal: standard deviation, tokens
	Values     []int   `yaml:"values,omitempty"` // empirical: the lengths seen, ascending
	Counts     []int64 `yaml:"counts,omitempty"` // empirical: how often each was seen

	cum []int64 // empirical: running sums of Counts, set by Validate
}

// LogNormal returns a lognormal Dist with the given median (tokens) and σ of
// ln(length), clamped to [lo, hi].
func LogNormal(median, sigma float64, lo, hi int) Dist {
	return Dist{Kind: KindLogNormal, Median: median, Sigma: sigma, Min: lo, Max: hi}
}

// Uniform returns a Dist uniform over the integers lo..hi.
func Uniform(lo, hi int) Dist { return Dist{Kind: KindUniform, Min: lo, Max: hi} }

// Fixed returns a Dist that is always v.
func Fixed(v int) Dist { return Dist{Kind: KindFixed, Value: v} }

// Validate checks the distribution; errors name the field, e.g.
// `sigma: must be >= 0, got -1`.
func (d *Dist) Validate() error {
	inRange := func(field string, v int) error {
		if v < 1 || v > MaxPromptTokens {
			return fmt.Errorf("%s: must be in [1, %d], got %d", field, MaxPromptTokens, v)
		}
		return nil
	}
	unused := func(kind string, fields ...string) error {
		vals := map[string]bool{"median": d.Median != 0, "sigma": d.Sigma != 0, "min": d.Min != 0, "max": d.Max != 0, "value": d.Value != 0,
			"mean": d.MeanTokens != 0, "sd": d.SD != 0, "values": len(d.Values) > 0, "counts": len(d.Counts) > 0}
		for _, f := range fields {
			if vals[f] {
				return fmt.Errorf("%s: not used by %s", f, kind)
			}
		}
		return nil
	}
	switch d.Kind {
	case KindLogNormal:
		if err := unused(d.Kind, "value", "mean", "sd", "values", "counts"); err != nil {
			return err
		}
		if err := d.clamped(inRange, "sigma", d.Sigma, "median", d.Median); err != nil {
			return err
		}
	case KindUniform:
		if err := unused(d.Kind, "median", "sigma", "value", "mean", "sd", "values", "counts"); err != nil {
			return err
		}
		if err := inRange("min", d.Min); err != nil {
			return err
		}
		if err := inRange("max", d.Max); err != nil {
			return err
		}
		if d.Max < d.Min {
			return fmt.Errorf("max: must be >= min (%d), got %d", d.Min, d.Max)
		}
	case KindFixed:
		if err := unused(d.Kind, "median", "sigma", "min", "max", "mean", "sd", "values", "counts"); err != nil {
			return err
		}
		if err := inRange("value", d.Value); err != nil {
			return err
		}
	case KindNormal:
		if err := unused(d.Kind, "median", "sigma", "value", "values", "counts"); err != nil {
			return err
		}
		if err := d.clamped(inRange, "sd", d.SD, "mean", d.MeanTokens); err != nil {
			return err
		}
	case KindEmpirical:
		if err := unused(d.Kind, "median", "sigma", "min", "max", "value", "mean", "sd"); err != nil {
			return err
		}
		if len(d.Values) == 0 || len(d.Values) != len(d.Counts) {
			return fmt.Errorf("values, counts: want as many counts as values, at least one (got %d and %d)", len(d.Values), len(d.Counts))
		}
		cum := make([]int64, len(d.Counts))
		var total int64
		for i, v := range d.Values {
			if err := inRange(fmt.Sprintf("values[%d]", i), v); err != nil {
				return err
			}
			if i > 0 && v <= d.Values[i-1] {
				return fmt.Errorf("values[%d]: must be above values[%d] (%d), got %d", i, i-1, d.Values[i-1], v)
			}
			if c := d.Counts[i]; c < 0 || total+c < total {
				return fmt.Errorf("counts[%d]: must be >= 0 (and their sum below 2^63), got %d", i, c)
			}
			total += d.Counts[i]
			cum[i] = total
		}
		if total == 0 {
			return fmt.Errorf("counts: at least one must be > 0")
		}
		d.cum = cum
	case "":
		return fmt.Errorf("kind: required (lognormal, uniform, normal, empirical or fixed)")
	default:
		return fmt.Errorf("kind: unknown %q (want lognormal, uniform, normal, empirical or fixed)", d.Kind)
	}
	return nil
}

// clamped checks a clamped lognormal or normal: its spread ≥ 0, its clamp
// range [Min, Max] and its centre inside it.
func (d *Dist) clamped(inRange func(string, int) error, spreadName string, spread float64, centreName string, centre float64) error {
	if math.IsNaN(spread) || math.IsInf(spread, 0) || spread < 0 {
		return fmt.Errorf("%s: must be >= 0, got %s", spreadName, plainNumber(spread))
	}
	if err := inRange("min", d.Min); err != nil {
		return err
	}
	if err := inRange("max", d.Max); err != nil {
		return err
	}
	if !(centre >= float64(d.Min) && centre <= float64(d.Max)) {
		return fmt.Errorf("%s: must be in [min, max] = [%d, %d], got %s", centreName, d.Min, d.Max, plainNumber(centre))
	}
	return nil
}

// Sample draws one length in tokens. d must be valid.
//
//	lognormal: clamp(round(Median · e^(Sigma·Z)), Min, Max), Z ~ N(0, 1)
//	uniform:   Min + U{0, …, Max − Min}
//	normal:    clamp(round(MeanTokens + SD·Z), Min, Max)
//	empirical: Values[i] with probability Counts[i] / ΣCounts
//	fixed:     Value
func (d *Dist) Sample(rng *rand.Rand) int {
	switch d.Kind {
	case KindNormal:
		v := math.Round(d.MeanTokens + d.SD*rng.NormFloat64())
		return int(min(max(v, float64(d.Min)), float64(d.Max)))
	case KindEmpirical:
		cum := d.cum
		if len(cum) != len(d.Values) { // not validated: sum here
			cum = make([]int64, len(d.Counts))
			var t int64
			for i, c := range d.Counts {
				t += c
				cum[i] = t
			}
		}
		x := rng.Int64N(cum[len(cum)-1])
		i, _ := slices.BinarySearch(cum, x+1)
		return d.Values[i]
	case KindLogNormal:
		v := math.Round(d.Median * math.Exp(d.Sigma*rng.NormFloat64()))
		return int(min(max(v, float64(d.Min)), float64(d.Max)))
	case KindUniform:
		return d.Min + rng.IntN(d.Max-d.Min+1)
	default:
		return d.Value
	}
}

// Mean is the expected length in tokens, ignoring the rounding of draws to
// whole tokens (off by < 0.5). For the clamped lognormal X = m·e^(σZ) on
// [a, b], with Φ the standard normal CDF, α = ln(a/m)/σ and β = ln(b/m)/σ:
//
//	E = a·Φ(α) + b·(1 − Φ(β)) + m·e^(σ²/2)·(Φ(β − σ) − Φ(α − σ))
func (d *Dist) Mean() float64 {
	switch d.Kind {
	case KindLogNormal:
		a, b, m, s := float64(d.Min), float64(d.Max), d.Median, d.Sigma
		if s == 0 {
			return min(max(m, a), b)
		}
		alpha, beta := math.Log(a/m)/s, math.Log(b/m)/s
		return a*phi(alpha) + b*(1-phi(beta)) + m*math.Exp(s*s/2)*(phi(beta-s)-phi(alpha-s))
	case KindUniform:
		return float64(d.Min+d.Max) / 2
	case KindNormal:
		// E[clamp(X, a, b)] for X ~ N(μ, σ²), α = (a−μ)/σ, β = (b−μ)/σ:
		// a·Φ(α) + b·(1 − Φ(β)) + μ·(Φ(β) − Φ(α)) + σ·(φ(α) − φ(β)).
		a, b, m, s := float64(d.Min), float64(d.Max), d.MeanTokens, d.SD
		if s == 0 {
			return min(max(m, a), b)
		}
		alpha, beta := (a-m)/s, (b-m)/s
		pdf := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
		return a*phi(alpha) + b*(1-phi(beta)) + m*(phi(beta)-phi(alpha)) + s*(pdf(alpha)-pdf(beta))
	case KindEmpirical:
		var sum, n float64
		for i, v := range d.Values {
			sum += float64(v) * float64(d.Counts[i])
			n += float64(d.Counts[i])
		}
		return sum / n
	default:
		return float64(d.Value)
	}
}

// Upper is the largest length the distribution can produce.
func (d *Dist) Upper() int {
	switch d.Kind {
	case KindFixed:
		return d.Value
	case KindEmpirical:
		return d.Values[len(d.Values)-1]
	}
	return d.Max
}

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// Profile is a workload: the distributions of prompt and output lengths and
// the max_tokens cap (set it to the production cap, docs/method.md §10).
type Profile struct {
	Name      string `yaml:"name"`
	Prompt    Dist   `yaml:"prompt"`     // prompt length, tokens
	Output    Dist   `yaml:"output"`     // output length drawn per request, tokens
	MaxTokens int    `yaml:"max_tokens"` // cap: max_tokens = min(output draw, MaxTokens)
}

// Validate checks the profile; errors name the profile and the field, e.g.
// `workload: profile "chat": output: sigma: must be >= 0, got -1`.
func (p *Profile) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("workload: profile: name: required")
	}
	if err := p.Prompt.Validate(); err != nil {
		return fmt.Errorf("workload: profile %q: prompt: %w", p.Name, err)
	}
	if err := p.Output.Validate(); err != nil {
		return fmt.Errorf("workload: profile %q: output: %w", p.Name, err)
	}
	if p.MaxTokens < 1 || p.MaxTokens > MaxPromptTokens {
		return fmt.Errorf("workload: profile %q: max_tokens: must be in [1, %d], got %d", p.Name, MaxPromptTokens, p.MaxTokens)
	}
	return nil
}

// The names of the default profiles.
const (
	ProfileChat    = "chat"
	ProfileRAG     = "rag"
	ProfileLongGen = "longgen"
)

// DefaultProfiles returns the built-in profiles, a fresh copy each call:
//
//	chat:    prompt lognormal median 500 σ 0.6 in [32, 4096];  output lognormal median 150 σ 0.5 in [8, 1024];   cap 1024
//	rag:     prompt uniform 3000..4000;                        output lognormal median 200 σ 0.4 in [16, 1024];  cap 1024
//	longgen: prompt lognormal median 300 σ 0.5 in [32, 2048];  output lognormal median 1000 σ 0.3 in [256, 2048]; cap 2048
//
// Means (Dist.Mean): chat ≈ 598 prompt / 170 output tokens, rag 3500 / 217,
// longgen 340 / 1044.
func DefaultProfiles() []Profile {
	return []Profile{
		{Name: ProfileChat, Prompt: LogNormal(500, 0.6, 32, 4096), Output: LogNormal(150, 0.5, 8, 1024), MaxTokens: 1024},
		{Name: ProfileRAG, Prompt: Uniform(3000, 4000), Output: LogNormal(200, 0.4, 16, 1024), MaxTokens: 1024},
		{Name: ProfileLongGen, Prompt: LogNormal(300, 0.5, 32, 2048), Output: LogNormal(1000, 0.3, 256, 2048), MaxTokens: 2048},
	}
}

// Names lists the default profiles' names, sorted.
func Names() []string {
	var out []string
	for _, p := range DefaultProfiles() {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// Lookup returns the default profile called name.
func Lookup(name string) (Profile, error) {
	for _, p := range DefaultProfiles() {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("workload: unknown profile %q (known: %s)", name, strings.Join(Names(), ", "))
}
