package openai

import (
	"errors"
	"strconv"
)

// Chunk is what ScanChunk extracts from the JSON of one streamed chunk (the
// payload of one SSE "data:" line). Slices point into the scanned input.
type Chunk struct {
	// Content reports whether some choice carries generated content: a
	// non-empty "text" (completions), or a delta with a non-empty "content",
	// "reasoning_content" or "reasoning" string, a non-empty "tool_calls"
	// array or a "function_call" object. Role-only deltas and empty or null
	// content do not count.
	Content bool
	// Text reports whether some choice carries answer text: a non-empty
	// "text" (completions) or delta "content". Reasoning and tool calls are
	// Content but not Text.
	Text bool
	// Choices reports whether the chunk has a "choices" array (possibly empty).
	Choices bool
	// Finish reports whether some choice has a non-empty "finish_reason".
	Finish bool
	// Usage reports whether the chunk has a "usage" object.
	Usage bool
	// PromptTokens and CompletionTokens are usage.prompt_tokens and
	// usage.completion_tokens when they are non-negative JSON integers, else 0.
	PromptTokens, CompletionTokens int
	// ReasoningTokens is usage.completion_tokens_details.reasoning_tokens and
	// CachedTokens usage.prompt_tokens_details.cached_tokens, under the same
	// rule; 0 when absent.
	ReasoningTokens, CachedTokens int
	// Error reports an error inside the stream: a non-null "error" member,
	// or a top-level "object":"error" (vLLM's older format).
	Error bool
	// ErrorType is the raw text of the error's "type" (or, without one, its
	// "code"): the bytes of a JSON string without quotes (escapes not
	// decoded) or a number literal. It is server-controlled: sanitize before
	// recording it.
	ErrorType []byte
	// Timings is llama.cpp's top-level "timings" object (its final chunk).
	Timings Timings
}

// Timings is what the client keeps of llama.cpp's "timings" object:
// prompt_ms (prompt processing, the prefill), predicted_ms (generation,
// the decode) and cache_n (prompt tokens reused from its cache). A value
// that is absent or not a non-negative number is −1.
type Timings struct {
	Present     bool
	PromptMs    float64
	PredictedMs float64
	CacheN      int
}

// maxDepth is encoding/json's nesting limit; ScanChunk accepts exactly the
// nesting encoding/json accepts.
const maxDepth = 10000

// Sentinel errors of the scanner; they carry no input text.
var (
	errSyntax    = errors.New("openai: malformed chunk")
	errNotObject = errors.New("openai: chunk is not a JSON object")
	errDepth     = errors.New("openai: chunk nests too deeply")
)

// keyID names the object member names the scanner acts on.
type keyID uint8

const (
	kOther keyID = iota
	kChoices
	kUsage
	kError
	kObject
	kType
	kCode
	kDelta
	kText
	kFinishReason
	kContent
	kReasoningContent
	kReasoning
	kToolCalls
	kFunctionCall
	kPromptTokens
	kCompletionTokens
	kPromptTokensDetails
	kCompletionTokensDetails
	kCachedTokens
	kReasoningTokens
	kTimings
	kPromptMs
	kPredictedMs
	kCacheN
	kResponse
	kMessage
	kThinking
	kPartialJSON
	kInputTokens
	kOutputTokens
	kInputTokensDetails
	kOutputTokensDetails
	kCacheReadInputTokens
	kCacheCreationInputTokens
	kData
	kEmbedding
	kResults
	kTotalTokens
)

