package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// serveProbe serves h on loopback and returns a probe of it (api "" =
// chat).
func serveProbe(t *testing.T, h http.HandlerFunc, api string) *Probe {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	hd := http.Header{}
	hd.Set("Content-Type", "application/json")
	return NewProbe(srv.URL+"/v1", "m", api, srv.Client(), hd)
}

// writeSSE writes each event as an SSE data line, then [DONE] when done.
func writeSSE(w http.ResponseWriter, done bool, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, e := range events {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	if done {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// writeAPIError writes an OpenAI error body with the status.
func writeAPIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestError", "code": status}})
	_, _ = w.Write(b)
}

func delta(d map[string]any, finish any) map[string]any {
	return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}}
}

// fakeCall is one tool call a fake server streams: its first delta
// carries the id and name, the arguments follow in two pieces.
type fakeCall struct {
	index    int
	id, name string
	args     string
}

func toolEvents(calls []fakeCall, finish string) []any {
	ev := []any{delta(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, c := range calls {
		tc := func(id, name, args string) map[string]any {
			fn := map[string]any{"arguments": args}
			if name != "" {
				fn["name"] = name
			}
			m := map[string]any{"index": c.index, "function": fn}
			if id != "" {
				m["id"], m["type"] = id, "function"
			}
			return delta(map[string]any{"tool_calls": []any{m}}, nil)
		}
		half := len(c.args) / 2
		ev = append(ev, tc(c.id, c.name, ""), tc("", "", c.args[:half]), tc("", "", c.args[half:]))
	}
	return append(ev, delta(map[string]any{}, finish))
}

// toolServer answers every request with tools: refuse decides a status
// from the tool_choice (0 = answer), else the calls stream.
func toolServer(t *testing.T, calls []fakeCall, finish string, refuse func(choice any) int) *Probe {
	return serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeAPIError(w, 400, "bad json")
			return
		}
		if refuse != nil {
			if st := refuse(req["tool_choice"]); st != 0 {
				writeAPIError(w, st, "this model does not support tools")
				return
			}
		}
		writeSSE(w, true, toolEvents(calls, finish)...)
	}, "")
}

const validFlights = `{"origin": "LHR", "destination": "HND", "date": "2027-03-14", "passengers": 2, "cabin": "economy"}`

func runCheck(t *testing.T, name string, p *Probe, cfg Config, srv Server) Result {
	t.Helper()
	c, ok := Find(name)
	if !ok {
		t.Fatalf("no check %s", name)
	}
	return c.Run(context.Background(), &T{Probe: p, Config: cfg, Server: srv})
}

func wantStatus(t *testing.T, r Result, st Status, evidence ...string) {
	t.Helper()
	if r.Status != st {
		t.Errorf("status %s, want %s: %s", r.Status, st, r.Evidence)
		return
	}
	for _, e := range evidence {
		if !strings.Contains(r.Evidence, e) {
			t.Errorf("evidence %q lacks %q", r.Evidence, e)
		}
	}
}

func TestToolDefinitionsCompile(t *testing.T) {
	for _, tl := range []tool{toolFlights, toolWeather, toolCurrency, toolTime} {
		if _, err := toolSchemas(tl); err != nil {
			t.Errorf("%s: %v", tl.name, err)
		}
		if tl.wire()["function"].(map[string]any)["parameters"] == nil {
			t.Errorf("%s: parameters are not JSON", tl.name)
		}
	}
}

func namedChoice(c any) bool { _, ok := c.(map[string]any); return ok }

