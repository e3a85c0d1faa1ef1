package simhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestDecodeShaping(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name string
		chat bool
		body string
		want func(*shaping) bool
	}{
		{"no shaping field is the plain path", true, `{` + msgs + `,"n":1,"logprobs":false}`, func(s *shaping) bool { return s == nil }},
		{"temperature 0 is the fixed text", true, `{` + msgs + `,"temperature":0,"seed":9}`, func(s *shaping) bool { return s.variant == 0 }},
		{"seed picks the sequence", true, `{` + msgs + `,"temperature":0.7,"seed":5}`, func(s *shaping) bool { return s.variant == 5 }},
		{"seed without temperature", true, `{` + msgs + `,"seed":-1}`, func(s *shaping) bool { return s.variant == textVariants-1 }},
		{"stop string", false, `{"prompt":"x","stop":"end"}`, func(s *shaping) bool { return len(s.stops) == 1 && s.stops[0] == "end" }},
		{"stop array without empties", true, `{` + msgs + `,"stop":["a","","b"]}`, func(s *shaping) bool { return len(s.stops) == 2 }},
		{"stop null", true, `{` + msgs + `,"stop":null,"temperature":1}`, func(s *shaping) bool { return s.stops == nil }},
		{"tools auto", true, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}]}`,
			func(s *shaping) bool { return len(s.tools) == 2 && s.parallel && s.forced == "" }},
		{"tool_choice none keeps text", true, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`, func(s *shaping) bool { return len(s.tools) == 0 }},
		{"tool_choice named", true, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"g"}},"parallel_tool_calls":false}`,
			func(s *shaping) bool { return s.forced == "g" && !s.parallel }},
		{"empty tools is text", true, `{` + msgs + `,"tools":[],"tool_choice":"auto"}`, func(s *shaping) bool { return len(s.tools) == 0 }},
		{"completions ignore tools", false, `{"prompt":"x","tools":"anything"}`, func(s *shaping) bool { return len(s.tools) == 0 }},
		{"json_object", true, `{` + msgs + `,"response_format":{"type":"json_object"}}`, func(s *shaping) bool { return s.format == formatJSONObject }},
		{"json_schema", false, `{"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}}}`,
			func(s *shaping) bool { return s.format == formatJSONSchema && string(s.schema) == `{"type":"object"}` }},
		{"text format", true, `{` + msgs + `,"response_format":{"type":"text"}}`, func(s *shaping) bool { return s.format == formatText }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := decodeRequest([]byte(tt.body), tt.chat)
			if err != nil {
				t.Fatalf("decodeRequest: %v", err)
			}
			if !tt.want(p.shape) {
				t.Errorf("shape = %+v", p.shape)
			}
		})
	}
}

