package check

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// toolMaxTokens bounds a tool call's generation: the arguments of these
// tools are a few dozen tokens.
const toolMaxTokens = 256

// A tool the tools checks offer: its name and its parameters schema.
type tool struct {
	name, description string
	params            string // JSON Schema of the arguments
}

// The tools: realistic functions with typed parameters (strings, an
// integer with bounds, enums, a number), and one without parameters.
// additionalProperties is not forbidden: without strict mode a model may
// add a member, which is the model's doing, not the endpoint's.
var (
	toolFlights = tool{"search_flights", "Search for flights between two airports on a date.", `{
		"type": "object",
		"properties": {
			"origin": {"type": "string", "description": "IATA code of the departure airport, e.g. LHR"},
			"destination": {"type": "string", "description": "IATA code of the arrival airport, e.g. HND"},
			"date": {"type": "string", "description": "departure date, YYYY-MM-DD"},
			"passengers": {"type": "integer", "minimum": 1, "maximum": 9},
			"cabin": {"type": "string", "enum": ["economy", "premium_economy", "business", "first"]}
		},
		"required": ["origin", "destination", "date", "passengers"]
	}`}
	toolWeather = tool{"get_weather", "Get the weather forecast for a city.", `{
		"type": "object",
		"properties": {
			"city": {"type": "string"},
			"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
			"days": {"type": "integer", "minimum": 1, "maximum": 14}
		},
		"required": ["city", "unit"]
	}`}
	toolCurrency = tool{"convert_currency", "Convert an amount of money from one currency to another.", `{
		"type": "object",
		"properties": {
			"amount": {"type": "number", "exclusiveMinimum": 0},
			"from": {"type": "string", "description": "ISO 4217 code, e.g. GBP"},
			"to": {"type": "string", "description": "ISO 4217 code, e.g. JPY"}
		},
		"required": ["amount", "from", "to"]
	}`}
	toolTime = tool{"get_server_time", "Get the current time of the server. Takes no arguments.", `{"type": "object", "properties": {}}`}
)

// The prompts of the tools checks.
const (
	promptToolCall = "Find me flights from London Heathrow (LHR) to Tokyo Haneda (HND) on 2027-03-14 " +
		"for two adults in economy. Use the search_flights tool."
	promptToolParallel = "I am flying from London Heathrow (LHR) to Tokyo Haneda (HND) on 2027-03-14 with my partner. " +
		"At the same time, in one reply: search the flights for 2 passengers, get the 5-day weather forecast for Tokyo in celsius, " +
		"and convert 500 GBP to JPY. Call all three tools at once, in parallel."
	promptToolEmpty = "What time is it on the server? Call the get_server_time tool."
)

func toolChecks() []Check {
	return []Check{
		{Name: CheckToolsCall, Group: GroupTools,
			What: "a streamed tool call: the deltas assemble into JSON arguments that validate against the tool's schema; name; finish_reason",
			Run:  runToolsCall},
		{Name: CheckToolsParallel, Group: GroupTools,
			What: "parallel_tool_calls with three tools: two or more calls with distinct indexes and ids, each valid",
			Run:  runToolsParallel},
		{Name: CheckToolsEmptyArgs, Group: GroupTools,
			What: "a tool without parameters: the arguments are exactly {}, not \"\" or null",
			Run:  runToolsEmptyArgs},
	}
}

// wire is the tool as the request's tools member.
func (tl tool) wire() map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{
		"name": tl.name, "description": tl.description, "parameters": tl.schema()}}
}

// anthropic is the tool in the Messages API's tools member:
// {name, description, input_schema}.
func (tl tool) anthropic() map[string]any {
	return map[string]any{"name": tl.name, "description": tl.description, "input_schema": tl.schema()}
}

// schema is the tool's parameters schema as a JSON value.
func (tl tool) schema() any {
	var params any
	_ = json.Unmarshal([]byte(tl.params), &params) // the literals above are JSON; a test proves it
	return params
}

// chatTools is the chat API's tools member offering tools.
func chatTools(tools ...tool) []any {
	wire := make([]any, len(tools))
	for i, tl := range tools {
		wire[i] = tl.wire()
	}
	return wire
}

// named is the tool_choice that forces this tool.
func (tl tool) named() any {
	return map[string]any{"type": "function", "function": map[string]any{"name": tl.name}}
}

// choice is one tool_choice to try: its label for the evidence and its
// value.
type choice struct {
	label string
	value any
}

