package simhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/surge-bench/surge/internal/sim"
)

// MaxBodyBytes is the largest request body accepted; a larger one is
// answered 413.
const MaxBodyBytes = 8 << 20

// DefaultModel is the model name served when the configuration names none.
const DefaultModel = "surge-sim"

// ReplicaHeader names the response header that tells which replica of the
// simulated cluster served a request ("r0", "r1", …).
const ReplicaHeader = "X-Surge-Replica"

// Server is the simulated engine behind an OpenAI-compatible HTTP API.
// It owns a sim.Cluster and drives it in real time: the cluster's clock is
// the time elapsed since New.
type Server struct {
	log         *slog.Logger
	model       string
	maxModelLen int
	stepBase    time.Duration // sim.Config.StepBase: a stream that waited longer queued (truncate-on-overload)
	reasoning   int           // sim.Config.ReasoningTokens
	tok         textTokens    // the simulated tokenizer (sim.Config.TextTokens)
	tokenize    string        // style of /tokenize (sim.Config.Tokenize)
	prefix      sim.Config    // the prefix cache's settings (PrefixCacheTokens, block size, bytes per token)
	origin      time.Time     // sim time 0; wall time of the server's start
	metrics     *metrics
	handler     http.Handler

	mu      sync.Mutex // guards cluster; held for Submit, Cancel, Advance, Snapshot
	cluster *sim.Cluster

	wake       chan struct{} // 1-buffered: a submit changed the next event
	done       chan struct{} // closed by Close
	driverOnce sync.Once
	driverDone chan struct{} // closed when the driver returns; nil if never started

	hmu      sync.Mutex // guards closed, started and the Add side of handlers
	closed   bool
	started  bool
	handlers sync.WaitGroup

	httpSrv   *http.Server
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
	stopCtx   func() bool // detaches Listen's context; nil otherwise

	bufs sync.Pool // *[]byte write buffers of streams

	spans   *spanExporter // WithSpanExport; nil: no spans
	timings bool          // WithTimings
	quirks  quirks        // sim.Config.Quirks

	embedDims int // dimensions of an embedding (WithEmbeddingDimensions)

	instances *instanceCache // JSON Schema instances of recent requests
	gateways  *gateways      // the gateway in front (quotas); nil: none. Its buckets are guarded by mu.
}

// quirks are the sim.Config.Quirks that are on (sim.Quirk*).
type quirks struct {
	bufferedStream, noUsage, ignoreStop, ignoreMaxTokens, badToolArgs,
	schemaViolations, noRetryAfter, truncateOnOverload, closeAfterResponse bool
}

func quirksOf(c sim.Config) quirks {
	return quirks{
		bufferedStream:     c.HasQuirk(sim.QuirkBufferedStream),
		noUsage:            c.HasQuirk(sim.QuirkNoUsage),
		ignoreStop:         c.HasQuirk(sim.QuirkIgnoreStop),
		ignoreMaxTokens:    c.HasQuirk(sim.QuirkIgnoreMaxTokens),
		badToolArgs:        c.HasQuirk(sim.QuirkBadToolArgs),
		schemaViolations:   c.HasQuirk(sim.QuirkSchemaViolations),
		noRetryAfter:       c.HasQuirk(sim.QuirkNoRetryAfter),
		truncateOnOverload: c.HasQuirk(sim.QuirkTruncateOnOverload),
		closeAfterResponse: c.HasQuirk(sim.QuirkCloseAfterResponse),
	}
}

// WithTimings makes the server answer like llama.cpp's llama-server: a
// "timings" object (prompt_ms, predicted_ms, cache_n, …) after the last
// streamed chunk and in a non-streamed body.
func WithTimings() Option { return func(s *Server) { s.timings = true } }

// Option changes a setting of the server that sim.Config does not hold.
type Option func(*Server)

// DefaultEmbeddingDimensions is the length of the vectors /v1/embeddings
// answers unless WithEmbeddingDimensions sets another (384, as
// all-MiniLM-L6-v2 and bge-small).
const DefaultEmbeddingDimensions = 384

// WithEmbeddingDimensions sets the length of the vectors /v1/embeddings
// answers (default DefaultEmbeddingDimensions); n < 1 keeps the default.
func WithEmbeddingDimensions(n int) Option {
	return func(s *Server) {
		if n >= 1 {
			s.embedDims = n
		}
	}
}

// WithModel sets the model name served (default DefaultModel). An empty
// name keeps the default.
func WithModel(name string) Option {
	return func(s *Server) {
		if name != "" {
			s.model = name
		}
	}
}

