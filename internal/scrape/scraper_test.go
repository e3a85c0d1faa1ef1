package scrape

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// engine is a fake engine /metrics endpoint on loopback whose body and
// status the test changes between scrapes.
type engine struct {
	srv *httptest.Server

	mu     sync.Mutex
	body   string
	status int
	ctype  string
	hits   chan struct{} // receives one value per request, if non-nil
	block  bool          // hold each request until the client gives up
}

func newEngine(t *testing.T, body string) *engine {
	t.Helper()
	e := &engine{body: body, status: http.StatusOK, ctype: "text/plain; version=0.0.4; charset=utf-8"}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		body, status, ctype, hits, block := e.body, e.status, e.ctype, e.hits, e.block
		e.mu.Unlock()
		if hits != nil {
			select {
			case hits <- struct{}{}:
			default:
			}
		}
		if block {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *engine) set(body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body = body
}

// with changes the engine's behaviour under its lock.
func (e *engine) with(f func(e *engine)) *engine {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e)
	return e
}

func (e *engine) url() string { return e.srv.URL + "/metrics" }

// vllmBody renders a small vLLM exposition.
func vllmBody(waiting, running float64, q [3]float64, qsum float64) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} %g
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} %g
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} %g
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 10
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} %g
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="m"} %g
vllm:request_queue_time_seconds_bucket{engine="0",le="0.5",model_name="m"} %g
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="m"} %g
vllm:request_queue_time_seconds_count{engine="0",model_name="m"} %g
vllm:request_queue_time_seconds_sum{engine="0",model_name="m"} %g
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} %g
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} %g
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} %g
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} %g
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} %g
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 2
`, waiting, running, 100*q[2], q[2], q[0], q[1], q[2], q[2], qsum, q[2], q[2], q[2], q[2], q[2])
}

// clock is a fake time source for scrapeOnce: each call returns the
// current time, and the test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) at(d time.Duration, origin time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = origin.Add(d)
}

var origin = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newScraper(t *testing.T, cfg Config, log *slog.Logger) (*Scraper, *clock) {
	t.Helper()
	s, err := New(cfg, origin, log)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: origin}
	s.now = c.now
	return s, c
}

func TestScrapeSequence(t *testing.T) {
	e := newEngine(t, vllmBody(0, 1, [3]float64{0, 0, 0}, 0))
	var csvBuf bytes.Buffer
	s, c := newScraper(t, Config{URL: e.url(), Preset: "vllm", Client: e.srv.Client(), CSV: &csvBuf}, nil)
	ctx := context.Background()

	steps := []struct {
		at   time.Duration
		body string
	}{
		{1 * time.Second, vllmBody(0, 1, [3]float64{0, 0, 0}, 0)},
		{2 * time.Second, vllmBody(5, 8, [3]float64{10, 12, 15}, 3)},
		{3 * time.Second, vllmBody(9, 8, [3]float64{30, 52, 60}, 20)},
	}
	for _, st := range steps {
		e.set(st.body)
		c.at(st.at, origin)
		s.scrapeOnce(ctx)
	}
	got := s.Samples()
	if len(got) != 3 {
		t.Fatalf("%d samples, want 3", len(got))
	}
	for i, st := range steps {
		if got[i].TNs != st.at.Nanoseconds() {
			t.Errorf("sample %d at %d ns, want %d", i, got[i].TNs, st.at.Nanoseconds())
		}
	}
	if got[1].Waiting != 5 || got[2].Waiting != 9 || got[2].Running != 8 || got[2].KVUsage != 0.5 || got[2].Success != 60 {
		t.Errorf("values: %+v", got[2])
	}
	st := PhaseStats(got, QueueTime, 2e9, 3e9) // 45 observations: 20 ≤ 0.3, 20 in (0.3,0.5], 5 above
	if st.Count != 45 || st.Mean != 17.0/45 || st.P50.Value != 0.3+0.2*2.5/20 || st.P99.String() != "> 0.5s" {
		t.Errorf("queue stats = %+v", st)
	}
	if status := s.Status(); status.State != StateOK || status.Preset != "vllm" || status.Samples != 3 || len(status.Messages) != 0 || status.Detected {
		t.Errorf("status = %+v", status)
	}
	if !s.Available() || len(s.Missing()) != 0 {
		t.Errorf("available %v, missing %v", s.Available(), s.Missing())
	}
	lines := strings.Split(strings.TrimSpace(csvBuf.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "2.000,5,8,0.5,,15,3,1500,10,15,15,1,15,2,0.3:10 0.5:12 +Inf:15,1:15 +Inf:15,+Inf:15") {
		t.Errorf("engine.csv:\n%s", csvBuf.String())
	}
}

// The sample time is the midpoint of the request.
func TestScrapeTimestampMidpoint(t *testing.T) {
	e := newEngine(t, vllmBody(1, 1, [3]float64{}, 0))
	s, _ := newScraper(t, Config{URL: e.url(), Preset: "vllm", Client: e.srv.Client()}, nil)
	times := []time.Time{origin.Add(10 * time.Second), origin.Add(12 * time.Second)}
	s.now = func() time.Time { t := times[0]; times = times[1:]; return t }
	s.scrapeOnce(context.Background())
	if got := s.Samples()[0].TNs; got != 11e9 {
		t.Errorf("TNs = %d, want 11e9", got)
	}
}

func TestUnavailable(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u := "http://" + ln.Addr().String() + "/metrics"
		ln.Close()
		return u
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T) (url string, client *http.Client)
		reason string // the message is "engine metrics unavailable: URL: reason (3 attempts); continuing without engine metrics"
	}{
		{"404", func(t *testing.T) (string, *http.Client) {
			e := newEngine(t, "not here")
			e.with(func(e *engine) { e.status = http.StatusNotFound })
			return e.url(), e.srv.Client()
		}, "HTTP 404 Not Found"},
		{"html page", func(t *testing.T) (string, *http.Client) {
			e := newEngine(t, "<html><body>dashboard</body></html>")
			e.with(func(e *engine) { e.ctype = "text/html; charset=utf-8" })
			return e.url(), e.srv.Client()
		}, "content type text/html is not Prometheus text"},
		{"json", func(t *testing.T) (string, *http.Client) {
			e := newEngine(t, `{"waiting": 3}`)
			e.with(func(e *engine) { e.ctype = "application/json" })
			return e.url(), e.srv.Client()
		}, "content type application/json is not Prometheus text"},
		{"garbage as text/plain", func(t *testing.T) (string, *http.Client) {
			e := newEngine(t, "hello world\n")
			return e.url(), e.srv.Client()
		}, `not Prometheus text: text format parsing error in line 1: expected float as value, got "world"`},
		{"empty body", func(t *testing.T) (string, *http.Client) {
			e := newEngine(t, "")
			return e.url(), e.srv.Client()
		}, "no metrics in the response"},
		{"refused", func(t *testing.T) (string, *http.Client) { return refused(t), nil }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, client := tt.setup(t)
			var logBuf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s, c := newScraper(t, Config{URL: u, Preset: "vllm", Client: client}, log)
			for i := 1; i <= 3; i++ {
				if got := s.Status().State; got != StatePending {
					t.Fatalf("before attempt %d: state %s, want pending", i, got)
				}
				c.at(time.Duration(i)*time.Second, origin)
				s.scrapeOnce(context.Background())
			}
			st := s.Status()
			if st.State != StateUnavailable || s.Available() || len(s.Samples()) != 0 || st.Failures != 3 {
				t.Fatalf("status = %+v", st)
			}
			if len(st.Messages) != 1 {
				t.Fatalf("messages = %q", st.Messages)
			}
			msg := st.Messages[0]
			if tt.reason != "" {
				want := "engine metrics unavailable: " + u + ": " + tt.reason + " (3 attempts); continuing without engine metrics"
				if msg != want {
					t.Errorf("message = %q\nwant      %q", msg, want)
				}
			} else if !strings.HasPrefix(msg, "engine metrics unavailable: "+u+": dial tcp ") ||
				!strings.Contains(msg, "connection refused") ||
				!strings.HasSuffix(msg, " (3 attempts); continuing without engine metrics") {
				t.Errorf("message = %q", msg)
			}
			if !strings.Contains(logBuf.String(), "level=WARN") || !strings.Contains(logBuf.String(), "continuing without engine metrics") {
				t.Errorf("log = %q", logBuf.String())
			}
			if st.String() != "engine metrics unavailable: "+st.Reason {
				t.Errorf("String() = %q", st.String())
			}
			// Later scrapes change nothing: scraping has stopped.
			s.scrapeOnce(context.Background())
			if s.Status().Failures != 3 {
				t.Error("scraped after giving up")
			}
		})
	}
}

func TestUnavailableThenRunReturns(t *testing.T) {
	e := newEngine(t, "")
	e.with(func(e *engine) { e.status = http.StatusNotFound })
	s, err := New(Config{URL: e.url(), Preset: "vllm", Interval: 5 * time.Millisecond, Attempts: 2}, origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }() // no cancel: Run must stop by itself
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil (never fail the run)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the endpoint was found unavailable")
	}
	if st := s.Status(); st.State != StateUnavailable || st.Failures != 2 {
		t.Errorf("status = %+v", st)
	}
}

// A slow engine: each scrape is cut at Timeout.
func TestScrapeTimeout(t *testing.T) {
	e := newEngine(t, "")
	e.with(func(e *engine) { e.block = true })
	s, _ := newScraper(t, Config{URL: e.url(), Preset: "vllm", Client: e.srv.Client(), Timeout: 20 * time.Millisecond, Attempts: 1}, nil)
	s.scrapeOnce(context.Background())
	if st := s.Status(); st.State != StateUnavailable || !strings.HasSuffix(st.Reason, ": no response within 20ms") {
		t.Errorf("status = %+v", st)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	e := newEngine(t, vllmBody(1, 2, [3]float64{}, 0))
	e.with(func(e *engine) { e.status = http.StatusServiceUnavailable }) // still loading the model
	s, c := newScraper(t, Config{URL: e.url(), Preset: "vllm", Client: e.srv.Client()}, nil)
	s.scrapeOnce(context.Background())
	s.scrapeOnce(context.Background())
	e.with(func(e *engine) { e.status = http.StatusOK })
	c.at(3*time.Second, origin)
	s.scrapeOnce(context.Background())
	if st := s.Status(); st.State != StateOK || st.Failures != 2 || st.Samples != 1 {
		t.Errorf("status = %+v", st)
	}
}

func TestFailureAfterSuccessLeavesGap(t *testing.T) {
	e := newEngine(t, vllmBody(1, 2, [3]float64{}, 0))
	s, c := newScraper(t, Config{URL: e.url(), Preset: "vllm", Client: e.srv.Client(), Attempts: 1}, nil)
	for i, status := range []int{200, 500, 500, 200} {
		e.with(func(e *engine) { e.status = status })
		c.at(time.Duration(i)*time.Second, origin)
		s.scrapeOnce(context.Background())
	}
	var ts []int64
	for _, smp := range s.Samples() {
		ts = append(ts, smp.TNs)
	}
	if !slices.Equal(ts, []int64{0, 3e9}) {
		t.Errorf("sample times %v, want a gap between 0 and 3 s", ts)
	}
	if st := s.Status(); st.State != StateOK || st.Failures != 2 {
		t.Errorf("status = %+v", st)
	}
}

func TestMissingMessages(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	llamaNoKV := strings.ReplaceAll(read("llamacpp.txt"), "llamacpp:kv_cache_usage_ratio 0.62\n", "")
	// DigitalOcean Serverless Inference without a Droplet autoscale pool.
	doNoPool := read("digitalocean.txt")
	doNoPool = doNoPool[:strings.Index(doNoPool, `# HELP "do.droplet_autoscale_pool.current_instances"`)]
	tests := []struct {
		name, body, preset string
		overrides          map[string]string
		state              State
		missing, absent    []string
		messages           []string // %s is replaced by the URL
		detected           string
	}{
		{name: "all found", body: read("vllm_v1.txt"), preset: "vllm", state: StateOK},
		{name: "old vllm without queue time", body: read("vllm_v0.txt"), preset: "vllm", state: StatePartial,
			missing: []string{"queue_time"},
			messages: []string{
				"engine metrics: missing queue_time (looked for vllm:request_queue_time_seconds); renamed? use --metric queue_time=NAME",
			}},
		{name: "override names a metric that is absent", body: read("vllm_v1.txt"), preset: "vllm", state: StatePartial,
			overrides: map[string]string{"waiting": "vllm:queue_len"},
			missing:   []string{"waiting"},
			messages: []string{
				"engine metrics: missing waiting (looked for vllm:queue_len); renamed? use --metric waiting=NAME",
			}},
		// Recent llama.cpp builds removed the KV gauge, which the preset
		// marks optional: the scrape is ok, not partial, and the note
		// says so without "renamed?".
		{name: "optional metric missing", body: llamaNoKV, preset: "llamacpp", state: StateOK,
			absent: []string{"kv_usage"},
			messages: []string{
				"engine metrics: kv_usage not exported by this engine build (looked for llamacpp:kv_cache_usage_ratio; optional: recent builds removed it)",
			}},
		{name: "wrong preset", body: read("tgi.txt"), preset: "vllm", state: StatePartial,
			missing: []string{"waiting", "running", "kv_usage", "queue_time", "prompt_tokens", "generation_tokens", "success", "ttft", "e2e"},
			messages: []string{
				"engine metrics: none of the vllm metrics found at %s; it looks like tgi (7 metrics found): use preset tgi",
				"engine metrics: missing waiting (looked for vllm:num_requests_waiting); renamed? use --metric waiting=NAME",
				"engine metrics: missing running (looked for vllm:num_requests_running); renamed? use --metric running=NAME",
				"engine metrics: missing kv_usage (looked for vllm:kv_cache_usage_perc, vllm:gpu_cache_usage_perc); renamed? use --metric kv_usage=NAME",
				"engine metrics: missing queue_time (looked for vllm:request_queue_time_seconds); renamed? use --metric queue_time=NAME",
				"engine metrics: missing prompt_tokens (looked for vllm:prompt_tokens_total); renamed? use --metric prompt_tokens=NAME",
				"engine metrics: missing generation_tokens (looked for vllm:generation_tokens_total); renamed? use --metric generation_tokens=NAME",
				"engine metrics: missing success (looked for vllm:request_success_total); renamed? use --metric success=NAME",
				"engine metrics: missing ttft (looked for vllm:time_to_first_token_seconds); renamed? use --metric ttft=NAME",
				"engine metrics: missing e2e (looked for vllm:e2e_request_latency_seconds); renamed? use --metric e2e=NAME",
			}},
		// Optional with its own reason: the pool-size name is a placeholder.
		{name: "optional metric with a reason", body: doNoPool, preset: "digitalocean", state: StateOK,
			absent: []string{"replicas"},
			messages: []string{
				"engine metrics: replicas not exported by this engine build (looked for do.droplet_autoscale_pool.current_instances, do_droplet_autoscale_pool_current_instances; " +
					"optional: only a Droplet autoscale pool exports it, and its name is a placeholder: name the real one with --metric replicas=NAME)",
			}},
		{name: "auto detects sglang", body: read("sglang.txt"), preset: "auto", state: StateOK, detected: "sglang"},
		{name: "auto detects digitalocean", body: read("digitalocean.txt"), preset: "auto", state: StateOK, detected: "digitalocean"},
		{name: "auto detects tgi", body: read("tgi.txt"), preset: "", state: StateOK, detected: "tgi"},
		{name: "auto on a non-engine", body: "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n", preset: "auto", state: StatePartial,
			messages: []string{
				"engine metrics: no known engine metrics at %s (tried presets vllm, sim, sglang, tgi, llamacpp, triton, digitalocean); name them with --metric LOGICAL=NAME",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, tt.body)
			s, _ := newScraper(t, Config{URL: e.url(), Preset: tt.preset, Overrides: tt.overrides, Client: e.srv.Client()}, nil)
			s.scrapeOnce(context.Background())
			st := s.Status()
			if st.State != tt.state {
				t.Errorf("state = %s, want %s", st.State, tt.state)
			}
			if !slices.Equal(s.Missing(), tt.missing) {
				t.Errorf("Missing() = %q, want %q", s.Missing(), tt.missing)
			}
			if !slices.Equal(st.Absent, tt.absent) {
				t.Errorf("Absent = %q, want %q", st.Absent, tt.absent)
			}
			var want []string
			for _, m := range tt.messages {
				if strings.Contains(m, "%s") {
					m = fmt.Sprintf(m, e.url())
				}
				want = append(want, m)
			}
			if !slices.Equal(st.Messages, want) {
				t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(st.Messages, "\n"), strings.Join(want, "\n"))
			}
			if tt.detected != "" && (st.Preset != tt.detected || !st.Detected) {
				t.Errorf("preset = %s (detected %v), want %s detected", st.Preset, st.Detected, tt.detected)
			}
			if len(s.Samples()) != 1 {
				t.Errorf("%d samples, want 1", len(s.Samples()))
			}
		})
	}
}

