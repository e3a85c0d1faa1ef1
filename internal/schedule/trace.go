package schedule

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The column (CSV) or key (JSONL) names of a trace.
const (
	ColTimestamp    = "timestamp"     // seconds, any origin; rebased to the earliest entry
	ColOffsetS      = "offset_s"      // seconds since the trace origin
	ColOffsetMs     = "offset_ms"     // milliseconds since the trace origin
	ColPromptTokens = "prompt_tokens" // optional prompt length in tokens
	ColOutputTokens = "output_tokens" // optional output length in tokens
)

// MaxTraceTokens is the largest token count a trace entry may carry.
const MaxTraceTokens = 10_000_000

// maxJSONLLine bounds one JSONL line (production logs may hold prompts).
const maxJSONLLine = 16 << 20

// The trace formats surge recognises, by their header (CSV) or keys (JSONL).
const (
	FormatSurge    = "surge"    // surge's own: offset_s|offset_ms|timestamp, prompt_tokens, output_tokens
	FormatAzure    = "azure"    // Azure LLM inference trace CSV: TIMESTAMP,ContextTokens,GeneratedTokens
	FormatMooncake = "mooncake" // Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids
)

// TraceEntry is one request of a trace.
type TraceEntry struct {
	Offset       time.Duration // since the trace origin, ≥ 0
	PromptTokens int           // 0 = unspecified
	OutputTokens int           // 0 = unspecified
	// Blocks is the entry's prompt as blocks of shared content (a Mooncake
	// trace's hash_ids); nil when the trace does not say. Not recorded in
	// manifests (it can be large, and re-rendering a report needs only
	// the offsets).
	Blocks *Blocks `json:"-"`
}

// Trace is a recorded arrival pattern, sorted by offset.
type Trace struct {
	Name    string        // file name, for messages and manifests
	Format  string        // FormatSurge, FormatAzure or FormatMooncake ("" = surge)
	Column  string        // the time column it was read from: timestamp, offset_s, offset_ms (Azure: TIMESTAMP)
	Rows    int           // entries in the file (Entries may hold a slice of them, see Slice)
	Offset  time.Duration // the slice of the file held: entries from Offset on, rebased to 0 (see Slice)
	Window  time.Duration // … and for Window after it; 0 = to the end
	cut     bool          // Slice: the trace goes on past Window (Span is then Window)
	Entries []TraceEntry  // sorted by Offset (stable)
}

// OneInstant is the trace time a replay of arrivals that all share one
// offset (a trace of one entry, or of one burst) lasts past that offset:
// such a trace has no rate of its own (FitTrace says so in a note).
const OneInstant = time.Second

// Span is the duration of a phase that replays the trace at speed (0
// means 1), in three cases:
//
//   - a slice that a window cut (Slice, the trace going on past it): the
//     window ÷ speed, the slice's trace time, however early its last
//     arrival;
//   - otherwise, n ≥ 2 arrivals from offset first to last: the last
//     offset plus one mean gap, last + (last−first)/(n−1), ÷ speed, so
//     that a trace from 0 is offered at its own rate, (n−1)/last arrivals
//     per second of trace time (the arrivals, not the instants between
//     them, decide where it ends: ending at the last arrival would offer
//     a two-entry trace 130 ms apart at 2/0.13 s = 15.4 req/s instead of
//     7.7);
//   - arrivals all at one offset: that offset plus OneInstant, ÷ speed.
//
// It always ends after the last scaled arrival (a phase excludes its end).
func (t *Trace) Span(speed float64) time.Duration {
	if t == nil || len(t.Entries) == 0 {
		return 0
	}
	first, last := t.Entries[0].Offset, t.last()
	var span time.Duration
	switch n := len(t.Entries); {
	case t.cut:
		span = t.Window
	case last > first:
		span = last + (last-first)/time.Duration(n-1)
	default:
		span = last + OneInstant
	}
	return max(scaleOffset(span, speed), scaleOffset(last, speed)+1)
}

