package schedule

import (
	"bytes"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadTraceFileGood(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		column string
		want   []TraceEntry
	}{
		{
			name:   "csv with comments, extra column, empty cells, unsorted",
			file:   "testdata/good.csv",
			column: ColOffsetS,
			want: []TraceEntry{
				{Offset: 0, PromptTokens: 512, OutputTokens: 128},
				{Offset: 125 * time.Millisecond, PromptTokens: 300},
				{Offset: 250 * time.Millisecond, OutputTokens: 64},
				{Offset: time.Second + 1},
				{Offset: 2500 * time.Millisecond, PromptTokens: 7, OutputTokens: 8},
			},
		},
		{
			name:   "jsonl with unix timestamps, rebased and sorted",
			file:   "testdata/good.jsonl",
			column: ColTimestamp,
			want: []TraceEntry{
				{Offset: 0},
				{Offset: 250 * time.Millisecond, PromptTokens: 100, OutputTokens: 20},
				{Offset: 750 * time.Millisecond, OutputTokens: 5},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReadTraceFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Name != tc.file || tr.Column != tc.column {
				t.Errorf("name, column = %q, %q; want %q, %q", tr.Name, tr.Column, tc.file, tc.column)
			}
			if !reflect.DeepEqual(tr.Entries, tc.want) {
				t.Errorf("entries:\n got %+v\nwant %+v", tr.Entries, tc.want)
			}
		})
	}
}

