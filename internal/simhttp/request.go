package simhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/surge-bench/surge/internal/sim"
)

// The prompt-token estimate used by the simulator at its default density
// (see EstimatePromptTokens and sim.Config.PromptTokens).
const (
	// BytesPerToken is the number of prompt bytes counted as one token by
	// default (sim.Config.BytesPerToken sets another density).
	BytesPerToken = sim.DefaultBytesPerToken
	// ChatTokensPerMessage is the template overhead counted for every chat
	// message (role markers and separators).
	ChatTokensPerMessage = sim.ChatTokensPerMessage
	// ChatReplyPrimerTokens is the template overhead counted once per chat
	// request for the assistant turn the engine is asked to write.
	ChatReplyPrimerTokens = sim.ChatReplyPrimerTokens
)

// EstimatePromptTokens estimates the prompt length in tokens of a request
// whose prompt texts are texts, at the default density:
// ceil(len(text)/BytesPerToken) per text, in bytes of the decoded
// (unescaped) UTF-8 string. For a completions request texts is the single
// prompt and the result is at least 1. For a chat request (chat true)
// texts are the message contents, one per message, and the template adds
// ChatTokensPerMessage per message plus ChatReplyPrimerTokens once:
//
//	completions: max(1, ceil(bytes/4))
//	chat:        Σ_messages (ceil(bytes_i/4) + 4) + 3
//
// The estimate is only the simulator's stand-in for a tokenizer; clients
// should take token counts from the server's usage.
func EstimatePromptTokens(chat bool, texts ...string) int {
	return sim.DefaultConfig().PromptTokens(chat, texts...)
}

// textTokens counts a text of the given length in bytes.
type textTokens func(bytes int) int

var defaultTokens textTokens = sim.DefaultConfig().TextTokens

// apiError is an error answered to the client in OpenAI's error shape.
type apiError struct {
	status     int    // HTTP status
	typ        string // error type, vLLM style ("BadRequestError", …)
	message    string // never contains prompt or response text
	param      string // offending parameter, "" for none
	retryAfter int    // seconds for a Retry-After header; 0 for none
}

func (e *apiError) Error() string { return "simhttp: " + e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "BadRequestError", message: fmt.Sprintf(format, args...), param: param}
}

// errorBody is the JSON body of an error response:
// {"error":{"message":…,"type":…,"param":…,"code":…}}, code being the HTTP
// status as vLLM sends it.
type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// writeError answers e. The message is the simulator's own text, never
// the client's content.
func writeError(w http.ResponseWriter, e *apiError) {
	info := errorInfo{Message: e.message, Type: e.typ, Code: e.status}
	if e.param != "" {
		info.Param = &e.param
	}
	body, _ := json.Marshal(errorBody{Error: info}) // cannot fail: strings and ints only
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(append(body, '\n'))
}

// wireRequest holds the fields of a chat or completions request that the
// simulator reads; every other OpenAI field is ignored.
type wireRequest struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// The output-shaping fields (shaping): RawMessage and pointers, so
	// that a request without them decodes as cheaply as before.
	Stop              json.RawMessage `json:"stop"`
	Temperature       *float64        `json:"temperature"`
	Seed              *int64          `json:"seed"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	ResponseFormat    json.RawMessage `json:"response_format"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wirePart struct {
	Type     string           `json:"type"`
	Text     string           `json:"text"`
	ImageURL json.RawMessage  `json:"image_url"` // chat: {"url":…}; Responses: a string
	Source   *wireImageSource `json:"source"`    // Messages
}

// maxEchoedModel bounds the model name echoed in a 404 message.
const maxEchoedModel = 128

// parsedRequest is a decoded, syntactically valid request. Checks that
// depend on the server's configuration (model name, context length) are
// made by validate.
type parsedRequest struct {
	api          api
	model        string // "" when the client sent none
	promptTokens int    // EstimatePromptTokens, or the number of token ids sent
	maxTokens    int    // 0 when the client sent none
	ignoreEOS    bool
	stream       bool
	includeUsage bool
	shape        *shaping // stop, temperature, seed, tools, response_format; nil: none

	// Prefill-only work (embeddings, rerank): promptTokens sums its
	// inputs, each of which must fit max_model_len.
	longest int          // tokens of the longest input
	embed   *embedInput  // embeddings: what the vectors are made of
	rerank  *rerankInput // rerank: the query and documents
}

// decodeRequest parses a chat (chat true) or completions request body.
// It never panics on any input (see FuzzDecodeRequest).
func decodeRequest(body []byte, chat bool) (parsedRequest, *apiError) {
	return decodeRequestWith(body, chat, defaultTokens)
}

