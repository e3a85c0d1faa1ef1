package schedule

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The columns of the Azure LLM inference trace (Azure/AzurePublicDataset,
// AzureLLMInferenceTrace_*.csv).
const (
	AzureTimestamp = "TIMESTAMP"       // date and time of the request, UTC, e.g. 2023-11-16 18:15:46.6805900
	AzureContext   = "ContextTokens"   // prompt tokens
	AzureGenerated = "GeneratedTokens" // output tokens
)

// The keys of a Mooncake trace (kvcache-ai/Mooncake, one JSON object per
// request).
const (
	MooncakeTimestamp = "timestamp"     // milliseconds, any origin
	MooncakeInput     = "input_length"  // prompt tokens
	MooncakeOutput    = "output_length" // output tokens
	MooncakeHashIDs   = "hash_ids"      // one id per block of the prompt; equal ids, equal content
)

// isAzureHeader reports whether a CSV header has one of the Azure trace's
// token columns (compared without case): such a file is read as an Azure
// trace.
func isAzureHeader(header []string) bool {
	for _, h := range header {
		h = strings.TrimPrefix(strings.TrimSpace(h), "\ufeff")
		if strings.EqualFold(h, AzureContext) || strings.EqualFold(h, AzureGenerated) {
			return true
		}
	}
	return false
}

// readAzure reads the rows of an Azure LLM inference trace after its
// header: TIMESTAMP (a date and time, see parseDatetime) rebased to the
// earliest row, ContextTokens as prompt tokens and GeneratedTokens as
// output tokens. All three columns are required in the header and in every
// row; column names are matched without case; other columns are ignored.
func (b *traceBuilder) readAzure(cr *csv.Reader, header []string) (*Trace, error) {
	b.format, b.column, b.unit, b.rebase = FormatAzure, AzureTimestamp, 1, true
	headerLine, _ := cr.FieldPos(0)
	want := []string{AzureTimestamp, AzureContext, AzureGenerated}
	cols := []int{-1, -1, -1}
	for i, h := range header {
		h = strings.TrimPrefix(strings.TrimSpace(h), "\ufeff")
		for j, w := range want {
			if !strings.EqualFold(h, w) {
				continue
			}
			if cols[j] >= 0 {
				return nil, b.errorf(headerLine, "header", "duplicate column %q", w)
			}
			cols[j] = i
		}
	}
	for j, w := range want {
		if cols[j] < 0 {
			return nil, b.errorf(headerLine, "header", "an Azure trace (%s, %s) needs a %s column", AzureContext, AzureGenerated, w)
		}
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
		ns, err := parseDatetime(strings.TrimSpace(rec[cols[0]]))
		if err != nil {
			return nil, b.errorf(line, AzureTimestamp, "%v", err)
		}
		b.addEntry(ns)
		e := b.last()
		for j, dst := range []*int{&e.PromptTokens, &e.OutputTokens} {
			raw := strings.TrimSpace(rec[cols[j+1]])
			if raw == "" {
				return nil, b.errorf(line, want[j+1], "missing value")
			}
			if err := b.setTokens(line, want[j+1], raw, dst); err != nil {
				return nil, err
			}
		}
	}
	return b.finish()
}

// parseDatetime reads a date and time as the Azure traces write it,
// "2023-11-16 18:15:46.6805900": YYYY-MM-DD, a space or T, hh:mm:ss, an
// optional fraction of any number of digits (rounded to the nanosecond) and
// an optional zone, Z or ±hh:mm (as pandas writes time-zone-aware stamps,
// "+00:00"); without a zone it is UTC. It returns nanoseconds since the
// Unix epoch.
func parseDatetime(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("missing value")
	}
	bad := func() (int64, error) {
		return 0, fmt.Errorf("not a date and time %s; want YYYY-MM-DD hh:mm:ss[.fraction], UTC", hidden(s))
	}
	t := s
	var zone int64 // seconds east of UTC
	switch n := len(t); {
	case strings.HasSuffix(t, "Z"):
		t = t[:n-1]
	case n >= 25 && (t[n-6] == '+' || t[n-6] == '-') && t[n-3] == ':':
		zh, zm := digits(t[n-5:n-3]), digits(t[n-2:])
		if zh < 0 || zh > 23 || zm < 0 || zm > 59 {
			return bad()
		}
		zone = int64(zh*3600 + zm*60)
		if t[n-6] == '-' {
			zone = -zone
		}
		t = t[:n-6]
	}
	if len(t) < 19 || t[4] != '-' || t[7] != '-' || (t[10] != ' ' && t[10] != 'T') || t[13] != ':' || t[16] != ':' {
		return bad()
	}
	y, mo, d, h, mi, sec := digits(t[0:4]), digits(t[5:7]), digits(t[8:10]), digits(t[11:13]), digits(t[14:16]), digits(t[17:19])
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return bad()
	}
	var frac int64
	if rest := t[19:]; rest != "" {
		if rest[0] != '.' || len(rest) == 1 {
			return bad()
		}
		place := int64(1e8)
		for i, c := range []byte(rest[1:]) {
			if c < '0' || c > '9' {
				return bad()
			}
			switch {
			case i < 9:
				frac += int64(c-'0') * place
				place /= 10
			case i == 9 && c >= '5':
				frac++ // round half up at the nanosecond
			}
		}
	}
	tm := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	if tm.Day() != d { // 2023-02-30
		return bad()
	}
	if y < 1678 || y > 2261 { // UnixNano's range
		return 0, fmt.Errorf("out of range, year %d (want 1678 to 2261)", y)
	}
	return tm.UnixNano() + frac - zone*int64(time.Second), nil
}

