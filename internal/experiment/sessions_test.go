package experiment_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/workload"
)

// A sessions run shows its per-turn table on the terminal, in results.md,
// report.html and summary.json; a run without sessions shows none.
func TestSessionsRunReports(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	for _, sessions := range []bool{true, false} {
		c := experiment.DefaultRunConfig()
		c.Options = exptest.LiveOptions()
		c.Options.Sessions = sessions
		c.Options.SessionTurns = workload.FixedLength(2)
		c.Options.ThinkTime = workload.FixedThink(0)
		c.Rate, c.Duration = 4, 3*time.Second
		env, _ := exptest.Env(t, c.Options, false)
		d := exptest.Dir(t)
		var out bytes.Buffer
		if _, err := experiment.Run(context.Background(), env, &c, d, &out); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"terminal": out.String()}
		for _, f := range []string{"results.md", "report.html", "summary.json"} {
			b, err := os.ReadFile(filepath.Join(d.Path(), f))
			if err != nil {
				t.Fatal(err)
			}
			files[f] = string(b)
		}
		for name, text := range files {
			want := "Sessions, per turn"
			if name == "summary.json" {
				want = `"prefix_tokens_p50"`
			}
			if got := strings.Contains(text, want); got != sessions {
				t.Errorf("sessions %v: %s shows the per-turn table: %v", sessions, name, got)
			}
		}
		if sessions && !strings.Contains(files["results.md"], "| 2    |") {
			t.Errorf("results.md has no row for turn 2:\n%s", files["results.md"])
		}
	}
}
