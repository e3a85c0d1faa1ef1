package record

import (
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkWriterWrite measures Write alone: encoding and buffering, with the
// file a sink that costs nothing.
func BenchmarkWriterWrite(b *testing.B) {
	w := NewWriter(nopCloser{io.Discard}, false)
	defer w.Close()
	r := full()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterWriteFile measures Write to a real file, system calls
// included.
func BenchmarkWriterWriteFile(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "requests.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r := full()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterWriteGzip measures Write to a gzipped stream.
func BenchmarkWriterWriteGzip(b *testing.B) {
	w := NewWriter(nopCloser{io.Discard}, true)
	defer w.Close()
	r := full()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
}