func lookupKey(name []byte) keyID {
	switch string(name) { // no allocation: the compiler compares in place
	case "choices":
		return kChoices
	case "usage":
		return kUsage
	case "error":
		return kError
	case "object":
		return kObject
	case "type":
		return kType
	case "code":
		return kCode
	case "delta":
		return kDelta
	case "text":
		return kText
	case "finish_reason":
		return kFinishReason
	case "content":
		return kContent
	case "reasoning_content":
		return kReasoningContent
	case "reasoning":
		return kReasoning
	case "tool_calls":
		return kToolCalls
	case "function_call":
		return kFunctionCall
	case "prompt_tokens":
		return kPromptTokens
	case "completion_tokens":
		return kCompletionTokens
	case "prompt_tokens_details":
		return kPromptTokensDetails
	case "completion_tokens_details":
		return kCompletionTokensDetails
	case "cached_tokens":
		return kCachedTokens
	case "reasoning_tokens":
		return kReasoningTokens
	case "timings":
		return kTimings
	case "prompt_ms":
		return kPromptMs
	case "predicted_ms":
		return kPredictedMs
	case "cache_n":
		return kCacheN
	case "response":
		return kResponse
	case "message":
		return kMessage
	case "thinking":
		return kThinking
	case "partial_json":
		return kPartialJSON
	case "input_tokens":
		return kInputTokens
	case "output_tokens":
		return kOutputTokens
	case "input_tokens_details":
		return kInputTokensDetails
	case "output_tokens_details":
		return kOutputTokensDetails
	case "cache_read_input_tokens":
		return kCacheReadInputTokens
	case "cache_creation_input_tokens":
		return kCacheCreationInputTokens
	case "data":
		return kData
	case "embedding":
		return kEmbedding
	case "results":
		return kResults
	case "total_tokens":
		return kTotalTokens
	}
	return kOther
}

// plain[c] is true for bytes that may appear unescaped inside a JSON string
// and need no attention: everything except control characters, '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// ScanChunk validates data as one JSON object and extracts what the client
// needs from a streamed chunk, without allocating. It accepts exactly the
// documents encoding/json accepts (an object, surrounded by optional
// whitespace); anything else is an error. Repeated member names follow
// encoding/json's rule: the last one wins.
func ScanChunk(data []byte) (Chunk, error) {
	var c Chunk
	s := scanner{b: data}
	s.ws()
	if s.i >= len(s.b) {
		return c, errSyntax
	}
	if s.b[s.i] != '{' {
		if err := s.value(0); err != nil {
			return c, err
		}
		s.ws()
		if s.i != len(s.b) {
			return c, errSyntax
		}
		return c, errNotObject
	}
	var (
		objectIsError bool
		topType       []byte
		topCode       []byte
	)
	more, err := s.objectStart(1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kChoices:
			c.Choices, c.Content, c.Text, c.Finish, err = s.choices(1)
		case kUsage:
			err = s.usage(1, &c, false)
		case kError:
			c.Error, c.ErrorType, err = s.errorValue(1)
		case kObject:
			objectIsError, err = s.stringIs(1, "error")
		case kType:
			topType, err = s.tokenValue(1)
		case kCode:
			topCode, err = s.tokenValue(1)
		case kTimings:
			c.Timings, err = s.timings(1)
		default:
			err = s.value(1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	if err = s.end(err); err != nil {
		return Chunk{}, err
	}
	if objectIsError && !c.Error {
		c.Error = true
		c.ErrorType = topType
		if len(c.ErrorType) == 0 {
			c.ErrorType = topCode
		}
	}
	return c, nil
}

// end checks that a document whose value was read (err nil) ends there,
// after optional whitespace; it returns the first error.
func (s *scanner) end(err error) error {
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errSyntax
	}
	return nil
}

// scanner walks a JSON document; i is the read position.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the byte at the read position, or 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// objectStart consumes '{' (the caller has checked it) and reports whether a
// member follows; depth is the object's nesting depth.
func (s *scanner) objectStart(depth int) (more bool, err error) {
	if depth > maxDepth {
		return false, errDepth
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return false, nil
	}
	return true, nil
}

// objectNext consumes the separator after a member value.
func (s *scanner) objectNext() (more bool, err error) {
	s.ws()
	switch s.peek() {
	case ',':
		s.i++
		s.ws()
		return true, nil
	case '}':
		s.i++
		return false, nil
	}
	return false, errSyntax
}

// arrayStart consumes '[' and reports whether an element follows.
func (s *scanner) arrayStart(depth int) (more bool, err error) {
	if depth > maxDepth {
		return false, errDepth
	}
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		return false, nil
	}
	return true, nil
}

