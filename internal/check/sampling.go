package check

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// samplingChecks returns the sampling checks.
func samplingChecks() []Check {
	return []Check{
		{Name: CheckSamplingStop, Group: GroupSampling, Run: checkStop,
			What: "stop ends the answer where the stop string would begin (the string itself not sent), finish reason stop"},
		{Name: CheckSamplingTemperature, Group: GroupSampling, Run: checkTemperature0,
			What: "temperature 0 twice gives the same text (a WARN otherwise: batching makes some servers nondeterministic)"},
		{Name: CheckSamplingMaxTokens, Group: GroupSampling, Run: checkMaxTokens,
			What: "max_tokens is honoured exactly: never more tokens, and finish reason length when the answer is cut"},
		{Name: CheckSamplingSeed, Group: GroupSampling, Run: checkSeed,
			What: "seed makes sampling repeatable: the same seed gives the same text at temperature 1, another seed another"},
	}
}

// Lengths of the sampling checks' answers.
const (
	stopTokens   = 32
	sampleTokens = 24
	// MaxTokensProbe is the max_tokens of sampling.max-tokens, on a prompt
	// that asks for a far longer answer.
	MaxTokensProbe = 12
)

// Seeds of sampling.seed.
const (
	seedA = 1234
	seedB = 5678
)

// maxThinking bounds the tokens a sampling check gives a reasoning
// model to think before it answers, on top of the answer's own length.
const maxThinking = 1024

// answer sends r; when reasoning took every token and no content came
// (a model that thinks first), it sends r again with room for the
// thinking: max_tokens grows to r.MaxTokens plus twice the tokens thought
// so far, up to maxThinking more. It returns the exchange with content
// and the max_tokens that gave it (the check's later requests use it, so
// that the answers compared had the same bound). An answer still empty
// is a SKIP (a Result with bad true): nothing to judge.
func answer(ctx context.Context, t *T, r Req, what string) (x *Exchange, maxTokens int, res Result, bad bool) {
	base := r.MaxTokens
	for {
		x, err := generate(ctx, t, r)
		if res, bad := failed(x, err, what); bad {
			return x, r.MaxTokens, res, true
		}
		if x.Text != "" {
			return x, r.MaxTokens, Result{}, false
		}
		if x.Reasoning == "" {
			return x, r.MaxTokens, Result{Status: Skip, Evidence: fmt.Sprintf("%s empty: no content and no reasoning in %d tokens", what, r.MaxTokens)}, true
		}
		thought := r.MaxTokens
		if x.Usage != nil && x.Usage.CompletionTokens > 0 {
			thought = x.Usage.CompletionTokens
		}
		if r.MaxTokens >= base+maxThinking || x.FinishReason != "length" {
			return x, r.MaxTokens, Result{Status: Skip, Evidence: fmt.Sprintf("%s empty: %d tokens were reasoning (max_tokens %d)", what, thought, r.MaxTokens)}, true
		}
		r.MaxTokens = min(base+2*thought, base+maxThinking)
	}
}

// thinking is the evidence's note on reasoning before an answer: "" for
// none.
func thinking(x *Exchange) string {
	if x.Reasoning == "" {
		return ""
	}
	return fmt.Sprintf(" after %d bytes of reasoning", len(x.Reasoning))
}

func checkStop(ctx context.Context, t *T) Result {
	base := map[string]any{"temperature": 0, "ignore_eos": true}
	x, maxTokens, r, bad := answer(ctx, t, Req{Prompt: storyPrompt, MaxTokens: stopTokens, Stream: true, Extra: base}, "the answer without stop")
	if bad {
		return r
	}
	learned := x.Text
	at, stop, ok := pickStop(learned)
	if !ok {
		return Result{Status: Skip, Evidence: fmt.Sprintf("no stop string to pick: no printable string of 3 bytes or more occurs once in the answer (%d bytes)", len(learned))}
	}
	withStop := map[string]any{"stop": []string{stop}}
	for k, v := range base {
		withStop[k] = v
	}
	y, err := generate(ctx, t, Req{Prompt: storyPrompt, MaxTokens: maxTokens, Stream: true, Extra: withStop})
	if err == nil && refused(y) {
		return Result{Status: Skip, Evidence: "stop refused: " + httpStatus(y)}
	}
	if r, bad := failed(y, err, "the answer with stop"); bad {
		return r
	}
	return judgeStop(learned, y.Text, y.FinishReason, at, stop)
}