// oneInstant reports whether the trace's arrivals share one offset (and
// no window gives the replay a length): Span then adds OneInstant.
func (t *Trace) oneInstant() bool {
	return !t.cut && len(t.Entries) > 0 && t.Entries[0].Offset == t.last()
}

// LongReplay is the replay length above which FitTrace warns before the
// run starts.
const LongReplay = 24 * time.Hour

// FitTrace sets the duration of replay phase ph (its Trace loaded) from the
// trace and returns the notes to print before the run starts. By default
// (explicit false, or a duration of 0) the phase replays the whole trace:
// its duration is Span at the phase's speed. An explicit duration shorter
// than that cuts the trace, with a note saying how much is left out; one
// longer than that is shortened to the span, with a note, never padded
// with an idle tail that would lower the offered rate — except for a trace
// whose arrivals share one instant, which has no rate to lower: there an
// explicit duration stands, and without one a note says the phase lasts
// OneInstant past it. A replay longer than LongReplay gets a warning with
// its length.
func FitTrace(ph *Phase, explicit bool) []string {
	if ph.kind() != ArrivalReplay || ph.Trace == nil || len(ph.Trace.Entries) == 0 || !finite(ph.Speed) || ph.Speed < 0 {
		return nil // nothing to fit, or a bad speed that Validate reports
	}
	t := ph.Trace
	span := t.Span(ph.Speed)
	speed := ph.Speed
	if speed == 0 {
		speed = 1
	}
	var notes []string
	switch {
	case !explicit || ph.Duration <= 0:
		ph.Duration = span
		if t.oneInstant() {
			what := fmt.Sprintf("the %d arrivals of the trace %s share one instant", len(t.Entries), t.label())
			if len(t.Entries) == 1 {
				what = fmt.Sprintf("the trace %s has one arrival", t.label())
			}
			notes = append(notes, fmt.Sprintf("note: %s, so it has no rate of its own: replaying it in %s (%s past it at speed %g); set --duration for another length.",
				what, ShowDuration(span), ShowDuration(scaleOffset(OneInstant, ph.Speed)), speed))
		}
	case ph.Duration < span && replayCount(ph) < len(t.Entries):
		notes = append(notes, fmt.Sprintf("WARNING: --duration %s cuts the trace %s, which spans %s at speed %g: replaying its first %d of %d arrivals. Drop --duration to replay it all.",
			ShowDuration(ph.Duration), t.label(), ShowDuration(span), speed, replayCount(ph), len(t.Entries)))
	case ph.Duration > span && !t.oneInstant():
		notes = append(notes, fmt.Sprintf("note: --duration %s is longer than the trace %s (%s at speed %g): replaying the trace once, %s; an idle tail would lower the offered rate.",
			ShowDuration(ph.Duration), t.label(), ShowDuration(span), speed, ShowDuration(span)))
		ph.Duration = span
	}
	if t.Offset > 0 || t.Window > 0 {
		notes = append(notes, fmt.Sprintf("note: replaying %d of the %d arrivals of the %s trace %s (from %s, %s), in %s at speed %g.",
			replayCount(ph), t.Rows, t.Format, t.Name, ShowDuration(t.Offset), windowText(t.Window), ShowDuration(ph.Duration), speed))
	}
	if n := t.BlockMismatch(); n > 0 {
		bt := t.Entries[0].Blocks
		for i := 0; bt == nil; i++ {
			bt = t.Entries[i].Blocks
		}
		notes = append(notes, fmt.Sprintf("note: %d of %d entries of %s have hash_ids that do not match their input_length in blocks of %d tokens (⌈input_length/%d⌉ ids): is --trace-block-tokens right? Prompt tokens beyond the ids are the request's own; ids beyond the prompt are ignored.",
			n, len(t.Entries), t.Name, bt.Tokens, bt.Tokens))
	}
	if ph.Duration > LongReplay {
		notes = append(notes, fmt.Sprintf("WARNING: replaying %s at speed %g takes %s (more than %s); raise --speed or cut it with --duration.",
			t.label(), speed, ph.Duration.Round(time.Second), LongReplay))
	}
	return notes
}

