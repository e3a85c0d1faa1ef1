package record

import (
	"bytes"
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

// BenchmarkRead measures decoding requests.jsonl lines (Read), per record.
func BenchmarkRead(b *testing.B) {
	r := full()
	var buf []byte
	for range 1000 {
		buf = r.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)) / 1000)
	for b.Loop() {
		n := 0
		if err := Read(bytes.NewReader(buf), "x", func(*Record) error { n++; return nil }); err != nil || n != 1000 {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/record")
}
