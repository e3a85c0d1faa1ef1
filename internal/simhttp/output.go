package simhttp

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// Limits of the output-shaping fields, as OpenAI documents them.
const (
	maxStops     = 4   // stop strings per request
	maxTools     = 128 // tools per request
	maxToolCalls = 8   // parallel calls answered at most
	maxToolName  = 256 // bytes of a function name
	// fragmentBytes is the size of one generated piece of JSON (a tool
	// call's arguments, structured content): one token of the engine.
	fragmentBytes = 4
	// textVariants is the number of distinct word sequences (see textSeq).
	textVariants = 64 * 32
)

// shaping holds what a request asked of its output beyond its length:
// sampling, stop strings, tools and response_format. nil on a request
// that sets none of them (the plain path).
type shaping struct {
	variant  int      // word sequence, textSeq.variant; 0 = the fixed text
	stops    []string // non-empty stop strings
	tools    []tool   // chat: the functions offered, when tool_choice lets the model call them
	forced   string   // tool_choice names this function ("" = none named)
	parallel bool     // parallel_tool_calls (default true)
	format   int      // formatText, formatJSONObject, formatJSONSchema
	schema   json.RawMessage
}

// The response formats.
const (
	formatText = iota
	formatJSONObject
	formatJSONSchema
)

// tool is one function of a request's tools.
type tool struct {
	name   string
	params json.RawMessage // its "parameters" schema; nil when absent
}

// decodeShaping reads the output-shaping fields of w into p.shape (nil
// when none is set). Errors name the parameter, never its content.
func decodeShaping(w *wireRequest, p *parsedRequest) *apiError {
	if w.Temperature == nil && w.Seed == nil && absent(w.Stop) && absent(w.Tools) &&
		absent(w.ToolChoice) && absent(w.ResponseFormat) {
		return nil
	}
	sh := &shaping{parallel: w.ParallelToolCalls == nil || *w.ParallelToolCalls}
	var err *apiError
	if sh.variant, err = variantOf(w.Temperature, w.Seed); err != nil {
		return err
	}
	if sh.stops, err = decodeStop(w.Stop, "stop", maxStops); err != nil {
		return err
	}
	if p.api == apiChat {
		if err := decodeTools(w, sh); err != nil {
			return err
		}
	}
	if err := decodeFormat(w.ResponseFormat, sh); err != nil {
		return err
	}
	p.shape = sh
	return nil
}

// variantOf picks the word sequence of a request's sampling: greedy
// decoding (temperature 0, or neither field) is the fixed text, a seed
// picks a sequence, sampling without a seed a random one.
func variantOf(temperature *float64, seed *int64) (int, *apiError) {
	if temperature != nil && *temperature < 0 {
		return 0, badRequest("temperature", "temperature must be ≥ 0")
	}
	switch greedy := temperature != nil && *temperature == 0; {
	case greedy:
	case seed != nil:
		return int(((*seed % textVariants) + textVariants) % textVariants), nil
	case temperature != nil:
		return rand.IntN(textVariants), nil
	}
	return 0, nil
}

// decodeStop reads the stop strings of field param: null, a string, or
// an array of at most limit strings. Empty strings stop nothing and are
// dropped.
func decodeStop(raw json.RawMessage, param string, limit int) ([]string, *apiError) {
	if absent(raw) {
		return nil, nil
	}
	var stops []string
	var one string
	if json.Unmarshal(raw, &one) == nil {
		stops = []string{one}
	} else if json.Unmarshal(raw, &stops) != nil {
		return nil, badRequest(param, "%s must be a string or an array of strings", param)
	}
	if len(stops) > limit {
		return nil, badRequest(param, "%s takes at most %d strings, got %d", param, limit, len(stops))
	}
	out := stops[:0]
	for _, s := range stops {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// wireTool is one entry of tools.
type wireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// decodeTools reads tools, tool_choice and parallel_tool_calls (chat).
// Tools are kept only when tool_choice lets the model call them.
func decodeTools(w *wireRequest, sh *shaping) *apiError {
	var tools []wireTool
	if !absent(w.Tools) {
		if json.Unmarshal(w.Tools, &tools) != nil {
			return badRequest("tools", "tools must be an array of {\"type\":\"function\",\"function\":{…}} objects")
		}
		if len(tools) > maxTools {
			return badRequest("tools", "tools takes at most %d entries, got %d", maxTools, len(tools))
		}
	}
	for i, t := range tools {
		switch {
		case t.Type != "function":
			return badRequest("tools", "tools[%d].type must be \"function\"", i)
		case t.Function == nil || t.Function.Name == "":
			return badRequest("tools", "tools[%d].function.name is required", i)
		case len(t.Function.Name) > maxToolName:
			return badRequest("tools", "tools[%d].function.name is longer than %d bytes", i, maxToolName)
		case !absent(t.Function.Parameters) && bytes.TrimSpace(t.Function.Parameters)[0] != '{':
			return badRequest("tools", "tools[%d].function.parameters must be a JSON Schema object", i)
		}
	}
	mode := "auto"
	if !absent(w.ToolChoice) {
		var named struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(w.ToolChoice, &mode) == nil:
			if mode != "none" && mode != "auto" && mode != "required" {
				return badRequest("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or a named function")
			}
		case json.Unmarshal(w.ToolChoice, &named) == nil && named.Type == "function" && named.Function != nil && named.Function.Name != "":
			mode, sh.forced = "named", named.Function.Name
		default:
			return badRequest("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":…}}")
		}
	}
	if len(tools) == 0 {
		if mode == "required" || mode == "named" {
			return badRequest("tool_choice", "tool_choice %s needs tools", map[bool]string{true: "\"required\"", false: "naming a function"}[mode == "required"])
		}
		return nil
	}
	if mode == "none" {
		return nil
	}
	for _, t := range tools {
		sh.tools = append(sh.tools, tool{name: t.Function.Name, params: t.Function.Parameters})
	}
	if mode == "named" {
		for _, t := range sh.tools {
			if t.name == sh.forced {
				return nil
			}
		}
		return badRequest("tool_choice", "tool_choice names a function that is not in tools")
	}
	return nil
}