// ShowDuration rounds d for people to read: to the millisecond from a
// second up, to the microsecond from a millisecond up (a replay's length
// is trace time ÷ speed, 13.319410001s or 700.000001ms before rounding).
func ShowDuration(d time.Duration) time.Duration {
	switch a := d.Abs(); {
	case a >= time.Second:
		return d.Round(time.Millisecond)
	case a >= time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d
}

// label names the trace in notes: its file, and the slice it holds.
func (t *Trace) label() string {
	if t.Offset == 0 && t.Window == 0 {
		return t.Name
	}
	return fmt.Sprintf("%s (from %s, %s)", t.Name, ShowDuration(t.Offset), windowText(t.Window))
}

func windowText(w time.Duration) string {
	if w == 0 {
		return "to the end"
	}
	return "for " + ShowDuration(w).String()
}

// scaleOffset returns off/speed rounded to the nearest nanosecond; speed 0
// or 1 returns off unchanged.
func scaleOffset(off time.Duration, speed float64) time.Duration {
	if speed == 0 || speed == 1 {
		return off
	}
	return toDuration(float64(off) / speed)
}

// ReadTraceFile reads a trace from path: JSONL when the name ends in .jsonl,
// .ndjson or .json, CSV otherwise. Errors name path as given.
func ReadTraceFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("schedule: trace: %w", err)
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return ReadJSONL(f, path)
	default:
		return ReadCSV(f, path)
	}
}

// traceBuilder accumulates entries while reading, in any format.
type traceBuilder struct {
	name    string
	format  string  // FormatSurge, FormatAzure, FormatMooncake
	column  string  // chosen time column
	unit    int64   // ns per unit of the time column
	rebase  bool    // the time column has any origin: rebase to the earliest entry
	offsets []int64 // parsed time values in ns (timestamps not yet rebased)
	entries []TraceEntry
	ids     []int64  // Mooncake: every entry's hash ids, one backing array
	spans   [][2]int // Mooncake: entry i's ids are ids[spans[i][0]:spans[i][1]]; {-1,-1} = none
}