func TestDecodeShapingErrors(t *testing.T) {
	const secret = "SECRET-CONTENT-42"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	fn := func(name string) string { return `{"type":"function","function":{"name":"` + name + `"}}` }
	tests := []struct {
		name, body, param string
	}{
		{"stop a number", `{` + msgs + `,"stop":5}`, "stop"},
		{"stop five strings", `{` + msgs + `,"stop":["a","b","c","d","` + secret + `"]}`, "stop"},
		{"stop array of objects", `{` + msgs + `,"stop":[{"x":"` + secret + `"}]}`, "stop"},
		{"temperature negative", `{` + msgs + `,"temperature":-1}`, "temperature"},
		{"temperature a string", `{` + msgs + `,"temperature":"hot"}`, "temperature"},
		{"seed fractional", `{` + msgs + `,"seed":1.5}`, "seed"},
		{"tools an object", `{` + msgs + `,"tools":{"name":"` + secret + `"}}`, "tools"},
		{"tool without function", `{` + msgs + `,"tools":[{"type":"function"}]}`, "tools"},
		{"tool of another type", `{` + msgs + `,"tools":[{"type":"retrieval","function":{"name":"f"}}]}`, "tools"},
		{"tool parameters not an object", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":"` + secret + `"}}]}`, "tools"},
		{"tool name too long", `{` + msgs + `,"tools":[` + fn(strings.Repeat("n", 300)) + `]}`, "tools"},
		{"tool_choice unknown mode", `{` + msgs + `,"tools":[` + fn("f") + `],"tool_choice":"` + secret + `"}`, "tool_choice"},
		{"tool_choice names an unknown function", `{` + msgs + `,"tools":[` + fn("f") + `],"tool_choice":{"type":"function","function":{"name":"` + secret + `"}}}`, "tool_choice"},
		{"tool_choice required without tools", `{` + msgs + `,"tool_choice":"required"}`, "tool_choice"},
		{"tool_choice a number", `{` + msgs + `,"tools":[` + fn("f") + `],"tool_choice":3}`, "tool_choice"},
		{"parallel_tool_calls a string", `{` + msgs + `,"parallel_tool_calls":"yes"}`, "parallel_tool_calls"},
		{"response_format a string", `{` + msgs + `,"response_format":"json"}`, "response_format"},
		{"response_format unknown type", `{` + msgs + `,"response_format":{"type":"` + secret + `"}}`, "response_format"},
		{"json_schema without json_schema", `{` + msgs + `,"response_format":{"type":"json_schema"}}`, "response_format"},
		{"json_schema schema a string", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":"` + secret + `"}}}`, "response_format"},
		{"json_schema schema an array", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":[1]}}}`, "response_format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeRequest([]byte(tt.body), true)
			if err == nil {
				t.Fatal("decodeRequest: want an error, got none")
			}
			if err.status != http.StatusBadRequest || err.param != tt.param {
				t.Errorf("status %d param %q, want 400 %q (message %q)", err.status, err.param, tt.param, err.message)
			}
			if strings.Contains(err.message, secret) {
				t.Errorf("the message echoes the request: %q", err.message)
			}
		})
	}
}

// TestTextVariants: variant 0 is the fixed text; the 2048 variants all
// differ within their first four tokens ("the" is two of the words), and every one repeats every 64
// tokens (after the first, which has no leading space).
func TestTextVariants(t *testing.T) {
	q := seqOf(0)
	for i := range 200 {
		if q.text(i) != tokenText(i) {
			t.Fatalf("variant 0 token %d = %q, want %q", i, q.text(i), tokenText(i))
		}
	}
	seen := map[string]int{}
	for v := range textVariants {
		q := seqOf(v)
		k := q.text(0) + q.text(1) + q.text(2) + q.text(3)
		if w, dup := seen[k]; dup {
			t.Fatalf("variants %d and %d start alike: %q", w, v, k)
		}
		seen[k] = v
		for i := 1; i < 70; i++ {
			if q.text(i) != q.text(i+len(words)) {
				t.Fatalf("variant %d does not repeat at token %d", v, i)
			}
		}
	}
}

func TestPlanStop(t *testing.T) {
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(tokenText(i))
		}
		return b.String()
	}
	tests := []struct {
		name      string
		stops     []string
		max       int
		wantText  string
		wantBound int // 0: no stop
	}{
		{"stop inside a token keeps its space", []string{"decode"}, 100, text(14) + " ", 15},
		{"stop at a token boundary", []string{"zzz", " per"}, 100, text(13), 13},
		{"the earliest of several", []string{"batch", "with"}, 100, text(3) + " ", 4},
		{"at the very start", []string{"the engine"}, 100, "", 1},
		{"across tokens", []string{"ne answ"}, 100, "the engi", 2},
		{"beyond max_tokens", []string{"decode"}, 14, "", 0},
		{"ends exactly at max_tokens", []string{"decode"}, 15, text(14) + " ", 15},
		{"never in the text", []string{"xyzzy"}, 1000, "", 0},
		{"only after the first period", []string{"now the engine"}, 1000, text(63) + " ", 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, bound := planAnswer(&shaping{stops: tt.stops}, true, tt.max, false, false, false, nil)
			if bound != tt.wantBound {
				t.Fatalf("bound %d, want %d", bound, tt.wantBound)
			}
			if bound == 0 {
				return
			}
			e := newEncoder(true, "id", 1, "m")
			e.ans = &a
			var body struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(e.body(nil, 1, bound, 0, -1, "stop"), &body); err != nil {
				t.Fatal(err)
			}
			if got := body.Choices[0].Message.Content; got != tt.wantText {
				t.Errorf("text %q, want %q", got, tt.wantText)
			}
		})
	}
	if _, bound := planAnswer(&shaping{stops: []string{"engine"}}, true, -5, false, false, false, nil); bound != 0 {
		t.Errorf("no content tokens (reasoning takes them all): bound %d, want 0", bound)
	}
	if _, bound := planAnswer(&shaping{stops: []string{"engine"}}, true, 100, true, false, false, nil); bound != 0 {
		t.Errorf("ignore-stop: bound %d, want 0", bound)
	}
}

