package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/surge-bench/surge/internal/jsontext"
	"github.com/surge-bench/surge/internal/workload"
)

// reservedBodyKeys are request members the client owns: ExtraBody may not
// set them, because the measurement depends on them.
var reservedBodyKeys = []string{"model", "messages", "prompt", "input", "system", "stream", "max_tokens", "max_output_tokens", "query", "documents"}

// bodyTemplate holds the constant parts of every request body, encoded once.
type bodyTemplate struct {
	api       string
	model     []byte // {"model":"…"
	head      []byte // model + the member that holds one user message's text (its opening quote not included)
	close     string // what closes head's member after the text
	maxKey    []byte // ,"max_tokens":  or  ,"max_output_tokens":
	tail      []byte // ,"stream":…[,"stream_options":…][,extra members]
	ignoreEOS bool   // ExtraBody sets ignore_eos itself: do not add it per request
}

func newBodyTemplate(cfg *Config) (bodyTemplate, error) {
	t := bodyTemplate{api: cmp.Or(cfg.API, APIChat)}
	t.model = append(t.model, `{"model":`...)
	t.model = appendJSONString(t.model, cfg.Model)
	t.head = append(t.head, t.model...)
	t.maxKey = []byte(`,"max_tokens":`)
	switch t.api {
	case APICompletions:
		t.head = append(t.head, `,"prompt":`...)
	case APIEmbeddings:
		t.head = append(t.head, `,"input":[`...)
		t.close = "]"
	case APIRerank:
		t.head = append(t.head, `,"query":`...)
	case APIResponses:
		t.head = append(t.head, `,"input":[{"role":"user","content":`...)
		t.close = "}]"
		t.maxKey = []byte(`,"max_output_tokens":`)
	default: // chat, messages
		t.head = append(t.head, `,"messages":[{"role":"user","content":`...)
		t.close = "}]"
	}
	if Generates(t.api) {
		t.tail = append(t.tail, `,"stream":`...)
		t.tail = strconv.AppendBool(t.tail, cfg.Stream)
	}
	_, extraStreamOptions := cfg.ExtraBody["stream_options"]
	if cfg.Stream && cfg.IncludeUsage && !extraStreamOptions && Generates(t.api) && grammarOf(t.api) == GrammarChat {
		t.tail = append(t.tail, `,"stream_options":{"include_usage":true}`...)
	}
	keys := make([]string, 0, len(cfg.ExtraBody))
	for k := range cfg.ExtraBody {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(reservedBodyKeys, k) {
			return t, fmt.Errorf("openai: extra body: member %q is set by the client", k)
		}
		v, err := json.Marshal(cfg.ExtraBody[k])
		if err != nil {
			return t, fmt.Errorf("openai: extra body: member %q: %w", k, err)
		}
		t.tail = append(t.tail, ',')
		t.tail = appendJSONString(t.tail, k)
		t.tail = append(t.tail, ':')
		t.tail = append(t.tail, v...)
		if k == "ignore_eos" {
			t.ignoreEOS = true
		}
	}
	return t, nil
}

