package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// messagesToolChoices are the tool_choices messages.tools tries in turn,
// as tools.call does chat's: the tool by name, then any tool, then auto.
func messagesToolChoices(tl tool) []choice {
	return []choice{
		{"tool", map[string]any{"type": "tool", "name": tl.name}},
		{"any", map[string]any{"type": "any"}},
		{"auto", map[string]any{"type": "auto"}},
	}
}

// runMessagesTools is messages.tools (docs/checks.md): search_flights in
// Anthropic's shape, streamed; the first tool_use block must have been
// opened by a content_block_start of type tool_use with an id and the
// tool's name, and its input_json_delta pieces must assemble into JSON
// that validates against the input_schema (its required properties
// included). A 4xx on every tool_choice is a SKIP.
func runMessagesTools(ctx context.Context, t *T) Result {
	schemas, err := toolSchemas(toolFlights)
	if err != nil {
		return Result{Status: Fail, Evidence: err.Error()}
	}
	a := askTools(ctx, t, promptToolCall, []any{toolFlights.anthropic()}, messagesToolChoices(toolFlights), nil, anthropicError)
	if a.failed != nil {
		return *a.failed
	}
	return judgeMessagesTool(a.x, a.choice, schemas[toolFlights.name])
}

// judgeMessagesTool judges the first tool call of a Messages stream.
func judgeMessagesTool(x *Exchange, choice string, sch *jsonschema.Schema) Result {
	tc := x.ToolCalls[0]
	details := map[string]any{"tool_choice": choice, "calls": len(x.ToolCalls), "deltas": toolDeltas(x), "stop_reason": stopWord(x.FinishReason)}
	fail := func(why string) Result {
		return Result{Status: Fail, Evidence: why + "; tool_choice " + choice, Details: details}
	}
	opened := false
	for _, c := range x.Chunks {
		opened = opened || (c.Type == "content_block_start" && c.Block == "tool_use" && c.Index == tc.Index)
	}
	switch {
	case !opened:
		return fail(fmt.Sprintf("input_json_delta pieces for block %d, which no content_block_start of type tool_use opened", tc.Index))
	case tc.Name != toolFlights.name:
		return fail(fmt.Sprintf("the tool_use block names an unknown tool (a name of %s)", nBytes(len(tc.Name))))
	case tc.ID == "":
		return fail("the tool_use block has no id: the tool_result cannot refer to it")
	}
	if p := inputProblem(tc, sch); p != "" {
		if x.FinishReason == "max_tokens" {
			return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf(
				"cannot judge: max_tokens %d cut the input short (stop_reason max_tokens) before the model finished it; tool_choice %s", toolMaxTokens, choice)}
		}
		return fail(p)
	}
	ev := fmt.Sprintf("tool_use block with id and name, input valid against the input_schema from %d input_json_delta pieces; stop_reason %s; tool_choice %s",
		toolDeltas(x), stopWord(x.FinishReason), choice)
	if len(x.ToolCalls) > 1 {
		ev = fmt.Sprintf("%d tool_use blocks (1 asked for), the first valid; ", len(x.ToolCalls)) + ev
	}
	if x.FinishReason != "tool_use" {
		return Result{Status: Warn, Details: details, Evidence: ev + ", not tool_use"}
	}
	return Result{Status: Pass, Details: details, Evidence: ev}
}

// inputProblem validates a tool_use block's input (its input_json_delta
// pieces joined) against the input_schema and says what is wrong, naming
// sizes, JSON pointers and keywords only.
func inputProblem(tc ToolCall, sch *jsonschema.Schema) string {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.Arguments))
	if err != nil {
		if strings.TrimSpace(tc.Arguments) == "" {
			return "no input: no input_json_delta pieces, and no input in the content_block_start"
		}
		return fmt.Sprintf("the input_json_delta pieces join into %s that are not valid JSON", nBytes(len(tc.Arguments)))
	}
	if err := sch.Validate(inst); err != nil {
		return "the input violates the input_schema " + schemaViolation(err)
	}
	return ""
}
