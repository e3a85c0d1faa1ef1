package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// surge report on a folder that lost a file, or was written by an older
// surge: it renders what it can, names every file it could not use (a
// WARNING line each, and a note in results.md), exits 0 when something
// rendered and 2 when nothing could — never a panic, never an error that
// renders nothing.
func TestReportMissingFiles(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "4", "--multipliers", "2,3",
		"--warmup", "10s", "--baseline", "1m", "--burst", "20s", "--recovery", "1m", "--recovery-limit", "2m", "-q", "-o", base)
	if code != exitOK && code != exitSLO {
		t.Fatalf("burst: exit %d\n%s\n%s", code, stdout, stderr)
	}
	oldSchema := func(t *testing.T, dir string) { // a manifest without the config (plan, options) later versions record
		p := filepath.Join(dir, "burst-3x", "manifest.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "config")
		b, _ = json.Marshal(m)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(files ...string) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			for _, f := range files {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cases := []struct {
		name   string
		break_ func(*testing.T, string)
		code   int
		want   []string // in stdout
		rows   []string // results.md holds these multipliers' rows
	}{
		{"manifest.json", remove("burst-3x/manifest.json"), exitOK, []string{"WARNING: burst-3x: manifest.json: missing — ", "re-rendered ", "with 1 warning "}, []string{" 2× |", " 3× |"}},
		{"requests.jsonl", remove("burst-3x/requests.jsonl"), exitOK, []string{"WARNING: burst-3x: not rendered: ", "no requests.jsonl"}, []string{" 2× |"}},
		{"timeseries.csv", remove("burst-3x/timeseries.csv"), exitOK, nil, []string{" 2× |", " 3× |"}},
		{"summary.json", remove("burst-3x/summary.json"), exitOK, []string{"WARNING: burst-3x: summary.json: missing — "}, []string{" 2× |", " 3× |"}},
		{"engine.csv and summary.json", remove("burst-2x/summary.json", "burst-3x/manifest.json", "burst-3x/summary.json"), exitOK,
			[]string{"WARNING: burst-2x: summary.json: missing", "WARNING: burst-3x: manifest.json: missing", "WARNING: burst-3x: summary.json: missing", "with 3 warnings"}, []string{" 2× |", " 3× |"}},
		{"old-schema manifest", oldSchema, exitOK, []string{"WARNING: burst-3x: manifest.json: no plan (an older surge version?)"}, []string{" 2× |", " 3× |"}},
		{"every records file", remove("burst-2x/requests.jsonl", "burst-3x/requests.jsonl"), exitUsage, []string{"WARNING: burst-2x: not rendered", "WARNING: burst-3x: not rendered"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "copy")
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, "results.md"))
			tc.break_(t, dir)
			code, stdout, stderr := surge(t, "report", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if tc.code != exitOK {
				if !strings.Contains(stderr, "no burst-<k>x run could be re-rendered") {
					t.Errorf("stderr %q", stderr)
				}
				return
			}
			md, err := os.ReadFile(filepath.Join(dir, "results.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.rows {
				if !strings.Contains(string(md), r) {
					t.Errorf("results.md lacks the row %q", r)
				}
			}
			if len(tc.rows) == 1 && strings.Contains(string(md), " 3× |") {
				t.Errorf("results.md has a 3× row it cannot have")
			}
			if strings.Contains(stdout, "WARNING: burst-3x: manifest.json: missing") && !strings.Contains(string(md), "3×: re-rendered without manifest.json: missing") {
				t.Errorf("results.md does not note the missing manifest:\n%s", md)
			}
			if _, err := os.Stat(filepath.Join(dir, "burst-2x", "timeseries.csv")); err != nil {
				t.Error(err)
			}
		})
	}
}

// A single run folder: without its manifest it renders with defaults and
// says so; without its records there is nothing to render (exit 2, the
// file named).
func TestReportRunMissingFiles(t *testing.T) {
	base := filepath.Join(t.TempDir(), "run")
	if code, out := runVirtual(t, "run", "--rate", "2", "--duration", "20s", "-q", "-o", base); code != exitOK && code != exitSLO {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	copyOf := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "copy")
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := copyOf(t)
	os.Remove(filepath.Join(dir, "manifest.json"))
	code, stdout, stderr := surge(t, "report", dir)
	if code != exitOK || !strings.Contains(stdout, "WARNING: manifest.json: missing — ") || !strings.Contains(stdout, "with 1 warning") {
		t.Errorf("no manifest: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
	dir = copyOf(t)
	os.Remove(filepath.Join(dir, "requests.jsonl"))
	code, stdout, stderr = surge(t, "report", dir)
	if code != exitUsage || !strings.Contains(stderr, "holds neither requests.jsonl") {
		t.Errorf("no records: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
