package analyze

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// benchRecords is a realistic stream: a 13-minute burst run at 20 req/s,
// mostly successful, with some 429s, timeouts and drops.
func benchRecords(n int) []*record.Record {
	recs := make([]*record.Record, n)
	for i := range recs {
		sched := time.Duration(i) * 13 * time.Minute / time.Duration(n)
		switch i % 50 {
		case 7:
			recs[i] = failRec(sched, record.RateLimited)
		case 19:
			recs[i] = failRec(sched, record.Timeout)
		case 31:
			recs[i] = failRec(sched, record.GeneratorDrop)
		default:
			ttft := time.Duration(50+i%700) * ms
			recs[i] = okRec(sched, time.Duration(i%300)*time.Microsecond, ttft, ttft+time.Duration(1+i%9)*s)
		}
	}
	return recs
}

func benchConfig() Config {
	return Config{Phases: []Phase{
		{Name: "warmup", End: 2 * time.Minute, Excluded: true},
		{Name: "baseline", Start: 2 * time.Minute, End: 7 * time.Minute},
		{Name: "burst", Start: 7 * time.Minute, End: 8 * time.Minute},
		{Name: "recovery", Start: 8 * time.Minute, End: 13 * time.Minute},
	}, Timeout: 60 * s}
}

// BenchmarkAdd measures the cost of accounting one record (ns/op = ns per record).
func BenchmarkAdd(b *testing.B) {
	recs := benchRecords(1 << 14)
	a := mustNew(b, benchConfig())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a.Add(recs[i&(len(recs)-1)])
	}
}

// BenchmarkResult measures summarising a 13-minute run (78 windows, 780 timeline samples).
func BenchmarkResult(b *testing.B) {
	a := mustNew(b, benchConfig())
	for _, r := range benchRecords(15600) {
		a.Add(r)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = a.Result()
	}
}
