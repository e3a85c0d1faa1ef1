package check

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// Every check of the Responses, Messages, embeddings and rerank suites
// PASSes on the plain simulator, and FAILs on the simulator with the
// quirk that breaks it, where one does.
func TestNewSuitesOnSimulatorBothWays(t *testing.T) {
	for _, tc := range []struct {
		check, quirk string
		want         string // in the FAIL's evidence
	}{
		{CheckResponsesServed, "", ""},
		{CheckResponsesStreaming, "buffered-stream", "buffered: "},
		{CheckResponsesUsage, "no-usage", "no usage in response.completed"},
		{CheckResponsesEnd, "", ""},
		{CheckResponsesErrors, "", ""},
		{CheckMessagesServed, "", ""},
		{CheckMessagesStreaming, "buffered-stream", "buffered: "},
		{CheckMessagesUsage, "no-usage", "no usage in message_start or message_delta"},
		{CheckMessagesEnd, "", ""},
		{CheckMessagesTools, "bad-tool-args", "the input_json_delta pieces join into 84 bytes that are not valid JSON; tool_choice tool"},
		{CheckMessagesErrors, "", ""},
		{CheckEmbeddingsServed, "", ""},
		{CheckEmbeddingsBatch, "", ""},
		{CheckEmbeddingsDimensions, "", ""},
		{CheckEmbeddingsUsage, "no-usage", "no usage in the body"},
		{CheckEmbeddingsErrors, "", ""},
		{CheckRerankServed, "", ""},
		{CheckRerankResults, "", ""},
		{CheckRerankOrder, "", ""},
		{CheckRerankUsage, "no-usage", "no usage in the body"},
		{CheckRerankErrors, "", ""},
	} {
		t.Run(tc.check, func(t *testing.T) {
			c, ok := Find(tc.check)
			if !ok {
				t.Fatalf("no check %s", tc.check)
			}
			api := c.Group
			plain := fastSim()
			if strings.HasSuffix(tc.check, ".streaming") {
				// The default 20 ms step, as TestIncrementalSim: a loaded
				// machine reads several 2 ms steps' tokens at once.
				plain = sim.DefaultConfig()
			}
			mustStatus(t, c.Run(context.Background(), &T{Probe: simProbe(t, plain, api), Config: DefaultConfig()}), Pass)
			if tc.quirk == "" {
				return
			}
			quirky := fastSim()
			quirky.Quirks = []string{tc.quirk}
			mustStatus(t, c.Run(context.Background(), &T{Probe: simProbe(t, quirky, api), Config: DefaultConfig()}), Fail, tc.want)
		})
	}
}

// A proxy that holds a Responses or Messages stream and sends every
// delta at the end: the streaming check FAILs it.
func TestTypedStreamingBuffered(t *testing.T) {
	for _, tc := range []struct {
		api    string
		name   string
		events []any
	}{
		{APIResponses, CheckResponsesStreaming, responsesEvents(64, "response.incomplete", "incomplete", responsesUsage(9, 64))},
		{APIMessages, CheckMessagesStreaming, messagesEvents(64, "max_tokens", 9, 64)},
	} {
		t.Run(tc.api, func(t *testing.T) {
			p := typedServer(t, tc.api, func(w http.ResponseWriter, r *http.Request) {
				writeTyped(w, tc.events[:1]...)    // the opening event at once
				time.Sleep(300 * time.Millisecond) // the generation, behind the proxy
				writeTyped(w, tc.events[1:]...)    // every delta at the end
			})
			mustStatus(t, runCheck(t, tc.name, p, DefaultConfig(), Server{}), Fail, "buffered: ", "64 content chunks", "64 tokens (usage)")
		})
	}
}

func TestTypedUsageShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		api    string
		events []any
		status Status
		want   string
	}{
		"responses without usage":   {APIResponses, responsesEvents(32, "response.incomplete", "incomplete", nil), Fail, "no usage in response.completed (32 content events)"},
		"responses undercount":      {APIResponses, responsesEvents(32, "response.incomplete", "incomplete", responsesUsage(9, 4)), Fail, "usage undercounts: usage 4 output tokens, 32 content events counted (tolerance ±2)"},
		"responses no output":       {APIResponses, responsesEvents(32, "response.incomplete", "incomplete", responsesUsage(9, 0)), Fail, "usage in response.completed holds 9 input + 0 output tokens"},
		"responses merged deltas":   {APIResponses, responsesEvents(16, "response.incomplete", "incomplete", responsesUsage(9, 32)), Warn, "fewer content events than tokens (2.0 tokens per event)"},
		"responses right":           {APIResponses, responsesEvents(32, "response.incomplete", "incomplete", responsesUsage(9, 32)), Pass, "usage 32 output tokens, 32 content events counted (tolerance ±2); 9 input tokens; from response.completed"},
		"messages without output":   {APIMessages, messagesEvents(32, "max_tokens", 9, -1), Fail, "message_delta carries no usage.output_tokens (32 content events)"},
		"messages without input":    {APIMessages, messagesEvents(32, "max_tokens", -1, 32), Fail, "message_start carries no usage.input_tokens"},
		"messages without any":      {APIMessages, messagesEvents(32, "max_tokens", -1, -1), Fail, "no usage in message_start or message_delta"},
		"messages undercount":       {APIMessages, messagesEvents(32, "max_tokens", 9, 20), Fail, "usage undercounts: usage 20 output tokens"},
		"messages right":            {APIMessages, messagesEvents(32, "max_tokens", 9, 32), Pass, "from message_start and message_delta"},
		"messages zero input token": {APIMessages, messagesEvents(32, "max_tokens", 0, 32), Fail, "holds 0 input + 32 output tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			p := typedServer(t, tc.api, func(w http.ResponseWriter, r *http.Request) { writeTyped(w, tc.events...) })
			name := CheckResponsesUsage
			if tc.api == APIMessages {
				name = CheckMessagesUsage
			}
			mustStatus(t, runCheck(t, name, p, DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

func TestResponsesEndShapes(t *testing.T) {
	full := responsesEvents(16, "response.incomplete", "incomplete", responsesUsage(9, 16))
	for name, tc := range map[string]struct {
		events []any
		status Status
		want   string
	}{
		"incomplete":           {full, Pass, "response.incomplete after 20 events (16 text deltas) in "},
		"completed":            {responsesEvents(5, "response.completed", "completed", responsesUsage(9, 5)), Pass, "response.completed after 9 events (5 text deltas)"},
		"no end event":         {responsesEvents(16, "", "", nil), Fail, "dropped: the stream ended without response.completed or response.incomplete after 19 events (16 content)"},
		"status of another":    {responsesEvents(16, "response.completed", "incomplete", responsesUsage(9, 16)), Fail, "response.completed carries response.status incomplete, not completed"},
		"status of a server's": {responsesEvents(16, "response.incomplete", "done-ish", responsesUsage(9, 16)), Fail, "response.incomplete carries response.status other, not incomplete"},
		"no response.created":  {full[1:], Warn, "the stream opens with response.output_item.added, not response.created"},
		"chat chunks":          {[]any{`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, "[DONE]"}, Fail, `an event has no "type"`},
	} {
		t.Run(name, func(t *testing.T) {
			p := typedServer(t, APIResponses, func(w http.ResponseWriter, r *http.Request) { writeTyped(w, tc.events...) })
			mustStatus(t, runCheck(t, CheckResponsesEnd, p, DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

func TestMessagesEndShapes(t *testing.T) {
	full := messagesEvents(16, "max_tokens", 9, 16) // start, block start, ping, 16 deltas, block stop, delta, stop
	cut := func(drop ...int) []any {
		var out []any
		for i, e := range full {
			keep := true
			for _, d := range drop {
				keep = keep && i != d
			}
			if keep {
				out = append(out, e)
			}
		}
		return out
	}
	n := len(full)
	for name, tc := range map[string]struct {
		events []any
		status Status
		want   string
	}{
		"whole":             {full, Pass, "message_start, 1 content block (text) started and stopped, message_delta (stop_reason max_tokens), message_stop; 22 events"},
		"tool use":          {toolUseEvents("toolu_1", "search_flights", validFlights, "tool_use"), Pass, "2 content blocks (text, tool_use)"},
		"no message_stop":   {full[:n-1], Fail, "dropped: the stream ended without message_stop after 21 events (16 content)"},
		"block not stopped": {cut(n - 3), Fail, "message_delta while content block 0 is open (no content_block_stop)"},
		"never stopped":     {cut(n-3, n-2), Fail, "content block 0 never stopped"},
		"late delta":        {append(append(cut(n-2, n-1), full[4]), full[n-2:]...), Fail, "a content_block_delta of block 0 outside its start and stop"},
		"no message_delta":  {cut(n - 2), Fail, "no message_delta before message_stop"},
		"no stop_reason":    {append(cut(n-2, n-1), ev("message_delta", "delta", map[string]any{}, "usage", map[string]any{"output_tokens": 16}), ev("message_stop")), Fail, "message_delta carries no stop_reason"},
		"no message_start":  {full[1:], Fail, "the stream opens with content_block_start, not message_start"},
		"started twice":     {append(cut(n-3, n-2, n-1), full[1], full[n-3], full[n-2], full[n-1]), Fail, "content block 0 started twice"},
		"a server's type":   {append([]any{ev("hello_there")}, full...), Fail, "the stream opens with another event, not message_start"},
	} {
		t.Run(name, func(t *testing.T) {
			p := typedServer(t, APIMessages, func(w http.ResponseWriter, r *http.Request) { writeTyped(w, tc.events...) })
			mustStatus(t, runCheck(t, CheckMessagesEnd, p, DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

func TestMessagesToolsShapes(t *testing.T) {
	anthropic := func(w http.ResponseWriter, status int, typ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": "tools are not supported"}})
		w.Write(b)
	}
	const noPassengers = `{"origin": "LHR", "destination": "HND", "date": "2027-03-14"}`
	for name, tc := range map[string]struct {
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"valid": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("toolu_1", "search_flights", validFlights, "tool_use")...)
		}, Pass, "tool_use block with id and name, input valid against the input_schema from 2 input_json_delta pieces; stop_reason tool_use; tool_choice tool"},
		"broken JSON": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("toolu_1", "search_flights", strings.TrimSuffix(validFlights, "}"), "tool_use")...)
		}, Fail, "the input_json_delta pieces join into 97 bytes that are not valid JSON; tool_choice tool"},
		"required missing": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("toolu_1", "search_flights", noPassengers, "tool_use")...)
		}, Fail, "the input violates the input_schema at /: required (missing property 'passengers')"},
		"no id": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("", "search_flights", validFlights, "tool_use")...)
		}, Fail, "the tool_use block has no id"},
		"another tool": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("toolu_1", "book_hotel", validFlights, "tool_use")...)
		}, Fail, "names an unknown tool (a name of 10 bytes)"},
		"pieces in a text block": {func(w http.ResponseWriter, r *http.Request) {
			evs := toolUseEvents("toolu_1", "search_flights", validFlights, "tool_use")
			evs[4] = ev("content_block_start", "index", 1, "content_block", map[string]any{"type": "text", "text": ""})
			writeTyped(w, evs...)
		}, Fail, "input_json_delta pieces for block 1, which no content_block_start of type tool_use opened"},
		"cut by max_tokens": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("toolu_1", "search_flights", validFlights[:40], "max_tokens")...)
		}, Warn, "cannot judge: max_tokens 256 cut the input short"},
		"end_turn": {func(w http.ResponseWriter, r *http.Request) {
			writeTyped(w, toolUseEvents("toolu_1", "search_flights", validFlights, "end_turn")...)
		}, Warn, "stop_reason end_turn; tool_choice tool, not tool_use"},
		"tools refused": {func(w http.ResponseWriter, r *http.Request) { anthropic(w, 400, "invalid_request_error") }, Skip,
			"no tool support: 400 with an Anthropic error body on every tool_choice (tool, any, auto)"},
		"plain text": {func(w http.ResponseWriter, r *http.Request) { writeTyped(w, messagesEvents(4, "end_turn", 9, 4)...) }, Skip,
			"no tool support: plain text, no call on every tool_choice (tool, any, auto)"},
		"server error": {func(w http.ResponseWriter, r *http.Request) { anthropic(w, 500, "api_error") }, Fail,
			"server errors on a request with tools: 500 with an Anthropic error body on every tool_choice"},
	} {
		t.Run(name, func(t *testing.T) {
			p := typedServer(t, APIMessages, tc.h)
			mustStatus(t, runCheck(t, CheckMessagesTools, p, DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

// messages.tools sends Anthropic's tools shape and tool_choices, in turn.
func TestMessagesToolsRequest(t *testing.T) {
	var choices []string
	p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tools []struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				InputSchema map[string]any `json:"input_schema"`
			} `json:"tools"`
			ToolChoice map[string]any `json:"tool_choice"`
			MaxTokens  int            `json:"max_tokens"`
			Stream     bool           `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Tools) != 1 || req.Tools[0].Name != "search_flights" ||
			req.Tools[0].Description == "" || req.Tools[0].InputSchema["required"] == nil || req.MaxTokens != toolMaxTokens || !req.Stream {
			t.Errorf("request: %v %+v", err, req)
		}
		choices = append(choices, req.ToolChoice["type"].(string)+" "+func() string { s, _ := req.ToolChoice["name"].(string); return s }())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`))
	}, APIMessages)
	runCheck(t, CheckMessagesTools, p, DefaultConfig(), Server{})
	if got := strings.Join(choices, ", "); got != "tool search_flights, any , auto " {
		t.Errorf("tool_choices %q", got)
	}
}

func TestTypedErrorsShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		check  string
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"messages with OpenAI's shape": {CheckMessagesErrors, func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, 400, "bad") }, Warn,
			"invalid JSON → 400 without an Anthropic error body"},
		"messages 500": {CheckMessagesErrors, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, Fail,
			"invalid JSON → 500, an empty body, no messages → 500, an empty body, no max_tokens → 500, an empty body, unknown model → 500, an empty body"},
		"messages accept anything": {CheckMessagesErrors, func(w http.ResponseWriter, r *http.Request) { writeTyped(w, messagesEvents(1, "end_turn", 1, 1)...) }, Fail,
			"invalid JSON → 200"},
		"responses accept anything": {CheckResponsesErrors, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"object":"response","status":"completed","output":[]}`))
		}, Fail, "invalid JSON → 200, no input → 200, max_output_tokens a string → 200, unknown model → 200"},
		"responses with Anthropic's shape": {CheckResponsesErrors, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error"}}`))
		}, Warn, "invalid JSON → 400 without an OpenAI error body"},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := Find(tc.check)
			mustStatus(t, runCheck(t, tc.check, typedServer(t, c.Group, tc.h), DefaultConfig(), Server{}), tc.status, tc.want)
		})
	}
}

// The unknown model is the only request of the errors checks that is
// well formed: a server that serves every model fails that one only.
func TestTypedErrorsUnknownModel(t *testing.T) {
	var n atomic.Int32
	p := typedServer(t, APIMessages, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 4 {
			writeTyped(w, messagesEvents(1, "end_turn", 1, 1)...)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`))
	})
	mustStatus(t, runCheck(t, CheckMessagesErrors, p, DefaultConfig(), Server{}), Fail, "no max_tokens → 400, unknown model → 200")
}
