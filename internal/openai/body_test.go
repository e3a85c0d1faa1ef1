package openai

import (
	"encoding/json"
	"testing"

	"github.com/surge-bench/surge/internal/workload"
)

func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"\n\r\t\x00\x1f", `"\n\r\t\u0000\u001f"`},
		{"é😀</script>&", `"é😀</script>&"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
		{"\xe2\x82", `"\ufffd\ufffd"`}, // truncated sequence: one U+FFFD per byte, as encoding/json
		{"\u2028", "\"\u2028\""},
	}
	for _, tt := range tests {
		if got := string(appendJSONString(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", `"\`, "\x00\x7f\x80\xff", "é😀", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("appendJSONString(%q) = %s, not valid JSON: %v", s, out, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("appendJSONString(%q) decodes to %q, encoding/json gives %q", s, got, want)
		}
	})
}

// TestAppendBodyNoAlloc: building a body into a buffer with room allocates nothing.
func TestAppendBodyNoAlloc(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model = "http://h/v1", "m"
	cfg.ExtraBody = map[string]any{"temperature": 0.5}
	tmpl, err := newBodyTemplate(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := workload.Request{Prompt: "a prompt with \"quotes\" and\nnewlines", MaxTokens: 128, IgnoreEOS: true}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = tmpl.appendBody(buf[:0], &req) }); n != 0 {
		t.Errorf("appendBody allocates %.0f times", n)
	}
	var m map[string]any
	if err := json.Unmarshal(buf, &m); err != nil {
		t.Fatalf("body %s: %v", buf, err)
	}
}

// TestAppendBodyMessages: a request's Messages replace the single user
// message (chat) or are joined into the prompt (completions), and Extra
// members land in the body verbatim.
func TestAppendBodyMessages(t *testing.T) {
	req := workload.Request{
		Messages:  []workload.Message{{Role: "system", Content: "be \"brief\""}, {Role: "user", Content: "hi\nthere"}},
		MaxTokens: 7,
		Extra:     []byte(`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"temperature":0`),
	}
	for _, api := range []string{APIChat, APICompletions} {
		cfg := DefaultConfig()
		cfg.BaseURL, cfg.Model, cfg.API = "http://h/v1", "m", api
		tmpl, err := newBodyTemplate(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Model    string `json:"model"`
			Prompt   string `json:"prompt"`
			Messages []struct{ Role, Content string }
			Max      int              `json:"max_tokens"`
			Tools    []map[string]any `json:"tools"`
			Temp     *float64         `json:"temperature"`
		}
		body := tmpl.appendBody(nil, &req)
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: body %s: %v", api, body, err)
		}
		if m.Model != "m" || m.Max != 7 || len(m.Tools) != 1 || m.Temp == nil {
			t.Errorf("%s: body %s lost a member", api, body)
		}
		if api == APIChat {
			if len(m.Messages) != 2 || m.Messages[0].Role != "system" || m.Messages[1].Content != "hi\nthere" || m.Prompt != "" {
				t.Errorf("chat: messages %+v, prompt %q", m.Messages, m.Prompt)
			}
		} else if m.Prompt != "be \"brief\"\n\nhi\nthere" || m.Messages != nil {
			t.Errorf("completions: prompt %q, messages %+v", m.Prompt, m.Messages)
		}
	}
}
