package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/golden"

	"github.com/surge-bench/surge/internal/field"
)

// stubProbe serves h on loopback and returns a chat probe of model "m".
func stubProbe(t *testing.T, h http.HandlerFunc) *Probe {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	hd := http.Header{}
	hd.Set("Content-Type", "application/json")
	return NewProbe(srv.URL+"/v1", "m", APIChat, srv.Client(), hd)
}

// modelsJSON is a /v1/models body listing ids.
func modelsJSON(ids ...string) string {
	var data []map[string]any
	for _, id := range ids {
		data = append(data, map[string]any{"id": id, "object": "model", "owned_by": "vllm", "max_model_len": 4096})
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data})
	return string(b)
}

// streamEvents writes each event as an SSE data line (a string verbatim,
// anything else as JSON), flushing after each, then [DONE] when done.
func streamEvents(w http.ResponseWriter, done bool, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, e := range events {
		s, ok := e.(string)
		if !ok {
			b, _ := json.Marshal(e)
			s = string(b)
		}
		fmt.Fprintf(w, "data: %s\n\n", s)
		if fl != nil {
			fl.Flush()
		}
	}
	if done {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// contentEvent is a chat chunk with content (and a finish reason, if any).
func contentEvent(content string, finish string) map[string]any {
	ch := map[string]any{"index": 0, "delta": map[string]any{"content": content}}
	if finish != "" {
		ch["finish_reason"] = finish
	}
	return map[string]any{"choices": []any{ch}}
}

// mustStatus fails the test unless r has status st and evidence holding
// every want.
func mustStatus(t *testing.T, r Result, st Status, want ...string) {
	t.Helper()
	if r.Status != st {
		t.Errorf("status %s, want %s: %s", r.Status, st, r.Evidence)
	}
	for _, w := range want {
		if !strings.Contains(r.Evidence, w) {
			t.Errorf("evidence %q lacks %q", r.Evidence, w)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, tc := range map[string]struct {
		edit  func(*Config)
		field string
		want  string
	}{
		"unknown only":         {func(c *Config) { c.Only = []string{"streaming,streamin.long"} }, "only", `unknown check or group "streamin.long"; valid: api, streaming, usage`},
		"unknown skip":         {func(c *Config) { c.Skip = []string{"speed"} }, "skip", `unknown check or group "speed"`},
		"unknown require":      {func(c *Config) { c.Require = []string{"tool"} }, "require", `"tool"`},
		"skip api":             {func(c *Config) { c.Skip = []string{"api"} }, "skip", "the api check always runs"},
		"require skipped":      {func(c *Config) { c.Skip = []string{"sampling"}; c.Require = []string{"sampling.seed"} }, "require", `"sampling.seed" is also left out by --skip sampling`},
		"require group of one": {func(c *Config) { c.Skip = []string{"usage.count"}; c.Require = []string{"usage"} }, "require", "--skip usage.count"},
		"empty only":           {func(c *Config) { c.Only = []string{""} }, "only", "names no check or group (empty); valid: api, streaming"},
		"blank only":           {func(c *Config) { c.Only = []string{" , "} }, "only", "names no check or group (empty)"},
		"empty require":        {func(c *Config) { c.Require = []string{""} }, "require", "names no check or group (empty)"},
		"long tokens":          {func(c *Config) { c.LongTokens = 0 }, "long_tokens", "must be 1..1048576, got 0"},
		"context tokens":       {func(c *Config) { c.ContextTokens = -1 }, "context_tokens", "got -1"},
		"overload zero":        {func(c *Config) { c.OverloadRequests = 0 }, "overload_requests", "must be 1..2048, got 0"},
		"overload too many":    {func(c *Config) { c.OverloadRequests = 5000 }, "overload_requests", "must be 1..2048, got 5000"},
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			es, isField := field.As(c.Validate())
			if !isField || len(es) != 1 || es[0].Field != tc.field || !strings.Contains(es[0].Message, tc.want) {
				t.Fatalf("got %v, want one %s error with %q", es, tc.field, tc.want)
			}
		})
	}
}

// Each API's suite takes its own names: another suite's are refused
// with the --api that has them, and its gate cannot be skipped.
func TestConfigValidateAPIs(t *testing.T) {
	for name, tc := range map[string]struct {
		api                 string
		only, skip, require []string
		field, want         string
	}{
		"chat name with messages":   {api: APIMessages, only: []string{"tools"}, field: "only", want: `"tools" is checked with --api chat or completions, not messages; valid: messages, messages.served, messages.streaming, messages.usage, messages.end, messages.tools, messages.errors`},
		"messages name with chat":   {api: "", skip: []string{"messages.tools"}, field: "skip", want: `"messages.tools" is checked with --api messages, not chat; valid: api, streaming`},
		"rerank group with embed":   {api: APIEmbeddings, require: []string{"rerank"}, field: "require", want: `"rerank" is checked with --api rerank, not embeddings`},
		"unknown with rerank":       {api: APIRerank, only: []string{"rerank.speed"}, field: "only", want: `unknown check or group "rerank.speed"; valid: rerank, rerank.served, rerank.results, rerank.order, rerank.usage, rerank.errors`},
		"skip the gate":             {api: APIRerank, skip: []string{"rerank.served"}, field: "skip", want: "the rerank.served check always runs"},
		"no suite":                  {api: "anthropic", field: "api", want: `surge check has no suite for "anthropic"; it checks chat, completions, responses, messages, embeddings, rerank`},
		"empty with responses":      {api: APIResponses, only: []string{" "}, field: "only", want: "names no check or group (empty); valid: responses, responses.served"},
		"require what skip removes": {api: APIMessages, skip: []string{"messages"}, require: []string{"messages.tools"}, field: "require", want: `"messages.tools" is also left out by --skip messages`},
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			c.API, c.Only, c.Skip, c.Require = tc.api, tc.only, tc.skip, tc.require
			es, isField := field.As(c.Validate())
			if !isField || len(es) != 1 || es[0].Field != tc.field || !strings.Contains(es[0].Message, tc.want) {
				t.Fatalf("got %v, want one %s error with %q", es, tc.field, tc.want)
			}
		})
	}
	for _, ok := range []Config{
		{API: APICompletions, Only: []string{"streaming", "errors.malformed"}},
		{API: APIMessages, Skip: []string{"messages"}},
		{API: APIEmbeddings, Only: []string{"embeddings.dimensions"}, Require: []string{"embeddings.usage"}},
	} {
		c := DefaultConfig()
		c.API, c.Only, c.Skip, c.Require = ok.API, ok.Only, ok.Skip, ok.Require
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// Names and NamesFor: chat's names are what they were; every check of
// every suite is named once, under its API's group.
func TestNames(t *testing.T) {
	chat := NamesFor(APIChat)
	if got := strings.Join(chat[:9], ", "); got != "api, streaming, usage, tools, structured, context, sampling, errors, streaming.incremental" {
		t.Errorf("chat's names begin %s", got)
	}
	if !slices.Equal(NamesFor(APICompletions), chat) || !slices.Equal(NamesFor(""), chat) {
		t.Error("completions and \"\" do not share chat's names")
	}
	all := Names()
	for _, c := range All() {
		if !slices.Contains(all, c.Name) || !slices.Contains(all, c.Group) {
			t.Errorf("Names lacks %s or %s", c.Name, c.Group)
		}
		if _, ok := Find(c.Name); !ok {
			t.Errorf("Find(%s)", c.Name)
		}
	}
	for _, api := range APIs() {
		suite := Suite(api)
		if len(suite) == 0 || suite[0].Gate == nil {
			t.Errorf("%s: the suite does not open with a gate", api)
		}
		for i, c := range suite {
			if i > 0 && c.Gate != nil {
				t.Errorf("%s: a second gate %s", api, c.Name)
			}
			if c.What == "" || c.Run == nil {
				t.Errorf("%s: no What or Run", c.Name)
			}
			if api != APIChat && api != APICompletions && (c.Group != api || !strings.HasPrefix(c.Name, api+".")) {
				t.Errorf("%s: not in the %s group", c.Name, api)
			}
		}
	}
	if len(Suite("anthropic")) != 0 {
		t.Error("a suite for an unknown API")
	}
}

func TestSelect(t *testing.T) {
	names := func(s []Selected) string {
		var out []string
		for _, c := range s {
			n := c.Name
			if c.Required {
				n += "*"
			}
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	for name, tc := range map[string]struct {
		api                 string
		only, skip, require []string
		want                string
	}{
		"only a group":           {only: []string{"usage"}, want: "api usage.stream usage.count usage.unary"},
		"comma and repeat":       {only: []string{"usage.unary,streaming.long", "sampling.seed"}, want: "api streaming.long usage.unary sampling.seed"},
		"skip":                   {only: []string{"streaming", "usage"}, skip: []string{"streaming.long", "usage"}, want: "api streaming.incremental streaming.keepalive"},
		"require outside only":   {only: []string{"usage.unary"}, require: []string{"sampling.seed"}, want: "api usage.unary sampling.seed*"},
		"require marks a group":  {only: []string{"sampling"}, require: []string{"sampling"}, want: "api sampling.stop* sampling.temperature0* sampling.max-tokens* sampling.seed*"},
		"api alone":              {only: []string{"api"}, want: "api"},
		"only names another api": {only: []string{"streaming.keepalive"}, require: []string{"api"}, want: "api* streaming.keepalive"},
		"messages suite":         {api: APIMessages, want: "messages.served messages.streaming messages.usage messages.end messages.tools messages.errors"},
		"messages only tools":    {api: APIMessages, only: []string{"messages.tools"}, want: "messages.served messages.tools"},
		"rerank skip all":        {api: APIRerank, skip: []string{"rerank"}, want: "rerank.served"},
		"embeddings require":     {api: APIEmbeddings, only: []string{"embeddings.batch"}, require: []string{"embeddings.usage"}, want: "embeddings.served embeddings.batch embeddings.usage*"},
		"responses require all":  {api: APIResponses, require: []string{"responses"}, want: "responses.served* responses.streaming* responses.usage* responses.end* responses.errors*"},
		"completions is chat's":  {api: APICompletions, only: []string{"usage.unary"}, want: "api usage.unary"},
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			c.API, c.Only, c.Skip, c.Require = tc.api, tc.only, tc.skip, tc.require
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := names(Select(c)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if n := len(Select(DefaultConfig())); n != len(Suite(APIChat)) {
		t.Errorf("default selection: %d checks of %d", n, len(Suite(APIChat)))
	}
}

// okAPI answers /v1/models listing m and nothing else.
func okAPI(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, modelsJSON("m"))
		return true
	}
	return false
}

func TestRunner(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		if !okAPI(w, r) {
			http.NotFound(w, r)
		}
	})
	fixed := func(name string, st Status, ev string) Check {
		return Check{Name: name, Group: strings.Split(name, ".")[0], Run: func(ctx context.Context, t *T) Result {
			_, _ = t.Probe.Get(ctx, "/models", time.Second)
			return Result{Status: st, Evidence: ev}
		}}
	}
	api, _ := Find(CheckAPI)
	checks := []Selected{
		{Check: api},
		{Check: fixed("tools.call", Skip, "no tool support: HTTP 400"), Required: true},
		{Check: fixed("tools.parallel", Skip, "no tool support: HTTP 400")},
		{Check: fixed("usage.count", Warn, "merged")},
		{Check: Check{Name: "usage.unary", Group: "usage", Run: func(context.Context, *T) Result { panic("boom") }}},
	}
	var seen []string
	rep, err := Run(context.Background(), p, DefaultConfig(), checks, func(r Result) { seen = append(seen, string(r.Status)+" "+r.Name) })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ", "); got != "PASS api, FAIL tools.call, SKIP tools.parallel, WARN usage.count, FAIL usage.unary" {
		t.Errorf("results as they came: %s", got)
	}
	req := rep.Results[1]
	if req.Evidence != "required: no tool support: HTTP 400" || !req.Required || req.Requests != 1 || req.Group != "tools" {
		t.Errorf("required skip: %+v", req)
	}
	if !rep.Internal || !strings.Contains(rep.Results[4].Evidence, "internal error (a bug in surge): boom") {
		t.Errorf("panic: internal %v, %q", rep.Internal, rep.Results[4].Evidence)
	}
	if rep.Totals != (Totals{Pass: 1, Warn: 1, Skip: 1, Fail: 2}) || rep.Requests != 4 || rep.Passed() {
		t.Errorf("totals %+v, requests %d, passed %v", rep.Totals, rep.Requests, rep.Passed())
	}
	if rep.Server.MaxModelLen != 4096 || rep.Server.Engine != "vllm" || len(rep.Server.Models) != 1 {
		t.Errorf("server %+v", rep.Server)
	}
	if v := rep.Verdict(); !strings.Contains(v, "FAIL — 2 of 4 checks that ran failed (tools.call, usage.unary); 1 skipped (no tool support: HTTP 400)") || !strings.Contains(v, "4 requests") {
		t.Errorf("verdict %q", v)
	}
}

func TestRunnerAPIFailSkipsTheRest(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		fmt.Fprint(w, "<html>not here</html>")
	})
	ran := false
	checks := []Selected{{Check: apiChecks()[0]}, {Check: Check{Name: "usage.unary", Group: "usage", Run: func(context.Context, *T) Result {
		ran = true
		return Result{Status: Pass}
	}}, Required: true}}
	rep, err := Run(context.Background(), p, DefaultConfig(), checks, nil)
	if err != nil || ran {
		t.Fatalf("err %v, later check ran %v", err, ran)
	}
	mustStatus(t, rep.Results[0], Fail, "not an OpenAI API: GET /v1/models → 404 text/html; POST /v1/chat/completions → 404 text/html")
	// A required check that cannot run because the api failed fails too.
	mustStatus(t, rep.Results[1], Fail, "required: api check failed")
}

func TestRunnerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := NewProbe("http://user:secret@"+addr+"/v1", "m", APIChat, &http.Client{}, http.Header{})
	rep, err := Run(context.Background(), p, DefaultConfig(), Select(DefaultConfig()), nil)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err %v, want ErrUnreachable", err)
	}
	if len(rep.Results) != 1 || !strings.Contains(rep.Unreachable, "connection refused") {
		t.Fatalf("results %d, unreachable %q", len(rep.Results), rep.Unreachable)
	}
	mustStatus(t, rep.Results[0], Fail, "unreachable: ", "connection refused")
	if strings.Contains(rep.Unreachable+rep.Results[0].Evidence, "secret") {
		t.Errorf("the URL's password reached the report: %q", rep.Unreachable)
	}
}

func TestRunnerInterrupted(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) { okAPI(w, r) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	later := false
	checks := []Selected{
		{Check: apiChecks()[0]},
		{Check: Check{Name: "streaming.long", Group: "streaming", Run: func(ctx context.Context, _ *T) Result {
			cancel() // Ctrl-C while the check runs
			<-ctx.Done()
			return Result{Status: Fail, Evidence: "context canceled"}
		}}},
		{Check: Check{Name: "usage.unary", Group: "usage", Run: func(context.Context, *T) Result { later = true; return Result{Status: Pass} }}},
	}
	rep, err := Run(ctx, p, DefaultConfig(), checks, nil)
	if err != nil || later {
		t.Fatalf("err %v, a check after the interrupt ran: %v", err, later)
	}
	if !rep.Interrupted || len(rep.Results) != 2 || rep.Passed() {
		t.Fatalf("interrupted %v, %d results", rep.Interrupted, len(rep.Results))
	}
	mustStatus(t, rep.Results[1], Skip, "interrupted")
	if !strings.Contains(rep.Verdict(), "INTERRUPTED") {
		t.Errorf("verdict %q", rep.Verdict())
	}
}

