package simhttp

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// api is the HTTP API a request came in by: it decides how the request
// is read, how the answer is written and the shape of errors. Every API
// runs on the one engine model.
type api uint8

const (
	apiCompletions api = iota // POST /v1/completions
	apiChat                   // POST /v1/chat/completions
	apiResponses              // POST /v1/responses (OpenAI Responses)
	apiMessages               // POST /v1/messages (Anthropic Messages)
	apiEmbeddings             // POST /v1/embeddings
	apiRerank                 // POST /v1/rerank and /rerank
)

var apiNames = [...]string{"completions", "chat", "responses", "messages", "embeddings", "rerank"}

// String is the API's name in the request log.
func (a api) String() string { return apiNames[a] }

// templated reports whether the API's prompt is a conversation under the
// chat template (counted as chat is) whose answer leads with the
// server's reasoning tokens.
func (a api) templated() bool { return a == apiChat || a == apiResponses || a == apiMessages }

// prefillOnly reports whether the API's work is a prompt alone, with no
// generation (pooling: embeddings, reranking).
func (a api) prefillOnly() bool { return a == apiEmbeddings || a == apiRerank }

// promptParam names the request field that holds the prompt, for errors.
func (a api) promptParam() string {
	switch a {
	case apiChat, apiMessages:
		return "messages"
	case apiResponses, apiEmbeddings:
		return "input"
	case apiRerank:
		return "documents"
	}
	return "prompt"
}

// maxParam names the request field that caps the output, for errors.
func (a api) maxParam() string {
	if a == apiResponses {
		return "max_output_tokens"
	}
	return "max_tokens"
}

// writeError answers e in the API's error shape: Anthropic's for
// Messages, OpenAI's (writeError) for every other.
func (a api) writeError(w http.ResponseWriter, e *apiError) {
	if a != apiMessages {
		writeError(w, e)
		return
	}
	b := appendAnthropicError(make([]byte, 0, 128+len(e.message)), e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(append(b, '\n'))
}

// appendAnthropicError appends Anthropic's error object,
// {"type":"error","error":{"type":…,"message":…}}: the body of an error
// response and the data of a stream's error event.
func appendAnthropicError(b []byte, e *apiError) []byte {
	b = append(b, `{"type":"error","error":{"type":"`...)
	b = append(b, anthropicErrorType(e.status)...)
	b = append(b, `","message":`...)
	msg, _ := json.Marshal(e.message) // a string always marshals
	b = append(b, msg...)
	return append(b, "}}"...)
}

// anthropicErrorType is Anthropic's error type for an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusUnprocessableEntity:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	return "api_error"
}
