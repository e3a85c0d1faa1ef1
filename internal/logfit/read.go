// Package logfit fits a workload to production request logs: from a CSV
// (with a header row) or JSONL file of per-request token counts, and
// optionally timestamps, it builds the empirical prompt and output length
// distributions, their percentiles and ratio, and the arrival rate by
// minute with its peak and a suggested baseline; Write turns them into
// files the other commands accept (histogram CSVs for empirical:FILE, a
// rate-by-minute CSV, a YAML config for `surge run -f`).
//
// # Columns
//
// Only numeric keys are decoded, by name (case-insensitive):
//
//	prompt tokens  prompt_tokens, input_tokens, ContextTokens, context_tokens,
//	               input_length, num_prompt_tokens, usage.prompt_tokens,
//	               usage.input_tokens (JSONL)
//	output tokens  output_tokens, completion_tokens, GeneratedTokens,
//	               generated_tokens, output_length, num_output_tokens,
//	               usage.completion_tokens, usage.output_tokens (JSONL)
//	timestamp      timestamp, time, ts, created, created_at, start_time,
//	               request_time (seconds, or RFC 3339 / "2006-01-02
//	               15:04:05.999"), timestamp_ms, offset_ms (milliseconds),
//	               and timestamp in milliseconds beside Mooncake's
//	               input_length and output_length,
//	               offset_s (seconds)
//
// Every other column or key — prompts, responses, user ids — is skipped
// unread into any value surge keeps: a CSV row's other fields are
// overwritten by the next row, a JSONL line is decoded into a struct of the
// known keys only. Errors name file:line and the field, never a value of
// the log.
//
// # Rates
//
// With timestamps, minute i holds the requests in [t0 + 60i s,
// t0 + 60(i+1) s), t0 the earliest timestamp. The last minute is partial
// (it ends at the last request) and is left out of the statistics when
// there are two or more minutes. Of the full minutes:
//
//	rate_i   = requests_i / 60 s
//	baseline = the median rate_i (nearest rank): the load the service
//	           carries most of the time, untouched by the spikes
//	peak     = the largest rate_i, and peak / baseline its multiplier
//
// With a single (partial) minute, the rate is its requests over the span
// from the first to the last timestamp (at least 1 s).
package logfit

import (
	"bufio"
	"bytes"
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

	"github.com/surge-bench/surge/internal/workload"
)

// The column names read, lower case; the first of each list is the
// canonical name used in errors.
var (
	promptKeys = []string{"prompt_tokens", "input_tokens", "contexttokens", "context_tokens", "input_length", "num_prompt_tokens"}
	outputKeys = []string{"output_tokens", "completion_tokens", "generatedtokens", "generated_tokens", "output_length", "num_output_tokens"}
	// timeKeys map a timestamp column to its unit: 0 for seconds or a
	// date-time, else the number of seconds per unit.
	timeKeys = map[string]float64{"timestamp": 0, "time": 0, "ts": 0, "created": 0, "created_at": 0, "start_time": 0, "request_time": 0,
		"timestamp_ms": 1e-3, "offset_ms": 1e-3, "offset_s": 0}
)

// timeNames lists timeKeys in a fixed order, for messages.
var timeNames = []string{"timestamp", "time", "ts", "created", "created_at", "start_time", "request_time", "timestamp_ms", "offset_ms", "offset_s"}

// MaxSpan bounds the time a log's timestamps span (one minute of rates
// each: at most about 530,000 minutes).
const MaxSpan = 366 * 24 * time.Hour

// Fit is what a log holds, in numbers only.
type Fit struct {
	File       string           // the log read
	Rows       int64            // requests read
	Prompt     workload.Lengths // prompt tokens of rows with > 0
	Output     workload.Lengths // output tokens of rows with > 0
	ZeroPrompt int64            // rows with 0 prompt tokens, left out of Prompt
	ZeroOutput int64            // rows with 0 output tokens (failed, cancelled), left out of Output
	// Times are the rows' timestamps in seconds (absolute or offsets, as
	// the log has them), in file order; nil when the log has none.
	Times []float64
	// Absolute says the timestamps were date-times (or epoch seconds).
	Absolute bool
}

