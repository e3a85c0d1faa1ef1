package experiment_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/schedule"
)

// A run of named phases lists them in plan order (base, spike, after —
// not alphabetical), the phase in its own column (CSV "phase", people's
// tables too, not folded into the workload), then an overall row; the
// excluded warmup has no row.
func TestRunPhasesInPlanOrder(t *testing.T) {
	c := experiment.DefaultRunConfig()
	c.Options.Quiet = true
	c.Simulate = true
	c.BaselineRPS = 2
	c.Phases = []schedule.Phase{
		{Name: "warmup", Duration: 5 * time.Second, Multiplier: 1},
		{Name: "base", Duration: 10 * time.Second, Multiplier: 1},
		{Name: "spike", Duration: 5 * time.Second, Multiplier: 3},
		{Name: "after", Duration: 10 * time.Second, Multiplier: 1},
	}
	env, _ := exptest.Env(t, c.Options, true)
	d := exptest.Dir(t)
	var out bytes.Buffer
	if _, err := experiment.Run(context.Background(), env, &c, d, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	rows, err := csv.NewReader(exptest.Open(t, filepath.Join(d.Path(), "results.csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(rows[0], "phase")
	if i < 0 {
		t.Fatalf("results.csv has no phase column: %v", rows[0])
	}
	var phases []string
	for _, r := range rows[1:] {
		phases = append(phases, r[i])
		if w := r[slices.Index(rows[0], "workload")]; w != "chat" {
			t.Errorf("workload %q, want chat (the phase has its own column)", w)
		}
	}
	if want := []string{"base", "spike", "after", "overall"}; !slices.Equal(phases, want) {
		t.Errorf("results.csv phases %v, want %v", phases, want)
	}
	b, _ := os.ReadFile(filepath.Join(d.Path(), "results.md"))
	md := string(b)
	b2, a2, s2, o2 := strings.Index(md, "\n| base "), strings.Index(md, "\n| spike "), strings.Index(md, "\n| after "), strings.Index(md, "\n| overall ")
	if !strings.Contains(md, "\n| phase ") || b2 < 0 || !(b2 < a2 && a2 < s2 && s2 < o2) {
		t.Errorf("results.md rows not by phase in plan order:\n%s", md)
	}
}
