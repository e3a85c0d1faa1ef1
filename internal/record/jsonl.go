package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Writer streams records as JSON lines. It is safe for concurrent use.
//
// What reaches the file is always whole lines: records are encoded into the
// Writer's own buffer, and the buffer goes to the file in one Write only at a
// line boundary — when it holds BufferSize bytes or more, after every
// FlushEvery records, and on Flush and Close. An interrupted run loses at
// most the records still buffered at the moment of a crash, never on Ctrl-C,
// where the caller closes the writer.
//
// A failed write (a short write, ENOSPC, EIO) is sticky: that call and every
// later Write and Flush return the same error, and Err reports it. If the
// file can be truncated (an *os.File can) and is not gzipped, it is cut back
// to the end of its last whole line, so a full disk never leaves half a
// record behind; the records of the failed batch are lost, and Count drops
// back to the records the file holds.
type Writer struct {
	mu     sync.Mutex
	f      io.WriteCloser
	gz     *gzip.Writer
	out    io.Writer // f, or gz writing to f
	name   string    // the file's name in errors; "" when unknown
	trunc  truncater // f, when a failed write can be cut back; nil otherwise
	buf    []byte    // whole lines not yet written
	off    int64     // offset in f of the end of the last successful write
	n      int64     // records accepted (in the file or in buf)
	nFile  int64     // records in the file
	unsync int       // records accepted since the last flush
	err    error     // sticky write error
	closed bool
	// onFull is called once, when a write finds the disk full (see
	// OnFull); nil after it was called.
	onFull func(error) bool
}

// OnFull sets fn to be called, once, the first time a write finds the
// disk full (ENOSPC, EDQUOT), with that error, before it is made sticky.
// When fn reports that it freed space (a run's reserve), the failed write
// is cut back and tried again: the records then reach the file and the
// Writer goes on. fn is called with the Writer's lock held and must not
// use the Writer.
func (w *Writer) OnFull(fn func(error) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onFull = fn
}

// IsDiskFull reports whether err says the disk (or the user's quota) is
// full.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// truncater is a file that can be cut back to a size, as *os.File can.
type truncater interface {
	Truncate(size int64) error
}

// FlushEvery is how many records a Writer buffers before it writes them out.
const FlushEvery = 256

// BufferSize is how many bytes of whole lines a Writer buffers before it
// writes them out, even if fewer than FlushEvery records.
const BufferSize = 64 << 10

// errClosed is returned by Write and Flush after Close.
var errClosed = errors.New("record: writer closed")

// Create opens path for writing records; a name ending in ".gz" is gzipped.
// Errors name path.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return NewWriter(f, strings.HasSuffix(path, ".gz")), nil
}

// NewWriter streams records to w (closed by Close), gzipped when gz is true.
// Errors name the file when w has a Name method (as *os.File has). A failed
// write is cut back (see Writer) when w is not gzipped, has a Truncate method
// and, if it has Seek and Stat methods, is positioned at its end, so that
// the Writer knows where its lines start.
func NewWriter(w io.WriteCloser, gz bool) *Writer {
	rw := &Writer{f: w, out: w, buf: make([]byte, 0, BufferSize+4<<10)}
	if n, ok := w.(interface{ Name() string }); ok {
		rw.name = n.Name()
	}
	if gz {
		rw.gz = gzip.NewWriter(w)
		rw.out = rw.gz
		return rw
	}
	if t, ok := w.(truncater); ok {
		rw.trunc = t
		if s, ok := w.(io.Seeker); ok {
			off, err := s.Seek(0, io.SeekCurrent)
			if err != nil {
				rw.trunc = nil
			}
			rw.off = off
		}
		if st, ok := w.(interface{ Stat() (os.FileInfo, error) }); ok && rw.trunc != nil {
			// Only a regular file can be cut back, and only if the Writer
			// starts at its end: with content beyond the position (a file
			// opened to append to, or to overwrite) where writes land is
			// unknown.
			if fi, err := st.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != rw.off {
				rw.trunc = nil
			}
		}
	}
	return rw
}

// Write appends one record. The error, if any, is the Writer's sticky error
// (see Writer); the record is then not in the file.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosed
	}
	w.buf = r.AppendJSON(w.buf)
	w.buf = append(w.buf, '\n')
	w.n++
	w.unsync++
	if w.unsync >= FlushEvery {
		return w.flushLocked()
	}
	if len(w.buf) >= BufferSize {
		return w.writeLocked()
	}
	return nil
}