// arrayNext consumes the separator after an element.
func (s *scanner) arrayNext() (more bool, err error) {
	s.ws()
	switch s.peek() {
	case ',':
		s.i++
		s.ws()
		return true, nil
	case ']':
		s.i++
		return false, nil
	}
	return false, errSyntax
}

// key reads a member name, the colon and the whitespace before the value.
func (s *scanner) key() (keyID, error) {
	if s.peek() != '"' {
		return kOther, errSyntax
	}
	start, end, esc, err := s.str()
	if err != nil {
		return kOther, err
	}
	name := s.b[start:end]
	if esc {
		var buf [24]byte
		name = unescapeSmall(name, buf[:0])
	}
	k := lookupKey(name)
	s.ws()
	if s.peek() != ':' {
		return kOther, errSyntax
	}
	s.i++
	s.ws()
	return k, nil
}

// str consumes a string at the read position (which holds '"') and returns
// the bounds of its raw contents and whether it holds escapes.
func (s *scanner) str() (start, end int, esc bool, err error) {
	b := s.b
	i := s.i + 1
	start = i
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, 0, false, errSyntax
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			return start, i, esc, nil
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, 0, false, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, 0, false, errSyntax
				}
				i += 6
			default:
				return 0, 0, false, errSyntax
			}
		default: // a control character
			return 0, 0, false, errSyntax
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unescapeSmall decodes the escapes of a short raw string into buf, for
// comparing it with ASCII names. A non-ASCII code point from a \u escape
// becomes the byte 0xFF, which matches no name. It returns nil when the
// result would not fit in buf's capacity (no name is that long).
func unescapeSmall(raw, buf []byte) []byte {
	for i := 0; i < len(raw); {
		if len(buf) == cap(buf) {
			return nil
		}
		c := raw[i]
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		// raw was validated by str: an escape is complete.
		switch e := raw[i+1]; e {
		case 'u':
			r := hexVal(raw[i+2])<<12 | hexVal(raw[i+3])<<8 | hexVal(raw[i+4])<<4 | hexVal(raw[i+5])
			if r < 0x80 {
				buf = append(buf, byte(r))
			} else {
				buf = append(buf, 0xFF)
			}
			i += 6
		case 'b':
			buf = append(buf, '\b')
			i += 2
		case 'f':
			buf = append(buf, '\f')
			i += 2
		case 'n':
			buf = append(buf, '\n')
			i += 2
		case 'r':
			buf = append(buf, '\r')
			i += 2
		case 't':
			buf = append(buf, '\t')
			i += 2
		default: // '"', '\\', '/'
			buf = append(buf, e)
			i += 2
		}
	}
	return buf
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c <= 'F':
		return rune(c-'A') + 10
	default:
		return rune(c-'a') + 10
	}
}

// value validates and skips any JSON value; depth is the nesting depth of
// the container holding it.
func (s *scanner) value(depth int) error {
	switch c := s.peek(); {
	case c == '"':
		_, _, _, err := s.str()
		return err
	case c == '{':
		more, err := s.objectStart(depth + 1)
		for err == nil && more {
			if _, err = s.key(); err == nil {
				if err = s.value(depth + 1); err == nil {
					more, err = s.objectNext()
				}
			}
		}
		return err
	case c == '[':
		more, err := s.arrayStart(depth + 1)
		for err == nil && more {
			if err = s.value(depth + 1); err == nil {
				more, err = s.arrayNext()
			}
		}
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, _, err := s.number()
		return err
	}
	return errSyntax
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return errSyntax
	}
	s.i += len(lit)
	return nil
}

// number consumes a JSON number. It returns the value when the number is a
// non-negative integer that fits in an int64 (isInt), in the manner of
// strconv.Atoi on the literal.
func (s *scanner) number() (v int64, isInt bool, err error) {
	b := s.b
	i := s.i
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return 0, false, errSyntax
	}
	isInt = true
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			d := int64(b[i] - '0')
			if v > (1<<63-1-d)/10 {
				isInt = false // overflows int64
			} else {
				v = v*10 + d
			}
			i++
		}
	default:
		return 0, false, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false, errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false, errSyntax
		}
	}
	s.i = i
	if neg && v != 0 {
		isInt = false // negative counts are not counts
	}
	if !isInt {
		v = 0
	}
	return v, isInt, nil
}

