package simhttp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// both runs f on the plain simulator and on one with the quirk.
func both(t *testing.T, cfg sim.Config, quirk string, f func(t *testing.T, e *env, on bool)) {
	t.Helper()
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: quirk}[on], func(t *testing.T) {
			c := cfg
			if on {
				c.Quirks = []string{quirk}
			}
			f(t, startServer(t, c), on)
		})
	}
}

const chatHead = `"messages":[{"role":"user","content":"hello"}]`

func TestQuirkBufferedStream(t *testing.T) {
	cfg := fastConfig()
	cfg.StepBase = 10 * time.Millisecond
	both(t, cfg, sim.QuirkBufferedStream, func(t *testing.T, e *env, on bool) {
		start := time.Now()
		resp := e.post("/chat/completions", `{`+chatHead+`,"max_tokens":30,"ignore_eos":true,"stream":true}`)
		defer resp.Body.Close()
		headers := time.Since(start)
		evs, err := readSSE(resp.Body)
		if err != nil || len(evs) == 0 || evs[len(evs)-1].data != "[DONE]" {
			t.Fatalf("stream: %d events, err %v", len(evs), err)
		}
		idx := contentChunks(evs)
		if len(idx) != 30 {
			t.Fatalf("%d content chunks, want 30", len(idx))
		}
		first, done := evs[idx[0]].at.Sub(start), evs[len(evs)-1].at.Sub(start)
		// The generation takes 31 steps of 10 ms: streamed, the first
		// token comes after one or two; buffered, with [DONE].
		if on && done-first > 30*time.Millisecond {
			t.Errorf("buffered: first content at %v, [DONE] at %v: the chunks were not held to the end", first, done)
		}
		if !on && done-first < 150*time.Millisecond {
			t.Errorf("plain: first content at %v, [DONE] at %v: not incremental", first, done)
		}
		if headers > done/2 {
			t.Errorf("headers at %v of %v: they must go at once", headers, done)
		}
	})
}

func TestQuirkNoUsage(t *testing.T) {
	both(t, fastConfig(), sim.QuirkNoUsage, func(t *testing.T, e *env, on bool) {
		for _, api := range apis {
			s := e.streamOf(api.path, `{`+api.head+`,"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`)
			if (s.usage == nil) != on || !s.done {
				t.Errorf("%s stream: usage %+v done %v", api.name, s.usage, s.done)
			}
			resp := e.post(api.path, `{`+api.head+`,"max_tokens":4}`)
			var body map[string]json.RawMessage
			err := json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if _, has := body["usage"]; err != nil || has == on || body["choices"] == nil {
				t.Errorf("%s body: usage present %v (err %v)", api.name, has, err)
			}
		}
		// The other APIs: Responses' usage null, Messages' and pooling's none.
		for _, tt := range []struct{ path, body string }{
			{"/responses", `{"input":"hello","max_output_tokens":4}`},
			{"/messages", `{` + chatHead + `,"max_tokens":4}`},
			{"/embeddings", `{"input":"hello"}`},
			{"/rerank", `{"query":"q","documents":["d"]}`},
		} {
			var body map[string]json.RawMessage
			e.bodyOf(tt.path, tt.body, &body)
			if u, has := body["usage"]; (has && string(u) != "null") == on {
				t.Errorf("%s body: usage %s", tt.path, u)
			}
		}
		for _, tt := range []struct{ path, body string }{
			{"/responses", `{"input":"hello","max_output_tokens":4,"stream":true}`},
			{"/messages", `{` + chatHead + `,"max_tokens":4,"stream":true}`},
		} {
			usages := 0
			for _, ev := range e.eventsOf(tt.path, tt.body) {
				usages += usageMembers([]byte(ev.data))
			}
			if (usages == 0) != on {
				t.Errorf("%s stream: %d usage objects", tt.path, usages)
			}
		}
	})
}

// usageMembers counts the usage members, not null, of a JSON object and
// of the objects it holds.
func usageMembers(data []byte) int {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return 0
	}
	n := 0
	for k, v := range m {
		switch {
		case k == "usage" && string(v) != "null":
			n++
		case len(v) > 0 && v[0] == '{':
			n += usageMembers(v)
		}
	}
	return n
}