// The suite's deadline cuts a hung check short: it and every check after
// it are SKIPs that name the deadline, the checks before it stand, and
// the verdict is not an interruption. Virtual time: the deadline passes
// while the stub waits.
func TestRunnerDeadline(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) { okAPI(w, r) })
	synctest.Test(t, func(t *testing.T) {
		later := false
		checks := []Selected{
			{Check: Check{Name: "usage.unary", Group: "usage", Run: func(context.Context, *T) Result { return Result{Status: Pass} }}},
			{Check: Check{Name: "streaming.long", Group: "streaming", Run: func(ctx context.Context, _ *T) Result {
				<-ctx.Done() // a server that never answers, under a long timeout
				return Result{Status: Fail, Evidence: "no answer"}
			}}},
			{Check: Check{Name: "sampling.seed", Group: "sampling", Run: func(context.Context, *T) Result { later = true; return Result{Status: Pass} }}},
		}
		cfg := DefaultConfig()
		cfg.Timeout, cfg.Deadline = time.Hour, 2*time.Minute
		start := time.Now()
		rep, err := Run(context.Background(), p, cfg, checks, nil)
		if err != nil || later {
			t.Fatalf("err %v, a check after the deadline ran: %v", err, later)
		}
		if took := time.Since(start); took != 2*time.Minute {
			t.Errorf("the suite took %s, want its 2m deadline", took)
		}
		if len(rep.Results) != 3 || !rep.Deadline || rep.Interrupted {
			t.Fatalf("%d results, deadline %v, interrupted %v", len(rep.Results), rep.Deadline, rep.Interrupted)
		}
		mustStatus(t, rep.Results[0], Pass)
		mustStatus(t, rep.Results[1], Skip, "the suite's deadline (--deadline 2m0s) passed while it ran")
		mustStatus(t, rep.Results[2], Skip, "the suite's deadline (--deadline 2m0s) passed")
	})
}