// streamResult is a streamed response, assembled as a client would.
type streamResult struct {
	roles, contentChunks int
	content              string
	calls                []assembledCall
	finish               string
	stopReason           any
	usage                *usage
	done                 bool
}

type assembledCall struct {
	id, typ, name, args string
	heads, pieces       int // first deltas (with id) and argument pieces
}

func (e *env) streamOf(path, body string) streamResult {
	e.t.Helper()
	resp := e.post(path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs, err := readSSE(resp.Body)
	if err != nil {
		e.t.Fatalf("reading the stream: %v", err)
	}
	var r streamResult
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			r.done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta *struct {
					Role      *string          `json:"role"`
					Content   *string          `json:"content"`
					ToolCalls []map[string]any `json:"tool_calls"`
				} `json:"delta"`
				Text         *string `json:"text"`
				FinishReason *string `json:"finish_reason"`
				StopReason   any     `json:"stop_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			e.t.Fatalf("chunk %s: %v", ev.data, err)
		}
		if c.Usage != nil {
			r.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if d := ch.Delta; d != nil {
				if d.Role != nil {
					r.roles++
				} else if d.Content != nil && *d.Content != "" {
					r.content += *d.Content
					r.contentChunks++
				}
				for _, tc := range d.ToolCalls {
					i := int(tc["index"].(float64))
					for len(r.calls) <= i {
						r.calls = append(r.calls, assembledCall{})
					}
					a := &r.calls[i]
					if id, ok := tc["id"].(string); ok {
						a.id, a.heads = id, a.heads+1
						a.typ, _ = tc["type"].(string)
					}
					f := tc["function"].(map[string]any)
					if n, ok := f["name"].(string); ok {
						a.name += n
					}
					if s := f["arguments"].(string); s != "" {
						a.args += s
						a.pieces++
					}
				}
			}
			if ch.Text != nil && *ch.Text != "" {
				r.content += *ch.Text
				r.contentChunks++
			}
			if ch.FinishReason != nil {
				r.finish, r.stopReason = *ch.FinishReason, ch.StopReason
			}
		}
	}
	return r
}

// unaryBody is a non-streamed response.
type unaryBody struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason string  `json:"finish_reason"`
		StopReason   any     `json:"stop_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func (e *env) unaryOf(path, body string) unaryBody {
	e.t.Helper()
	resp := e.post(path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var u unaryBody
	if err := json.Unmarshal(b, &u); err != nil {
		e.t.Fatalf("body %s: %v", b, err)
	}
	return u
}

// text of a non-streamed answer: content (chat) or text (completions).
func (u unaryBody) text() string {
	c := u.Choices[0]
	if c.Message.Content != nil {
		return *c.Message.Content
	}
	if c.Text != nil {
		return *c.Text
	}
	return ""
}

// apis are the two endpoints with the request head each takes.
var apis = []struct{ name, path, head string }{
	{"chat", "/chat/completions", `"messages":[{"role":"user","content":"hello"}]`},
	{"completions", "/completions", `"prompt":"hello"`},
}

func TestStopOverHTTP(t *testing.T) {
	e := startServer(t, fastConfig())
	want := ""
	for i := range 14 {
		want += tokenText(i)
	}
	want += " " // "… one per" and the space before "decode"
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			body := `{` + api.head + `,"max_tokens":60,"stop":["decode","never-there"]`
			s := e.streamOf(api.path, body+`,"stream":true,"stream_options":{"include_usage":true}}`)
			if s.content != want || s.finish != "stop" || !s.done {
				t.Errorf("stream: %q finish %q done %v; want %q stop", s.content, s.finish, s.done, want)
			}
			if s.usage == nil || s.usage.CompletionTokens != s.contentChunks || s.contentChunks != 15 {
				t.Errorf("stream: usage %+v for %d content chunks, want 15", s.usage, s.contentChunks)
			}
			if s.stopReason != "decode" {
				t.Errorf("stream: stop_reason %v, want the matched string", s.stopReason)
			}
			u := e.unaryOf(api.path, body+`}`)
			if u.text() != want || u.Choices[0].FinishReason != "stop" || u.Usage.CompletionTokens != 15 || u.Choices[0].StopReason != "decode" {
				t.Errorf("unary: %q finish %q usage %+v stop_reason %v", u.text(), u.Choices[0].FinishReason, u.Usage, u.Choices[0].StopReason)
			}
			// Without a stop string the same request runs to max_tokens
			// (ignore_eos), and the text starts with the stopped one.
			full := e.unaryOf(api.path, `{`+api.head+`,"max_tokens":20,"ignore_eos":true}`)
			if !strings.HasPrefix(full.text(), want+"decode") || full.Choices[0].FinishReason != "length" || full.Choices[0].StopReason != nil {
				t.Errorf("no stop: %q finish %q stop_reason %v", full.text(), full.Choices[0].FinishReason, full.Choices[0].StopReason)
			}
			// A stop string past max_tokens does not stop anything.
			short := e.unaryOf(api.path, `{`+api.head+`,"max_tokens":5,"ignore_eos":true,"stop":"decode"}`)
			if short.Choices[0].FinishReason != "length" || short.Usage.CompletionTokens != 5 {
				t.Errorf("stop past max_tokens: finish %q usage %+v", short.Choices[0].FinishReason, short.Usage)
			}
		})
	}
}

