package check

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The suites of the Responses and Messages APIs: served, streaming,
// usage, end and errors for both (tools for Messages). Their streams are
// typed events (typed.go); the rules are streaming.incremental's and
// usage.count's, applied to text deltas instead of chat chunks.

func responsesChecks() []Check {
	return []Check{
		servedCheck(APIResponses),
		{Name: CheckResponsesStreaming, Group: GroupResponses, Run: runTypedStreaming,
			What: "a streamed response arrives delta by delta: response.output_text.delta events spread over the generation, not one burst at the end (streaming.incremental's rule)"},
		{Name: CheckResponsesUsage, Group: GroupResponses, Run: runTypedUsage,
			What: "response.completed carries usage: input_tokens and output_tokens > 0, output_tokens agreeing with the deltas counted (usage.count's rule)"},
		{Name: CheckResponsesEnd, Group: GroupResponses, Run: runResponsesEnd,
			What: "a stream opens with response.created and ends with response.completed or response.incomplete, whose response.status agrees"},
		{Name: CheckResponsesErrors, Group: GroupResponses, Run: runResponsesErrors,
			What: "bad requests (invalid JSON, no input, max_output_tokens a string, an unknown model) get a 4xx with an OpenAI error body"},
	}
}

func messagesChecks() []Check {
	return []Check{
		servedCheck(APIMessages),
		{Name: CheckMessagesStreaming, Group: GroupMessages, Run: runTypedStreaming,
			What: "a streamed message arrives delta by delta: content_block_delta events spread over the generation, not one burst at the end (streaming.incremental's rule)"},
		{Name: CheckMessagesUsage, Group: GroupMessages, Run: runTypedUsage,
			What: "message_start carries usage.input_tokens and message_delta usage.output_tokens, > 0, agreeing with the deltas counted (usage.count's rule)"},
		{Name: CheckMessagesEnd, Group: GroupMessages, Run: runMessagesEnd,
			What: "a stream runs message_start, content blocks each started and stopped, message_delta with a stop_reason, message_stop"},
		{Name: CheckMessagesTools, Group: GroupMessages, Run: runMessagesTools,
			What: "a streamed tool_use block (Anthropic's tools shape): its id and name, input_json_delta pieces that assemble into JSON valid against the input_schema; stop_reason tool_use"},
		{Name: CheckMessagesErrors, Group: GroupMessages, Run: runMessagesErrors,
			What: "bad requests (invalid JSON, no messages, no max_tokens, an unknown model) get a 4xx with an Anthropic error body"},
	}
}

// typedEndTokens is the length of the answer whose grammar the end
// checks read.
const typedEndTokens = 16

// typedStream is the streamed request of the typed suites: a story of
// maxTokens, with vLLM's ignore_eos for Responses (a 400 naming it is
// answered by the same request without: generate). Messages has no such
// member.
func typedStream(api string, maxTokens int) Req {
	r := Req{Prompt: storyPrompt, MaxTokens: maxTokens, Stream: true}
	if api == APIResponses {
		r.Extra = map[string]any{"ignore_eos": true}
	}
	return r
}

func runTypedStreaming(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, typedStream(t.Probe.API(), IncrementalTokens))
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	return judgeIncremental(x)
}

func runTypedUsage(ctx context.Context, t *T) Result {
	api := t.Probe.API()
	x, err := generate(ctx, t, typedStream(api, countTokens))
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	return judgeTypedUsage(api, x)
}

