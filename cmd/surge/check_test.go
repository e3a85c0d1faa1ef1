package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/check"
)

// fastCheck is the flags that make the built-in simulator ten times faster
// for the command's tests.
var fastCheck = []string{"--step-base", "2ms"}

// readCheck reads the check.json of a run folder.
func readCheck(t *testing.T, dir string) check.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "check.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep check.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// checkLines returns the console lines of the checks, by name.
func checkLines(out string) map[string]string {
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "PASS" || f[0] == "FAIL" || f[0] == "WARN" || f[0] == "SKIP") {
			lines[strings.TrimSuffix(f[1], "*")] = l
		}
	}
	return lines
}

// The whole suite against the plain simulator: exit 0, both files, every
// check PASS or a SKIP that says why.
func TestCheckSimulator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	code, out, errs := surge(t, append([]string{"check", "-o", dir}, fastCheck...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	lines := checkLines(out)
	for _, c := range check.Suite(check.APIChat) {
		l, ok := lines[c.Name]
		switch {
		case !ok:
			t.Errorf("no line for %s:\n%s", c.Name, out)
		case strings.HasPrefix(l, "PASS"), strings.HasPrefix(l, "SKIP") && len(strings.Fields(l)) > 3:
		default:
			t.Errorf("not a PASS or a justified SKIP: %s", l)
		}
	}
	for _, want := range []string{"surge check: built-in simulator, model surge-sim, chat API", "verdict: PASS — ", " checks ran and passed",
		"exit 0: every check that ran passed (WARN and SKIP do not fail)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep := readCheck(t, dir)
	if rep.Status != "PASS" || rep.ExitCode != exitOK {
		t.Errorf("check.json: verdict %q, exit_code %d, want PASS and 0", rep.Status, rep.ExitCode)
	}
	if rep.Target != "built-in simulator" || rep.Model != "surge-sim" || len(rep.Results) != len(check.Suite(check.APIChat)) || rep.Totals.Fail != 0 || rep.Requests == 0 || rep.Server.Engine != "surge-sim" {
		t.Errorf("check.json: target %q model %q, %d results, totals %+v, %d requests, server %+v", rep.Target, rep.Model, len(rep.Results), rep.Totals, rep.Requests, rep.Server)
	}
	md, err := os.ReadFile(filepath.Join(dir, "check.md"))
	if err != nil || !regexp.MustCompile(`\| PASS +\| streaming\.incremental +\|`).Match(md) {
		t.Errorf("check.md (%v):\n%s", err, md)
	}
}

// Each of the simulator's nine quirks fails the check that looks for it:
// exit 1 and that check's line FAILs.
func TestCheckQuirks(t *testing.T) {
	for quirk, name := range map[string]string{
		"buffered-stream":      check.CheckStreamIncremental,
		"close-after-response": check.CheckStreamKeepAlive,
		"no-usage":             check.CheckUsageStream,
		"ignore-stop":          check.CheckSamplingStop,
		"ignore-max-tokens":    check.CheckSamplingMaxTokens,
		"bad-tool-args":        check.CheckToolsCall,
		"schema-violations":    check.CheckStructuredSchema,
		"no-retry-after":       check.CheckErrorsOverload,
		"truncate-on-overload": check.CheckErrorsOverload,
	} {
		t.Run(quirk, func(t *testing.T) {
			group, _, _ := strings.Cut(name, ".")
			dir := filepath.Join(t.TempDir(), "ck")
			args := append([]string{"check", "-o", dir, "--quirk", quirk, "--only", group}, fastCheck...)
			if quirk == "no-retry-after" {
				// overload must be refused, a 429 that lacks the header: 2
				// running and 2 waiting refuse part of the first wave
				// whatever the machine's speed
				args = append(args, "--max-num-seqs", "2", "--max-waiting", "2")
			}
			if quirk == "truncate-on-overload" {
				// a batch of 2: the first wave of 8 queues (and is cut)
				// whatever the machine's speed
				args = append(args, "--max-num-seqs", "2")
			}
			code, out, errs := surge(t, args...)
			if code != exitSLO {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
			}
			if l := checkLines(out)[name]; !strings.HasPrefix(l, "FAIL") {
				t.Errorf("%s: %q, want a FAIL\n%s", name, l, out)
			}
			if exit := out[strings.LastIndex(out, "exit "):]; !strings.HasPrefix(exit, "exit 1: ") || !strings.Contains(exit, name) {
				t.Errorf("exit line does not name %s:\n%s", name, out)
			}
			rep := readCheck(t, dir)
			if rep.Status != "FAIL" || rep.ExitCode != exitSLO {
				t.Errorf("check.json: verdict %q, exit_code %d, want FAIL and 1", rep.Status, rep.ExitCode)
			}
			if rep.Totals.Fail == 0 {
				t.Errorf("check.json counts no failure: %+v", rep.Totals)
			}
		})
	}
}

func TestCheckUsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown only":       {[]string{"--only", "streaming,speed"}, `--only: unknown check or group "speed"; valid: api, streaming, usage, tools, structured, context, sampling, errors, streaming.incremental`},
		"unknown require":    {[]string{"--require", "tool"}, `--require: unknown check or group "tool"`},
		"empty only":         {[]string{"--only", ""}, "--only: names no check or group (empty)"},
		"skip api":           {[]string{"--skip", "api"}, "--skip: the api check always runs"},
		"require skipped":    {[]string{"--skip", "usage", "--require", "usage.unary"}, `--require: "usage.unary" is also left out by --skip usage`},
		"overload bound":     {[]string{"--overload-requests", "5000"}, "--overload-requests: must be 1..2048, got 5000"},
		"long tokens":        {[]string{"--long-tokens", "0"}, "--long-tokens: must be 1..1048576, got 0"},
		"another api's":      {[]string{"--api", "messages", "--only", "tools"}, `--only: "tools" is checked with --api chat or completions, not messages; valid: messages, messages.served, messages.streaming`},
		"chat's with rerank": {[]string{"--api", "rerank", "--require", "usage.unary"}, `--require: "usage.unary" is checked with --api chat or completions, not rerank`},
		"skip a gate":        {[]string{"--api", "embeddings", "--skip", "embeddings.served"}, "--skip: the embeddings.served check always runs"},
		"bad api":            {[]string{"--api", "anthropic"}, `--api: must be one of chat, completions, responses, messages, embeddings, rerank, got "anthropic"`},
		"bad target":         {[]string{"--target", "localhost:8000"}, "--target: must be an http:// or https:// URL"},
		"bad sim flag":       {[]string{"--max-num-seqs", "0"}, "--max-num-seqs (sim: max_num_seqs): must be ≥ 1, got 0"},
		"workload flag":      {[]string{"--rate", "5"}, "unknown flag: --rate"},
		"positional":         {[]string{"streaming"}, `unknown command "streaming"`},
		"zero timeout":       {[]string{"--timeout", "0s"}, "--timeout: must be > 0"},
		"unknown profile":    {[]string{"--profile", "poetry"}, `--profile: unknown profile "poetry"`},
		"ca cert missing":    {[]string{"--target", "https://127.0.0.1:1/v1", "--ca-cert", "/nonexistent.pem"}, "--ca-cert: cannot read /nonexistent.pem"},
		"key file missing":   {[]string{"--target", "http://127.0.0.1:1/v1", "--api-key-file", "/nonexistent.key"}, "/nonexistent.key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ck")
			code, out, errs := surge(t, append([]string{"check", "-o", dir}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q\n%s", code, errs, tc.want, out)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("a usage error created the run folder")
			}
		})
	}
}

