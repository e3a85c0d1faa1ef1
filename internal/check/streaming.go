package check

import (
	"context"
	"fmt"
	"time"
)

// streamingChecks returns the streaming checks.
func streamingChecks() []Check {
	return []Check{
		{Name: CheckStreamIncremental, Group: GroupStreaming, Run: checkIncremental,
			What: "a streamed answer arrives token by token: first content well before the end, chunks spread over the generation (not one burst from a buffering proxy)"},
		{Name: CheckStreamLong, Group: GroupStreaming, Run: checkLong,
			What: "a long generation (max_tokens = --long-tokens) streams to its end: a finish reason and [DONE], no dropped stream"},
		{Name: CheckStreamKeepAlive, Group: GroupStreaming, Run: checkKeepAlive,
			What: "the connection is kept alive between streams, or the server says it closes it (Connection: close)"},
	}
}

// The numbers of streaming.incremental.
const (
	// IncrementalTokens is the length of the streamed answer.
	IncrementalTokens = 64
	// SpreadPass and SpreadFail bound the spread: the time between the
	// first and the last content chunk as a share of the whole exchange
	// (request sent to [DONE]). A stream that really streams spreads its
	// chunks over most of the exchange (1 − TTFT/total); a buffering proxy
	// delivers them all at once, a spread near 0.
	SpreadPass = 0.5
	SpreadFail = 0.1
	// minJudged is the shortest exchange the spread is judged on: below it
	// the clock's granularity decides.
	minJudged = 20 * time.Millisecond
)

// prompts for generations whose text does not matter (content stays in
// memory and is never shown).
const (
	storyPrompt = "Tell a long story about a lighthouse keeper, in plain prose."
	essayPrompt = "Write a detailed essay of at least 800 words on the history of bridges."
)

// includeUsage is the stream_options member asking for a usage chunk.
func includeUsage() map[string]any { return map[string]any{"include_usage": true} }

func checkIncremental(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, Req{Prompt: storyPrompt, MaxTokens: IncrementalTokens, Stream: true,
		Extra: map[string]any{"ignore_eos": true, "stream_options": includeUsage()}})
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	return judgeIncremental(x)
}

// judgeIncremental applies streaming.incremental's rule to a stream
// (docs/checks.md): with F and L the arrivals of the first and the last
// content chunk and E the whole exchange, the spread (L − F)/E is at least
// SpreadPass → PASS; below SpreadFail, or fewer than 2 content chunks →
// FAIL (buffered); between → WARN (content came late: queued, or partly
// buffered).
func judgeIncremental(x *Exchange) Result {
	var first, last time.Duration = -1, -1
	n := 0
	for _, c := range x.Chunks {
		if c.Content != "" || c.Reasoning != "" || c.ToolDelta > 0 {
			if first < 0 {
				first = c.At
			}
			last = c.At
			n++
		}
	}
	total := x.Elapsed
	tokens := "tokens unknown (no usage)"
	if x.Usage != nil {
		tokens = fmt.Sprintf("%d tokens (usage)", x.Usage.CompletionTokens)
	}
	details := map[string]any{"events": len(x.Chunks), "content_chunks": n, "first_content_ms": ms(first),
		"last_content_ms": ms(last), "total_ms": ms(total), "bursts": bursts(x.Chunks)}
	if x.Usage != nil {
		details["completion_tokens"] = x.Usage.CompletionTokens
	}
	if n < 2 {
		return Result{Status: Fail, Evidence: fmt.Sprintf("%d content chunk(s) for %s: the answer came in one piece", n, tokens), Details: details}
	}
	spread := float64(last-first) / float64(total)
	details["spread"] = round3(spread)
	ev := fmt.Sprintf("1st content at %s of %s; %d content chunks over %s (%.0f%%); %d SSE events, %s",
		showDur(first), showDur(total), n, showDur(last-first), 100*spread, len(x.Chunks), tokens)
	switch {
	case total < minJudged:
		return Result{Status: Warn, Evidence: "too fast to judge: " + ev, Details: details}
	case spread < SpreadFail:
		return Result{Status: Fail, Evidence: "buffered: " + ev, Details: details}
	case spread < SpreadPass:
		return Result{Status: Warn, Evidence: "content came late: " + ev, Details: details}
	}
	return Result{Status: Pass, Evidence: ev, Details: details}
}