func TestToolsCallShapes(t *testing.T) {
	good := []fakeCall{{0, "call_1", "search_flights", validFlights}}
	cases := []struct {
		name     string
		calls    []fakeCall
		finish   string
		refuse   func(any) int
		want     Status
		evidence []string
	}{
		{"valid", good, "tool_calls", nil, Pass, []string{"arguments valid", "tool_choice named", "finish tool_calls"}},
		{"named with stop", good, "stop", nil, Pass, []string{"finish stop"}},
		{"required with stop", good, "stop", func(c any) int {
			if namedChoice(c) {
				return 400
			}
			return 0
		}, Warn, []string{"not tool_calls", "tool_choice required"}},
		{"named refused, required works", good, "tool_calls", func(c any) int {
			if namedChoice(c) {
				return 400
			}
			return 0
		}, Pass, []string{"tool_choice required"}},
		{"no tool support", good, "tool_calls", func(any) int { return 400 }, Skip,
			[]string{"no tool support: 400 with an OpenAI error body on every tool_choice (named, required, auto)"}},
		{"server error", good, "tool_calls", func(any) int { return 500 }, Fail, []string{"server errors", "500"}},
		{"bad JSON", []fakeCall{{0, "call_1", "search_flights", `{"origin": "LHR", "destination"`}}, "tool_calls", nil, Fail,
			[]string{"not valid JSON (31 bytes)"}},
		{"cut by max_tokens", []fakeCall{{0, "call_1", "search_flights", `{"origin": "LHR", "destination"`}}, "length", nil, Warn,
			[]string{"cannot judge: max_tokens 256 cut the arguments short", "tool_choice named"}},
		{"schema violation", []fakeCall{{0, "call_1", "search_flights", `{"origin": "LHR", "destination": "HND", "date": "2027-03-14", "passengers": 0}`}},
			"tool_calls", nil, Fail, []string{"at /passengers: minimum"}},
		{"missing required", []fakeCall{{0, "call_1", "search_flights", `{"origin": "LHR"}`}}, "tool_calls", nil, Fail,
			[]string{"at /: required (missing properties 'destination', 'date', 'passengers')"}},
		{"wrong name", []fakeCall{{0, "call_1", "book_hotel", validFlights}}, "tool_calls", nil, Fail, []string{"unknown tool"}},
		{"no id", []fakeCall{{0, "", "search_flights", validFlights}}, "tool_calls", nil, Fail, []string{"no id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := toolServer(t, c.calls, c.finish, c.refuse)
			r := runCheck(t, CheckToolsCall, p, DefaultConfig(), Server{})
			wantStatus(t, r, c.want, c.evidence...)
			if strings.Contains(r.Evidence, "LHR") || strings.Contains(r.Evidence, "HND") {
				t.Errorf("evidence names argument content: %s", r.Evidence)
			}
		})
	}
}

func TestToolsPlainTextIsSkip(t *testing.T) {
	p := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, true, delta(map[string]any{"content": "I cannot call tools."}, nil), delta(map[string]any{}, "stop"))
	}, "")
	for _, name := range []string{CheckToolsCall, CheckToolsParallel, CheckToolsEmptyArgs} {
		r := runCheck(t, name, p, DefaultConfig(), Server{})
		wantStatus(t, r, Skip, "no tool support: plain text, no call")
	}
}

func TestToolsNeedChat(t *testing.T) {
	p := simProbe(t, fastSim(), APICompletions)
	for _, name := range []string{CheckToolsCall, CheckToolsParallel, CheckToolsEmptyArgs} {
		wantStatus(t, runCheck(t, name, p, DefaultConfig(), Server{}), Skip, "tools need the chat API")
	}
	if p.Sent() != 0 {
		t.Errorf("sent %d requests to a completions endpoint", p.Sent())
	}
}

