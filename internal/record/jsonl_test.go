package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// diskFile is a file that holds limit bytes: a Write beyond that writes what
// fits and fails with ENOSPC, the way a full disk does. Every Write's bytes
// are kept, so tests can check where the Writer cut its batches.
type diskFile struct {
	data      []byte
	limit     int
	quiet     bool  // a short write returns no error (a broken io.Writer)
	truncErr  error // returned by Truncate
	writes    [][]byte
	truncated []int64
	closed    bool
}

func (f *diskFile) Write(p []byte) (int, error) {
	f.writes = append(f.writes, bytes.Clone(p))
	room := f.limit - len(f.data)
	if len(p) <= room {
		f.data = append(f.data, p...)
		return len(p), nil
	}
	f.data = append(f.data, p[:room]...)
	if f.quiet {
		return room, nil
	}
	return room, syscall.ENOSPC
}

func (f *diskFile) Truncate(size int64) error {
	f.truncated = append(f.truncated, size)
	if f.truncErr != nil {
		return f.truncErr
	}
	f.data = f.data[:size]
	return nil
}

func (f *diskFile) Close() error { f.closed = true; return nil }

// namedFile is a diskFile with a name, as an *os.File has.
type namedFile struct{ *diskFile }

func (namedFile) Name() string { return "out/x/requests.jsonl" }

// Write fails as an *os.File does, with an error naming the file.
func (f namedFile) Write(p []byte) (int, error) {
	n, err := f.diskFile.Write(p)
	if err != nil {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return n, err
}

// lines returns the records in b, failing the test if b is not whole lines
// that each parse.
func lines(t *testing.T, b []byte) []Record {
	t.Helper()
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("file ends mid-line: ...%q", b[max(0, len(b)-40):])
	}
	var out []Record
	if err := Read(bytes.NewReader(b), "requests.jsonl", func(r *Record) error { out = append(out, *r); return nil }); err != nil {
		t.Fatalf("file does not parse: %v", err)
	}
	return out
}

func TestWriterFullDisk(t *testing.T) {
	one := full()
	line := len(one.AppendJSON(nil)) + 1
	const n = 3 * FlushEvery
	perWrite := (BufferSize + line - 1) / line // records in each write to the file
	cases := []struct {
		name  string
		limit int // bytes the disk holds
		quiet bool
	}{
		{"room for everything", 1 << 30, false},
		{"full from the start", 0, false},
		{"full mid first line", line / 2, false},
		{"full mid first write", 10*line + 7, false},
		{"full exactly at the end of the first write", perWrite * line, false},
		{"full mid second write", (perWrite+3)*line + 1, false},
		{"short write without error", 5*line + 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &diskFile{limit: c.limit, quiet: c.quiet}
			w := NewWriter(f, false)
			var first error
			for i := 0; i < n; i++ {
				r := full()
				r.Seq = int64(i)
				before := len(f.writes)
				err := w.Write(&r)
				if first == nil && err != nil {
					first = err
					if len(f.writes) == before {
						t.Errorf("write %d failed without writing to the file", i)
					}
				}
				if first != nil && err != first {
					t.Fatalf("write %d after a failure returned %v, want the sticky %v", i, err, first)
				}
			}
			cerr := w.Close()
			if first == nil {
				first = cerr
			}
			fits := c.limit >= n*line
			if fits {
				if first != nil || w.Err() != nil {
					t.Fatalf("no failure expected, got %v (Err %v)", first, w.Err())
				}
			} else {
				if first == nil {
					t.Fatal("the disk filled up but no call failed")
				}
				if w.Err() != first || cerr != first || w.Flush() != first {
					t.Fatalf("error not sticky: first %v, Err %v, Close %v", first, w.Err(), cerr)
				}
				want := syscall.ENOSPC
				if c.quiet {
					if !errors.Is(first, io.ErrShortWrite) {
						t.Fatalf("got %v, want a short write", first)
					}
				} else if !errors.Is(first, want) || first.Error() != "record: write: no space left on device" {
					t.Fatalf("got %q, want ENOSPC", first)
				}
			}
			got := lines(t, f.data)
			if int64(len(got)) != w.Count() {
				t.Fatalf("file holds %d records, Count says %d", len(got), w.Count())
			}
			for i := range got {
				if got[i].Seq != int64(i) {
					t.Fatalf("line %d holds record %d: not a prefix", i+1, got[i].Seq)
				}
			}
			if fits && len(got) != n {
				t.Fatalf("file holds %d records, want %d", len(got), n)
			}
			if !fits && len(got) > c.limit/line {
				t.Fatalf("file holds %d records, more than fit (%d)", len(got), c.limit/line)
			}
			if !f.closed {
				t.Error("Close did not close the file")
			}
		})
	}
}