func TestReportFiles(t *testing.T) {
	rep := &Report{Target: "built-in simulator", Model: "surge-sim", API: APIChat, Version: "dev",
		Started: time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC), Finished: time.Date(2026, 12, 1, 22, 0, 21, 0, time.UTC),
		Results: []Result{
			{Name: "api", Group: "api", Status: Pass, Evidence: "GET /v1/models → 200", Requests: 1, Duration: 2 * time.Millisecond},
			{Name: "tools.call", Group: "tools", Status: Fail, Evidence: "required: a | b", Required: true, Requests: 1, Duration: 40 * time.Millisecond},
		}, Requests: 2}
	rep.setServer(Server{Engine: "surge-sim", MaxModelLen: 8192, Models: []string{"surge-sim"}})
	rep.total()
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "check.md", []byte(md.String()))
	rep.Interrupted = true
	md.Reset()
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- **interrupted**: the checks below are those that ran") {
		t.Errorf("check.md of an interrupted check does not say so:\n%s", md.String())
	}
	rep.Interrupted = false
	b, _ := json.Marshal(rep)
	var back map[string]any
	json.Unmarshal(b, &back)
	totals, _ := back["totals"].(map[string]any)
	if back["target"] != "built-in simulator" || back["surge_version"] != "dev" || totals["fail"] != 1.0 || back["requests"] != 2.0 {
		t.Errorf("check.json: %s", b)
	}
	if l := Line(rep.Results[1]); l != "FAIL  tools.call*             required: a | b" {
		t.Errorf("line %q", l)
	}
}

