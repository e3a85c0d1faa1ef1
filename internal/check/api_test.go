package check

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// chatBody is a non-streamed chat answer.
const chatBody = `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`

// apiError writes an OpenAI error body.
func apiError(w http.ResponseWriter, status int, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":"no","type":%q,"code":%d}}`, typ, status)
}

func TestAPICheck(t *testing.T) {
	many := make([]string, 15)
	for i := range many {
		many[i] = fmt.Sprintf("model-%02d", i)
	}
	for name, tc := range map[string]struct {
		h      http.HandlerFunc
		status Status
		want   []string
		server Server
	}{
		"html everywhere": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(404)
			fmt.Fprint(w, "<html><body>Not Found</body></html>")
		}, Fail, []string{"not an OpenAI API: GET /v1/models → 404 text/html; POST /v1/chat/completions → 404 text/html"}, Server{}},
		"html 200 everywhere": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!doctype html><html></html>")
		}, Fail, []string{"not an OpenAI API: GET /v1/models → 200 text/html; POST /v1/chat/completions → 200 text/html"}, Server{}},
		"model not served": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				fmt.Fprint(w, modelsJSON("llama-3.1-8b", "qwen2.5-7b"))
				return
			}
			apiError(w, 404, "NotFoundError")
		}, Fail, []string{`model "m" not served: /v1/models offers llama-3.1-8b, qwen2.5-7b (POST /v1/chat/completions → 404 (NotFoundError))`},
			Server{Models: []string{"llama-3.1-8b", "qwen2.5-7b"}, Engine: "vllm"}},
		"many models": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				fmt.Fprint(w, modelsJSON(many...))
				return
			}
			apiError(w, 404, "NotFoundError")
		}, Fail, []string{"model-09 … (5 more)"}, Server{Models: many, Engine: "vllm"}},
		"served but not listed": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				fmt.Fprint(w, modelsJSON("m-alias"))
				return
			}
			fmt.Fprint(w, chatBody)
		}, Warn, []string{"m not listed by /v1/models (it offers m-alias) but answers"}, Server{Models: []string{"m-alias"}, Engine: "vllm"}},
		// Ollama lists a model created without a tag as name:latest.
		"listed with :latest": {func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, modelsJSON("m:latest"))
		}, Pass, []string{"m served (as m:latest)"}, Server{Models: []string{"m:latest"}, Engine: "vllm"}},
		"no model list": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				apiError(w, 404, "not_found")
				return
			}
			fmt.Fprint(w, chatBody)
		}, Warn, []string{"GET /v1/models → 404 (not_found); a completion answers"}, Server{}},
		"key refused": {func(w http.ResponseWriter, r *http.Request) { apiError(w, 401, "invalid_api_key") },
			Fail, []string{"the key was refused: GET /v1/models → 401 (invalid_api_key); POST /v1/chat/completions → 401"}, Server{}},
		"unknown model without a list": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":{"message":"The model `+"`m`"+` does not exist.","type":"NotFoundError","code":404}}`)
		}, Fail, []string{`model "m" unknown: POST /v1/chat/completions → 404 (NotFoundError); GET /v1/models → 404 text/plain`}, Server{}},
		// /v1 left out of --target: both routes 404 with an OpenAI error
		// body that does not blame the model.
		"no API under the path": {func(w http.ResponseWriter, r *http.Request) { apiError(w, 404, "NotFoundError") },
			Fail, []string{"no OpenAI API under this path (404 on /v1/models and /v1/chat/completions); does --target need /v1?"}, Server{}},
		"ollama unknown model": {func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":{"message":"model \"m\" not found, try pulling it first","type":"api_error"}}`)
		}, Fail, []string{`model "m" unknown: POST /v1/chat/completions → 404 (api_error)`}, Server{}},
		"html 404 everywhere hints /v1": {func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			Fail, []string{"not an OpenAI API: ", "(does --target need /v1?)"}, Server{}},
		// A JSON API that is not OpenAI's: {} to everything.
		"200 without choices": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "{}")
		}, Fail, []string{"not an OpenAI API: GET /v1/models → 200 application/json; POST /v1/chat/completions → 200 application/json without choices"}, Server{}},
		"served": {func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, modelsJSON("a", "m")) },
			Pass, []string{"GET /v1/models → 200: m served (max_model_len 4096, engine vllm)"}, Server{Models: []string{"a", "m"}, MaxModelLen: 4096, Engine: "vllm"}},
	} {
		t.Run(name, func(t *testing.T) {
			tt := &T{Probe: stubProbe(t, tc.h), Config: DefaultConfig()}
			r, err := runAPI(context.Background(), tt)
			if err != nil {
				t.Fatalf("unreachable: %v", err)
			}
			mustStatus(t, r, tc.status, tc.want...)
			if fmt.Sprint(tt.Server) != fmt.Sprint(tc.server) {
				t.Errorf("server %+v, want %+v", tt.Server, tc.server)
			}
		})
	}
}

func TestAPICheckSim(t *testing.T) {
	for _, api := range []string{APIChat, APICompletions} {
		tt := &T{Probe: simProbe(t, fastSim(), api), Config: DefaultConfig()}
		r, err := runAPI(context.Background(), tt)
		if err != nil {
			t.Fatal(err)
		}
		mustStatus(t, r, Pass, "surge-sim served (max_model_len 8192, engine surge-sim)")
		if tt.Server.MaxModelLen != 8192 || tt.Server.Engine != "surge-sim" {
			t.Errorf("server %+v", tt.Server)
		}
	}
	// The model name the simulator does not serve: FAIL naming the one it does.
	p := simProbe(t, fastSim(), APIChat)
	p.model = "gpt-4o"
	r, _ := runAPI(context.Background(), &T{Probe: p, Config: DefaultConfig()})
	mustStatus(t, r, Fail, `model "gpt-4o" not served: /v1/models offers surge-sim`)
}

func TestGuessEngine(t *testing.T) {
	h := func(k, v string) http.Header { x := http.Header{}; x.Set(k, v); return x }
	for _, tc := range []struct {
		h      http.Header
		owners []string
		want   string
	}{
		{h("X-Surge-Replica", "r0"), nil, "surge-sim"},
		{http.Header{}, []string{"vllm"}, "vllm"},
		{http.Header{}, []string{"library"}, "ollama"},
		{http.Header{}, []string{"llamacpp"}, "llama.cpp"},
		{http.Header{}, []string{"sglang"}, "sglang"},
		{h("Server", "llama.cpp"), []string{"someone"}, "llama.cpp"},
		{h("Server", "uvicorn"), []string{"openai"}, ""},
	} {
		if got := guessEngine(tc.h, tc.owners); got != tc.want {
			t.Errorf("%v %v: %q, want %q", tc.h, tc.owners, got, tc.want)
		}
	}
}
