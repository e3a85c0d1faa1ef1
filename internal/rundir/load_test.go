package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// records reads every record of run.
func records(t *testing.T, run *Run) []record.Record {
	t.Helper()
	var out []record.Record
	if err := run.Records(func(r *record.Record) error { out = append(out, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadRoundTrip(t *testing.T) {
	d := create(t)
	writeRun(t, d, 300)
	run, err := Load(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	if run.Path != d.Path() {
		t.Errorf("Path %s", run.Path)
	}
	m := run.Manifest
	if m.Command != "burst" || m.Model != "m" || m.Hardware != record.NA || m.Finished.IsZero() {
		t.Errorf("manifest %+v", m)
	}
	recs := records(t, run)
	if len(recs) != 300 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		want := rec(int64(i))
		want.Schema = record.SchemaVersion
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("record %d: %+v, want %+v", i, r, want)
		}
	}
	if len(run.Engine) != 2 || run.Engine[1].TNs != 1e9 {
		t.Errorf("engine %+v", run.Engine)
	}
	var sum map[string]any
	if err := json.Unmarshal(run.Summary, &sum); err != nil || sum["records"] != 300.0 {
		t.Errorf("summary %s: %v", run.Summary, err)
	}
	got := slices.DeleteFunc(list(t, d.Path()), func(s string) bool { return s == LockFile })
	if want := []string{"engine.csv", "manifest.json", "requests.jsonl", "summary.json"}; !slices.Equal(got, want) {
		t.Errorf("folder holds %v, want %v (no temporary files)", got, want)
	}
}

func TestLoadOptionalFiles(t *testing.T) {
	d := create(t)
	if err := d.WriteManifest(&record.Manifest{Tool: "surge"}); err != nil {
		t.Fatal(err)
	}
	w, err := d.Records()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	run, err := Load(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	if records(t, run) != nil || run.Engine != nil || run.Summary != nil {
		t.Fatalf("a run without records, engine.csv or summary.json: %+v", run)
	}
}

// Only the records are indispensable: without them Load fails, and with a
// line that does not parse streaming them (Run.Records) fails, naming the
// file and line.
func TestLoadErrors(t *testing.T) {
	good := rec(0)
	line := string(good.AppendJSON(nil)) + "\n"
	cases := []struct {
		name  string
		files map[string]string
		want  string // the message, with %s for the folder
	}{
		{"no records", map[string]string{"manifest.json": "{}"},
			"rundir: %s: no requests.jsonl (or requests.jsonl.gz): nothing to re-analyse"},
		{"broken line within", map[string]string{"manifest.json": "{}", "requests.jsonl": line + line[:len(line)/2] + "\n" + line},
			"rundir: record: %s/requests.jsonl:2: unexpected end of JSON input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run, err := Load(dir)
			if err == nil {
				err = run.Records(func(*record.Record) error { return nil })
			}
			if want := fmt.Sprintf(c.want, dir); err == nil || err.Error() != want {
				t.Fatalf("got %v (run %v)\nwant %s", err, run, want)
			}
		})
	}
}

// A last line without its newline (a run killed in the middle of a write)
// is left out and counted, and said in Problems; the lines before it load.
func TestLoadTornLastLine(t *testing.T) {
	good := rec(0)
	line := string(good.AppendJSON(nil)) + "\n"
	dir := t.TempDir()
	torn := line[:len(line)/2]
	if err := os.WriteFile(filepath.Join(dir, "requests.jsonl"), []byte(line+line+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(records(t, run)); n != 2 || run.Torn != int64(len(torn)) {
		t.Fatalf("%d records, %d torn bytes; want 2 and %d", n, run.Torn, len(torn))
	}
	if len(run.Problems) == 0 || !strings.Contains(run.Problems[0], "requests.jsonl: its last line is cut off") {
		t.Errorf("problems %q", run.Problems)
	}
}

// A missing or unreadable manifest.json, engine.csv or summary.json does
// not stop Load: the run loads without it, and Problems names the file,
// what was wrong and what that costs — one line per file.
func TestLoadProblems(t *testing.T) {
	good := rec(0)
	line := string(good.AppendJSON(nil)) + "\n"
	cases := []struct {
		name  string
		files map[string]string
		want  []string // prefixes of the problems, in order
	}{
		{"no manifest", map[string]string{"requests.jsonl": line, "summary.json": "{}"},
			[]string{"manifest.json: missing — the target"}},
		{"bad manifest", map[string]string{"manifest.json": "{", "requests.jsonl": line, "summary.json": "{}"},
			[]string{"manifest.json: unreadable: unexpected end of JSON input — "}},
		{"bad engine.csv", map[string]string{"manifest.json": "{}", "requests.jsonl": line, "engine.csv": "waiting\n1\n", "summary.json": "{}"},
			[]string{"engine.csv: unreadable: scrape: engine.csv: no t_s column — the engine's samples over time are lost"}},
		{"bad summary.json", map[string]string{"manifest.json": "{}", "requests.jsonl": line, "summary.json": "{\"a\":"},
			[]string{"summary.json: unreadable: not valid JSON — what only the run knew"}},
		{"no summary.json, no manifest", map[string]string{"requests.jsonl": line},
			[]string{"manifest.json: missing", "summary.json: missing — "}},
		{"complete", map[string]string{"manifest.json": "{}", "requests.jsonl": line, "summary.json": "{}"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(records(t, run)); n != 1 || run.Manifest == nil {
				t.Fatalf("records %d, manifest %v", n, run.Manifest)
			}
			if _, has := c.files["engine.csv"]; run.EngineAbsent == has {
				t.Errorf("EngineAbsent %v with engine.csv there: %v", run.EngineAbsent, has)
			}
			if len(run.Problems) != len(c.want) {
				t.Fatalf("problems %q, want %d", run.Problems, len(c.want))
			}
			for i, w := range c.want {
				if !strings.HasPrefix(run.Problems[i], w) {
					t.Errorf("problem %d: %q, want it to start %q", i, run.Problems[i], w)
				}
			}
		})
	}
}

func TestRuns(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir,
		"burst-10x/requests.jsonl", "burst-2x/requests.jsonl", "burst-5x/requests.jsonl.gz", "burst-02x/requests.jsonl",
		"burst-3x/summary.json", // not a run: no records
		"burst-4x",              // a file, not a folder
		"level-1/requests.jsonl")
	got, err := Runs(dir, "burst-*x")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		if filepath.Dir(p) != dir {
			t.Fatalf("%s is not in %s", p, dir)
		}
		names = append(names, filepath.Base(p))
	}
	if want := []string{"burst-2x", "burst-02x", "burst-5x", "burst-10x"}; !slices.Equal(names, want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	if !IsRun(filepath.Join(dir, "burst-5x")) || IsRun(filepath.Join(dir, "burst-3x")) || IsRun(filepath.Join(dir, "nope")) {
		t.Error("IsRun")
	}

	if _, err := Runs(dir, "["); err == nil || err.Error() != `rundir: pattern "[": syntax error in pattern` {
		t.Errorf("bad pattern: %v", err)
	}
	if _, err := Runs(filepath.Join(dir, "nope"), "*"); err == nil || err.Error() != "rundir: "+filepath.Join(dir, "nope")+": open: no such file or directory" {
		t.Errorf("missing folder: %v", err)
	}
}

func TestNatural(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"burst-2x", "burst-10x", -1},
		{"burst-10x", "burst-2x", 1},
		{"burst-5x", "burst-5x", 0},
		{"burst-5x", "burst-05x", -1},
		{"a", "b", -1},
		{"a", "a1", -1},
		{"level-9", "level-10", -1},
		{"x99999999999999999999", "x100000000000000000000", -1}, // beyond int64
	}
	for _, c := range cases {
		if got := natural(c.a, c.b); got != c.want {
			t.Errorf("natural(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