// toolAnswer is the outcome of trying the tool_choices in turn: the first
// response with tool calls and the choice that gave it, or why none did.
type toolAnswer struct {
	x      *Exchange
	choice string
	tried  []tried // 400 (named), plain text (auto), …
	failed *Result // a verdict reached on the way (no response, a broken stream, a 5xx)
	sent   int
}

// askTools sends the prompt with the tools (the API's tools member,
// wire) under each tool_choice in turn until a streamed response carries
// tool calls. Real engines differ here: vLLM refuses "auto" without
// --enable-auto-tool-choice and serves named or "required" choices by
// guided decoding where its version does; Ollama ignores tool_choice. A
// 4xx or a plain answer moves on to the next choice; shape is the API's
// error body, for the evidence.
func askTools(ctx context.Context, t *T, prompt string, wire []any, choices []choice, extra map[string]any, shape errorShape) toolAnswer {
	var a toolAnswer
	var serverErr bool
	for _, c := range choices {
		ex := map[string]any{"tools": wire, "tool_choice": c.value}
		for k, v := range extra {
			ex[k] = v
		}
		x, err := t.Probe.Send(ctx, Req{Prompt: prompt, MaxTokens: toolMaxTokens, Stream: true, Timeout: reqTimeout(t), Extra: ex})
		a.sent++
		if err != nil {
			a.failed = &Result{Status: Fail, Evidence: fmt.Sprintf("no response (tool_choice %s): %s", c.label, noResponse(err))}
			return a
		}
		switch {
		case x.TimedOut:
			a.failed = &Result{Status: Fail, Evidence: fmt.Sprintf("no complete answer within %s; tool_choice %s", showDur(reqTimeout(t)), c.label)}
			return a
		case x.Status == 200 && !x.Stream:
			a.failed = &Result{Status: Fail, Evidence: streamIgnored(x) + "; tool_choice " + c.label}
			return a
		case x.Status == 200 && x.EndErr != nil:
			a.failed = &Result{Status: Fail, Evidence: fmt.Sprintf("the stream broke after %d tool-call deltas: %s; tool_choice %s", toolDeltas(x), x.EndErr, c.label)}
			return a
		case x.Status == 200 && len(x.ToolCalls) > 0:
			a.x, a.choice = x, c.label
			return a
		case x.Status == 200:
			a.tried = append(a.tried, tried{"plain text, no call", c.label})
		case x.Status >= 500:
			serverErr = true
			a.tried = append(a.tried, tried{shapeWord(x, shape), c.label})
		default:
			a.tried = append(a.tried, tried{shapeWord(x, shape), c.label})
		}
	}
	if serverErr {
		a.failed = &Result{Status: Fail, Evidence: "server errors on a request with tools: " + triedText(a.tried)}
	} else {
		a.failed = &Result{Status: Skip, Evidence: "no tool support: " + triedText(a.tried)}
	}
	return a
}

// tried is what one tool_choice got.
type tried struct{ outcome, choice string }

// triedText says what each tool_choice got, each outcome once:
// "400 with an OpenAI error body on every tool_choice (named, required,
// auto)", or "400 … on tool_choice named, required; plain text, no call
// on tool_choice auto".
func triedText(ts []tried) string {
	var outcomes []string
	choices := map[string][]string{}
	for _, t := range ts {
		if _, seen := choices[t.outcome]; !seen {
			outcomes = append(outcomes, t.outcome)
		}
		choices[t.outcome] = append(choices[t.outcome], t.choice)
	}
	if len(outcomes) == 1 && len(ts) > 1 {
		return fmt.Sprintf("%s on every tool_choice (%s)", outcomes[0], strings.Join(choices[outcomes[0]], ", "))
	}
	parts := make([]string, len(outcomes))
	for i, o := range outcomes {
		parts[i] = o + " on tool_choice " + strings.Join(choices[o], ", ")
	}
	return strings.Join(parts, "; ")
}

func toolDeltas(x *Exchange) int {
	n := 0
	for _, c := range x.Chunks {
		n += c.ToolDelta
	}
	return n
}

// cutCall is the verdict on a call whose arguments max_tokens cut short
// (finish "length"): a WARN, since the server's part cannot be judged —
// the model had not finished (a tiny or weak model wanders inside a
// string) — and ok true; ok false when the call was not cut.
func cutCall(x *Exchange, choice string, details map[string]any) (r Result, ok bool) {
	if x.FinishReason != "length" {
		return Result{}, false
	}
	return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf(
		"cannot judge: max_tokens %d cut the arguments short (finish length) before the model finished them; tool_choice %s", toolMaxTokens, choice)}, true
}