// Read reads a log: JSONL when the name ends in .jsonl, .ndjson or .json
// or the first byte is '{', else CSV with a header row.
func Read(path string) (*Fit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse reads a log from r as Read does; name is the file's name, for
// errors and the choice of format.
func Parse(name string, r io.Reader) (*Fit, error) {
	path := name
	br := bufio.NewReaderSize(r, 1<<16)
	fit := &Fit{File: path}
	var err error
	jsonl := false
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		jsonl = true
	case ".csv", ".tsv", ".txt":
	default:
		head, _ := br.Peek(512)
		jsonl = len(bytes.TrimSpace(head)) > 0 && bytes.TrimSpace(head)[0] == '{'
	}
	if jsonl {
		err = fit.readJSONL(br)
	} else {
		err = fit.readCSV(br, strings.EqualFold(filepath.Ext(path), ".tsv"))
	}
	if err != nil {
		return nil, err
	}
	if fit.Rows == 0 {
		return nil, fmt.Errorf("%s: no rows: want one request per row with prompt_tokens and output_tokens", path)
	}
	if len(fit.Times) > 0 {
		if span := slices.Max(fit.Times) - slices.Min(fit.Times); span > MaxSpan.Seconds() {
			return nil, fmt.Errorf("%s: timestamp: the rows span %.0f days, more than %.0f (timestamps in mixed units?)", path, span/86400, MaxSpan.Hours()/24)
		}
	}
	if fit.Prompt.Count() == 0 {
		return nil, fmt.Errorf("%s: prompt_tokens: every row has 0 prompt tokens", path)
	}
	if fit.Output.Count() == 0 {
		return nil, fmt.Errorf("%s: output_tokens: every row has 0 output tokens", path)
	}
	return fit, nil
}

// add counts one row.
func (f *Fit) add(prompt, output int) {
	f.Rows++
	if prompt == 0 {
		f.ZeroPrompt++
	} else {
		f.Prompt.Add(prompt)
	}
	if output == 0 {
		f.ZeroOutput++
	} else {
		f.Output.Add(output)
	}
}

// tokens checks a token count: a whole number in [0, MaxPromptTokens].
func tokens(v float64, ok bool) (int, string) {
	switch {
	case !ok || math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v):
		return 0, "want a whole number of tokens"
	case v < 0:
		return 0, fmt.Sprintf("must be ≥ 0, got %g", v)
	case v > workload.MaxPromptTokens:
		return 0, fmt.Sprintf("must be at most %d tokens, got %g", workload.MaxPromptTokens, v)
	}
	return int(v), ""
}

// parseTime reads a timestamp: a number of units (unit seconds each; 0 =
// seconds), or an RFC 3339 or "2006-01-02 15:04:05[.999999999]" date-time
// (UTC unless it has a zone). abs says it was a date-time.
func parseTime(s string, unit float64) (sec float64, abs bool, ok bool) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		if unit > 0 {
			v *= unit
		}
		return v, v > 1e8, true // after 1973: epoch seconds
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return float64(t.UnixNano()) / 1e9, true, true
		}
	}
	return 0, false, false
}

