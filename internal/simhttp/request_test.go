package simhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestEstimatePromptTokens(t *testing.T) {
	tests := []struct {
		name  string
		chat  bool
		texts []string
		want  int
	}{
		{"empty completion is one token", false, []string{""}, 1},
		{"no text at all is one token", false, nil, 1},
		{"four bytes one token", false, []string{"abcd"}, 1},
		{"five bytes two tokens", false, []string{"abcde"}, 2},
		{"bytes not runes", false, []string{"ééé"}, 2}, // 6 bytes
		{"chat one message", true, []string{"abcdefgh"}, 2 + ChatTokensPerMessage + ChatReplyPrimerTokens},
		{"chat rounds per message", true, []string{"a", "b"}, 1 + 1 + 2*ChatTokensPerMessage + ChatReplyPrimerTokens},
		{"chat empty message still costs the template", true, []string{""}, ChatTokensPerMessage + ChatReplyPrimerTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimatePromptTokens(tt.chat, tt.texts...); got != tt.want {
				t.Errorf("EstimatePromptTokens(%v, %q) = %d, want %d", tt.chat, tt.texts, got, tt.want)
			}
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	chatTpl := ChatTokensPerMessage + ChatReplyPrimerTokens
	tests := []struct {
		name string
		chat bool
		body string
		want parsedRequest
	}{
		{"chat minimal", true, `{"messages":[{"role":"user","content":"12345678"}]}`,
			parsedRequest{api: apiChat, promptTokens: 2 + chatTpl}},
		{"chat all fields", true, `{"model":"m","messages":[{"role":"user","content":"abcd"}],"max_tokens":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"temperature":0.5,"stop":["x"],"n":1,"tools":[]}`,
			parsedRequest{api: apiChat, model: "m", promptTokens: 1 + chatTpl, maxTokens: 7, ignoreEOS: true, stream: true, includeUsage: true}},
		{"max_completion_tokens wins", true, `{"messages":[{"role":"user","content":""}],"max_tokens":7,"max_completion_tokens":9}`,
			parsedRequest{api: apiChat, promptTokens: chatTpl, maxTokens: 9}},
		{"content parts count text only", true, `{"messages":[{"role":"user","content":[{"type":"text","text":"abcdefgh"},{"type":"refusal","refusal":"x"}]}]}`,
			parsedRequest{api: apiChat, promptTokens: 2 + chatTpl}},
		{"null content", true, `{"messages":[{"role":"assistant","content":null,"tool_calls":[]},{"role":"user","content":"abcd"}]}`,
			parsedRequest{api: apiChat, promptTokens: 1 + 2*ChatTokensPerMessage + ChatReplyPrimerTokens}},
		{"escaped content counts decoded bytes", true, `{"messages":[{"role":"user","content":"\u0041\u0042\u0043\u0044\u0045"}]}`,
			parsedRequest{api: apiChat, promptTokens: 2 + chatTpl}},
		{"stream without options", true, `{"messages":[{"role":"user","content":"a"}],"stream":true}`,
			parsedRequest{api: apiChat, promptTokens: 1 + chatTpl, stream: true}},
		{"null max_tokens is absent", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":null}`,
			parsedRequest{api: apiChat, promptTokens: 1 + chatTpl}},
		{"completion string", false, `{"prompt":"abcdefghi","max_tokens":3}`,
			parsedRequest{promptTokens: 3, maxTokens: 3}},
		{"completion one string in array", false, `{"prompt":["abcd"]}`, parsedRequest{promptTokens: 1}},
		{"completion token ids", false, `{"prompt":[1,2,3,4,5]}`, parsedRequest{promptTokens: 5}},
		{"completion nested token ids", false, `{"prompt":[[1,2,3]]}`, parsedRequest{promptTokens: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeRequest([]byte(tt.body), tt.chat)
			if err != nil {
				t.Fatalf("decodeRequest: unexpected error %v", err)
			}
			got.shape = nil // the output-shaping fields: TestDecodeShaping
			if got != tt.want {
				t.Errorf("decodeRequest = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name      string
		chat      bool
		body      string
		wantParam string
	}{
		{"not json", true, `{"messages":`, ""},
		{"empty body", true, ``, ""},
		{"array body", true, `[]`, ""},
		{"missing messages", true, `{"model":"x"}`, "messages"},
		{"null messages", true, `{"messages":null}`, "messages"},
		{"empty messages", true, `{"messages":[]}`, "messages"},
		{"messages not array", true, `{"messages":"hi"}`, "messages"},
		{"message without role", true, `{"messages":[{"content":"hi"}]}`, "messages"},
		{"content a number", true, `{"messages":[{"role":"user","content":5}]}`, "messages"},
		{"content parts malformed", true, `{"messages":[{"role":"user","content":[1]}]}`, "messages"},
		{"max_tokens zero", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":0}`, "max_tokens"},
		{"max_tokens negative", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":-3}`, "max_tokens"},
		{"max_completion_tokens zero", true, `{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":0}`, "max_completion_tokens"},
		{"max_tokens absurd", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":99999999999}`, "max_tokens"},
		{"max_tokens overflows int64", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":1e30}`, "max_tokens"},
		{"max_tokens a string", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":"5"}`, "max_tokens"},
		{"max_tokens fractional", true, `{"messages":[{"role":"user","content":"a"}],"max_tokens":2.5}`, "max_tokens"},
		{"stream a string", true, `{"messages":[{"role":"user","content":"a"}],"stream":"yes"}`, "stream"},
		{"stream_options without stream", true, `{"messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}}`, "stream_options"},
		{"missing prompt", false, `{"max_tokens":3}`, "prompt"},
		{"empty id prompt", false, `{"prompt":[]}`, "prompt"},
		{"batched prompts", false, `{"prompt":["a","b"]}`, "prompt"},
		{"batched id prompts", false, `{"prompt":[[1],[2]]}`, "prompt"},
		{"prompt an object", false, `{"prompt":{"text":"a"}}`, "prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeRequest([]byte(tt.body), tt.chat)
			if err == nil {
				t.Fatal("decodeRequest: want an error, got none")
			}
			if err.status != http.StatusBadRequest || err.typ != "BadRequestError" {
				t.Errorf("status, type = %d, %q; want 400, BadRequestError", err.status, err.typ)
			}
			if err.param != tt.wantParam {
				t.Errorf("param = %q, want %q (message %q)", err.param, tt.wantParam, err.message)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		p          parsedRequest
		wantStatus int // 0: valid
		wantMax    int
	}{
		{"served model", parsedRequest{model: "m", promptTokens: 10, maxTokens: 5}, 0, 5},
		{"no model means the served one", parsedRequest{promptTokens: 10, maxTokens: 5}, 0, 5},
		{"default max_tokens fills the context", parsedRequest{promptTokens: 10}, 0, 90},
		{"exactly the context", parsedRequest{promptTokens: 10, maxTokens: 90}, 0, 90},
		{"unknown model", parsedRequest{model: "gpt-x", promptTokens: 10, maxTokens: 5}, http.StatusNotFound, 0},
		{"over the context", parsedRequest{promptTokens: 10, maxTokens: 91}, http.StatusBadRequest, 0},
		{"prompt fills the context", parsedRequest{promptTokens: 100}, http.StatusBadRequest, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			err := p.validate("m", 100)
			switch {
			case tt.wantStatus == 0 && err != nil:
				t.Fatalf("validate: unexpected error %v", err)
			case tt.wantStatus != 0 && err == nil:
				t.Fatalf("validate: want status %d, got no error", tt.wantStatus)
			case err != nil && err.status != tt.wantStatus:
				t.Fatalf("validate: status %d, want %d", err.status, tt.wantStatus)
			case err == nil && p.maxTokens != tt.wantMax:
				t.Errorf("maxTokens = %d, want %d", p.maxTokens, tt.wantMax)
			}
		})
	}
	p := parsedRequest{model: "gpt-x"}
	if err := p.validate("m", 100); err == nil || err.message != "The model `gpt-x` does not exist." {
		t.Errorf("unknown model message = %v, want vLLM's", err)
	}
	p = parsedRequest{model: strings.Repeat("x", 10000)}
	if err := p.validate("m", 100); err == nil || len(err.message) > 300 {
		t.Errorf("a long unknown model name must be truncated in the message, got %d bytes", len(err.message))
	}
}

// FuzzDecodeRequest checks that no body makes the decoder panic, and that
// an accepted request always has a positive prompt and a non-negative
// max_tokens. The seed corpus runs as a normal test.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []string{
		`{"messages":[{"role":"user","content":"hello"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"messages":[{"role":"user","content":null}]}`,
		`{"prompt":"hi","max_tokens":1}`,
		`{"prompt":[[1,2]]}`,
		`{"prompt":[1,2,3]}`,
		`{"messages":[{"role":"user","content":"\ud800"}]}`,
		`{"max_tokens":-1}`,
		`{"max_tokens":1e400}`,
		`{"messages":`,
		`null`,
		`[{}]`,
		"\x00\xff",
		``,
		`{"messages":[{"role":"user","content":"a"}],"stop":["engine","x"],"temperature":0.5,"seed":3}`,
		`{"prompt":"a","stop":"the","max_tokens":4}`,
		`{"messages":[{"role":"user","content":"a"}],"stop":[1]}`,
		`{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"$ref":"#/properties/a"}},"required":["a"]}}}],"tool_choice":"required"}`,
		`{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"g"}},"parallel_tool_calls":true}`,
		`{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]}`,
		`{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"$defs":{"x":{"enum":[1,"\u00e9"]}},"type":"array","items":{"$ref":"#/$defs/x"},"minItems":2}}}}`,
		`{"prompt":"a","response_format":{"type":"json_object"},"max_tokens":2}`,
		`{"prompt":"a","response_format":{"type":"json_schema"}}`,
		`{"prompt":"a","temperature":-0.0,"seed":-9223372036854775808}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		p, err := decodeRequest(body, chat)
		if err != nil {
			if err.status != http.StatusBadRequest {
				t.Fatalf("decode error status %d, want 400", err.status)
			}
			if _, jerr := json.Marshal(errorBody{Error: errorInfo{Message: err.message, Type: err.typ}}); jerr != nil {
				t.Fatalf("error body does not marshal: %v", jerr)
			}
			return
		}
		if p.promptTokens < 1 || p.maxTokens < 0 {
			t.Fatalf("accepted request with prompt %d, max_tokens %d", p.promptTokens, p.maxTokens)
		}
		if (p.api == apiChat) != chat {
			t.Fatalf("chat flag lost")
		}
		if err := p.validate("m", 1<<20); err != nil && err.status != http.StatusBadRequest && err.status != http.StatusNotFound {
			t.Fatalf("validate status %d", err.status)
		}
		if p.shape == nil {
			return
		}
		// Whatever the shaping, the answer's body is valid JSON.
		a, bound := planAnswer(p.shape, chat, min(p.maxTokens, 4096), false, false, false, nil)
		e := newEncoder(chat, "id", 1, "m")
		e.ans, e.seq = &a, a.seq
		if bound == 0 {
			bound = 8
		}
		if body := e.body(nil, 1, bound, 0, -1, "stop"); !json.Valid(body) {
			t.Fatalf("invalid body %s", body)
		}
	})
}