func TestQuirkIgnoreStop(t *testing.T) {
	both(t, fastConfig(), sim.QuirkIgnoreStop, func(t *testing.T, e *env, on bool) {
		for _, api := range apis {
			u := e.unaryOf(api.path, `{`+api.head+`,"max_tokens":20,"ignore_eos":true,"stop":"decode"}`)
			if got := strings.Contains(u.text(), "decode"); got != on {
				t.Errorf("%s: text %q contains the stop string: %v", api.name, u.text(), got)
			}
			want := map[bool]string{false: "stop", true: "length"}[on]
			if u.Choices[0].FinishReason != want {
				t.Errorf("%s: finish %q, want %q", api.name, u.Choices[0].FinishReason, want)
			}
			s := e.streamOf(api.path, `{`+api.head+`,"max_tokens":20,"ignore_eos":true,"stop":"decode","stream":true}`)
			if strings.Contains(s.content, "decode") != on {
				t.Errorf("%s stream: %q", api.name, s.content)
			}
		}
	})
}

func TestQuirkIgnoreMaxTokens(t *testing.T) {
	both(t, fastConfig(), sim.QuirkIgnoreMaxTokens, func(t *testing.T, e *env, on bool) {
		want := map[bool]int{false: 5, true: 13}[on] // past 5: max(2×5, 5+8)
		for _, api := range apis {
			s := e.streamOf(api.path, `{`+api.head+`,"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
			if s.contentChunks != want || s.usage.CompletionTokens != want || s.finish != "length" {
				t.Errorf("%s stream: %d chunks, usage %+v, finish %q; want %d length", api.name, s.contentChunks, s.usage, s.finish, want)
			}
			u := e.unaryOf(api.path, `{`+api.head+`,"max_tokens":5}`)
			if on && (u.Usage.CompletionTokens != want || u.Choices[0].FinishReason != "length") {
				t.Errorf("%s body: usage %+v finish %q", api.name, u.Usage, u.Choices[0].FinishReason)
			}
			if !on && u.Usage.CompletionTokens > 5 {
				t.Errorf("%s body: %d tokens past max_tokens 5", api.name, u.Usage.CompletionTokens)
			}
		}
		// Only max_tokens is ignored: a stop string past it still stops.
		u := e.unaryOf("/completions", `{"prompt":"x","max_tokens":12,"ignore_eos":true,"stop":"decode"}`)
		if stopped := u.Choices[0].FinishReason == "stop" && !strings.Contains(u.text(), "decode"); stopped != on {
			t.Errorf("stop past max_tokens 12: %q finish %q", u.text(), u.Choices[0].FinishReason)
		}
		// Without max_tokens there is nothing to exceed.
		if u := e.unaryOf("/completions", `{"prompt":"x"}`); u.Usage.CompletionTokens != 5 {
			t.Errorf("no max_tokens: %d tokens, want the natural 5", u.Usage.CompletionTokens)
		}
	})
}

func TestQuirkBadToolArgs(t *testing.T) {
	both(t, fastConfig(), sim.QuirkBadToolArgs, func(t *testing.T, e *env, on bool) {
		for _, tools := range []string{weatherTool + `,` + timeTool, emptyTool} {
			body := `{` + chatHead + `,"tools":[` + tools + `]`
			s := e.streamOf("/chat/completions", body+`,"stream":true}`)
			u := e.unaryOf("/chat/completions", body+`}`)
			if len(s.calls) == 0 || len(u.Choices[0].Message.ToolCalls) != len(s.calls) {
				t.Fatalf("calls: %d streamed, %d in the body", len(s.calls), len(u.Choices[0].Message.ToolCalls))
			}
			for i, c := range s.calls {
				if json.Valid([]byte(c.args)) == on {
					t.Errorf("stream call %d: arguments %q valid JSON: %v", i, c.args, !on)
				}
				if a := u.Choices[0].Message.ToolCalls[i].Function.Arguments; json.Valid([]byte(a)) == on {
					t.Errorf("body call %d: arguments %q valid JSON: %v", i, a, !on)
				}
			}
			if s.finish != "tool_calls" {
				t.Errorf("finish %q", s.finish)
			}
		}
	})
}

func TestQuirkSchemaViolations(t *testing.T) {
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}`
	both(t, fastConfig(), sim.QuirkSchemaViolations, func(t *testing.T, e *env, on bool) {
		for _, api := range apis {
			rf := `"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":` + schema + `}}`
			for _, text := range []string{
				e.unaryOf(api.path, `{`+api.head+`,`+rf+`}`).text(),
				e.streamOf(api.path, `{`+api.head+`,`+rf+`,"stream":true}`).content,
			} {
				var m map[string]any
				if err := json.Unmarshal([]byte(text), &m); err != nil {
					t.Fatalf("%s: %q is not JSON: %v", api.name, text, err)
				}
				if _, has := m["name"]; has == on {
					t.Errorf("%s: %s: required name present %v", api.name, text, has)
				}
			}
		}
	})
}

func TestQuirkNoRetryAfter(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxNumSeqs, cfg.MaxWaiting, cfg.StepBase = 1, 1, 20*time.Millisecond
	both(t, cfg, sim.QuirkNoRetryAfter, func(t *testing.T, e *env, on bool) {
		body := `{` + chatHead + `,"max_tokens":1000,"ignore_eos":true,"stream":true}`
		var limited *http.Response
		for range 4 {
			resp := e.post("/chat/completions", body)
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				limited = resp
				break
			}
		}
		if limited == nil {
			t.Fatal("no 429")
		}
		if ra := limited.Header.Get("Retry-After"); (ra == "") != on {
			t.Errorf("Retry-After %q", ra)
		}
		checkError(t, limited, http.StatusTooManyRequests)
	})
}

func TestQuirkTruncateOnOverload(t *testing.T) {
	cfg := fastConfig()
	// 25 ms steps: request 1 stays in the batch for 0.5 s, long enough
	// for 2 and 3 to arrive behind it on a loaded machine (at 2 ms it
	// could finish first).
	cfg.MaxNumSeqs, cfg.MaxWaiting, cfg.StepBase = 1, 8, 25*time.Millisecond
	both(t, cfg, sim.QuirkTruncateOnOverload, func(t *testing.T, e *env, on bool) {
		body := `{` + chatHead + `,"max_tokens":20,"ignore_eos":true,"stream":true}`
		// 1 runs in the batch of one; 2 and 3 arrive at a full engine
		// (they must wait): both are cut.
		var resps []*http.Response
		for i := range 3 {
			resps = append(resps, e.post("/chat/completions", body))
			defer resps[i].Body.Close()
			e.waitFor(func(s sim.Snapshot) bool { return s.Running+s.Waiting == i+1 && s.Running == 1 })
		}
		for i, resp := range resps {
			evs, err := readSSE(resp.Body)
			n := len(contentChunks(evs))
			cut := on && i >= 1
			done := len(evs) > 0 && evs[len(evs)-1].data == "[DONE]"
			switch {
			case cut && (err == nil || done || n != truncateAfter):
				t.Errorf("stream %d: %d tokens, [DONE] %v, err %v; want %d tokens and a broken stream", i+1, n, done, err, truncateAfter)
			case !cut && (err != nil || !done || n != 20):
				t.Errorf("stream %d: %d tokens, [DONE] %v, err %v; want all 20", i+1, n, done, err)
			}
		}
	})
}

// waitFor polls the cluster until ok, for at most 10 s.
func (e *env) waitFor(ok func(sim.Snapshot) bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(e.s.Snapshot()) {
		if time.Now().After(deadline) {
			e.t.Fatalf("cluster never reached the state: %+v", e.s.Snapshot())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestQuirkCloseAfterResponse(t *testing.T) {
	both(t, fastConfig(), sim.QuirkCloseAfterResponse, func(t *testing.T, e *env, on bool) {
		reused := func(method, path, body string, stream bool) bool {
			var got bool
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(i httptrace.GotConnInfo) { got = i.Reused },
			})
			req, _ := http.NewRequestWithContext(ctx, method, e.base+path, strings.NewReader(body))
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK || resp.Close || resp.Header.Get("Connection") != "" {
				t.Errorf("%s %s: status %d, close %v, Connection %q, err %v", method, path, resp.StatusCode, resp.Close, resp.Header.Get("Connection"), err)
			}
			if stream && !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				t.Errorf("%s: stream incomplete", path)
			}
			if !stream && !json.Valid(b) {
				t.Errorf("%s: body incomplete", path)
			}
			time.Sleep(20 * time.Millisecond) // the client sees the close before the next request
			return got
		}
		reused("GET", "/models", "", false) // dials
		for _, r := range []struct {
			method, path, body string
			stream             bool
		}{
			{"GET", "/models", "", false},
			{"POST", "/chat/completions", `{` + chatHead + `,"max_tokens":3}`, false},
			{"POST", "/chat/completions", `{` + chatHead + `,"max_tokens":3,"stream":true}`, true},
			{"POST", "/completions", `{"prompt":"x","max_tokens":3,"stream":true}`, true},
		} {
			if got := reused(r.method, r.path, r.body, r.stream); got == on {
				t.Errorf("%s %s stream %v: connection reused %v", r.method, r.path, r.stream, got)
			}
		}
	})
}
