package vary

import (
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/compare"
	"github.com/surge-bench/surge/internal/report"
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

// Review 14 finding 16: max-waiting 0 is no limit, not a limit of 0, so
// it is no point on a numeric axis: the values go by position, ticked
// with their names, 0 labelled "unbounded". A plain numeric knob keeps
// its numeric axis.
func TestChartsZeroMeansUnbounded(t *testing.T) {
	cmp := &compare.Comparison{Folders: make([]compare.Folder, 2)}
	c := &Config{Knob: "max-waiting", Variants: []Variant{{Value: "0"}, {Value: "20"}}}
	for _, ch := range Charts(c, cmp) {
		if !slices.Equal(ch.XCategories, []string{"0 (unbounded)", "20"}) || !strings.Contains(ch.XLabel, "0 = unbounded") {
			t.Errorf("%s: categories %q, x label %q", ch.Title, ch.XCategories, ch.XLabel)
		}
		var b strings.Builder
		if err := report.WriteXYChartSVG(&b, ch); err != nil || !strings.Contains(b.String(), ">0 (unbounded)</text>") {
			t.Errorf("%s: svg lacks the tick 0 (unbounded) (%v)", ch.Title, err)
		}
	}
	c = &Config{Knob: "replicas", Variants: []Variant{{Value: "1"}, {Value: "2"}}}
	for _, ch := range Charts(c, cmp) {
		if ch.XCategories != nil {
			t.Errorf("replicas: categories %q on a numeric axis", ch.XCategories)
		}
	}
}
