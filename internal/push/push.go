// Package push sends a run's numbers to where users already watch their
// services, while the run goes and when it ends: a Prometheus
// remote-write endpoint (--metrics-out prometheus-rw=URL, remote-write
// 1.0: snappy-compressed protobuf in the Prometheus project's own types)
// and an OTLP metrics endpoint over HTTP (--metrics-out otlp=URL,
// protobuf, named after OpenTelemetry's GenAI semantic conventions where
// a name exists).
//
// Pushing never blocks the run: Push hands a batch to each endpoint's
// queue and returns; a goroutine per endpoint sends, retries a failed
// send (a network error, 429 or 5xx) a few times with backoff, and drops
// the oldest batch when the queue is full. Every batch sent, failed or
// dropped is counted, and Close reports the counts, so that a warning can
// say what did not arrive. The run's files never depend on a push.
package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Kinds of endpoint, as --metrics-out names them.
const (
	KindRemoteWrite = "prometheus-rw"
	KindOTLP        = "otlp"
)

// Target is one --metrics-out value: a kind and its URL.
type Target struct {
	Kind string
	URL  string
}

// String is the target as the user wrote it, without credentials or
// query (a token in the URL never reaches a log).
func (t Target) String() string { return t.Kind + "=" + record.RedactURL(t.URL) }

// ParseTarget reads KIND=URL: prometheus-rw=http://host:9090/api/v1/write
// or otlp=http://host:4318 (the path /v1/metrics is added when the URL
// has none).
func ParseTarget(s string) (Target, error) {
	kind, raw, ok := strings.Cut(s, "=")
	if !ok || raw == "" || strings.Contains(kind, "://") {
		return Target{}, fmt.Errorf("want KIND=URL with KIND %s or %s, got %q", KindRemoteWrite, KindOTLP, record.RedactURL(s))
	}
	if kind != KindRemoteWrite && kind != KindOTLP {
		return Target{}, fmt.Errorf("unknown kind %q (want %s=URL or %s=URL)", kind, KindRemoteWrite, KindOTLP)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("%s: want an http:// or https:// URL, got %q", kind, record.RedactURL(raw))
	}
	if kind == KindOTLP && (u.Path == "" || u.Path == "/") {
		u.Path = "/v1/metrics"
	}
	return Target{Kind: kind, URL: u.String()}, nil
}

// Policy is how an endpoint is pushed to.
type Policy struct {
	Queue    int           // batches waiting at most; the oldest is dropped beyond
	Attempts int           // tries per batch (1 = no retry)
	Backoff  time.Duration // before the second try; doubled each time
	Timeout  time.Duration // per try
}

// DefaultPolicy holds a minute of batches at one a second, tries each
// batch 4 times over about 2 s, and gives each try 5 s.
var DefaultPolicy = Policy{Queue: 60, Attempts: 4, Backoff: 250 * time.Millisecond, Timeout: 5 * time.Second}

// Stats is what became of the batches pushed to one endpoint.
type Stats struct {
	Target    Target
	Batches   int // pushed (handed to the queue)
	Delivered int // accepted by the endpoint (2xx)
	Failed    int // given up on after every attempt, or refused with a 4xx
	Dropped   int // dropped from a full queue, or still queued at Close
	Retries   int // tries beyond the first
	Samples   int // samples delivered
	Lost      int // samples failed or dropped
	LastError string
}

// OK reports whether every batch arrived.
func (s Stats) OK() bool { return s.Failed == 0 && s.Dropped == 0 }

// Warning says what did not arrive, naming the flag and the endpoint; ""
// when everything did.
func (s Stats) Warning() string {
	if s.OK() {
		return ""
	}
	msg := fmt.Sprintf("--metrics-out %s: %d of %d pushes delivered (%d samples); %d failed, %d dropped, %d samples lost",
		s.Target, s.Delivered, s.Batches, s.Samples, s.Failed, s.Dropped, s.Lost)
	if s.LastError != "" {
		msg += "; last error: " + s.LastError
	}
	return msg + ". The run and its files are not affected."
}

// Pusher sends batches to every target.
type Pusher struct {
	sinks []*sink
}

// New starts a pusher to targets with client (nil: a client of its own)
// and policy; version is surge's, for OTLP's resource.
func New(targets []Target, client *http.Client, policy Policy, version string) *Pusher {
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second}}
	}
	p := &Pusher{}
	for _, t := range targets {
		s := &sink{target: t, client: client, policy: policy, version: version, wake: make(chan struct{}, 1), done: make(chan struct{})}
		s.stats.Target = t
		s.ctx, s.cancel = context.WithCancel(context.Background())
		go s.run()
		p.sinks = append(p.sinks, s)
	}
	return p
}

