package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
)

// A mix on the command line labels every record with its profile and
// splits the results by profile in the terminal, results.md, report.html,
// summary.json and the manifest; custom profiles come from the file.
func TestMixRun(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "mix.yaml")
	os.WriteFile(f, []byte("rate: 40\nduration: 3s\nquiet: true\nprofiles:\n  - name: agent\n    prompt: uniform:min=900,max=1100\n    output: 16\n"), 0o644)
	out := filepath.Join(dir, "out")
	args := []string{"run", "-f", f, "--mix", "chat=3,agent=1", "--output-tokens", "8", "-o", out}
	if racedetect.Enabled {
		// Most of the run's ~10 s is the one-replica simulator working
		// through the ~1,000-token prompts; four replicas take ~4 s,
		// through the same client and server code. What is checked below
		// is the labels and draws of the mix, whatever the engine.
		args = append(args, "--replicas", "4")
	}
	code, stdout, stderr := surge(t, args...)
	if !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	count := map[string]int{}
	if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
		count[r.Profile]++
		if r.Profile == "agent" && r.Outcome == record.OK && (r.PromptTokens < 900 || r.PromptTokens > 1200) {
			t.Errorf("agent request %d: %d prompt tokens", r.Seq, r.PromptTokens)
		}
		if r.MaxTokens != 8 {
			t.Errorf("request %d: max_tokens %d; --output-tokens applies to every profile of the mix", r.Seq, r.MaxTokens)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(count) != 2 || count["chat"] < count["agent"] {
		t.Errorf("profiles %v", count)
	}
	if !strings.Contains(stdout, "by profile (measured phases):") || !strings.Contains(stdout, "agent") {
		t.Errorf("terminal: no by-profile table:\n%s", stdout)
	}
	for _, name := range []string{"results.md", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(out, name))
		if !strings.Contains(string(b), "By profile") {
			t.Errorf("%s: no by-profile table", name)
		}
	}
	var sum struct {
		Analysis struct {
			Profiles []struct {
				Name    string `json:"name"`
				Offered int    `json:"offered"`
			} `json:"profiles"`
		} `json:"analysis"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Analysis.Profiles) != 2 || sum.Analysis.Profiles[0].Offered != count["agent"] {
		t.Errorf("summary.json profiles %+v (%v), records %v", sum.Analysis.Profiles, err, count)
	}
	var m record.Manifest
	b, _ = os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(b, &m); err != nil || len(m.Mix) != 2 || m.Mix[1].Name != "agent" || m.Mix[1].Share != 0.25 ||
		m.Mix[1].Prompt != "uniform:min=900,max=1100" || m.Mix[1].Output != "fixed:8" || m.Workload != "mix chat=3,agent=1" {
		t.Errorf("manifest: workload %q mix %+v (%v)", m.Workload, m.Mix, err)
	}
}

// One profile: nothing new in the reports.
func TestSingleProfileHasNoBreakdown(t *testing.T) {
	out := filepath.Join(t.TempDir(), "one")
	code, stdout, stderr := surge(t, "run", "--rate", "20", "--duration", "1s", "-q", "-o", out)
	if !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	for _, name := range []string{"results.md", "report.html", "summary.json", "manifest.json"} {
		b, _ := os.ReadFile(filepath.Join(out, name))
		if s := string(b); strings.Contains(s, "By profile") || strings.Contains(s, `"profiles":`) || strings.Contains(s, `"mix":`) {
			t.Errorf("%s: a by-profile part for a single profile", name)
		}
	}
	if strings.Contains(stdout, "by profile") {
		t.Errorf("terminal: a by-profile table for one profile")
	}
}

// A mix in virtual time: each multiplier of a burst gets its own table.
func TestMixBurstSimulate(t *testing.T) {
	skipVirtualUnderRace(t)
	out := filepath.Join(t.TempDir(), "b")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--mix", "chat=0.7,rag=0.2,longgen=0.1", "--multipliers", "2,4", "--baseline-rps", "4",
		"--warmup", "5s", "--baseline", "20s", "--burst", "10s", "--recovery", "20s", "-q", "-o", out)
	if !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(out, "results.md"))
	for _, want := range []string{"2×: By profile", "4×: By profile", "| longgen", "| rag"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results.md: no %q", want)
		}
	}
	labelled := map[string]int{}
	record.ReadFile(filepath.Join(out, "burst-2x", "requests.jsonl"), func(r *record.Record) error {
		labelled[r.Profile]++
		return nil
	})
	if len(labelled) != 3 {
		t.Errorf("virtual records' profiles: %v", labelled)
	}
}

// Bad mixes exit 2 naming the flag, or the file, line and key.
func TestMixUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	neg := file("neg.yaml", "rate: 1\nduration: 1s\nmix:\n  chat: 0.5\n  rag: -1\n")
	unknown := file("unknown.yaml", "rate: 1\nduration: 1s\nmix: {chat: 1, ragg: 1}\n")
	both := file("both.yaml", "rate: 1\nduration: 1s\nprofile: rag\nmix: {chat: 1}\n")
	badProfile := file("prof.yaml", "rate: 1\nduration: 1s\nprofiles:\n  - name: agent\n    prompt: lognormal:median=800,p95=600\n    output: 10\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--mix", "chat=0.7,ragg=0.3"}, `--mix: unknown profile "ragg" (known: chat, longgen, rag)`},
		{[]string{"--mix", "chat=0.7,chat=0.3"}, `--mix: chat: given twice`},
		{[]string{"--mix", "chat"}, `--mix: want name=weight pairs`},
		{[]string{"--mix", "chat=0,rag=0"}, `--mix: the weights must sum to more than 0`},
		{[]string{"--mix", "chat=-0.5,rag=1"}, `--mix: chat: weight: must be a finite number >= 0, got -0.5`},
		{[]string{"--mix", "chat=NaN"}, `--mix: chat: weight: must be a finite number >= 0, got NaN`},
		{[]string{"--mix", "chat=1", "--profile", "rag"}, `--mix: give --profile or --mix, not both`},
		{[]string{"-f", neg}, neg + ":5: mix: rag: weight: must be a finite number >= 0, got -1"},
		{[]string{"-f", unknown}, unknown + `:3: mix: unknown profile "ragg"`},
		{[]string{"-f", both}, both + ":4: mix: give profile or mix, not both"},
		{[]string{"-f", badProfile}, badProfile + ":5: lognormal: p95: must be above the median (800), got 600"},
	}
	for _, c := range cases {
		code, _, stderr := surge(t, append([]string{"run", "--rate", "1", "--duration", "1s", "-q"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// surge run --simulate: the same split, in virtual time.
func TestMixRunSimulate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "v")
	code, stdout, stderr := surge(t, "run", "--simulate", "--mix", "chat=0.7,rag=0.2,longgen=0.1", "--rate", "20", "--duration", "30s", "-q", "-o", out)
	if !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var m record.Manifest
	b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if json.Unmarshal(b, &m) != nil || !m.VirtualTime || len(m.Mix) != 3 {
		t.Errorf("manifest: virtual %v, mix %+v", m.VirtualTime, m.Mix)
	}
	b, _ = os.ReadFile(filepath.Join(out, "results.md"))
	for _, want := range []string{"By profile", "| chat", "| longgen", "| rag"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results.md: no %q", want)
		}
	}
}