// New builds the cluster of cfg and the server around it. A nil logger
// discards logs. The driver starts with Handler or Start; call Close to
// stop it.
func New(cfg sim.Config, logger *slog.Logger, opts ...Option) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := sim.NewCluster(cfg)
	if err != nil {
		return nil, fmt.Errorf("simhttp: %w", err)
	}
	s := &Server{
		log:         logger,
		model:       DefaultModel,
		maxModelLen: cfg.MaxModelLen,
		stepBase:    cfg.StepBase,
		reasoning:   cfg.ReasoningTokens,
		tok:         cfg.TextTokens,
		tokenize:    cfg.Tokenize,
		prefix:      sim.Config{PrefixCacheTokens: cfg.PrefixCacheTokens, PrefixBlockTokens: cfg.PrefixBlockTokens, BytesPerToken: cfg.BytesPerToken},
		origin:      time.Now(),
		cluster:     c,
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		quirks:      quirksOf(cfg),
		embedDims:   DefaultEmbeddingDimensions,
		instances:   newInstanceCache(),
		gateways:    newGateways(cfg),
	}
	for _, o := range opts {
		o(s)
	}
	s.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	if s.spans != nil {
		go s.spans.run()
	}
	s.metrics = newMetrics(s.model, s)
	s.handler = s.routes()
	return s, nil
}

// Model is the model name the server answers for.
func (s *Server) Model() string { return s.model }

// Handler returns the HTTP handler of the API and starts the driver.
func (s *Server) Handler() http.Handler {
	s.startDriver()
	return s.handler
}

// Start serves the API on ln in the background, with the driver running.
// It returns an error if the server was closed or already started.
func (s *Server) Start(ln net.Listener) error {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.closed {
		return errors.New("simhttp: start: server closed")
	}
	if s.started {
		return errors.New("simhttp: start: already started")
	}
	s.started = true
	s.startDriver()
	s.httpSrv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if s.quirks.closeAfterResponse {
		// The response went out whole (no Connection: close: keep-alive
		// as advertised) before the connection turns idle; then it is
		// closed, so the client's next request must dial again.
		s.httpSrv.ConnState = func(c net.Conn, st http.ConnState) {
			if st == http.StateIdle {
				_ = c.Close()
			}
		}
	}
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("simhttp: serve", "err", err)
		}
	}()
	return nil
}

// Close stops serving, closes every connection, stops the driver and
// waits for all handlers to return. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.hmu.Lock()
		stop := s.stopCtx
		s.hmu.Unlock()
		if stop != nil {
			stop()
		}
		s.hmu.Lock()
		s.closed = true
		srv := s.httpSrv
		s.hmu.Unlock()
		if srv != nil {
			s.closeErr = srv.Close()
			<-s.serveDone
		}
		close(s.done)
		s.driverOnce.Do(func() {}) // a driver never started stays so
		if s.driverDone != nil {
			<-s.driverDone
		}
		s.handlers.Wait()
		if s.spans != nil {
			s.spans.close()
		}
	})
	return s.closeErr
}

// Snapshot returns the cluster's state now. It is safe for concurrent use.
func (s *Server) Snapshot() sim.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cluster.Snapshot(s.now()) // advances to now
}

// Origin is the wall time of the server's start: an Event's At counts
// from it.
func (s *Server) Origin() time.Time { return s.origin }

// Events returns the cluster's scaling events so far. It is safe for
// concurrent use.
func (s *Server) Events() []sim.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.Advance(s.now())
	return append([]sim.Event(nil), s.cluster.Events()...)
}

// Listen listens on addr ("127.0.0.1:0" picks a free port), builds a
// server for cfg and starts it. It returns the base URL of the API,
// including /v1. The server is closed when ctx is done or by Close.
func Listen(ctx context.Context, addr string, cfg sim.Config, logger *slog.Logger, opts ...Option) (*Server, string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("simhttp: listen: %w", err)
	}
	return Serve(ctx, ln, cfg, logger, opts...)
}

// Serve builds a server for cfg and starts it on ln (closed with the
// server). It returns the base URL of the API, including /v1. The server
// is closed when ctx is done or by Close.
func Serve(ctx context.Context, ln net.Listener, cfg sim.Config, logger *slog.Logger, opts ...Option) (*Server, string, error) {
	s, err := New(cfg, logger, opts...)
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	if err := s.Start(ln); err != nil {
		_ = ln.Close()
		_ = s.Close()
		return nil, "", err
	}
	// Close may run on ctx's AfterFunc goroutine at once: the field is
	// written under hmu, as Close reads it.
	s.hmu.Lock()
	s.stopCtx = context.AfterFunc(ctx, func() { _ = s.Close() })
	s.hmu.Unlock()
	return s, baseURL(ln.Addr()), nil
}

// baseURL is the API's URL for a listener address; an unspecified host
// (":8000", "[::]:8000") becomes the loopback address.
func baseURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/v1"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1"
}