// bursts counts the groups of content chunks that arrived together (less
// than a millisecond apart): one per token when the server streams, one
// for a buffered answer.
func bursts(cs []Chunk) int {
	n := 0
	prev := time.Duration(-1)
	for _, c := range cs {
		if c.Content == "" && c.Reasoning == "" && c.ToolDelta == 0 {
			continue
		}
		if prev < 0 || c.At-prev >= time.Millisecond {
			n++
		}
		prev = c.At
	}
	return n
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func checkLong(ctx context.Context, t *T) Result {
	maxTokens, capped := t.Config.LongTokens, ""
	if m := t.Server.MaxModelLen; m > 0 && maxTokens > m-64 && m > 128 {
		maxTokens, capped = m-64, fmt.Sprintf(" (capped to max_model_len %d − 64)", m)
	}
	x, err := generate(ctx, t, Req{Prompt: essayPrompt, MaxTokens: maxTokens, Stream: true,
		Extra: map[string]any{"ignore_eos": true, "stream_options": includeUsage()}})
	what := fmt.Sprintf("max_tokens %d%s", maxTokens, capped)
	if err == nil && refused(x) {
		return Result{Status: Skip, Evidence: fmt.Sprintf("%s refused: %s; set --long-tokens below the model's cap", what, httpStatus(x))}
	}
	if r, bad := failed(x, err, what); bad {
		if err == nil && x.Status == 200 && x.Stream && !x.Done && !x.TimedOut {
			r.Evidence = fmt.Sprintf("dropped: %s: the stream ended without [DONE] after %d content chunks at %s (%v)", what, x.ContentChunks(), showDur(x.Elapsed), x.EndErr)
		}
		return r
	}
	n := x.ContentChunks()
	tokens := fmt.Sprintf("%d content chunks", n)
	if x.Usage != nil {
		tokens = fmt.Sprintf("%d tokens", x.Usage.CompletionTokens)
	}
	details := map[string]any{"max_tokens": maxTokens, "content_chunks": n, "seconds": roundSeconds(x.Elapsed), "finish_reason": finishWord(x.FinishReason)}
	if x.Usage != nil {
		details["completion_tokens"] = x.Usage.CompletionTokens
	}
	done := "no [DONE]"
	if x.Done {
		done = "[DONE]"
	}
	ev := fmt.Sprintf("%s: %s in %s, finish %s, %s", what, tokens, showDur(x.Elapsed), finishWord(x.FinishReason), done)
	if got := max(n, completionTokens(x)); got > maxTokens {
		// The stream itself came whole; sampling.max-tokens FAILs the
		// limit (one fault, one FAIL), so that it is a WARN here.
		return Result{Status: Warn, Evidence: fmt.Sprintf("generated past max_tokens (sampling.max-tokens judges it): %s", ev), Details: details}
	}
	if x.FinishReason == "" {
		return Result{Status: Fail, Evidence: "no finish reason: " + ev, Details: details}
	}
	return Result{Status: Pass, Evidence: ev, Details: details}
}

// keepAliveStreams is how many short streams streaming.keepalive sends,
// keepAlivePause the pause between them (so that a connection the server
// closed is seen closed before the next request).
const (
	keepAliveStreams = 3
	keepAlivePause   = 50 * time.Millisecond
)

func checkKeepAlive(ctx context.Context, t *T) Result {
	reused, said := 0, false
	for i := range keepAliveStreams {
		if i > 0 {
			select {
			case <-ctx.Done():
				return Result{Status: Skip, Evidence: "interrupted"}
			case <-time.After(keepAlivePause):
			}
		}
		x, err := generate(ctx, t, Req{Prompt: "Count to three.", MaxTokens: 4, Stream: true, Extra: map[string]any{"ignore_eos": true}})
		if r, bad := failed(x, err, fmt.Sprintf("stream %d", i+1)); bad {
			return r
		}
		if x.Retried {
			return Result{Status: Fail, Evidence: fmt.Sprintf("the connection was closed after stream %d without Connection: close: stream %d failed on it and went again on a new one", i, i+1)}
		}
		if i > 0 && x.Reused {
			reused++
		}
		said = said || x.Close
	}
	later := keepAliveStreams - 1
	details := map[string]any{"streams": keepAliveStreams, "reused": reused, "connection_close": said}
	switch {
	case said:
		return Result{Status: Warn, Evidence: fmt.Sprintf("closes after each stream (Connection: close): a new connection per request; %d of %d later streams reused one", reused, later), Details: details}
	case reused == later:
		return Result{Status: Pass, Evidence: fmt.Sprintf("%d streams on one connection (kept alive)", keepAliveStreams), Details: details}
	case reused == 0:
		return Result{Status: Fail, Evidence: fmt.Sprintf("closed after each stream without Connection: close: %d streams, %d connections", keepAliveStreams, keepAliveStreams), Details: details}
	}
	return Result{Status: Warn, Evidence: fmt.Sprintf("%d of %d later streams reused the connection; the others found it closed without Connection: close", reused, later), Details: details}
}

// completionTokens is the completion tokens usage reports; 0 without usage.
func completionTokens(x *Exchange) int {
	if x.Usage == nil {
		return 0
	}
	return x.Usage.CompletionTokens
}
