package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// The served check of each API suite, on hand-written servers: what it
// says of a path that is not served, of a 200 of another shape, of a key
// refused and of a model unknown.
func TestServedShapes(t *testing.T) {
	answers := map[string]string{
		APIResponses:  `{"object":"response","status":"incomplete","output":[],"usage":{"input_tokens":9,"output_tokens":16}}`,
		APIMessages:   `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"max_tokens","usage":{"input_tokens":9,"output_tokens":1}}`,
		APIEmbeddings: `{"data":[{"index":0,"embedding":[0.5,0.5]}],"usage":{"prompt_tokens":3,"total_tokens":3}}`,
		APIRerank:     `{"results":[{"index":1,"relevance_score":0.7},{"index":0,"relevance_score":0.2}],"usage":{"total_tokens":8}}`,
	}
	answered := map[string]string{
		APIResponses: "a response (status incomplete, 16 output tokens)", APIMessages: "a message (stop_reason max_tokens, 1 output token)",
		APIEmbeddings: "1 embedding", APIRerank: "2 results",
	}
	lacks := map[string]string{APIResponses: "output", APIMessages: "content", APIEmbeddings: "data", APIRerank: "results"}
	titles := map[string]string{APIResponses: "Responses API", APIMessages: "Messages API", APIEmbeddings: "embeddings API", APIRerank: "rerank API"}
	for _, api := range []string{APIResponses, APIMessages, APIEmbeddings, APIRerank} {
		path := "/v1" + apiPaths[api]
		notFound := func(w http.ResponseWriter, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			if api == APIMessages {
				fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":%q}}`, msg)
			} else {
				fmt.Fprintf(w, `{"error":{"message":%q,"type":"NotFoundError","code":404}}`, msg)
			}
		}
		for name, tc := range map[string]struct {
			h      http.HandlerFunc
			status Status
			want   string
		}{
			"served": {func(w http.ResponseWriter, r *http.Request) {
				if !okAPI(w, r) {
					fmt.Fprint(w, answers[api])
				}
			}, Pass, fmt.Sprintf("POST %s → 200: %s; m listed by /v1/models (max_model_len 4096, engine vllm)", path, answered[api])},
			"no model list": {func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/models" {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, answers[api])
			}, Pass, fmt.Sprintf("POST %s → 200: %s; no model list (GET /v1/models → 404 text/plain)", path, answered[api])},
			"not listed": {func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/models" {
					fmt.Fprint(w, modelsJSON("other"))
					return
				}
				fmt.Fprint(w, answers[api])
			}, Warn, "m not listed by /v1/models (it offers other) but answers"},
			"path 404": {func(w http.ResponseWriter, r *http.Request) {
				if !okAPI(w, r) {
					notFound(w, "Not Found")
				}
			}, Fail, fmt.Sprintf("%s: POST %s answered 404: the endpoint does not serve the %s at this path", api, path, titles[api])},
			"path 405": {func(w http.ResponseWriter, r *http.Request) {
				if !okAPI(w, r) {
					http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				}
			}, Fail, fmt.Sprintf("%s: POST %s answered 405", api, path)},
			"404 everywhere": {func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(404)
				io.WriteString(w, "<html>no</html>")
			}, Fail, fmt.Sprintf("%s: POST %s answered 404 (GET /v1/models → 404 too: does --target need /v1?)", api, path)},
			"another shape": {func(w http.ResponseWriter, r *http.Request) {
				if !okAPI(w, r) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{}`)
				}
			}, Fail, fmt.Sprintf("not the %s: POST %s → 200 application/json without %s", titles[api], path, lacks[api])},
			"key refused": {func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(401)
			}, Fail, fmt.Sprintf("the key was refused: POST %s → 401; GET /v1/models → 401", path)},
			"model unknown": {func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/models" {
					http.NotFound(w, r)
					return
				}
				notFound(w, "The model `m` does not exist.")
			}, Fail, fmt.Sprintf(`model "m" unknown: POST %s → 404 (`, path)},
			"model unknown, Anthropic's words": {func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/models" {
					http.NotFound(w, r)
					return
				}
				notFound(w, "model: m")
			}, Fail, map[bool]string{
				true:  `model "m" unknown: POST /v1/messages → 404 (not_found_error)`,
				false: fmt.Sprintf("%s: POST %s answered 404 (GET /v1/models → 404 too", api, path),
			}[api == APIMessages]},
			"model not served": {func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/models" {
					fmt.Fprint(w, modelsJSON("a", "b"))
					return
				}
				notFound(w, "model not found")
			}, Fail, fmt.Sprintf(`model "m" not served: /v1/models offers a, b (POST %s → 404 (`, path)},
			"server error": {func(w http.ResponseWriter, r *http.Request) {
				if !okAPI(w, r) {
					writeAPIError(w, 500, "boom")
				}
			}, Fail, fmt.Sprintf("%s: POST %s answered 500 (BadRequestError)", api, path)},
		} {
			t.Run(api+"/"+name, func(t *testing.T) {
				p := serveProbe(t, tc.h, api)
				tt := &T{Probe: p, Config: DefaultConfig()}
				r, err := runServed(context.Background(), tt)
				if err != nil {
					t.Fatal(err)
				}
				mustStatus(t, r, tc.status, tc.want)
			})
		}
	}
}

// A suite whose served check FAILs stops there: every other check is a
// SKIP that names it, as the chat suite's api check does, and Run's
// error is nil (the target answered: exit 1, not 3).
func TestServedFailSkipsTheSuite(t *testing.T) {
	for _, api := range []string{APIResponses, APIMessages, APIEmbeddings, APIRerank} {
		t.Run(api, func(t *testing.T) {
			var ran atomic.Int32
			p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
				if !okAPI(w, r) {
					ran.Add(1)
					http.NotFound(w, r)
				}
			}, api)
			cfg := DefaultConfig()
			cfg.API = api
			rep, err := Run(context.Background(), p, cfg, Select(cfg), nil)
			if err != nil || ran.Load() != 1 {
				t.Fatalf("err %v, %d POSTs (want the served check's one)", err, ran.Load())
			}
			if len(rep.Results) != len(Suite(api)) || rep.Passed() || rep.API != api {
				t.Fatalf("%d results of %d, passed %v, api %q", len(rep.Results), len(Suite(api)), rep.Passed(), rep.API)
			}
			gate := api + ".served"
			mustStatus(t, rep.Results[0], Fail, fmt.Sprintf("%s: POST /v1%s answered 404", api, apiPaths[api]))
			for _, r := range rep.Results[1:] {
				if r.Status != Skip || r.Evidence != gate+" check failed" {
					t.Errorf("%s: %s %q, want a SKIP %q", r.Name, r.Status, r.Evidence, gate+" check failed")
				}
			}
			if v := rep.Verdict(); !strings.Contains(v, "FAIL — 1 of 1 check that ran failed ("+gate+")") {
				t.Errorf("verdict %q", v)
			}
		})
	}
}

// A target that refuses the connection is unreachable for every suite:
// Run stops at the served check with ErrUnreachable (exit 3).
func TestServedUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, api := range []string{APIResponses, APIMessages, APIEmbeddings, APIRerank} {
		p := NewProbe("http://"+addr+"/v1", "m", api, &http.Client{}, http.Header{})
		cfg := DefaultConfig()
		cfg.API = api
		rep, err := Run(context.Background(), p, cfg, Select(cfg), nil)
		if !errors.Is(err, ErrUnreachable) || len(rep.Results) != 1 || rep.Outcome() != OutcomeUnreachable {
			t.Errorf("%s: err %v, %d results, outcome %s", api, err, len(rep.Results), rep.Outcome())
			continue
		}
		mustStatus(t, rep.Results[0], Fail, "unreachable: ", "connection refused")
	}
}

// The whole suite of each API against the simulator, as surge check
// runs it: every check PASSes, the gate learned the server.
func TestNewSuitesRunOnSimulator(t *testing.T) {
	for _, api := range []string{APIResponses, APIMessages, APIEmbeddings, APIRerank} {
		t.Run(api, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.API = api
			p := simProbe(t, fastSim(), api)
			rep, err := Run(context.Background(), p, cfg, Select(cfg), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				if r.Status != Pass {
					// streaming on a loaded machine may read 2 ms steps
					// together: judged on the default step elsewhere.
					if strings.HasSuffix(r.Name, ".streaming") && r.Status == Warn {
						continue
					}
					t.Errorf("%s %s: %s", r.Status, r.Name, r.Evidence)
				}
			}
			if len(rep.Results) != len(Suite(api)) || rep.Server.Engine != "surge-sim" || rep.Server.MaxModelLen == 0 {
				t.Errorf("%d results, server %+v", len(rep.Results), rep.Server)
			}
		})
	}
}

// No check of the Responses, Messages, embeddings and rerank suites lets
// content out: a server whose answers, error messages and types, event
// types, stop reasons, statuses, block types, tool names, scores and
// content types all carry a canary never sees it in a Result, nor do the
// words of the prompts, inputs and documents appear.
func TestNewSuitesKeepContentInMemory(t *testing.T) {
	const canary = "CANARY-5ea1"
	for _, api := range []string{APIResponses, APIMessages, APIEmbeddings, APIRerank} {
		t.Run(api, func(t *testing.T) {
			var n atomic.Int32
			p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				k := n.Add(1) % 5
				if r.URL.Path == "/v1/models" {
					if k%2 == 0 {
						fmt.Fprint(w, modelsJSON("m"))
						return
					}
					w.Header().Set("Content-Type", "text/"+canary)
					w.WriteHeader(404)
					fmt.Fprint(w, canary)
					return
				}
				switch k {
				case 0:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					if api == APIMessages {
						fmt.Fprintf(w, `{"type":"error","error":{"type":"%s is bad","message":"%s"}}`, canary, canary)
					} else {
						fmt.Fprintf(w, `{"error":{"message":"%s","type":"%s is bad"}}`, canary, canary)
					}
				case 1:
					switch api {
					case APIResponses:
						writeTyped(w, ev(canary), ev("response.output_text.delta", "delta", canary),
							ev("response.completed", "response", map[string]any{"status": canary, "usage": responsesUsage(1, 1)}))
					case APIMessages:
						writeTyped(w, ev("message_start", "message", map[string]any{"usage": map[string]any{"input_tokens": 1}}),
							ev("content_block_start", "index", 0, "content_block", map[string]any{"type": canary, "id": canary, "name": canary}),
							ev("content_block_delta", "index", 0, "delta", map[string]any{"type": "input_json_delta", "partial_json": canary}),
							ev("content_block_stop", "index", 0),
							ev("message_delta", "delta", map[string]any{"stop_reason": canary}, "usage", map[string]any{"output_tokens": 1}), ev("message_stop"))
					case APIEmbeddings:
						fmt.Fprintf(w, `{"data":[{"index":0,"embedding":"%s"}],"usage":{"prompt_tokens":1}}`, canary)
					default:
						fmt.Fprintf(w, `{"results":[{"index":0,"relevance_score":"%s","document":{"text":"%s"}}]}`, canary, canary)
					}
				case 2:
					switch api {
					case APIMessages:
						writeTyped(w, toolUseEvents(canary, canary, `{"`+canary+`":1}`, canary)...)
					case APIResponses:
						writeTyped(w, ev(canary), ev("response.output_text.delta", "delta", canary), ev(canary+".end"))
					default:
						fmt.Fprintf(w, `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}],"results":[{"index":9,"relevance_score":1},{"index":0,"relevance_score":2}],"usage":{"prompt_tokens":1}}`)
					}
				case 3:
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"%s":"%s","output":[{"type":"message","content":[{"type":"output_text","text":"%s"}]}],"content":[{"type":"text","text":"%s"}],"status":"%s","stop_reason":"%s"}`,
						canary, canary, canary, canary, canary, canary)
				default:
					w.Header().Set("Content-Type", "text/"+canary)
					fmt.Fprint(w, canary)
				}
			}, api)
			for _, c := range Suite(api) {
				for range 3 { // each check meets several of the server's answers
					r := c.Run(context.Background(), &T{Probe: p, Config: DefaultConfig()})
					b, _ := json.Marshal(r)
					for _, secret := range []string{canary, "lighthouse", "bridges", "Tokyo", "Say hi", "Which text", "What time", "Romans", "GBP", "LHR", "search_flights"} {
						if strings.Contains(strings.ToLower(string(b)), strings.ToLower(secret)) {
							t.Errorf("%s lets %q out: %s", c.Name, secret, b)
						}
					}
				}
			}
		})
	}
}
