package run

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scrape"
)

// Reload calls a missing engine.csv a problem only when the run scraped
// (as summary.json, or without it the manifest, says); without
// summary.json the scrape status is unknown, not "no --metrics-url". Save
// writes timeseries.csv, summary.json only when the folder had a readable
// one, and never manifest.json: what was missing stays missing.
func TestReloadMissingEngineAndSave(t *testing.T) {
	var lines strings.Builder
	for i := range int64(20) {
		r := record.New(fmt.Sprintf("r-%d", i), i, "main", i*100_000_000)
		r.SentNs, r.HeadersNs, r.FirstTokenNs, r.DoneNs = r.ScheduledNs+10, r.ScheduledNs+20, r.ScheduledNs+30, r.ScheduledNs+40
		r.Status, r.Outcome, r.Good = 200, record.OK, true
		lines.Write(r.AppendJSON(nil))
		lines.WriteByte('\n')
	}
	const scraped = `{"run":"x","engine_metrics":{"state":"ok","preset":"vllm","samples":12,"failures":0}}`
	const notScraped = `{"run":"x","engine_metrics":{"state":"disabled","reason":"no --metrics-url given","samples":0,"failures":0}}`
	cases := []struct {
		name    string
		files   map[string]string
		problem string // the engine.csv problem's start; "" for none
		state   scrape.State
	}{
		{"scraped, engine.csv gone", map[string]string{"manifest.json": `{"command":"run"}`, "summary.json": scraped}, "engine.csv: missing (summary.json counts 12 engine samples) — the engine's samples over time are lost", scrape.StateOK},
		{"no --metrics-url", map[string]string{"manifest.json": `{"command":"run"}`, "summary.json": notScraped}, "", scrape.StateDisabled},
		{"virtual time, no summary.json", map[string]string{"manifest.json": `{"command":"run","virtual_time":true}`}, "engine.csv: missing (a run in virtual time writes the engine model's samples)", scrape.StateUnknown},
		{"metrics URL, no summary.json", map[string]string{"manifest.json": `{"command":"run","metrics_url":"http://h/metrics"}`}, "engine.csv: missing (manifest.json names a metrics URL; ", scrape.StateUnknown},
		{"nothing said", map[string]string{}, "", scrape.StateUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.files["requests.jsonl"] = lines.String()
			for name, body := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Reload(dir)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(r.Problems, func(p string) bool { return strings.HasPrefix(p, "engine.csv: ") })
			switch {
			case c.problem == "" && i >= 0:
				t.Errorf("problem %q of a run that did not scrape", r.Problems[i])
			case c.problem != "" && (i < 0 || !strings.HasPrefix(r.Problems[i], c.problem)):
				t.Errorf("problems %q, want one starting %q", r.Problems, c.problem)
			}
			if got := r.Summary.Engine.State; got != c.state {
				t.Errorf("engine state %q, want %q", got, c.state)
			}
			if c.state == scrape.StateUnknown && strings.Contains(r.Summary.Engine.Reason, "metrics-url") {
				t.Errorf("unknown status blames a flag: %q", r.Summary.Engine.Reason)
			}

			d, err := rundir.Reopen(dir, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			res, err := r.Result(d, analyze.RecoveryRule{})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Save(d, res); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"manifest.json", "summary.json"} {
				_, had := c.files[f]
				if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != had {
					t.Errorf("%s there after Save: %v, before: %v", f, err == nil, had)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "timeseries.csv")); err != nil {
				t.Error(err)
			}
		})
	}
}
