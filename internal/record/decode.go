package record

import "encoding/json"

// decoder reads one requests.jsonl line into a Record without reflection.
// It knows the shape AppendJSON writes — one flat object of integers,
// booleans and plain strings, the nested ratelimit object and the
// server_timing array — and accepts only what encoding/json would decode to
// the very same Record: an exact field name, an integer without fraction
// or exponent that fits, a string without escapes or bytes outside ASCII.
// On anything else (an unknown or differently cased field, null, an escape,
// a type error, malformed JSON) it reports !ok and the caller decodes the
// line with encoding/json, whose result and error messages stay the
// contract. Repeated short strings (phase, outcome, profile, replica, error)
// are interned, so a file of a million records does not allocate each one a
// million times.
type decoder struct {
	b      []byte
	i      int
	intern map[string]string
}

func newDecoder() *decoder { return &decoder{intern: map[string]string{}} }

// maxInterned bounds the interned strings: values beyond it (a file whose
// error texts are all different) are allocated each time.
const maxInterned = 4096

// decode fills r (which the caller set to New's defaults) from line; ok is
// false when the fast path cannot vouch for the result.
func (d *decoder) decode(line []byte, r *Record) (ok bool) {
	d.b, d.i = line, 0
	if !d.objectStart() {
		return false
	}
	if d.peek() == '}' {
		d.i++
		return d.end()
	}
	for {
		key, ok := d.rawString()
		if !ok || !d.colon() {
			return false
		}
		if !d.field(key, r) {
			return false
		}
		switch d.next() {
		case ',':
			continue
		case '}':
			return d.end()
		}
		return false
	}
}

// field decodes the value of key into r.
func (d *decoder) field(key []byte, r *Record) bool {
	var ok bool
	switch string(key) {
	case "id":
		r.ID, ok = d.str(false)
	case "seq":
		r.Seq, ok = d.int()
	case "phase":
		r.Phase, ok = d.str(true)
	case "scheduled_ns":
		r.ScheduledNs, ok = d.int()
	case "sent_ns":
		r.SentNs, ok = d.int()
	case "conn_ns":
		r.ConnNs, ok = d.int()
	case "headers_ns":
		r.HeadersNs, ok = d.int()
	case "first_chunk_ns":
		r.FirstChunkNs, ok = d.int()
	case "first_token_ns":
		r.FirstTokenNs, ok = d.int()
	case "first_text_ns":
		r.FirstTextNs, ok = d.int()
	case "done_ns":
		r.DoneNs, ok = d.int()
	case "status":
		ok = d.intTo(&r.Status)
	case "outcome":
		var s string
		s, ok = d.str(true)
		r.Outcome = Outcome(s)
	case "good":
		r.Good, ok = d.bool()
	case "error":
		r.Error, ok = d.str(true)
	case "cause":
		var s string
		s, ok = d.str(true)
		r.Cause = Cause(s)
	case "prompt_tokens":
		ok = d.intTo(&r.PromptTokens)
	case "output_tokens":
		ok = d.intTo(&r.OutputTokens)
	case "max_tokens":
		ok = d.intTo(&r.MaxTokens)
	case "usage_from_server":
		r.UsageFromServer, ok = d.bool()
	case "reasoning_tokens":
		ok = d.intTo(&r.ReasoningTokens)
	case "cached_tokens":
		ok = d.intTo(&r.CachedTokens)
	case "itl_max_ns":
		r.ITLMaxNs, ok = d.int()
	case "tpot_ns":
		r.TPOTNs, ok = d.int()
	case "smooth_ns":
		r.SmoothNs, ok = d.int()
	case "chunks":
		ok = d.intTo(&r.Chunks)
	case "unknown_events":
		ok = d.intTo(&r.UnknownEvents)
	case "inputs":
		ok = d.intTo(&r.Inputs)
	case "request_bytes":
		ok = d.intTo(&r.RequestBytes)
	case "images":
		ok = d.intTo(&r.Images)
	case "attempts":
		ok = d.intTo(&r.Attempts)
	case "conn_retries":
		ok = d.intTo(&r.ConnRetries)
	case "retry_after_ns":
		r.RetryAfterNs, ok = d.int()
	case "ratelimit":
		ok = d.rateLimit(&r.RateLimit)
	case "engine_queue_ns":
		r.EngineQueueNs, ok = d.int()
	case "engine_prefill_ns":
		r.EnginePrefillNs, ok = d.int()
	case "engine_decode_ns":
		r.EngineDecodeNs, ok = d.int()
	case "engine_e2e_ns":
		r.EngineE2ENs, ok = d.int()
	case "gateway_ns":
		r.GatewayNs, ok = d.int()
	case "upstream_ns":
		r.UpstreamNs, ok = d.int()
	case "server_timing":
		ok = d.timings(&r.ServerTiming)
	case "trace_id":
		r.TraceID, ok = d.str(false)
	case "replica":
		r.Replica, ok = d.str(true)
	case "schema_version":
		ok = d.intTo(&r.Schema)
	case "profile":
		r.Profile, ok = d.str(true)
	case "shard":
		ok = d.intTo(&r.Shard)
	case "dataset_row":
		ok = d.intTo(&r.DatasetRow)
	case "session":
		r.Session, ok = d.int()
	case "turn":
		ok = d.intTo(&r.Turn)
	case "session_turns":
		ok = d.intTo(&r.SessionTurns)
	case "branch":
		ok = d.intTo(&r.Branch)
	case "prefix_tokens":
		ok = d.intTo(&r.PrefixTokens)
	}
	return ok // an unknown field: encoding/json decides
}

