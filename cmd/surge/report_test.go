package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/report"
)

// surge report on a folder that lost a file, or was written by an older
// surge: it renders what it can, names every file it could not use (a
// WARNING line each, and a note in results.md), exits 0 when something
// rendered and 2 when nothing could — never a panic, never an error that
// renders nothing.
func TestReportMissingFiles(t *testing.T) {
	skipVirtualUnderRace(t)
	base := filepath.Join(t.TempDir(), "base")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "4", "--multipliers", "2,3",
		"--warmup", "10s", "--baseline", "1m", "--burst", "20s", "--recovery", "1m", "--recovery-limit", "2m", "-q", "-o", base)
	if !ran(code) {
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
		{"engine.csv", remove("burst-3x/engine.csv"), exitOK,
			[]string{"WARNING: burst-3x: engine.csv: missing (summary.json counts ", "engine queue evidence", "no engine charts", "with 1 warning"}, []string{" 2× |", " 3× |"}},
		{"engine.csv and summary.json of one run", remove("burst-3x/engine.csv", "burst-3x/summary.json"), exitOK,
			[]string{"WARNING: burst-3x: engine.csv: missing (a run in virtual time writes the engine model's samples) — ", "WARNING: burst-3x: summary.json: missing", "with 2 warnings"}, []string{" 2× |", " 3× |"}},
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
			kept := keptFiles(t, dir)
			code, stdout, stderr := surge(t, "report", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			// What was missing stays missing: manifest.json and
			// summary.json are never written from nothing, so a second
			// surge report warns as the first did.
			if got := keptFiles(t, dir); !slices.Equal(got, kept) {
				t.Errorf("the run files after surge report %q, before %q", got, kept)
			}
			_, again, _ := surge(t, "report", dir)
			if w1, w2 := warnings(stdout), warnings(again); !slices.Equal(w1, w2) {
				t.Errorf("the second surge report warns\n%s\nthe first\n%s", strings.Join(w2, "\n"), strings.Join(w1, "\n"))
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
			// A file that is gone is named as gone, not blamed on a flag
			// the run was given.
			if strings.Contains(string(md), report.ReasonNoMetricsURL) {
				t.Errorf("results.md says %q of a run that scraped:\n%s", report.ReasonNoMetricsURL, md)
			}
			if !strings.Contains(stdout, "\nexit 0: re-rendered (the command that wrote it exits ") {
				t.Errorf("no exit line:\n%s", stdout)
			}
		})
	}
}

// keptFiles lists the files of dir's run folders that surge report must
// not create: manifest.json and summary.json.
func keptFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*/manifest.json", "*/summary.json", "manifest.json", "summary.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out
}

// warnings are the WARNING lines of surge report's output.
func warnings(stdout string) []string {
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "WARNING: ") {
			out = append(out, l)
		}
	}
	return out
}