// pickStop picks a stop string from text: from a word boundary (a space)
// at or after the middle, the shortest string of at least 3 bytes that
// does not occur earlier in text; failing that, from any rune at or after
// the middle, then from any before it (but the first). Only printable
// text is picked (no control characters, no U+FFFD of a token cut in a
// rune). at is its position.
func pickStop(text string) (at int, stop string, ok bool) {
	const minLen, maxLen = 3, 24
	from := func(p int) (string, bool) {
		if !utf8.RuneStart(text[p]) {
			return "", false
		}
		for k := minLen; k <= maxLen && p+k <= len(text); k++ {
			s := text[p : p+k]
			if utf8.ValidString(s) && printable(s) && strings.TrimSpace(s) != "" && strings.Index(text, s) == p {
				return s, true
			}
		}
		return "", false
	}
	mid := len(text) / 2
	for p := mid; p+minLen <= len(text); p++ {
		if text[p] == ' ' {
			if s, ok := from(p); ok {
				return p, s, true
			}
		}
	}
	for p := mid; p+minLen <= len(text); p++ {
		if s, ok := from(p); ok {
			return p, s, true
		}
	}
	for p := min(mid, len(text)) - 1; p >= 1; p-- {
		if s, ok := from(p); ok {
			return p, s, true
		}
	}
	return 0, "", false
}

// printable reports whether s has only printable runes and spaces.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (!unicode.IsPrint(r) && r != ' ') {
			return false
		}
	}
	return true
}

// judgeStop is sampling.stop's rule (docs/checks.md): learned is the
// answer without stop, got the answer with stop, which starts at byte at
// of learned.
func judgeStop(learned, got, finish string, at int, stop string) Result {
	d := map[string]any{"stop_at_byte": at, "stop_bytes": len(stop), "learned_bytes": len(learned), "got_bytes": len(got), "finish_reason": finishWord(finish)}
	switch {
	case strings.Contains(got, stop):
		return Result{Status: Fail, Evidence: fmt.Sprintf("stop ignored: the answer (%d bytes, finish %s) holds the stop string (at byte %d)", len(got), finishWord(finish), at), Details: d}
	case got == learned[:at] && finish == "stop":
		return Result{Status: Pass, Evidence: fmt.Sprintf("stopped at byte %d of %d, where the %d-byte stop string begins; finish stop", at, len(learned), len(stop)), Details: d}
	case got == learned[:at]:
		return Result{Status: Warn, Evidence: fmt.Sprintf("stopped at the stop string (byte %d) but finish %s, not stop", at, finishWord(finish)), Details: d}
	case strings.HasPrefix(learned, got):
		return Result{Status: Warn, Evidence: fmt.Sprintf("ended at byte %d, the stop string begins at byte %d (finish %s)", len(got), at, finishWord(finish)), Details: d}
	}
	return Result{Status: Warn, Evidence: fmt.Sprintf("cannot judge: the two answers at temperature 0 differ from byte %d (the stop string at byte %d)", diffAt(learned, got), at), Details: d}
}

