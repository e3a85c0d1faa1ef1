package openai

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// errLineTooLong reports an SSE line over MaxLineBytes.
var errLineTooLong = errors.New("openai: SSE line too long")

// streamState accumulates what a stream has shown so far.
type streamState struct {
	dataChunks   int     // data chunks of any kind
	content      int     // chunks carrying content
	firstChunk   int64   // first data chunk
	firstToken   int64   // first content chunk (any kind)
	firstText    int64   // first chunk with answer text
	lastToken    int64   // latest content chunk
	itlMax       int64   // longest gap between content chunks
	budget       int64   // the per-token budget, ns (Config.TokenBudget); 0 = smooth not kept
	smooth       int64   // the latest content chunk time − (i − 1) × budget
	choices      bool    // a chunk had a "choices" array
	finish       bool    // a chunk had a finish_reason
	usage        bool    // a non-zero usage was seen
	prompt, comp int     // the latest non-zero usage
	reason, cach int     // its reasoning and cached token details
	timings      Timings // llama.cpp's timings object, when a chunk had one
	unknown      int     // events of a type the grammar does not know (typed grammars)
}

// fill copies the state into rec. Token counts come from the server's usage
// when it sent a non-zero one, else from the content chunks counted.
func (st *streamState) fill(rec *record.Record) {
	rec.FirstChunkNs = st.firstChunk
	rec.FirstTokenNs = st.firstToken
	rec.FirstTextNs = st.firstText
	rec.ITLMaxNs = st.itlMax
	if st.budget > 0 {
		rec.SmoothNs = st.smooth
	}
	rec.Chunks = st.content
	rec.UnknownEvents = st.unknown
	if st.usage {
		rec.PromptTokens, rec.OutputTokens, rec.UsageFromServer = st.prompt, st.comp, true
		rec.ReasoningTokens, rec.CachedTokens = st.reason, st.cach
	} else {
		rec.PromptTokens, rec.OutputTokens, rec.UsageFromServer = st.prompt, st.content, false
		rec.ReasoningTokens, rec.CachedTokens = 0, 0
	}
	if st.timings.Present { // after usage, as for a non-streamed body: usage's cached_tokens wins
		applyTimings(rec, st.timings)
	}
}

// endEventName names the event that ends a stream of grammar g.
func endEventName(g Grammar) string {
	switch g {
	case GrammarResponses:
		return "response.completed"
	case GrammarMessages:
		return "message_stop"
	}
	return "[DONE]"
}

// lineSource is where a stream's lines come from: surge's own
// transport's body, which hands them out from its connection's buffer
// with the chunk framing removed, or else the exchange's bufio.Reader over
// the body. ReadSlice and Discard behave as bufio.Reader's do, except that
// ReadSlice may return a piece of a line with bufio.ErrBufferFull before
// its buffer is full.
type lineSource interface {
	ReadSlice(delim byte) ([]byte, error)
	Discard(n int) (int, error)
}

// setSource makes x read its lines from body.
func (x *exchange) setSource(body io.Reader) {
	if b, ok := body.(*h1Body); ok {
		x.src = b
		return
	}
	x.br.Reset(body)
	x.src = x.br
}

// readLine returns the next line without its line ending (LF or CRLF). At
// the end of the body it returns the last, unterminated line (possibly
// empty) with io.EOF. A line over MaxLineBytes is errLineTooLong.
func (x *exchange) readLine() ([]byte, error) {
	line, err := x.src.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		x.spill = append(x.spill[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(x.spill) > MaxLineBytes+2 {
				return nil, errLineTooLong
			}
			line, err = x.src.ReadSlice('\n')
			x.spill = append(x.spill, line...)
		}
		line = x.spill
	}
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	if n > MaxLineBytes {
		return nil, errLineTooLong
	}
	return line[:n], err
}

// notSSEMediaType returns the media type of a response that is certainly
// not an event stream (JSON or HTML), lowercased, or "".
func notSSEMediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	switch {
	case strings.EqualFold(mt, "text/html"):
		return "text/html"
	case strings.EqualFold(mt, "application/json"):
		return "application/json"
	case len(mt) > len("+json") && strings.EqualFold(mt[len(mt)-len("+json"):], "+json"):
		return strings.ToLower(mt)
	}
	return ""
}

var (
	dataPrefix = []byte("data:")
	doneMarker = []byte("[DONE]")
	bom        = []byte("\xEF\xBB\xBF")
)

// isField reports whether line is the SSE field name (with or without a value).
func isField(line []byte, name string) bool {
	return len(line) >= len(name) && string(line[:len(name)]) == name && (len(line) == len(name) || line[len(name)] == ':')
}