func TestNotExported(t *testing.T) {
	e := newEngine(t, mustRead(t, "tgi.txt"))
	s, _ := newScraper(t, Config{URL: e.url(), Preset: "tgi", Client: e.srv.Client()}, nil)
	s.scrapeOnce(context.Background())
	st := s.Status()
	if !slices.Equal(st.NotExported, []string{"kv_usage", "replicas", "ttft", "replicas_starting"}) || st.State != StateOK {
		t.Errorf("status = %+v", st)
	}
	if got := st.String(); got != "engine metrics: ok (preset tgi, 1 samples, 0 failed scrapes)" {
		t.Errorf("String() = %q", got)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMetricAppearsLater(t *testing.T) {
	e := newEngine(t, mustRead(t, "vllm_v0.txt"))
	s, _ := newScraper(t, Config{URL: e.url(), Preset: "vllm", Client: e.srv.Client()}, nil)
	s.scrapeOnce(context.Background())
	if s.Status().State != StatePartial {
		t.Fatalf("state = %s", s.Status().State)
	}
	e.set(mustRead(t, "vllm_v1.txt"))
	s.scrapeOnce(context.Background())
	if st := s.Status(); st.State != StateOK || len(st.Missing) != 0 {
		t.Errorf("after the metric appeared: %+v", st)
	}
}

func TestNilScraper(t *testing.T) {
	var s *Scraper
	if st := s.Status(); st.State != StateDisabled || st.String() != "engine metrics: disabled" {
		t.Errorf("nil status = %+v", st)
	}
	if s.Available() || s.Missing() != nil || s.Samples() != nil {
		t.Error("nil scraper reports data")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"empty URL", Config{}, "scrape: metrics URL is empty"},
		{"no scheme", Config{URL: "localhost:8000/metrics"}, `scrape: metrics URL "localhost:8000/metrics": want http(s)://host[:port]/path`},
		{"ftp", Config{URL: "ftp://h/metrics"}, `scrape: metrics URL "ftp://h/metrics": want http(s)://host[:port]/path`},
		{"password redacted", Config{URL: "ftp://u:secret@h/metrics"}, `scrape: metrics URL "ftp://u:xxxxx@h/metrics": want http(s)://host[:port]/path`},
		{"unknown preset", Config{URL: "http://h/metrics", Preset: "tensorrt"}, `scrape: unknown preset "tensorrt" (want one of auto, vllm, sim, sglang, tgi, llamacpp, triton, digitalocean)`},
		{"bad override", Config{URL: "http://h/metrics", Overrides: map[string]string{"queue": "x"}}, `scrape: metric override "queue": unknown logical metric (want one of waiting, running, kv_usage, replicas, queue_time, prompt_tokens, generation_tokens, success, ttft, e2e, replicas_starting)`},
		{"negative interval", Config{URL: "http://h/metrics", Interval: -time.Second}, "scrape: interval, timeout and attempts must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, origin, nil)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
	cfg := Config{URL: "http://127.0.0.1:9/metrics"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Preset != "auto" || cfg.Interval != time.Second || cfg.Timeout != 5*time.Second || cfg.Attempts != 3 {
		t.Errorf("defaults = %+v", cfg)
	}
}

// Run against a real loopback server with a short interval: samples arrive
// in time order and Run returns nil when the context ends.
func TestRun(t *testing.T) {
	e := newEngine(t, vllmBody(1, 2, [3]float64{1, 2, 3}, 1))
	e.with(func(e *engine) { e.hits = make(chan struct{}, 1) })
	var csvBuf syncBuffer
	s, err := New(Config{URL: e.url(), Preset: "vllm", Interval: 10 * time.Millisecond, CSV: &csvBuf}, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for i := range 4 {
		select {
		case <-e.hits:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d scrapes in 10 s", i)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	smp := s.Samples()
	if len(smp) < 3 {
		t.Fatalf("%d samples, want >= 3", len(smp))
	}
	for i := 1; i < len(smp); i++ {
		if smp[i].TNs <= smp[i-1].TNs {
			t.Errorf("sample times not increasing: %d then %d", smp[i-1].TNs, smp[i].TNs)
		}
	}
	if rows := strings.Count(csvBuf.String(), "\n"); rows != len(smp)+1 {
		t.Errorf("engine.csv has %d lines for %d samples", rows, len(smp))
	}
	if st := s.Status(); st.Failures != 0 {
		t.Errorf("cancel counted as a failure: %+v", st)
	}
}

// Cancelling while a scrape hangs ends Run promptly and is not a failure.
func TestRunCancelMidScrape(t *testing.T) {
	e := newEngine(t, "")
	e.with(func(e *engine) { e.block = true })
	e.with(func(e *engine) { e.hits = make(chan struct{}, 1) })
	s, err := New(Config{URL: e.url(), Preset: "vllm", Timeout: time.Minute}, origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-e.hits
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if st := s.Status(); st.Failures != 0 || st.State != StatePending {
		t.Errorf("status = %+v", st)
	}
}

func TestRunCSVError(t *testing.T) {
	e := newEngine(t, vllmBody(1, 2, [3]float64{}, 0))
	e.with(func(e *engine) { e.hits = make(chan struct{}, 1) })
	s, err := New(Config{URL: e.url(), Preset: "vllm", Interval: 5 * time.Millisecond, CSV: failWriter{}}, origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-e.hits
	<-e.hits
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Run = %v, want the engine.csv error", err)
	}
	if len(s.Samples()) == 0 {
		t.Error("samples not kept in memory after the CSV failed")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