// finishOK reports whether the finish reason fits the tool_choice:
// "tool_calls", or "stop" for a named tool_choice (OpenAI itself answers
// a forced function with "stop", and vLLM follows it).
func finishOK(finish, choice string) bool {
	return finish == "tool_calls" || (finish == "stop" && choice == "named")
}

// argsProblem validates a call's arguments against the tool's schema and
// says what is wrong, naming sizes, JSON pointers and keywords only.
func argsProblem(tc ToolCall, sch *jsonschema.Schema) string {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.Arguments))
	if err != nil {
		if strings.TrimSpace(tc.Arguments) == "" {
			return "empty arguments"
		}
		return fmt.Sprintf("arguments are not valid JSON (%s)", nBytes(len(tc.Arguments)))
	}
	if err := sch.Validate(inst); err != nil {
		return "arguments violate the parameters schema " + schemaViolation(err)
	}
	return ""
}

// toolSchemas compiles the parameters schema of each tool, by name.
func toolSchemas(tools ...tool) (map[string]*jsonschema.Schema, error) {
	m := map[string]*jsonschema.Schema{}
	for _, tl := range tools {
		s, _, err := compileSchema(tl.name+".json", []byte(tl.params))
		if err != nil {
			return nil, err
		}
		m[tl.name] = s
	}
	return m, nil
}

func runToolsCall(ctx context.Context, t *T) Result {
	if !t.Probe.Chat() {
		return Result{Status: Skip, Evidence: "tools need the chat API"}
	}
	schemas, err := toolSchemas(toolFlights)
	if err != nil {
		return Result{Status: Fail, Evidence: err.Error()}
	}
	a := askTools(ctx, t, promptToolCall, chatTools(toolFlights),
		[]choice{{"named", toolFlights.named()}, {"required", "required"}, {"auto", "auto"}}, nil, openAIError)
	if a.failed != nil {
		return *a.failed
	}
	x := a.x
	details := map[string]any{"tool_choice": a.choice, "calls": len(x.ToolCalls), "deltas": toolDeltas(x), "finish_reason": finishWord(x.FinishReason)}
	tc := x.ToolCalls[0]
	fail := func(why string) Result {
		return Result{Status: Fail, Evidence: why + "; tool_choice " + a.choice, Details: details}
	}
	if tc.Name != toolFlights.name {
		return fail(fmt.Sprintf("called an unknown tool (a name of %s)", nBytes(len(tc.Name))))
	}
	if p := argsProblem(tc, schemas[tc.Name]); p != "" {
		if r, cut := cutCall(x, a.choice, details); cut {
			return r
		}
		return fail(p)
	}
	if tc.ID == "" {
		return fail("the call has no id: the tool's result cannot be sent back")
	}
	ev := fmt.Sprintf("%d call, arguments valid, %d deltas; finish %s; tool_choice %s", len(x.ToolCalls), toolDeltas(x), finishWord(x.FinishReason), a.choice)
	if len(x.ToolCalls) > 1 {
		ev = fmt.Sprintf("%d calls (1 asked for), the first valid, %d deltas; finish %s; tool_choice %s", len(x.ToolCalls), toolDeltas(x), finishWord(x.FinishReason), a.choice)
	}
	if !finishOK(x.FinishReason, a.choice) {
		return Result{Status: Warn, Evidence: ev + ", not tool_calls", Details: details}
	}
	return Result{Status: Pass, Evidence: ev, Details: details}
}

