package simhttp

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// namedEvent is one SSE event of an API with event lines: its event
// name and its data.
type namedEvent struct{ name, data string }

// readEvents reads event/data pairs until EOF; err is nil on a clean end
// of body. A data line without an event line has an empty name.
func readEvents(r io.Reader) ([]namedEvent, error) {
	br := bufio.NewReader(r)
	var out []namedEvent
	name := ""
	for {
		line, err := br.ReadString('\n')
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = strings.TrimSuffix(n, "\n")
		} else if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, namedEvent{name, strings.TrimSuffix(d, "\n")})
			name = ""
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// eventsOf posts body to path (with the headers given, in pairs) and
// reads the whole stream, which must be 200 and end cleanly.
func (e *env) eventsOf(path, body string, header ...string) []namedEvent {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		e.t.Errorf("Content-Type %q", ct)
	}
	evs, err := readEvents(resp.Body)
	if err != nil {
		e.t.Fatalf("reading the stream: %v", err)
	}
	return evs
}

// bodyOf posts body to path and decodes the 200 JSON answer into v.
func (e *env) bodyOf(path, body string, v any) {
	e.t.Helper()
	resp := e.post(path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("body %s: %v", b, err)
	}
}

// responseObject is the Responses API's response object.
type responseObject struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *responsesUsageJSON `json:"usage"`
}

type responsesUsageJSON struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// text is the output text of the message item and the reasoning text
// of the reasoning item.
func (r *responseObject) text() (text, reasoning string) {
	for _, it := range r.Output {
		for _, c := range it.Content {
			switch {
			case it.Type == "message" && c.Type == "output_text":
				text += c.Text
			case it.Type == "reasoning" && c.Type == "reasoning_text":
				reasoning += c.Text
			}
		}
	}
	return text, reasoning
}

// responsesEvent is one event of a Responses stream.
type responsesEvent struct {
	Type           string          `json:"type"`
	SequenceNumber *int            `json:"sequence_number"`
	ItemID         string          `json:"item_id"`
	OutputIndex    *int            `json:"output_index"`
	Delta          string          `json:"delta"`
	Text           string          `json:"text"`
	Response       *responseObject `json:"response"`
	Item           *struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	} `json:"item"`
}

// responsesTypes is the sequence of event types of a stream of r
// reasoning and n content tokens ending with status.
func responsesTypes(r, n int, status string) []string {
	ts := []string{"response.created", "response.in_progress"}
	item := func(delta, done string, k int) {
		ts = append(ts, "response.output_item.added", "response.content_part.added")
		for range k {
			ts = append(ts, delta)
		}
		ts = append(ts, done, "response.content_part.done", "response.output_item.done")
	}
	if r > 0 {
		item("response.reasoning_text.delta", "response.reasoning_text.done", r)
	}
	if n > 0 {
		item("response.output_text.delta", "response.output_text.done", n)
	}
	return append(ts, "response."+status)
}

// wantText is the fixed text of n tokens.
func wantText(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(tokenText(i))
	}
	return b.String()
}

