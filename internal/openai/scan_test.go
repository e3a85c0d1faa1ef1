package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Typical chunks, as servers send them.
const (
	vllmChunk   = `{"id":"chatcmpl-7f3a","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`
	vllmRole    = `{"id":"chatcmpl-7f3a","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	openaiChunk = `{"id":"chatcmpl-AbC","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}],"usage":null}`
	openaiUsage = `{"id":"chatcmpl-AbC","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":64,"total_tokens":76,"prompt_tokens_details":{"cached_tokens":0}}}`
	ollamaChunk = `{"id":"chatcmpl-412","object":"chat.completion.chunk","created":1718000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":" sky"},"finish_reason":null}]}`
	// The typed grammars' per-token events, as OpenAI's Responses API and
	// Anthropic's Messages API send them.
	responsesDelta = `{"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_68a1f0c2d4e8b","output_index":0,"content_index":0,"delta":" world","logprobs":[]}`
	messagesDelta  = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`
	ollamaComp     = `{"id":"cmpl-87","object":"text_completion","created":1718000000,"choices":[{"text":" blue","index":0,"finish_reason":null}],"model":"llama3.2","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`
)

func TestScanChunk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Chunk
	}{
		{"vllm content", vllmChunk, Chunk{Content: true, Text: true, Choices: true}},
		{"vllm role only", vllmRole, Chunk{Choices: true}},
		{"role and null content", `{"choices":[{"delta":{"role":"assistant","content":null}}]}`, Chunk{Choices: true}},
		{"openai content, usage null", openaiChunk, Chunk{Content: true, Text: true, Choices: true}},
		{"openai usage chunk", openaiUsage, Chunk{Choices: true, Usage: true, PromptTokens: 12, CompletionTokens: 64}},
		{"ollama role repeated", ollamaChunk, Chunk{Content: true, Text: true, Choices: true}},
		{"ollama completions zero usage", ollamaComp, Chunk{Content: true, Text: true, Choices: true, Usage: true}},
		{"completions text", `{"choices":[{"text":"a"}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"completions empty text", `{"choices":[{"text":""}]}`, Chunk{Choices: true}},
		{"escaped quote is content", `{"choices":[{"delta":{"content":"\""}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"escaped NUL is content", `{"choices":[{"delta":{"content":"\u0000"}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"brace inside string", `{"choices":[{"delta":{"content":"}]}"}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"tool call delta", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}}]}`, Chunk{Content: true, Choices: true}},
		{"tool calls empty", `{"choices":[{"delta":{"tool_calls":[]}}]}`, Chunk{Choices: true}},
		{"tool calls null", `{"choices":[{"delta":{"content":null,"tool_calls":null}}]}`, Chunk{Choices: true}},
		{"function call", `{"choices":[{"delta":{"function_call":{"name":"f"}}}]}`, Chunk{Content: true, Choices: true}},
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, Chunk{Content: true, Choices: true}},
		{"reasoning", `{"choices":[{"delta":{"content":"","reasoning":"hm"}}]}`, Chunk{Content: true, Choices: true}},
		{"reasoning then text in one delta", `{"choices":[{"delta":{"reasoning_content":"hm","content":"x"}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"usage details", `{"usage":{"prompt_tokens":30,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":16,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":12,"accepted_prediction_tokens":0}}}`, Chunk{Usage: true, PromptTokens: 30, CompletionTokens: 20, CachedTokens: 16, ReasoningTokens: 12}},
		{"usage details null", `{"usage":{"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":-1}}}`, Chunk{Usage: true}},
		{"finish reason", `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, Chunk{Choices: true, Finish: true}},
		{"second choice has content", `{"choices":[{"delta":{}},{"delta":{"content":"x"}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"whitespace everywhere", " \t\r\n{ \"choices\" :\n[ { \"delta\" : { \"content\" : \"x\" } } ] , \"usage\" : { \"prompt_tokens\" : 3 , \"completion_tokens\" : 4 } }\r\n ", Chunk{Content: true, Text: true, Choices: true, Usage: true, PromptTokens: 3, CompletionTokens: 4}},
		{"usage before choices", `{"usage":{"completion_tokens":4,"prompt_tokens":3},"choices":[{"finish_reason":"length","delta":{"content":"x"}}]}`, Chunk{Content: true, Text: true, Choices: true, Finish: true, Usage: true, PromptTokens: 3, CompletionTokens: 4}},
		{"escaped key", `{"choices":[{"delta":{"cont\u0065nt":"x"}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"key differing in case", `{"choices":[{"delta":{"Content":"x"}}]}`, Chunk{Choices: true}},
		{"duplicate key, last wins (empty)", `{"choices":[{"delta":{"content":"x","content":""}}]}`, Chunk{Choices: true}},
		{"duplicate key, last wins (content)", `{"choices":[{"delta":{"content":"","content":"x"}}]}`, Chunk{Content: true, Text: true, Choices: true}},
		{"usage null", `{"choices":[],"usage":null}`, Chunk{Choices: true}},
		{"usage non-integer", `{"usage":{"prompt_tokens":1.5,"completion_tokens":-3}}`, Chunk{Usage: true}},
		{"usage exponent", `{"usage":{"prompt_tokens":1e2,"completion_tokens":"7"}}`, Chunk{Usage: true}},
		{"choices null", `{"choices":null}`, Chunk{}},
		{"choice not an object", `{"choices":[1,"x",null]}`, Chunk{Choices: true}},
		{"delta a string", `{"choices":[{"delta":"content"}]}`, Chunk{Choices: true}},
		{"error object", `{"error":{"message":"boom","type":"server_error","code":null}}`, Chunk{Error: true, ErrorType: []byte("server_error")}},
		{"error code only", `{"error":{"message":"boom","code":503}}`, Chunk{Error: true, ErrorType: []byte("503")}},
		{"error string", `{"error":"boom"}`, Chunk{Error: true}},
		{"error null", `{"error":null,"choices":[]}`, Chunk{Choices: true}},
		{"vllm object error", `{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}`, Chunk{Error: true, ErrorType: []byte("BadRequestError")}},
		{"object escaped error", `{"object":"\u0065rror","code":400}`, Chunk{Error: true, ErrorType: []byte("400")}},
		{"empty object", `{}`, Chunk{}},
		{"nested unknowns", `{"x":{"y":[1,-2.5e+3,true,false,null,{"z":"\ud83d\ude00"}]},"choices":[]}`, Chunk{Choices: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScanChunk([]byte(tt.in))
			if err != nil {
				t.Fatalf("ScanChunk: %v", err)
			}
			if !chunkEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if !json.Valid([]byte(tt.in)) {
				t.Errorf("test input is not valid JSON")
			}
		})
	}

	sad := []struct {
		name string
		in   string
		want error
	}{
		{"empty", ``, errSyntax},
		{"spaces", `   `, errSyntax},
		{"truncated", `{"choices":[{"delta":{"content":"a"`, errSyntax},
		{"truncated escape", `{"a":"\`, errSyntax},
		{"trailing garbage", `{"choices":[]}x`, errSyntax},
		{"two objects", `{}{}`, errSyntax},
		{"bad escape", `{"a":"\x"}`, errSyntax},
		{"short unicode escape", `{"a":"\u12"}`, errSyntax},
		{"raw control char", "{\"a\":\"x\ny\"}", errSyntax},
		{"raw tab", "{\"a\":\"x\ty\"}", errSyntax},
		{"leading zero", `{"a":01}`, errSyntax},
		{"bare minus", `{"a":-}`, errSyntax},
		{"dot without digits", `{"a":1.}`, errSyntax},
		{"exponent without digits", `{"a":1e}`, errSyntax},
		{"bad literal", `{"a":nul}`, errSyntax},
		{"missing colon", `{"a" 1}`, errSyntax},
		{"trailing comma", `{"a":1,}`, errSyntax},
		{"trailing comma in array", `{"a":[1,]}`, errSyntax},
		{"unquoted key", `{a:1}`, errSyntax},
		{"single quotes", `{'a':1}`, errSyntax},
		{"array top level", `[{"choices":[]}]`, errNotObject},
		{"string top level", `"data"`, errNotObject},
		{"done marker", `[DONE]`, errSyntax},
	}
	for _, tt := range sad {
		t.Run("sad/"+tt.name, func(t *testing.T) {
			got, err := ScanChunk([]byte(tt.in))
			if err != tt.want {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !chunkEqual(got, Chunk{}) {
				t.Errorf("got %+v on error, want zero Chunk", got)
			}
		})
	}
}

func chunkEqual(a, b Chunk) bool {
	return a.Content == b.Content && a.Text == b.Text && a.ReasoningTokens == b.ReasoningTokens && a.CachedTokens == b.CachedTokens && a.Choices == b.Choices && a.Finish == b.Finish &&
		a.Usage == b.Usage && a.PromptTokens == b.PromptTokens && a.CompletionTokens == b.CompletionTokens &&
		a.Error == b.Error && bytes.Equal(a.ErrorType, b.ErrorType)
}

// TestScanChunkDepth checks that ScanChunk accepts exactly the nesting
// encoding/json accepts.
func TestScanChunkDepth(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		t.Run(strconv.Itoa(depth), func(t *testing.T) {
			// depth containers in all: the top-level object plus depth-1 arrays.
			in := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
			_, err := ScanChunk([]byte(in))
			if valid := json.Valid([]byte(in)); (err == nil) != valid {
				t.Fatalf("ScanChunk err = %v, json.Valid = %v", err, valid)
			}
		})
	}
}

// reference decodes a chunk with encoding/json and applies the documented
// rules, for comparison with ScanChunk.
func reference(data []byte) (c Chunk, isObject bool) {
	var m map[string]any
	// Numbers as json.Number: 1E700 is valid JSON that overflows a
	// float64, and ScanChunk rightly accepts it (the fuzzer found it).
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if d.Decode(&m) != nil || m == nil { // "null" decodes into a nil map
		return c, false
	}
	nonEmptyString := func(v any) bool { s, ok := v.(string); return ok && s != "" }
	if choices, ok := m["choices"].([]any); ok {
		c.Choices = true
		for _, el := range choices {
			ch, ok := el.(map[string]any)
			if !ok {
				continue
			}
			if nonEmptyString(ch["text"]) {
				c.Content, c.Text = true, true
			}
			if nonEmptyString(ch["finish_reason"]) {
				c.Finish = true
			}
			if d, ok := ch["delta"].(map[string]any); ok {
				tc, _ := d["tool_calls"].([]any)
				_, fc := d["function_call"].(map[string]any)
				if nonEmptyString(d["content"]) {
					c.Text = true
				}
				if nonEmptyString(d["content"]) || nonEmptyString(d["reasoning_content"]) || nonEmptyString(d["reasoning"]) || len(tc) > 0 || fc {
					c.Content = true
				}
			}
		}
	}
	if _, ok := m["usage"].(map[string]any); ok {
		c.Usage = true // counts: see referenceUsage
	}
	c.Error = m["error"] != nil || m["object"] == "error"
	return c, true
}

// referenceUsage decodes usage counts with json.Number and strconv.Atoi.
func referenceUsage(data []byte) (prompt, completion, reasoning, cached int) {
	var m struct {
		Usage map[string]any `json:"usage"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return 0, 0, 0, 0
	}
	count := func(v any) int {
		n, ok := v.(json.Number)
		if !ok {
			return 0
		}
		i, err := strconv.Atoi(n.String())
		if err != nil || i < 0 {
			return 0
		}
		return i
	}
	detail := func(obj, name string) int {
		o, _ := m.Usage[obj].(map[string]any)
		return count(o[name])
	}
	return count(m.Usage["prompt_tokens"]), count(m.Usage["completion_tokens"]),
		detail("completion_tokens_details", "reasoning_tokens"), detail("prompt_tokens_details", "cached_tokens")
}

func FuzzScanChunk(f *testing.F) {
	for _, s := range []string{
		vllmChunk, vllmRole, openaiChunk, openaiUsage, ollamaChunk, ollamaComp,
		`{"choices":[{"delta":{"content":"\""}}]}`,
		`{"choices":[{"delta":{"content":"\u0000"}}]}`,
		`{"choices":[{"delta":{"content":""}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`,
		`{"choices":[{"delta":{"reasoning":"a","content":""}}]}`,
		`{"usage":{"completion_tokens_details":{"reasoning_tokens":3},"prompt_tokens_details":{"cached_tokens":2}}}`,
		`{"choices":[{"delta":{"cont\u0065nt":"x","content":""}}]}`,
		`{"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775808}}`,
		`{"object":"error","type":"x"}`,
		`{"error":{"type":"server_error"}}`,
		`{"a":[[[[]]]],"b":-0.0e-0}`,
		`{"choices":[{"delta":{"content":"a"`,
		`[1]`, ``, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ScanChunk(data)
		valid := json.Valid(data)
		if !valid {
			if err == nil {
				t.Fatalf("ScanChunk accepted invalid JSON %q", data)
			}
			return
		}
		want, isObject := reference(data)
		if !isObject {
			if err == nil {
				t.Fatalf("ScanChunk accepted a non-object %q", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("ScanChunk rejected valid JSON %q: %v", data, err)
		}
		if got.Content != want.Content || got.Text != want.Text || got.Choices != want.Choices || got.Finish != want.Finish ||
			got.Usage != want.Usage || got.Error != want.Error {
			t.Fatalf("ScanChunk(%q) = %+v, encoding/json says %+v", data, got, want)
		}
		if got.Usage {
			p, c, r, ca := referenceUsage(data)
			if got.PromptTokens != p || got.CompletionTokens != c || got.ReasoningTokens != r || got.CachedTokens != ca {
				t.Fatalf("ScanChunk(%q) usage = %d/%d/%d/%d, encoding/json says %d/%d/%d/%d", data,
					got.PromptTokens, got.CompletionTokens, got.ReasoningTokens, got.CachedTokens, p, c, r, ca)
			}
		}
	})
}

// BenchmarkScanEvent is each grammar's per-token event through ScanEvent,
// beside chat's (ScanChunk's cost plus the grammar switch).
func BenchmarkScanEvent(b *testing.B) {
	for _, bc := range []struct {
		name string
		g    Grammar
		in   string
	}{
		{"chat-vllm", GrammarChat, vllmChunk},
		{"responses", GrammarResponses, responsesDelta},
		{"messages", GrammarMessages, messagesDelta},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.in)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if c, _, _, err := ScanEvent(bc.g, data); err != nil || !c.Text {
					b.Fatal(err, c)
				}
			}
		})
	}
}

func BenchmarkScanChunk(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"vllm", vllmChunk},
		{"openai", openaiChunk},
		{"openai-usage", openaiUsage},
		{"ollama", ollamaChunk},
		{"ollama-completions", ollamaComp},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.in)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ScanChunk(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