func (b *traceBuilder) errorf(line int, field, format string, args ...any) error {
	if field == "" {
		return fmt.Errorf("schedule: %s:%d: %s", b.name, line, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("schedule: %s:%d: %s: %s", b.name, line, field, fmt.Sprintf(format, args...))
}

func (b *traceBuilder) setColumn(col string) {
	b.column = col
	b.rebase = col == ColTimestamp
	switch col {
	case ColOffsetMs:
		b.unit = int64(time.Millisecond)
	default:
		b.unit = int64(time.Second)
	}
}

// addTime parses raw (the text of the time field) at line.
func (b *traceBuilder) addTime(line int, raw string) error {
	ns, err := parseDecimal(raw, b.unit)
	if err != nil {
		return b.errorf(line, b.column, "%v", err)
	}
	if !b.rebase && ns < 0 {
		return b.errorf(line, b.column, "must be >= 0, got %s", raw) // a number: safe to show
	}
	b.addEntry(ns)
	return nil
}

// addEntry starts an entry at time ns (not yet rebased).
func (b *traceBuilder) addEntry(ns int64) {
	b.offsets = append(b.offsets, ns)
	b.entries = append(b.entries, TraceEntry{})
	if b.format == FormatMooncake {
		b.spans = append(b.spans, [2]int{-1, -1})
	}
}

// last is the entry being read.
func (b *traceBuilder) last() *TraceEntry { return &b.entries[len(b.entries)-1] }

// setTokens parses raw as the token count field of the last entry into
// dst (an empty raw leaves it unspecified).
func (b *traceBuilder) setTokens(line int, field, raw string, dst *int) error {
	if raw == "" {
		return nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return b.errorf(line, field, "%s", notInteger(raw))
	}
	if n < 0 || n > MaxTraceTokens {
		return b.errorf(line, field, "must be in [0, %d], got %d", MaxTraceTokens, n)
	}
	*dst = n
	return nil
}

// finish rebases timestamps, sorts and returns the trace.
func (b *traceBuilder) finish() (*Trace, error) {
	if len(b.entries) == 0 {
		return nil, fmt.Errorf("schedule: %s: no entries", b.name)
	}
	var origin int64
	if b.rebase {
		origin = slices.Min(b.offsets)
	}
	if b.spans != nil {
		blocks := make([]Blocks, 0, len(b.spans))
		for i, sp := range b.spans {
			if sp[0] < 0 {
				continue
			}
			blocks = append(blocks, Blocks{HashIDs: b.ids[sp[0]:sp[1]:sp[1]]})
			b.entries[i].Blocks = &blocks[len(blocks)-1]
		}
	}
	for i := range b.entries {
		off := b.offsets[i] - origin
		if off < 0 { // overflow: timestamps more than ~292 years apart
			return nil, fmt.Errorf("schedule: %s: %s: range exceeds %v", b.name, b.column, time.Duration(math.MaxInt64))
		}
		b.entries[i].Offset = time.Duration(off)
	}
	slices.SortStableFunc(b.entries, func(x, y TraceEntry) int { return cmp.Compare(x.Offset, y.Offset) })
	format := b.format
	if format == "" {
		format = FormatSurge
	}
	return &Trace{Name: b.name, Format: format, Column: b.column, Rows: len(b.entries), Entries: b.entries}, nil
}

// ReadCSV reads a CSV trace from r. The first non-comment row is the header
// and must name exactly one of timestamp, offset_s, offset_ms; prompt_tokens
// and output_tokens are optional; other columns are ignored. A header with
// Azure's columns (TIMESTAMP,ContextTokens,GeneratedTokens) is read as the
// Azure LLM inference trace instead (see readAzure). name is used in
// errors, e.g. `schedule: trace.csv:14: offset_s: not a number (a 1-byte
// text, not shown)`: a cell that is not a number is never shown.
func ReadCSV(r io.Reader, name string) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	b := &traceBuilder{name: name}

	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("schedule: %s: empty file, want a header row", name)
	}
	if err != nil {
		return nil, b.csvError(err)
	}
	if isAzureHeader(header) {
		return b.readAzure(cr, header)
	}
	timeCol, promptCol, outputCol := -1, -1, -1
	for i, h := range header {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // byte order mark
		}
		line, _ := cr.FieldPos(i)
		var dst *int
		switch h {
		case ColTimestamp, ColOffsetS, ColOffsetMs:
			if timeCol >= 0 {
				return nil, b.errorf(line, "header", "more than one time column (%s and %s)", b.column, h)
			}
			b.setColumn(h)
			dst = &timeCol
		case ColPromptTokens:
			dst = &promptCol
		case ColOutputTokens:
			dst = &outputCol
		default:
			continue // unknown columns are ignored
		}
		if *dst >= 0 {
			return nil, b.errorf(line, "header", "duplicate column %q", h)
		}
		*dst = i
	}
	if timeCol < 0 {
		line, _ := cr.FieldPos(0)
		return nil, b.errorf(line, "header", "want a %s, %s or %s column", ColTimestamp, ColOffsetS, ColOffsetMs)
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, b.csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if err := b.addTime(line, strings.TrimSpace(rec[timeCol])); err != nil {
			return nil, err
		}
		if promptCol >= 0 {
			if err := b.setTokens(line, ColPromptTokens, strings.TrimSpace(rec[promptCol]), &b.last().PromptTokens); err != nil {
				return nil, err
			}
		}
		if outputCol >= 0 {
			if err := b.setTokens(line, ColOutputTokens, strings.TrimSpace(rec[outputCol]), &b.last().OutputTokens); err != nil {
				return nil, err
			}
		}
	}
	return b.finish()
}

// csvError turns an encoding/csv error into file:line: message.
func (b *traceBuilder) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return b.errorf(pe.Line, "", "%v", pe.Err)
	}
	return fmt.Errorf("schedule: %s: %w", b.name, err)
}