// judgeTypedUsage is the usage checks' rule for a typed stream
// (docs/checks.md): usage where the API puts it, input and output tokens
// > 0, and the output tokens against the content events by usage.count's
// rule.
func judgeTypedUsage(api string, x *Exchange) Result {
	n := x.ContentChunks()
	where := "response.completed"
	if api == APIMessages {
		where = "message_start and message_delta"
		var start, delta bool
		for _, c := range x.Chunks {
			start = start || (c.Type == "message_start" && c.Usage)
			delta = delta || (c.Type == "message_delta" && c.Usage)
		}
		switch {
		case !start && !delta:
			return Result{Status: Fail, Evidence: fmt.Sprintf("no usage in message_start or message_delta (%d events, %d content)", len(x.Chunks), n)}
		case !delta:
			return Result{Status: Fail, Evidence: fmt.Sprintf("message_delta carries no usage.output_tokens (%d content events)", n)}
		case !start:
			return Result{Status: Fail, Evidence: "message_start carries no usage.input_tokens"}
		}
	}
	u := x.Usage
	switch {
	case u == nil:
		return Result{Status: Fail, Evidence: fmt.Sprintf("no usage in %s (%d content events)", where, n)}
	case u.PromptTokens <= 0 || u.CompletionTokens <= 0:
		return Result{Status: Fail, Evidence: fmt.Sprintf("usage in %s holds %d input + %d output tokens for %d content events", where, u.PromptTokens, u.CompletionTokens, n),
			Details: map[string]any{"input_tokens": u.PromptTokens, "output_tokens": u.CompletionTokens, "content_events": n}}
	}
	r := judgeCountIn(u.CompletionTokens, n, typedCount)
	r.Evidence += fmt.Sprintf("; %d input tokens; from %s", u.PromptTokens, where)
	r.Details["input_tokens"] = u.PromptTokens
	return r
}

// dropped is the FAIL of a stream that ended without its end event,
// or false when the exchange is not one.
func dropped(x *Exchange, err error, end string) (Result, bool) {
	if err != nil || x.Status != 200 || !x.Stream || x.Done || x.TimedOut || x.EndErr == nil {
		return Result{}, false
	}
	return Result{Status: Fail, Evidence: fmt.Sprintf("dropped: the stream ended without %s after %d events (%d content) at %s (%v)",
		end, len(x.Chunks), x.ContentChunks(), showDur(x.Elapsed), x.EndErr)}, true
}

// responsesTypes are the event types responses.end names in evidence;
// another is "another event" (a server's own type is not repeated).
var responsesTypes = []string{"response.created", "response.in_progress", "response.queued", "response.completed", "response.incomplete",
	"response.output_item.added", "response.output_item.done", "response.content_part.added", "response.content_part.done",
	"response.output_text.delta", "response.output_text.done"}

// typeWord is an event type for the evidence: one of known, or "another
// event".
func typeWord(typ string, known []string) string {
	for _, k := range known {
		if typ == k {
			return typ
		}
	}
	return "another event"
}

func runResponsesEnd(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, typedStream(APIResponses, typedEndTokens))
	if r, ok := dropped(x, err, "response.completed or response.incomplete"); ok {
		return r
	}
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	return judgeResponsesEnd(x)
}

// judgeResponsesEnd is responses.end's rule for a stream that reached
// its end event (the last of Chunks): the end event's response.status
// is its own (completed, incomplete), else FAIL; a first event other
// than response.created WARNs.
func judgeResponsesEnd(x *Exchange) Result {
	last := x.Chunks[len(x.Chunks)-1]
	want := strings.TrimPrefix(last.Type, "response.")
	details := map[string]any{"events": len(x.Chunks), "content_events": x.ContentChunks(), "end": last.Type, "status": stopWord(x.FinishReason)}
	ev := fmt.Sprintf("%s after %d events (%d text deltas) in %s, status %s", last.Type, len(x.Chunks), x.ContentChunks(), showDur(x.Elapsed), stopWord(x.FinishReason))
	if x.FinishReason != want {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("%s carries response.status %s, not %s", last.Type, stopWord(x.FinishReason), want)}
	}
	if first := x.Chunks[0].Type; first != "response.created" {
		return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("the stream opens with %s, not response.created: %s", typeWord(first, responsesTypes), ev)}
	}
	return Result{Status: Pass, Details: details, Evidence: ev}
}

func runMessagesEnd(ctx context.Context, t *T) Result {
	x, err := generate(ctx, t, typedStream(APIMessages, typedEndTokens))
	if r, ok := dropped(x, err, "message_stop"); ok {
		return r
	}
	if r, bad := failed(x, err, "stream"); bad {
		return r
	}
	return judgeMessagesEnd(x)
}

// messagesTypes are the event types messages.end names in evidence.
var messagesTypes = []string{"message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta", "content_block_stop", "ping"}