func TestReadTraceFileErrors(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"bad_empty.csv", `schedule: testdata/bad_empty.csv: empty file, want a header row`},
		{"bad_no_time_column.csv", `schedule: testdata/bad_no_time_column.csv:1: header: want a timestamp, offset_s or offset_ms column`},
		{"bad_two_time_columns.csv", `schedule: testdata/bad_two_time_columns.csv:1: header: more than one time column (offset_s and offset_ms)`},
		{"bad_duplicate_column.csv", `schedule: testdata/bad_duplicate_column.csv:1: header: duplicate column "prompt_tokens"`},
		{"bad_offset.csv", `schedule: testdata/bad_offset.csv:4: offset_s: not a number (a 1-byte text, not shown)`},
		{"bad_negative_offset.csv", `schedule: testdata/bad_negative_offset.csv:3: offset_ms: must be >= 0, got -5`},
		{"bad_nan.csv", `schedule: testdata/bad_nan.csv:3: offset_s: not a finite number`},
		{"bad_prompt_tokens.csv", `schedule: testdata/bad_prompt_tokens.csv:2: prompt_tokens: not an integer, got 12.5`},
		{"bad_output_tokens.csv", `schedule: testdata/bad_output_tokens.csv:2: output_tokens: must be in [0, 10000000], got -1`},
		{"bad_field_count.csv", `schedule: testdata/bad_field_count.csv:3: wrong number of fields`},
		{"bad_header_only.csv", `schedule: testdata/bad_header_only.csv: no entries`},
		{"bad_quote.csv", `schedule: testdata/bad_quote.csv:3: bare " in non-quoted-field`},
		{"bad_missing_offset.csv", `schedule: testdata/bad_missing_offset.csv:2: offset_s: missing value`},
		{"bad_timestamp_ms.csv", `schedule: testdata/bad_timestamp_ms.csv:2: timestamp: out of range, got 1700000000000`},
		{"bad_syntax.jsonl", `schedule: testdata/bad_syntax.jsonl:2: invalid JSON object: syntax error at byte 16`},
		{"bad_string_offset.jsonl", `schedule: testdata/bad_string_offset.jsonl:1: offset_s: not a number (a 1-byte JSON string, not shown)`},
		{"bad_missing_time.jsonl", `schedule: testdata/bad_missing_time.jsonl:3: offset_ms: missing`},
		{"bad_mixed_time.jsonl", `schedule: testdata/bad_mixed_time.jsonl:2: timestamp: the trace uses offset_s`},
		{"bad_two_time_keys.jsonl", `schedule: testdata/bad_two_time_keys.jsonl:1: offset_ms: more than one time key (offset_s and offset_ms)`},
		{"bad_array.jsonl", `schedule: testdata/bad_array.jsonl:1: invalid JSON object: not an object`},
		{"bad_no_time_key.jsonl", `schedule: testdata/bad_no_time_key.jsonl:1: want a timestamp, offset_s or offset_ms key`},
		{"bad_bool_tokens.jsonl", `schedule: testdata/bad_bool_tokens.jsonl:1: prompt_tokens: not a number (a JSON boolean)`},
		{"bad_float_tokens.jsonl", `schedule: testdata/bad_float_tokens.jsonl:1: output_tokens: not an integer, got 1.5`},
		{"bad_null.jsonl", `schedule: testdata/bad_null.jsonl:2: invalid JSON object: null`},
		{"bad_empty.jsonl", `schedule: testdata/bad_empty.jsonl: no entries`},
		{"bad_huge_tokens.jsonl", `schedule: testdata/bad_huge_tokens.jsonl:1: prompt_tokens: must be in [0, 10000000], got 10000001`},
		{"does_not_exist.csv", `schedule: trace: open testdata/does_not_exist.csv: no such file or directory`},
		{"bad_azure_timestamp.csv", `schedule: testdata/bad_azure_timestamp.csv:3: TIMESTAMP: not a date and time (a 27-byte text, not shown); want YYYY-MM-DD hh:mm:ss[.fraction], UTC`},
		{"bad_azure_date.csv", `schedule: testdata/bad_azure_date.csv:2: TIMESTAMP: not a date and time (a 19-byte text, not shown); want YYYY-MM-DD hh:mm:ss[.fraction], UTC`},
		{"bad_azure_negative.csv", `schedule: testdata/bad_azure_negative.csv:3: ContextTokens: must be in [0, 10000000], got -5`},
		{"bad_azure_missing_column.csv", `schedule: testdata/bad_azure_missing_column.csv:1: header: an Azure trace (ContextTokens, GeneratedTokens) needs a GeneratedTokens column`},
		{"bad_azure_missing_value.csv", `schedule: testdata/bad_azure_missing_value.csv:2: GeneratedTokens: missing value`},
		{"bad_mooncake_hash_element.jsonl", `schedule: testdata/bad_mooncake_hash_element.jsonl:2: hash_ids[1]: not an integer (a 5-byte text, not shown)`},
		{"bad_mooncake_hash_string.jsonl", `schedule: testdata/bad_mooncake_hash_string.jsonl:1: hash_ids: want an array of integer block ids, got a JSON string`},
		{"bad_mooncake_hash_float.jsonl", `schedule: testdata/bad_mooncake_hash_float.jsonl:1: hash_ids[0]: not an integer, got 1.5`},
		{"bad_mooncake_missing_input.jsonl", `schedule: testdata/bad_mooncake_missing_input.jsonl:2: input_length: missing`},
		{"bad_mooncake_negative_output.jsonl", `schedule: testdata/bad_mooncake_negative_output.jsonl:1: output_length: must be in [0, 10000000], got -3`},
		{"bad_mooncake_missing_timestamp.jsonl", `schedule: testdata/bad_mooncake_missing_timestamp.jsonl:1: timestamp: missing`},
		{"bad_mooncake_zero_input.jsonl", `schedule: testdata/bad_mooncake_zero_input.jsonl:1: input_length: must be in [1, 10000000], got 0`},
	}
	// Every bad_* file in testdata has a case, so none is left untested.
	files, _ := filepath.Glob("testdata/bad_*")
	covered := map[string]bool{}
	for _, tc := range tests {
		covered["testdata/"+tc.file] = true
	}
	for _, f := range files {
		if !covered[f] {
			t.Errorf("%s has no test case", f)
		}
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			tr, err := ReadTraceFile("testdata/" + tc.file)
			if err == nil {
				t.Fatalf("got %d entries, want error %q", len(tr.Entries), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		unit int64
		want int64
	}{
		{"0", 1e9, 0},
		{"1", 1e9, 1e9},
		{"+2", 1e9, 2e9},
		{"-3.25", 1e9, -3250000000},
		{".5", 1e9, 5e8},
		{"5.", 1e9, 5e9},
		{"0.1", 1e9, 1e8},
		{"1700000000.123456789", 1e9, 1700000000123456789},
		{"0.0000000004", 1e9, 0},
		{"0.0000000005", 1e9, 1},
		{"0.00000000049999", 1e9, 0},
		{"-0.0000000015", 1e9, -2},
		{"1.5", 1e6, 1500000},
		{"0.0000015", 1e6, 2},
		{"1e3", 1e6, 1e9},
		{"2.5E-1", 1e9, 25e7},
		{"9223372036.854775807", 1e9, 9223372036854775807},
	}
	for _, tc := range tests {
		got, err := parseDecimal(tc.in, tc.unit)
		if err != nil || got != tc.want {
			t.Errorf("parseDecimal(%q, %d) = %d, %v; want %d", tc.in, tc.unit, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", ".", "-", "x", "1..2", "1.2.3", "0x10", "Inf", "1e400", "9223372036.854775808", "1.2x"} {
		if got, err := parseDecimal(bad, 1e9); err == nil {
			t.Errorf("parseDecimal(%q) = %d, want an error", bad, got)
		}
	}
}

func TestTraceWriteCSVRoundTrip(t *testing.T) {
	in := &Trace{Name: "x", Format: FormatSurge, Column: ColOffsetS, Rows: 4, Entries: []TraceEntry{
		{Offset: 0, PromptTokens: 1},
		{Offset: 1, OutputTokens: 2},
		{Offset: 3*time.Second + 7, PromptTokens: 3, OutputTokens: 4},
		{Offset: 1000 * time.Hour},
	}}
	var buf bytes.Buffer
	if err := in.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := ReadCSV(&buf, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

// A replay lasts the last arrival plus one mean gap, so the trace is
// offered at its own rate; a window cut from a longer trace lasts the
// window; arrivals at one instant last OneInstant past it.
func TestTraceSpan(t *testing.T) {
	at := func(offs ...time.Duration) *Trace {
		tr := &Trace{}
		for _, o := range offs {
			tr.Entries = append(tr.Entries, TraceEntry{Offset: o})
		}
		return tr
	}
	ms := time.Millisecond
	cut := at(0, 100*ms)
	cut.Window, cut.cut = 5*time.Second, true
	rest := at(0, 100*ms)
	rest.Window = 5 * time.Second // reaches past the trace's end
	cases := []struct {
		name  string
		tr    *Trace
		speed float64
		want  time.Duration
	}{
		{"two entries 3 s apart", at(0, 3*time.Second), 0, 6 * time.Second},
		{"at speed 2", at(0, 3*time.Second), 2, 3 * time.Second},
		{"README sample at speed 2", at(0, 130*ms), 2, 130 * ms}, // 15.38 req/s: the trace's own 7.69 × 2
		{"five entries over 1 s", at(0, 100*ms, 200*ms, 500*ms, time.Second), 1, 1250 * ms},
		{"starting late", at(time.Second, 2*time.Second, 3*time.Second), 1, 4 * time.Second},
		{"one entry", at(0), 1, time.Second},
		{"one entry at speed 4", at(0), 4, 250 * ms},
		{"one burst at 2 s", at(2*time.Second, 2*time.Second), 1, 3 * time.Second},
		{"cut by a window", cut, 2, 2500 * ms},
		{"window past the end", rest, 1, 200 * ms},
		{"huge speed still holds the last", at(0, 3), 1e9, 1},
	}
	for _, tc := range cases {
		if got := tc.tr.Span(tc.speed); got != tc.want {
			t.Errorf("%s: Span(%g) = %v, want %v", tc.name, tc.speed, got, tc.want)
		}
	}
	if got := (*Trace)(nil).Span(1); got != 0 {
		t.Errorf("nil Span = %v, want 0", got)
	}
}

// checkTrace asserts the invariants of a trace returned without error and
// that it survives a WriteCSV/ReadCSV round trip unchanged.
func checkTrace(t *testing.T, tr *Trace) {
	t.Helper()
	if len(tr.Entries) == 0 {
		t.Fatal("no entries without an error")
	}
	switch tr.Column {
	case ColTimestamp, ColOffsetS, ColOffsetMs, AzureTimestamp:
	default:
		t.Fatalf("column %q", tr.Column)
	}
	if tr.Rows != len(tr.Entries) {
		t.Fatalf("rows %d, entries %d", tr.Rows, len(tr.Entries))
	}
	for i, e := range tr.Entries {
		if e.Offset < 0 || i > 0 && e.Offset < tr.Entries[i-1].Offset {
			t.Fatalf("entry %d offset %d: negative or unsorted", i, e.Offset)
		}
		if e.PromptTokens < 0 || e.PromptTokens > MaxTraceTokens || e.OutputTokens < 0 || e.OutputTokens > MaxTraceTokens {
			t.Fatalf("entry %d tokens out of range: %+v", i, e)
		}
	}
	if (tr.Column == ColTimestamp || tr.Column == AzureTimestamp) && tr.Entries[0].Offset != 0 {
		t.Fatalf("timestamps not rebased: first offset %d", tr.Entries[0].Offset)
	}
	// Blocks are not in surge's CSV: compare without them, and lay them
	// out to check the invariants of Common and Reused.
	plain := slices.Clone(tr.Entries)
	for i := range plain {
		plain[i].Blocks = nil
	}
	for _, e := range tr.Slice(0, 0, MinBlockTokens).Entries {
		if b := e.Blocks; b != nil {
			nb := min(len(b.HashIDs), (e.PromptTokens+b.Tokens-1)/b.Tokens)
			if b.Common < 0 || b.Common > nb || b.Reused < 0 || b.Reused > e.PromptTokens {
				t.Fatalf("blocks out of range: %d ids, common %d, reused %d of %d tokens", len(b.HashIDs), b.Common, b.Reused, e.PromptTokens)
			}
		}
	}
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(&buf, "back.csv")
	if err != nil {
		t.Fatalf("re-reading written trace: %v", err)
	}
	if !reflect.DeepEqual(back.Entries, plain) {
		t.Fatalf("round trip changed the entries")
	}
}

// checkTraceError asserts an error names the file and echoes little content.
func checkTraceError(t *testing.T, err error, name string) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "schedule: "+name) {
		t.Fatalf("error does not name the file: %q", msg)
	}
	if len(msg) > 200 {
		t.Fatalf("error too long (%d bytes), echoes content: %q", len(msg), msg)
	}
}

func addSeeds(f *testing.F, pattern string, extra ...string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files for %s", pattern)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

func FuzzReadCSV(f *testing.F) {
	addSeeds(f, "testdata/*.csv",
		"offset_ms,prompt_tokens\n1.5,3\n0.0000015,\n",
		"\ufefftimestamp\n-5\n5\n",
		"timestamp\n-9223372036\n9223372036\n",
		"offset_s\n\"1\"\n",
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadCSV(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			checkTraceError(t, err, "fuzz.csv")
			return
		}
		checkTrace(t, tr)
	})
}

func FuzzReadJSONL(f *testing.F) {
	addSeeds(f, "testdata/*.jsonl",
		`{"offset_ms": 1e2, "output_tokens": 0}`,
		`{"timestamp": -1}`+"\n"+`{"timestamp": 1e-9}`,
		`{"offset_s": 0, "prompt_tokens": null, "output_tokens": -0}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadJSONL(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			checkTraceError(t, err, "fuzz.jsonl")
			return
		}
		checkTrace(t, tr)
	})
}

// FuzzParseDecimal checks the exact decimal path against math/big: for
// every plain decimal it accepts, the result is the value × unit rounded
// half away from zero, exactly.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "1.5", "-3.25", ".5", "1700000000.123456789", "0.0000000005", "9223372036.854775807", "12345678901234567890", "-0.0000000015"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, seconds bool) {
		unit := int64(time.Millisecond)
		if seconds {
			unit = int64(time.Second)
		}
		if s == "" {
			return
		}
		got, ok := parsePlainDecimal(s, unit)
		if !ok {
			return
		}
		r, okRat := new(big.Rat).SetString(s)
		if !okRat || strings.ContainsAny(s, "eE/xXpP_") {
			t.Fatalf("parsePlainDecimal accepted %q", s)
		}
		r.Mul(r, new(big.Rat).SetInt64(unit))
		// Round half away from zero: trunc(r + sign(r)·½).
		half := big.NewRat(1, 2)
		if r.Sign() < 0 {
			half.Neg(half)
		}
		r.Add(r, half)
		want := new(big.Int).Quo(r.Num(), r.Denom())
		if !want.IsInt64() || want.Int64() != got {
			t.Fatalf("parsePlainDecimal(%q, %d) = %d, want %s", s, unit, got, want)
		}
	})
}

// A replay runs the whole trace by default (its Span); an explicit
// duration shorter than the trace cuts it with a warning; a longer one is
// not padded (an idle tail lowered the offered rate); a replay over 24 h is
// announced. A trace at one instant has no rate: a note says how long it
// plays, and an explicit duration stands.
func TestFitTrace(t *testing.T) {
	tr := func(last time.Duration) *Trace {
		if last == 0 {
			return &Trace{Name: "prod.csv", Entries: []TraceEntry{{Offset: 0}}}
		}
		return &Trace{Name: "prod.csv", Entries: []TraceEntry{{Offset: 0}, {Offset: last / 2}, {Offset: last}}}
	}
	cases := []struct {
		name     string
		last     time.Duration
		speed    float64
		duration time.Duration
		explicit bool
		want     time.Duration
		note     string
	}{
		{"default: the whole trace and one gap", 100 * time.Second, 0, 30 * time.Second, false, 150 * time.Second, ""},
		{"default at speed 2", 100 * time.Second, 2, 30 * time.Second, false, 75 * time.Second, ""},
		{"explicit shorter: cut", 100 * time.Second, 1, 30 * time.Second, true, 30 * time.Second, "WARNING: --duration 30s cuts the trace prod.csv, which spans 2m30s at speed 1: replaying its first 1 of 3 arrivals"},
		{"explicit after the last arrival: kept", 100 * time.Second, 1, 120 * time.Second, true, 120 * time.Second, ""},
		{"explicit longer: not padded", 10 * time.Second, 1, time.Minute, true, 15 * time.Second, "replaying the trace once, 15s"},
		{"longer than 24 h", 20 * time.Hour, 1, 0, false, 30 * time.Hour, "WARNING: replaying prod.csv at speed 1 takes 30h0m0s (more than 24h0m0s)"},
		{"30 h at speed 2 is 15 h", 20 * time.Hour, 2, 0, false, 15 * time.Hour, ""},
		{"one entry", 0, 2, 0, false, 500 * time.Millisecond, "note: the trace prod.csv has one arrival, so it has no rate of its own: replaying it in 500ms (500ms past it at speed 2)"},
		{"one entry, explicit", 0, 2, time.Minute, true, time.Minute, ""},
		{"rounded for people", 13319410001 * time.Nanosecond, 1, time.Second, true, time.Second, "which spans 19.979s at speed 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ph := Phase{Name: "main", Arrival: ArrivalReplay, Duration: tc.duration, Speed: tc.speed, Trace: tr(tc.last)}
			notes := FitTrace(&ph, tc.explicit)
			if ph.Duration != tc.want {
				t.Errorf("duration %s, want %s", ph.Duration, tc.want)
			}
			joined := strings.Join(notes, "\n")
			if tc.note == "" && len(notes) > 0 || !strings.Contains(joined, tc.note) {
				t.Errorf("notes %q, want %q", joined, tc.note)
			}
		})
	}
}

func TestShowDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{
		13319410001 * time.Nanosecond: "13.319s",
		700000001 * time.Nanosecond:   "700ms",
		1500 * time.Microsecond:       "1.5ms",
		999:                           "999ns",
		-2500000001:                   "-2.5s",
	} {
		if got := ShowDuration(in).String(); got != want {
			t.Errorf("ShowDuration(%d) = %s, want %s", int64(in), got, want)
		}
	}
}
