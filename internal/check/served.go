package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The gate of the Responses, Messages, embeddings and rerank suites
// (responses.served, …): is the API served at its path, for the model?
// It plays the api check's part for those suites: it runs first, a FAIL
// SKIPs the rest, and a first request that gets no response at all makes
// the target unreachable (exit 3).

// apiTitles name the APIs in evidence.
var apiTitles = map[string]string{
	APIResponses: "the Responses API", APIMessages: "the Messages API",
	APIEmbeddings: "the embeddings API", APIRerank: "the rerank API",
}

// servedCheck is the gate of api's suite.
func servedCheck(api string) Check {
	return Check{Name: api + ".served", Group: api,
		What: fmt.Sprintf("POST /v1%s answers a tiny request with %s's shape, not 404/405; GET /v1/models, when there, lists the model", apiPaths[api], apiTitles[api]),
		Run:  gateRun(runServed), Gate: runServed}
}

// helloReq is the gate's tiny request: one output token (16 for
// Responses, the least max_output_tokens OpenAI takes), one short input,
// two documents.
func helloReq(api string) Req {
	switch api {
	case APIResponses:
		return Req{Prompt: "Say hi.", MaxTokens: 16}
	case APIEmbeddings:
		return Req{Inputs: []string{"Say hi."}}
	case APIRerank:
		return Req{Prompt: "Say hi.", Inputs: []string{"hi", "hello"}}
	}
	return Req{Prompt: "Say hi.", MaxTokens: 1}
}

// shapeOf says whether a 200 body has the API's shape: the member its
// answer cannot lack (output, content, data, results) is an array. The
// second value names it.
func shapeOf(api string, body []byte) (bool, string) {
	member := map[string]string{APIResponses: "output", APIMessages: "content", APIEmbeddings: "data", APIRerank: "results"}[api]
	var b map[string]json.RawMessage
	if json.Unmarshal(body, &b) != nil {
		return false, member
	}
	v := b[member]
	return len(v) > 0 && v[0] == '[', member
}

// answerWord says what a 200 of the API's shape held, for the evidence.
func answerWord(api string, x *Exchange) string {
	switch api {
	case APIResponses:
		return fmt.Sprintf("a response (status %s, %s)", stopWord(x.FinishReason), outputTokens(x))
	case APIMessages:
		return fmt.Sprintf("a message (stop_reason %s, %s)", stopWord(x.FinishReason), outputTokens(x))
	}
	var b map[string][]json.RawMessage
	_ = json.Unmarshal(x.Body, &b) // shapeOf found the array
	if api == APIEmbeddings {
		return countOf(len(b["data"]), "embedding")
	}
	return countOf(len(b["results"]), "result")
}

// outputTokens is "1 output token", "16 output tokens" or "no usage".
func outputTokens(x *Exchange) string {
	if x.Usage == nil {
		return "no usage"
	}
	return countOf(x.Usage.CompletionTokens, "output token")
}

// countOf is "1 result", "2 results".
func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// stopWord is a Responses status or a Messages stop_reason for the
// evidence: one the APIs define, or "other" (a server's own value is not
// repeated).
func stopWord(s string) string {
	switch s {
	case "":
		return "none"
	case "completed", "incomplete", "failed", "cancelled", "in_progress", "queued",
		"end_turn", "max_tokens", "tool_use", "stop_sequence", "pause_turn", "refusal":
		return s
	}
	return "other"
}

