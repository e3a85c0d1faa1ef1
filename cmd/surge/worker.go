package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/fleet"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/run"
)

// fleetFlags are run's, burst's and capacity's coordinator flags.
type fleetFlags struct {
	workers int
	listen  string
	wait    time.Duration
}

// addFleetFlags registers --workers, --coordinator-listen and --workers-wait.
func addFleetFlags(fs *pflag.FlagSet) *fleetFlags {
	ff := &fleetFlags{}
	fs.IntVar(&ff.workers, "workers", 0, "coordinator mode: split the arrivals between N surge worker processes (arrival Seq mod N) that send them and stream their records back; one run folder, one report, one clock")
	fs.StringVar(&ff.listen, "coordinator-listen", "127.0.0.1:7777", "with --workers: where workers reach the coordinator (host:port; :7777 for other machines)")
	fs.DurationVar(&ff.wait, "workers-wait", 2*time.Minute, "with --workers: how long to wait for the workers to register before giving up (exit 3)")
	return ff
}

// check refuses what --workers cannot do, before anything is prepared.
func (ff *fleetFlags) check(f *flags, o *run.Options, virtual bool) error {
	if ff == nil || ff.workers == 0 {
		return nil
	}
	switch {
	case ff.workers < 0:
		return usageErr("--workers: must be ≥ 1, got %d", ff.workers)
	case virtual:
		return usageErr("--workers: workers send live requests; --simulate runs in virtual time in this process — drop one of them")
	}
	if err := o.FleetCheck(); err != nil {
		return f.explain(err)
	}
	return nil
}

// start listens, waits for the workers and sets env.Fleet; the returned
// function ends the workers (they exit 0).
func (ff *fleetFlags) start(cmd *cobra.Command, env *run.Env) (func(), error) {
	if ff == nil || ff.workers == 0 {
		return func() {}, nil
	}
	log := cmd.ErrOrStderr()
	c, err := fleet.Listen(ff.listen, ff.workers, fleet.Config{Version: toolVersion(), Log: log})
	if err != nil {
		return nil, &exitError{exitUsage, fmt.Errorf("--coordinator-listen: %w", err)}
	}
	fmt.Fprintf(log, "coordinator: listening on %s; waiting for %d %s (surge worker --coordinator %s)\n", c.URL(), ff.workers, fleet.Plural(ff.workers, "worker", "workers"), c.URL())
	if host, _, _ := net.SplitHostPort(ff.listen); env.Simulated && !isLoopback(host) {
		fmt.Fprintln(log, "WARNING: the built-in simulator listens on loopback, so only workers on this machine reach it; for workers elsewhere serve it with `surge sim --addr :8000` and pass --target")
	}
	if err := c.Wait(cmd.Context(), ff.wait); err != nil {
		c.Close()
		if cmd.Context().Err() != nil {
			return nil, &exitError{exitSLO, errors.New("interrupted before the run started: " + err.Error() + "; nothing was written")}
		}
		return nil, &exitError{exitTarget, err}
	}
	env.Fleet = c
	return func() { c.Close() }, nil
}

func newWorkerCmd() *cobra.Command {
	var cfg fleet.WorkerConfig
	var keyEnv, keyFile string
	var headers []string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Send a share of a coordinated run's load (surge run|burst|capacity --workers N)",
		Long: `Register with a coordinator (surge run, burst or capacity started with
--workers N) and send the arrivals it hands out — arrival Seq mod N = this
worker's index — with the normal load generator, on the coordinator's clock
(the offset between the two clocks is measured at registration and at every
run). Records stream back as they complete; the coordinator writes the one
run folder and report.

The worker needs the same surge version as the coordinator (another is
refused, both named). It reads its API key from its own environment or
--api-key-file, and its headers from --header, exactly as surge run does:
the coordinator never sends a key or a header. It runs until the coordinator
says there is no more work.

Exit codes: 0 the coordinator finished; 1 interrupted (Ctrl-C: requests in
flight are cancelled, their records and the run's last ones sent, and the
coordinator records the worker as interrupted; its arrivals not yet sent
become generator_drop records naming the interruption); 2 refused (another version,
a name taken, a bad URL); 3 the coordinator was unreachable, or stopped
answering during a run.`,
		Example: `  # on the coordinator's machine
  surge burst --target http://10.0.0.9:8000/v1 --model M --baseline-rps 50 \
    --workers 2 --coordinator-listen :7777

  # on each of two other machines
  OPENAI_API_KEY=… surge worker --coordinator http://10.0.0.5:7777 --name gen-a

  # two workers and the coordinator on one machine, against the built-in simulator
  surge run --rate 20 --duration 30s --prompt-tokens 64 --output-tokens 32 --workers 2 &
  surge worker --coordinator http://127.0.0.1:7777 --name w0 &
  surge worker --coordinator http://127.0.0.1:7777 --name w1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Coordinator == "" {
				return usageErr("--coordinator: required, e.g. --coordinator http://10.0.0.5:7777")
			}
			if cfg.Name == "" {
				host, _ := os.Hostname()
				cfg.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
			}
			if keyEnv == run.DefaultAPIKeyEnv {
				keyEnv = "" // the default variable may be unset: endpoints without auth
			}
			key, _, err := openai.LoadAPIKey(keyEnv, keyFile)
			if err != nil {
				return usageErr("%v", err)
			}
			cfg.APIKey = key
			for _, h := range headers {
				name, val, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(name) == "" {
					return usageErr("--header: %q is not \"Name: value\"", h)
				}
				if cfg.Headers == nil {
					cfg.Headers = map[string]string{}
				}
				cfg.Headers[strings.TrimSpace(name)] = strings.TrimSpace(val)
			}
			if err := fleet.CheckURL(cfg.Coordinator); err != nil {
				return usageErr("%v", err)
			}
			cfg.Version, cfg.Log = toolVersion(), cmd.ErrOrStderr()
			return workerExit(fleet.RunWorker(cmd.Context(), cfg))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Coordinator, "coordinator", "", "the coordinator's URL, e.g. http://10.0.0.5:7777 (required)")
	fs.StringVar(&cfg.Name, "name", "", "this worker's name in the coordinator's manifest and report (default: host-pid)")
	fs.StringVar(&keyEnv, "api-key-env", run.DefaultAPIKeyEnv, "environment variable that holds the target's API key (never pass a key as a flag)")
	fs.StringVar(&keyFile, "api-key-file", "", "file that holds the target's API key")
	fs.StringArrayVar(&headers, "header", nil, "extra request header \"Name: value\" (repeatable; values are never logged or sent to the coordinator)")
	fs.DurationVar(&cfg.ConnectTimeout, "connect-timeout", 30*time.Second, "keep trying to reach the coordinator this long at the start (it may start after its workers)")
	return cmd
}

// isLoopback reports whether host (of a listen address) is loopback only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// workerExit maps a worker's end to its exit code.
func workerExit(err error) error {
	var ue *fleet.UnreachableError
	var re *fleet.RefusedError
	var nc *fleet.NotCoordinatorError
	var ie *fleet.InterruptedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return &exitError{exitSLO, ie}
	case errors.As(err, &ue), errors.As(err, &nc):
		return &exitError{exitTarget, err}
	case errors.As(err, &re):
		return &exitError{exitUsage, err}
	case errors.Is(err, context.Canceled):
		return &exitError{exitSLO, errors.New("interrupted: requests in flight were cancelled and their records sent")}
	}
	return &exitError{exitInternal, err}
}