// A single run folder: re-rendered, it ends as surge run does — the
// verdicts, the diagnosis, where the reports are and an exit line.
// Without its manifest it renders with defaults and says so, twice alike
// (surge report does not write one); without its records there is
// nothing to render (exit 2, the file named); a path that is no folder is
// exit 2 with a message saying so.
func TestReportRunMissingFiles(t *testing.T) {
	base := filepath.Join(t.TempDir(), "run")
	code, fresh := runVirtual(t, "run", "--rate", "2", "--duration", "20s", "-q", "-o", base)
	if !ran(code) {
		t.Fatalf("run: exit %d\n%s", code, fresh)
	}
	if want := "reports: " + filepath.Join(base, "results.md") + "  " + filepath.Join(base, "report.html") + "\n"; !strings.Contains(fresh, want) {
		t.Errorf("surge run's output lacks %q:\n%s", want, fresh)
	}
	copyOf := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "copy")
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := copyOf(t)
	code, stdout, stderr := surge(t, "report", dir)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	verdicts := strings.Index(stdout, "\nVerdicts (SLO ")
	diagnosis := strings.Index(stdout, "\nDiagnosis (")
	reports := strings.Index(stdout, "\nreports: "+filepath.Join(dir, "results.md")+"  "+filepath.Join(dir, "report.html")+"\n")
	exit := strings.Index(stdout, "\nexit 0: re-rendered (the command that wrote it exits ")
	if verdicts < 0 || diagnosis < verdicts || reports < diagnosis || exit < reports {
		t.Errorf("re-rendered run: want Verdicts, Diagnosis, reports: and the exit line, in that order:\n%s", stdout)
	}
	if !strings.HasSuffix(stdout, "\n") || strings.Count(stdout[exit+1:], "\n") != 1 {
		t.Errorf("the exit line is not the last line:\n%s", stdout)
	}

	dir = copyOf(t)
	os.Remove(filepath.Join(dir, "manifest.json"))
	for range 2 {
		code, stdout, stderr = surge(t, "report", dir)
		if code != exitOK || !strings.Contains(stdout, "WARNING: manifest.json: missing — ") || !strings.Contains(stdout, "with 1 warning") {
			t.Errorf("no manifest: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
			t.Fatal("surge report wrote a manifest.json")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil || !strings.Contains(string(md), "re-rendered without manifest.json: missing") {
		t.Errorf("results.md does not note the missing manifest (%v):\n%s", err, md)
	}

	dir = copyOf(t)
	os.Remove(filepath.Join(dir, "requests.jsonl"))
	code, stdout, stderr = surge(t, "report", dir)
	if code != exitUsage || !strings.Contains(stderr, "holds no run surge wrote: no requests.jsonl") {
		t.Errorf("no records: exit %d\n%s\n%s", code, stdout, stderr)
	}

	for _, tc := range []struct{ path, want string }{
		{filepath.Join(t.TempDir(), "nonexistent"), ": no such folder (give the folder a surge command wrote"},
		{filepath.Join(base, "results.md"), ": not a folder (give the folder a surge command wrote, not one of its files)"},
	} {
		code, stdout, stderr = surge(t, "report", tc.path)
		if code != exitUsage || !strings.HasPrefix(stderr, "surge: report: "+tc.path+tc.want) {
			t.Errorf("report %s: exit %d, want 2 saying %q\n%s\n%s", tc.path, code, tc.want, stdout, stderr)
		}
	}
}

// A soak folder is re-rendered as a soak: its window and drift tables,
// soak.json and the drift lines, as the soak wrote them — not the
// generic run layout. Without its engine.csv the KV-cache series is
// untested because the file is missing, not for want of --metrics-url.
func TestReportSoak(t *testing.T) {
	base := filepath.Join(t.TempDir(), "soak")
	code, stdout, stderr := surge(t, "soak", "--simulate", "--rate", "3", "--duration", "8m", "--warmup", "30s", "-q", "-o", base)
	if !ran(code) {
		t.Fatalf("soak: exit %d\n%s\n%s", code, stdout, stderr)
	}
	read := func(t *testing.T, dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.md", "results.csv", "results.json", "report.html", "soak.json"} {
		os.Remove(filepath.Join(dir, f))
	}
	code, stdout, stderr = surge(t, "report", dir)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{"results.csv", "results.json", "soak.json"} {
		if got, want := read(t, dir, f), read(t, base, f); got != want {
			t.Errorf("re-rendered %s differs from the soak's:\n%s\nwant\n%s", f, got, want)
		}
	}
	if md := read(t, dir, "results.md"); !strings.Contains(md, "Drift: verdict ") {
		t.Errorf("results.md has no drift table:\n%s", md)
	}
	for _, want := range []string{"\ndrift over ", "  soak  drift ", "\nexit 0: re-rendered (the command that wrote it exits "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	os.Remove(filepath.Join(dir, "engine.csv"))
	code, stdout, stderr = surge(t, "report", dir)
	if code != exitOK || !strings.Contains(stdout, "WARNING: engine.csv: missing (summary.json counts ") {
		t.Fatalf("no engine.csv: exit %d\n%s\n%s", code, stdout, stderr)
	}
	md := read(t, dir, "results.md")
	if !strings.Contains(md, "engine KV-cache usage: not tested, engine.csv is missing") || strings.Contains(md, "pass --metrics-url") {
		t.Errorf("results.md on the KV-cache series without engine.csv:\n%s", md)
	}
	if !strings.Contains(md, "re-rendered without engine.csv: missing") {
		t.Errorf("results.md does not note the missing engine.csv:\n%s", md)
	}
}

// One run of a burst, capacity or sweep folder alone is re-rendered in
// the single-run layout, and surge report says so; a capacity search's or
// a sweep's own folder is refused (exit 2) with the folder to give
// instead. The folders are a surge run's, renamed and relabelled.
func TestReportSubfolders(t *testing.T) {
	base := filepath.Join(t.TempDir(), "run")
	runVirtual(t, "run", "--rate", "2", "--duration", "20s", "-q", "-o", base)
	folder := func(t *testing.T, top, sub, command, file string) string {
		dir := filepath.Join(t.TempDir(), top)
		run := filepath.Join(dir, sub)
		if err := os.CopyFS(run, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(run, "manifest.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["command"] = command
		b, _ = json.Marshal(m)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if file != "" {
			if err := os.WriteFile(filepath.Join(dir, file), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		top, sub, command, file string
		layout, refusal         string
	}{
		{"cap", "step-03-4rps", "capacity", "capacity.json", "is one step of a capacity search: re-rendered in the single-run layout", "is a capacity search's folder: surge report does not re-render a capacity search's own table"},
		{"sweep", "level-02-c4", "sweep", "sweep.json", "is one level of a sweep: re-rendered in the single-run layout", "is a sweep's folder: surge report does not re-render a sweep's own table"},
		{"burst", "burst-3x", "burst", "", "is one run of a burst experiment: re-rendered in the single-run layout", ""},
	} {
		t.Run(tc.command, func(t *testing.T) {
			dir := folder(t, tc.top, tc.sub, tc.command, tc.file)
			run := filepath.Join(dir, tc.sub)
			code, stdout, stderr := surge(t, "report", run)
			if code != exitOK || !strings.HasPrefix(stdout, run+" "+tc.layout) {
				t.Errorf("report %s: exit %d\n%s\n%s", run, code, stdout, stderr)
			}
			// A failing step does not fail a capacity search: the exit
			// line speaks of this run alone.
			if !strings.Contains(stdout, ", whose exit code weighs all its runs: this run's SLO ") {
				t.Errorf("report %s: the exit line does not say it is one run of an experiment:\n%s", run, stdout)
			}
			if tc.refusal == "" {
				return
			}
			code, stdout, stderr = surge(t, "report", dir)
			if want := "surge: report: " + dir + " " + tc.refusal; code != exitUsage || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "surge report "+run+"\n") {
				t.Errorf("report %s: exit %d, want 2 and %q naming %s\n%s\n%s", dir, code, want, run, stdout, stderr)
			}
		})
	}
}

// Each experiment's --help says what exit codes 0 and 1 mean for it, as
// its exit line does: a capacity search that finds a rate exits 0 though
// steps above it failed.
func TestHelpExitCodes(t *testing.T) {
	for _, tc := range []struct {
		command []string
		zero    string
	}{
		{[]string{"capacity"}, "0 a sustainable rate was found (the failing steps above it bound the search; they do not fail the command); 1 no step met the SLO"},
		{[]string{"sweep"}, "0 a usable level was found (levels past the knee or the latency-budget break are findings, not a failure); 1 no level stayed"},
		{[]string{"soak"}, "0 the SLO held over the soak and no series drifted"},
		{[]string{"burst"}, "0 the burst phase held the SLO at every multiplier"},
		{[]string{"run"}, "0 ran, and the SLO held over the whole run"},
		{[]string{"report"}, "0 the reports were written, whatever the verdicts"},
		{[]string{"check"}, "0 every check that ran passed (WARN and SKIP do not fail); 1 a check failed"},
		{nil, "0 ran, and the command's verdict held (each command's --help says what that is)"},
	} {
		code, stdout, stderr := surge(t, append(tc.command, "--help")...)
		help := strings.Join(strings.Fields(stdout), " ")
		if code != exitOK || !strings.Contains(help, "Exit codes: "+tc.zero) {
			t.Errorf("%v --help: exit %d, want %q in:\n%s%s", tc.command, code, tc.zero, stdout, stderr)
		}
		if strings.Contains(help, "1 ran and an SLO failed") && tc.command != nil {
			t.Errorf("%v --help still says the generic exit codes", tc.command)
		}
	}
}
