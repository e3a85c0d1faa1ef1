package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// Against Ollama, with --web and --metrics-out at once: the live page
// streams the run while it goes (its snapshots name the run and the
// phase, and count requests in flight), becomes report.html at the end,
// and the per-phase values pushed over remote-write equal summary.json's.
func TestLiveViewAndPushAgainstOllama(t *testing.T) {
	base, model := engine(t)
	var mu sync.Mutex
	pushed := map[string]float64{} // name{phase} → last value
	rw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err == nil {
			err = wr.Unmarshal(raw)
		}
		if err != nil {
			t.Errorf("remote-write: %v", err)
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		for _, ts := range wr.Timeseries {
			var name, phase string
			for _, l := range ts.Labels {
				switch l.Name {
				case "__name__":
					name = l.Value
				case "phase":
					phase = l.Value
				}
			}
			pushed[name+"{"+phase+"}"] = ts.Samples[0].Value
		}
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer rw.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := filepath.Join(t.TempDir(), "live")
	cmd := exec.Command(surgeBin, "run", "--target", base, "--model", model, "--prompt-tokens", "64", "--output-tokens", "32",
		"--rate", "2", "--warmup", "3s", "--duration", "12s", "--ttft-deadline", "5s", "-q", "-o", dir,
		"--web", addr, "--metrics-out", "prometheus-rw="+rw.URL+"/api/v1/write")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The page's event stream, from the first second on.
	var resp *http.Response
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err = http.Get("http://" + addr + "/events")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live page never answered: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	type snap struct {
		Run      string `json:"run"`
		Phase    string `json:"phase"`
		InFlight int64  `json:"in_flight"`
	}
	var snaps []snap
	final := false
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "status":
			var s snap
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
				t.Fatalf("snapshot %q: %v", line, err)
			}
			snaps = append(snaps, s)
		case strings.HasPrefix(line, "data: ") && event == "final":
			final = true
		}
		if final {
			break
		}
	}
	// The command waits (5 s at most) for the page to fetch the report.
	rep, err := http.Get("http://" + addr + "/report.html")
	if err != nil {
		t.Fatalf("report.html from the live page: %v", err)
	}
	page, _ := io.ReadAll(rep.Body)
	rep.Body.Close()
	resp.Body.Close()
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 && ee.ExitCode() != 5 {
			t.Fatalf("surge run: %v\n%s", err, out.String())
		}
	}
	t.Logf("surge run --web --metrics-out against Ollama:\n%s", out.String())
	phases, maxInFlight := map[string]int{}, int64(0)
	for _, s := range snaps {
		phases[s.Phase]++
		maxInFlight = max(maxInFlight, s.InFlight)
		if s.Run != "live" {
			t.Errorf("snapshot of run %q, want live", s.Run)
		}
	}
	t.Logf("| live page | %d snapshots, by phase %v, in flight at most %d; final event %v; report.html %d bytes |", len(snaps), phases, maxInFlight, final, len(page))
	if !final || rep.StatusCode != 200 || !strings.Contains(string(page), "<html") || phases["warmup"] == 0 || phases["main"] < 5 || maxInFlight == 0 {
		t.Errorf("live page: final %v, report %d, phases %v, max in flight %d", final, rep.StatusCode, phases, maxInFlight)
	}
	sum := readSummary(t, filepath.Join(dir, "summary.json"))
	mu.Lock()
	defer mu.Unlock()
	for _, p := range sum.Analysis.Phases {
		good, done := pushed["surge_phase_goodput_rps{"+p.Name+"}"], pushed["surge_phase_completed_requests{"+p.Name+"}"]
		t.Logf("| %s | pushed goodput/s %.4f = summary.json %.4f | completed %v = %d |", p.Name, good, p.GoodputRPS, done, p.Succeeded)
		if math.Abs(good-p.GoodputRPS) > 1e-12 || done != float64(p.Succeeded) {
			t.Errorf("%s: pushed %v, %v; summary.json %v, %d", p.Name, good, done, p.GoodputRPS, p.Succeeded)
		}
	}
}
