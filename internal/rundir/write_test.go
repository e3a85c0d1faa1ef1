package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/scrape"
)

func create(t *testing.T) *Dir {
	t.Helper()
	d, err := Create(filepath.Join(t.TempDir(), "x"), Options{Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func rec(seq int64) record.Record {
	r := record.New(fmt.Sprintf("run-%d", seq), seq, "burst", seq*1_000_000)
	r.SentNs, r.HeadersNs, r.FirstTokenNs, r.DoneNs = r.ScheduledNs+10, r.ScheduledNs+20, r.ScheduledNs+30, r.ScheduledNs+40
	r.Status, r.Outcome, r.Good = 200, record.OK, true
	return r
}

// writeRun writes a whole run into d with the Dir's writers.
func writeRun(t *testing.T, d *Dir, n int) {
	t.Helper()
	m := &record.Manifest{Tool: "surge", Command: "burst", RunID: filepath.Base(d.Path()), Model: "m", Started: time.Unix(1700000000, 0).UTC()}
	if err := d.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	w, err := d.Records()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := rec(int64(i))
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := d.EngineCSV()
	if err != nil {
		t.Fatal(err)
	}
	cw := scrape.NewCSVWriter(f)
	for i := range 2 {
		s := scrape.EmptySample(int64(i) * 1e9)
		if err := cw.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteJSON("summary.json", map[string]any{"run": "x", "records": n}); err != nil {
		t.Fatal(err)
	}
	m.Finished = m.Started.Add(time.Minute)
	if err := d.WriteManifest(m); err != nil {
		t.Fatalf("the manifest is written again when the run ends: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	boom := errors.New("template: results.md:3: no such field")
	cases := []struct {
		name string
		file string
		fn   func(io.Writer) error
		want string // the error, with %s for the folder; "" for none
	}{
		{"written", "results.md", func(w io.Writer) error { _, err := io.WriteString(w, "# results\n"); return err }, ""},
		{"large", "report.html", func(w io.Writer) error { _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); return err }, ""},

		// Refused or failed: nothing is left behind.
		{"fn fails", "results.md", func(w io.Writer) error { io.WriteString(w, "half"); return boom },
			"rundir: %s/results.md: template: results.md:3: no such field"},
		{"not surge's", "notes.txt", func(io.Writer) error { return nil },
			`rundir: %s: "notes.txt" is not one of surge's run files (rundir.Files), which --force could not replace`},
		{"a path", "../results.md", func(io.Writer) error { return nil },
			`rundir: %s: "../results.md" is not one of surge's run files (rundir.Files), which --force could not replace`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := create(t)
			err := d.WriteFile(c.file, c.fn)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				c.fn(&buf)
				if b, err := os.ReadFile(filepath.Join(d.Path(), c.file)); err != nil || !bytes.Equal(b, buf.Bytes()) {
					t.Fatalf("file holds %d bytes, want %d (%v)", len(b), buf.Len(), err)
				}
				if err := d.WriteFile(c.file, c.fn); err == nil || err.Error() != "rundir: "+filepath.Join(d.Path(), c.file)+": already written" {
					t.Fatalf("second write: %v", err)
				}
				return
			}
			if want := fmt.Sprintf(c.want, d.Path()); err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if c.fn != nil && errors.Is(err, boom) != (c.name == "fn fails") {
				t.Errorf("errors.Is(err, fn's error) = %v", errors.Is(err, boom))
			}
			if got := list(t, filepath.Dir(d.Path())); !slices.Equal(got, []string{"x/", "x/" + LockFile}) {
				t.Fatalf("a failed write left %v", got)
			}
			if c.name == "fn fails" {
				if err := d.WriteFile(c.file, func(io.Writer) error { return nil }); err != nil {
					t.Fatalf("a failed write cannot be retried: %v", err)
				}
			}
		})
	}
}

func TestWritersOnce(t *testing.T) {
	d := create(t)
	writeRun(t, d, 1)
	already := func(name string, err error) {
		t.Helper()
		if want := "rundir: " + filepath.Join(d.Path(), name) + ": already written"; err == nil || err.Error() != want {
			t.Errorf("second write of %s: %v, want %s", name, err, want)
		}
	}
	_, err := d.Records()
	already("requests.jsonl", err)
	_, err = d.EngineCSV()
	already("engine.csv", err)
	already("summary.json", d.WriteJSON("summary.json", 1))

	if err := d.RemoveEngineCSV(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Path(), "engine.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("engine.csv after RemoveEngineCSV: %v", err)
	}
	if err := d.RemoveEngineCSV(); err != nil {
		t.Fatalf("removing it again: %v", err)
	}
}

func TestWriteJSONError(t *testing.T) {
	d := create(t)
	err := d.WriteJSON("summary.json", map[string]any{"f": func() {}})
	if want := "rundir: " + d.Path() + "/summary.json: json: unsupported type: func()"; err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestOpenErrorsNameFile(t *testing.T) {
	cases := []struct {
		name string
		open func(*Dir) error
		want string
	}{
		{"requests.jsonl", func(d *Dir) error { _, err := d.Records(); return err }, "open: is a directory"},
		{"engine.csv", func(d *Dir) error { _, err := d.EngineCSV(); return err }, "open: is a directory"},
		{"results.md", func(d *Dir) error { return d.WriteFile("results.md", func(io.Writer) error { return nil }) }, "rename: file exists"},
		{"manifest.json", func(d *Dir) error { return d.WriteManifest(&record.Manifest{}) }, "rename: file exists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := create(t)
			// A folder where the file goes makes opening or replacing it fail.
			if err := os.Mkdir(filepath.Join(d.Path(), c.name), 0o755); err != nil {
				t.Fatal(err)
			}
			err := c.open(d)
			want := "rundir: " + filepath.Join(d.Path(), c.name) + ": " + c.want
			if err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if _, err := os.Stat(filepath.Join(d.Path(), tmpName(c.name))); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("temporary file left: %v", err)
			}
		})
	}
}