// The Responses stream: the event sequence of OpenAI and vLLM, one
// output_text delta per engine token, reasoning first, and usage equal
// to what the engine counted.
func TestResponsesStream(t *testing.T) {
	prompt := EstimatePromptTokens(true, "hello there")
	tests := []struct {
		name      string
		reasoning int // sim.Config.ReasoningTokens
		body      string
		prompt    int
		out       int
		status    string
	}{
		{"natural end", 0, `{"model":"surge-sim","input":"hello there","max_output_tokens":50,"stream":true}`, prompt, 5, "completed"},
		{"cut by max_output_tokens", 0, `{"input":"hello there","max_output_tokens":3,"stream":true}`, prompt, 3, "incomplete"},
		{"without max_output_tokens", 0, `{"input":"hello there","stream":true}`, prompt, 5, "completed"},
		{"ignore_eos", 0, `{"input":"hello there","max_output_tokens":9,"ignore_eos":true,"stream":true}`, prompt, 9, "incomplete"},
		{"stop", 0, `{"input":"hello there","max_output_tokens":50,"stop":["answers"],"stream":true}`, prompt, 3, "completed"},
		{"items and instructions", 0, `{"instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hello there"}]},{"type":"message","role":"assistant","content":"hi"}],"stream":true}`,
			EstimatePromptTokens(true, "be brief", "hello there", "hi"), 5, "completed"},
		{"reasoning first", 2, `{"input":"hello there","max_output_tokens":50,"stream":true}`, prompt, 5, "completed"},
		{"cut inside the reasoning", 4, `{"input":"hello there","max_output_tokens":3,"stream":true}`, prompt, 3, "incomplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.ReasoningTokens = tt.reasoning
			e := startServer(t, cfg)
			evs := e.eventsOf("/responses", tt.body)
			r := min(tt.reasoning, tt.out)
			n := tt.out - r
			var types []string
			var deltas, thoughts, doneText string
			var last responsesEvent
			for i, ev := range evs {
				var re responsesEvent
				if err := json.Unmarshal([]byte(ev.data), &re); err != nil {
					t.Fatalf("event %d %q: %v", i, ev.data, err)
				}
				if re.Type != ev.name || re.SequenceNumber == nil || *re.SequenceNumber != i {
					t.Errorf("event %d: name %q, type %q, sequence_number %v", i, ev.name, re.Type, re.SequenceNumber)
				}
				types = append(types, re.Type)
				switch re.Type {
				case "response.output_text.delta":
					deltas += re.Delta
					if re.OutputIndex == nil || *re.OutputIndex != min(r, 1) || !strings.HasPrefix(re.ItemID, "msg_") {
						t.Errorf("delta %s: output_index %v", ev.data, re.OutputIndex)
					}
				case "response.reasoning_text.delta":
					thoughts += re.Delta
				case "response.output_text.done":
					doneText = re.Text
				}
				last = re
			}
			if want := responsesTypes(r, n, tt.status); !slices.Equal(types, want) {
				t.Fatalf("event types\n%v\nwant\n%v", types, want)
			}
			text := wantText(n)
			if tt.name == "stop" {
				text = "the engine " // cut before the stop string
			}
			if deltas != text || doneText != text || thoughts != wantText(r) {
				t.Errorf("deltas %q, done %q, reasoning %q; want %q and %q", deltas, doneText, thoughts, text, wantText(r))
			}
			res := last.Response
			if res == nil || res.Status != tt.status || res.Object != "response" || !strings.HasPrefix(res.ID, "resp_") || res.Model != "surge-sim" {
				t.Fatalf("final response %+v", res)
			}
			if (tt.status == "incomplete") != (res.IncompleteDetails != nil && res.IncompleteDetails.Reason == "max_output_tokens") {
				t.Errorf("incomplete_details %+v with status %s", res.IncompleteDetails, res.Status)
			}
			if got, reasoning := res.text(); got != text || reasoning != wantText(r) {
				t.Errorf("output text %q reasoning %q", got, reasoning)
			}
			u := res.Usage
			if u == nil || u.InputTokens != tt.prompt || u.OutputTokens != tt.out || u.OutputTokensDetails.ReasoningTokens != r || u.TotalTokens != tt.prompt+tt.out || u.InputTokensDetails.CachedTokens != 0 {
				t.Errorf("usage %+v, want %d in, %d out, %d reasoning", u, tt.prompt, tt.out, r)
			}
			if snap := e.s.Snapshot(); u != nil && (uint64(u.InputTokens) != snap.PromptTokens || uint64(u.OutputTokens) != snap.GenerationTokens) {
				t.Errorf("usage %d in, %d out; the engine counted %d and %d", u.InputTokens, u.OutputTokens, snap.PromptTokens, snap.GenerationTokens)
			}
		})
	}
}