// The run folder is claimed like every command's: a non-empty one is
// refused without --force.
func TestCheckFolder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	code, _, errs := surge(t, "check", "-o", dir, "--only", "api")
	if code != exitUsage || !strings.Contains(errs, "not empty") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, out, errs := surge(t, "check", "-o", dir, "--only", "api", "--force", "-q")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if strings.Contains(out, "PASS  api") {
		t.Errorf("-q printed a PASS line:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "mine" {
		t.Error("--force removed a file that is not surge's")
	}
	readCheck(t, dir)
}

func TestCheckUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := filepath.Join(t.TempDir(), "ck")
	code, out, errs := surge(t, "check", "--target", "http://"+addr+"/v1?key=hunter2", "--model", "m", "-o", dir)
	if code != exitTarget {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "exit 3: the target is unreachable: ") || !strings.Contains(out, "connection refused") {
		t.Errorf("output:\n%s", out)
	}
	rep := readCheck(t, dir)
	if rep.Status != "UNREACHABLE" || rep.ExitCode != exitTarget {
		t.Errorf("check.json: verdict %q, exit_code %d, want UNREACHABLE and 3", rep.Status, rep.ExitCode)
	}
	if rep.Unreachable == "" || rep.Target != "http://"+addr+"/v1?redacted" {
		t.Errorf("check.json: unreachable %q, target %q", rep.Unreachable, rep.Target)
	}
	files, _ := os.ReadFile(filepath.Join(dir, "check.json"))
	md, _ := os.ReadFile(filepath.Join(dir, "check.md"))
	if strings.Contains(out+errs+string(files)+string(md), "hunter2") {
		t.Error("the URL's query reached the output or the files")
	}
}

