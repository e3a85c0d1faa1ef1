package check

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// usageChecks returns the usage checks.
func usageChecks() []Check {
	return []Check{
		{Name: CheckUsageStream, Group: GroupUsage, Run: checkUsageStream,
			What: "stream_options.include_usage is honoured: a usage chunk after the content"},
		{Name: CheckUsageCount, Group: GroupUsage, Run: checkUsageCount,
			What: "usage.completion_tokens agrees with the content chunks counted, within a tolerance"},
		{Name: CheckUsageUnary, Group: GroupUsage, Run: checkUsageUnary,
			What: "a non-streamed answer carries usage"},
	}
}

// Lengths of the usage checks' answers.
const (
	usageTokens = 16
	countTokens = 32
)

func checkUsageStream(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, Req{Prompt: storyPrompt, MaxTokens: usageTokens, Stream: true,
		Extra: map[string]any{"ignore_eos": true, "stream_options": includeUsage()}})
	if err == nil && refused(x) {
		return Result{Status: Skip, Evidence: "stream_options refused: " + httpStatus(x)}
	}
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	lastContent, usageAt := -1, -1
	for i, c := range x.Chunks {
		if c.Content != "" || c.Reasoning != "" || c.ToolDelta > 0 {
			lastContent = i
		}
		if c.Usage {
			usageAt = i
		}
	}
	switch {
	case usageAt < 0:
		return Result{Status: Fail, Evidence: fmt.Sprintf("no usage chunk in %d SSE events although stream_options.include_usage was asked", len(x.Chunks))}
	case usageAt < lastContent:
		return Result{Status: Warn, Evidence: fmt.Sprintf("usage at event %d of %d, before the last content (event %d)", usageAt+1, len(x.Chunks), lastContent+1)}
	case x.Usage.CompletionTokens <= 0:
		return Result{Status: Fail, Evidence: fmt.Sprintf("usage chunk with completion_tokens %d after %d content chunks", x.Usage.CompletionTokens, x.ContentChunks())}
	}
	return Result{Status: Pass, Evidence: fmt.Sprintf("usage chunk at event %d of %d: %d prompt + %d completion tokens", usageAt+1, len(x.Chunks), x.Usage.PromptTokens, x.Usage.CompletionTokens),
		Details: map[string]any{"usage_event": usageAt + 1, "events": len(x.Chunks), "prompt_tokens": x.Usage.PromptTokens, "completion_tokens": x.Usage.CompletionTokens}}
}

// countTolerance is how far usage.completion_tokens may exceed the
// content chunks counted before usage.count WARNs (fewer chunks than tokens): one
// token, or 5% of the count (a final chunk that carries its token with the
// finish reason, a stop token counted but not sent).
func countTolerance(chunks int) int { return max(1, int(math.Ceil(0.05*float64(chunks)))) }

func checkUsageCount(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, Req{Prompt: storyPrompt, MaxTokens: countTokens, Stream: true,
		Extra: map[string]any{"ignore_eos": true, "stream_options": includeUsage()}})
	if err == nil && refused(x) {
		return Result{Status: Skip, Evidence: "stream_options refused: " + httpStatus(x)}
	}
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	if x.Usage == nil {
		return Result{Status: Skip, Evidence: "no usage to compare (see usage.stream)"}
	}
	return judgeCount(x.Usage.CompletionTokens, x.ContentChunks())
}

// judgeCount is usage.count's rule (docs/checks.md) for u completion
// tokens reported over n content chunks counted, with tol =
// countTolerance(n): |u − n| ≤ tol → PASS; u > n + tol → WARN (fewer
// chunks than tokens: counting chunks undercounts); u < n − tol, or u ≤ 0
// with content → FAIL (usage undercounts what was sent).
func judgeCount(u, n int) Result { return judgeCountIn(u, n, chatCount) }

// countWords are the words of judgeCount's evidence and the keys of its
// details: chat's usage counts completion tokens over content chunks,
// Responses' and Messages' output tokens over content events.
type countWords struct{ tokens, pieces, piece string }

var (
	chatCount  = countWords{"completion tokens", "content chunks", "chunk"}
	typedCount = countWords{"output tokens", "content events", "event"}
)

// judgeCountIn is judgeCount's rule in the words w.
func judgeCountIn(u, n int, w countWords) Result {
	tol := countTolerance(n)
	d := map[string]any{strings.ReplaceAll(w.tokens, " ", "_"): u, strings.ReplaceAll(w.pieces, " ", "_"): n, "tolerance": tol}
	ev := fmt.Sprintf("usage %d %s, %d %s counted (tolerance ±%d)", u, w.tokens, n, w.pieces, tol)
	switch {
	case n > 0 && (u <= 0 || u < n-tol):
		return Result{Status: Fail, Evidence: "usage undercounts: " + ev, Details: d}
	case u > n+tol:
		return Result{Status: Warn, Evidence: fmt.Sprintf("fewer %s than tokens (%.1f tokens per %s): %s; count tokens from usage, not %ss", w.pieces, float64(u)/float64(max(n, 1)), w.piece, ev, w.piece), Details: d}
	}
	return Result{Status: Pass, Evidence: ev, Details: d}
}

func checkUsageUnary(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, Req{Prompt: storyPrompt, MaxTokens: 8, Extra: map[string]any{"ignore_eos": true}})
	if r, bad := failed(x, err, "request"); bad {
		return r
	}
	u := x.Usage
	switch {
	case u == nil:
		return Result{Status: Fail, Evidence: "no usage in the response body"}
	case u.CompletionTokens <= 0 || u.PromptTokens <= 0:
		return Result{Status: Fail, Evidence: fmt.Sprintf("usage holds %d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)}
	case u.TotalTokens != u.PromptTokens+u.CompletionTokens:
		return Result{Status: Warn, Evidence: fmt.Sprintf("usage total_tokens %d ≠ %d prompt + %d completion", u.TotalTokens, u.PromptTokens, u.CompletionTokens)}
	}
	return Result{Status: Pass, Evidence: fmt.Sprintf("usage: %d prompt + %d completion = %d tokens", u.PromptTokens, u.CompletionTokens, u.TotalTokens),
		Details: map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens}}
}