// ReadJSONL reads a JSONL trace from r: one JSON object per line (blank
// lines are skipped) with the same names as the CSV columns. The first
// object decides the time key; every line must carry it and no other time
// key. Numbers must be JSON numbers; prompt_tokens and output_tokens may be
// null (unspecified). Other keys are ignored. A first object with
// Mooncake's keys (input_length, output_length, hash_ids) makes it a
// Mooncake trace (see addMooncake).
func ReadJSONL(r io.Reader, name string) (*Trace, error) {
	b := &traceBuilder{name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLLine)
	var obj map[string]json.RawMessage
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\ufeff"))
		}
		if len(text) == 0 {
			continue
		}
		clear(obj)
		if err := json.Unmarshal(text, &obj); err != nil {
			return nil, b.errorf(line, "", "invalid JSON object: %v", jsonErrorText(err))
		}
		if obj == nil { // the literal null
			return nil, b.errorf(line, "", "invalid JSON object: null")
		}
		if b.format == "" && len(b.entries) == 0 && isMooncake(obj) {
			b.format = FormatMooncake
			b.column, b.unit, b.rebase = ColTimestamp, int64(time.Millisecond), true
		}
		if b.format == FormatMooncake {
			if err := b.addMooncake(line, obj); err != nil {
				return nil, err
			}
			continue
		}
		var col string
		for _, k := range []string{ColTimestamp, ColOffsetS, ColOffsetMs} {
			if _, ok := obj[k]; !ok {
				continue
			}
			if col != "" {
				return nil, b.errorf(line, k, "more than one time key (%s and %s)", col, k)
			}
			col = k
		}
		switch {
		case b.column == "" && col == "":
			return nil, b.errorf(line, "", "want a %s, %s or %s key", ColTimestamp, ColOffsetS, ColOffsetMs)
		case b.column == "":
			b.setColumn(col)
		case col == "":
			return nil, b.errorf(line, b.column, "missing")
		case col != b.column:
			return nil, b.errorf(line, col, "the trace uses %s", b.column)
		}
		raw, err := jsonNumber(obj[col])
		if err != nil {
			return nil, b.errorf(line, col, "%v", err)
		}
		if err := b.addTime(line, raw); err != nil {
			return nil, err
		}
		e := b.last()
		for _, k := range []string{ColPromptTokens, ColOutputTokens} {
			v, ok := obj[k]
			if !ok || string(v) == "null" {
				continue
			}
			raw, err := jsonNumber(v)
			if err != nil {
				return nil, b.errorf(line, k, "%v", err)
			}
			dst := &e.PromptTokens
			if k == ColOutputTokens {
				dst = &e.OutputTokens
			}
			if err := b.setTokens(line, k, raw, dst); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, b.errorf(line+1, "", "line longer than %d bytes", maxJSONLLine)
		}
		return nil, fmt.Errorf("schedule: %s: %w", name, err)
	}
	return b.finish()
}

// jsonNumber returns the literal text of a JSON number value, or an error
// describing what the value is instead.
func jsonNumber(v json.RawMessage) (string, error) {
	if len(v) == 0 {
		return "", errors.New("missing value")
	}
	switch c := v[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return string(v), nil
	case c == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return "", fmt.Errorf("not a number (a %d-byte JSON string, not shown)", len(s))
		}
	case c == '[':
		return "", errors.New("not a number (a JSON array)")
	case c == '{':
		return "", errors.New("not a number (a JSON object)")
	case c == 't' || c == 'f':
		return "", errors.New("not a number (a JSON boolean)")
	case c == 'n':
		return "", errors.New("not a number (null)")
	}
	return "", fmt.Errorf("not a number %s", hidden(string(v)))
}

// jsonErrorText shortens a json error to its kind, without echoing any
// content from the line (encoding/json quotes the offending character).
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "not an object"
	}
	return err.Error()
}

// hidden stands for the text of a cell or value in an error: its length,
// never the text itself, which may be content (a trace exported from logs
// can hold prompts in any column). A value that parsed as a number may be
// shown; anything else goes through hidden.
func hidden(s string) string {
	return fmt.Sprintf("(a %d-byte text, not shown)", len(s))
}

