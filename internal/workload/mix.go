package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MixPart is one entry of a Mix: a profile's name and its weight.
type MixPart struct {
	Name   string
	Weight float64
}

// Mix is a weighted mix of profiles by name, as the user wrote it:
// `chat=0.7,rag=0.2,longgen=0.1` on the command line, a mapping
// `{chat: 0.7, rag: 0.2, longgen: 0.1}` in YAML. Weights are ≥ 0 and finite,
// their sum > 0; they need not sum to 1 (each profile's share is its weight
// over the sum). The empty Mix means no mix.
type Mix []MixPart

// ParseMix reads name=weight pairs separated by commas. Errors name the
// pair that is wrong, e.g. `rag: weight: must be >= 0, got -1`.
func ParseMix(s string) (Mix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var m Mix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return nil, fmt.Errorf("want name=weight pairs such as chat=0.7,rag=0.3, got %q", part)
		}
		w, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: weight: want a number, got %q", name, val)
		}
		m = append(m, MixPart{Name: name, Weight: w})
	}
	return m, m.Validate()
}

// Validate checks the weights and that no name is given twice; whether the
// names are profiles is for Resolve.
func (m Mix) Validate() error {
	if len(m) == 0 {
		return nil
	}
	sum := 0.0
	for i, p := range m {
		if p.Name == "" {
			return errors.New("a profile name is empty")
		}
		if slices.ContainsFunc(m[:i], func(q MixPart) bool { return q.Name == p.Name }) {
			return fmt.Errorf("%s: given twice", p.Name)
		}
		if math.IsNaN(p.Weight) || math.IsInf(p.Weight, 0) || p.Weight < 0 {
			return fmt.Errorf("%s: weight: must be a finite number >= 0, got %g", p.Name, p.Weight)
		}
		sum += p.Weight
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return fmt.Errorf("the weights must sum to more than 0 (and stay finite), got %g", sum)
	}
	return nil
}

// String is the command-line form, `chat=0.7,rag=0.2`.
func (m Mix) String() string {
	var b strings.Builder
	for i, p := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.Name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(p.Weight, 'g', -1, 64))
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler (the command-line form).
func (m Mix) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (flags, JSON).
func (m *Mix) UnmarshalText(b []byte) error {
	v, err := ParseMix(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalYAML writes the mapping form.
func (m Mix) MarshalYAML() (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, p := range m {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: p.Name},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(p.Weight, 'g', -1, 64)})
	}
	return n, nil
}

// UnmarshalYAML reads a mapping of profile names to weights, in the
// order written, or the command-line form as one string. Errors carry the
// line ("line 4: mix: rag: weight: …").
func (m *Mix) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := ParseMix(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: mix: %w", n.Line, err)
		}
		*m = v
		return nil
	case yaml.MappingNode:
	default:
		return fmt.Errorf("line %d: mix: want a mapping of profile names to weights, such as {chat: 0.7, rag: 0.3}", n.Line)
	}
	var v Mix
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		w, err := strconv.ParseFloat(val.Value, 64)
		if val.Kind != yaml.ScalarNode || err != nil {
			return fmt.Errorf("line %d: mix: %s: weight: want a number, got %s", val.Line, k.Value, nodeText(val))
		}
		v = append(v, MixPart{Name: k.Value, Weight: w})
		if err := v.Validate(); err != nil {
			return fmt.Errorf("line %d: mix: %w", k.Line, err)
		}
	}
	if len(v) == 0 {
		return fmt.Errorf("line %d: mix: the mapping is empty; give profile weights such as {chat: 0.7, rag: 0.3}", n.Line)
	}
	*m = v
	return nil
}

func nodeText(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// Weighted is one profile of a resolved mix and its weight.
type Weighted struct {
	Profile Profile
	Weight  float64
}

// Resolve looks the mix's names up among custom (first; a custom profile
// may redefine a built-in) and the built-in profiles. Errors name the
// unknown profile and list the known ones.
func (m Mix) Resolve(custom []Profile) ([]Weighted, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	out := make([]Weighted, 0, len(m))
	for _, p := range m {
		prof, err := LookupIn(custom, p.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, Weighted{Profile: prof, Weight: p.Weight})
	}
	return out, nil
}

// LookupIn returns the profile called name among custom, else the
// built-in one.
func LookupIn(custom []Profile, name string) (Profile, error) {
	for _, p := range custom {
		if p.Name == name {
			return p, nil
		}
	}
	p, err := Lookup(name)
	if err != nil {
		known := Names()
		for _, c := range custom {
			if !slices.Contains(known, c.Name) {
				known = append(known, c.Name)
			}
		}
		return Profile{}, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(known, ", "))
	}
	return p, nil
}

// mixPicker chooses a profile per arrival from the arrival's Seq alone.
// Profiles are ordered by name, so the same mix written in any order makes
// the same run; bound[i] is the cumulative share of profiles 0..i.
type mixPicker struct {
	seed     uint64
	profiles []Profile
	bound    []float64
}

func newMixPicker(seed int64, mix []Weighted) mixPicker {
	ws := slices.Clone(mix)
	slices.SortStableFunc(ws, func(a, b Weighted) int { return strings.Compare(a.Profile.Name, b.Profile.Name) })
	sum := 0.0
	for _, w := range ws {
		sum += w.Weight
	}
	p := mixPicker{seed: splitmix64(uint64(seed) ^ 0x70726f66696c65)} // "profile"
	acc := 0.0
	for _, w := range ws {
		acc += w.Weight
		p.profiles = append(p.profiles, w.Profile)
		p.bound = append(p.bound, acc/sum)
	}
	return p
}

// pick returns the index of arrival seq's profile: u = the top 53 bits of
// splitmix64(seed ⊕ splitmix64(seq)) as a fraction in [0, 1), and the
// first profile whose cumulative share exceeds u. A profile of weight 0
// is never chosen (its share adds nothing); the last share is exactly 1,
// as it is the sum divided by itself.
func (p *mixPicker) pick(seq int64) int {
	u := float64(splitmix64(p.seed^splitmix64(uint64(seq)))>>11) * 0x1p-53
	for i, b := range p.bound {
		if u < b {
			return i
		}
	}
	return len(p.bound) - 1
}