// An endpoint that is not an OpenAI API: the api check says so, every
// other check SKIPs, exit 1.
func TestCheckNotOpenAI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		fmt.Fprint(w, "<html>404</html>")
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "ck")
	code, out, errs := surge(t, "check", "--target", srv.URL+"/v1", "--model", "m", "-o", dir)
	if code != exitSLO {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	lines := checkLines(out)
	if l := lines[check.CheckAPI]; !strings.Contains(l, "FAIL  api") || !strings.Contains(l, "not an OpenAI API: GET /v1/models → 404 text/html") {
		t.Errorf("api line %q", l)
	}
	for _, c := range check.Suite(check.APIChat)[1:] {
		if l := lines[c.Name]; !strings.HasPrefix(l, "SKIP") || !strings.HasSuffix(l, "api check failed") {
			t.Errorf("%s: %q", c.Name, l)
		}
	}
}

// Ctrl-C stops the suite, writes both files with what ran, and exits 1
// like every interrupted command.
func TestCheckInterrupted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	go func() { time.Sleep(500 * time.Millisecond); cancel() }()
	// streaming.long takes about 10 s on the default simulator.
	code := cli(ctx, []string{"check", "-o", dir, "--only", "streaming.long,usage"}, &stdout, &stderr)
	out := stdout.String()
	if code != exitSLO || !strings.Contains(out, "SKIP  streaming.long") || !strings.Contains(out, "exit 1: interrupted") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr.String())
	}
	rep := readCheck(t, dir)
	if rep.Status != "INTERRUPTED" || rep.ExitCode != exitSLO {
		t.Errorf("check.json: verdict %q, exit_code %d, want INTERRUPTED and 1", rep.Status, rep.ExitCode)
	}
	if !rep.Interrupted || len(rep.Results) != 2 || rep.Results[1].Evidence != "interrupted" {
		t.Errorf("check.json: interrupted %v, results %+v", rep.Interrupted, rep.Results)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "check.md")); !strings.Contains(string(md), "**interrupted**") {
		t.Errorf("check.md does not say interrupted:\n%s", md)
	}
}

