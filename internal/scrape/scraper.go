package scrape

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Defaults of Config's zero fields.
const (
	DefaultInterval = time.Second     // time between scrapes
	DefaultTimeout  = 5 * time.Second // limit on one scrape (request and body)
	DefaultAttempts = 3               // first-scrape attempts before giving up
	maxBody         = 64 << 20        // larger exposition bodies are refused
	maxReason       = 300             // longest failure reason kept (characters)
)

// Config configures a Scraper. The zero value of every field but URL means
// its default.
type Config struct {
	URL       string            // the engine's Prometheus endpoint, e.g. http://host:8000/metrics
	Preset    string            // preset name (see PresetNames); "" means auto
	Overrides map[string]string // logical metric name -> engine metric name (see ParseOverrides)
	// Filter keeps only series whose labels agree with it, e.g.
	// {"model_name": "meta-llama/Llama-3.1-8B-Instruct"}; series without a
	// filtered label are kept.
	Filter   map[string]string
	Interval time.Duration // time between scrapes; default DefaultInterval
	Timeout  time.Duration // limit on one scrape; default DefaultTimeout
	// Attempts is how many failed scrapes in a row, before the first
	// success, make the engine's metrics "unavailable" and stop scraping;
	// default DefaultAttempts.
	Attempts int
	Client   *http.Client // default: a dedicated client without compression tricks
	CSV      io.Writer    // optional: engine.csv, one row per sample, flushed each time
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if c.URL == "" {
		return errors.New("scrape: metrics URL is empty")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("scrape: metrics URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("scrape: metrics URL %q: want http(s)://host[:port]/path", u.Redacted())
	}
	if c.Preset == "" {
		c.Preset = DefaultPreset
	}
	if _, ok := LookupPreset(c.Preset); !ok && c.Preset != PresetAuto {
		return fmt.Errorf("scrape: unknown preset %q (want one of %s)", c.Preset, strings.Join(PresetNames(), ", "))
	}
	if _, err := (Preset{}).WithOverrides(c.Overrides); err != nil {
		return err
	}
	if c.Interval < 0 || c.Timeout < 0 || c.Attempts < 0 {
		return errors.New("scrape: interval, timeout and attempts must not be negative")
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	return nil
}

// State is the condition of engine scraping, for the report.
type State string

// The states of a Scraper.
const (
	StateDisabled    State = "disabled"    // no metrics URL (nil Scraper)
	StatePending     State = "pending"     // no scrape has succeeded yet
	StateOK          State = "ok"          // scraping, every mapped metric found
	StatePartial     State = "partial"     // scraping, some mapped metrics missing
	StateUnavailable State = "unavailable" // gave up: the endpoint did not serve Prometheus text
	// StateUnknown is a run re-rendered without its summary.json: whether
	// and how it scraped is not recorded anywhere else (Reason says so).
	StateUnknown State = "unknown"
)

// Status describes the scraping for the report and summary.json.
type Status struct {
	State    State    `json:"state"`
	Preset   string   `json:"preset,omitempty"`   // the preset in use (after auto-detection)
	Detected bool     `json:"detected,omitempty"` // the preset was auto-detected
	URL      string   `json:"url,omitempty"`      // the endpoint, password redacted
	Reason   string   `json:"reason,omitempty"`   // why it is unavailable
	Samples  int      `json:"samples"`            // samples kept
	Failures int      `json:"failures"`           // failed scrapes
	Missing  []string `json:"missing,omitempty"`  // mapped logical metrics never found (those the preset marks optional aside)
	// Absent lists the metrics the preset marks optional (some builds do
	// not export them) that no scrape found; they do not make the
	// scrape partial.
	Absent []string `json:"absent_optional,omitempty"`
	// NotExported lists logical metrics the engine's preset does not map
	// at all (for example TGI has no TTFT histogram).
	NotExported []string `json:"not_exported,omitempty"`
	// Messages are the human-readable notes (unavailable, missing metrics,
	// preset mismatch), one per line, each a whole line with its
	// "engine metrics:" prefix. The Scraper has already logged each one
	// once, when it arose.
	Messages []string `json:"messages,omitempty"`
}

// String summarises the status on one line.
func (s Status) String() string {
	switch s.State {
	case StateDisabled:
		return "engine metrics: disabled"
	case StateUnavailable:
		return "engine metrics unavailable: " + s.Reason
	case StatePending:
		return "engine metrics: no scrape yet"
	case StateUnknown:
		return "engine metrics: unknown: " + s.Reason
	}
	out := fmt.Sprintf("engine metrics: %s (preset %s, %d samples, %d failed scrapes)", s.State, s.Preset, s.Samples, s.Failures)
	if len(s.Missing) > 0 {
		out += "; missing " + strings.Join(s.Missing, ", ")
	}
	return out
}

// Scraper scrapes an engine's Prometheus endpoint at a fixed interval,
// keeps the samples in memory and streams them to engine.csv. Its methods
// are safe for concurrent use; Run must be called at most once.
// A nil *Scraper reports StateDisabled.
type Scraper struct {
	cfg    Config
	origin time.Time
	log    *slog.Logger
	client *http.Client
	ownCl  bool
	now    func() time.Time
	csv    *CSVWriter

	mu       sync.Mutex
	samples  []Sample
	ex       *extractor // nil until the preset is fixed (auto-detection)
	state    State
	reason   string
	detected bool
	attempts int // consecutive failures before the first success
	failures int // all failed scrapes
	failing  bool
	messages []string
	csvErr   error
}

// New returns a Scraper for cfg. Sample times are nanoseconds since origin,
// the run's monotonic origin. A nil logger discards logs.
func New(cfg Config, origin time.Time, logger *slog.Logger) (*Scraper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Scraper{cfg: cfg, origin: origin, log: logger, client: cfg.Client, now: time.Now, state: StatePending}
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: cfg.Timeout}).DialContext,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     2 * cfg.Interval,
		}}
		s.ownCl = true
	}
	if cfg.CSV != nil {
		s.csv = NewCSVWriter(cfg.CSV)
	}
	if cfg.Preset != PresetAuto {
		s.fix(cfg.Preset, false)
	}
	return s, nil
}

