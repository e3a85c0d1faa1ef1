package schedule

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// The Azure trace is recognised by its header, its datetimes (7 fraction
// digits, fewer, none, a T and a Z) are UTC and rebased to the earliest
// row, and its token columns are prompt and output tokens.
func TestReadAzureTrace(t *testing.T) {
	tr, err := ReadTraceFile("testdata/azure_good.csv")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != FormatAzure || tr.Column != AzureTimestamp || tr.Rows != 5 {
		t.Errorf("format, column, rows = %q, %q, %d", tr.Format, tr.Column, tr.Rows)
	}
	want := []TraceEntry{
		{Offset: 0, PromptTokens: 12, OutputTokens: 3},
		{Offset: 100 * time.Millisecond, PromptTokens: 879, OutputTokens: 1},
		{Offset: 680590 * time.Microsecond, PromptTokens: 374, OutputTokens: 44},
		{Offset: 4995169 * time.Microsecond, PromptTokens: 396, OutputTokens: 109},
		{Offset: 14 * time.Second, PromptTokens: 1024, OutputTokens: 7},
	}
	if !reflect.DeepEqual(tr.Entries, want) {
		t.Errorf("entries:\n got %+v\nwant %+v", tr.Entries, want)
	}
}

func TestParseDatetime(t *testing.T) {
	base := time.Date(2023, 11, 16, 18, 15, 46, 0, time.UTC).UnixNano()
	for in, want := range map[string]int64{
		"2023-11-16 18:15:46":             base,
		"2023-11-16T18:15:46Z":            base,
		"2023-11-16 18:15:46.6805900":     base + 680590000,
		"2023-11-16 18:15:46.5":           base + 500000000,
		"2023-11-16 18:15:46.123456789":   base + 123456789,
		"2023-11-16 18:15:46.1234567895":  base + 123456790,
		"2023-11-16 18:15:46.12345678949": base + 123456789,
		"2024-02-29 00:00:00":             time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).UnixNano(),
		"2023-11-16 18:15:46+00:00":       base,
		"2023-11-16 19:15:46.5+01:00":     base + 500000000,
		"2023-11-16 13:45:46-04:30":       base,
	} {
		got, err := parseDatetime(in)
		if err != nil || got != want {
			t.Errorf("parseDatetime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "2023-11-16", "2023-11-16 18:15", "2023/11/16 18:15:46", "2023-11-16 18:15:46.", "2023-11-16 18:15:46,5",
		"2023-13-16 18:15:46", "2023-11-31 18:15:46", "2023-11-16 24:00:00", "2023-11-16 18:60:00", "2023-11-16 18:15:60", "2023-11-16 18:15:46+25:00", "2023-11-16 18:15:46+0100", "2023-11-16 18:15:46 +01:00",
		"1600-01-01 00:00:00", "+023-11-16 18:15:46", "2023-11-16 18:15:46.5x"} {
		if got, err := parseDatetime(bad); err == nil {
			t.Errorf("parseDatetime(%q) = %d, want an error", bad, got)
		}
	}
}

// The Mooncake trace is recognised by its keys: timestamps in ms rebased,
// input/output lengths, hash ids kept per entry (absent: no blocks).
func TestReadMooncakeTrace(t *testing.T) {
	tr, err := ReadTraceFile("testdata/mooncake_good.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != FormatMooncake || tr.Column != MooncakeTimestamp || tr.Rows != 6 {
		t.Errorf("format, column, rows = %q, %q, %d", tr.Format, tr.Column, tr.Rows)
	}
	ids := func(v ...int64) *Blocks { return &Blocks{HashIDs: v} }
	want := []TraceEntry{
		{Offset: 0, PromptTokens: 1200, OutputTokens: 52, Blocks: ids(1, 2, 3)},
		{Offset: 1500 * time.Millisecond, PromptTokens: 1500, OutputTokens: 20, Blocks: ids(1, 2, 3)},
		{Offset: 3 * time.Second, PromptTokens: 1100, OutputTokens: 10, Blocks: ids(1, 2, 4)},
		{Offset: 4500 * time.Millisecond, PromptTokens: 600, OutputTokens: 8, Blocks: ids(5, 6)},
		{Offset: 6 * time.Second, PromptTokens: 2000, OutputTokens: 30},
		{Offset: 7 * time.Second, PromptTokens: 1200, OutputTokens: 52, Blocks: ids(1, 2, 3)},
	}
	if !reflect.DeepEqual(tr.Entries, want) {
		t.Errorf("entries:\n got %+v\nwant %+v", tr.Entries, want)
	}
	// The entries' ids are sub-slices of one array: appending to one must
	// not write into the next.
	if c := cap(tr.Entries[0].Blocks.HashIDs); c != 3 {
		t.Errorf("cap of the first entry's ids = %d, want 3", c)
	}
}

// Common and Reused, computed by hand for testdata/mooncake_good.jsonl in
// blocks of 512 tokens (the trie of leading ids: [1] and [1 2] are in 4
// entries, [1 2 3] in 3, [1 2 4], [5] and [5 6] in one each).
func TestSliceBlocks(t *testing.T) {
	tr, err := ReadTraceFile("testdata/mooncake_good.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Slice(0, 0, 0)
	type cr struct{ tokens, common, reused int }
	want := []cr{
		{512, 3, 0},    // first: nothing seen
		{512, 3, 1200}, // 512 + 512 + the 176 tokens entry 0 had of block 3 (of its 476)
		{512, 2, 1024}, // [1 2] seen; 4 is its own
		{512, 0, 0},    // [5 6]: nobody else
		{0, 0, 0},      // no hash ids
		{512, 3, 1200}, // the same as entry 0: all of it seen
	}
	for i, e := range s.Entries {
		var got cr
		if e.Blocks != nil {
			got = cr{e.Blocks.Tokens, e.Blocks.Common, e.Blocks.Reused}
		}
		if got != want[i] {
			t.Errorf("entry %d: tokens, common, reused = %+v, want %+v", i, got, want[i])
		}
	}
	if p, r := s.PrefixTokens(len(s.Entries)); p != 7600 || r != 3424 {
		t.Errorf("PrefixTokens = %d, %d; want 7600, 3424", p, r)
	}
	if p, r := s.PrefixTokens(2); p != 2700 || r != 1200 {
		t.Errorf("PrefixTokens(2) = %d, %d; want 2700, 1200", p, r)
	}
	if tr.Entries[1].Blocks.Reused != 0 || tr.Entries[1].Blocks.Tokens != 0 {
		t.Error("Slice modified the trace it was taken from")
	}
	if n := s.BlockMismatch(); n != 0 {
		t.Errorf("BlockMismatch at 512 = %d, want 0", n)
	}
	if n := tr.Slice(0, 0, 256).BlockMismatch(); n != 5 {
		t.Errorf("BlockMismatch at 256 = %d, want 5 (every entry with ids)", n)
	}

	// A slice is compared within itself: from 1.5 s for 3 s holds the
	// entries at 1.5 s and 3 s (4.5 s is the window's end, excluded),
	// rebased to 0 and 1.5 s; the first has nothing seen before it.
	w := tr.Slice(1500*time.Millisecond, 3*time.Second, 512)
	if len(w.Entries) != 2 || w.Entries[0].Offset != 0 || w.Entries[1].Offset != 1500*time.Millisecond {
		t.Fatalf("slice entries %+v", w.Entries)
	}
	if w.Offset != 1500*time.Millisecond || w.Window != 3*time.Second || w.Rows != 6 {
		t.Errorf("slice offset, window, rows = %s, %s, %d", w.Offset, w.Window, w.Rows)
	}
	if b0, b1 := w.Entries[0].Blocks, w.Entries[1].Blocks; b0.Reused != 0 || b0.Common != 2 || b1.Reused != 1024 || b1.Common != 2 {
		t.Errorf("slice blocks %+v, %+v", *b0, *b1)
	}
}

// --trace-offset and --trace-window select the slice LoadTraces keeps; a
// replay then starts at the offset, rebased to 0, and FitTrace says how
// many arrivals of the trace are kept. Bad values name the setting.
func TestLoadTracesSlice(t *testing.T) {
	load := func(off, win time.Duration, block int) (*Phase, error) {
		p := Plan{Phases: []Phase{{Name: "main", Arrival: ArrivalReplay, TraceFile: "testdata/mooncake_good.jsonl", Speed: 2,
			TraceOffset: off, TraceWindow: win, TraceBlockTokens: block}}}
		err := p.LoadTraces("")
		return &p.Phases[0], err
	}
	ph, err := load(3*time.Second, 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ph.Trace.Entries); got != 2 {
		t.Fatalf("kept %d entries, want 2 (3 s and 4.5 s)", got)
	}
	notes := FitTrace(ph, false)
	if ph.Duration != time.Second {
		t.Errorf("duration %s, want 1s (the 2 s window at speed 2, not its last arrival)", ph.Duration)
	}
	joined := strings.Join(notes, "\n")
	if !strings.Contains(joined, "replaying 2 of the 6 arrivals of the mooncake trace testdata/mooncake_good.jsonl (from 3s, for 2s)") {
		t.Errorf("notes %q", joined)
	}
	arr, err := Build(Plan{Phases: []Phase{*ph}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(arr) != 2 || arr[0].At != 0 || arr[1].At != 750*time.Millisecond || arr[1].Blocks == nil || arr[1].Blocks.HashIDs[0] != 5 {
		t.Errorf("arrivals %+v", arr)
	}

	// Offset only: to the end, which lasts the last arrival plus one mean
	// gap (6 s and 7 s: 2 s of trace, 1 s at speed 2). So does a window
	// that reaches past the trace's end: no idle tail.
	for _, win := range []time.Duration{0, 10 * time.Second} {
		ph, err = load(6*time.Second, win, 0)
		if err != nil || len(ph.Trace.Entries) != 2 {
			t.Fatalf("offset 6s, window %s: %v, %d entries", win, err, len(ph.Trace.Entries))
		}
		if FitTrace(ph, false); ph.Duration != time.Second {
			t.Errorf("offset 6s, window %s: duration %s, want 1s", win, ph.Duration)
		}
	}

	bad := []struct {
		off, win time.Duration
		block    int
		field    string
		msg      string
	}{
		{-time.Second, 0, 0, "phases[0].trace_offset", "must be >= 0, got -1s"},
		{0, -time.Second, 0, "phases[0].trace_window", "must be >= 0, got -1s"},
		{0, 0, 8, "phases[0].trace_block_tokens", "must be >= 16 (0 = 512), got 8"},
		{8 * time.Second, 0, 0, "phases[0].trace_offset", "8s is beyond the end of the trace testdata/mooncake_good.jsonl (its last arrival is at 7s)"},
		{time.Second, 200 * time.Millisecond, 0, "phases[0].trace_window", "no arrival of the trace testdata/mooncake_good.jsonl lies between 1s and 1.2s"},
	}
	for _, tc := range bad {
		_, err := load(tc.off, tc.win, tc.block)
		fe, ok := field.As(err)
		if !ok || len(fe) != 1 || fe[0].Field != tc.field || fe[0].Message != tc.msg {
			t.Errorf("offset %s window %s block %d: error %v, want %s: %s", tc.off, tc.win, tc.block, err, tc.field, tc.msg)
		}
	}
}

// A wrong block size is noted before the run.
func TestFitTraceBlockMismatch(t *testing.T) {
	p := Plan{Phases: []Phase{{Name: "main", Arrival: ArrivalReplay, TraceFile: "testdata/mooncake_good.jsonl", TraceBlockTokens: 256}}}
	if err := p.LoadTraces(""); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(FitTrace(&p.Phases[0], false), "\n")
	if !strings.Contains(joined, "5 of 6 entries of testdata/mooncake_good.jsonl have hash_ids that do not match their input_length in blocks of 256 tokens") {
		t.Errorf("notes %q", joined)
	}
}

// The slice settings belong to replay phases only.
func TestSliceSettingsOnlyForReplay(t *testing.T) {
	ph := Phase{Name: "p", Duration: time.Second, Rate: 1, TraceWindow: time.Second}
	err := ph.Validate()
	if err == nil || !strings.Contains(err.Error(), "trace_window: only for replay arrivals, not poisson") {
		t.Errorf("error %v", err)
	}
}
