package coldstart

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
)

// TestMain makes the test binary a slow-starting server when
// COLDSTART_TEST_SERVE is set to an address: it waits
// COLDSTART_TEST_DELAY, then serves the simulator scaled from zero (model
// ready COLDSTART_TEST_MODEL after its first request) until SIGTERM —
// which it ignores with COLDSTART_TEST_STUBBORN=1.
func TestMain(m *testing.M) {
	if addr := os.Getenv("COLDSTART_TEST_SERVE"); addr != "" {
		os.Exit(serve(addr))
	}
	os.Exit(m.Run())
}

func serve(addr string) int {
	ctx := context.Background() // stubborn: SIGTERM ignored, only SIGKILL ends it
	if os.Getenv("COLDSTART_TEST_STUBBORN") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		var stop func()
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	delay, _ := time.ParseDuration(os.Getenv("COLDSTART_TEST_DELAY"))
	model, _ := time.ParseDuration(os.Getenv("COLDSTART_TEST_MODEL"))
	time.Sleep(delay)
	srv, _, err := simhttp.Listen(ctx, addr, fromZero(model, time.Hour), slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return 1
	}
	defer srv.Close()
	os.Stdout.WriteString("serving\n")
	<-ctx.Done()
	return 0
}

// fromZero is the simulator scaled to zero whose first replica is ready
// model after the first arrival and goes after idle.
func fromZero(model, idle time.Duration) sim.Config {
	c := sim.DefaultConfig()
	c.Autoscale, c.MinReplicas, c.MaxReplicas = true, 0, 1
	c.ScaleRequestDelay, c.NodeReadyDelay, c.ContainerReadyDelay = 0, 0, 0
	c.ModelReadyDelay, c.ScaleDownIdle = model, idle
	return c
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func clientFor(base string) openai.Config {
	c := openai.DefaultConfig()
	c.BaseURL, c.Model = base, "surge-sim"
	return c
}

// The warm rule, by hand: K values each within max(X·median, 5 ms) of
// their median.
func TestSteady(t *testing.T) {
	cases := []struct {
		name string
		v    []float64
		med  float64
		ok   bool
	}{
		{"steady", []float64{0.100, 0.110, 0.095, 0.105, 0.100}, 0.100, true},
		{"near the edge (25%)", []float64{0.100, 0.124, 0.076, 0.100, 0.100}, 0.100, true},
		{"one outlier", []float64{0.100, 0.130, 0.100, 0.100, 0.100}, 0.100, false},
		{"the floor covers small TTFTs", []float64{0.010, 0.014, 0.006, 0.010, 0.011}, 0.010, true},
		{"beyond the floor", []float64{0.010, 0.016, 0.010, 0.010, 0.010}, 0.010, false},
		{"even count: nearest rank, the lower middle", []float64{0.120, 0.100, 0.120, 0.100}, 0.100, true},
		{"too few", []float64{0.1, 0.1, 0.1}, 0, false},
		{"cold start still in the window", []float64{0.9, 0.1, 0.1, 0.1, 0.1}, 0.1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := 5
			if len(tc.v) == 4 {
				k = 4
			}
			med, ok := steady(tc.v, k, 0.25)
			if ok != tc.ok || (tc.med != 0 && abs(med-tc.med) > 1e-12) {
				t.Fatalf("steady(%v) = %v, %v; want %v, %v", tc.v, med, ok, tc.med, tc.ok)
			}
		})
	}
}

func abs(x float64) float64 { return max(x, -x) }

