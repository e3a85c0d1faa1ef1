package coldstart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/openai"
)

// ErrModel is returned when a probe got 404 and the target's GET /models
// list does not hold the model the probes ask for: no retry can help, so
// the cycle stops at once instead of retrying until Config.StartTimeout.
var ErrModel = errors.New("coldstart: the target does not serve the model")

// modelsTimeout bounds the one GET /models a 404 triggers.
const modelsTimeout = 10 * time.Second

// wrongModel says why a probe's 404 means that the target does not serve
// model, "" when it may mean anything else (a
// gateway that answers 404 while it scales up, a /models it does not
// answer, a list holding the model): then the probes go on.
func wrongModel(ctx context.Context, cl *openai.Client, base, model string) string {
	ids, ok := servedModels(ctx, cl, base)
	// Ollama lists "m:latest" and serves it as "m" too
	if !ok || slices.Contains(ids, model) || slices.Contains(ids, model+":latest") {
		return ""
	}
	served := "no model"
	if len(ids) > 0 {
		served = fmt.Sprintf("%q", ids[0])
		for _, id := range ids[1:min(len(ids), 5)] {
			served += fmt.Sprintf(", %q", id)
		}
		if len(ids) > 5 {
			served += fmt.Sprintf(" and %d more", len(ids)-5)
		}
	}
	return fmt.Sprintf("a probe for model %q got 404, and GET %s/models lists %s: set --model to a name the server serves", model, strings.TrimRight(base, "/"), served)
}

// servedModels is the ids of GET {base}/models; ok is false when the
// answer is not an OpenAI model list.
func servedModels(ctx context.Context, cl *openai.Client, base string) (ids []string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return nil, false
	}
	req.Header = cl.AuthHeader()
	resp, err := cl.HTTPClient().Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var l struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&l) != nil || l.Data == nil {
		return nil, false
	}
	for _, m := range l.Data {
		if m.ID == "" {
			return nil, false
		}
		ids = append(ids, m.ID)
	}
	return ids, true
}
