package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Writer streams records as JSON lines. It is safe for concurrent use and
// flushes to the underlying file after every FlushEvery records and on Flush
// and Close, so an interrupted run loses at most the records still buffered
// in memory at the moment of a crash — never on Ctrl-C, where the caller
// closes the writer.
type Writer struct {
	mu     sync.Mutex
	f      io.WriteCloser
	gz     *gzip.Writer
	bw     *bufio.Writer
	buf    []byte
	n      int64
	unsync int
	err    error
}

// FlushEvery is how many records a Writer buffers before it writes them out.
const FlushEvery = 256

// Create opens path for writing records; a name ending in ".gz" is gzipped.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return NewWriter(f, strings.HasSuffix(path, ".gz")), nil
}

// NewWriter streams records to w (closed by Close), gzipped when gz is true.
func NewWriter(w io.WriteCloser, gz bool) *Writer {
	rw := &Writer{f: w, buf: make([]byte, 0, 1024)}
	var out io.Writer = w
	if gz {
		rw.gz = gzip.NewWriter(w)
		out = rw.gz
	}
	rw.bw = bufio.NewWriterSize(out, 64<<10)
	return rw
}

// Write appends one record.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = r.AppendJSON(w.buf[:0])
	w.buf = append(w.buf, '\n')
	if _, err := w.bw.Write(w.buf); err != nil {
		w.err = fmt.Errorf("record: write: %w", err)
		return w.err
	}
	w.n++
	w.unsync++
	if w.unsync >= FlushEvery {
		return w.flushLocked()
	}
	return nil
}

// Count is the number of records written so far.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Flush writes buffered records through to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	w.unsync = 0
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("record: flush: %w", err)
		return w.err
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			w.err = fmt.Errorf("record: flush: %w", err)
			return w.err
		}
	}
	return nil
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.flushLocked()
	if w.gz != nil {
		if cerr := w.gz.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("record: close: %w", cerr)
		}
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("record: close: %w", cerr)
	}
	if w.err == nil {
		w.err = errors.New("record: writer closed")
	}
	return err
}

// ReadFile calls fn for every record in path (gzipped when it ends in ".gz"
// or starts with the gzip magic). Errors name the file and line.
func ReadFile(path string, fn func(*Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("record: %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	return Read(r, path, fn)
}

// Read calls fn for every JSON-lines record in r; name is used in errors.
// Blank lines are skipped. A truncated last line (a run killed mid-write)
// is reported as an error naming its line.
func Read(r io.Reader, name string, fn func(*Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("record: %s:%d: %w", name, line, err)
		}
		if err := fn(&rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("record: %s:%d: %w", name, line+1, err)
	}
	return nil
}