// Mode (b) against the simulator scaled from zero over HTTP: each cycle's
// first token waits for model_ready (300 ms), the warm TTFT is one
// prefill step, and the idle wait lets it scale back to zero between
// cycles, so neither is a warm start.
func TestScaleFromZeroCycles(t *testing.T) {
	srv, base, err := simhttp.Listen(t.Context(), "127.0.0.1:0", fromZero(300*time.Millisecond, 200*time.Millisecond), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Target, cfg.Repeat, cfg.Idle = base, 2, time.Second
	rep, err := Run(t.Context(), cfg, clientFor(base), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cycles) != 2 || rep.Mode != ModeScaleFromZero {
		t.Fatalf("%d cycles, mode %s", len(rep.Cycles), rep.Mode)
	}
	for _, c := range rep.Cycles {
		if c.ListenS != nil || c.FirstTokenS == nil || c.WarmS == nil || c.WarmStart {
			t.Fatalf("cycle %d: %+v", c.N, c)
		}
		// generous bounds: 300 ms of model load, ≈ 25 ms TTFT warm
		if *c.FirstTokenS < 0.3 || *c.FirstTokenS > 5 || *c.ColdTTFTS < 0.3 {
			t.Errorf("cycle %d: first token %.3fs, cold TTFT %.3fs; want ≥ 0.3s (model_ready_delay)", c.N, *c.FirstTokenS, *c.ColdTTFTS)
		}
		if *c.WarmTTFTS > 0.2 || *c.WarmS < *c.FirstTokenS {
			t.Errorf("cycle %d: warm TTFT %.3fs at %.3fs; want < 0.2s, after the first token %.3fs", c.N, *c.WarmTTFTS, *c.WarmS, *c.FirstTokenS)
		}
	}
	if len(rep.Summary) != 4 || rep.Summary[0].Milestone != "first_token" || rep.Summary[0].N != 2 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	if s := rep.Summary[0]; !(s.Min <= s.Median && s.Median <= s.Max) || s.Min != min(*rep.Cycles[0].FirstTokenS, *rep.Cycles[1].FirstTokenS) {
		t.Fatalf("first-token spread %+v", s)
	}
}

// An endpoint that did not scale back to zero (idle shorter than its
// scale-down) gives a warm start, flagged and left out of the spread.
func TestWarmStartFlagged(t *testing.T) {
	srv, base, err := simhttp.Listen(t.Context(), "127.0.0.1:0", fromZero(300*time.Millisecond, time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Target, cfg.Repeat, cfg.Idle = base, 2, 10*time.Millisecond
	rep, err := Run(t.Context(), cfg, clientFor(base), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cycles[0].WarmStart || !rep.Cycles[1].WarmStart || rep.AllWarmStarts() {
		t.Fatalf("warm starts %v, %v; want only the second", rep.Cycles[0].WarmStart, rep.Cycles[1].WarmStart)
	}
	if rep.Summary[0].N != 1 {
		t.Fatalf("summary %+v: the warm start must be left out", rep.Summary[0])
	}
}

// startCfg is a start-command configuration for the test binary serving
// on addr with the given delays.
func startCfg(t *testing.T, addr, delay, model string, extra ...string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Target = "http://" + addr + "/v1"
	env := "COLDSTART_TEST_SERVE=" + addr + " COLDSTART_TEST_DELAY=" + delay + " COLDSTART_TEST_MODEL=" + model + " " + strings.Join(extra, " ")
	cfg.StartCmd = env + " exec '" + os.Args[0] + "'"
	cfg.LogPath = filepath.Join(t.TempDir(), "server.log")
	f, err := os.Create(cfg.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg.Log = f
	cfg.StopGrace = 5 * time.Second
	return cfg
}

// Mode (a): surge starts a server that listens after 300 ms and serves
// tokens 400 ms after its first request; the milestones are separable and
// ordered, the server is stopped by SIGTERM and its port closes before the
// next cycle.
func TestStartCmdCycles(t *testing.T) {
	addr := freeAddr(t)
	cfg := startCfg(t, addr, "300ms", "400ms")
	cfg.Repeat = 2
	rep, err := Run(t.Context(), cfg, clientFor(cfg.Target), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cycles {
		if c.ListenS == nil || c.FirstTokenS == nil || c.WarmS == nil || c.StopS == nil {
			t.Fatalf("cycle %d: %+v", c.N, c)
		}
		if *c.ListenS < 0.3 || *c.ListenS > 10 {
			t.Errorf("cycle %d: listen %.3fs, want ≥ 0.3s (the start delay)", c.N, *c.ListenS)
		}
		if *c.FirstTokenS-*c.ListenS < 0.4 {
			t.Errorf("cycle %d: first token %.3fs only %.3fs after listen, want ≥ 0.4s (model ready)", c.N, *c.FirstTokenS, *c.FirstTokenS-*c.ListenS)
		}
		if *c.WarmS < *c.FirstTokenS || *c.WarmTTFTS > 0.2 {
			t.Errorf("cycle %d: warm at %.3fs TTFT %.3fs", c.N, *c.WarmS, *c.WarmTTFTS)
		}
		if c.Killed || c.Exit != "exit status 0" {
			log, _ := os.ReadFile(cfg.LogPath)
			t.Errorf("cycle %d: killed %v, exit %q; want a clean exit on SIGTERM; server.log:\n%s", c.N, c.Killed, c.Exit, log)
		}
	}
	if accepts(context.Background(), addr) {
		t.Fatal("the port still accepts after the last cycle")
	}
	log, _ := os.ReadFile(cfg.LogPath)
	if strings.Count(string(log), "serving\n") != 2 || !strings.Contains(string(log), "cycle 2: sh -c started") {
		t.Fatalf("server.log:\n%s", log)
	}
}

// A server that ignores SIGTERM is killed after the grace.
func TestStubbornServerKilled(t *testing.T) {
	addr := freeAddr(t)
	cfg := startCfg(t, addr, "0s", "0s", "COLDSTART_TEST_STUBBORN=1")
	cfg.Repeat, cfg.StopGrace = 1, 300*time.Millisecond
	rep, err := Run(t.Context(), cfg, clientFor(cfg.Target), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cycles[0]
	if !c.Killed || c.Exit != "signal: killed" || *c.StopS < 0.3 {
		t.Fatalf("killed %v, exit %q, stop %v; want SIGKILL after the 300 ms grace", c.Killed, c.Exit, *c.StopS)
	}
	if accepts(context.Background(), addr) {
		t.Fatal("port still open")
	}
}

// Ctrl-C while the server loads: the process group is stopped, the
// report is marked interrupted, with what was measured (listen), and no
// error.
func TestInterruptStopsServer(t *testing.T) {
	addr := freeAddr(t)
	cfg := startCfg(t, addr, "0s", "1h")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for !accepts(ctx, addr) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // a probe is waiting for model_ready
		cancel()
	}()
	rep, err := Run(ctx, cfg, clientFor(cfg.Target), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.Cycles) != 1 || rep.Cycles[0].ListenS == nil || rep.Cycles[0].FirstTokenS != nil {
		t.Fatalf("interrupted %v, cycles %+v", rep.Interrupted, rep.Cycles)
	}
	if rep.Cycles[0].StopS == nil || accepts(context.Background(), addr) {
		t.Fatal("the server was not stopped")
	}
}

// Bad input: a command that exits at once is named with its status and
// log; a port already served is refused before anything starts.
func TestStartCmdBadInput(t *testing.T) {
	addr := freeAddr(t)
	cfg := startCfg(t, addr, "0s", "0s")
	cfg.StartCmd = "echo no model here; exit 7"
	rep, err := Run(t.Context(), cfg, clientFor(cfg.Target), io.Discard)
	var se *StartError
	if !errors.As(err, &se) || se.Status != "exit status 7" || !strings.Contains(err.Error(), cfg.LogPath) ||
		!strings.Contains(err.Error(), "before it accepted a connection") {
		t.Fatalf("err %v, want a StartError with exit status 7 and the log path", err)
	}
	if rep.Problem == "" || len(rep.Cycles) != 1 || rep.Cycles[0].Exit != "exit status 7" {
		t.Fatalf("report %+v", rep)
	}
	if s := rep.Cycles[0].StopS; s != nil { // review 16: not "stop 0.000s"
		t.Fatalf("stop %.3fs for a command that exited by itself; want none (–)", *s)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil || !regexp.MustCompile(`- 1: .*stop: not reached`).MatchString(md.String()) {
		t.Fatalf("coldstart.md must show stop as n/a, not reached:\n%s", md.String())
	}
	if log, _ := os.ReadFile(cfg.LogPath); !strings.Contains(string(log), "no model here") {
		t.Fatalf("the command's output is not in the log:\n%s", log)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg = startCfg(t, ln.Addr().String(), "0s", "0s")
	if err := PortFree(t.Context(), cfg); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("PortFree: %v, want ErrPortInUse", err)
	}
	if _, err := Run(t.Context(), cfg, clientFor(cfg.Target), io.Discard); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Run: %v, want ErrPortInUse", err)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"start-cmd without target", func(c *Config) { c.StartCmd, c.Target = "x", "" }, "target"},
		{"repeat without idle", func(c *Config) { c.Repeat = 3 }, "repeat"},
		{"idle with a start command", func(c *Config) { c.StartCmd, c.Idle = "x", time.Second }, "idle"},
		{"target not a URL", func(c *Config) { c.StartCmd, c.Target = "x", "127.0.0.1:8000" }, "target"},
		{"warm window 1", func(c *Config) { c.WarmWindow = 1 }, "warm_window"},
		{"warm max below the window", func(c *Config) { c.WarmMax = 3 }, "warm_max"},
		{"tolerance 0", func(c *Config) { c.WarmTolerance = 0 }, "warm_tolerance"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Target = "http://127.0.0.1:1/v1"
			tc.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("%v, want an error on %s", err, tc.field)
			}
		})
	}
	c := DefaultConfig()
	c.Target = "http://127.0.0.1:1/v1"
	if err := c.Validate(); err != nil || c.Cycles() != 1 {
		t.Fatalf("defaults: %v, %d cycles", err, c.Cycles())
	}
	c.StartCmd = "x"
	if c.Cycles() != DefaultRepeat {
		t.Fatalf("%d cycles with a start command", c.Cycles())
	}
}

// A gateway that answers 503 while it scales up: the failed probes are
// counted, the first token comes after them, and the quick successful
// request does not make the cycle a warm start.
func TestGateway503WhileScaling(t *testing.T) {
	s, err := simhttp.New(sim.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ready := time.Now().Add(400 * time.Millisecond)
	h := s.Handler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().Before(ready) {
			http.Error(w, "scaling up", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer gw.Close()
	cfg := DefaultConfig()
	cfg.Target = gw.URL + "/v1"
	rep, err := Run(t.Context(), cfg, clientFor(cfg.Target), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cycles[0]
	if c.WarmStart || c.ProbeFailures["http_error 503"] < 2 || c.Probes != c.ProbeFailures["http_error 503"]+1 {
		t.Fatalf("warm start %v, probes %d, failures %v; want ≥ 2 503s, then a success, and no warm start", c.WarmStart, c.Probes, c.ProbeFailures)
	}
	if *c.FirstTokenS < 0.4 || *c.ColdTTFTS > 0.2 {
		t.Fatalf("first token %.3fs, cold TTFT %.3fs; want ≥ 0.4s and a quick request", *c.FirstTokenS, *c.ColdTTFTS)
	}
}

// The spread's median is the nearest rank, the ⌈N/2⌉-th smallest (as for
// repeated runs), not the mean of the middle two (review 16).
func TestSpreadMedianNearestRank(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	rep := &Report{Mode: ModeScaleFromZero, Cycles: []Cycle{
		{N: 1, FirstTokenS: v(1.2)}, {N: 2, FirstTokenS: v(0.9)},
	}}
	s := summarize(rep)
	if len(s) != 1 || s[0].Median != 0.9 || s[0].Min != 0.9 || s[0].Max != 1.2 {
		t.Fatalf("spread %+v; want median 0.9 (the 1st of 2 smallest)", s)
	}
	rep.Cycles = append(rep.Cycles, Cycle{N: 3, FirstTokenS: v(3)}, Cycle{N: 4, FirstTokenS: v(2)})
	if m := summarize(rep)[0].Median; m != 1.2 {
		t.Fatalf("median of 0.9, 1.2, 2, 3 = %v; want 1.2", m)
	}
}

// The console table: the note is a cell of its own, apart from the
// probes and failed probes ("1  none  warm start", not "nonewarm start"), and no line ends in spaces
// (review 11).
func TestTableNoteApart(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	rep := &Report{Mode: ModeScaleFromZero, Cycles: []Cycle{
		{N: 1, FirstTokenS: v(0.024), ColdTTFTS: v(0.0242), WarmS: v(0.167), WarmTTFTS: v(0.024), Probes: 1, WarmStart: true},
		{N: 2, FirstTokenS: v(2.1), ColdTTFTS: v(2.1), WarmS: v(2.3), WarmTTFTS: v(0.024), Probes: 12},
	}}
	rep.Summary = summarize(rep)
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "nonewarm start") || !regexp.MustCompile(`  1  none +warm start`).MatchString(out) {
		t.Fatalf("the note is glued to the probes:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Fatalf("line %q ends in spaces:\n%s", l, out)
		}
	}
}

// A 404 for a model the server does not list stops the cycle at once with
// ErrModel naming the served model (review 12); a gateway's 404 while it
// scales up (its /models not a list, or listing the model) is retried.
func TestModelNotServed(t *testing.T) {
	srv, base, err := simhttp.Listen(t.Context(), "127.0.0.1:0", sim.DefaultConfig(), nil) // serves "surge-sim"
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Target, cfg.StartTimeout = base, 20*time.Second // without the check: ErrNotReady after 20 s
	client := clientFor(base)
	client.Model = "llama"
	rep, err := Run(t.Context(), cfg, client, io.Discard)
	if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), `lists "surge-sim"`) || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("err %v, want ErrModel naming the served model and --model", err)
	}
	if c := rep.Cycles[0]; c.Probes != 1 {
		t.Fatalf("%d probes, want 1: a wrong model is not retried", c.Probes)
	}

	for _, listsModel := range []bool{false, true} {
		s, err := simhttp.New(sim.DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ready := time.Now().Add(300 * time.Millisecond)
		h := s.Handler()
		gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if time.Now().Before(ready) && !(listsModel && strings.HasSuffix(r.URL.Path, "/models")) {
				http.Error(w, "no route yet", http.StatusNotFound)
				return
			}
			h.ServeHTTP(w, r)
		}))
		cfg.Target = gw.URL + "/v1"
		rep, err := Run(t.Context(), cfg, clientFor(cfg.Target), io.Discard)
		gw.Close()
		if err != nil || rep.Cycles[0].ProbeFailures["http_error 404"] < 2 || rep.Cycles[0].FirstTokenS == nil {
			t.Fatalf("/models lists the model %v: err %v, cycle %+v; want 404s retried, then a token", listsModel, err, rep.Cycles[0])
		}
	}
}
