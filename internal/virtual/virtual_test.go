package virtual

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// Configurations a run cannot execute are *ConfigErrors whose message names
// the flag or field at fault.
func TestConfigErrors(t *testing.T) {
	loop := schedule.ClosedLoop{Users: 2, Duration: 10 * time.Second, Phase: "level"}
	const faults = "a closed-loop sweep in virtual time does not model mid-stream faults (--fault-reset, --fault-malformed, --fault-stall, --fault-slow-headers): run it against the HTTP simulator (without --simulate)"
	cases := []struct {
		name   string
		edit   func(*Config)
		loop   func(*schedule.ClosedLoop) // edits the (valid) closed loop; nil = none
		noGen  bool
		closed bool // the error is the closed loop's only
		want   string
	}{
		{"invalid engine model", func(c *Config) { c.Sim.MaxNumSeqs = 0 }, nil, false, false, "sim: max_num_seqs: must be ≥ 1, got 0"},
		{"fault fractions over 1", func(c *Config) { c.Sim.Fault500, c.Sim.Fault503 = 0.6, 0.6 }, nil, false, false, "sim: fault_500+fault_503+fault_reset+fault_malformed+fault_stall+fault_slow_headers: fractions must sum to ≤ 1, got 1.2"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, nil, false, false, "virtual: timeout: must be ≥ 0 (0 = none), got -1s"},
		{"negative scrape interval", func(c *Config) { c.ScrapeInterval = -time.Second }, nil, false, false, "virtual: scrape interval: must be ≥ 0 (0 = no samples), got -1s"},
		{"no generator", func(*Config) {}, nil, true, false, "virtual: no workload generator"},

		{"closed loop with resets", func(c *Config) { c.Sim.FaultReset = 0.1 }, nil, false, true, faults},
		{"closed loop with malformed chunks", func(c *Config) { c.Sim.FaultMalformed = 0.1 }, nil, false, true, faults},
		{"closed loop with stalls", func(c *Config) { c.Sim.FaultStall = 0.1 }, nil, false, true, faults},
		{"closed loop with slow headers", func(c *Config) { c.Sim.FaultSlowHeaders = 0.1 }, nil, false, true, faults},
		{"closed loop without users", func(*Config) {}, func(l *schedule.ClosedLoop) { l.Users = 0 }, false, true, "schedule: closed loop: users: must be ≥ 1, got 0"},
		{"closed loop without duration", func(*Config) {}, func(l *schedule.ClosedLoop) { l.Duration = 0 }, false, true, "schedule: closed loop: duration: must be > 0, got 0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			tc.edit(&cfg)
			var gen *workload.Generator
			if !tc.noGen {
				gen = fixedGen(t, 100, 20)
			}
			l := loop
			if tc.loop != nil {
				tc.loop(&l)
			}
			check := func(what string, out *Output, err error) {
				t.Helper()
				var ce *ConfigError
				if !errors.As(err, &ce) || err.Error() != tc.want || out != nil {
					t.Errorf("%s: error %v (%T), output %v; want *ConfigError %q", what, err, err, out != nil, tc.want)
				}
			}
			out, err := Closed(context.Background(), cfg, gen, l)
			check("Closed", out, err)
			out, err = Open(context.Background(), cfg, gen, constant(t, "p", 1, time.Second), time.Second, nil)
			if tc.closed {
				if err != nil {
					t.Errorf("Open: %v; the open loop runs this configuration", err)
				}
				return
			}
			check("Open", out, err)
		})
	}
}

// A cancelled context ends either loop with its error and no output.
func TestCancelled(t *testing.T) {
	gen := fixedGen(t, 100, 20)
	arr := constant(t, "p", 5, 20*time.Second)
	loop := schedule.ClosedLoop{Users: 4, Duration: 20 * time.Second, Phase: "level"}
	cases := []struct {
		name string
		run  func(ctx context.Context, cancel context.CancelFunc) (*Output, error)
	}{
		{"open, before the start", func(ctx context.Context, cancel context.CancelFunc) (*Output, error) {
			cancel()
			return Open(ctx, baseConfig(), gen, arr, 20*time.Second, nil)
		}},
		{"open, while the stopper is asked", func(ctx context.Context, cancel context.CancelFunc) (*Output, error) {
			st := &stopFunc{from: 2 * time.Second, stop: func(call int, _ []record.Record, _ time.Duration) string {
				cancel()
				return ""
			}}
			return Open(ctx, baseConfig(), gen, arr, 20*time.Second, st)
		}},
		{"open, when the stopper stops", func(ctx context.Context, cancel context.CancelFunc) (*Output, error) {
			st := &stopFunc{from: 2 * time.Second, stop: func(call int, _ []record.Record, _ time.Duration) string {
				cancel()
				return "stop"
			}}
			return Open(ctx, baseConfig(), gen, arr, 20*time.Second, st)
		}},
		{"closed, before the start", func(ctx context.Context, cancel context.CancelFunc) (*Output, error) {
			cancel()
			return Closed(ctx, baseConfig(), gen, loop)
		}},
		{"closed, past the deadline", func(ctx context.Context, cancel context.CancelFunc) (*Output, error) {
			ctx, c := context.WithDeadline(ctx, time.Now().Add(-time.Second))
			defer c()
			return Closed(ctx, baseConfig(), gen, loop)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, err := tc.run(ctx, cancel)
			ctxErr := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
			if !ctxErr || out != nil {
				t.Fatalf("error %v, output %v; want the context's error and no output", err, out != nil)
			}
		})
	}
}

// ConfigError keeps the cause for errors.Is and errors.As.
func TestConfigErrorUnwraps(t *testing.T) {
	cause := errors.New("sim: x: bad")
	err := error(&ConfigError{cause})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "sim: x: bad") {
		t.Errorf("%v does not wrap its cause", err)
	}
}

// A request the engine refuses as too long for max_model_len is an
// http_error with status 400, as a live run records it — never ok.
func TestTooLongRequestIsHTTPError(t *testing.T) {
	cfg := baseConfig()
	cfg.Sim.MaxModelLen = 256
	out, err := Open(context.Background(), cfg, fixedGen(t, 300, 20), constant(t, "p", 2, 5*time.Second), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Records) == 0 {
		t.Fatal("no records")
	}
	for _, r := range out.Records {
		if r.Status != 400 || r.Outcome != record.HTTPError || r.Good {
			t.Fatalf("record %d: status %d outcome %s good %v; want 400 http_error, not good", r.Seq, r.Status, r.Outcome, r.Good)
		}
	}
}

// The closed loop records a refused request the same way.
func TestTooLongRequestIsHTTPErrorClosed(t *testing.T) {
	cfg := baseConfig()
	cfg.Sim.MaxModelLen = 256
	out, err := Closed(context.Background(), cfg, fixedGen(t, 300, 20), schedule.ClosedLoop{Users: 2, Duration: 5 * time.Second, Phase: "level"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Records) == 0 {
		t.Fatal("no records")
	}
	for _, r := range out.Records {
		if r.Status != 400 || r.Outcome != record.HTTPError {
			t.Fatalf("record %d: status %d outcome %s; want 400 http_error", r.Seq, r.Status, r.Outcome)
		}
	}
}
