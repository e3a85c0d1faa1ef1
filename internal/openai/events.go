package openai

// Grammar is the event grammar of a streamed response: chat (and
// completions) chunks ending with "data: [DONE]", or the typed events of
// the Responses API or of Anthropic's Messages API, which end with an
// event of their own.
type Grammar uint8

const (
	GrammarChat      Grammar = iota // chat.completion.chunk / text_completion chunks, then [DONE]
	GrammarResponses                // response.* events, ending with response.completed or response.incomplete
	GrammarMessages                 // message_start … message_stop
)

// grammarOf is the streaming grammar of an API (chat for the APIs that do
// not stream).
func grammarOf(api string) Grammar {
	switch api {
	case APIResponses:
		return GrammarResponses
	case APIMessages:
		return GrammarMessages
	}
	return GrammarChat
}

// EventKind is what a typed event means to the measurement.
type EventKind uint8

const (
	EventData    EventKind = iota // a chat chunk, or an event that may carry content or usage
	EventEnd                      // the stream's successful end (response.completed/incomplete, message_stop)
	EventUnknown                  // a type this grammar does not know: ignored and counted
	EventUntyped                  // no "type" string: not this grammar at all
)

// ScanEvent scans one streamed data payload under grammar g. For chat it
// is ScanChunk. For the typed grammars it fills the same Chunk (Content,
// Text, Usage and token counts, Error and ErrorType) from the event's
// "type" and members, and Kind says whether the event ended the stream or
// was of a type the grammar does not know; Object is the raw "object"
// member of an untyped payload (a chat chunk's "chat.completion.chunk"),
// to name what came instead. It allocates nothing.
//
// Responses: response.output_text.delta and response.refusal.delta carry
// answer text, response.reasoning_text.delta,
// response.reasoning_summary_text.delta and
// response.function_call_arguments.delta other content (each when its
// "delta" is a non-empty string); response.completed and
// response.incomplete end the stream with the usage of their "response"
// (input_tokens, output_tokens and their details); response.failed and
// error are errors. Messages: content_block_delta carries answer text
// (text_delta) or other content (thinking_delta, input_json_delta) when
// its text is non-empty; message_start gives the prompt's tokens
// (input_tokens + cache_read_input_tokens + cache_creation_input_tokens),
// message_delta the output tokens so far; message_stop ends the stream;
// error is an error.
func ScanEvent(g Grammar, data []byte) (Chunk, EventKind, []byte, error) {
	if g == GrammarChat {
		c, err := ScanChunk(data)
		return c, EventData, nil, err
	}
	var (
		c      Chunk
		ev     typedEvent
		object []byte
	)
	s := scanner{b: data}
	s.ws()
	if s.peek() != '{' {
		if _, err := ScanChunk(data); err != nil {
			return Chunk{}, EventData, nil, err
		}
		return Chunk{}, EventData, nil, errNotObject
	}
	more, err := s.objectStart(1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kType:
			ev.typ, ev.typed, err = s.stringValue(1)
		case kDelta:
			if g == GrammarResponses {
				ev.delta, err = s.nonEmptyString(1)
			} else {
				err = s.messagesDelta(1, &ev)
			}
		case kResponse, kMessage:
			err = s.eventBody(1, &c, &ev)
		case kUsage:
			err = s.usage(1, &c, true)
		case kError:
			ev.errSet, ev.errType, err = s.errorValue(1)
		case kCode:
			ev.code, err = s.tokenValue(1)
		case kObject:
			object, err = s.tokenValue(1)
		default:
			err = s.value(1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	if err = s.end(err); err != nil {
		return Chunk{}, EventData, nil, err
	}
	if !ev.typed {
		return Chunk{}, EventUntyped, object, nil
	}
	if g == GrammarResponses {
		return responsesEvent(c, &ev), responsesKind(ev.typ), nil, nil
	}
	return messagesEvent(c, &ev), messagesKind(ev.typ), nil, nil
}

// typedEvent holds the members of one typed event until its type is known
// (members come in any order).
type typedEvent struct {
	typ       []byte // raw "type" (escapes not decoded: no event name has any)
	typed     bool   // "type" was a string
	delta     bool   // Responses: "delta" is a non-empty string; Messages: the delta's text is
	deltaTyp  []byte // Messages: the delta's "type"
	errSet    bool   // a non-null "error" member
	errType   []byte // its type or code
	code      []byte // a top-level "code" (Responses' error event)
	bodyError bool   // the response's own "error" is non-null (response.failed)
	bodyType  []byte // its code
}

// responsesEvent is the Chunk of a Responses event of type ev.typ; c holds
// the usage read from its members.
func responsesEvent(c Chunk, ev *typedEvent) Chunk {
	switch string(ev.typ) {
	case "response.output_text.delta", "response.refusal.delta":
		c.Content, c.Text = ev.delta, ev.delta
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.function_call_arguments.delta":
		c.Content = ev.delta
	case "response.failed":
		c.Error, c.ErrorType = true, ev.bodyType
	case "error":
		c.Error, c.ErrorType = true, ev.code
		if len(ev.errType) > 0 {
			c.ErrorType = ev.errType
		}
	case "response.completed", "response.incomplete":
	default:
		c.Usage, c.PromptTokens, c.CompletionTokens, c.ReasoningTokens, c.CachedTokens = false, 0, 0, 0, 0
	}
	return c
}

// responsesKind says what a Responses event type means for the stream.
func responsesKind(typ []byte) EventKind {
	switch string(typ) {
	case "response.completed", "response.incomplete":
		return EventEnd
	case "response.created", "response.in_progress", "response.queued", "response.failed", "error",
		"response.output_item.added", "response.output_item.done",
		"response.content_part.added", "response.content_part.done",
		"response.output_text.delta", "response.output_text.done", "response.output_text.annotation.added",
		"response.refusal.delta", "response.refusal.done",
		"response.reasoning_text.delta", "response.reasoning_text.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done":
		return EventData
	}
	return EventUnknown
}

// messagesEvent is the Chunk of a Messages event of type ev.typ.
func messagesEvent(c Chunk, ev *typedEvent) Chunk {
	switch string(ev.typ) {
	case "content_block_delta":
		switch string(ev.deltaTyp) {
		case "text_delta":
			c.Content, c.Text = ev.delta, ev.delta
		case "thinking_delta", "input_json_delta":
			c.Content = ev.delta
		}
	case "message_start":
		c.CompletionTokens = 0 // the start's output_tokens is a placeholder (1)
	case "message_delta":
	case "error":
		c.Error, c.ErrorType = true, ev.errType
	default:
		c.Usage, c.PromptTokens, c.CompletionTokens, c.ReasoningTokens, c.CachedTokens = false, 0, 0, 0, 0
	}
	return c
}

// messagesKind says what a Messages event type means for the stream.
func messagesKind(typ []byte) EventKind {
	switch string(typ) {
	case "message_stop":
		return EventEnd
	case "message_start", "message_delta", "content_block_start", "content_block_delta", "content_block_stop", "ping", "error":
		return EventData
	}
	return EventUnknown
}

// stringValue consumes a value and returns the raw contents of a string,
// and whether it was one.
func (s *scanner) stringValue(depth int) ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, s.value(depth)
	}
	start, end, _, err := s.str()
	return s.b[start:end], err == nil, err
}

// messagesDelta consumes a Messages "delta" object: its type, and whether
// its text, thinking or partial_json is a non-empty string.
func (s *scanner) messagesDelta(depth int, ev *typedEvent) error {
	if s.peek() != '{' {
		return s.value(depth)
	}
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kType:
			ev.deltaTyp, _, err = s.stringValue(depth + 1)
		case kText, kThinking, kPartialJSON:
			var ne bool
			ne, err = s.nonEmptyString(depth + 1)
			ev.delta = ev.delta || ne
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return err
}

// eventBody consumes a Responses "response" or a Messages "message"
// object: its usage into c, and its error.
func (s *scanner) eventBody(depth int, c *Chunk, ev *typedEvent) error {
	if s.peek() != '{' {
		return s.value(depth)
	}
	more, err := s.objectStart(depth + 1)
	for err == nil && more {
		var k keyID
		if k, err = s.key(); err != nil {
			break
		}
		switch k {
		case kUsage:
			err = s.usage(depth+1, c, true)
		case kError:
			ev.bodyError, ev.bodyType, err = s.errorValue(depth + 1)
		default:
			err = s.value(depth + 1)
		}
		if err == nil {
			more, err = s.objectNext()
		}
	}
	return err
}
