package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// The APIs a probe calls (as run.Options.API names them), each at its
// path under the base URL (Probe.Path).
const (
	APIChat        = "chat"        // POST /chat/completions
	APICompletions = "completions" // POST /completions
	APIResponses   = "responses"   // POST /responses: OpenAI's Responses API, typed events
	APIMessages    = "messages"    // POST /messages: Anthropic's Messages API, typed events
	APIEmbeddings  = "embeddings"  // POST /embeddings: vectors, never streamed
	APIRerank      = "rerank"      // POST /rerank: scored documents, never streamed
)

// maxBody bounds a non-streamed or error body kept in memory; maxLine an
// SSE line.
const (
	maxBody = 1 << 20
	maxLine = 1 << 20
)

// Probe sends check requests to one endpoint and keeps every chunk of a
// response with its arrival time, in memory only. It is not the measured
// client (package openai): a check is a handful of requests, so clarity
// wins over allocations. Safe for concurrent use.
type Probe struct {
	base   *url.URL // base URL including /v1, no trailing slash; its query goes on every request
	badURL error    // why the base URL does not parse (every request fails with it)
	model  string
	api    string // APIChat, APICompletions, APIResponses, …
	client *http.Client
	header http.Header // Content-Type, User-Agent, Authorization, extra headers: secret values
	sent   atomic.Int64
}

// NewProbe returns a probe of the API at base (including /v1) for model,
// with client and the headers every request carries (their values are
// never logged or reported).
func NewProbe(base, model, api string, client *http.Client, header http.Header) *Probe {
	if api == "" {
		api = APIChat
	}
	p := &Probe{base: &url.URL{}, model: model, api: api, client: client, header: header.Clone()}
	if u, err := url.Parse(base); err != nil {
		p.badURL = fmt.Errorf("check: the base URL does not parse: %w", err)
	} else {
		p.base = u
	}
	return p
}

// url is the URL of path under the base URL: the path appended to the
// base's path, the base's query kept (an Azure-style ?api-version=…),
// as package openai builds its endpoint.
func (p *Probe) url(path string) string {
	u := *p.base
	u.RawPath = ""
	u.Path = strings.TrimRight(u.Path, "/") + path
	return u.String()
}

// Model is the model name sent; API the API called.
func (p *Probe) Model() string { return p.model }

// API is the API the probe calls: APIChat, APICompletions, APIResponses,
// APIMessages, APIEmbeddings or APIRerank.
func (p *Probe) API() string { return p.api }

// Chat reports whether the probe calls the chat API.
func (p *Probe) Chat() bool { return p.api == APIChat }

// Sent is the number of requests sent so far (every method counts).
func (p *Probe) Sent() int { return int(p.sent.Load()) }

// Req is one request. The probe writes model, the prompt in the API's
// member (messages for chat and Messages: Messages, or one user message
// of Prompt; prompt for completions; input for Responses, the Prompt
// string; input for embeddings: Inputs; query (Prompt) and documents
// (Inputs) for rerank), the cap (max_tokens; max_output_tokens for
// Responses; none for embeddings and rerank) and stream; Extra adds every
// other member (stop, temperature, seed, tools, response_format,
// stream_options, …) and wins over the probe's own.
type Req struct {
	Prompt    string
	Messages  []map[string]any // chat and Messages only; replaces Prompt
	Inputs    []string         // embeddings' inputs (nil: [Prompt]); rerank's documents
	MaxTokens int              // 0 = not sent
	Stream    bool
	Extra     map[string]any
	// Raw, when set, is sent verbatim as the body (malformed requests).
	Raw []byte
	// Timeout bounds the whole exchange (0 = none beyond ctx).
	Timeout time.Duration
}

// Usage is a response's token usage.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ToolCall is one assembled tool call: the name, and the arguments as
// the concatenation of every delta (which may not be valid JSON).
type ToolCall struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Chunk is one SSE data event.
type Chunk struct {
	At        time.Duration // since the request was sent
	Content   string        // content (chat) or text (completions) of choice 0; a text delta (Responses, Messages)
	Reasoning string        // reasoning / reasoning_content of choice 0; a reasoning or thinking delta
	ToolDelta int           // tool-call deltas in the event
	Finish    string        // finish_reason, if the event has one
	Usage     bool          // the event carries usage
	// Type is the event's type in the typed streams (Responses,
	// Messages): "response.output_text.delta", "message_stop", …; "" in
	// chat and completions streams. It stays in memory: a server's own
	// types are not repeated in evidence.
	Type string
	// Index is the content block a Messages event belongs to
	// (content_block_start, _delta, _stop); Block the type of the block
	// a content_block_start opens (text, thinking, tool_use).
	Index int
	Block string
}