// fix settles the preset (with overrides) used from now on.
func (s *Scraper) fix(name string, detected bool) {
	p, _ := LookupPreset(name)
	p, _ = p.WithOverrides(s.cfg.Overrides) // validated in New
	s.ex = &extractor{preset: p, filter: s.cfg.Filter}
	s.detected = detected
}

// Run scrapes every Interval until ctx is done or the endpoint turned out
// to be unavailable. Engine trouble never makes it fail: an unavailable
// endpoint is logged and reported through Status, and Run returns nil. It
// returns an error only if writing engine.csv failed (scraping continued in
// memory).
func (s *Scraper) Run(ctx context.Context) error {
	if s.ownCl {
		defer s.client.CloseIdleConnections()
	}
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
loop:
	for {
		s.scrapeOnce(ctx)
		if s.stopped() {
			break
		}
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.csvErr
}

func (s *Scraper) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == StateUnavailable
}

// scrapeOnce fetches and records one scrape; the sample's time is the
// midpoint of the request, taken from s.now.
func (s *Scraper) scrapeOnce(ctx context.Context) {
	t0 := s.now()
	fams, err := s.fetch(ctx)
	if ctx.Err() != nil {
		return // the run ended mid-scrape: not an engine failure
	}
	t1 := s.now()
	mid := t0.Add(t1.Sub(t0) / 2)
	s.observe(mid.Sub(s.origin).Nanoseconds(), fams, err)
}

const accept = "text/plain;version=0.0.4;q=0.9,*/*;q=0.1"