// Count is the number of records written so far, buffered ones included.
// After Close, or after a failed write, it is exactly the number of lines
// in the file.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Err returns the sticky write error, or nil if every write so far
// succeeded. A clean Close is not an error.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Flush writes buffered records through to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && w.closed {
		return errClosed
	}
	return w.flushLocked()
}

// flushLocked writes the buffer out and flushes gzip's own buffer.
func (w *Writer) flushLocked() error {
	w.unsync = 0
	if err := w.writeLocked(); err != nil {
		return err
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			return w.fail(err, 0)
		}
	}
	return nil
}

// writeLocked writes the buffered whole lines to the file in one Write.
func (w *Writer) writeLocked() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.out.Write(w.buf)
	if err != nil && IsDiskFull(err) && w.onFull != nil && w.gz == nil && (n == 0 || w.trunc != nil) {
		fn := w.onFull
		w.onFull = nil
		if fn(w.named(err)) && (n == 0 || w.trunc.Truncate(w.off) == nil) {
			if s, ok := w.f.(io.Seeker); !ok || n == 0 {
				n, err = w.out.Write(w.buf)
			} else if _, serr := s.Seek(w.off, io.SeekStart); serr == nil {
				n, err = w.out.Write(w.buf)
			}
		}
	}
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return w.fail(err, n)
	}
	w.off += int64(n)
	w.nFile = w.n
	w.buf = w.buf[:0]
	return nil
}

// named is err as fail words it, naming the file once.
func (w *Writer) named(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && w.name != "" {
		err = pe.Err // the name is said once, by us
	}
	what := "write"
	if w.name != "" {
		what += " " + w.name
	}
	return fmt.Errorf("record: %s: %w", what, err)
}

// fail makes err sticky after a write that put n bytes of a batch in the
// file, cutting the file back to its last whole line when it can.
func (w *Writer) fail(err error, n int) error {
	w.buf = w.buf[:0]
	w.n = w.nFile
	w.unsync = 0
	w.err = w.named(err)
	if w.trunc != nil && n > 0 {
		if terr := w.trunc.Truncate(w.off); terr != nil {
			w.err = fmt.Errorf("%w (cutting it back to its last whole line failed too: %v)", w.err, terr)
		}
	}
	return w.err
}

// Close flushes and closes the file. It returns the sticky write error, if
// any; a second Close only returns that error again.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	err := w.flushLocked()
	if w.gz != nil && err == nil {
		if cerr := w.gz.Close(); cerr != nil {
			err = w.fail(cerr, 0)
		}
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		var pe *fs.PathError
		if errors.As(cerr, &pe) && w.name != "" {
			cerr = pe.Err
		}
		if w.name != "" {
			err = fmt.Errorf("record: close %s: %w", w.name, cerr)
		} else {
			err = fmt.Errorf("record: close: %w", cerr)
		}
	}
	if w.err == nil {
		w.err = err // the last writes may not have reached the disk
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
// fn must not keep the record it is given: the next line is decoded into
// the same one (copy it to keep it). Blank lines are skipped. A truncated last line (a run killed mid-write)
// is reported as an error naming its line.
func Read(r io.Reader, name string, fn func(*Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	line := 0
	d := newDecoder()
	var rec Record
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := d.unmarshal(b, &rec); err != nil {
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

// Source streams records: it calls fn for each, in its order, and stops at
// the first error fn returns (which it returns). fn must not keep the
// record it is given. A run's records come from its requests.jsonl
// (FileSource), so that no analysis holds them all in memory.
type Source func(fn func(*Record) error) error

// FileSource streams the records of path with ReadFile.
func FileSource(path string) Source {
	return func(fn func(*Record) error) error { return ReadFile(path, fn) }
}

// SliceSource streams recs (for tests and callers that hold records).
func SliceSource(recs []Record) Source {
	return func(fn func(*Record) error) error {
		for i := range recs {
			r := recs[i] // a copy: fn may not change the caller's records
			if err := fn(&r); err != nil {
				return err
			}
		}
		return nil
	}
}

// Each calls fn for every record of s; a nil Source has none.
func (s Source) Each(fn func(*Record) error) error {
	if s == nil {
		return nil
	}
	return s(fn)
}