// readStream reads an SSE response to its end and records it. Per chunk it
// reads one line, scans it without allocating and takes one clock reading.
func (c *Client) readStream(parent, ctx context.Context, x *exchange, resp *http.Response, req *workload.Request, rec *record.Record) {
	defer resp.Body.Close()
	if mt := notSSEMediaType(resp.Header.Get("Content-Type")); mt != "" {
		rec.DoneNs = c.now()
		rec.Outcome = record.InvalidResponse
		rec.Error = "not SSE"
		if t := c.safeToken(mt, req.Prompt); t != "" {
			rec.Error = "not SSE (" + t + ")"
		}
		return
	}
	// The headers have been read (attempt is done with them): let the
	// map go now rather than hold it for the whole stream.
	resp.Header = nil
	x.setSource(resp.Body)
	st := streamState{firstChunk: record.None, firstToken: record.None, firstText: record.None, lastToken: record.None, itlMax: record.None,
		budget: int64(c.cfg.TokenBudget), smooth: record.None}
	fail := func(o record.Outcome, detail string) {
		st.fill(rec)
		rec.DoneNs = c.now()
		rec.Outcome = o
		rec.Error = detail
		if o == record.StreamError {
			rec.Error += " after " + strconv.Itoa(st.content) + " chunks"
		}
	}
	lines := 0
	for {
		line, err := x.readLine()
		if err == errLineTooLong {
			fail(record.StreamError, "line over 1 MiB")
			return
		}
		if err != nil && err != io.EOF {
			// A read that fails (the timeout, a reset) may return a line cut
			// short: it is not a malformed chunk, the failure is the read.
			st.fill(rec)
			rec.DoneNs = c.now()
			c.readFailure(parent, ctx, err, rec)
			return
		}
		if err == nil || len(line) > 0 {
			lines++
		}
		if lines == 1 {
			line = bytes.TrimPrefix(line, bom)
		}
		switch {
		case len(line) == 0 || line[0] == ':': // event boundary or comment (keep-alive)
		case bytes.HasPrefix(line, dataPrefix):
			v := line[len(dataPrefix):]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			v = bytes.TrimRight(v, " \t")
			if len(v) == 0 {
				break // an empty data line carries nothing
			}
			t := c.now()
			if bytes.Equal(v, doneMarker) {
				st.fill(rec)
				rec.DoneNs = t
				switch {
				case c.grammar != GrammarChat:
					rec.Outcome, rec.Error = record.StreamError, "[DONE] before "+endEventName(c.grammar)
					return
				case !st.choices:
					rec.Outcome, rec.Error = record.InvalidResponse, "no choices"
					return
				}
				rec.Outcome = record.OK
				setTPOT(rec)
				_, _ = x.src.Discard(maxDrainBytes) // read to the end so the connection is reused
				return
			}
			st.dataChunks++
			if st.firstChunk == record.None {
				st.firstChunk = t
			}
			ch, kind, object, serr := ScanEvent(c.grammar, v)
			if serr != nil {
				fail(record.StreamError, "malformed chunk")
				return
			}
			switch kind {
			case EventUntyped:
				detail := "not a " + c.cfg.API + " event"
				if tok := c.safeToken(string(object), req.Prompt); tok != "" {
					detail += " (" + tok + ")"
				} else {
					detail += " (no type)"
				}
				fail(record.InvalidResponse, detail)
				return
			case EventUnknown:
				st.unknown++
				continue
			}
			if ch.Error {
				detail := "error in stream"
				if tok := c.errorToken(string(ch.ErrorType), req.Prompt); tok != "" {
					detail += " (" + tok + ")"
				}
				fail(record.StreamError, detail)
				return
			}
			st.choices = st.choices || ch.Choices
			st.finish = st.finish || ch.Finish
			switch {
			case c.grammar != GrammarChat && ch.Usage:
				// Typed grammars spread usage over events (Messages: the
				// prompt at the start, the output at the end).
				st.prompt = cmp.Or(ch.PromptTokens, st.prompt)
				st.comp = cmp.Or(ch.CompletionTokens, st.comp)
				st.reason = cmp.Or(ch.ReasoningTokens, st.reason)
				st.cach = cmp.Or(ch.CachedTokens, st.cach)
				st.usage = st.comp > 0 // the prompt's count alone (message_start) leaves the output counted
			case ch.Usage && (ch.PromptTokens > 0 || ch.CompletionTokens > 0):
				st.usage, st.prompt, st.comp = true, ch.PromptTokens, ch.CompletionTokens
				st.reason, st.cach = ch.ReasoningTokens, ch.CachedTokens
			}
			if ch.Text && st.firstText == record.None {
				st.firstText = t
			}
			if ch.Timings.Present {
				st.timings = ch.Timings
			}
			if ch.Content {
				st.content++
				if st.firstToken == record.None {
					st.firstToken = t
				} else if gap := t - st.lastToken; gap > st.itlMax {
					st.itlMax = gap
				}
				st.lastToken = t
				if st.budget > 0 {
					st.smooth = max(st.smooth, t-int64(st.content-1)*st.budget)
				}
			}
			if kind == EventEnd {
				st.fill(rec)
				rec.DoneNs = t
				rec.Outcome = record.OK
				setTPOT(rec)
				_, _ = x.src.Discard(maxDrainBytes) // a [DONE] may follow; read to the end so the connection is reused
				return
			}
		case isField(line, "event"), isField(line, "id"), isField(line, "retry"), isField(line, "data"):
		default:
			if st.dataChunks == 0 {
				fail(record.InvalidResponse, "not SSE")
			} else {
				fail(record.StreamError, "malformed line")
			}
			return
		}
		if err == nil {
			continue
		}
		switch { // io.EOF: other errors returned above
		case lines == 0:
			fail(record.InvalidResponse, "empty body")
		case c.grammar != GrammarChat:
			fail(record.StreamError, "no "+endEventName(c.grammar))
		case st.finish:
			fail(record.StreamError, "no [DONE] (finish_reason seen)")
		default:
			fail(record.StreamError, "no [DONE]")
		}
		return
	}
}
