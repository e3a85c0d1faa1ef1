package simhttp

import (
	"encoding/json"
	"io"
	"net/http"
)

// serveTokenizeVLLM answers POST /tokenize as vLLM does (its
// TokenizeChatRequest / TokenizeCompletionRequest): a body with
// "messages" is counted as a chat request, template included; one with
// "prompt" as a completions prompt. The answer is
// {"count": n, "max_model_len": m, "tokens": [n ids]} — the same n as the
// usage.prompt_tokens a completion of that prompt reports.
func (s *Server) serveTokenizeVLLM(w http.ResponseWriter, r *http.Request) {
	body, aerr := readTokenizeBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var probe struct {
		Messages json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &probe) // a malformed body fails below, with its reason
	p, aerr := decodeRequestWith(body, !absent(probe.Messages), s.tok)
	if aerr == nil && p.model != "" && p.model != s.model {
		aerr = (&parsedRequest{model: p.model}).validate(s.model, s.maxModelLen)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}{p.promptTokens, s.maxModelLen, tokenIDs(p.promptTokens)})
}

// serveTokenizeLlamaCpp answers POST /tokenize as llama.cpp's llama-server
// does: {"content": text, "add_special": bool} → {"tokens": [ids]}. Like
// llama-server it tokenizes the text alone, without a chat template; the
// simulated tokenizer has no BOS token, so add_special adds nothing. A
// body without "content" gets an empty list, as there.
func (s *Server) serveTokenizeLlamaCpp(w http.ResponseWriter, r *http.Request) {
	body, aerr := readTokenizeBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var req struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, badRequest("content", "content must be a string"))
		return
	}
	n := 0
	if req.Content != nil {
		n = s.tok(len(*req.Content))
	}
	writeJSON(w, struct {
		Tokens []int `json:"tokens"`
	}{tokenIDs(n)})
}

func readTokenizeBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return nil, badRequest("", "reading the request body failed (at most %d bytes)", MaxBodyBytes)
	}
	return body, nil
}

// tokenIDs is a list of n token ids (the simulated tokenizer has no
// vocabulary: ids cycle through 0..999).
func tokenIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i % 1000
	}
	return ids
}
