package simhttp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// chunkJSON strips the SSE framing of one chunk and decodes its JSON.
func chunkJSON(t *testing.T, chunk []byte) map[string]any {
	t.Helper()
	s := string(chunk)
	if !strings.HasPrefix(s, "data: ") || !strings.HasSuffix(s, "\n\n") || strings.Count(s, "\n") != 2 {
		t.Fatalf("chunk %q is not one SSE data event", s)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s[len("data: "):len(s)-2]), &m); err != nil {
		t.Fatalf("chunk %q: %v", s, err)
	}
	return m
}

func TestEncoderChunks(t *testing.T) {
	for _, chat := range []bool{true, false} {
		name := map[bool]string{true: "chat", false: "completions"}[chat]
		t.Run(name, func(t *testing.T) {
			e := newEncoder(chat, "id-1", 1700000000, `model "quoted" é`)
			wantObject := map[bool]string{true: "chat.completion.chunk", false: "text_completion"}[chat]
			check := func(m map[string]any) {
				t.Helper()
				if m["id"] != "id-1" || m["object"] != wantObject || m["created"] != float64(1700000000) || m["model"] != `model "quoted" é` {
					t.Errorf("chunk head = %v", m)
				}
			}
			m := chunkJSON(t, e.token(nil, 0))
			check(m)
			choice := m["choices"].([]any)[0].(map[string]any)
			text := choice["text"]
			if chat {
				text = choice["delta"].(map[string]any)["content"]
			}
			if text != tokenText(0) || choice["finish_reason"] != nil {
				t.Errorf("token chunk choice = %v", choice)
			}
			m = chunkJSON(t, e.finish(nil, "length"))
			check(m)
			choice = m["choices"].([]any)[0].(map[string]any)
			if choice["finish_reason"] != "length" {
				t.Errorf("finish chunk choice = %v", choice)
			}
			if chat && len(choice["delta"].(map[string]any)) != 0 {
				t.Errorf("finish chunk delta not empty: %v", choice)
			}
			m = chunkJSON(t, e.usage(nil, 3, 4, 0, -1))
			check(m)
			if len(m["choices"].([]any)) != 0 {
				t.Errorf("usage chunk has choices: %v", m)
			}
			u := m["usage"].(map[string]any)
			if u["prompt_tokens"] != 3.0 || u["completion_tokens"] != 4.0 || u["total_tokens"] != 7.0 {
				t.Errorf("usage = %v", u)
			}
			if got := string(e.done(nil)); got != "data: [DONE]\n\n" {
				t.Errorf("done = %q", got)
			}
			var body map[string]any
			if err := json.Unmarshal(e.body(nil, 3, 4, 0, -1, "stop"), &body); err != nil {
				t.Fatalf("body: %v", err)
			}
			choice = body["choices"].([]any)[0].(map[string]any)
			text = choice["text"]
			if chat {
				text = choice["message"].(map[string]any)["content"]
			}
			if text != tokenText(0)+tokenText(1)+tokenText(2)+tokenText(3) || choice["finish_reason"] != "stop" {
				t.Errorf("body choice = %v", choice)
			}
			// The malformed chunk and truncated body must not parse.
			mal := e.malformed(nil)
			if json.Valid(bytes.TrimSuffix(bytes.TrimPrefix(mal, []byte("data: ")), []byte("\n\n"))) {
				t.Errorf("malformed chunk %q parses", mal)
			}
			if json.Valid(e.truncatedBody(nil)) {
				t.Error("truncated body parses")
			}
		})
	}
	m := chunkJSON(t, newEncoder(true, "x", 1, "m").role(nil))
	delta := m["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if delta["role"] != "assistant" || delta["content"] != "" {
		t.Errorf("role chunk delta = %v", delta)
	}
}

func TestTokenText(t *testing.T) {
	if tokenText(0) != words[0] || tokenText(1) != " "+words[1] || tokenText(len(words)) != " "+words[0] {
		t.Errorf("tokenText: %q %q %q", tokenText(0), tokenText(1), tokenText(len(words)))
	}
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, "\"\\ \n") {
			t.Errorf("word %d %q needs escaping or is empty", i, w)
		}
	}
}

// TestTokenChunkAllocs checks that appending a token chunk to a buffer
// with room does not allocate.
func TestTokenChunkAllocs(t *testing.T) {
	e := newEncoder(true, "chatcmpl-1", 1, "surge-sim")
	buf := make([]byte, 0, 4096)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		buf = e.token(buf[:0], i)
		i++
	})
	if allocs != 0 {
		t.Errorf("token chunk: %v allocations per chunk, want 0", allocs)
	}
}

// TestEncodeReasoning: reasoning chunks, the usage details and a
// non-streamed body with reasoning are valid JSON in vLLM's shape.
func TestEncodeReasoning(t *testing.T) {
	e := newEncoder(true, "chatcmpl-1", 1, "m")
	var d struct {
		Choices []struct {
			Delta map[string]string `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(bytes.TrimSuffix(bytes.TrimPrefix(e.reasoning(nil, 0), []byte(sseData)), []byte(sseEnd)), &d); err != nil || d.Choices[0].Delta["reasoning"] != "the" {
		t.Fatalf("reasoning chunk: %v %+v", err, d)
	}
	var body struct {
		Choices []struct {
			Message struct{ Reasoning, Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens        int `json:"completion_tokens"`
			CompletionTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(e.body(nil, 3, 5, 2, -1, "stop"), &body); err != nil {
		t.Fatal(err)
	}
	m := body.Choices[0].Message
	if m.Reasoning != "the engine" || m.Content != "the engine answers" || body.Usage.CompletionTokens != 5 || body.Usage.CompletionTokensDetails.ReasoningTokens != 2 {
		t.Errorf("body %+v", body)
	}
}

// BenchmarkEncodeToken is the hot path of a plain-text stream: one token
// chunk appended to a buffer with room.
//
//	go test -bench 'Stream|Encode' -run '^$' ./internal/simhttp/
func BenchmarkEncodeToken(b *testing.B) {
	for _, bc := range []struct {
		name string
		enc  streamEncoder
	}{
		{"chat", newEncoder(true, "chatcmpl-1", 1, "surge-sim")},
		{"completions", newEncoder(false, "cmpl-1", 1, "surge-sim")},
		{"responses", newResponsesEncoder("1", 1, "surge-sim", nil, 0)},
		{"messages", newMessagesEncoder("1", "surge-sim", 10, nil, 0, true)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := bc.enc.content(make([]byte, 0, 4096), 0) // opens the message item or block
			b.ReportAllocs()
			for i := range b.N {
				buf = bc.enc.content(buf[:0], i+1)
			}
		})
	}
}

// BenchmarkEncodeBody is a non-streamed plain-text body of 256 tokens.
func BenchmarkEncodeBody(b *testing.B) {
	e := newEncoder(true, "chatcmpl-1", 1, "surge-sim")
	buf := make([]byte, 0, 1<<14)
	b.ReportAllocs()
	for range b.N {
		buf = e.body(buf[:0], 10, 256, 0, -1, "length")
	}
}