// nonEmptyString consumes a value and reports whether it is a non-empty string.
func (s *scanner) nonEmptyString(depth int) (bool, error) {
	if s.peek() != '"' {
		return false, s.value(depth)
	}
	start, end, _, err := s.str()
	return end > start, err
}

// nonEmptyArray consumes a value and reports whether it is a non-empty array.
func (s *scanner) nonEmptyArray(depth int) (bool, error) {
	if s.peek() != '[' {
		return false, s.value(depth)
	}
	more, err := s.arrayStart(depth + 1)
	nonEmpty := more
	for err == nil && more {
		if err = s.value(depth + 1); err == nil {
			more, err = s.arrayNext()
		}
	}
	return nonEmpty, err
}

// stringIs consumes a value and reports whether it is a string equal to want
// once decoded (want must be at most 24 bytes).
func (s *scanner) stringIs(depth int, want string) (bool, error) {
	if s.peek() != '"' {
		return false, s.value(depth)
	}
	start, end, esc, err := s.str()
	if err != nil {
		return false, err
	}
	if !esc {
		return string(s.b[start:end]) == want, nil
	}
	var buf [24]byte
	return string(unescapeSmall(s.b[start:end], buf[:0])) == want, nil
}

// tokenValue consumes a value and returns the raw contents of a string or
// the literal of a number; nil for anything else.
func (s *scanner) tokenValue(depth int) ([]byte, error) {
	switch c := s.peek(); {
	case c == '"':
		start, end, _, err := s.str()
		return s.b[start:end], err
	case c == '-' || '0' <= c && c <= '9':
		start := s.i
		_, _, err := s.number()
		return s.b[start:s.i], err
	}
	return nil, s.value(depth)
}

// choices consumes the value of "choices"; present is true for an array.
func (s *scanner) choices(depth int) (present, content, text, finish bool, err error) {
	if s.peek() != '[' {
		return false, false, false, false, s.value(depth)
	}
	more, err := s.arrayStart(depth + 1)
	for err == nil && more {
		var ct, tx, fin bool
		if ct, tx, fin, err = s.choice(depth + 1); err == nil {
			content = content || ct
			text = text || tx
			finish = finish || fin
			more, err = s.arrayNext()
		}
	}
	return true, content, text, finish, err
}

// choice consumes one element of "choices".
func (s *scanner) choice(depth int) (content, answer, finish bool, err error) {
	if s.peek() != '{' {
		return false, false, false, s.value(depth)
	}
	var delta, deltaText, text bool
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kDelta:
			delta, deltaText, err = s.delta(depth + 1)
		case kText:
			text, err = s.nonEmptyString(depth + 1)
		case kFinishReason:
			finish, err = s.nonEmptyString(depth + 1)
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return delta || text, deltaText || text, finish, err
}

// delta consumes the value of "delta" and reports whether it carries
// content of any kind, and whether it carries answer text.
func (s *scanner) delta(depth int) (any, text bool, err error) {
	if s.peek() != '{' {
		return false, false, s.value(depth)
	}
	var content, reasoningContent, reasoning, toolCalls, functionCall bool
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kContent:
			content, err = s.nonEmptyString(depth + 1)
		case kReasoningContent:
			reasoningContent, err = s.nonEmptyString(depth + 1)
		case kReasoning:
			reasoning, err = s.nonEmptyString(depth + 1)
		case kToolCalls:
			toolCalls, err = s.nonEmptyArray(depth + 1)
		case kFunctionCall:
			functionCall = s.peek() == '{'
			err = s.value(depth + 1)
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return content || reasoningContent || reasoning || toolCalls || functionCall, content, err
}