// Every check of this file's groups, both ways on the simulator: PASS
// plain, FAIL with the quirk that breaks it (docs/checks.md).
func TestChecksOnSimulatorBothWays(t *testing.T) {
	for _, tc := range []struct {
		check, quirk string
		want         string // in the FAIL's evidence
	}{
		{CheckStreamIncremental, "buffered-stream", "buffered: "},
		{CheckStreamKeepAlive, "close-after-response", "closed after each stream without Connection: close"},
		{CheckUsageStream, "no-usage", "no usage chunk"},
		{CheckUsageUnary, "no-usage", "no usage in the response body"},
		{CheckSamplingStop, "ignore-stop", "stop ignored"},
		{CheckSamplingMaxTokens, "ignore-max-tokens", "generated past max_tokens: max_tokens 12: 24 tokens (usage), 24 content chunks"},
		{CheckStreamLong, "", ""},
		{CheckUsageCount, "", ""},
		{CheckSamplingTemperature, "", ""},
		{CheckSamplingSeed, "", ""},
	} {
		t.Run(tc.check, func(t *testing.T) {
			c, ok := Find(tc.check)
			if !ok {
				t.Fatalf("no check %s", tc.check)
			}
			cfg := DefaultConfig()
			cfg.LongTokens = 128
			plain := fastSim()
			mustStatus(t, c.Run(context.Background(), &T{Probe: simProbe(t, plain, ""), Config: cfg}), Pass)
			if tc.quirk == "" {
				return
			}
			quirky := fastSim()
			quirky.Quirks = []string{tc.quirk}
			mustStatus(t, c.Run(context.Background(), &T{Probe: simProbe(t, quirky, ""), Config: cfg}), Fail, tc.want)
		})
	}
}

