package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/rundir"
)

// BenchmarkRuns merges two shards of 100,000 records each (the record
// files only: the re-render is surge report's cost) and reports the time
// per record and the heap the process took from the OS — which a
// streaming merge keeps flat whatever the number of records.
//
//	go test ./internal/merge/ -run '^$' -bench Runs -benchtime 3x
func BenchmarkRuns(b *testing.B) {
	root := b.TempDir()
	recs := genRecords(rand.New(rand.NewPCG(1, 2)), 20_000)
	dirs := writeShards(b, rand.New(rand.NewPCG(3, 4)), root, recs, 2, []time.Duration{0, 1500 * time.Millisecond}, true)
	shards, err := Open(dirs)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		out, err := rundir.Create(filepath.Join(root, fmt.Sprint("m", i)), rundir.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Runs(context.Background(), shards, out); err != nil {
			b.Fatal(err)
		}
		out.Close()
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
	b.ReportMetric(float64(after.HeapSys)/(1<<20), "heap-MB")
}