// readCSV reads a CSV with a header row naming its columns.
func (f *Fit) readCSV(r io.Reader, tab bool) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.LazyQuotes = false
	if tab {
		cr.Comma = '\t'
	}
	header, err := cr.Read()
	if err == io.EOF {
		return fmt.Errorf("%s: no rows: the file is empty (want a header row such as prompt_tokens,output_tokens)", f.File)
	}
	if err != nil {
		return f.csvErr(err)
	}
	pi, oi, ti := -1, -1, -1
	var unit float64
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		switch {
		case pi < 0 && slices.Contains(promptKeys, h):
			pi = i
		case oi < 0 && slices.Contains(outputKeys, h):
			oi = i
		case ti < 0:
			if u, ok := timeKeys[h]; ok {
				ti, unit = i, u
			}
		}
	}
	if pi < 0 {
		return fmt.Errorf("%s:1: header: no prompt-token column (want one of %s)", f.File, strings.Join(promptKeys, ", "))
	}
	if oi < 0 {
		return fmt.Errorf("%s:1: header: no output-token column (want one of %s)", f.File, strings.Join(outputKeys, ", "))
	}
	names := [3]string{strings.TrimSpace(header[pi]), strings.TrimSpace(header[oi]), ""}
	if ti >= 0 {
		names[2] = strings.TrimSpace(header[ti])
		f.Times = []float64{}
	}
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return f.csvErr(err)
		}
		line, _ := cr.FieldPos(0)
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		var vals [2]int
		for k, idx := range [2]int{pi, oi} {
			if idx >= len(row) || strings.TrimSpace(row[idx]) == "" {
				return fmt.Errorf("%s:%d: %s: missing", f.File, line, names[k])
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(row[idx]), 64)
			n, msg := tokens(v, err == nil)
			if msg != "" {
				return fmt.Errorf("%s:%d: %s: %s", f.File, line, names[k], msg)
			}
			vals[k] = n
		}
		if ti >= 0 {
			if ti >= len(row) {
				return fmt.Errorf("%s:%d: %s: missing", f.File, line, names[2])
			}
			sec, abs, ok := parseTime(row[ti], unit)
			if !ok {
				return fmt.Errorf("%s:%d: %s: want seconds or a date-time such as 2025-06-01T12:00:00Z", f.File, line, names[2])
			}
			f.Times = append(f.Times, sec)
			f.Absolute = f.Absolute || abs
		}
		f.add(vals[0], vals[1])
	}
}

// csvErr names the file and line of a CSV syntax error (its message
// quotes no content).
func (f *Fit) csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: not CSV: %v", f.File, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", f.File, err)
}

// jsonRow holds the known keys of a JSONL line, raw; every other key is
// skipped by the decoder and kept nowhere.
type jsonRow struct {
	PromptTokens    json.RawMessage `json:"prompt_tokens"`
	InputTokens     json.RawMessage `json:"input_tokens"`
	ContextTokens   json.RawMessage `json:"contexttokens"`
	ContextTokens2  json.RawMessage `json:"context_tokens"`
	InputLength     json.RawMessage `json:"input_length"`
	NumPrompt       json.RawMessage `json:"num_prompt_tokens"`
	OutputTokens    json.RawMessage `json:"output_tokens"`
	Completion      json.RawMessage `json:"completion_tokens"`
	GeneratedTokens json.RawMessage `json:"generatedtokens"`
	Generated2      json.RawMessage `json:"generated_tokens"`
	OutputLength    json.RawMessage `json:"output_length"`
	NumOutput       json.RawMessage `json:"num_output_tokens"`
	Usage           *struct {
		PromptTokens     json.RawMessage `json:"prompt_tokens"`
		InputTokens      json.RawMessage `json:"input_tokens"`
		CompletionTokens json.RawMessage `json:"completion_tokens"`
		OutputTokens     json.RawMessage `json:"output_tokens"`
	} `json:"usage"`
	Timestamp   json.RawMessage `json:"timestamp"`
	Time        json.RawMessage `json:"time"`
	TS          json.RawMessage `json:"ts"`
	Created     json.RawMessage `json:"created"`
	CreatedAt   json.RawMessage `json:"created_at"`
	StartTime   json.RawMessage `json:"start_time"`
	RequestTime json.RawMessage `json:"request_time"`
	TimestampMs json.RawMessage `json:"timestamp_ms"`
	OffsetMs    json.RawMessage `json:"offset_ms"`
	OffsetS     json.RawMessage `json:"offset_s"`
}

// named is a raw value and the key it came from.
type named struct {
	key string
	raw json.RawMessage
}

func first(vals ...named) (named, bool) {
	for _, v := range vals {
		if len(v.raw) > 0 && string(v.raw) != "null" {
			return v, true
		}
	}
	return named{}, false
}

// number reads a JSON number, or a string holding one.
func number(raw json.RawMessage) (float64, bool) {
	s := string(raw)
	if len(s) >= 2 && s[0] == '"' {
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return 0, false
		}
		s = str
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v, err == nil
}

