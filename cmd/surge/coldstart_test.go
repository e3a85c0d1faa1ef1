package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// freePort returns a loopback host:port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Mode (a) end to end: surge starts itself as `surge sim`, which listens
// after --start-delay 300ms and scales from zero with a 400 ms model load;
// two cycles, each milestone separable, the files written, exit 0.
func TestColdstartStartCmd(t *testing.T) {
	addr := freePort(t)
	out := filepath.Join(t.TempDir(), "cs")
	start := "SURGE_TEST_CLI=1 exec '" + os.Args[0] + "' sim --addr " + addr +
		" --start-delay 300ms --autoscale --min-replicas 0 --scale-request-delay 0s --node-ready-delay 0s" +
		" --container-ready-delay 0s --model-ready-delay 400ms"
	code, stdout, stderr := surge(t, "coldstart", "--target", "http://"+addr+"/v1", "--start-cmd", start, "--repeat", "2", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"cycle 2: listen", "median", "exit 0: every cycle reached steady warm latency", "server.log"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "coldstart.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Mode   string `json:"mode"`
		Cycles []struct {
			Listen     *float64 `json:"listen_s"`
			FirstToken *float64 `json:"first_token_s"`
			Warm       *float64 `json:"warm_s"`
			Stop       *float64 `json:"stop_s"`
		} `json:"cycles"`
		Summary []struct {
			Milestone string `json:"milestone"`
			N         int    `json:"n"`
		} `json:"summary"`
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "start-cmd" || len(rep.Cycles) != 2 || len(rep.Summary) != 6 || rep.Summary[0].N != 2 || rep.ExitCode != 0 {
		t.Fatalf("coldstart.json: %s", b)
	}
	for i, c := range rep.Cycles {
		if c.Listen == nil || c.FirstToken == nil || c.Warm == nil || c.Stop == nil {
			t.Fatalf("cycle %d misses a milestone: %s", i+1, b)
		}
		if *c.Listen < 0.3 || *c.FirstToken-*c.Listen < 0.4 || *c.Warm < *c.FirstToken {
			t.Errorf("cycle %d: listen %.3fs, first token %.3fs, warm %.3fs; want listen ≥ 0.3s, first token ≥ listen + 0.4s, warm after it",
				i+1, *c.Listen, *c.FirstToken, *c.Warm)
		}
	}
	log, _ := os.ReadFile(filepath.Join(out, "server.log"))
	if strings.Count(string(log), "0 replicas (scales from zero)") != 2 {
		t.Fatalf("server.log:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(out, "coldstart.md")); err != nil {
		t.Fatal(err)
	}
}

// Mode (b) against the built-in simulator scaled from zero: one cycle, a
// first token after the model load.
func TestColdstartBuiltinScaleFromZero(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cs")
	code, stdout, stderr := surge(t, "coldstart", "--autoscale", "--min-replicas", "0", "--scale-request-delay", "0s",
		"--node-ready-delay", "0s", "--container-ready-delay", "0s", "--model-ready-delay", "300ms", "-o", out)
	if code != exitOK || !strings.Contains(stdout, "scaled from zero") || !strings.Contains(stdout, "cycle 1: first token") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// The built-in simulator with no flags has a replica ready: the command
// says so before it measures and, exiting 1, suggests --autoscale
// --min-replicas 0 rather than a longer --idle (review 11).
func TestColdstartBuiltinNotFromZero(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cs")
	code, stdout, stderr := surge(t, "coldstart", "-o", out)
	if code != exitSLO {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if strings.Contains(first, "scaled from zero") || strings.Contains(stdout, "raise --idle") {
		t.Fatalf("claims a scale from zero or suggests --idle:\n%s", stdout)
	}
	for _, want := range []string{"not scaled from zero", "add --autoscale --min-replicas 0", "  warm start: the endpoint had not scaled to zero (left out of the spread)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(out, "coldstart.md")); !strings.Contains(string(md), "not scaled from zero") {
		t.Errorf("coldstart.md lacks the note:\n%s", md)
	}
}

// Bad input: each a clear message and its documented exit code.
func TestColdstartBadInput(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := "http://" + ln.Addr().String() + "/v1"
	free := "http://" + freePort(t) + "/v1"
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"start-cmd without target", []string{"--start-cmd", "true"}, exitUsage, []string{"--target", "--start-cmd needs"}},
		{"repeat without idle", []string{"--target", free, "--repeat", "3"}, exitUsage, []string{"--repeat", "--idle"}},
		{"idle with start-cmd", []string{"--target", free, "--start-cmd", "true", "--idle", "1s"}, exitUsage, []string{"--idle"}},
		{"port already taken", []string{"--target", taken, "--start-cmd", "sleep 10"}, exitUsage,
			[]string{ln.Addr().String(), "accepts connections before the start command runs", "measuring it would be wrong"}},
		{"command exits at once", []string{"--target", free, "--start-cmd", "exit 7"}, exitTarget,
			[]string{"the start command exited (exit status 7)", "before it accepted a connection", "server.log"}},
		// review 12: a 404 for a model the server does not list stops at
		// once (exit 2 naming --model), not after --start-timeout (exit 3)
		{"model not served", []string{"--target", free, "--start-timeout", "1m", "--start-cmd",
			"SURGE_TEST_CLI=1 exec '" + os.Args[0] + "' sim --addr " + strings.TrimSuffix(strings.TrimPrefix(free, "http://"), "/v1") + " --model llama"},
			exitUsage, []string{`model "surge-sim" got 404`, `lists "llama"`, "set --model"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cs")
			code, stdout, stderr := surge(t, append([]string{"coldstart", "-o", out}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
