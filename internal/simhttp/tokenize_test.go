package simhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/sim"
)

// The tokenizer's density is a knob: at 2.5 bytes per token a 100-byte
// message is 40 tokens (+ the template's 7), in the usage of a completion
// and in vLLM-style /tokenize alike, so that a client calibrating against
// /tokenize sizes prompts for exactly what usage will report.
func TestTokenizeVLLMMatchesUsage(t *testing.T) {
	cfg := fastConfig()
	cfg.BytesPerToken = 2.5
	e := startServer(t, cfg, WithModel("m"))
	text := strings.Repeat("abcd ", 20) // 100 bytes
	wantChat := 40 + ChatTokensPerMessage + ChatReplyPrimerTokens

	resp := e.post("/chat/completions", `{"messages":[{"role":"user","content":"`+text+`"}],"max_tokens":1}`)
	var body struct{ Usage usage }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if body.Usage.PromptTokens != wantChat {
		t.Fatalf("usage.prompt_tokens = %d, want %d", body.Usage.PromptTokens, wantChat)
	}

	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"chat", `{"model":"m","messages":[{"role":"user","content":"` + text + `"}]}`, wantChat},
		{"prompt", `{"prompt":"` + text + `"}`, 40},
	} {
		resp, err := e.client.Post(e.root+"/tokenize", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var tk struct {
			Count       int   `json:"count"`
			MaxModelLen int   `json:"max_model_len"`
			Tokens      []int `json:"tokens"`
		}
		err = json.NewDecoder(resp.Body).Decode(&tk)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, %v", tc.name, resp.StatusCode, err)
		}
		if tk.Count != tc.want || len(tk.Tokens) != tc.want || tk.MaxModelLen != cfg.MaxModelLen {
			t.Errorf("%s: count %d, %d tokens, max_model_len %d; want %d, %d", tc.name, tk.Count, len(tk.Tokens), tk.MaxModelLen, tc.want, cfg.MaxModelLen)
		}
	}
	resp, err := e.client.Post(e.root+"/tokenize", "application/json", strings.NewReader(`{"model":"other","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown model: status %d, want 404", resp.StatusCode)
	}
}

// llama.cpp style: {"content"} → {"tokens"}, the text alone (no chat
// template); and with tokenize none there is no endpoint at all.
func TestTokenizeStyles(t *testing.T) {
	cfg := fastConfig()
	cfg.BytesPerToken = 2
	cfg.Tokenize = sim.TokenizeLlamaCpp
	e := startServer(t, cfg)
	resp, err := e.client.Post(e.root+"/tokenize", "application/json", strings.NewReader(`{"content":"abcdefghij","add_special":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var tk struct {
		Tokens []int `json:"tokens"`
		Count  *int  `json:"count"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	if err != nil || len(tk.Tokens) != 5 || tk.Count != nil {
		t.Fatalf("llamacpp /tokenize: %v, %d tokens, count %v; want 5 tokens and no count", err, len(tk.Tokens), tk.Count)
	}

	cfg.Tokenize = sim.TokenizeNone
	e = startServer(t, cfg)
	resp, err = e.client.Post(e.root+"/tokenize", "application/json", strings.NewReader(`{"prompt":"abc"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("tokenize none: status %d, want 404", resp.StatusCode)
	}
}