func TestCheckHelp(t *testing.T) {
	code, out, _ := surge(t, "check", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--only", "--skip", "--require", "--long-tokens", "--context-tokens", "--overload-requests", "--out", "--force", "--quiet",
		"--target", "--model", "--api", "--api-key-env", "--api-key-file", "--header", "--ca-cert", "--insecure", "--timeout", "--step-base", "--profile", "--quirk",
		"streaming.incremental", "surge check --target", "at most 2048", "--api picks the suite", "--api messages --require messages.tools"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	// Every name --only, --skip and --require take, of every suite.
	for _, n := range check.Names() {
		if !regexp.MustCompile(`[ :,]` + regexp.QuoteMeta(n) + `(,|\n)`).MatchString(out) {
			t.Errorf("--help does not list %s", n)
		}
	}
	for _, not := range []string{"--rate", "--profile-", "--mix", "--sessions", "--slo-", "--prompt-calibration", "--simulate"} {
		if strings.Contains(out, not) {
			t.Errorf("--help offers %s, which surge check does not use", not)
		}
	}
}

// Simulator flags with --target configure nothing: one line on stderr
// says so; without --target they apply and nothing is said.
func TestCheckSimulatorFlagsWithTarget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	}))
	defer srv.Close()
	code, out, errs := surge(t, "check", "--target", srv.URL+"/v1", "--model", "m", "--only", "api", "-o", filepath.Join(t.TempDir(), "ck"),
		"--quirk", "buffered-stream", "--max-waiting", "8")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if want := "warning: --max-waiting, --quirk apply to the built-in simulator only; ignored with --target\n"; strings.Count(errs, "warning:") != 1 || !strings.Contains(errs, want) {
		t.Errorf("stderr %q, want once %q", errs, want)
	}
	_, _, errs = surge(t, append([]string{"check", "--only", "api", "-o", filepath.Join(t.TempDir(), "ck"), "--quirk", "buffered-stream"}, fastCheck...)...)
	if strings.Contains(errs, "warning:") {
		t.Errorf("a warning without --target: %q", errs)
	}
}

// A required check's line carries a *, and a legend line says what it
// means; without a required check there is neither.
func TestCheckRequiredLegend(t *testing.T) {
	code, out, errs := surge(t, append([]string{"check", "--only", "api", "--require", "usage.unary", "-o", filepath.Join(t.TempDir(), "ck")}, fastCheck...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, check.RequiredLegend+"\n") || !strings.Contains(out, "PASS  usage.unary* ") {
		t.Errorf("no legend or no *:\n%s", out)
	}
	_, out, _ = surge(t, append([]string{"check", "--only", "api", "-o", filepath.Join(t.TempDir(), "ck")}, fastCheck...)...)
	if strings.Contains(out, "*") {
		t.Errorf("a * without a required check:\n%s", out)
	}
}

// The suite of each other API against the simulator: exit 0, every
// check of the API's suite PASSes, check.json says the API.
func TestCheckAPIsOnSimulator(t *testing.T) {
	for _, api := range []string{check.APIResponses, check.APIMessages, check.APIEmbeddings, check.APIRerank} {
		t.Run(api, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ck")
			code, out, errs := surge(t, append([]string{"check", "--api", api, "-o", dir}, fastCheck...)...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			lines := checkLines(out)
			suite := check.Suite(api)
			for _, c := range suite {
				if l := lines[c.Name]; !strings.HasPrefix(l, "PASS") {
					t.Errorf("%s: %q, want a PASS\n%s", c.Name, l, out)
				}
			}
			if len(lines) != len(suite) || !strings.Contains(out, "surge check: built-in simulator, model surge-sim, "+api+" API") {
				t.Errorf("%d lines for a suite of %d:\n%s", len(lines), len(suite), out)
			}
			rep := readCheck(t, dir)
			if rep.API != api || rep.Status != "PASS" || rep.ExitCode != exitOK || len(rep.Results) != len(suite) || rep.Server.Engine != "surge-sim" {
				t.Errorf("check.json: api %q, verdict %q, exit_code %d, %d results, server %+v", rep.API, rep.Status, rep.ExitCode, len(rep.Results), rep.Server)
			}
		})
	}
}

// The simulator's quirks fail the new suites' checks too.
func TestCheckQuirksAPIs(t *testing.T) {
	for _, tc := range []struct{ api, quirk, check string }{
		{check.APIResponses, "buffered-stream", check.CheckResponsesStreaming},
		{check.APIMessages, "bad-tool-args", check.CheckMessagesTools},
		{check.APIMessages, "no-usage", check.CheckMessagesUsage},
		{check.APIEmbeddings, "no-usage", check.CheckEmbeddingsUsage},
		{check.APIRerank, "no-usage", check.CheckRerankUsage},
	} {
		t.Run(tc.api+"/"+tc.quirk, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ck")
			code, out, errs := surge(t, append([]string{"check", "--api", tc.api, "--quirk", tc.quirk, "--only", tc.check, "-o", dir}, fastCheck...)...)
			if code != exitSLO {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
			}
			if l := checkLines(out)[tc.check]; !strings.HasPrefix(l, "FAIL") {
				t.Errorf("%s: %q, want a FAIL\n%s", tc.check, l, out)
			}
			if !strings.Contains(out, "exit 1: "+tc.check+" failed") {
				t.Errorf("exit line does not name %s:\n%s", tc.check, out)
			}
		})
	}
}