// decodeFormat reads response_format: {"type":"text"}, {"type":
// "json_object"} or {"type":"json_schema","json_schema":{"name":…,
// "schema":{…},"strict":…}}.
func decodeFormat(raw json.RawMessage, sh *shaping) *apiError {
	if absent(raw) {
		return nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return badRequest("response_format", "response_format must be an object with a type")
	}
	switch f.Type {
	case "text":
	case "json_object":
		sh.format = formatJSONObject
	case "json_schema":
		if f.JSONSchema == nil {
			return badRequest("response_format", "response_format json_schema needs a json_schema object")
		}
		s := bytes.TrimSpace(f.JSONSchema.Schema)
		if len(s) > 0 && !absent(s) && s[0] != '{' && string(s) != "true" {
			return badRequest("response_format", "response_format json_schema.schema must be a JSON Schema object")
		}
		sh.format, sh.schema = formatJSONSchema, f.JSONSchema.Schema
	default:
		return badRequest("response_format", "response_format type must be \"text\", \"json_object\" or \"json_schema\"")
	}
	return nil
}

// textSeq is the word sequence of a plain-text answer: token i reads
// words[(start + i×stride) mod 64], with a leading space after the first.
// Variant 0 (start 0, stride 1) is the fixed text of every greedy or
// unsampled request; variant v has start v mod 64 and the odd stride
// 2⌊v/64⌋+1, so every one of the 2048 variants repeats every 64 tokens.
type textSeq struct{ start, stride uint }

func seqOf(variant int) textSeq {
	v := uint(variant) % textVariants
	return textSeq{start: v % uint(len(words)), stride: 2*(v/uint(len(words))) + 1}
}

// text returns the text of token i (0-based).
func (q textSeq) text(i int) string {
	w := (q.start + uint(i)*q.stride) % uint(len(words))
	if i == 0 {
		return words[w]
	}
	return spaced[w]
}

// answer is what one request's output is, decided before it is submitted:
// the plain text (its sequence and where a stop string ends it), or
// pieces of JSON (structured content or tool calls). The engine decides
// only how many tokens come and when.
type answer struct {
	seq textSeq
	// send is the number of content tokens sent when a stop string ends
	// the text (-1: no stop), the last of them cut to cut bytes when the
	// stop string starts inside it (0: whole).
	send, cut int
	stopJSON  []byte // the matched stop string as JSON, for stop_reason

	// frags are the JSON pieces, one per token, escaped for a JSON
	// string; fragCall the tool call of each (nil: content).
	frags    [][]byte
	fragCall []int
	calls    []toolCall
}

// toolCall is one generated call.
type toolCall struct {
	id   string
	name []byte // JSON-escaped, without quotes
	args []byte // the arguments' JSON (shared: never modified); broken by the bad-tool-args quirk
}

// json reports whether the answer is JSON pieces rather than text.
func (a *answer) json() bool { return a.frags != nil }

// tools reports whether the answer is tool calls.
func (a *answer) tools() bool { return a.calls != nil }

