package workload

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestProfileYAML(t *testing.T) {
	const doc = `
name: support-bot
prompt: {kind: lognormal, median: 800, sigma: 0.7, min: 64, max: 8000}
output: {kind: uniform, min: 50, max: 300}
max_tokens: 256
`
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	want := Profile{Name: "support-bot", Prompt: LogNormal(800, 0.7, 64, 8000), Output: Uniform(50, 300), MaxTokens: 256}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("decoded %+v, want %+v", p, want)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	// Round trip through YAML keeps the profile.
	out, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var back Profile
	if err := yaml.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, want) {
		t.Errorf("round trip: %+v, %v\n%s", back, err, out)
	}
}
