package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/judge"
)

// TestSelfAccuracyStarved starves surge on purpose — pinned to one CPU it
// shares with a busy loop, against bench/sseserver on the other CPU — and
// requires its self-accuracy verdict to say so (at risk or behind, with a
// reason), in summary.json, on the terminal and in report.html. It runs
// wherever the e2e binary is built (the CI's Ollama step) and needs Linux's
// taskset and two CPUs.
func TestSelfAccuracyStarved(t *testing.T) {
	if surgeBin == "" {
		t.Skip("surge is built only when an engine is set (see TestMain)")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: one for the server, one shared by surge and a busy loop")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("no taskset")
	}
	dir := t.TempDir()
	server := filepath.Join(dir, "sseserver")
	if out, err := exec.Command("go", "build", "-o", server, "../bench/sseserver").CombinedOutput(); err != nil {
		t.Fatalf("build bench/sseserver: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(taskset, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	start("-c", "1", server, "--addr", addr, "--tokens", "64", "--ttft", "50ms", "--gap", "5ms")
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i == 100 {
			t.Fatalf("bench/sseserver did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start("-c", "0", "sh", "-c", "while :; do :; done")
	time.Sleep(500 * time.Millisecond) // the busy loop holds its share of CPU 0

	out := filepath.Join(dir, "run")
	cmd := exec.Command(taskset, "-c", "0", surgeBin, "run", "--target", "http://"+addr+"/v1", "--model", "bench",
		"--prompt-calibration", "off", "--rate", "400", "--duration", "10s", "--arrival", "constant",
		"--prompt-tokens", "128", "--output-tokens", "64", "-o", out)
	term, err := cmd.CombinedOutput()
	t.Logf("surge run, starved → %v\n%s", err, term)
	s := readSummary(t, filepath.Join(out, "summary.json")).SelfAccuracy
	if s == nil {
		t.Fatal("summary.json has no self_accuracy")
	}
	t.Logf("starved: %s", s.Line())
	if s.State != judge.SelfAtRisk && s.State != judge.SelfBehind {
		t.Errorf("starved client judged %q, want at_risk or behind", s.State)
	}
	if len(s.Why) == 0 || s.Advice == "" {
		t.Errorf("verdict %q without a reason (%q) or advice (%q)", s.State, s.Why, s.Advice)
	}
	if want := map[judge.SelfState]string{judge.SelfAtRisk: "is AT RISK", judge.SelfBehind: "FELL BEHIND"}[s.State]; !strings.Contains(string(term), "self-accuracy: the client "+want) {
		t.Errorf("the terminal lacks the self-accuracy line with %q", want)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	badge := map[judge.SelfState]string{judge.SelfAtRisk: "AT-RISK", judge.SelfBehind: "BEHIND"}[s.State]
	if !strings.Contains(string(page), fmt.Sprintf(`<span class="badge %s">%s</span>`, badge, badge)) {
		t.Errorf("report.html lacks the self-accuracy section with badge %s", badge)
	}
}
