package field

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorsAndMerge(t *testing.T) {
	var es Errors
	if es.Err() != nil {
		t.Fatal("no problems must be a nil error")
	}
	es.Add("rate", "must be > 0, got %d", -1)
	var inner Errors
	inner.Add("max_num_seqs", "must be ≥ 1, got 0")
	inner = append(inner, &Error{Message: "fractions must sum to ≤ 1"})
	es.Merge("sim", inner.Err())
	es.Merge("", fmt.Errorf("wrapped: %w", &Error{Field: "phases[1].duration", Message: "must be > 0"}))
	es.Merge("", errors.New("plain"))
	es.Merge("x", nil)
	want := []Error{
		{"rate", "must be > 0, got -1"},
		{"sim.max_num_seqs", "must be ≥ 1, got 0"},
		{"", "fractions must sum to ≤ 1"},
		{"phases[1].duration", "must be > 0"},
		{"", "plain"},
	}
	if len(es) != len(want) {
		t.Fatalf("%d errors: %v", len(es), es)
	}
	for i, w := range want {
		if *es[i] != w {
			t.Errorf("error %d = %+v, want %+v", i, *es[i], w)
		}
	}
	if got := es.Err().Error(); got != "rate: must be > 0, got -1\nsim.max_num_seqs: must be ≥ 1, got 0\nfractions must sum to ≤ 1\nphases[1].duration: must be > 0\nplain" {
		t.Errorf("text %q", got)
	}
	if inner[0].Field != "max_num_seqs" {
		t.Error("Merge modified the merged errors")
	}
}

func TestAsAndWithText(t *testing.T) {
	fe := &Error{Field: "phases[0].rate", Message: "must be >= 0, got -1"}
	err := fmt.Errorf("outer: %w", WithText(`schedule: phase "main": rate: must be >= 0, got -1`, fe))
	if err.Error() != `outer: schedule: phase "main": rate: must be >= 0, got -1` {
		t.Errorf("text %q", err)
	}
	es, ok := As(err)
	if !ok || len(es) != 1 || es[0] != fe {
		t.Fatalf("As = %v, %v", es, ok)
	}
	if _, ok := As(errors.New("x")); ok {
		t.Error("a plain error has no field errors")
	}
	var list Errors
	list.Add("a", "b")
	if es, ok := As(fmt.Errorf("w: %w", list.Err())); !ok || es[0].Field != "a" {
		t.Errorf("As of a wrapped Errors = %v, %v", es, ok)
	}
}