func TestWriterWritesWholeLines(t *testing.T) {
	f := &diskFile{limit: 1 << 30}
	w := NewWriter(f, false)
	big := full()
	big.Error = strings.Repeat("x", 1500) // a few dozen records fill the buffer
	line := len(big.AppendJSON(nil)) + 1
	for i := 0; i < 2*FlushEvery+5; i++ {
		if err := w.Write(&big); err != nil {
			t.Fatal(err)
		}
		if i == BufferSize/line && len(f.writes) != 1 {
			t.Fatalf("after %d bytes buffered, %d writes reached the file; want 1", (i+1)*line, len(f.writes))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range f.writes {
		if len(p) == 0 || p[len(p)-1] != '\n' || len(p)%line != 0 {
			t.Fatalf("write %d of %d bytes is not whole lines of %d bytes", i, len(p), line)
		}
		if len(p) > BufferSize+line {
			t.Fatalf("write %d of %d bytes: the buffer outgrew BufferSize", i, len(p))
		}
	}
	if got := len(lines(t, f.data)); got != 2*FlushEvery+5 {
		t.Fatalf("file holds %d records", got)
	}
}

func TestWriterFailureMessages(t *testing.T) {
	one := full()
	line := len(one.AppendJSON(nil)) + 1
	roFS := errors.New("read-only file system")
	cases := []struct {
		name    string
		disk    *diskFile
		named   bool // the file has a name, as an *os.File has
		gzipped bool
		want    string
	}{
		{name: "named file", disk: &diskFile{limit: line + 1}, named: true,
			want: "record: write out/x/requests.jsonl: no space left on device"},
		{name: "truncate fails", disk: &diskFile{limit: line + 1, truncErr: roFS},
			want: "record: write: no space left on device (cutting it back to its last whole line failed too: read-only file system)"},
		{name: "gzip: no truncation, sticky", disk: &diskFile{limit: 10}, named: true, gzipped: true,
			want: "record: write out/x/requests.jsonl: no space left on device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f io.WriteCloser = c.disk
			if c.named {
				f = namedFile{c.disk}
			}
			w := NewWriter(f, c.gzipped)
			r := full()
			var err error
			for i := 0; i < 2*FlushEvery && err == nil; i++ {
				err = w.Write(&r)
			}
			if err == nil {
				err = w.Close()
			}
			if err == nil || err.Error() != c.want {
				t.Fatalf("got %v\nwant %s", err, c.want)
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("%v does not unwrap to ENOSPC", err)
			}
			if w.Write(&r) != err || w.Err() != err {
				t.Error("error not sticky")
			}
			if c.gzipped && len(c.disk.truncated) > 0 {
				t.Errorf("a gzipped file was truncated to %v", c.disk.truncated)
			}
			if !c.gzipped && len(c.disk.truncated) != 1 {
				t.Errorf("truncated %v, want once", c.disk.truncated)
			}
		})
	}
}

func TestWriterAfterClose(t *testing.T) {
	w := NewWriter(&diskFile{limit: 1 << 20}, false)
	r := full()
	if err := w.Write(&r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Err() != nil {
		t.Errorf("Err after a clean Close: %v", w.Err())
	}
	if err := w.Write(&r); err == nil || err.Error() != "record: writer closed" {
		t.Errorf("Write after Close: %v", err)
	}
	if err := w.Flush(); err == nil {
		t.Error("Flush after Close must fail")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if w.Count() != 1 {
		t.Errorf("Count %d", w.Count())
	}
}

func TestWriterDevFull(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	w := NewWriter(f, false)
	r := full()
	var werr error
	for i := 0; i < FlushEvery && werr == nil; i++ {
		werr = w.Write(&r)
	}
	cerr := w.Close()
	if werr == nil || cerr != werr {
		t.Fatalf("write error %v, close %v: /dev/full must fail and stay failed", werr, cerr)
	}
	if !errors.Is(werr, syscall.ENOSPC) || werr.Error() != "record: write /dev/full: no space left on device" {
		t.Fatalf("got %q", werr)
	}
	if w.Count() != 0 {
		t.Errorf("Count %d, but nothing reached the file", w.Count())
	}
}

func TestWriterWriteAllocs(t *testing.T) {
	w := NewWriter(nopCloser{io.Discard}, false)
	defer w.Close()
	r := full()
	for i := 0; i < 2*FlushEvery; i++ { // grow the buffer to its steady size
		w.Write(&r)
	}
	if a := testing.AllocsPerRun(10*FlushEvery, func() { w.Write(&r) }); a != 0 {
		t.Fatalf("Write allocates %v times per record", a)
	}
}

func ExampleWriter_Err() {
	w := NewWriter(&diskFile{limit: 100}, false)
	r := full()
	for i := 0; i < FlushEvery; i++ {
		w.Write(&r)
	}
	fmt.Println(w.Err(), w.Count())
	// Output: record: write: no space left on device 0
}

func TestWriterCutsBackOnlyWhereItKnowsItsStart(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, flag int, content string) func(*testing.T) io.WriteCloser {
		return func(t *testing.T) io.WriteCloser {
			path := name
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, name)
			}
			if content != "" {
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, err := os.OpenFile(path, flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	cases := []struct {
		name    string
		file    func(*testing.T) io.WriteCloser
		gzipped bool
		cut     bool
	}{
		{"new file", open("new.jsonl", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, ""), false, true},
		{"gzipped", open("new.jsonl.gz", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, ""), true, false},
		{"appending to records", open("old.jsonl", os.O_WRONLY|os.O_APPEND, "{}\n"), false, false},
		{"a device", open(os.DevNull, os.O_WRONLY, ""), false, false},
		{"no Truncate method", func(*testing.T) io.WriteCloser { return nopCloser{io.Discard} }, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(c.file(t), c.gzipped)
			defer w.Close()
			if got := w.trunc != nil; got != c.cut {
				t.Fatalf("would cut back a failed write: %v, want %v", got, c.cut)
			}
		})
	}
}
