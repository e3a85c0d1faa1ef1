package run

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// surge run --prompt-tokens 200 against a simulator whose tokenizer is not
// surge's estimate (2.5 or 6 bytes per token instead of 4): calibrated
// through the simulator's API — vLLM-style /tokenize, llama.cpp-style
// /tokenize + a probe, or probes alone when it has no /tokenize — the
// server-reported prompt tokens have a p50 within 5% of 200, and the
// manifest and summary say how. Uncalibrated (off, which is how prompts
// were sized before) the same run is 40% off.
func TestPromptCalibrationAgainstSimulator(t *testing.T) {
	cases := []struct {
		name, style, method, used string
		bpt                       float64
		within5                   bool
	}{
		{"vllm tokenize", sim.TokenizeVLLM, calibrate.Auto, calibrate.UsedVLLM, 2.5, true},
		{"llamacpp tokenize", sim.TokenizeLlamaCpp, calibrate.Auto, calibrate.UsedLlamaCpp, 2.5, true},
		{"probes", sim.TokenizeNone, calibrate.Auto, calibrate.UsedProbe, 6, true},
		{"forced probes", sim.TokenizeVLLM, calibrate.Probe, calibrate.UsedProbe, 2.5, true},
		{"off", sim.TokenizeVLLM, calibrate.Off, calibrate.UsedOff, 2.5, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := quietOptions()
				o.PromptTokens, o.OutputTokens, o.IgnoreEOS = workload.FixedLength(200), workload.FixedLength(8), true
				o.PromptCalibration = tc.method
				o.Sim.BytesPerToken, o.Sim.Tokenize = tc.bpt, tc.style
				env := bubbleEnv(t, o, nil)
				if env.Calibration.Method != tc.used {
					t.Fatalf("calibration %+v, want method %s", env.Calibration, tc.used)
				}
				res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "run", Plan: onePhase(4, 5*time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				checkPromptSizing(t, res, tc.used, tc.within5)
			})
		})
	}
}

// In virtual time (--simulate) the engine model counts the prompt text
// with the simulator's tokenizer, and the calibration is fitted to that
// count: the same 5%.
func TestPromptCalibrationVirtual(t *testing.T) {
	o := quietOptions()
	o.PromptTokens, o.OutputTokens, o.IgnoreEOS = workload.FixedLength(200), workload.FixedLength(8), true
	o.Sim.BytesPerToken = 2.5
	env, err := Prepare(context.Background(), o, true, nil, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "run", Plan: onePhase(4, 5*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	checkPromptSizing(t, res, calibrate.UsedModel, true)
}

func checkPromptSizing(t *testing.T, res *Result, used string, within5 bool) {
	t.Helper()
	ps := res.Prompt
	if ps == nil || res.Manifest.PromptSizing != ps {
		t.Fatalf("no prompt sizing in the result and manifest: %+v", ps)
	}
	if ps.Calibration != used || ps.Intended.P50 != 200 || ps.Intended.Samples != 20 || ps.Actual.Samples != 20 {
		t.Fatalf("prompt sizing %+v", ps)
	}
	off := math.Abs(float64(ps.Actual.P50)-200) / 200
	if within5 && off > 0.05 || !within5 && off < 0.2 {
		t.Errorf("server-reported prompt tokens p50 %d (p95 %d) for 200 intended (%.1f%% off); calibration %s", ps.Actual.P50, ps.Actual.P95, 100*off, ps.Description)
	}
	for i, r := range recordsOf(t, res) {
		if r.Outcome != record.OK {
			t.Fatalf("record %d: %s", i, r.Outcome)
		}
	}
}

// Ctrl-C while calibrating against a target that never answers ends
// preparation at once with ErrInterrupted (not after the 90 s budget), and
// the target's connections are let go.
func TestCalibrationInterrupted(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then net/http notices the client going away
		<-r.Context().Done()
	}))
	defer hang.Close()
	o := quietOptions()
	o.Target, o.Model = hang.URL+"/v1", "m"
	interrupt, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	t0 := time.Now()
	env, err := PrepareWith(context.Background(), o, false, Setup{Interrupt: interrupt})
	if !errors.Is(err, ErrInterrupted) {
		if env != nil {
			env.Close()
		}
		t.Fatalf("PrepareWith: %v, want ErrInterrupted", err)
	}
	if d := time.Since(t0); d > 30*time.Second { // generous: the budget it must not wait for is 90 s
		t.Fatalf("interrupted preparation took %s", d)
	}
}

// --retries with --simulate is said to do nothing: virtual time has no
// HTTP client to retry (a run would otherwise look retry-free by design).
func TestRetriesInVirtualTimeWarned(t *testing.T) {
	var log bytes.Buffer
	o := quietOptions()
	o.Retries = 2
	env, err := PrepareWith(context.Background(), o, true, Setup{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	env.Close()
	if !strings.Contains(log.String(), "--retries has no effect with --simulate") {
		t.Fatalf("no warning: %q", log.String())
	}
	log.Reset()
	o.Retries = 0
	env, err = PrepareWith(context.Background(), o, true, Setup{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	env.Close()
	if strings.Contains(log.String(), "--retries") {
		t.Fatalf("warned without --retries: %q", log.String())
	}
}