// Exchange is one request and everything its response showed.
type Exchange struct {
	Status    int
	Header    http.Header
	Sent      time.Time
	HeadersAt time.Duration // response headers, since Sent
	Elapsed   time.Duration // the last byte, or the error, since Sent
	Reused    bool          // the request went on a reused connection
	// Retried is true when the first attempt failed on a kept-alive
	// connection the server had closed, and the request was sent again.
	Retried bool
	// Close is true when the response said it closes the connection
	// (Connection: close, or HTTP/1.0 without keep-alive).
	Close bool

	Stream bool
	Chunks []Chunk // streamed responses: every data event in order
	// Done is true when the stream's end came: [DONE] (chat and
	// completions), response.completed or response.incomplete
	// (Responses, the end event in Chunks), message_stop (Messages).
	Done bool
	// EndErr is why a stream ended without its end ([DONE], or the typed
	// stream's end event) or a body could not be read (nil for a
	// complete response); TimedOut when the timeout did it.
	EndErr   error
	TimedOut bool

	Text      string // assembled content (chat) or text (completions, Responses, Messages)
	Reasoning string
	// FinishReason is choice 0's finish_reason (chat, completions), the
	// response's status (Responses: completed, incomplete) or the
	// stop_reason (Messages: end_turn, max_tokens, tool_use, …).
	FinishReason string
	// Usage is the usage reported; Responses' input_tokens and
	// output_tokens, Messages' (message_start's input, message_delta's
	// output) as prompt and completion tokens.
	Usage     *Usage
	ToolCalls []ToolCall
	// Body is a non-streamed response's body, or an error response's
	// (at most maxBody bytes).
	Body []byte
	// StreamAsked is true when the request asked for a stream; with a
	// 200 that is not Stream the server ignored stream:true.
	StreamAsked bool
}

// FirstContent is the arrival of the first chunk with content, reasoning
// or a tool-call delta; -1 when none came.
func (x *Exchange) FirstContent() time.Duration {
	for _, c := range x.Chunks {
		if c.Content != "" || c.Reasoning != "" || c.ToolDelta > 0 {
			return c.At
		}
	}
	return -1
}

// ContentChunks counts the chunks with content, reasoning or tool deltas.
func (x *Exchange) ContentChunks() int {
	n := 0
	for _, c := range x.Chunks {
		if c.Content != "" || c.Reasoning != "" || c.ToolDelta > 0 {
			n++
		}
	}
	return n
}