func TestToolsParallelShapes(t *testing.T) {
	weather := `{"city": "Tokyo", "unit": "celsius", "days": 5}`
	money := `{"amount": 500, "from": "GBP", "to": "JPY"}`
	three := []fakeCall{{0, "call_a", "search_flights", validFlights}, {1, "call_b", "get_weather", weather}, {2, "call_c", "convert_currency", money}}
	cases := []struct {
		name     string
		calls    []fakeCall
		want     Status
		evidence []string
	}{
		{"three calls", three, Pass, []string{"3 calls at indexes 0,1,2", "distinct ids", "tool_choice required"}},
		{"one call", three[:1], Warn, []string{"no parallel calls"}},
		{"same id", []fakeCall{three[0], {1, "call_a", "get_weather", weather}}, Fail, []string{"ids not distinct"}},
		{"merged at one index", []fakeCall{three[0], {0, "call_b", "get_weather", weather}}, Fail, []string{"unknown tool"}},
		{"one bad", []fakeCall{three[0], {1, "call_b", "get_weather", `{"city": "Tokyo", "unit": "kelvin"}`}}, Fail,
			[]string{"call 2 (get_weather)", "at /unit: enum"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := toolServer(t, c.calls, "tool_calls", nil)
			wantStatus(t, runCheck(t, CheckToolsParallel, p, DefaultConfig(), Server{}), c.want, c.evidence...)
		})
	}
}

func TestToolsEmptyArgsShapes(t *testing.T) {
	cases := []struct {
		args     string
		want     Status
		evidence string
	}{
		{"{}", Pass, "arguments {}"},
		{" { } ", Pass, "arguments {}"},
		{"", Fail, "empty string"},
		{"null", Fail, "null"},
		{`"{}"`, Fail, "JSON string"},
		{`{"tz": "UTC"}`, Fail, "object of 1 members"},
		{"{", Fail, "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			p := toolServer(t, []fakeCall{{0, "call_1", "get_server_time", c.args}}, "tool_calls", nil)
			wantStatus(t, runCheck(t, CheckToolsEmptyArgs, p, DefaultConfig(), Server{}), c.want, c.evidence)
		})
	}
}

// The simulator both ways: its tool calls pass, bad-tool-args fails.
func TestToolsSim(t *testing.T) {
	for _, name := range []string{CheckToolsCall, CheckToolsParallel, CheckToolsEmptyArgs} {
		t.Run(name, func(t *testing.T) {
			r := runCheck(t, name, simProbe(t, fastSim(), ""), DefaultConfig(), Server{})
			wantStatus(t, r, Pass)
			cfg := fastSim()
			cfg.Quirks = []string{sim.QuirkBadToolArgs}
			r = runCheck(t, name, simProbe(t, cfg, ""), DefaultConfig(), Server{})
			wantStatus(t, r, Fail)
		})
	}
}

func TestToolsBrokenAndHung(t *testing.T) {
	broken := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, false, toolEvents([]fakeCall{{0, "call_1", "search_flights", validFlights}}, "")[:3]...)
	}, "")
	wantStatus(t, runCheck(t, CheckToolsCall, broken, DefaultConfig(), Server{}), Fail, "the stream broke after 2 tool-call deltas", "tool_choice named")

	hung := serveProbe(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}, "")
	conf := DefaultConfig()
	conf.Timeout = 200 * time.Millisecond
	wantStatus(t, runCheck(t, CheckToolsEmptyArgs, hung, conf, Server{}), Fail, "no complete answer within 200ms")
}

// Each outcome is said once, with the tool_choices that got it.
func TestTriedText(t *testing.T) {
	for _, c := range []struct {
		ts   []tried
		want string
	}{
		{[]tried{{"400 (BadRequestError)", "named"}, {"400 (BadRequestError)", "required"}, {"400 (BadRequestError)", "auto"}},
			"400 (BadRequestError) on every tool_choice (named, required, auto)"},
		{[]tried{{"400 (BadRequestError)", "named"}, {"400 (BadRequestError)", "required"}, {"plain text, no call", "auto"}},
			"400 (BadRequestError) on tool_choice named, required; plain text, no call on tool_choice auto"},
		{[]tried{{"plain text, no call", "auto"}}, "plain text, no call on tool_choice auto"},
	} {
		if got := triedText(c.ts); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
