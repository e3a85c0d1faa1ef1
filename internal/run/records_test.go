package run

import (
	"cmp"
	"slices"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// recordsOf reads a run's records back from its requests.jsonl, in
// schedule (Seq) order.
func recordsOf(t testing.TB, res *Result) []record.Record {
	t.Helper()
	var out []record.Record
	if err := res.Records.Each(func(r *record.Record) error { out = append(out, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(out, func(a, b record.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}