func TestSamplingOverHTTP(t *testing.T) {
	e := startServer(t, fastConfig())
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			get := func(extra string) string {
				return e.unaryOf(api.path, `{`+api.head+`,"max_tokens":8,"ignore_eos":true`+extra+`}`).text()
			}
			fixed := get("")
			if fixed != "the engine answers with simulated tokens that look" {
				t.Errorf("no temperature: %q, want the fixed text", fixed)
			}
			if got := get(`,"temperature":0`); got != fixed {
				t.Errorf("temperature 0: %q, want the fixed text", got)
			}
			if a, b := get(`,"temperature":0.8,"seed":7`), get(`,"temperature":0.8,"seed":7`); a != b || a == fixed {
				t.Errorf("same seed: %q and %q, want equal and not the fixed text", a, b)
			}
			if a, b := get(`,"temperature":0.8,"seed":7`), get(`,"temperature":0.8,"seed":8`); a == b {
				t.Errorf("seeds 7 and 8 both gave %q", a)
			}
			seen := map[string]bool{}
			for range 3 {
				seen[get(`,"temperature":1`)] = true
			}
			if len(seen) < 2 {
				t.Errorf("three sampled answers without a seed were all %v", seen)
			}
			s := e.streamOf(api.path, `{`+api.head+`,"max_tokens":8,"ignore_eos":true,"temperature":0.8,"seed":7,"stream":true}`)
			if s.content != get(`,"temperature":0.8,"seed":7`) {
				t.Errorf("streamed seeded text %q differs from the body's", s.content)
			}
		})
	}
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}}`
const timeTool = `{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string","format":"date-time"}},"required":["zone"]}}}`
const emptyTool = `{"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}`

func TestToolCallsOverHTTP(t *testing.T) {
	e := startServer(t, fastConfig())
	const head = `"messages":[{"role":"user","content":"weather?"}]`
	weatherArgs := `{"city":"text","unit":"celsius"}`
	tests := []struct {
		name  string
		extra string
		names []string
		args  []string
	}{
		{"one tool", `"tools":[` + weatherTool + `]`, []string{"get_weather"}, []string{weatherArgs}},
		{"required", `"tools":[` + weatherTool + `],"tool_choice":"required"`, []string{"get_weather"}, []string{weatherArgs}},
		{"parallel", `"tools":[` + weatherTool + `,` + timeTool + `]`, []string{"get_weather", "get_time"}, []string{weatherArgs, `{"zone":"2026-01-01T00:00:00Z"}`}},
		{"parallel off", `"tools":[` + weatherTool + `,` + timeTool + `],"parallel_tool_calls":false`, []string{"get_weather"}, []string{weatherArgs}},
		{"named", `"tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":{"type":"function","function":{"name":"get_time"}}`, []string{"get_time"}, []string{`{"zone":"2026-01-01T00:00:00Z"}`}},
		{"empty arguments", `"tools":[` + emptyTool + `]`, []string{"ping"}, []string{`{}`}},
		{"no parameters", `"tools":[{"type":"function","function":{"name":"noop"}}]`, []string{"noop"}, []string{`{}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := e.streamOf("/chat/completions", `{`+head+`,`+tt.extra+`,"stream":true,"stream_options":{"include_usage":true}}`)
			if s.finish != "tool_calls" || !s.done || s.content != "" || s.roles != 1 {
				t.Errorf("stream: finish %q done %v content %q roles %d", s.finish, s.done, s.content, s.roles)
			}
			if len(s.calls) != len(tt.names) {
				t.Fatalf("stream: %d calls, want %d", len(s.calls), len(tt.names))
			}
			pieces := 0
			for i, c := range s.calls {
				if c.name != tt.names[i] || c.args != tt.args[i] || c.typ != "function" || c.heads != 1 || !strings.HasPrefix(c.id, "call_") {
					t.Errorf("stream call %d: %+v, want %s(%s)", i, c, tt.names[i], tt.args[i])
				}
				if len(c.args) > fragmentBytes && c.pieces < 2 {
					t.Errorf("stream call %d: arguments in %d piece(s), want several", i, c.pieces)
				}
				pieces += c.pieces
			}
			if s.usage == nil || s.usage.CompletionTokens != pieces {
				t.Errorf("stream: usage %+v, want %d completion tokens (the pieces)", s.usage, pieces)
			}
			u := e.unaryOf("/chat/completions", `{`+head+`,`+tt.extra+`}`)
			c := u.Choices[0]
			if c.FinishReason != "tool_calls" || c.Message.Content != nil || len(c.Message.ToolCalls) != len(tt.names) {
				t.Fatalf("unary: finish %q content %v calls %d", c.FinishReason, c.Message.Content, len(c.Message.ToolCalls))
			}
			for i, tc := range c.Message.ToolCalls {
				if tc.Function.Name != tt.names[i] || tc.Function.Arguments != tt.args[i] || tc.Type != "function" || !strings.HasPrefix(tc.ID, "call_") {
					t.Errorf("unary call %d: %+v", i, tc)
				}
			}
			if u.Usage.CompletionTokens != pieces {
				t.Errorf("unary: usage %+v, want %d", u.Usage, pieces)
			}
		})
	}
	t.Run("tool_choice none answers text", func(t *testing.T) {
		u := e.unaryOf("/chat/completions", `{`+head+`,"tools":[`+weatherTool+`],"tool_choice":"none","max_tokens":3,"ignore_eos":true}`)
		if u.text() != "the engine answers" || len(u.Choices[0].Message.ToolCalls) != 0 {
			t.Errorf("text %q calls %d", u.text(), len(u.Choices[0].Message.ToolCalls))
		}
	})
	t.Run("max_tokens cuts the arguments", func(t *testing.T) {
		s := e.streamOf("/chat/completions", `{`+head+`,"tools":[`+weatherTool+`],"max_tokens":3,"stream":true}`)
		if s.finish != "length" || len(s.calls) != 1 || json.Valid([]byte(s.calls[0].args)) || s.calls[0].pieces != 3 {
			t.Errorf("finish %q calls %+v", s.finish, s.calls)
		}
	})
}

func TestResponseFormatOverHTTP(t *testing.T) {
	e := startServer(t, fastConfig())
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":18},"tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name","age","tags"],"additionalProperties":false}`
	want := `{"name":"text","age":18,"tags":["a"]}`
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			rf := `"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":` + schema + `,"strict":true}}`
			s := e.streamOf(api.path, `{`+api.head+`,`+rf+`,"stream":true,"stream_options":{"include_usage":true}}`)
			if s.content != want || s.finish != "stop" || !s.done {
				t.Errorf("stream: %s finish %q, want %s", s.content, s.finish, want)
			}
			if s.contentChunks < 2 || s.usage == nil || s.usage.CompletionTokens != s.contentChunks {
				t.Errorf("stream: %d chunks, usage %+v", s.contentChunks, s.usage)
			}
			u := e.unaryOf(api.path, `{`+api.head+`,`+rf+`}`)
			if u.text() != want || u.Choices[0].FinishReason != "stop" {
				t.Errorf("unary: %s finish %q", u.text(), u.Choices[0].FinishReason)
			}
			cut := e.unaryOf(api.path, `{`+api.head+`,`+rf+`,"max_tokens":4}`)
			if cut.text() != want[:16] || cut.Choices[0].FinishReason != "length" || cut.Usage.CompletionTokens != 4 {
				t.Errorf("cut: %s finish %q usage %+v", cut.text(), cut.Choices[0].FinishReason, cut.Usage)
			}
			obj := e.unaryOf(api.path, `{`+api.head+`,"response_format":{"type":"json_object"}}`)
			var m map[string]any
			if json.Unmarshal([]byte(obj.text()), &m) != nil || len(m) == 0 {
				t.Errorf("json_object: %q is not an object", obj.text())
			}
		})
	}
	t.Run("large schema", func(t *testing.T) {
		raw, err := readTestdata("invoice.schema.json")
		if err != nil {
			t.Fatal(err)
		}
		u := e.unaryOf("/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"invoice","schema":`+raw+`}}}`)
		if u.text() != string(schemaInstance(json.RawMessage(raw), false)) || u.Choices[0].FinishReason != "stop" {
			t.Errorf("invoice: %s finish %q", u.text(), u.Choices[0].FinishReason)
		}
	})
}

func TestShapingBadRequestsOverHTTP(t *testing.T) {
	e := startServer(t, fastConfig())
	for _, tt := range []struct{ body, param string }{
		{`{"messages":[{"role":"user","content":"x"}],"stop":{"a":1}}`, "stop"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "tools"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"other"}}}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":7}}}`, "response_format"},
	} {
		resp := e.post("/chat/completions", tt.body)
		var eb struct {
			Error struct {
				Message string `json:"message"`
				Param   string `json:"param"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		err := json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || eb.Error.Param != tt.param || eb.Error.Code != 400 || eb.Error.Message == "" {
			t.Errorf("%s: status %d, error %+v (%v), want 400 naming %s", tt.body, resp.StatusCode, eb.Error, err, tt.param)
		}
	}
}

// TestShapingWithReasoning: reasoning tokens come first and count toward
// max_tokens; a stop string and tool calls apply to what follows.
func TestShapingWithReasoning(t *testing.T) {
	cfg := fastConfig()
	cfg.ReasoningTokens = 4
	e := startServer(t, cfg)
	u := e.unaryOf("/chat/completions", `{`+chatHead+`,"max_tokens":30,"stop":"with"}`)
	if u.text() != "the engine answers " || u.Choices[0].FinishReason != "stop" || u.Usage.CompletionTokens != 4+4 {
		t.Errorf("stop after reasoning: %q finish %q usage %+v", u.text(), u.Choices[0].FinishReason, u.Usage)
	}
	if u := e.unaryOf("/chat/completions", `{`+chatHead+`,"max_tokens":3,"stop":"with"}`); u.Choices[0].FinishReason != "length" || u.Usage.CompletionTokens != 3 {
		t.Errorf("reasoning takes every token: finish %q usage %+v", u.Choices[0].FinishReason, u.Usage)
	}
	s := e.streamOf("/chat/completions", `{`+chatHead+`,"tools":[`+emptyTool+`],"stream":true,"stream_options":{"include_usage":true}}`)
	if len(s.calls) != 1 || s.calls[0].args != "{}" || s.finish != "tool_calls" || s.usage.CompletionTokens != 4+1 {
		t.Errorf("tools after reasoning: calls %+v finish %q usage %+v", s.calls, s.finish, s.usage)
	}
}
