package run

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/live"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/otlp"
	"github.com/surge-bench/surge/internal/push"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
	"github.com/surge-bench/surge/internal/webview"
	"github.com/surge-bench/surge/internal/workload"
)

// Env is a prepared target: where requests go, where engine metrics come
// from, and the live view's plumbing. Build it with Prepare (every
// configuration error is found there, before any file is written) and
// Close it when done.
type Env struct {
	Opts       Options
	BaseURL    string // "" in virtual time
	MetricsURL string
	Preset     string
	Simulated  bool // the target is surge's simulator
	Virtual    bool // runs execute in virtual time
	KeySource  string
	Version    string
	Live       io.Writer // where the live view draws (nil = none)
	Logger     *slog.Logger
	// Calibration is how prompts are sized for the target's tokenizer,
	// measured once by Prepare (see package calibrate).
	Calibration calibrate.Result
	// CalibrationText is a reloaded run's calibration as its files
	// describe it (Reload; Calibration is then zero).
	CalibrationText string
	// Dataset is the file of real prompts (Options.Dataset), read once by
	// Prepare; nil for synthetic prompts.
	Dataset *workload.Dataset
	// Fleet, when set, sends live open-loop runs to workers (--workers,
	// fleet.go) instead of this process's load generator.
	Fleet Fleet

	key       string
	name      string  // the target as recorded, for a reloaded run
	network   Network // nil: the real network
	server    *simhttp.Server
	exporter  *live.Exporter
	pusher    *push.Pusher    // --metrics-out (push.go)
	web       *webview.Server // --web (publish.go)
	runID     string          // the command folder's name, for the pushed labels
	timerUs   float64         // probeTimer's overshoot (µs), measured once before live runs
	pushOnce  sync.Once
	pushStats []push.Stats
	spans     *otlp.Receiver              // the OTLP trace receiver (--otlp-listen), if any
	current   atomic.Pointer[live.Source] // the run under way, for the exporter
	budget    *meter                      // the command's budget and spend, shared by its runs (budget.go)
	// startPending is set once the command's first run has waited for
	// --start-at (shard.go): the start time is the command's, as the budget.
	startPending atomic.Bool
	// console is where the command prints its own lines (the live view's
	// writer, also with --quiet): the --start-at wait and its warning.
	console io.Writer
}

// ConfigError marks an error in the user's configuration (exit code 2).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// configErr wraps err as a ConfigError (nil stays nil).
func configErr(err error) error {
	if err == nil {
		return nil
	}
	return &ConfigError{err}
}

// Setup is what Prepare needs besides the options.
type Setup struct {
	View    io.Writer    // where the live view draws (nil or Options.Quiet: none)
	Logger  *slog.Logger // warnings (never content) when there is no View (with one, they are its "WARNING: …" lines); nil: none
	Version string       // surge's version, for the manifest
	// Network, when set, replaces the real network: the in-process
	// simulator listens on it and every client dials it. Tests pass an
	// in-memory one (memnet) to run under testing/synctest.
	Network Network
	// Interrupt, when set, is cancelled by Ctrl-C: it ends the slow steps
	// of preparing (prompt calibration's probes) early, and PrepareWith
	// then returns ErrInterrupted. The context given to PrepareWith must
	// outlive the run (the simulator serves on it).
	Interrupt context.Context
}

// ErrInterrupted is returned by PrepareWith when Setup.Interrupt ended
// before the run could start: nothing was run and nothing written.
var ErrInterrupted = errors.New("interrupted before the run started (while measuring the target's tokenizer); nothing was written")