// rateLimit decodes the ratelimit object into l (a field it lacks keeps
// its value, as encoding/json leaves it).
func (d *decoder) rateLimit(l *RateLimit) bool {
	if !d.objectStart() {
		return false
	}
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		key, ok := d.rawString()
		if !ok || !d.colon() {
			return false
		}
		var p *int64
		switch string(key) {
		case "limit_requests":
			p = &l.LimitRequests
		case "limit_tokens":
			p = &l.LimitTokens
		case "remaining_requests":
			p = &l.RemainingRequests
		case "remaining_tokens":
			p = &l.RemainingTokens
		case "reset_requests_ns":
			p = &l.ResetRequestsNs
		case "reset_tokens_ns":
			p = &l.ResetTokensNs
		case "limit_tokens_day":
			p = &l.LimitTokensDay
		case "remaining_tokens_day":
			p = &l.RemainingTokensDay
		case "reset_tokens_day_ns":
			p = &l.ResetTokensDayNs
		case "unparsed":
			if !d.intTo(&l.Unparsed) {
				return false
			}
		default:
			return false
		}
		if p != nil {
			if *p, ok = d.int(); !ok {
				return false
			}
		}
		switch d.next() {
		case ',':
			continue
		case '}':
			return true
		}
		return false
	}
}

// timings decodes the server_timing array into *ts (replacing it, as
// encoding/json replaces a slice).
func (d *decoder) timings(ts *[]Timing) bool {
	d.space()
	if d.next() != '[' {
		return false
	}
	out := []Timing{}
	if d.peek() == ']' {
		d.i++
		*ts = out
		return true
	}
	for {
		if !d.objectStart() {
			return false
		}
		var t Timing
		if d.peek() != '}' {
			for {
				key, ok := d.rawString()
				if !ok || !d.colon() {
					return false
				}
				switch string(key) {
				case "name":
					t.Name, ok = d.str(true)
				case "dur_ns":
					t.DurNs, ok = d.int()
				default:
					return false
				}
				if !ok {
					return false
				}
				c := d.next()
				if c == ',' {
					continue
				}
				if c != '}' {
					return false
				}
				break
			}
		} else {
			d.i++
		}
		out = append(out, t)
		switch d.next() {
		case ',':
			continue
		case ']':
			*ts = out
			return true
		}
		return false
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (d *decoder) space() {
	for d.i < len(d.b) && isSpace(d.b[d.i]) {
		d.i++
	}
}

// peek is the next byte after white space, 0 at the end.
func (d *decoder) peek() byte {
	d.space()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// next consumes and returns the next byte after white space, 0 at the end.
func (d *decoder) next() byte {
	c := d.peek()
	if c != 0 {
		d.i++
	}
	return c
}

func (d *decoder) objectStart() bool { return d.next() == '{' }
func (d *decoder) colon() bool       { return d.next() == ':' }

// end reports whether only white space follows.
func (d *decoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// rawString returns the bytes of a string without escapes, control
// characters or non-ASCII bytes (those need encoding/json's decoding).
func (d *decoder) rawString() ([]byte, bool) {
	if d.next() != '"' {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// str decodes a string value, interned when asked.
func (d *decoder) str(intern bool) (string, bool) {
	b, ok := d.rawString()
	if !ok {
		return "", false
	}
	if !intern {
		return string(b), true
	}
	if s, ok := d.intern[string(b)]; ok {
		return s, true
	}
	s := string(b)
	if len(d.intern) < maxInterned {
		d.intern[s] = s
	}
	return s, true
}

// int decodes an integer as JSON writes it: an optional minus, then 0 or
// digits not starting with 0; within int64.
func (d *decoder) int() (int64, bool) {
	d.space()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 1 && d.b[digits] == '0' || n > 18 {
		return 0, false // no digits, a leading zero, or possibly beyond int64: encoding/json decides
	}
	if d.i < len(d.b) {
		if c := d.b[d.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	var v int64
	for _, c := range d.b[digits:d.i] {
		v = v*10 + int64(c-'0')
	}
	if d.b[start] == '-' {
		v = -v
	}
	return v, true
}

// intTo decodes an integer into an int (64 bits wide on the platforms
// surge builds for; a value beyond int is left to encoding/json).
func (d *decoder) intTo(p *int) bool {
	v, ok := d.int()
	if !ok || int64(int(v)) != v {
		return false
	}
	*p = int(v)
	return true
}

func (d *decoder) bool() (bool, bool) {
	d.space()
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		return true, true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		return false, true
	}
	return false, false
}

// unmarshal decodes one line into r: the fast path, else encoding/json
// (through Record.UnmarshalJSON) with its result and errors.
func (d *decoder) unmarshal(line []byte, r *Record) error {
	*r = New("", 0, "", 0)
	if d.decode(line, r) && (r.Outcome == "" || r.Outcome.Valid()) {
		return nil
	}
	*r = Record{}
	return json.Unmarshal(line, r) // an unknown outcome too: UnmarshalJSON says so
}