// Push queues b for every target and returns at once. Nil-safe.
func (p *Pusher) Push(b *Batch) {
	if p == nil {
		return
	}
	for _, s := range p.sinks {
		s.enqueue(b)
	}
}

// Close sends what is queued, waiting until ctx is done at most, stops,
// and returns each target's stats. Nil-safe.
func (p *Pusher) Close(ctx context.Context) []Stats {
	if p == nil {
		return nil
	}
	for _, s := range p.sinks {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.signal()
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range p.sinks {
			s.cancel()
		}
	})
	defer stop()
	var out []Stats
	for _, s := range p.sinks {
		<-s.done
		s.mu.Lock()
		for _, b := range s.queue { // ctx ended first
			s.stats.Dropped++
			s.stats.Lost += b.Samples()
		}
		s.queue = nil
		out = append(out, s.stats)
		s.mu.Unlock()
	}
	return out
}

// sink is one target's queue and sender.
type sink struct {
	target  Target
	client  *http.Client
	policy  Policy
	version string
	ctx     context.Context
	cancel  context.CancelFunc
	wake    chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	queue   []*Batch
	closing bool
	stats   Stats
}

func (s *sink) enqueue(b *Batch) {
	s.mu.Lock()
	s.stats.Batches++
	if len(s.queue) >= max(s.policy.Queue, 1) {
		s.stats.Dropped++
		s.stats.Lost += s.queue[0].Samples()
		s.queue = s.queue[1:]
	}
	s.queue = append(s.queue, b)
	s.mu.Unlock()
	s.signal()
}

func (s *sink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sink) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		var b *Batch
		if len(s.queue) > 0 {
			b = s.queue[0]
			s.queue = s.queue[1:]
		}
		closing := s.closing
		s.mu.Unlock()
		if b == nil {
			if closing {
				return
			}
			select {
			case <-s.wake:
			case <-s.ctx.Done():
				return
			}
			continue
		}
		if s.ctx.Err() != nil {
			s.mu.Lock()
			s.queue = append([]*Batch{b}, s.queue...) // counted as dropped by Close
			s.mu.Unlock()
			return
		}
		s.send(b)
	}
}

// send tries b up to Attempts times; a 4xx other than 429 is not retried.
func (s *sink) send(b *Batch) {
	body, ctype, err := s.encode(b)
	if err != nil {
		s.finish(b, false, 0, err)
		return
	}
	wait := s.policy.Backoff
	tries := 0
	for {
		tries++
		retry, err := s.try(body, ctype)
		if err == nil {
			s.finish(b, true, tries-1, nil)
			return
		}
		if !retry || tries >= max(s.policy.Attempts, 1) {
			s.finish(b, false, tries-1, err)
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			s.finish(b, false, tries-1, err)
			return
		}
		wait *= 2
	}
}

func (s *sink) finish(b *Batch, ok bool, retries int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Retries += retries
	if ok {
		s.stats.Delivered++
		s.stats.Samples += b.Samples()
		return
	}
	s.stats.Failed++
	s.stats.Lost += b.Samples()
	if err != nil {
		s.stats.LastError = err.Error()
	}
}

func (s *sink) encode(b *Batch) (body []byte, ctype string, err error) {
	switch s.target.Kind {
	case KindRemoteWrite:
		body, err = remoteWrite(b)
		return body, "application/x-protobuf", err
	default:
		body, err = otlpMetrics(b, s.version)
		return body, "application/x-protobuf", err
	}
}

// errStatus is an endpoint's refusal, naming its status (never its body,
// which may echo what was sent).
type errStatus struct{ code int }

func (e errStatus) Error() string {
	return fmt.Sprintf("answered %d %s", e.code, http.StatusText(e.code))
}

// try posts body once; retry says whether another try may succeed.
func (s *sink) try(body []byte, ctype string) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.policy.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.target.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "surge/"+s.version)
	if s.target.Kind == KindRemoteWrite {
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, which may carry a token
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", s.policy.Timeout)
		}
		return true, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode/100 == 5:
		return true, errStatus{resp.StatusCode}
	default:
		return false, errStatus{resp.StatusCode}
	}
}
