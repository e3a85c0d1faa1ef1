package scrape

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// BenchmarkScrapeParse measures parsing and extracting one vLLM exposition
// (testdata/vllm_v1.txt, two engines, ~21 KB).
func BenchmarkScrapeParse(b *testing.B) {
	body, err := os.ReadFile("testdata/vllm_v1.txt")
	if err != nil {
		b.Fatal(err)
	}
	p, _ := LookupPreset("vllm")
	e := &extractor{preset: p}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		fams, err := ParseText(bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		e.extract(0, fams)
	}
}

// BenchmarkCSVWrite measures one engine.csv row (with three histograms).
func BenchmarkCSVWrite(b *testing.B) {
	s := csvSamples()[0]
	w := NewCSVWriter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPhaseStats measures per-phase quantiles over an hour of samples.
func BenchmarkPhaseStats(b *testing.B) {
	counts := make([][]float64, 3600)
	sums := make([]float64, 3600)
	for i := range counts {
		f := float64(i)
		counts[i] = []float64{f, 2 * f, 3 * f, 3 * f}
		sums[i] = f
	}
	s := samplesQ(counts, sums)
	b.ReportAllocs()
	for b.Loop() {
		PhaseStats(s, QueueTime, 600e9, 1800e9)
	}
}