// runServed is the gate of the Responses, Messages, embeddings and
// rerank suites (docs/checks.md). It asks GET /models for what the
// report says of the server (a list is not required: these APIs are
// often served beside others), then sends the API's tiny request.
func runServed(ctx context.Context, t *T) (Result, error) {
	p := t.Probe
	api := p.API()
	models, post := p.apiPath("/models"), "POST "+p.apiPath(p.Path())
	x, err := p.Get(ctx, "/models", t.Config.Timeout)
	if err != nil {
		why := transportCause(err)
		return Result{Status: Fail, Evidence: "unreachable: " + why}, errors.New(why)
	}
	if x.TimedOut {
		return Result{Status: Fail, Evidence: fmt.Sprintf("GET %s: no answer within %s", models, showDur(x.Elapsed))}, nil
	}
	list, isList := decodeModels(x)
	listed := false
	if isList {
		t.Server = list.server(x.Header, p.Model())
		_, listed = servedAs(t.Server.Models, p.Model())
	}
	r := helloReq(api)
	r.Timeout = t.Config.Timeout
	c, err := p.Send(ctx, r)
	switch {
	case err != nil:
		return Result{Status: Fail, Evidence: post + ": no response: " + transportCause(err)}, nil
	case c.TimedOut:
		return Result{Status: Fail, Evidence: fmt.Sprintf("%s: no answer within %s", post, showDur(c.Elapsed))}, nil
	}
	if t.Server.Engine == "" {
		t.Server.Engine = guessEngine(c.Header, nil)
	}
	shaped, member := shapeOf(api, c.Body)
	details := map[string]any{"status": c.Status, "models_status": x.Status, "listed": listed}
	if c.Status == 200 && c.EndErr == nil && shaped {
		ev := fmt.Sprintf("%s → 200: %s", post, answerWord(api, c))
		switch {
		case isList && !listed:
			return Result{Status: Warn, Details: details, Evidence: fmt.Sprintf("%s; %s not listed by %s (it offers %s) but answers", ev, p.Model(), models, listNames(t.Server.Models))}, nil
		case isList:
			return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("%s; %s listed by %s%s", ev, p.Model(), models, t.Server.about())}, nil
		}
		return Result{Status: Pass, Details: details, Evidence: fmt.Sprintf("%s; no model list (GET %s → %s)", ev, models, statusText(x))}, nil
	}
	return Result{Status: Fail, Details: details, Evidence: notServed(t, x, c, isList, member)}, nil
}

// notServed says why the API's tiny request did not get its answer.
func notServed(t *T, models, c *Exchange, isList bool, member string) string {
	p := t.Probe
	api, path := p.API(), p.apiPath(p.Path())
	answered := fmt.Sprintf("%s: POST %s answered %d", api, path, c.Status)
	blamed := modelNotFound(c) || anthropicModelNotFound(c)
	switch {
	case c.Status == 200 && c.EndErr != nil:
		return fmt.Sprintf("not %s: POST %s → 200, %v", apiTitles[api], path, c.EndErr)
	case c.Status == 200:
		return fmt.Sprintf("not %s: POST %s → %s without %s", apiTitles[api], path, statusText(c), member)
	case c.Status == 401 || c.Status == 403 || models.Status == 401 || models.Status == 403:
		return fmt.Sprintf("the key was refused: POST %s → %s; GET %s → %s (see --api-key-env, --api-key-file)", path, statusText(c), p.apiPath("/models"), statusText(models))
	case (c.Status == 404 || c.Status == 405) && !blamed && models.Status == 404:
		return fmt.Sprintf("%s (GET %s → 404 too: does --target need /v1?)", answered, p.apiPath("/models"))
	case (c.Status == 404 || c.Status == 405) && !blamed:
		return fmt.Sprintf("%s: the endpoint does not serve %s at this path", answered, apiTitles[api])
	case blamed && isList:
		return fmt.Sprintf("model %q not served: %s offers %s (POST %s → %s)", p.Model(), p.apiPath("/models"), listNames(t.Server.Models), path, statusText(c))
	case blamed:
		return fmt.Sprintf("model %q unknown: POST %s → %s", p.Model(), path, statusText(c))
	}
	return fmt.Sprintf("%s: POST %s answered %s", api, path, statusText(c))
}

// anthropicModelNotFound reports whether an Anthropic error body blames
// the model: a not_found_error whose message names a model (Anthropic
// answers an unknown one "model: <name>"). The message is matched,
// never shown.
func anthropicModelNotFound(x *Exchange) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	typ, ok := x.AnthropicError()
	return ok && typ == "not_found_error" && json.Unmarshal(x.Body, &e) == nil &&
		strings.Contains(strings.ToLower(e.Error.Message), "model")
}