// notInteger describes raw, which is not an integer, for an error: the
// number when it is one (1.5), its length otherwise.
func notInteger(raw string) string {
	if f, err := strconv.ParseFloat(raw, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return "not an integer, got " + plainNumber(f)
	}
	return "not an integer " + hidden(raw)
}

// plainNumber formats f for an error without an exponent where that reads
// well (99999999999, not 9.9999999999e+10); beyond 10²¹ or below 10⁻⁶ the
// plain form would be hundreds of digits, so those keep the exponent.
func plainNumber(f float64) string {
	if a := math.Abs(f); a >= 1e21 || (a != 0 && a < 1e-6) {
		return strconv.FormatFloat(f, 'g', 6, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// parseDecimal converts s, a decimal number of units, to nanoseconds, where
// unit is the number of nanoseconds per unit (10⁹ for seconds). Plain
// decimals ("12", "-3.25", ".5") are converted exactly, rounding half away
// from zero beyond nanosecond resolution; other float syntax ("1e3") goes
// through float64.
func parseDecimal(s string, unit int64) (int64, error) {
	if s == "" {
		return 0, errors.New("missing value")
	}
	if ns, ok := parsePlainDecimal(s, unit); ok {
		return ns, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("out of range (a %d-byte number)", len(s))
		}
		return 0, fmt.Errorf("not a number %s", hidden(s))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("not a finite number")
	}
	ns := math.Round(f * float64(unit))
	if ns >= math.MaxInt64 || ns < math.MinInt64 {
		return 0, fmt.Errorf("out of range, got %s", plainNumber(f))
	}
	return int64(ns), nil
}

// parsePlainDecimal handles [+-]digits[.digits] exactly. It reports false
// for anything else, including values too large for int64 nanoseconds.
func parsePlainDecimal(s string, unit int64) (int64, bool) {
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return 0, false
	}
	var whole int64
	for _, c := range []byte(intPart) {
		if c < '0' || c > '9' {
			return 0, false
		}
		if whole > (math.MaxInt64-9)/10 {
			return 0, false
		}
		whole = whole*10 + int64(c-'0')
	}
	if whole > math.MaxInt64/unit {
		return 0, false
	}
	ns := whole * unit
	// Fractional digits: digit i (from 1) is worth unit/10^i ns.
	place := unit
	roundUp := false
	for i, c := range []byte(frac) {
		if c < '0' || c > '9' {
			return 0, false
		}
		if place >= 10 {
			place /= 10
			ns += int64(c-'0') * place
			if ns < 0 {
				return 0, false
			}
		} else if place == 1 {
			// First digit beyond nanoseconds decides rounding.
			roundUp = c >= '5'
			place = 0
			for _, d := range []byte(frac[i+1:]) { // validate the rest
				if d < '0' || d > '9' {
					return 0, false
				}
			}
			break
		}
	}
	if roundUp {
		if ns == math.MaxInt64 {
			return 0, false
		}
		ns++
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

// WriteCSV writes t as a CSV trace with columns offset_s (nanosecond
// precision), prompt_tokens and output_tokens; ReadCSV reads it back
// unchanged.
func (t *Trace) WriteCSV(w io.Writer) error {
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, "offset_s,prompt_tokens,output_tokens\n"...)
	for i, e := range t.Entries {
		buf = strconv.AppendInt(buf, int64(e.Offset)/1e9, 10)
		buf = append(buf, '.')
		frac := int64(e.Offset) % 1e9
		for p := int64(1e8); p > 0; p /= 10 {
			buf = append(buf, byte('0'+frac/p%10))
		}
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(e.PromptTokens), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(e.OutputTokens), 10)
		buf = append(buf, '\n')
		if len(buf) >= 60<<10 || i == len(t.Entries)-1 {
			if _, err := w.Write(buf); err != nil {
				return fmt.Errorf("schedule: write trace: %w", err)
			}
			buf = buf[:0]
		}
	}
	if len(t.Entries) == 0 {
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("schedule: write trace: %w", err)
		}
	}
	return nil
}