// Network is a place to listen and dial, like the real network.
type Network interface {
	Listen(ctx context.Context, addr string) (net.Listener, error)
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Prepare validates o and resolves the target. With no target it starts
// the simulated engine in-process on a loopback port — or, when virtual is
// true, prepares to run in virtual time against the engine model.
func Prepare(ctx context.Context, o Options, virtual bool, view io.Writer, logger *slog.Logger, version string) (*Env, error) {
	return PrepareWith(ctx, o, virtual, Setup{View: view, Logger: logger, Version: version})
}

// Check finds the configuration errors PrepareWith would, without
// preparing anything: no simulator started, no key read, nothing sent
// (--dry-run). A *ConfigError.
func Check(o Options, virtual bool) error {
	if err := o.Validate(); err != nil {
		return configErr(err)
	}
	if err := checkWatch(&o, virtual); err != nil {
		return configErr(err)
	}
	if virtual && o.Target != "" {
		return configErr(&field.Error{Field: "simulate", Message: "runs against the engine model in virtual time; it cannot be combined with --target"})
	}
	if virtual && len(o.Sim.Quirks) > 0 {
		return configErr(&field.Error{Field: "sim.quirks", Message: "quirks live in the simulator's HTTP facade, which virtual time (--simulate) does not use; drop --simulate or the quirks"})
	}
	if err := checkCACert(o.CACert); err != nil {
		return configErr(err)
	}
	return configErr(checkShard(o, virtual))
}

// PrepareWith is Prepare with every setting of the setup.
func PrepareWith(ctx context.Context, o Options, virtual bool, su Setup) (*Env, error) {
	view, logger, version := su.View, su.Logger, su.Version
	if err := Check(o, virtual); err != nil {
		return nil, err
	}
	SoftMemoryLimit()
	dataset, err := o.LoadDataset()
	if err != nil {
		return nil, configErr(err)
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// Warnings (the scraper's, the --watch-k8s watch's, the Env's own) are
	// lines of the command's console, in its "WARNING: …" format like the
	// rest of its output, not slog records; without a console they go to
	// the logger given.
	h := logger.Handler()
	if view != nil {
		h = &consoleHandler{w: view, mu: &sync.Mutex{}, next: h}
	}
	// Every run of an experiment has its own scraper, which notes a missing
	// metric at its first scrape: say each such warning once per command.
	logger = slog.New(&onceHandler{h: h, seen: &sync.Map{}})
	e := &Env{Opts: o, Logger: logger, Version: version, MetricsURL: o.MetricsURL, Preset: o.MetricsPreset, KeySource: "none", network: su.Network, Dataset: dataset, budget: newMeter(&o)}
	if dataset != nil && dataset.Skipped > 0 {
		what, more := "conversation", ""
		if dataset.Skipped > 1 {
			what += "s"
		}
		if dataset.Skipped > len(dataset.SkippedRows) {
			more = "…"
		}
		logger.Warn(fmt.Sprintf("dataset %s: %d %s without a human turn of text skipped (%v%s); %d rows remain",
			dataset.Path, dataset.Skipped, what, dataset.SkippedRows, more, dataset.Len()))
	}
	if virtual && o.Retries > 0 {
		// The engine model answers directly, without the HTTP client.
		logger.Warn("--retries has no effect with --simulate: virtual time does not retry; to see what retries add, run against surge sim over HTTP")
	}
	e.console = view
	if !o.Quiet {
		e.Live = view
	}
	switch {
	case virtual:
		e.Simulated, e.Virtual = true, true
	case o.Target == "":
		e.Simulated = true
	default:
		e.BaseURL = strings.TrimRight(o.Target, "/")
		envName := o.APIKeyEnv
		if envName == DefaultAPIKeyEnv {
			envName = "" // the default variable may be unset: endpoints without auth
		}
		key, src, err := openai.LoadAPIKey(envName, o.APIKeyFile)
		if err != nil {
			return nil, configErr(err)
		}
		e.key = key
		if src != "" {
			e.KeySource = src
		}
		// The client configuration is checked once here, not when the
		// first run starts.
		c, err := openai.New(e.ClientConfig(1), time.Now())
		if err != nil {
			return nil, configErr(err)
		}
		c.CloseIdle()
	}
	if o.PrometheusAddr != "" {
		exp, err := live.Serve(o.PrometheusAddr, e.liveStatus)
		if err != nil {
			return nil, configErr(&field.Error{Field: "prometheus_addr", Message: err.Error()})
		}
		e.exporter = exp
	}
	e.startPusher()
	if !e.Virtual && e.network == nil {
		// The self-accuracy section's timer resolution. Not on a network
		// of tests' own: they run in a synctest bubble, whose clock the
		// probe's sleeps would move.
		e.timerUs = probeTimer()
	}
	if o.Web != "" {
		srv, err := webview.Listen(o.Web, "surge")
		if err != nil {
			e.Close()
			return nil, configErr(&field.Error{Field: "web", Message: err.Error()})
		}
		e.web = srv
	}
	if o.OTLPListen != "" {
		var ln net.Listener
		var err error
		if e.network != nil {
			ln, err = e.network.Listen(ctx, o.OTLPListen)
		} else {
			ln, err = net.Listen("tcp", o.OTLPListen)
		}
		if err != nil {
			e.Close()
			return nil, configErr(&field.Error{Field: "otlp_listen", Message: fmt.Sprintf("cannot listen on %s: %v", o.OTLPListen, listenCause(err))})
		}
		e.spans = otlp.Serve(ln)
	}
	if e.Simulated && !e.Virtual {
		var srv *simhttp.Server
		var base string
		var err error
		opts := []simhttp.Option{simhttp.WithModel(o.Model)}
		if e.spans != nil {
			// The simulator exports its spans to surge's own receiver, as
			// vLLM with --otlp-traces-endpoint would.
			var hc *http.Client
			if e.network != nil {
				hc = &http.Client{Transport: &http.Transport{DialContext: e.network.DialContext}}
			}
			opts = append(opts, simhttp.WithSpanExport("http://"+e.spans.Addr()+"/v1/traces", 0, hc))
		}
		if e.network != nil {
			var ln net.Listener
			if ln, err = e.network.Listen(ctx, "127.0.0.1:0"); err == nil {
				srv, base, err = simhttp.Serve(ctx, ln, o.Sim, logger, opts...)
			}
		} else {
			srv, base, err = simhttp.Listen(ctx, "127.0.0.1:0", o.Sim, logger, opts...)
		}
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("run: start the simulator: %w", err)
		}
		e.server, e.BaseURL = srv, base
		e.MetricsURL = strings.TrimSuffix(base, "/v1") + "/metrics"
		e.Preset = "sim"
	}
	cctx := ctx
	if su.Interrupt != nil {
		var stop context.CancelFunc
		cctx, stop = context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(su.Interrupt, stop)()
	}
	e.Calibration = e.calibratePrompts(cctx)
	if su.Interrupt != nil && su.Interrupt.Err() != nil {
		e.Close()
		return nil, ErrInterrupted
	}
	return e, nil
}

// listenCause is the cause of a listen error without the operation,
// address and system call net.OpError repeats ("address already in use").
func listenCause(err error) error {
	var sc *os.SyscallError
	if errors.As(err, &sc) {
		return sc.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// OTLPAddr is the address the OTLP trace receiver listens on ("" without one).
func (e *Env) OTLPAddr() string {
	if e.spans == nil {
		return ""
	}
	return e.spans.Addr()
}

// checkCACert reads a PEM CA file, so that a wrong path or a file without
// a certificate is a configuration error before anything runs.
func checkCACert(path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return &field.Error{Field: "ca_cert", Message: fmt.Sprintf("cannot read %s: %v", path, errors.Unwrap(err))}
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return &field.Error{Field: "ca_cert", Message: fmt.Sprintf("%s holds no PEM certificate", path)}
	}
	return nil
}

// Close stops the in-process simulator and the exporter, if any.
func (e *Env) Close() error {
	e.FinishPush(e.console)
	e.web.Close()
	if e.exporter != nil {
		e.exporter.Close()
	}
	var err error
	if e.server != nil {
		err = e.server.Close() // first: it sends its last spans
	}
	if e.spans != nil {
		e.spans.Close()
	}
	return err
}

// TargetName describes the target for reports (never with credentials).
func (e *Env) TargetName() string {
	switch {
	case e.name != "":
		return e.name
	case e.Virtual:
		return "engine model in virtual time (--simulate)"
	case e.Simulated:
		return "built-in simulator" // its loopback port is this process's alone: meaningless in a report
	}
	return record.RedactURL(e.BaseURL)
}

// SimEvents returns the in-process simulator's scaling milestones from
// origin on, with At counted from origin (a run's start) rather than from
// the simulator's own start: the simulator serves every run of an
// experiment, and its earlier runs' milestones are not this run's.
func (e *Env) SimEvents(origin time.Time) []sim.Event {
	if e.server == nil {
		return nil
	}
	shift := origin.Sub(e.server.Origin())
	var out []sim.Event
	for _, ev := range e.server.Events() {
		if ev.At >= shift {
			ev.At -= shift
			out = append(out, ev)
		}
	}
	return out
}

// ClientConfig is the client configuration every request to the target
// uses — a run's and the settle gate's probes alike.
func (e *Env) ClientConfig(maxConns int) openai.Config {
	o := &e.Opts
	c := openai.DefaultConfig()
	c.BaseURL, c.Model, c.API, c.Stream = e.BaseURL, o.Model, o.API, o.Stream
	c.APIKey = e.key
	c.Timeout, c.Retries = o.Timeout, o.Retries
	c.CACertFile, c.InsecureSkipVerify = o.CACert, o.Insecure
	c.MaxConns = maxConns
	c.ReplicaHeader = o.ReplicaHeader
	c.TokenBudget = o.TokenDeadline
	c.Transport = o.HTTPClient
	c.GatewayTiming = o.GatewayTiming
	if e.network != nil {
		c.Dial = e.network.DialContext
	}
	if len(o.Headers) > 0 {
		c.Headers = map[string]string{}
		for _, h := range o.Headers {
			name, val, _ := strings.Cut(h, ":")
			c.Headers[strings.TrimSpace(name)] = strings.TrimSpace(val)
		}
	}
	return c
}

// ScrapeClient is the HTTP client engine metrics are scraped with: nil
// (scrape's own) on the real network.
func (e *Env) ScrapeClient() *http.Client {
	if e.network == nil {
		return nil
	}
	return &http.Client{Transport: &http.Transport{DialContext: e.network.DialContext, MaxIdleConnsPerHost: 1}}
}

// liveStatus is what the exporter serves: the run under way, if any.
func (e *Env) liveStatus() live.Status {
	if src := e.current.Load(); src != nil {
		return (*src)()
	}
	return live.Status{}
}

// onceHandler passes each distinct record (level, message and attributes)
// at level Warn or above to h once and drops its repeats: the runs of a
// burst or a sweep each scrape the same engine and would repeat the same
// warnings.
type onceHandler struct {
	h     slog.Handler
	seen  *sync.Map
	attrs string // the handler's own attributes, part of the key
}

// Enabled is h's.
func (o *onceHandler) Enabled(ctx context.Context, l slog.Level) bool { return o.h.Enabled(ctx, l) }

// Handle passes r on unless an equal warning was passed before.
func (o *onceHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(r.Level.String() + "\x00" + o.attrs + "\x00" + r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString("\x00" + a.String())
			return true
		})
		if _, dup := o.seen.LoadOrStore(b.String(), struct{}{}); dup {
			return nil
		}
	}
	return o.h.Handle(ctx, r)
}

// WithAttrs keeps the set of warnings seen.
func (o *onceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	k := o.attrs
	for _, a := range as {
		k += "\x00" + a.String()
	}
	return &onceHandler{h: o.h.WithAttrs(as), seen: o.seen, attrs: k}
}

// WithGroup keeps the set of warnings seen.
func (o *onceHandler) WithGroup(name string) slog.Handler {
	return &onceHandler{h: o.h.WithGroup(name), seen: o.seen, attrs: o.attrs + "\x00group " + name}
}