// now is the cluster clock: time since the server started.
func (s *Server) now() time.Duration { return time.Since(s.origin) }

// startDriver starts the driver goroutine once, unless closed.
func (s *Server) startDriver() {
	s.driverOnce.Do(func() {
		s.driverDone = make(chan struct{})
		go s.drive()
	})
}

// drive owns the clock: it advances the cluster to now, sleeps on one
// timer until the cluster's next event, and wakes early when a submit
// arrives (the next event may then be sooner).
func (s *Server) drive() {
	defer close(s.driverDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := s.now()
		s.cluster.Advance(now)
		next, ok := s.cluster.NextEvent()
		s.mu.Unlock()
		if ok {
			timer.Reset(max(next-now, 0))
		} else {
			timer.Stop()
		}
		select {
		case <-timer.C:
		case <-s.wake:
		case <-s.done:
			return
		}
	}
}

// kick wakes the driver without blocking.
func (s *Server) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// scrapeState is what the metrics collector reads: the snapshot and the
// number of scaling events by kind.
func (s *Server) scrapeState() (sim.Snapshot, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.cluster.Snapshot(s.now()) // advances to now
	counts := make(map[string]int, len(scalingKinds))
	for _, e := range s.cluster.Events() {
		counts[e.Kind]++
	}
	return snap, counts
}

// routes builds the handler of every endpoint, wrapped so that Close can
// wait for handlers and no panic takes the server down.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// The completion routes take every method and answer 405 themselves:
	// the catch-all "/" would otherwise turn a wrong method into a 404.
	for _, rt := range []struct {
		path string
		api  api
	}{
		{"/v1/chat/completions", apiChat},
		{"/v1/completions", apiCompletions},
		{"/v1/responses", apiResponses},
		{"/v1/messages", apiMessages},
		{"/v1/embeddings", apiEmbeddings},
		{"/v1/rerank", apiRerank},
		{"/rerank", apiRerank},
	} {
		mux.HandleFunc(rt.path, func(w http.ResponseWriter, r *http.Request) { s.serveRequest(w, r, rt.api) })
	}
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /sim/events", s.serveEvents)
	switch s.tokenize {
	case sim.TokenizeVLLM:
		mux.HandleFunc("POST /tokenize", s.serveTokenizeVLLM)
	case sim.TokenizeLlamaCpp:
		mux.HandleFunc("POST /tokenize", s.serveTokenizeLlamaCpp)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "NotFoundError", message: "no such endpoint"})
	})
	return s.guard(mux)
}

// guard wraps next so that Close can wait for every handler, requests
// after Close get 503, and a panic never takes the server down: it is
// logged and the connection dropped (the response may be half written).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hmu.Lock()
		if s.closed {
			s.hmu.Unlock()
			writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "ServiceUnavailableError", message: "the simulator is shutting down"})
			return
		}
		s.handlers.Add(1)
		s.hmu.Unlock()
		defer s.handlers.Done()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
					panic(v)
				}
				s.log.Error("simhttp: handler panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
				panic(http.ErrAbortHandler) // net/http closes the connection quietly
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen int     `json:"max_model_len"`
	}
	body := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{ID: s.model, Object: "model", Created: s.origin.Unix(), OwnedBy: "surge", Root: s.model, MaxModelLen: s.maxModelLen}}}
	writeJSON(w, body)
}

// EventJSON is one scaling event as /sim/events serves it.
type EventJSON struct {
	AtSeconds float64 `json:"at_s"`    // seconds since the server started
	Time      string  `json:"time"`    // wall time, RFC 3339 with nanoseconds
	Kind      string  `json:"kind"`    // scale_trigger, capacity_requested, …
	Replica   int     `json:"replica"` // replica index
	Detail    string  `json:"detail,omitempty"`
}

// EventsJSON is the body of /sim/events.
type EventsJSON struct {
	Start  string      `json:"start"` // wall time of the server's start, RFC 3339
	Events []EventJSON `json:"events"`
}

func (s *Server) serveEvents(w http.ResponseWriter, _ *http.Request) {
	evs := s.Events()
	out := EventsJSON{Start: s.origin.UTC().Format(time.RFC3339Nano), Events: make([]EventJSON, 0, len(evs))}
	for _, e := range evs {
		out.Events = append(out.Events, EventJSON{
			AtSeconds: e.At.Seconds(),
			Time:      s.origin.Add(e.At).UTC().Format(time.RFC3339Nano),
			Kind:      e.Kind, Replica: e.Replica, Detail: e.Detail,
		})
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", message: "encoding the response failed"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

// retryAfterSeconds rounds a retry hint up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	n := int((d + time.Second - 1) / time.Second)
	return max(n, 1)
}

func replicaName(i int) string { return "r" + strconv.Itoa(i) }