// decodeRequestWith is decodeRequest with the simulated tokenizer tok.
func decodeRequestWith(body []byte, chat bool, tok textTokens) (parsedRequest, *apiError) {
	return decodeRequestHashed(body, chat, tok, nil)
}

// decodeRequestHashed is decodeRequestWith that also hashes the prompt's
// blocks for the prefix cache with h (nil: no hashing) into h.Hashes: for
// chat every message's role and text (h.Message), for completions the
// prompt string. A prompt of token ids is not hashed.
func decodeRequestHashed(body []byte, chat bool, tok textTokens, h *sim.PrefixHasher) (parsedRequest, *apiError) {
	var w wireRequest
	if err := unmarshalRequest(body, &w); err != nil {
		return parsedRequest{}, err
	}
	p := parsedRequest{api: apiCompletions, model: w.Model, ignoreEOS: w.IgnoreEOS, stream: w.Stream}
	if chat {
		p.api = apiChat
	}
	if w.StreamOptions != nil {
		if !w.Stream {
			return parsedRequest{}, badRequest("stream_options", "stream_options can only be set when stream is true")
		}
		p.includeUsage = w.StreamOptions.IncludeUsage
	}
	max := w.MaxTokens
	param := "max_tokens"
	if w.MaxCompletionTokens != nil {
		max, param = w.MaxCompletionTokens, "max_completion_tokens"
	}
	var err *apiError
	if p.maxTokens, err = decodeMax(max, param); err != nil {
		return parsedRequest{}, err
	}
	if err := decodeShaping(&w, &p); err != nil {
		return parsedRequest{}, err
	}
	if chat {
		p.promptTokens, err = chatPromptTokens(w.Messages, tok, h)
	} else {
		p.promptTokens, err = completionPromptTokens(w.Prompt, tok, h)
	}
	if err != nil {
		return parsedRequest{}, err
	}
	return p, nil
}

// unmarshalRequest decodes a request body into v; the error names the
// field of a wrong type.
func unmarshalRequest(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badRequest(te.Field, "invalid type for %q: expected %s", te.Field, te.Type)
		}
		return badRequest("", "request body is not valid JSON")
	}
	return nil
}

// decodeMax reads a cap on output tokens of field param: absent is 0
// (unset), else 1 … 2³⁰.
func decodeMax(v *int64, param string) (int, *apiError) {
	switch {
	case v == nil:
		return 0, nil
	case *v < 1:
		return 0, badRequest(param, "%s must be at least 1, got %d", param, *v)
	case *v > 1<<30:
		return 0, badRequest(param, "%s is too large: %d", param, *v)
	}
	return int(*v), nil
}

func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// chatPromptTokens estimates the prompt of a messages array. A content is
// a string, null (e.g. an assistant message with tool calls) or an array of
// parts of which the text parts count (partsText).
func chatPromptTokens(raw json.RawMessage, tok textTokens, h *sim.PrefixHasher) (int, *apiError) {
	if absent(raw) {
		return 0, badRequest("messages", "messages is required")
	}
	var msgs []wireMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return 0, badRequest("messages", "messages must be an array of message objects")
	}
	if len(msgs) == 0 {
		return 0, badRequest("messages", "messages must contain at least one message")
	}
	tp := newTemplatedPrompt(tok, h)
	for i, m := range msgs {
		if m.Role == "" {
			return 0, badRequest("messages", "messages[%d].role is required", i)
		}
		tp.open(m.Role)
		if err := partsText(m.Content, &tp, "messages", i); err != nil {
			return 0, err
		}
		tp.close()
	}
	return tp.n, nil
}

// partsText adds to the open message of tp the text of a content: null,
// a string, or an array of parts whose text parts (text, input_text,
// output_text) count. field and i name the message in errors.
func partsText(raw json.RawMessage, tp *templatedPrompt, field string, i int) *apiError {
	switch {
	case absent(raw):
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest(field, "%s[%d].content is not a valid string", field, i)
		}
		tp.text(s)
	case raw[0] == '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return badRequest(field, "%s[%d].content must be a string or an array of content parts", field, i)
		}
		for j, pt := range parts {
			switch pt.Type {
			case "text", "input_text", "output_text":
				tp.text(pt.Text)
			default:
				if n, isImage, ok := imagePart(pt.Type, pt.ImageURL, pt.Source); isImage && !ok {
					return badRequest(field, "%s[%d].content[%d]: the image is not inline base64 PNG or JPEG", field, i, j)
				} else if isImage {
					tp.image(n)
				}
			}
		}
	default:
		return badRequest(field, "%s[%d].content must be a string or an array of content parts", field, i)
	}
	return nil
}