// No api, streaming, usage or sampling check lets content out: a server
// whose answers, error messages, error types, finish reasons and content
// types all carry a canary never sees it in a Result, nor do the prompts'
// words appear.
func TestCoreChecksKeepContentInMemory(t *testing.T) {
	const canary = "CANARY-91be"
	var n atomic.Int32
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/models" && n.Load()%2 == 0 {
			w.Header().Set("Content-Type", "text/"+canary)
			w.WriteHeader(404)
			fmt.Fprint(w, canary)
			n.Add(1)
			return
		}
		switch n.Add(1) % 4 {
		case 0:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"%s","type":"%s is bad"}}`, canary, canary)
		case 1:
			streamEvents(w, true, contentEvent(canary+" one", ""), contentEvent(" two "+canary, canary), usageEvent(3, 2))
		case 2:
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"content":"%s"},"finish_reason":"%s"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, canary, canary)
		default:
			streamEvents(w, false, contentEvent(canary, ""))
		}
	})
	for _, c := range append(apiChecks(), append(streamingChecks(), append(usageChecks(), samplingChecks()...)...)...) {
		for range 3 { // each check meets several of the server's answers
			r := c.Run(context.Background(), &T{Probe: p, Config: DefaultConfig()})
			b, _ := json.Marshal(r)
			for _, secret := range []string{canary, "lighthouse", "bridges", "Count to", "Say hi"} {
				if strings.Contains(strings.ToLower(string(b)), strings.ToLower(secret)) {
					t.Errorf("%s lets %q out: %s", c.Name, secret, b)
				}
			}
		}
	}
}

// A request that finds its kept-alive connection closed under it is sent
// again once on a new connection; a second failure is the answer.
func TestGenerateRetriesAClosedConnection(t *testing.T) {
	var n atomic.Int32
	drop := func(w http.ResponseWriter) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // no response at all
		}
	}
	for name, tc := range map[string]struct {
		drops  func(int32) bool
		ok     bool
		probes int
	}{
		"once":   {func(i int32) bool { return i == 2 }, true, 3},
		"always": {func(i int32) bool { return i >= 2 }, false, 3},
	} {
		t.Run(name, func(t *testing.T) {
			n.Store(0)
			p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.drops(n.Add(1)) {
					drop(w)
					return
				}
				fmt.Fprint(w, chatBody)
			})
			tt := &T{Probe: p, Config: DefaultConfig()}
			if _, err := generate(context.Background(), tt, Req{Prompt: "a", MaxTokens: 1}); err != nil {
				t.Fatal(err)
			}
			x, err := generate(context.Background(), tt, Req{Prompt: "a", MaxTokens: 1})
			if (err == nil) != tc.ok || p.Sent() != tc.probes {
				t.Errorf("err %v (x %v), %d requests sent, want ok %v and %d", err, x, p.Sent(), tc.ok, tc.probes)
			}
		})
	}
}

// The verdict counts what ran: a SKIP did not, and says why.
func TestVerdict(t *testing.T) {
	res := func(sts ...Status) []Result {
		var out []Result
		for i, st := range sts {
			ev := "ok"
			if st == Skip {
				ev = "no tool support"
			}
			out = append(out, Result{Name: fmt.Sprintf("c%d", i), Status: st, Evidence: ev})
		}
		return out
	}
	long := res(Pass, Skip, Skip)
	long[1].Evidence, long[2].Evidence = strings.Repeat("a", 60), strings.Repeat("b", 60)
	for name, tc := range map[string]struct {
		r    Report
		want string
	}{
		"skips are not passes": {Report{Results: res(Pass, Skip, Skip, Skip)}, "verdict: PASS — 1 check ran and passed; 3 skipped (no tool support); 1 passed, 0 warned, 3 skipped, 0 failed"},
		"all passed":           {Report{Results: res(Pass, Pass)}, "verdict: PASS — 2 checks ran and passed; 2 passed"},
		"with a warning":       {Report{Results: res(Pass, Warn, Skip)}, "PASS — 2 checks ran and passed (1 with a warning); 1 skipped (no tool support)"},
		"long reasons":         {Report{Results: long}, "1 check ran and passed; 2 skipped (c1, c2)"},
		"failed":               {Report{Results: res(Pass, Fail, Skip)}, "FAIL — 1 of 2 checks that ran failed (c1); 1 skipped (no tool support)"},
		"interrupted":          {Report{Results: res(Pass, Skip), Interrupted: true}, "INTERRUPTED — 1 check ran, none failed; 1 skipped"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.r.total()
			if v := tc.r.Verdict(); !strings.Contains(v, tc.want) {
				t.Errorf("verdict %q lacks %q", v, tc.want)
			}
		})
	}
}