// blockWord is a content block's type for the evidence.
func blockWord(b string) string {
	switch b {
	case "text", "thinking", "redacted_thinking", "tool_use", "server_tool_use":
		return b
	}
	return "other"
}

// judgeMessagesEnd is messages.end's rule for a stream that reached
// message_stop (docs/checks.md): message_start first; every
// content_block_start's index new, its deltas and its
// content_block_stop between; message_delta after the last block
// stopped, with a stop_reason. Any break is a FAIL.
func judgeMessagesEnd(x *Exchange) Result {
	details := map[string]any{"events": len(x.Chunks), "content_events": x.ContentChunks(), "stop_reason": stopWord(x.FinishReason)}
	fail := func(format string, a ...any) Result {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf(format, a...)}
	}
	if first := x.Chunks[0].Type; first != "message_start" {
		return fail("the stream opens with %s, not message_start", typeWord(first, messagesTypes))
	}
	open, seen := map[int]bool{}, map[int]bool{}
	var blocks []string
	deltas := 0
	for _, c := range x.Chunks {
		switch c.Type {
		case "content_block_start":
			if seen[c.Index] {
				return fail("content block %d started twice", c.Index)
			}
			if deltas > 0 {
				return fail("content block %d started after message_delta", c.Index)
			}
			open[c.Index], seen[c.Index] = true, true
			blocks = append(blocks, blockWord(c.Block))
		case "content_block_delta":
			if !open[c.Index] {
				return fail("a content_block_delta of block %d outside its start and stop", c.Index)
			}
		case "content_block_stop":
			if !open[c.Index] {
				return fail("content_block_stop of block %d, which is not open", c.Index)
			}
			open[c.Index] = false
		case "message_delta":
			if i, ok := firstOpen(open); ok {
				return fail("message_delta while content block %d is open (no content_block_stop)", i)
			}
			deltas++
		}
	}
	if i, ok := firstOpen(open); ok {
		return fail("content block %d never stopped", i)
	}
	details["blocks"] = len(blocks)
	switch {
	case deltas == 0:
		return fail("no message_delta before message_stop: the stop_reason is never said")
	case x.FinishReason == "":
		return fail("message_delta carries no stop_reason")
	}
	return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("message_start, %s (%s) started and stopped, message_delta (stop_reason %s), message_stop; %d events in %s",
		countOf(len(blocks), "content block"), strings.Join(blocks, ", "), stopWord(x.FinishReason), len(x.Chunks), showDur(x.Elapsed))}
}

// firstOpen is the lowest index of an open content block.
func firstOpen(open map[int]bool) (int, bool) {
	var ids []int
	for i, o := range open {
		if o {
			ids = append(ids, i)
		}
	}
	if len(ids) == 0 {
		return 0, false
	}
	return slices.Min(ids), true
}

// unknownModel is the model the errors checks ask for: no server serves
// it.
const unknownModel = "surge-check-no-such-model"

func runResponsesErrors(ctx context.Context, t *T) Result {
	model, _ := json.Marshal(t.Probe.Model())
	m := `{"model":` + string(model)
	return judgeMalformed(ctx, t, []badCase{
		{"invalid JSON", m + `,"input":"Say`},
		{"no input", m + `,"max_output_tokens":16}`},
		{"max_output_tokens a string", m + `,"input":"Say hello.","max_output_tokens":"sixteen"}`},
		{"unknown model", `{"model":"` + unknownModel + `","input":"Say hello.","max_output_tokens":16}`},
	}, openAIError)
}

func runMessagesErrors(ctx context.Context, t *T) Result {
	model, _ := json.Marshal(t.Probe.Model())
	m := `{"model":` + string(model)
	hello := `"messages":[{"role":"user","content":"Say hello."}]`
	return judgeMalformed(ctx, t, []badCase{
		{"invalid JSON", m + `,"max_tokens":8,"messages":[{"role":"user","content":"Say`},
		{"no messages", m + `,"max_tokens":8}`},
		{"no max_tokens", m + `,` + hello + `}`},
		{"unknown model", `{"model":"` + unknownModel + `","max_tokens":8,` + hello + `}`},
	}, anthropicError)
}