// A non-streamed Responses request gets the response object alone.
func TestResponsesUnary(t *testing.T) {
	prompt := EstimatePromptTokens(true, "hello there")
	tests := []struct {
		name      string
		reasoning int
		body      string
		out       int
		status    string
		text      string
	}{
		{"natural end", 0, `{"input":"hello there","max_output_tokens":50}`, 5, "completed", wantText(5)},
		{"cut", 0, `{"input":"hello there","max_output_tokens":2,"stream":false}`, 2, "incomplete", wantText(2)},
		{"stop", 0, `{"input":"hello there","max_output_tokens":50,"stop":"answers"}`, 3, "completed", "the engine "},
		{"reasoning", 3, `{"input":"hello there"}`, 5, "completed", wantText(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.ReasoningTokens = tt.reasoning
			e := startServer(t, cfg)
			var res responseObject
			e.bodyOf("/responses", tt.body, &res)
			r := min(tt.reasoning, tt.out)
			if res.Object != "response" || res.Status != tt.status || !strings.HasPrefix(res.ID, "resp_") {
				t.Errorf("response %+v", res)
			}
			if text, reasoning := res.text(); text != tt.text || reasoning != wantText(r) {
				t.Errorf("text %q reasoning %q", text, reasoning)
			}
			msg := res.Output[len(res.Output)-1]
			if msg.Type != "message" || msg.Role != "assistant" || !strings.HasPrefix(msg.ID, "msg_") {
				t.Errorf("last output item %+v", msg)
			}
			u := res.Usage
			if snap := e.s.Snapshot(); u == nil || u.InputTokens != prompt || u.OutputTokens != tt.out || uint64(u.InputTokens) != snap.PromptTokens || uint64(u.OutputTokens) != snap.GenerationTokens || u.OutputTokensDetails.ReasoningTokens != r {
				t.Errorf("usage %+v, want %d in %d out as the engine counted", u, prompt, tt.out)
			}
		})
	}
}

func TestDecodeResponses(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		prompt int
		max    int
		param  string // of the error; "" for none
	}{
		{"string input", `{"input":"12345678"}`, EstimatePromptTokens(true, "12345678"), 0, ""},
		{"instructions count as a message", `{"input":"abcd","instructions":"efgh","max_output_tokens":7}`, EstimatePromptTokens(true, "efgh", "abcd"), 7, ""},
		{"parts", `{"input":[{"role":"user","content":[{"type":"input_text","text":"ab"},{"type":"input_file","file_id":"x"},{"type":"input_text","text":"cd"}]}]}`, EstimatePromptTokens(true, "abcd"), 0, ""},
		{"an image it cannot read", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/x.png"}]}]}`, 0, 0, "input"},
		{"function items", `{"input":[{"role":"user","content":"a"},{"type":"function_call","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"abcd"}]}`,
			EstimatePromptTokens(true, "a", "{}", "abcd"), 0, ""},
		{"missing input", `{"model":"m"}`, 0, 0, "input"},
		{"empty input", `{"input":[]}`, 0, 0, "input"},
		{"input of a number", `{"input":3}`, 0, 0, "input"},
		{"item without role", `{"input":[{"content":"a"}]}`, 0, 0, "input"},
		{"bad content", `{"input":[{"role":"user","content":3}]}`, 0, 0, "input"},
		{"max_output_tokens zero", `{"input":"a","max_output_tokens":0}`, 0, 0, "max_output_tokens"},
		{"negative temperature", `{"input":"a","temperature":-1}`, 0, 0, "temperature"},
		{"wrong type", `{"input":"a","stream":"yes"}`, 0, 0, "stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := decodeResponses([]byte(tt.body), defaultTokens, nil)
			if tt.param != "" {
				if err == nil || err.status != http.StatusBadRequest || err.param != tt.param {
					t.Fatalf("error %+v, want 400 naming %s", err, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.api != apiResponses || p.promptTokens != tt.prompt || p.maxTokens != tt.max {
				t.Errorf("parsed %+v, want prompt %d, max %d", p, tt.prompt, tt.max)
			}
		})
	}
}
