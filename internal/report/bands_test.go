package report

import (
	"math"
	"strings"
	"testing"
)

// TestScalingBandsRows: overlapping scaling events stack on rows, a strip
// starting after one ended reuses its row, and a bad interval is refused.
func TestScalingBandsRows(t *testing.T) {
	rep := smallReport()
	rep.Runs[0].Bands = []Band{{Label: "r1", Start: 5, End: 14}, {Label: "r2", Start: 8, End: 20}, {Label: "r3", Start: 15, End: 22}}
	d, err := buildChartData(rep)
	if err != nil {
		t.Fatal(err)
	}
	var rows []int
	for _, b := range d.Runs[0].Bands {
		rows = append(rows, b.Row)
	}
	if len(rows) != 3 || rows[0] != 0 || rows[1] != 1 || rows[2] != 0 {
		t.Errorf("rows %v, want [0 1 0]", rows)
	}
	if !strings.Contains(strings.Join(d.Runs[0].Notes, " "), "strips along the bottom") {
		t.Error("no note says what the strips are")
	}
	rep.Runs[0].Bands = []Band{{Label: "r1", Start: 5, End: math.NaN()}}
	if _, err := buildChartData(rep); err == nil || !strings.Contains(err.Error(), `band "r1"`) {
		t.Errorf("bad band: %v", err)
	}
}