// readJSONL reads one JSON object per line.
func (f *Fit) readJSONL(r *bufio.Reader) error {
	timed := -1 // unknown until the first row
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			if err := f.jsonLine(b, line, &timed); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", f.File, line, err)
		}
	}
}

func (f *Fit) jsonLine(b []byte, line int, timed *int) error {
	var row jsonRow
	if err := json.Unmarshal(b, &row); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return fmt.Errorf("%s:%d: %s: want a number, got a JSON %s", f.File, line, te.Field, te.Value)
		case errors.As(err, &se):
			return fmt.Errorf("%s:%d: not a JSON object (syntax error at byte %d of the line)", f.File, line, se.Offset)
		}
		return fmt.Errorf("%s:%d: want a JSON object with prompt_tokens and output_tokens", f.File, line)
	}
	var usage [4]named
	if u := row.Usage; u != nil {
		usage = [4]named{{"usage.prompt_tokens", u.PromptTokens}, {"usage.input_tokens", u.InputTokens}, {"usage.completion_tokens", u.CompletionTokens}, {"usage.output_tokens", u.OutputTokens}}
	}
	p, ok := first(named{"prompt_tokens", row.PromptTokens}, named{"input_tokens", row.InputTokens}, named{"ContextTokens", row.ContextTokens},
		named{"context_tokens", row.ContextTokens2}, named{"input_length", row.InputLength}, named{"num_prompt_tokens", row.NumPrompt}, usage[0], usage[1])
	if !ok {
		return fmt.Errorf("%s:%d: prompt_tokens: missing (want one of %s, usage.prompt_tokens)", f.File, line, strings.Join(promptKeys, ", "))
	}
	o, ok := first(named{"output_tokens", row.OutputTokens}, named{"completion_tokens", row.Completion}, named{"GeneratedTokens", row.GeneratedTokens},
		named{"generated_tokens", row.Generated2}, named{"output_length", row.OutputLength}, named{"num_output_tokens", row.NumOutput}, usage[2], usage[3])
	if !ok {
		return fmt.Errorf("%s:%d: output_tokens: missing (want one of %s, usage.completion_tokens)", f.File, line, strings.Join(outputKeys, ", "))
	}
	var vals [2]int
	for k, v := range [2]named{p, o} {
		x, ok := number(v.raw)
		n, msg := tokens(x, ok)
		if msg != "" {
			return fmt.Errorf("%s:%d: %s: %s", f.File, line, v.key, msg)
		}
		vals[k] = n
	}
	ts, hasTime := first(named{"timestamp", row.Timestamp}, named{"time", row.Time}, named{"ts", row.TS}, named{"created", row.Created},
		named{"created_at", row.CreatedAt}, named{"start_time", row.StartTime}, named{"request_time", row.RequestTime},
		named{"timestamp_ms", row.TimestampMs}, named{"offset_ms", row.OffsetMs}, named{"offset_s", row.OffsetS})
	switch {
	case *timed < 0 && hasTime:
		*timed = 1
		f.Times = []float64{}
	case *timed < 0:
		*timed = 0
	case *timed == 1 && !hasTime:
		return fmt.Errorf("%s:%d: timestamp: missing (earlier rows have one; want one of %s)", f.File, line, strings.Join(timeNames, ", "))
	}
	if hasTime && *timed == 1 {
		s := string(ts.raw)
		if len(s) >= 2 && s[0] == '"' {
			if json.Unmarshal(ts.raw, &s) != nil {
				s = ""
			}
		}
		unit := timeKeys[ts.key]
		if ts.key == "timestamp" && p.key == "input_length" && o.key == "output_length" {
			unit = 1e-3 // a Mooncake trace: milliseconds since its start
		}
		sec, abs, ok := parseTime(s, unit)
		if !ok {
			return fmt.Errorf("%s:%d: %s: want seconds or a date-time such as 2025-06-01T12:00:00Z", f.File, line, ts.key)
		}
		f.Times = append(f.Times, sec)
		f.Absolute = f.Absolute || abs
	}
	f.add(vals[0], vals[1])
	return nil
}