func runToolsParallel(ctx context.Context, t *T) Result {
	if !t.Probe.Chat() {
		return Result{Status: Skip, Evidence: "tools need the chat API"}
	}
	tools := []tool{toolFlights, toolWeather, toolCurrency}
	schemas, err := toolSchemas(tools...)
	if err != nil {
		return Result{Status: Fail, Evidence: err.Error()}
	}
	// A named tool_choice forces one call: only required and auto can
	// give parallel calls.
	a := askTools(ctx, t, promptToolParallel, chatTools(tools...),
		[]choice{{"required", "required"}, {"auto", "auto"}}, map[string]any{"parallel_tool_calls": true}, openAIError)
	if a.failed != nil {
		return *a.failed
	}
	x := a.x
	details := map[string]any{"tool_choice": a.choice, "calls": len(x.ToolCalls), "deltas": toolDeltas(x), "finish_reason": finishWord(x.FinishReason)}
	var ids []string
	var idx []string
	for i, tc := range x.ToolCalls {
		s, known := schemas[tc.Name]
		if !known {
			return Result{Status: Fail, Details: details,
				Evidence: fmt.Sprintf("call %d names an unknown tool (a name of %s; calls merged at one index?); tool_choice %s", i+1, nBytes(len(tc.Name)), a.choice)}
		}
		if p := argsProblem(tc, s); p != "" {
			if r, cut := cutCall(x, a.choice, details); cut {
				return r
			}
			return Result{Status: Fail, Details: details,
				Evidence: fmt.Sprintf("call %d (%s): %s; tool_choice %s", i+1, tc.Name, p, a.choice)}
		}
		if tc.ID == "" || slices.Contains(ids, tc.ID) {
			return Result{Status: Fail, Details: details,
				Evidence: fmt.Sprintf("%d calls, ids not distinct (call %d has no id or a repeated one): the results cannot be matched; tool_choice %s", len(x.ToolCalls), i+1, a.choice)}
		}
		ids = append(ids, tc.ID)
		idx = append(idx, fmt.Sprint(tc.Index))
	}
	if len(x.ToolCalls) < 2 {
		return Result{Status: Warn, Details: details,
			Evidence: fmt.Sprintf("no parallel calls: 1 valid call of 3 asked for; tool_choice %s", a.choice)}
	}
	ev := fmt.Sprintf("%d calls at indexes %s, distinct ids, all valid; finish %s; tool_choice %s",
		len(x.ToolCalls), strings.Join(idx, ","), finishWord(x.FinishReason), a.choice)
	if x.FinishReason != "tool_calls" {
		return Result{Status: Warn, Evidence: ev + ", not tool_calls", Details: details}
	}
	return Result{Status: Pass, Evidence: ev, Details: details}
}

// emptyObject is the only right arguments of a tool without parameters.
var emptyObject = regexp.MustCompile(`^\s*\{\s*\}\s*$`)

func runToolsEmptyArgs(ctx context.Context, t *T) Result {
	if !t.Probe.Chat() {
		return Result{Status: Skip, Evidence: "tools need the chat API"}
	}
	a := askTools(ctx, t, promptToolEmpty, chatTools(toolTime),
		[]choice{{"named", toolTime.named()}, {"required", "required"}, {"auto", "auto"}}, nil, openAIError)
	if a.failed != nil {
		return *a.failed
	}
	x := a.x
	tc := x.ToolCalls[0]
	details := map[string]any{"tool_choice": a.choice, "calls": len(x.ToolCalls), "argument_bytes": len(tc.Arguments), "finish_reason": finishWord(x.FinishReason)}
	if tc.Name != toolTime.name {
		return Result{Status: Fail, Details: details, Evidence: fmt.Sprintf("called an unknown tool (a name of %s); tool_choice %s", nBytes(len(tc.Name)), a.choice)}
	}
	if !emptyObject.MatchString(tc.Arguments) {
		return Result{Status: Fail, Details: details, Evidence: describeNotEmpty(tc.Arguments) + ", not {}; tool_choice " + a.choice}
	}
	return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("arguments {} (%s); finish %s; tool_choice %s", nBytes(len(tc.Arguments)), finishWord(x.FinishReason), a.choice)}
}

// describeNotEmpty says what arguments that are not {} are, without
// their content.
func describeNotEmpty(args string) string {
	s := strings.TrimSpace(args)
	if s == "" {
		return "arguments are an empty string"
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return fmt.Sprintf("arguments are not valid JSON (%s)", nBytes(len(args)))
	}
	switch v := v.(type) {
	case nil:
		return "arguments are null"
	case map[string]any:
		return fmt.Sprintf("arguments are an object of %d members", len(v))
	case string:
		return "arguments are a JSON string (encoded twice?)"
	case []any:
		return "arguments are an array"
	default:
		return "arguments are a JSON scalar"
	}
}

// finishWord is a finish reason for the evidence: one of OpenAI's, or
// "other" (a server's own value is not repeated: it could be anything).
func finishWord(s string) string {
	switch s {
	case "":
		return "none"
	case "stop", "length", "tool_calls", "content_filter", "function_call":
		return s
	}
	return "other"
}

// nBytes is "1 byte", "84 bytes".
func nBytes(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