// appendBody appends the JSON request body for req to b: its Messages (or
// Prompt as one user message; for completions the prompt, or the messages'
// contents joined by blank lines; for Messages the system messages' in the
// top-level "system"), the output cap, the constant members, then
// req.Extra.
func (t *bodyTemplate) appendBody(b []byte, req *workload.Request) []byte {
	switch {
	case t.api == APIEmbeddings:
		b = append(b, t.head...)
		if req.Inputs == nil {
			b = appendJSONString(b, req.Prompt)
		}
		b = appendStrings(b, req.Inputs)
		b = append(b, ']')
	case t.api == APIRerank:
		b = append(b, t.head...)
		b = appendJSONString(b, req.Prompt)
		b = append(b, `,"documents":[`...)
		b = appendStrings(b, req.Inputs)
		b = append(b, ']')
	case req.Messages == nil:
		b = append(b, t.head...)
		b = appendContent(b, t.api, req.Prompt, req.Images)
		b = append(b, t.close...)
	case t.api == APICompletions:
		b = append(b, t.model...)
		b = append(b, `,"prompt":"`...)
		for i, m := range req.Messages {
			if i > 0 {
				b = append(b, `\n\n`...)
			}
			b = appendEscaped(b, m.Content)
		}
		b = append(b, '"')
	case t.api == APIMessages:
		b = append(b, t.model...)
		b = t.appendSystem(b, req.Messages)
		b = appendMessages(b, t.api, `,"messages":[`, req, "system")
	case t.api == APIResponses:
		b = append(b, t.model...)
		b = appendMessages(b, t.api, `,"input":[`, req, "")
	default:
		b = append(b, t.model...)
		b = appendMessages(b, t.api, `,"messages":[`, req, "")
	}
	if req.MaxTokens > 0 && Generates(t.api) {
		b = append(b, t.maxKey...)
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	b = append(b, t.tail...)
	if len(req.Extra) > 0 {
		b = append(b, ',')
		b = append(b, req.Extra...)
	}
	if req.IgnoreEOS && !t.ignoreEOS && Generates(t.api) {
		b = append(b, `,"ignore_eos":true`...)
	}
	return append(b, '}')
}

// appendStrings appends ss as JSON strings separated by commas.
func appendStrings(b []byte, ss []string) []byte {
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return b
}

// appendMessages appends member (e.g. `,"messages":[`), then each of
// req's messages whose role is not skip as {"role":…,"content":…}, the
// request's images with the last user message, and the closing bracket.
func appendMessages(b []byte, api, member string, req *workload.Request, skip string) []byte {
	b = append(b, member...)
	last := -1
	if len(req.Images) > 0 {
		for i, m := range req.Messages {
			if m.Role == "user" {
				last = i
			}
		}
	}
	first := true
	for i, m := range req.Messages {
		if skip != "" && m.Role == skip {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"role":`...)
		b = appendJSONString(b, m.Role)
		b = append(b, `,"content":`...)
		if i == last {
			b = appendContent(b, api, m.Content, req.Images)
		} else {
			b = appendJSONString(b, m.Content)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendContent appends a message's content: its text as a string, or,
// with images, an array of the text part and one part per image in the
// API's shape (chat image_url, Responses input_image, Messages image with
// a base64 source), each image inline as base64.
func appendContent(b []byte, api, text string, images []*workload.Image) []byte {
	if len(images) == 0 {
		return appendJSONString(b, text)
	}
	textPart := `[{"type":"text","text":`
	if api == APIResponses {
		textPart = `[{"type":"input_text","text":`
	}
	b = append(b, textPart...)
	b = appendJSONString(b, text)
	b = append(b, '}')
	for _, im := range images {
		switch api {
		case APIResponses:
			b = append(b, `,{"type":"input_image","image_url":"data:`...)
			b = append(b, im.MediaType...)
			b = append(b, ";base64,"...)
			b = append(b, im.Base64...)
			b = append(b, `"}`...)
		case APIMessages:
			b = append(b, `,{"type":"image","source":{"type":"base64","media_type":"`...)
			b = append(b, im.MediaType...)
			b = append(b, `","data":"`...)
			b = append(b, im.Base64...)
			b = append(b, `"}}`...)
		default:
			b = append(b, `,{"type":"image_url","image_url":{"url":"data:`...)
			b = append(b, im.MediaType...)
			b = append(b, ";base64,"...)
			b = append(b, im.Base64...)
			b = append(b, `"}}`...)
		}
	}
	return append(b, ']')
}

// appendSystem appends the Messages API's top-level "system" member: the
// system messages' contents joined by blank lines (the API takes no
// system role among its messages); nothing without one.
func (t *bodyTemplate) appendSystem(b []byte, msgs []workload.Message) []byte {
	n := 0
	for _, m := range msgs {
		if m.Role != "system" {
			continue
		}
		if n == 0 {
			b = append(b, `,"system":"`...)
		} else {
			b = append(b, `\n\n`...)
		}
		b = appendEscaped(b, m.Content)
		n++
	}
	if n > 0 {
		b = append(b, '"')
	}
	return b
}

// appendJSONString appends s to b as a JSON string (jsontext.AppendString).
func appendJSONString(b []byte, s string) []byte { return jsontext.AppendString(b, s) }

// appendEscaped appends s escaped for the inside of a JSON string.
func appendEscaped(b []byte, s string) []byte { return jsontext.AppendEscaped(b, s) }
