package workload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// String is the distribution in ParseDist's form, e.g.
// `lognormal:median=500,sigma=0.6,min=32,max=4096`; an empirical one is
// summarised (`empirical:12 lengths in [8, 900]`), as its file is not kept.
func (d Dist) String() string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	switch d.Kind {
	case KindFixed:
		return "fixed:" + strconv.Itoa(d.Value)
	case KindUniform:
		return fmt.Sprintf("uniform:min=%d,max=%d", d.Min, d.Max)
	case KindNormal:
		return fmt.Sprintf("normal:mean=%s,sd=%s,min=%d,max=%d", g(d.MeanTokens), g(d.SD), d.Min, d.Max)
	case KindLogNormal:
		return fmt.Sprintf("lognormal:median=%s,sigma=%s,min=%d,max=%d", g(d.Median), g(d.Sigma), d.Min, d.Max)
	case KindEmpirical:
		if len(d.Values) == 0 {
			return "empirical"
		}
		return fmt.Sprintf("empirical:%d lengths in [%d, %d]", len(d.Values), d.Values[0], d.Values[len(d.Values)-1])
	}
	return d.Kind
}

// distKeys are the YAML keys of a Dist written as a mapping.
var distKeys = []string{"kind", "median", "sigma", "min", "max", "value", "mean", "sd", "values", "counts"}

// UnmarshalYAML reads a Dist as a mapping of its fields ({kind: lognormal,
// median: 800, sigma: 0.7, min: 64, max: 8000}; unknown keys are errors)
// or as one string in ParseDist's form (lognormal:median=800,p95=6000, or
// a token count). Errors carry the line.
func (d *Dist) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := ParseDist(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		*d = v
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a distribution such as lognormal:median=800,p95=6000 or a mapping {kind: …}, got %s", n.Line, nodeText(n))
	}
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(distKeys, k.Value) {
			return fmt.Errorf("line %d: field %s not found in type workload.Dist (want one of %s)", k.Line, k.Value, strings.Join(distKeys, ", "))
		}
	}
	type plain Dist // without the method
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*d = Dist(v)
	return nil
}
