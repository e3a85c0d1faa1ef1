package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// randRec draws a record with every kind of outcome, missing boundaries,
// arrivals outside the phases and negative durations.
func randRec(r *rand.Rand, i int) *record.Record {
	dur := func(lo, hi time.Duration) int64 { return int64(lo) + r.Int64N(int64(hi-lo)) }
	sched := dur(-5*s, 125*s)
	names := []string{"", "warmup", "baseline", "burst", "recovery"}
	rec := record.New(fmt.Sprintf("q%d", i), int64(i), names[r.IntN(len(names))], sched)
	if r.IntN(50) == 0 {
		rec.Outcome = "weird"
	} else if r.IntN(2) == 0 {
		rec.Outcome = record.OK
	} else {
		rec.Outcome = record.Outcomes[r.IntN(len(record.Outcomes))]
	}
	rec.Good = r.IntN(2) == 0
	if rec.Outcome == record.GeneratorDrop {
		return &rec
	}
	rec.SentNs = sched + dur(-time.Millisecond, 500*ms)
	if r.IntN(5) > 0 {
		rec.ConnNs = rec.SentNs + dur(0, 50*ms)
		if r.IntN(5) > 0 {
			rec.HeadersNs = rec.ConnNs + dur(0, 3*s)
		}
	}
	last := rec.SentNs
	if rec.Outcome == record.OK || r.IntN(3) == 0 {
		rec.FirstTokenNs = rec.SentNs + dur(10*ms, 20*s)
		last = rec.FirstTokenNs
	}
	switch r.IntN(20) {
	case 0: // never ended
	default:
		rec.DoneNs = last + dur(0, 30*s)
	}
	switch rec.Outcome {
	case record.OK:
		rec.Status = 200
		if r.IntN(20) == 0 {
			rec.Status = 203
		}
	case record.RateLimited:
		rec.Status = 429
	case record.HTTPError:
		rec.Status = 500 + r.IntN(4)
	}
	rec.PromptTokens, rec.OutputTokens = r.IntN(2000), r.IntN(500)
	rec.Chunks = rec.OutputTokens
	if rec.OutputTokens > 1 {
		rec.TPOTNs = dur(time.Millisecond, 200*ms)
		rec.ITLMaxNs = rec.TPOTNs * 3
	}
	return &rec
}

func resultJSON(t *testing.T, a *Analyzer) []byte {
	t.Helper()
	b, err := json.Marshal(a.Result())
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// Property: splitting a record stream over shards and merging the shards'
// analyzers gives exactly the result of one analyzer that saw everything.
func TestMergeEqualsSingle(t *testing.T) {
	configs := map[string]Config{
		"burst with 5 s recovery windows": {Phases: burstPhases(), Timeout: 30 * s, Recovery: RecoveryRule{Window: 5 * s}},
		"single phase, 250 ms samples":    {Phases: []Phase{{Name: "steady", Start: 5 * s, End: 100 * s}}, SampleEvery: 250 * ms},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(12) {
				r := rand.New(rand.NewPCG(seed, 0x5eed))
				n := 200 + r.IntN(2000)
				shards := 1 + r.IntN(4)
				whole := mustNew(t, cfg)
				parts := make([]*Analyzer, shards)
				for i := range parts {
					parts[i] = mustNew(t, cfg)
				}
				for i := range n {
					rec := randRec(r, i)
					whole.Add(rec)
					parts[r.IntN(shards)].Add(rec)
				}
				merged := mustNew(t, cfg) // empty: exercises lazily created histograms
				for _, p := range parts {
					if err := merged.Merge(p); err != nil {
						t.Fatal(err)
					}
				}
				want, got := resultJSON(t, whole), resultJSON(t, merged)
				if !bytes.Equal(want, got) {
					t.Fatalf("seed %d, %d records over %d shards: merged result differs from the single one\n%s",
						seed, n, shards, firstDiff(want, got))
				}
				// The sources are unchanged by merging.
				if shards == 1 && !bytes.Equal(resultJSON(t, parts[0]), want) {
					t.Fatalf("seed %d: merging modified its source", seed)
				}
			}
		})
	}
}

// firstDiff shows where two JSON documents first differ.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("at byte %d:\nwant …%s…\ngot  …%s…", i, a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
}
