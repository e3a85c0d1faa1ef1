package simhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/sim"
)

// messagesEvent is one event of a Messages stream.
type messagesEvent struct {
	Type    string `json:"type"`
	Index   *int   `json:"index"`
	Message *struct {
		ID         string            `json:"id"`
		Type       string            `json:"type"`
		Role       string            `json:"role"`
		Model      string            `json:"model"`
		Content    []json.RawMessage `json:"content"`
		StopReason *string           `json:"stop_reason"`
		Usage      *anthropicUsage   `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		Thinking     string  `json:"thinking"`
		PartialJSON  string  `json:"partial_json"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// messagesBlock is a content block assembled from a stream.
type messagesBlock struct {
	typ, id, name, text string
	deltas              int
}

// messagesStream is a Messages stream, checked and assembled.
type messagesStream struct {
	blocks             []messagesBlock
	stopReason         string
	stopSequence       *string
	inputTokens, start int // input tokens of message_start and message_delta
	outputTokens       int
}

// parseMessages checks the grammar of a Messages stream (message_start;
// per block a content_block_start, its deltas, a content_block_stop; one
// ping after the first block start; message_delta; message_stop; every
// event line naming its data's type) and assembles it.
func parseMessages(t *testing.T, evs []namedEvent) messagesStream {
	t.Helper()
	var s messagesStream
	open, pings := -1, 0
	for i, ev := range evs {
		var m messagesEvent
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
			t.Fatalf("event %d %q: %v", i, ev.data, err)
		}
		if m.Type != ev.name {
			t.Fatalf("event %d named %q has type %q", i, ev.name, m.Type)
		}
		switch {
		case i == 0:
			if m.Type != "message_start" || m.Message == nil || m.Message.Type != "message" || m.Message.Role != "assistant" ||
				!strings.HasPrefix(m.Message.ID, "msg_") || len(m.Message.Content) != 0 || m.Message.StopReason != nil || m.Message.Usage == nil {
				t.Fatalf("first event %s", ev.data)
			}
			s.start = m.Message.Usage.InputTokens
		case m.Type == "content_block_start":
			if open >= 0 || m.Index == nil || *m.Index != len(s.blocks) || m.ContentBlock == nil {
				t.Fatalf("event %d: %s with block %d open", i, ev.data, open)
			}
			open = *m.Index
			cb := m.ContentBlock
			s.blocks = append(s.blocks, messagesBlock{typ: cb.Type, id: cb.ID, name: cb.Name})
		case m.Type == "ping":
			pings++
			if pings > 1 || evs[i-1].name != "content_block_start" || len(s.blocks) != 1 {
				t.Errorf("event %d: ping after %q", i, evs[i-1].name)
			}
		case m.Type == "content_block_delta":
			if open < 0 || m.Index == nil || *m.Index != open || m.Delta == nil {
				t.Fatalf("event %d: %s with block %d open", i, ev.data, open)
			}
			b := &s.blocks[open]
			want := map[string]string{"text": "text_delta", "thinking": "thinking_delta", "tool_use": "input_json_delta"}[b.typ]
			if m.Delta.Type != want {
				t.Errorf("event %d: a %s delta in a %s block", i, m.Delta.Type, b.typ)
			}
			b.text += m.Delta.Text + m.Delta.Thinking + m.Delta.PartialJSON
			b.deltas++
		case m.Type == "content_block_stop":
			if open < 0 || m.Index == nil || *m.Index != open {
				t.Fatalf("event %d: %s with block %d open", i, ev.data, open)
			}
			open = -1
		case m.Type == "message_delta":
			if open >= 0 || m.Delta == nil || m.Usage == nil || i != len(evs)-2 {
				t.Fatalf("event %d: %s", i, ev.data)
			}
			s.stopReason, s.stopSequence = m.Delta.StopReason, m.Delta.StopSequence
			s.inputTokens, s.outputTokens = m.Usage.InputTokens, m.Usage.OutputTokens
		case m.Type == "message_stop":
			if i != len(evs)-1 {
				t.Fatalf("message_stop is event %d of %d", i, len(evs))
			}
		default:
			t.Fatalf("event %d: unexpected %s", i, ev.data)
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].name != "message_stop" {
		t.Fatal("no message_stop")
	}
	if len(s.blocks) > 0 && pings != 1 {
		t.Errorf("%d pings", pings)
	}
	return s
}

// anthropicWeather is a tool in Anthropic's shape.
const anthropicWeather = `{"name":"get_weather","description":"the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

// The Messages stream: Anthropic's event grammar, one delta per engine
// token, thinking before text, tool_use blocks for tools, the stop
// reason, and usage equal to what the engine counted.
func TestMessagesStream(t *testing.T) {
	prompt := EstimatePromptTokens(true, "hello there")
	msgs := `"messages":[{"role":"user","content":"hello there"}]`
	tests := []struct {
		name      string
		reasoning int
		body      string
		prompt    int
		out       int
		stop      string
		blocks    []string // block types
		check     func(t *testing.T, s messagesStream)
	}{
		{"end turn", 0, `{"model":"surge-sim","max_tokens":50,` + msgs + `,"stream":true}`, prompt, 5, "end_turn", []string{"text"}, nil},
		{"max tokens", 0, `{"max_tokens":3,` + msgs + `,"stream":true}`, prompt, 3, "max_tokens", []string{"text"}, nil},
		{"system and blocks", 0, `{"max_tokens":50,"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":[{"type":"text","text":"hello "},{"type":"text","text":"there"}]}],"stream":true}`,
			EstimatePromptTokens(true, "be brief", "hello there"), 5, "end_turn", []string{"text"}, nil},
		{"stop sequence", 0, `{"max_tokens":50,` + msgs + `,"stop_sequences":["answers"],"stream":true}`, prompt, 3, "stop_sequence", []string{"text"}, func(t *testing.T, s messagesStream) {
			if s.stopSequence == nil || *s.stopSequence != "answers" || s.blocks[0].text != "the engine " {
				t.Errorf("stop_sequence %v, text %q", s.stopSequence, s.blocks[0].text)
			}
		}},
		{"thinking first", 2, `{"max_tokens":50,` + msgs + `,"stream":true}`, prompt, 5, "end_turn", []string{"thinking", "text"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.ReasoningTokens = tt.reasoning
			e := startServer(t, cfg)
			s := parseMessages(t, e.eventsOf("/messages", tt.body, "x-api-key", "sk-ant-test", "anthropic-version", "2023-06-01"))
			var types []string
			deltas := 0
			for _, b := range s.blocks {
				types = append(types, b.typ)
				deltas += b.deltas
			}
			if strings.Join(types, ",") != strings.Join(tt.blocks, ",") || deltas != tt.out || s.stopReason != tt.stop {
				t.Fatalf("blocks %v with %d deltas, stop %q; want %v, %d, %q", types, deltas, s.stopReason, tt.blocks, tt.out, tt.stop)
			}
			r := min(tt.reasoning, tt.out)
			if r > 0 && s.blocks[0].text != wantText(r) {
				t.Errorf("thinking %q, want %q", s.blocks[0].text, wantText(r))
			}
			if tt.check != nil {
				tt.check(t, s)
			} else if text := s.blocks[len(s.blocks)-1].text; text != wantText(tt.out-r) {
				t.Errorf("text %q, want %q", text, wantText(tt.out-r))
			}
			snap := e.s.Snapshot()
			if s.start != tt.prompt || s.inputTokens != tt.prompt || s.outputTokens != tt.out || uint64(s.inputTokens) != snap.PromptTokens || uint64(s.outputTokens) != snap.GenerationTokens {
				t.Errorf("usage %d/%d in, %d out; want %d, %d as the engine counted (%d, %d)", s.start, s.inputTokens, s.outputTokens, tt.prompt, tt.out, snap.PromptTokens, snap.GenerationTokens)
			}
		})
	}
}

// Tools in Anthropic's shape: a tool_use block per call, its input in
// input_json_delta pieces of 4 bytes, one per engine token, forming an
// instance of input_schema; stop_reason tool_use. The body holds the
// same calls, their input an object.
func TestMessagesToolUse(t *testing.T) {
	e := startServer(t, fastConfig())
	head := `{"max_tokens":200,"messages":[{"role":"user","content":"weather?"}],"tools":[` + anthropicWeather + `,{"name":"now","input_schema":{"type":"object"}}]`
	tests := []struct {
		name  string
		extra string
		names []string
	}{
		{"parallel", ``, []string{"get_weather", "now"}},
		{"one at a time", `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`, []string{"get_weather"}},
		{"forced", `,"tool_choice":{"type":"tool","name":"now"}`, []string{"now"}},
		{"none", `,"tool_choice":{"type":"none"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parseMessages(t, e.eventsOf("/messages", head+tt.extra+`,"stream":true}`))
			var u struct {
				Content []struct {
					Type  string          `json:"type"`
					ID    string          `json:"id"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				} `json:"content"`
				StopReason string         `json:"stop_reason"`
				Usage      anthropicUsage `json:"usage"`
			}
			e.bodyOf("/messages", head+tt.extra+`}`, &u)
			if tt.names == nil {
				if s.stopReason != "end_turn" || len(s.blocks) != 1 || s.blocks[0].typ != "text" || u.StopReason != "end_turn" {
					t.Errorf("tool_choice none: stop %q, blocks %+v", s.stopReason, s.blocks)
				}
				return
			}
			if s.stopReason != "tool_use" || len(s.blocks) != len(tt.names) || u.StopReason != "tool_use" || len(u.Content) != len(tt.names) {
				t.Fatalf("stop %q/%q, %d/%d blocks, want %d tool_use", s.stopReason, u.StopReason, len(s.blocks), len(u.Content), len(tt.names))
			}
			pieces := 0
			for i, b := range s.blocks {
				pieces += b.deltas
				var in map[string]any
				if b.typ != "tool_use" || b.name != tt.names[i] || !strings.HasPrefix(b.id, "toolu_") || json.Unmarshal([]byte(b.text), &in) != nil {
					t.Errorf("block %d: %+v", i, b)
				}
				if _, ok := in["city"]; ok != (b.name == "get_weather") {
					t.Errorf("block %d input %s", i, b.text)
				}
				if b.deltas != (len(b.text)+fragmentBytes-1)/fragmentBytes {
					t.Errorf("block %d: %d pieces for %d bytes", i, b.deltas, len(b.text))
				}
				c := u.Content[i]
				if c.Type != "tool_use" || c.Name != tt.names[i] || !strings.HasPrefix(c.ID, "toolu_") || string(c.Input) != b.text {
					t.Errorf("body block %d %+v, streamed input %s", i, c, b.text)
				}
			}
			if s.outputTokens != pieces || u.Usage.OutputTokens != pieces {
				t.Errorf("output_tokens %d/%d, %d pieces", s.outputTokens, u.Usage.OutputTokens, pieces)
			}
		})
	}
	// Cut by max_tokens: the input is broken JSON streamed, {} in the body.
	var u struct {
		Content []struct {
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	e.bodyOf("/messages", `{"max_tokens":2,"messages":[{"role":"user","content":"a"}],"tools":[`+anthropicWeather+`]}`, &u)
	if u.StopReason != "max_tokens" || len(u.Content) != 1 || string(u.Content[0].Input) != "{}" {
		t.Errorf("cut tool call: %+v", u)
	}
}

// A non-streamed Messages request: the message with its content blocks,
// stop reason and usage.
func TestMessagesUnary(t *testing.T) {
	prompt := EstimatePromptTokens(true, "be brief", "hello there")
	tests := []struct {
		name      string
		reasoning int
		body      string
		out       int
		stop      string
		seq       any
		blocks    []string // "type:text"
	}{
		{"end turn", 0, `{"max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hello there"}]}`, 5, "end_turn", nil,
			[]string{"text:" + wantText(5)}},
		{"max tokens", 0, `{"max_tokens":4,"system":"be brief","messages":[{"role":"user","content":"hello there"}],"stream":false}`, 4, "max_tokens", nil,
			[]string{"text:" + wantText(4)}},
		{"stop sequence", 0, `{"max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hello there"}],"stop_sequences":["zzz","answers"]}`, 3, "stop_sequence", "answers",
			[]string{"text:the engine "}},
		{"thinking", 2, `{"max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hello there"}]}`, 5, "end_turn", nil,
			[]string{"thinking:" + wantText(2), "text:" + wantText(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.ReasoningTokens = tt.reasoning
			e := startServer(t, cfg)
			var m struct {
				ID      string `json:"id"`
				Type    string `json:"type"`
				Role    string `json:"role"`
				Model   string `json:"model"`
				Content []struct {
					Type     string `json:"type"`
					Text     string `json:"text"`
					Thinking string `json:"thinking"`
				} `json:"content"`
				StopReason   string          `json:"stop_reason"`
				StopSequence any             `json:"stop_sequence"`
				Usage        *anthropicUsage `json:"usage"`
			}
			e.bodyOf("/messages", tt.body, &m)
			var blocks []string
			for _, c := range m.Content {
				blocks = append(blocks, c.Type+":"+c.Text+c.Thinking)
			}
			if m.Type != "message" || m.Role != "assistant" || m.Model != "surge-sim" || !strings.HasPrefix(m.ID, "msg_") ||
				strings.Join(blocks, "|") != strings.Join(tt.blocks, "|") || m.StopReason != tt.stop || m.StopSequence != tt.seq {
				t.Errorf("message %+v\nblocks %q, want %q", m, blocks, tt.blocks)
			}
			snap := e.s.Snapshot()
			if u := m.Usage; u == nil || u.InputTokens != prompt || u.OutputTokens != tt.out || uint64(u.InputTokens) != snap.PromptTokens || uint64(u.OutputTokens) != snap.GenerationTokens {
				t.Errorf("usage %+v, want %d in, %d out as the engine counted", m.Usage, prompt, tt.out)
			}
		})
	}
}

// anthropicErrorJSON is Anthropic's error body.
type anthropicErrorJSON struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// checkAnthropicError asserts an Anthropic-shaped error: the status,
// {"type":"error","error":{"type","message"}} and nothing else.
func checkAnthropicError(t *testing.T, resp *http.Response, status int, typ string) anthropicErrorJSON {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d (%s), want %d: %s", resp.StatusCode, resp.Header.Get("Content-Type"), status, raw)
	}
	var fields map[string]json.RawMessage
	var e anthropicErrorJSON
	if json.Unmarshal(raw, &fields) != nil || len(fields) != 2 || json.Unmarshal(raw, &e) != nil {
		t.Fatalf("error body %s", raw)
	}
	if e.Type != "error" || e.Error.Type != typ || e.Error.Message == "" {
		t.Errorf("error body %s, want type %s", raw, typ)
	}
	return e
}

// Errors of /v1/messages come in Anthropic's shape, the type by status.
func TestMessagesErrors(t *testing.T) {
	e := startServer(t, fastConfig())
	msgs := `"messages":[{"role":"user","content":"a"}]`
	tests := []struct {
		name   string
		body   string
		status int
		typ    string
		msg    string
	}{
		{"max_tokens missing", `{` + msgs + `}`, 400, "invalid_request_error", "max_tokens: Field required"},
		{"max_tokens zero", `{"max_tokens":0,` + msgs + `}`, 400, "invalid_request_error", "max_tokens"},
		{"max_tokens beyond max_model_len", `{"max_tokens":1024,` + msgs + `}`, 400, "invalid_request_error", "maximum context length"},
		{"messages missing", `{"max_tokens":5}`, 400, "invalid_request_error", "messages"},
		{"content of a number", `{"max_tokens":5,"messages":[{"role":"user","content":1}]}`, 400, "invalid_request_error", "content"},
		{"malformed json", `{"max_tokens":`, 400, "invalid_request_error", "JSON"},
		{"tool without name", `{"max_tokens":5,` + msgs + `,"tools":[{"input_schema":{}}]}`, 400, "invalid_request_error", "name"},
		{"tool_choice any without tools", `{"max_tokens":5,` + msgs + `,"tool_choice":{"type":"any"}}`, 400, "invalid_request_error", "tool_choice"},
		{"unknown model", `{"model":"claude-9","max_tokens":5,` + msgs + `}`, 404, "not_found_error", "claude-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkAnthropicError(t, e.post("/messages", tt.body), tt.status, tt.typ)
			if !strings.Contains(got.Error.Message, tt.msg) {
				t.Errorf("message %q lacks %q", got.Error.Message, tt.msg)
			}
		})
	}
	t.Run("wrong method", func(t *testing.T) {
		resp, err := e.client.Get(e.base + "/messages")
		if err != nil {
			t.Fatal(err)
		}
		checkAnthropicError(t, resp, http.StatusMethodNotAllowed, "invalid_request_error")
	})
	for _, f := range []struct {
		name   string
		set    func(*sim.Config)
		status int
		typ    string
	}{
		{"fault 500", func(c *sim.Config) { c.Fault500 = 1 }, 500, "api_error"},
		{"fault 503", func(c *sim.Config) { c.Fault503 = 1 }, 503, "overloaded_error"},
	} {
		t.Run(f.name, func(t *testing.T) {
			cfg := fastConfig()
			f.set(&cfg)
			e := startServer(t, cfg)
			checkAnthropicError(t, e.post("/messages", `{"max_tokens":5,`+msgs+`,"stream":true}`), f.status, f.typ)
		})
	}
}

func TestDecodeMessages(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		prompt int
		param  string // of the error; "" for none
	}{
		{"string content", `{"max_tokens":1,"messages":[{"role":"user","content":"12345678"}]}`, EstimatePromptTokens(true, "12345678"), ""},
		{"system string", `{"max_tokens":1,"system":"abcd","messages":[{"role":"user","content":"ab"}]}`, EstimatePromptTokens(true, "abcd", "ab"), ""},
		{"empty system", `{"max_tokens":1,"system":"","messages":[{"role":"user","content":"ab"}]}`, EstimatePromptTokens(true, "ab"), ""},
		{"tool blocks", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"abcd"}]},{"type":"tool_result","tool_use_id":"u","content":"ef"}]}]}`,
			EstimatePromptTokens(true, `{"a":1}`, "abcdef"), ""},
		{"an image it cannot read", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"abcd"}]}]}`, 0, "messages"},
		{"server tools are skipped", `{"max_tokens":1,"messages":[{"role":"user","content":"a"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, EstimatePromptTokens(true, "a"), ""},
		{"no max_tokens", `{"messages":[{"role":"user","content":"a"}]}`, 0, "max_tokens"},
		{"no role", `{"max_tokens":1,"messages":[{"content":"a"}]}`, 0, "messages"},
		{"no content", `{"max_tokens":1,"messages":[{"role":"user"}]}`, 0, "messages"},
		{"bad system", `{"max_tokens":1,"system":3,"messages":[{"role":"user","content":"a"}]}`, 0, "system"},
		{"too many stop sequences", `{"max_tokens":1,"messages":[{"role":"user","content":"a"}],"stop_sequences":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}`, 0, "stop_sequences"},
		{"forced tool missing", `{"max_tokens":1,"messages":[{"role":"user","content":"a"}],"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"g"}}`, 0, "tool_choice"},
		{"bad tool_choice", `{"max_tokens":1,"messages":[{"role":"user","content":"a"}],"tool_choice":{"type":"sometimes"}}`, 0, "tool_choice"},
		{"schema not an object", `{"max_tokens":1,"messages":[{"role":"user","content":"a"}],"tools":[{"name":"f","input_schema":[]}]}`, 0, "tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := decodeMessages([]byte(tt.body), defaultTokens, nil)
			if tt.param != "" {
				if err == nil || err.status != http.StatusBadRequest || err.param != tt.param {
					t.Fatalf("error %+v, want 400 naming %s", err, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.api != apiMessages || p.promptTokens != tt.prompt || p.maxTokens != 1 {
				t.Errorf("parsed %+v, want prompt %d", p, tt.prompt)
			}
		})
	}
}

// Every status the simulator answers has its Anthropic error type.
func TestAnthropicErrorTypes(t *testing.T) {
	for status, typ := range map[int]string{
		400: "invalid_request_error", 405: "invalid_request_error", 404: "not_found_error", 413: "request_too_large",
		429: "rate_limit_error", 500: "api_error", 503: "overloaded_error", 529: "overloaded_error",
	} {
		b := appendAnthropicError(nil, &apiError{status: status, message: `say "hi"`})
		var e anthropicErrorJSON
		if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" || e.Error.Type != typ || e.Error.Message != `say "hi"` {
			t.Errorf("status %d: %s (%v), want type %s", status, b, err, typ)
		}
	}
}