// templatedPrompt counts a conversation under the chat template, one
// message at a time: Σ_messages (ceil(bytes_i/B) + 4) + 3 (doc.go,
// "Prompt tokens"). With a hasher it also hashes every message's role
// and text for the prefix cache, as sim.PrefixHasher.Message does, so
// that the same conversation hits the same blocks whatever API sent it.
type templatedPrompt struct {
	tok   textTokens
	h     *sim.PrefixHasher // nil: no hashing
	n     int               // tokens so far, the reply's primer included
	bytes int               // of the open message
}

func newTemplatedPrompt(tok textTokens, h *sim.PrefixHasher) templatedPrompt {
	return templatedPrompt{tok: tok, h: h, n: ChatReplyPrimerTokens}
}

// open starts a message of role.
func (tp *templatedPrompt) open(role string) {
	tp.bytes = 0
	if tp.h != nil {
		tp.h.Text(role)
		tp.h.Text("\x00")
	}
}

// text adds s to the open message.
func (tp *templatedPrompt) text(s string) {
	tp.bytes += len(s)
	if tp.h != nil {
		tp.h.Text(s)
	}
}

// image adds an image of n tokens to the open message (not hashed: the
// prefix cache keys text).
func (tp *templatedPrompt) image(n int) { tp.n += n }

// close ends the open message and counts it.
func (tp *templatedPrompt) close() {
	if tp.h != nil {
		tp.h.Text("\x00") // with open's role: h.Message(role, content)
	}
	tp.n += tp.tok(tp.bytes) + ChatTokensPerMessage
}

// message adds a message of role whose content is text.
func (tp *templatedPrompt) message(role, text string) {
	tp.open(role)
	tp.text(text)
	tp.close()
}

// completionPromptTokens estimates a completions prompt: a string, an
// array holding one string, an array of token ids, or an array holding
// one array of token ids. Batched prompts (several prompts in one
// request) are refused: the simulator answers one choice per request.
func completionPromptTokens(raw json.RawMessage, tok textTokens, h *sim.PrefixHasher) (int, *apiError) {
	if absent(raw) {
		return 0, badRequest("prompt", "prompt is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if h != nil {
			h.Text(s)
		}
		return max(tok(len(s)), 1), nil
	}
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err == nil {
		if len(ids) == 0 {
			return 0, badRequest("prompt", "prompt must not be empty")
		}
		return len(ids), nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		if len(strs) != 1 {
			return 0, badRequest("prompt", "the simulator accepts exactly one prompt per request, got %d", len(strs))
		}
		if h != nil {
			h.Text(strs[0])
		}
		return max(tok(len(strs[0])), 1), nil
	}
	var idLists [][]int64
	if err := json.Unmarshal(raw, &idLists); err == nil {
		if len(idLists) != 1 {
			return 0, badRequest("prompt", "the simulator accepts exactly one prompt per request, got %d", len(idLists))
		}
		if len(idLists[0]) == 0 {
			return 0, badRequest("prompt", "prompt must not be empty")
		}
		return len(idLists[0]), nil
	}
	return 0, badRequest("prompt", "prompt must be a string, an array of strings or an array of token ids")
}

// validate applies the checks that depend on the server: the model name
// (empty means the served model, as in vLLM) and the context length. It
// fills in the default max_tokens, maxModelLen − promptTokens, like vLLM.
// Prefill-only work has no max_tokens: each of its inputs must fit.
func (p *parsedRequest) validate(model string, maxModelLen int) *apiError {
	if p.model != "" && p.model != model {
		name := p.model
		if len(name) > maxEchoedModel {
			name = name[:maxEchoedModel] + "…"
		}
		return &apiError{status: http.StatusNotFound, typ: "NotFoundError", param: "model",
			message: "The model `" + name + "` does not exist."}
	}
	promptParam := p.api.promptParam()
	if p.api.prefillOnly() {
		if p.longest > maxModelLen {
			return badRequest(promptParam, "This model's maximum context length is %d tokens. However, you requested %d tokens in an input. Please reduce the length of the input.", maxModelLen, p.longest)
		}
		return nil
	}
	if p.promptTokens >= maxModelLen {
		return badRequest(promptParam, "This model's maximum context length is %d tokens. However, your prompt has %d tokens. Please reduce the length of the prompt.", maxModelLen, p.promptTokens)
	}
	if p.maxTokens == 0 {
		p.maxTokens = maxModelLen - p.promptTokens
	}
	if p.promptTokens+p.maxTokens > maxModelLen {
		param := p.api.maxParam()
		return badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the length of the prompt or completion.",
			maxModelLen, p.promptTokens+p.maxTokens, p.promptTokens, p.maxTokens)
	}
	return nil
}
