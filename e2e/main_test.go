// Package e2e runs surge against real inference engines serving tiny
// generated models:
//
//   - Ollama built from the Go module proxy (scripts/ollama-e2e.sh starts it
//     and sets OLLAMA_BASE_URL, OLLAMA_MODEL and OLLAMA_LOG; ollama_test.go);
//   - vLLM's CPU build from PyPI (scripts/vllm-e2e.sh sets VLLM_BASE_URL,
//     VLLM_MODEL and VLLM_METRICS_URL; vllm_test.go);
//   - Debian's nginx as a rate-limiting gateway in front of surge's
//     simulator, or with NGINX_UPSTREAM in front of Ollama
//     (scripts/nginx-e2e.sh sets NGINX_BASE_URL, NGINX_UPSTREAM and
//     NGINX_ACCESS_LOG; nginx_test.go);
//   - Debian's Prometheus with its remote-write receiver, scraping surge's
//     simulator (scripts/prometheus-e2e.sh sets PROMETHEUS_URL and
//     SIM_BASE_URL; prometheus_test.go).
//
// The tests of an engine whose variables are unset skip. Wherever surge is
// built here, TestSelfAccuracyStarved also starves surge on purpose against
// bench/sseserver (selfaccuracy_test.go).
//
//	scripts/ollama-e2e.sh -- go test -count=1 -v ./e2e/
//	scripts/vllm-e2e.sh -- go test -count=1 -v -run VLLM ./e2e/
//	scripts/nginx-e2e.sh -- go test -count=1 -v -run Nginx ./e2e/
//	scripts/prometheus-e2e.sh -- go test -count=1 -v -run Prometheus ./e2e/
//	NGINX_RATE=4r/s NGINX_BURST=4 scripts/ollama-e2e.sh -- bash -c \
//	  'NGINX_UPSTREAM=$OLLAMA_BASE_URL scripts/nginx-e2e.sh -- go test -count=1 -v -run NginxInFrontOfOllama ./e2e/'
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

var surgeBin string

func TestMain(m *testing.M) {
	if os.Getenv("OLLAMA_BASE_URL") == "" && os.Getenv("VLLM_BASE_URL") == "" && os.Getenv("NGINX_BASE_URL") == "" && os.Getenv("PROMETHEUS_URL") == "" {
		fmt.Println("e2e: none of OLLAMA_BASE_URL, VLLM_BASE_URL, NGINX_BASE_URL, PROMETHEUS_URL is set; run through scripts/ollama-e2e.sh, scripts/vllm-e2e.sh, scripts/nginx-e2e.sh or scripts/prometheus-e2e.sh to test against a real engine")
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "surge-e2e")
	if err != nil {
		panic(err)
	}
	surgeBin = filepath.Join(dir, "surge")
	if out, err := exec.Command("go", "build", "-o", surgeBin, "../cmd/surge").CombinedOutput(); err != nil {
		fmt.Printf("build surge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sweepResult is the part of sweep.json the e2e tests read.
type sweepResult struct {
	Levels []struct {
		Name    string `json:"name"`
		Measure struct {
			RequestRPS float64 `json:"request_rps"`
			OutputTPS  float64 `json:"output_tokens_per_s"`
		} `json:"measure"`
	} `json:"levels"`
	Findings struct {
		Knee int `json:"knee"`
	} `json:"findings"`
}

// readSweep reads dir/sweep.json and fails the test unless it has levels levels.
func readSweep(t *testing.T, dir string, levels int) sweepResult {
	t.Helper()
	var sweep sweepResult
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err == nil {
		err = json.Unmarshal(b, &sweep)
	}
	if err != nil || len(sweep.Levels) != levels {
		t.Fatalf("sweep.json: %v, %d levels (want %d)", err, len(sweep.Levels), levels)
	}
	return sweep
}

// capacityResult is the part of capacity.json the e2e tests read.
type capacityResult struct {
	Sustainable float64 `json:"sustainable_rps"`
	Suggested   float64 `json:"suggested_baseline_rps"`
	Bounded     bool    `json:"bounded"`
}

// readCapacity reads dir/capacity.json.
func readCapacity(t *testing.T, dir string) capacityResult {
	t.Helper()
	var c capacityResult
	b, err := os.ReadFile(filepath.Join(dir, "capacity.json"))
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		t.Fatalf("capacity.json: %v", err)
	}
	return c
}

// checkSessions checks the records of a sessions run against a real
// engine: every request ok, every session with all its turns, and the
// server's prompt tokens growing every turn (the conversation is resent)
// by at least the answer before. It returns the records by turn (index
// turn−1), each in session order, and logs the medians.
func checkSessions(t *testing.T, recs []record.Record, turns int) [][]record.Record {
	t.Helper()
	byTurn := make([][]record.Record, turns)
	perSession := map[int64]int{}
	for _, r := range recs {
		if r.Outcome != record.OK || r.Turn < 1 || r.Turn > turns || r.Branch != 0 {
			t.Fatalf("record %s: outcome %s, turn %d, branch %d (want ok, 1..%d, 0)", r.ID, r.Outcome, r.Turn, r.Branch, turns)
		}
		byTurn[r.Turn-1] = append(byTurn[r.Turn-1], r)
		perSession[r.Session]++
	}
	for s, n := range perSession {
		if n != turns {
			t.Errorf("session %d has %d turns, want %d", s, n, turns)
		}
	}
	last := map[int64]record.Record{}
	var line []string
	for i, turn := range byTurn {
		sort.Slice(turn, func(a, b int) bool { return turn[a].Session < turn[b].Session })
		var prompt, cached []int
		for _, r := range turn {
			if prev, ok := last[r.Session]; ok && r.PromptTokens < prev.PromptTokens+prev.OutputTokens {
				t.Errorf("session %d turn %d: %d prompt tokens, the turn before %d + its answer %d: the history was not resent",
					r.Session, r.Turn, r.PromptTokens, prev.PromptTokens, prev.OutputTokens)
			}
			last[r.Session] = r
			prompt, cached = append(prompt, r.PromptTokens), append(cached, r.CachedTokens)
		}
		sort.Ints(prompt)
		sort.Ints(cached)
		if len(prompt) == 0 {
			t.Fatalf("no records of turn %d", i+1)
		}
		line = append(line, fmt.Sprintf("turn %d: %d requests, server prompt tokens p50 %d, cached p50 %d", i+1, len(turn), prompt[len(prompt)/2], cached[len(cached)/2]))
	}
	t.Logf("sessions: %s", strings.Join(line, "; "))
	return byTurn
}