// diffAt is the first byte at which a and b differ.
func diffAt(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// whole is what the sampling checks compare of an answer: its reasoning
// and its content (a reasoning model's thinking is sampled too).
func whole(x *Exchange) string { return x.Reasoning + "\x00" + x.Text }

func checkTemperature0(ctx context.Context, t *T) Result {
	var texts [2]string
	var xs [2]*Exchange
	maxTokens := sampleTokens
	for i := range texts {
		x, m, r, bad := answer(ctx, t, Req{Prompt: storyPrompt, MaxTokens: maxTokens, Extra: map[string]any{"temperature": 0, "ignore_eos": true}}, fmt.Sprintf("answer %d", i+1))
		if bad {
			return r
		}
		maxTokens, texts[i], xs[i] = m, whole(x), x
	}
	d := map[string]any{"bytes": []int{len(xs[0].Text), len(xs[1].Text)}, "max_tokens": maxTokens}
	if texts[0] == texts[1] {
		return Result{Status: Pass, Evidence: fmt.Sprintf("2 answers at temperature 0 identical (%d bytes%s)", len(xs[0].Text), thinking(xs[0])), Details: d}
	}
	a, b, part := xs[0].Text, xs[1].Text, ""
	if xs[0].Reasoning != xs[1].Reasoning {
		a, b, part = xs[0].Reasoning, xs[1].Reasoning, " in their reasoning"
	}
	d["differ_at_byte"] = diffAt(a, b)
	return Result{Status: Warn, Evidence: fmt.Sprintf("2 answers at temperature 0 differ%s from byte %d (%d and %d bytes): not deterministic (batching?)",
		part, diffAt(a, b), len(a), len(b)), Details: d}
}

func checkMaxTokens(ctx context.Context, t *T) Result {
	const m = MaxTokensProbe
	x, err := generate(ctx, t, Req{Prompt: essayPrompt, MaxTokens: m, Stream: true, Extra: map[string]any{"stream_options": includeUsage()}})
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	u := -1
	if x.Usage != nil {
		u = x.Usage.CompletionTokens
	}
	return judgeMaxTokens(m, u, x.ContentChunks(), x.FinishReason)
}

// judgeMaxTokens is sampling.max-tokens' rule (docs/checks.md) for
// max_tokens m, usage u (−1: none), n content chunks: more than m by
// usage or by chunks → FAIL; exactly m (by usage, or by chunks without
// usage) with finish length → PASS; fewer with finish stop → WARN (the
// answer ended by itself: cannot judge).
func judgeMaxTokens(m, u, n int, finish string) Result {
	d := map[string]any{"max_tokens": m, "completion_tokens": u, "content_chunks": n, "finish_reason": finishWord(finish)}
	count := fmt.Sprintf("%d content chunks", n)
	got := n
	if u >= 0 {
		count = fmt.Sprintf("%d tokens (usage), %d content chunks", u, n)
		got = u
	}
	ev := fmt.Sprintf("max_tokens %d: %s, finish %s", m, count, finishWord(finish))
	switch {
	case u > m || n > m:
		return Result{Status: Fail, Evidence: "generated past max_tokens: " + ev, Details: d}
	case got == m && finish == "length":
		return Result{Status: Pass, Evidence: ev, Details: d}
	case got == m:
		return Result{Status: Warn, Evidence: "exactly max_tokens but finish not length: " + ev, Details: d}
	case finish == "stop":
		return Result{Status: Warn, Evidence: "cannot judge: the answer ended by itself: " + ev, Details: d}
	case u < 0 && finish == "length":
		return Result{Status: Warn, Evidence: "cannot count: no usage, and chunks may merge tokens: " + ev, Details: d}
	}
	return Result{Status: Warn, Evidence: "fewer tokens than max_tokens: " + ev, Details: d}
}

// checkSeed sends a first request (seed B) that only warms the server's
// prompt cache: Ollama's answer to a prompt its cache holds differs from
// its first answer to it, whatever the seed. Then seed A twice and seed B
// again, all with the prompt cached.
func checkSeed(ctx context.Context, t *T) Result {
	var texts [4]string
	maxTokens := sampleTokens
	for i, seed := range []int{seedB, seedA, seedA, seedB} {
		x, m, r, bad := answer(ctx, t, Req{Prompt: storyPrompt, MaxTokens: maxTokens, Extra: map[string]any{"temperature": 1, "seed": seed, "ignore_eos": true}}, fmt.Sprintf("answer %d", i+1))
		if x != nil && refused(x) {
			return Result{Status: Skip, Evidence: "seed refused: " + httpStatus(x)}
		}
		if bad {
			return r
		}
		maxTokens, texts[i] = m, whole(x)
	}
	r := judgeSeed(texts[1], texts[2], texts[3])
	r.Details["warmup_equal"] = texts[0] == texts[3]
	return r
}

// judgeSeed is sampling.seed's rule (docs/checks.md) for two answers a, b
// with one seed and c with another, at temperature 1 (each its reasoning,
// a NUL and its content: whole).
func judgeSeed(a, b, c string) Result {
	d := map[string]any{"same_seed_equal": a == b, "other_seed_equal": a == c}
	switch {
	case a != b:
		return Result{Status: Skip, Evidence: fmt.Sprintf("seed not honoured: the same seed gave answers that differ from byte %d", diffAt(a, b)), Details: d}
	case a == c:
		return Result{Status: Warn, Evidence: "sampling looks deterministic at temperature 1; seed not shown (3 answers identical)", Details: d}
	}
	reasoning, content, _ := strings.Cut(a, "\x00")
	return Result{Status: Pass, Evidence: fmt.Sprintf("same seed, same answer (%d bytes%s); another seed differs from byte %d", len(content),
		thinking(&Exchange{Reasoning: reasoning}), diffAt(a, c)), Details: d}
}