// planAnswer decides the answer of p for an engine limit of maxTokens
// content tokens. It returns the engine's bound: the tokens to generate
// when the answer decides them (stop, JSON), 0 when the engine decides.
// brokenArgs and violate are the bad-tool-args and schema-violations
// quirks; noStop ignore-stop. Instances come from cache (nil: none).
func planAnswer(sh *shaping, chat bool, maxTokens int, noStop, brokenArgs, violate bool, cache *instanceCache) (answer, int) {
	a := answer{seq: seqOf(sh.variant), send: -1}
	switch {
	case len(sh.tools) > 0:
		a.planTools(sh, brokenArgs, cache)
		return a, len(a.frags)
	case sh.format == formatJSONObject:
		a.frags = fragments(a.frags, []byte(`{"text":"the engine answers with simulated tokens"}`))
		return a, len(a.frags)
	case sh.format == formatJSONSchema:
		a.frags = fragments(a.frags, cache.instance(sh.schema, violate))
		return a, len(a.frags)
	case len(sh.stops) > 0 && !noStop:
		if n := a.planStop(sh.stops, maxTokens); n > 0 {
			return a, n
		}
	}
	return a, 0
}

// planStop finds the first stop string in the first maxTokens tokens of
// the text. It returns the tokens the engine must generate to reach it
// (at least 1), or 0 when no stop string occurs.
func (a *answer) planStop(stops []string, maxTokens int) int {
	if maxTokens <= 0 { // reasoning takes every token: no text to stop
		return 0
	}
	longest := 0
	for _, s := range stops {
		longest = max(longest, len(s))
	}
	// The text repeats every 64 tokens after the first, and a string of
	// L bytes spans at most L+1 tokens: a stop that occurs at all
	// occurs within the first 64 + L + 2 tokens.
	window := min(maxTokens, len(words)+longest+2)
	var text strings.Builder
	starts := make([]int, window)
	for i := range window {
		starts[i] = text.Len()
		text.WriteString(a.seq.text(i))
	}
	at, which := -1, ""
	for _, s := range stops {
		if i := strings.Index(text.String(), s); i >= 0 && (at < 0 || i < at) {
			at, which = i, s
		}
	}
	if at < 0 {
		return 0
	}
	a.send = 0 // tokens starting before the stop
	for a.send < window && starts[a.send] < at {
		a.send++
	}
	if a.send > 0 {
		if last := starts[a.send-1]; last+len(a.seq.text(a.send-1)) > at {
			a.cut = at - last
		}
	}
	a.stopJSON = appendJSONString(nil, which)
	return max(a.send, 1)
}

// planTools decides the calls: the named function, else one call per
// tool (at most maxToolCalls) when there are several and parallel calls
// are allowed, else the first tool. Each call's arguments are an
// instance of its parameters' schema.
func (a *answer) planTools(sh *shaping, broken bool, cache *instanceCache) {
	pick := sh.tools[:1]
	switch {
	case sh.forced != "":
		for i, t := range sh.tools {
			if t.name == sh.forced {
				pick = sh.tools[i : i+1]
				break
			}
		}
	case len(sh.tools) > 1 && sh.parallel:
		pick = sh.tools[:min(len(sh.tools), maxToolCalls)]
	}
	a.frags = [][]byte{}
	for c, t := range pick {
		args := []byte("{}")
		if !absent(t.params) {
			args = cache.instance(t.params, false)
		}
		if broken && len(args) > 0 { // the closing brace never comes
			args = args[:len(args)-1]
		}
		n := len(a.frags)
		a.frags = fragments(a.frags, args)
		for range len(a.frags) - n {
			a.fragCall = append(a.fragCall, c)
		}
		name := appendJSONString(nil, t.name)
		a.calls = append(a.calls, toolCall{id: callID(), name: name[1 : len(name)-1], args: args})
	}
}

// callID is a tool call's id in OpenAI's shape: "call_" and 24 letters
// and digits.
func callID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := []byte("call_000000000000000000000000")
	for i := 5; i < len(b); i++ {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// fragments appends js cut into pieces of fragmentBytes (whole UTF-8
// characters), each escaped as the inside of a JSON string. An empty js
// is one empty piece.
func fragments(dst [][]byte, js []byte) [][]byte {
	if len(js) == 0 {
		return append(dst, []byte{})
	}
	for len(js) > 0 {
		n := min(fragmentBytes, len(js))
		for n < len(js) && !utf8.RuneStart(js[n]) {
			n++
		}
		q := appendJSONString(nil, string(js[:n]))
		dst = append(dst, q[1:len(q)-1])
		js = js[n:]
	}
	return dst
}

// joined is the text of the first n pieces.
func (a *answer) joined(dst []byte, n int) []byte {
	for _, f := range a.frags[:min(n, len(a.frags))] {
		dst = append(dst, f...)
	}
	return dst
}

// stopReason is vLLM's stop_reason of a finish: the matched stop string
// (JSON), or nil for null.
func (a *answer) stopReason(reason string) []byte {
	if reason == "stop" {
		return a.stopJSON
	}
	return nil
}