// usage consumes the value of "usage" into c's usage fields; c.Usage is
// true for an object. A repeated "usage" replaces the earlier one. Chat's
// members are prompt_tokens and completion_tokens with their details; the
// typed grammars' (typed) input_tokens and output_tokens with theirs, and
// Anthropic's cache reads and writes, which its input_tokens leaves out.
func (s *scanner) usage(depth int, c *Chunk, typed bool) error {
	c.Usage, c.PromptTokens, c.CompletionTokens, c.ReasoningTokens, c.CachedTokens = false, 0, 0, 0, 0
	if s.peek() != '{' {
		return s.value(depth)
	}
	c.Usage = true
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch {
		case typed:
			err = s.typedUsage(depth+1, k, c)
		case k == kPromptTokens:
			c.PromptTokens, err = s.count(depth + 1)
		case k == kCompletionTokens:
			c.CompletionTokens, err = s.count(depth + 1)
		case k == kPromptTokensDetails:
			c.CachedTokens, err = s.detail(depth+1, kCachedTokens)
		case k == kCompletionTokensDetails:
			c.ReasoningTokens, err = s.detail(depth+1, kReasoningTokens)
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return err
}

// typedUsage consumes the value of a typed grammar's usage member k.
func (s *scanner) typedUsage(depth int, k keyID, c *Chunk) error {
	var n int
	var err error
	switch k {
	case kInputTokensDetails:
		c.CachedTokens, err = s.detail(depth, kCachedTokens)
	case kOutputTokensDetails:
		c.ReasoningTokens, err = s.detail(depth, kReasoningTokens)
	case kInputTokens, kCacheCreationInputTokens:
		n, err = s.count(depth)
		c.PromptTokens += n
	case kCacheReadInputTokens:
		n, err = s.count(depth)
		c.PromptTokens += n
		c.CachedTokens = n
	case kOutputTokens:
		c.CompletionTokens, err = s.count(depth)
	default:
		err = s.value(depth)
	}
	return err
}

// detail consumes a usage details object and returns its member want when
// it is a non-negative integer, else 0.
func (s *scanner) detail(depth int, want keyID) (int, error) {
	if s.peek() != '{' {
		return 0, s.value(depth)
	}
	n := 0
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		if k == want {
			n, err = s.count(depth + 1)
		} else {
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return n, err
}

// count consumes a value and returns it when it is a non-negative integer.
func (s *scanner) count(depth int) (int, error) {
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, s.value(depth)
	}
	v, _, err := s.number()
	return int(v), err
}

// errorValue consumes the value of "error": any non-null value is an error;
// an object may name its type or code.
func (s *scanner) errorValue(depth int) (isErr bool, typ []byte, err error) {
	switch s.peek() {
	case 'n':
		return false, nil, s.value(depth)
	case '{':
	default:
		return true, nil, s.value(depth)
	}
	var code []byte
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kType:
			typ, err = s.tokenValue(depth + 1)
		case kCode:
			code, err = s.tokenValue(depth + 1)
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	if len(typ) == 0 {
		typ = code
	}
	return true, typ, err
}

// timings consumes the value of llama.cpp's "timings"; Present is true for
// an object. It is met once per response, so ParseFloat's cost is fine.
func (s *scanner) timings(depth int) (Timings, error) {
	if s.peek() != '{' {
		return Timings{}, s.value(depth)
	}
	t := Timings{Present: true, PromptMs: -1, PredictedMs: -1, CacheN: -1}
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kPromptMs:
			t.PromptMs, err = s.millis(depth + 1)
		case kPredictedMs:
			t.PredictedMs, err = s.millis(depth + 1)
		case kCacheN:
			if c := s.peek(); c == '-' || '0' <= c && c <= '9' {
				var v int64
				var isInt bool
				if v, isInt, err = s.number(); isInt {
					t.CacheN = int(v)
				}
			} else {
				err = s.value(depth + 1)
			}
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return t, err
}

// millis consumes a value and returns it when it is a non-negative number, else −1.
func (s *scanner) millis(depth int) (float64, error) {
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return -1, s.value(depth)
	}
	start := s.i
	if _, _, err := s.number(); err != nil {
		return -1, err
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil || v < 0 {
		return -1, nil
	}
	return v, nil
}