// ErrorBody is the OpenAI error shape {"error":{"message":…,"type":…}},
// decoded from Body; ok false when Body is not one.
func (x *Exchange) ErrorBody() (typ string, ok bool) {
	var e struct {
		Error *struct {
			Message *string `json:"message"`
			Type    any     `json:"type"`
			Code    any     `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(x.Body, &e) != nil || e.Error == nil || e.Error.Message == nil {
		return "", false
	}
	if s, isStr := e.Error.Type.(string); isStr {
		typ = s
	}
	return typ, true
}

// Body builds the JSON body of r.
func (p *Probe) Body(r Req) []byte {
	if r.Raw != nil {
		return r.Raw
	}
	m := map[string]any{"model": p.model}
	maxKey := "max_tokens"
	switch p.api {
	case APIChat, APIMessages:
		msgs := r.Messages
		if msgs == nil {
			msgs = []map[string]any{{"role": "user", "content": r.Prompt}}
		}
		m["messages"] = msgs
	case APIResponses:
		m["input"] = r.Prompt
		maxKey = "max_output_tokens"
	case APIEmbeddings:
		in := r.Inputs
		if in == nil {
			in = []string{r.Prompt}
		}
		m["input"] = in
	case APIRerank:
		m["query"], m["documents"] = r.Prompt, r.Inputs
	default:
		m["prompt"] = r.Prompt
	}
	if r.MaxTokens > 0 && p.generates() {
		m[maxKey] = r.MaxTokens
	}
	if r.Stream && p.generates() {
		m["stream"] = true
	}
	maps.Copy(m, r.Extra)
	b, _ := json.Marshal(m) // maps of JSON values always marshal
	return b
}

// generates reports whether the API generates (and may stream) tokens:
// not embeddings and rerank.
func (p *Probe) generates() bool { return p.api != APIEmbeddings && p.api != APIRerank }

// Path is the path of the probe's API under the base URL:
// /chat/completions, /completions, /responses, /messages, /embeddings
// or /rerank.
func (p *Probe) Path() string { return apiPaths[p.api] }

// apiPaths are the APIs' paths under the base URL.
var apiPaths = map[string]string{
	APIChat: "/chat/completions", APICompletions: "/completions", APIResponses: "/responses",
	APIMessages: "/messages", APIEmbeddings: "/embeddings", APIRerank: "/rerank",
}

func (p *Probe) path() string { return p.Path() }

// Send sends r to the completion endpoint and reads the whole response.
// The error is for a request that got no response (connection refused,
// a timeout before the headers, a bad URL); a response that breaks off is
// an Exchange with EndErr.
func (p *Probe) Send(ctx context.Context, r Req) (*Exchange, error) {
	return p.do(ctx, http.MethodPost, p.path(), p.Body(r), r.Timeout, r.Stream, r.MaxTokens)
}

// Get fetches path under the base URL (e.g. "/models") with the probe's
// headers; the body is in Exchange.Body.
func (p *Probe) Get(ctx context.Context, path string, timeout time.Duration) (*Exchange, error) {
	return p.Do(ctx, http.MethodGet, path, nil, timeout, false)
}

// Do sends one request to base+path and reads the response: as SSE when
// it is text/event-stream (or stream is true and the status is 200), else
// as a body. A request that failed on a kept-alive connection before any
// response came (the server had closed it) is sent once more on a new
// connection, as HTTP clients do for idempotent requests; Exchange.Retried
// says so (streaming.keepalive reports such closes, the other checks are
// not failed by them).
func (p *Probe) Do(ctx context.Context, method, path string, body []byte, timeout time.Duration, stream bool) (*Exchange, error) {
	return p.do(ctx, method, path, body, timeout, stream, 0)
}

// do is Do for a request of maxTokens (0: none): a stream that carries
// more content events than maxTokens allows ends there (ErrMaxTokensIgnored),
// rather than at the timeout.
func (p *Probe) do(ctx context.Context, method, path string, body []byte, timeout time.Duration, stream bool, maxTokens int) (*Exchange, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	x := &Exchange{StreamAsked: stream}
	resp, err := p.roundTrip(ctx, x, method, path, body, stream)
	if err != nil && x.Reused && ctx.Err() == nil {
		x.Retried = true
		resp, err = p.roundTrip(ctx, x, method, path, body, stream)
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			x.TimedOut, x.EndErr, x.Elapsed = true, err, time.Since(x.Sent)
			return x, nil // no headers before the timeout: an answer of its own
		}
		return nil, err
	}
	defer resp.Body.Close()
	x.HeadersAt = time.Since(x.Sent)
	x.Status, x.Header, x.Close = resp.StatusCode, resp.Header, resp.Close
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") || (stream && resp.StatusCode == http.StatusOK && ct == "") {
		x.Stream = true
		x.readStream(resp.Body, maxTokens, grammarOf(p.api))
		// Read what follows [DONE] (the chunked terminator), so that the
		// connection can be reused: keep-alive is one of the checks.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	} else {
		x.Body, x.EndErr = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if x.EndErr == nil && resp.StatusCode == http.StatusOK {
			x.decodeBody(p.api)
		}
	}
	x.Elapsed = time.Since(x.Sent)
	if x.EndErr != nil && ctx.Err() != nil {
		x.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	}
	return x, nil
}

// roundTrip sends one attempt of a request and returns its response
// (headers read, body not), noting in x when it was sent and whether the
// connection was reused.
func (p *Probe) roundTrip(ctx context.Context, x *Exchange, method, path string, body []byte, stream bool) (*http.Response, error) {
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { x.Reused = i.Reused },
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	if p.badURL != nil {
		return nil, p.badURL
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url(path), rd)
	if err != nil {
		return nil, fmt.Errorf("check: building the request: %w", err)
	}
	req.Header = p.header.Clone()
	if body == nil {
		req.Header.Del("Content-Type")
	}
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	p.sent.Add(1)
	x.Sent = time.Now()
	return p.client.Do(req)
}

// wireChunk is the part of a streamed event the probe reads.
type wireChunk struct {
	Choices []struct {
		Index        int         `json:"index"`
		Delta        wireMessage `json:"delta"`
		Text         *string     `json:"text"`
		FinishReason *string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// wireMessage is a chat delta (streamed) or message (a body): content,
// reasoning under either of its names, tool calls.
type wireMessage struct {
	Content          *string    `json:"content"`
	Reasoning        string     `json:"reasoning"`
	ReasoningContent string     `json:"reasoning_content"`
	ToolCalls        []wireTool `json:"tool_calls"`
}

type wireTool struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// errBadEvent marks a data event that is not JSON; errStreamError an
// error event inside the stream.
var (
	errBadEvent    = errors.New("a data event is not valid JSON")
	errStreamError = errors.New("the stream carried an error event")
	errNoDone      = errors.New("the stream ended without [DONE]")
)

// ErrMaxTokensIgnored ends a stream that went on past its max_tokens (by
// more than analyze.IgnoredMaxTokens allows): an endless stream is
// reported as what it is, not as a timeout.
var ErrMaxTokensIgnored = errors.New("max_tokens ignored")

// endless reports whether a stream of content events for a request of
// maxTokens (0: none) has gone on so far past it that it would run to
// the timeout: more than max(2 × max_tokens, max_tokens + 64) events.
// A stream that overshoots by less ends by itself, and the checks judge
// its overshoot (sampling.max-tokens) with its usage.
func endless(content, maxTokens int) bool {
	return maxTokens > 0 && content > max(2*maxTokens, maxTokens+64)
}

// step is what one data event was to the stream.
type step uint8

const (
	stepEvent step = iota // an event: kept in Chunks
	stepEnd               // the stream's end event: kept, and the stream is read no further
	stepDone              // [DONE]: the stream is read no further
	stepBad               // Exchange.EndErr says why the stream is read no further
)

// grammar reads the data events of one API's streams: decode reads a
// payload into c, the exchange and the assembly, and says what it was;
// end names what ends a stream, for the error of one that breaks off.
type grammar struct {
	end    string
	decode func(x *Exchange, a *assembly, data []byte, c *Chunk) step
}

// grammarOf is the grammar of an API's streams.
func grammarOf(api string) grammar {
	switch api {
	case APIResponses:
		return grammar{end: "response.completed or response.incomplete", decode: decodeResponsesEvent}
	case APIMessages:
		return grammar{end: "message_stop", decode: decodeMessagesEvent}
	}
	return grammar{end: "[DONE]", decode: decodeChatChunk}
}

// assembly is what a stream's events add up to as they come: the text,
// the reasoning and the tool calls (by index).
type assembly struct {
	text, reasoning strings.Builder
	tools           map[int]*ToolCall
	order           []int
	// startInput is a Messages tool_use block's input as its
	// content_block_start gave it, for a call whose input came whole
	// there rather than in input_json_delta pieces.
	startInput map[int]string
}

// tool is the call at index i, begun when first seen.
func (a *assembly) tool(i int) *ToolCall {
	tc, seen := a.tools[i]
	if !seen {
		tc = &ToolCall{Index: i}
		a.tools[i] = tc
		a.order = append(a.order, i)
	}
	return tc
}

// readStream reads SSE data events until the stream's end ([DONE] or
// the API's end event), EOF or an error.
func (x *Exchange) readStream(r io.Reader, maxTokens int, g grammar) {
	br := bufio.NewReaderSize(r, 64<<10)
	a := &assembly{tools: map[int]*ToolCall{}, startInput: map[int]string{}}
	content := 0
	for {
		line, err := readLine(br)
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			c := Chunk{At: time.Since(x.Sent)}
			st := g.decode(x, a, bytes.TrimSpace(data), &c)
			if st == stepDone {
				x.Done = true
				break
			}
			if st == stepBad {
				break
			}
			a.text.WriteString(c.Content)
			a.reasoning.WriteString(c.Reasoning)
			x.Chunks = append(x.Chunks, c)
			if st == stepEnd {
				x.Done = true
				break
			}
			if c.Content != "" || c.Reasoning != "" || c.ToolDelta > 0 {
				// Every content event carries at least one token.
				if content++; endless(content, maxTokens) {
					x.EndErr = fmt.Errorf("%w: more than %d content events for max_tokens %d", ErrMaxTokensIgnored, content-1, maxTokens)
					break
				}
			}
		}
		if err != nil {
			switch {
			case !errors.Is(err, io.EOF):
				x.EndErr = err
			case g.end == "[DONE]":
				x.EndErr = errNoDone
			default:
				x.EndErr = errors.New("the stream ended without " + g.end)
			}
			break
		}
	}
	x.Text, x.Reasoning = a.text.String(), a.reasoning.String()
	for _, i := range a.order {
		tc := *a.tools[i]
		if tc.Arguments == "" {
			tc.Arguments = a.startInput[i]
		}
		x.ToolCalls = append(x.ToolCalls, tc)
	}
}

// decodeChatChunk reads one event of a chat or completions stream.
func decodeChatChunk(x *Exchange, a *assembly, data []byte, c *Chunk) step {
	if string(data) == "[DONE]" {
		return stepDone
	}
	var w wireChunk
	if json.Unmarshal(data, &w) != nil {
		x.EndErr = errBadEvent
		return stepBad
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		x.EndErr = errStreamError
		x.Body = append([]byte(nil), data...)
		return stepBad
	}
	for _, ch := range w.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.Delta.Content != nil {
			c.Content = *ch.Delta.Content
		} else if ch.Text != nil {
			c.Content = *ch.Text
		}
		c.Reasoning = ch.Delta.Reasoning + ch.Delta.ReasoningContent
		c.ToolDelta = len(ch.Delta.ToolCalls)
		for _, d := range ch.Delta.ToolCalls {
			tc := a.tool(d.Index)
			if d.ID != "" {
				tc.ID = d.ID
			}
			tc.Name += d.Function.Name
			tc.Arguments += d.Function.Arguments
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			c.Finish = *ch.FinishReason
			x.FinishReason = c.Finish
		}
	}
	if w.Usage != nil {
		c.Usage = true
		x.Usage = w.Usage
	}
	return stepEvent
}

// readLine returns the next line without its end of line; a line longer
// than maxLine is an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxLine {
			return nil, errors.New("an SSE line is longer than 1 MiB")
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// decodeBody reads a non-streamed body of the API.
func (x *Exchange) decodeBody(api string) {
	var err error
	switch api {
	case APIResponses:
		err = x.decodeResponsesBody()
	case APIMessages:
		err = x.decodeMessagesBody()
	case APIEmbeddings, APIRerank:
		// The checks read vectors and results themselves; the usage is
		// the OpenAI-shaped one (prompt_tokens, total_tokens).
		var b struct {
			Usage *Usage `json:"usage"`
		}
		err = json.Unmarshal(x.Body, &b)
		x.Usage = b.Usage
	default:
		err = x.decodeChatBody()
	}
	if err != nil {
		x.EndErr = errors.New("the body is not valid JSON")
	}
}

// decodeChatBody reads a non-streamed chat or completion body.
func (x *Exchange) decodeChatBody() error {
	var b struct {
		Choices []struct {
			Index        int         `json:"index"`
			Message      wireMessage `json:"message"`
			Text         *string     `json:"text"`
			FinishReason *string     `json:"finish_reason"`
		} `json:"choices"`
		Usage *Usage `json:"usage"`
	}
	if err := json.Unmarshal(x.Body, &b); err != nil {
		return err
	}
	x.Usage = b.Usage
	for _, ch := range b.Choices {
		if ch.Index != 0 {
			continue
		}
		switch {
		case ch.Message.Content != nil:
			x.Text = *ch.Message.Content
		case ch.Text != nil:
			x.Text = *ch.Text
		}
		x.Reasoning = ch.Message.Reasoning + ch.Message.ReasoningContent
		if ch.FinishReason != nil {
			x.FinishReason = *ch.FinishReason
		}
		for i, t := range ch.Message.ToolCalls {
			x.ToolCalls = append(x.ToolCalls, ToolCall{Index: i, ID: t.ID, Name: t.Function.Name, Arguments: t.Function.Arguments})
		}
	}
	return nil
}

// CloseIdle closes the probe's idle connections, so the next request
// dials a new one.
func (p *Probe) CloseIdle() { p.client.CloseIdleConnections() }