// fetch GETs the endpoint and parses the text exposition format.
func (s *Scraper) fetch(ctx context.Context) (Families, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "surge-scrape")
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no response within %s", s.cfg.Timeout)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		switch {
		case mt == "application/openmetrics-text":
			// Close enough for the text parser when it is only gauges,
			// counters and histograms; we asked for text/plain.
		case mt == "application/vnd.google.protobuf":
			return nil, fmt.Errorf("content type %s: protobuf exposition is not supported", mt)
		case mt == "text/html" || mt == "application/json" || strings.HasPrefix(mt, "image/"):
			return nil, fmt.Errorf("content type %s is not Prometheus text", mt)
		}
	}
	lr := &io.LimitedReader{R: resp.Body, N: maxBody + 1}
	fams, err := ParseText(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("response larger than %d MiB", maxBody>>20)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no complete response within %s", s.cfg.Timeout)
		}
		return nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	if len(fams) == 0 {
		return nil, errors.New("no metrics in the response")
	}
	return fams, nil
}

// observe records the outcome of one scrape made at tNs: a sample, or a
// failure. It is the scraper's state machine, driven by explicit times in
// tests.
func (s *Scraper) observe(tNs int64, fams Families, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateUnavailable {
		return
	}
	where := redact(s.cfg.URL)
	if err != nil {
		s.failures++
		reason := truncate(where + ": " + err.Error())
		if s.state == StatePending {
			s.attempts++
			if s.attempts >= s.cfg.Attempts {
				if s.attempts > 1 {
					reason += fmt.Sprintf(" (%d attempts)", s.attempts)
				}
				s.state, s.reason = StateUnavailable, reason
				s.note(slog.LevelWarn, "engine metrics unavailable: "+reason+"; continuing without engine metrics")
			} else {
				s.log.Debug("engine metrics: scrape failed, will retry", "reason", reason)
			}
			return
		}
		if !s.failing {
			s.failing = true
			s.log.Warn("engine metrics: scrape failed; samples will have a gap", "reason", reason)
		}
		return
	}
	if s.failing {
		s.failing = false
		s.log.Info("engine metrics: scraping again")
	}
	first := s.state == StatePending
	fixedNow := false
	if s.ex == nil {
		if p, n := detect(fams); n > 0 {
			s.fix(p.Name, true)
			fixedNow = true
			s.log.Info("engine metrics: detected preset", "preset", p.Name, "metrics", n)
		}
	}
	var sample Sample
	if s.ex != nil {
		var pct bool
		sample, pct = s.ex.extract(tNs, fams)
		if pct {
			s.log.Warn("engine metrics: kv_usage above 1, treating it as a percentage 0..100 from now on; mark it with --metric kv_usage=NAME% to be sure",
				"name", s.ex.used[KVUsage])
		}
	} else {
		sample = EmptySample(tNs)
	}
	if first {
		s.state = StateOK
	}
	if first || fixedNow {
		s.notes(fams)
	}
	if s.ex != nil && s.state == StatePartial && len(s.missingLocked()) == 0 {
		s.state = StateOK
	}
	s.samples = append(s.samples, sample)
	if s.csv != nil && s.csvErr == nil {
		if err := s.csv.Write(sample); err != nil {
			s.csvErr = err
			s.log.Warn("engine metrics: writing engine.csv failed; keeping samples in memory only", "err", err)
		}
	}
}