// An endpoint that does not serve the API's path: its served check
// FAILs naming the API and the path, every other check SKIPs, exit 1,
// as the chat suite's api check does for an endpoint without the
// OpenAI API. Messages' requests carry Anthropic's headers.
func TestCheckAPINotServed(t *testing.T) {
	for _, api := range []string{check.APIResponses, check.APIMessages, check.APIEmbeddings, check.APIRerank} {
		t.Run(api, func(t *testing.T) {
			var headers http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/models" {
					fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
					return
				}
				headers = r.Header.Clone()
				http.NotFound(w, r)
			}))
			defer srv.Close()
			t.Setenv("SURGE_CHECK_TEST_KEY", "sk-test-1")
			dir := filepath.Join(t.TempDir(), "ck")
			code, out, errs := surge(t, "check", "--api", api, "--target", srv.URL+"/v1", "--model", "m", "--api-key-env", "SURGE_CHECK_TEST_KEY", "-o", dir)
			if code != exitSLO {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
			}
			gate := api + ".served"
			lines := checkLines(out)
			if l, want := lines[gate], fmt.Sprintf("%s: POST /v1/%s answered 404", api, api); !strings.HasPrefix(l, "FAIL  "+gate) || !strings.Contains(l, want) {
				t.Errorf("%s line %q, want a FAIL with %q", gate, l, want)
			}
			for _, c := range check.Suite(api)[1:] {
				if l := lines[c.Name]; !strings.HasPrefix(l, "SKIP") || !strings.HasSuffix(l, gate+" check failed") {
					t.Errorf("%s: %q", c.Name, l)
				}
			}
			if rep := readCheck(t, dir); rep.Status != "FAIL" || rep.ExitCode != exitSLO || rep.API != api {
				t.Errorf("check.json: verdict %q, exit_code %d, api %q", rep.Status, rep.ExitCode, rep.API)
			}
			if headers.Get("Authorization") != "Bearer sk-test-1" {
				t.Errorf("no bearer key on POST /v1/%s", api)
			}
			if api == check.APIMessages && (headers.Get("Anthropic-Version") != "2023-06-01" || headers.Get("X-Api-Key") != "sk-test-1") {
				t.Errorf("messages without Anthropic's headers: anthropic-version %q, x-api-key set %v", headers.Get("Anthropic-Version"), headers.Get("X-Api-Key") != "")
			}
			if strings.Contains(out+errs, "sk-test-1") {
				t.Error("the key reached the output")
			}
		})
	}
}

// A target that refuses connections is unreachable whatever the API:
// exit 3.
func TestCheckUnreachableAPIs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, api := range []string{check.APIResponses, check.APIRerank} {
		dir := filepath.Join(t.TempDir(), "ck")
		code, out, errs := surge(t, "check", "--api", api, "--target", "http://"+addr+"/v1", "--model", "m", "-o", dir)
		if code != exitTarget || !strings.Contains(out, "exit 3: the target is unreachable: ") {
			t.Errorf("%s: exit %d, want 3\n%s%s", api, code, out, errs)
		}
		if rep := readCheck(t, dir); rep.Status != "UNREACHABLE" || len(rep.Results) != 1 || rep.Results[0].Name != api+".served" {
			t.Errorf("%s: check.json verdict %q, %d results", api, rep.Status, len(rep.Results))
		}
	}
}
