package push

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/record"
)

// benchGenAI is a run's histograms after requests of two phases, one of
// them with failures: 10 histograms, as a burst's baseline and burst make.
func benchGenAI() *GenAI {
	g := NewGenAI("chat", "m", time.Unix(1e9, 0))
	for i := range 1000 {
		r := &record.Record{Phase: []string{"baseline", "burst"}[i%2], SentNs: 1e6, FirstTokenNs: 5e7, DoneNs: int64(1e9 + i*1e6), Outcome: record.OK, UsageFromServer: true, PromptTokens: 500, OutputTokens: 64}
		if i%10 == 0 {
			r.Outcome = record.Timeout
		}
		g.Observe(r)
	}
	return g
}

// BenchmarkObserve is the per-request cost of --metrics-out: one finished
// record counted into the GenAI histograms.
func BenchmarkObserve(b *testing.B) {
	g := benchGenAI()
	r := &record.Record{Phase: "burst", SentNs: 1e6, FirstTokenNs: 5e7, DoneNs: 2e9, Outcome: record.OK, UsageFromServer: true, PromptTokens: 500, OutputTokens: 64}
	b.ReportAllocs()
	for b.Loop() {
		g.Observe(r)
	}
}

// BenchmarkTick is the per-second cost of --metrics-out with both
// endpoints: the live batch and the histograms built, and encoded as
// remote-write and as OTLP (the HTTP posts are not included).
func BenchmarkTick(b *testing.B) {
	g := benchGenAI()
	st := live.Status{Run: "burst-5x", Phase: "burst", Elapsed: time.Minute, Offered: 100, Sent: 100, OK: 90, Goodput: 80, InFlight: 300, Waiting: 20, TTFTP95: time.Second, P99: 5 * time.Second}
	labels := []Label{{"run_id", "x"}, {"command", "burst"}, {"run", "burst-5x"}, {"multiplier", "5"}, {"profile", "chat"}, {"worker", "local"}}
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		bt := Live(st, now, labels)
		g.AddTo(bt, now)
		if _, err := remoteWrite(bt); err != nil {
			b.Fatal(err)
		}
		if _, err := otlpMetrics(bt, "v"); err != nil {
			b.Fatal(err)
		}
	}
}