// notes says, at the first successful scrape (or when auto-detection
// settles later), which mapped metrics are missing and whether the endpoint
// looks like another engine.
func (s *Scraper) notes(fams Families) {
	where := redact(s.cfg.URL)
	if s.ex == nil {
		s.state = StatePartial
		s.note(slog.LevelWarn, fmt.Sprintf("engine metrics: no known engine metrics at %s (tried presets %s); name them with --metric LOGICAL=NAME",
			where, strings.Join(PresetNames()[1:], ", ")))
		return
	}
	if score(s.ex.preset, fams) == 0 {
		if p, n := detect(fams); n > 0 {
			s.note(slog.LevelWarn, fmt.Sprintf("engine metrics: none of the %s metrics found at %s; it looks like %s (%d metrics found): use preset %s",
				s.ex.preset.Name, where, p.Name, n, p.Name))
		}
	}
	for _, m := range Metrics() {
		spec, ok := s.ex.preset.Specs[m]
		if !ok || s.ex.ever.Has(m) {
			continue
		}
		if spec.Optional {
			// Not every build exports it: not a partial scrape, and
			// nothing to warn about.
			s.note(slog.LevelInfo, MissingMessage(m, spec))
			continue
		}
		s.state = StatePartial
		s.note(slog.LevelWarn, MissingMessage(m, spec))
	}
}

// MissingMessage is the note for a mapped metric that the engine does not
// export under any of the spec's names. It is a whole line, prefix
// included: print it as it is.
func MissingMessage(m Metric, spec Spec) string {
	if spec.Optional {
		return fmt.Sprintf("engine metrics: %s not exported by this engine build (looked for %s; optional: %s)",
			m, strings.Join(spec.Names, ", "), cmp.Or(spec.Why, "recent builds removed it"))
	}
	return fmt.Sprintf("engine metrics: missing %s (looked for %s); renamed? use --metric %s=NAME",
		m, strings.Join(spec.Names, ", "), m)
}

func (s *Scraper) note(lvl slog.Level, msg string) {
	s.messages = append(s.messages, msg)
	s.log.Log(context.Background(), lvl, msg)
}

// missingLocked lists the mapped metrics never found that the preset does
// not mark optional.
func (s *Scraper) missingLocked() []string { return s.absentLocked(false) }

// absentLocked lists the mapped metrics never found whose Optional mark
// equals optional.
func (s *Scraper) absentLocked(optional bool) []string {
	var out []string
	if s.ex == nil {
		return out
	}
	for _, m := range Metrics() {
		if spec, ok := s.ex.preset.Specs[m]; ok && spec.Optional == optional && !s.ex.ever.Has(m) {
			out = append(out, m.String())
		}
	}
	return out
}

// Missing lists the logical metrics the preset maps but that no scrape has
// found (all of them while no scrape has succeeded).
func (s *Scraper) Missing() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.missingLocked()
}

// Available reports whether at least one scrape succeeded and found at
// least one engine metric.
func (s *Scraper) Available() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ex != nil && s.ex.ever != 0
}

// Samples returns a copy of the samples so far, in time order. The
// histogram slices inside are shared and must not be modified.
func (s *Scraper) Samples() []Sample {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// LastValue is metric m in the latest sample that has it, without copying
// the samples (the live view asks every second).
func (s *Scraper) LastValue(m Metric) (float64, bool) {
	if s == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.samples) - 1; i >= 0 && i >= len(s.samples)-3; i-- {
		if v, ok := s.samples[i].Value(m); ok {
			return v, true
		}
	}
	return 0, false
}

// Status reports the state of scraping.
func (s *Scraper) Status() Status {
	if s == nil {
		return Status{State: StateDisabled}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		State: s.state, URL: redact(s.cfg.URL), Reason: s.reason,
		Samples: len(s.samples), Failures: s.failures,
		Messages: slices.Clone(s.messages), Detected: s.detected,
	}
	if s.ex != nil {
		st.Preset = s.ex.preset.Name
		st.Missing = s.missingLocked()
		st.Absent = s.absentLocked(true)
		for _, m := range Metrics() {
			if _, ok := s.ex.preset.Specs[m]; !ok {
				st.NotExported = append(st.NotExported, m.String())
			}
		}
	} else if s.cfg.Preset != PresetAuto {
		st.Preset = s.cfg.Preset
	}
	return st
}

func redact(raw string) string { return record.RedactURL(raw) }

func truncate(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return s[:maxReason] + "…"
}
