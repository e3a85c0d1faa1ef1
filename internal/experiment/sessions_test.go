package experiment_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/report"
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
		// The terminal shows it plainly, as its other tables: no Markdown.
		if sessions && (strings.Contains(files["terminal"], "# Sessions") || strings.Contains(files["terminal"], "| 2    |") || !strings.Contains(files["terminal"], "\n  turn  requests")) {
			t.Errorf("the terminal's per-turn table is not plain:\n%s", files["terminal"])
		}
	}
}

// With --session-drain the plan shown — the run's banner and --dry-run —
// holds the drain phase the run executes.
func TestSessionDrainShown(t *testing.T) {
	c := experiment.DefaultRunConfig()
	c.Options.Quiet = true
	c.Options.Sessions = true
	c.Options.SessionTurns = workload.FixedLength(2)
	c.Options.ThinkTime = workload.FixedThink(time.Second)
	c.Options.SessionDrain = 20 * time.Second
	c.Rate, c.Duration, c.DurationSet = 1, 10*time.Second, true
	runs, err := c.Planned()
	if err != nil {
		t.Fatal(err)
	}
	var dry bytes.Buffer
	if err := experiment.DryRun(&dry, "run", &c.Options, true, runs); err != nil {
		t.Fatal(err)
	}
	if s := dry.String(); !strings.Contains(s, "run: 2 phase(s), 30s in all") || !strings.Contains(s, "\n  drain ") || !strings.Contains(s, "note: drain (--session-drain)") {
		t.Errorf("dry run:\n%s", s)
	}
	env, _ := exptest.Env(t, c.Options, true)
	var out bytes.Buffer
	if _, err := experiment.Run(context.Background(), env, &c, exptest.Dir(t), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "surge run: 2 phase(s), 30s in all") {
		t.Errorf("banner:\n%s", out.String())
	}
}

// The per-turn table shows a turn with no TTFT at all (every request
// cancelled in flight) as n/a with the reason, not "> 0.0ms".
func TestSessionTableInterruptedTurn(t *testing.T) {
	none := analyze.Dist{P50Censored: true, P95Censored: true, P99Censored: true, Interrupted: true}
	ss := &analyze.SessionResult{Sessions: 1, Unfinished: 1, Turns: []analyze.TurnResult{
		{Turn: 1, Requests: 1, OK: 1, TTFTSend: analyze.Dist{Count: 1, P50Ms: 100, P95Ms: 100, P99Ms: 100}, TTFTSchedule: analyze.Dist{Count: 1, P50Ms: 100, P95Ms: 100, P99Ms: 100}, PromptTokensP50: 10},
		{Turn: 2, Requests: 1, TTFTSend: none, TTFTSchedule: none},
	}}
	tab, ok := experiment.SessionTable("t", ss)
	if !ok {
		t.Fatal("no table")
	}
	var b bytes.Buffer
	report.WriteGridMarkdown(&b, tab)
	out := b.String()
	if strings.Contains(out, "> 0") || !strings.Contains(out, "n/a") || !strings.Contains(out, "cancelled in flight") {
		t.Errorf("table:\n%s", out)
	}
}
