package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// apiChecks returns the api check: it runs first, and when it FAILs every
// other check is a SKIP.
func apiChecks() []Check {
	return []Check{{
		Name:  CheckAPI,
		Group: GroupAPI,
		What:  "the endpoint speaks the OpenAI API (GET /v1/models, or a one-token completion) and serves the model",
		Run:   gateRun(runAPI),
		Gate:  runAPI,
	}}
}

// gateRun is a gate as a Check's Run: its result without the error.
func gateRun(gate func(context.Context, *T) (Result, error)) func(context.Context, *T) Result {
	return func(ctx context.Context, t *T) Result {
		r, _ := gate(ctx, t)
		return r
	}
}

// maxListed is how many model names a FAIL lists.
const maxListed = 10

// runAPI is the api check. It asks GET /models; when that is not an
// OpenAI model list, or does not list the model, it sends one tiny
// completion. It fills t.Server. The error says why the target could not
// be reached at all (the first request got no response); the Result is
// then a FAIL saying the same.
func runAPI(ctx context.Context, t *T) (Result, error) {
	p := t.Probe
	models := p.apiPath("/models")
	x, err := p.Get(ctx, "/models", t.Config.Timeout)
	if err != nil {
		why := transportCause(err)
		return Result{Status: Fail, Evidence: "unreachable: " + why}, errors.New(why)
	}
	if x.TimedOut {
		return Result{Status: Fail, Evidence: fmt.Sprintf("GET %s: no answer within %s", models, showDur(x.Elapsed))}, nil
	}
	list, isList := decodeModels(x)
	got := "GET " + models + " → " + statusText(x)
	if isList {
		t.Server = list.server(x.Header, p.Model())
		if listed, ok := servedAs(t.Server.Models, p.Model()); ok {
			as := ""
			if listed != p.Model() {
				as = " (as " + listed + ")"
			}
			return Result{Status: Pass, Evidence: fmt.Sprintf("GET %s → 200: %s served%s%s", models, p.Model(), as, t.Server.about()),
				Details: map[string]any{"models": len(t.Server.Models), "max_model_len": t.Server.MaxModelLen, "engine": t.Server.Engine}}, nil
		}
		got = fmt.Sprintf("GET %s lists %d models", models, len(list.Data))
	}
	// Not a model list, or the model is not in it: one tiny completion
	// says whether the API and the model answer anyway.
	c, err := p.Send(ctx, Req{Prompt: "Say hi.", MaxTokens: 1, Timeout: t.Config.Timeout})
	post := "POST " + p.apiPath(p.path())
	switch {
	case err != nil:
		return Result{Status: Fail, Evidence: got + "; " + post + ": no response: " + transportCause(err)}, nil
	case c.TimedOut:
		return Result{Status: Fail, Evidence: fmt.Sprintf("%s; %s: no answer within %s", got, post, showDur(c.Elapsed))}, nil
	}
	// A 200 answers only with an OpenAI completion's shape: a JSON API
	// that is something else ({} to everything) must not pass for one.
	shaped := hasChoices(c)
	answered := c.Status == 200 && c.EndErr == nil && shaped
	if answered && isList {
		return Result{Status: Warn, Evidence: fmt.Sprintf("%s not listed by %s (it offers %s) but answers", p.Model(), models, listNames(t.Server.Models))}, nil
	}
	if answered {
		if t.Server.Engine == "" {
			t.Server.Engine = guessEngine(c.Header, nil)
		}
		return Result{Status: Warn, Evidence: got + "; a completion answers: the endpoint has no model list"}, nil
	}
	did := post + " → " + statusText(c)
	if c.Status == 200 && c.EndErr == nil && !shaped {
		did += " without choices"
	}
	_, errBody := c.ErrorBody()
	// Both endpoints 404 and the body does not blame the model: the
	// target's path is wrong (most often /v1 left out); OpenAI and LiteLLM
	// answer an unknown route with an OpenAI-shaped 404 too.
	noAPI := x.Status == 404 && c.Status == 404 && !modelNotFound(c)
	switch {
	case isList:
		return Result{Status: Fail, Evidence: fmt.Sprintf("model %q not served: %s offers %s (%s)", p.Model(), models, listNames(t.Server.Models), did)}, nil
	case x.Status == 401 || x.Status == 403 || c.Status == 401 || c.Status == 403:
		return Result{Status: Fail, Evidence: fmt.Sprintf("the key was refused: %s; %s (see --api-key-env, --api-key-file)", got, did)}, nil
	case noAPI && errBody:
		return Result{Status: Fail, Evidence: fmt.Sprintf("no OpenAI API under this path (404 on %s and %s); does --target need /v1?", models, p.apiPath(p.path()))}, nil
	case noAPI:
		return Result{Status: Fail, Evidence: fmt.Sprintf("not an OpenAI API: %s; %s (does --target need /v1?)", got, did)}, nil
	case c.Status == 404 && errBody:
		return Result{Status: Fail, Evidence: fmt.Sprintf("model %q unknown: %s; %s", p.Model(), did, got)}, nil
	case !errBody:
		return Result{Status: Fail, Evidence: fmt.Sprintf("not an OpenAI API: %s; %s", got, did)}, nil
	}
	return Result{Status: Fail, Evidence: got + "; " + did}, nil
}

