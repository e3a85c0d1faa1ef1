package vary

import (
	"slices"
	"testing"
)

// The chart's value axis: numbers and durations as themselves (seconds),
// anything else — or values not in increasing order — by position.
func TestXValues(t *testing.T) {
	cases := []struct {
		name    string
		values  []string
		want    []float64
		numeric bool
	}{
		{"numbers", []string{"0", "20", "50"}, []float64{0, 20, 50}, true},
		{"durations", []string{"15s", "1m30s"}, []float64{15, 90}, true},
		{"booleans", []string{"false", "true"}, []float64{1, 2}, false},
		{"decreasing", []string{"50", "0"}, []float64{1, 2}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var vs []Variant
			for _, v := range tc.values {
				vs = append(vs, Variant{Value: v})
			}
			got, numeric := xValues(vs)
			if !slices.Equal(got, tc.want) || numeric != tc.numeric {
				t.Errorf("got %v %v, want %v %v", got, numeric, tc.want, tc.numeric)
			}
		})
	}
}

func TestFolder(t *testing.T) {
	c := Config{Knob: "model-ready-delay"}
	if got := c.Folder(Variant{Value: "1m30s"}); got != "model-ready-delay-1m30s" {
		t.Errorf("folder %q", got)
	}
	if got := c.Folder(Variant{Value: "a/b"}); got != "model-ready-delay-a_b" {
		t.Errorf("folder %q", got)
	}
}
