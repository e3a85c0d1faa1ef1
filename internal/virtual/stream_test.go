package virtual

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// OpenStream over the lazy schedule gives, record for record, what Open
// gives over the whole slice: the same records in schedule order, the
// same engine samples and queue waits — with a timeout cutting some.
func TestOpenStreamEqualsOpen(t *testing.T) {
	cfg := baseConfig()
	cfg.Timeout = 3 * time.Second
	arr := constant(t, "main", 40, 30*time.Second)
	batch, err := Open(context.Background(), cfg, chatGen(t, 3), arr, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []record.Record
	cfg.Sink = func(r *record.Record) { got = append(got, *r) }
	out, err := OpenStream(context.Background(), cfg, chatGen(t, 3), slices.Values(arr))
	if err != nil {
		t.Fatal(err)
	}
	if out.Records != nil || len(got) != len(arr) {
		t.Fatalf("Output.Records %d, sunk %d; want none and %d", len(out.Records), len(got), len(arr))
	}
	timedOut := 0
	for i := range got {
		if !reflect.DeepEqual(got[i], batch.Records[i]) {
			t.Fatalf("record %d:\n stream %+v\n batch  %+v", i, got[i], batch.Records[i])
		}
		if got[i].Outcome == record.Timeout {
			timedOut++
		}
	}
	if timedOut == 0 {
		t.Log("no request timed out: the comparison did not cover timeouts")
	}
	if !reflect.DeepEqual(out.Engine, batch.Engine) || !reflect.DeepEqual(out.QueueWaits, batch.QueueWaits) || !reflect.DeepEqual(out.Events, batch.Events) {
		t.Errorf("engine samples, queue waits or events differ")
	}
}