// hasChoices reports whether a 200 body has the shape of an OpenAI
// completion: a non-empty choices array.
func hasChoices(x *Exchange) bool {
	var b struct {
		Choices []json.RawMessage `json:"choices"`
	}
	return json.Unmarshal(x.Body, &b) == nil && len(b.Choices) > 0
}

// modelNotFound reports whether an error body blames the model: its
// message or code says a model is unknown, not found or does not exist
// (vLLM "The model `x` does not exist.", OpenAI code model_not_found,
// Ollama "model \"x\" not found"). The message is matched, never shown.
func modelNotFound(x *Exchange) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(x.Body, &e) != nil {
		return false
	}
	m := strings.ToLower(e.Error.Message + " " + fmt.Sprint(e.Error.Code))
	if !strings.Contains(m, "model") {
		return false
	}
	for _, w := range []string{"not found", "not_found", "unknown", "does not exist", "not exist", "no such model"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// apiPath is the path of an API endpoint as the user sees it, e.g.
// /v1/models.
func (p *Probe) apiPath(path string) string {
	return strings.TrimRight(p.base.Path, "/") + path
}

// modelList is the body of GET /v1/models.
type modelList struct {
	Object string `json:"object"`
	Data   []struct {
		ID          string `json:"id"`
		OwnedBy     string `json:"owned_by"`
		MaxModelLen int    `json:"max_model_len"`
	} `json:"data"`
}

// decodeModels reads an OpenAI model list: a 200 JSON body with a data
// array of objects with ids.
func decodeModels(x *Exchange) (modelList, bool) {
	var l modelList
	if x.Status != 200 || x.EndErr != nil || json.Unmarshal(x.Body, &l) != nil || l.Data == nil {
		return l, false
	}
	for _, m := range l.Data {
		if m.ID == "" {
			return l, false
		}
	}
	return l, true
}

// server is what the list says of the server serving model.
func (l modelList) server(h http.Header, model string) Server {
	s := Server{Models: []string{}}
	var owners []string
	for _, m := range l.Data {
		s.Models = append(s.Models, m.ID)
		owners = append(owners, m.OwnedBy)
		if m.ID == model {
			s.MaxModelLen = m.MaxModelLen
		}
	}
	s.Engine = guessEngine(h, owners)
	return s
}

// about is what a PASS adds about the server.
func (s Server) about() string {
	var parts []string
	if s.MaxModelLen > 0 {
		parts = append(parts, fmt.Sprintf("max_model_len %d", s.MaxModelLen))
	}
	if s.Engine != "" {
		parts = append(parts, "engine "+s.Engine)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// listNames lists at most maxListed names ("none" for none).
func listNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … (%d more)", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}

// guessEngine names the engine from the response headers and the models'
// owned_by, for the report only: vLLM and SGLang name themselves in
// owned_by, llama.cpp's server says "llamacpp", Ollama "library" (or its
// namespace), surge's simulator sends X-Surge-Replica.
func guessEngine(h http.Header, owners []string) string {
	if h.Get("X-Surge-Replica") != "" {
		return "surge-sim"
	}
	for _, o := range owners {
		switch strings.ToLower(o) {
		case "vllm":
			return "vllm"
		case "sglang":
			return "sglang"
		case "llamacpp", "llama.cpp":
			return "llama.cpp"
		case "library", "ollama":
			return "ollama"
		case "surge":
			return "surge-sim"
		}
	}
	if s := strings.ToLower(h.Get("Server")); strings.Contains(s, "llama") {
		return "llama.cpp"
	}
	return ""
}

// servedAs finds model among the listed ids: the same id, or the id with
// the tag ":latest" that Ollama adds to a model named without a tag.
func servedAs(listed []string, model string) (string, bool) {
	for _, id := range listed {
		if id == model || (!strings.Contains(model, ":") && id == model+":latest") {
			return id, true
		}
	}
	return "", false
}
