package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
	"github.com/surge-bench/surge/internal/workload"
)

// Fit recovers an exact line and refuses what is not one.
func TestFit(t *testing.T) {
	d, c, err := Fit([]Point{{100, 47}, {200, 87}, {400, 167}})
	if err != nil || math.Abs(d-0.4) > 1e-12 || math.Abs(c-7) > 1e-9 {
		t.Fatalf("Fit = %v, %v, %v; want 0.4, 7", d, c, err)
	}
	for name, pts := range map[string][]Point{
		"one point": {{100, 10}},
		"one size":  {{100, 10}, {100, 11}},
		"flat":      {{100, 10}, {200, 10}},
	} {
		if _, _, err := Fit(pts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// texts is the workload's own synthetic text, as surge run measures it.
func texts(t *testing.T) Texts {
	t.Helper()
	p := workload.Profile{Name: "cal", Prompt: workload.Fixed(1), Output: workload.Fixed(1), MaxTokens: 1}
	g, err := workload.New(workload.Config{Profile: p, Seed: 9, Salt: 77})
	if err != nil {
		t.Fatal(err)
	}
	return func(i, tokens int) string {
		return g.Generate(schedule.Arrival{Seq: -int64(i + 1), PromptTokens: tokens}).Prompt
	}
}

// simTarget serves the simulator with the given tokenizer and returns the
// calibration config for it, with probes as real chat requests.
func simTarget(t *testing.T, bpt float64, style string) (Config, sim.Config, *int) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.BytesPerToken, cfg.Tokenize = bpt, style
	cfg.StepBase, cfg.StepPerPrefillToken, cfg.StepPerDecodeSeq = 1e5, 0, 0
	s, err := simhttp.New(cfg, nil, simhttp.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	probes := new(int)
	probe := func(ctx context.Context, text string) (int, error) {
		*probes++
		b, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 1, "messages": []map[string]string{{"role": "user", "content": text}}})
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var body struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&body) != nil {
			return 0, errors.New("probe failed")
		}
		return body.Usage.PromptTokens, nil
	}
	return Config{Root: srv.URL, Model: "m", Chat: true, Probe: probe, Text: texts(t)}, cfg, probes
}

// Against the simulator at 2.5 bytes per token, every method finds the
// simulator's density (0.4 tokens per byte), and a 200-token prompt sized
// with the result is counted as 200 ± 1 by the simulator — where surge's
// estimate (800 bytes) would be 327.
func TestRunAgainstSimulator(t *testing.T) {
	for _, tc := range []struct {
		style, method, want string
		probes              int
	}{
		{sim.TokenizeVLLM, Auto, UsedVLLM, 0},
		{sim.TokenizeLlamaCpp, Auto, UsedLlamaCpp, 1},
		{sim.TokenizeNone, Auto, UsedProbe, 12},
		{sim.TokenizeVLLM, Probe, UsedProbe, 12},
	} {
		t.Run(tc.style+"/"+tc.method, func(t *testing.T) {
			cfg, scfg, probes := simTarget(t, 2.5, tc.style)
			cfg.Method = tc.method
			r := Run(context.Background(), cfg)
			if r.Method != tc.want || r.Warning != "" || *probes != tc.probes || r.Probes != tc.probes {
				t.Fatalf("method %q (want %q), warning %q, %d probes sent, %d counted (want %d)", r.Method, tc.want, r.Warning, *probes, r.Probes, tc.probes)
			}
			if math.Abs(r.TokensPerByte-0.4) > 0.005 {
				t.Errorf("tokens per byte %.4f, want 0.4", r.TokensPerByte)
			}
			g, _ := workload.New(workload.Config{Profile: workload.Profile{Name: "x", Prompt: workload.Fixed(200), Output: workload.Fixed(1), MaxTokens: 1}, Seed: 1, Sizing: r.Sizing()})
			for seq := range int64(20) {
				p := g.Generate(schedule.Arrival{Seq: seq}).Prompt
				if n := scfg.PromptTokens(true, p); n < 199 || n > 201 {
					t.Fatalf("a 200-token prompt counts %d (sizing %+v)", n, r.Sizing())
				}
			}
			if tc.style == sim.TokenizeNone && !strings.Contains(r.Fallback, "HTTP 404") {
				t.Errorf("fallback %q, want it to say /tokenize answered 404", r.Fallback)
			}
		})
	}
}

// A /tokenize that errors falls back to probes and says so; when probes
// fail too, the result is a warning and surge's estimate; off is off.
func TestRunFallbacks(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the prompt was: SECRET-PROMPT", http.StatusInternalServerError)
	}))
	defer broken.Close()
	cfg, _, _ := simTarget(t, 3, sim.TokenizeNone)
	cfg.Root = broken.URL
	r := Run(context.Background(), cfg)
	if r.Method != UsedProbe || !strings.Contains(r.Fallback, "POST /tokenize: HTTP 500") || !r.Calibrated() {
		t.Fatalf("erroring /tokenize: %+v", r)
	}

	cfg.Probe = func(context.Context, string) (int, error) { return 0, errors.New("http_error 503") }
	r = Run(context.Background(), cfg)
	if r.Method != UsedNone || r.Calibrated() || !strings.Contains(r.Warning, "HTTP 500") || !strings.Contains(r.Warning, "http_error 503") ||
		!strings.Contains(r.Warning, "4 bytes per token") || r.Sizing() != (workload.Sizing{}) {
		t.Fatalf("everything failing: %+v", r)
	}
	if strings.Contains(r.Warning+r.Fallback, "SECRET") {
		t.Fatal("an answer's text reached the result")
	}
	if r := Run(context.Background(), Config{Method: Off}); r.Method != UsedOff || r.Calibrated() {
		t.Fatalf("off: %+v", r)
	}
}

// A target that accepts and never answers costs one /tokenize wait (not
// one per /tokenize shape) and one probe, not every probe: the warning
// says no answer came.
func TestRunSilentTarget(t *testing.T) {
	var tokenizes atomic.Int32
	stop := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenizes.Add(1)
		<-stop // never answers while the test runs
	}))
	defer silent.Close()
	defer close(stop)
	probes := 0
	cfg := Config{Root: silent.URL, Model: "m", Chat: true, Text: texts(t), Timeout: 50 * time.Millisecond,
		Probe: func(context.Context, string) (int, error) {
			probes++
			return 0, fmt.Errorf("%w within 15s", ErrNoAnswer)
		}}
	r := Run(context.Background(), cfg)
	if tokenizes.Load() != 1 || probes != 1 || r.Calibrated() {
		t.Fatalf("%d /tokenize calls and %d probes (want 1 and 1): %+v", tokenizes.Load(), probes, r)
	}
	if !strings.Contains(r.Warning, "POST /tokenize: no answer within 50ms") || !strings.Contains(r.Warning, "probe requests: no answer within 15s") {
		t.Fatalf("warning %q", r.Warning)
	}
}

// In virtual time the engine model's own count is fitted the same way.
func TestModel(t *testing.T) {
	scfg := sim.DefaultConfig()
	scfg.BytesPerToken = 5
	r := Model(func(s string) int { return scfg.PromptTokens(true, s) }, texts(t))
	if r.Method != UsedModel || math.Abs(r.TokensPerByte-0.2) > 0.002 || math.Abs(r.OverheadTokens-7) > 1.5 {
		t.Fatalf("%+v", r)
	}
}