// digits is the value of s, decimal digits only, or -1.
func digits(s string) int {
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// isMooncake reports whether a JSONL trace's first object has one of
// Mooncake's keys.
func isMooncake(obj map[string]json.RawMessage) bool {
	for _, k := range []string{MooncakeInput, MooncakeOutput, MooncakeHashIDs} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// addMooncake adds the entry of one Mooncake object: timestamp in
// milliseconds (any origin, rebased to the earliest), input_length ≥ 1
// prompt tokens and output_length output tokens (both required), and
// hash_ids, an array of integers, one per block of the prompt (optional;
// absent or null: the prompt's content is not known to be shared).
func (b *traceBuilder) addMooncake(line int, obj map[string]json.RawMessage) error {
	v, ok := obj[MooncakeTimestamp]
	if !ok {
		return b.errorf(line, MooncakeTimestamp, "missing")
	}
	raw, err := jsonNumber(v)
	if err != nil {
		return b.errorf(line, MooncakeTimestamp, "%v", err)
	}
	ns, err := parseDecimal(raw, b.unit)
	if err != nil {
		return b.errorf(line, MooncakeTimestamp, "%v", err)
	}
	b.addEntry(ns)
	e := b.last()
	for _, k := range []string{MooncakeInput, MooncakeOutput} {
		v, ok := obj[k]
		if !ok {
			return b.errorf(line, k, "missing")
		}
		raw, err := jsonNumber(v)
		if err != nil {
			return b.errorf(line, k, "%v", err)
		}
		dst := &e.PromptTokens
		if k == MooncakeOutput {
			dst = &e.OutputTokens
		}
		if err := b.setTokens(line, k, raw, dst); err != nil {
			return err
		}
	}
	if e.PromptTokens == 0 {
		return b.errorf(line, MooncakeInput, "must be in [1, %d], got 0", MaxTraceTokens)
	}
	v, ok = obj[MooncakeHashIDs]
	if !ok || string(v) == "null" {
		return nil
	}
	start := len(b.ids)
	if err := b.appendHashIDs(line, v); err != nil {
		b.ids = b.ids[:start]
		return err
	}
	b.spans[len(b.spans)-1] = [2]int{start, len(b.ids)}
	return nil
}

// appendHashIDs appends the integers of the JSON array v (valid JSON) to
// b.ids; an element that is not an integer is an error naming its index.
func (b *traceBuilder) appendHashIDs(line int, v json.RawMessage) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		kind := "a JSON value"
		if len(v) > 0 {
			switch c := v[0]; {
			case c == '"':
				kind = "a JSON string"
			case c == '{':
				kind = "a JSON object"
			case c == '-' || (c >= '0' && c <= '9'):
				kind = "a number"
			case c == 't' || c == 'f':
				kind = "a boolean"
			}
		}
		return b.errorf(line, MooncakeHashIDs, "want an array of integer block ids, got %s", kind)
	}
	rest := bytes.TrimSpace(v[1:])
	if len(rest) > 0 && rest[0] == ']' {
		return nil
	}
	for i := 0; ; i++ {
		end := bytes.IndexAny(rest, ",]")
		if end < 0 { // unreachable for valid JSON
			end = len(rest)
		}
		tok := string(bytes.TrimSpace(rest[:end]))
		id, err := strconv.ParseInt(tok, 10, 64)
		if err != nil || tok == "" || tok[0] == '+' {
			return b.errorf(line, fmt.Sprintf("%s[%d]", MooncakeHashIDs, i), "%s", notInteger(tok))
		}
		b.ids = append(b.ids, id)
		if end >= len(rest) || rest[end] == ']' {
			return nil
		}
		rest = rest[end+1:]
	}
}
