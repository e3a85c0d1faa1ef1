package analyze

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Pool over two runs is the nearest rank of both runs' values together,
// the timeouts of either ranked above every success; rates are over the
// runs' summed durations (the second run stopped at 8 s).
func TestPoolMergesObservations(t *testing.T) {
	run := func(end time.Duration, ttfts []time.Duration, timeouts int) PoolRun {
		var recs []record.Record
		for i, v := range ttfts {
			recs = append(recs, *okRec(time.Duration(i)*500*ms, 0, v, v+time.Second))
		}
		for i := range timeouts {
			recs = append(recs, *failRec(time.Duration(i)*300*ms, record.Timeout))
		}
		return PoolRun{Config: Config{Phases: []Phase{{Name: "main", End: end}}, Timeout: 60 * s}, Records: record.SliceSource(recs)}
	}
	// Run 1: 10 values 100..1000 ms. Run 2: 9 values 1100..1900 ms and a
	// timeout. Together: 19 values and 1 timeout, N = 20.
	var a, b []time.Duration
	for i := 1; i <= 10; i++ {
		a = append(a, time.Duration(i)*100*ms)
	}
	for i := 11; i <= 19; i++ {
		b = append(b, time.Duration(i)*100*ms)
	}
	p, err := Pool([]PoolRun{run(10*s, a, 0), run(8*s, b, 1)})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Overall
	if st.Offered != 20 || st.DurationMs != 18000 {
		t.Fatalf("offered %d over %g ms, want 20 over 18000", st.Offered, st.DurationMs)
	}
	if want := 20.0 / 18; st.OfferedRPS < want-1e-9 || st.OfferedRPS > want+1e-9 {
		t.Errorf("offered %g req/s, want 20/18", st.OfferedRPS)
	}
	d := st.Latency.TTFTSchedule
	// P50: rank ⌈0.5·20⌉ = 10 → 1000 ms (run 1's largest). P95: rank 19 →
	// 1900 ms. P99: rank 20 is the timeout → censored.
	if d.P50Ms < 1000 || d.P50Ms > 1001 || d.P95Ms < 1900 || d.P95Ms > 1902 || !d.P99Censored || d.P95Censored {
		t.Errorf("p50 %g p95 %g (censored %v) p99 censored %v; want 1000, 1900, a censored p99", d.P50Ms, d.P95Ms, d.P95Censored, d.P99Censored)
	}
	// The average of the runs' own P50s (500 and 1500 ms) would be 1000 by
	// chance here; their P95s average to (1000 + 1900)/2 = 1450, not 1900.
	if !(p.Recovery.Reason != "" && !p.Recovery.Measured) {
		t.Errorf("pooled recovery judged: %+v", p.Recovery)
	}
	if _, err := Pool([]PoolRun{run(10*s, a, 0), {Config: Config{Phases: []Phase{{Name: "other", End: 10 * s}}, Timeout: 60 * s}}}); err == nil {
		t.Error("runs of other phases pooled")
	}
}
