package simhttp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/sim"
)

// BenchmarkStreams measures how many concurrent SSE streams and streamed
// tokens per second the HTTP simulator sustains on this machine. One
// iteration is one wave: every stream is opened at once, each generates
// maxTokens tokens (ignore_eos) on an engine whose step time is fixed, so
// the engine's own rate is streams/step tokens per second. The clients run
// in the same process over loopback and are raw: a TCP connection (dialled
// before the wave starts), a hand-written request, the stdlib chunked decoder and bufio.ReadSlice per
// SSE line.
//
// Reported per wave: tokens/s delivered to the clients, peak concurrent
// open streams, slowdown (wall time over the engine's ideal time, 1.00 =
// the server kept up), CPU-seconds of the process (server and clients
// together, getrusage), peak RSS, peak Go heap, and heap allocations of
// the whole process (server and clients, per-request costs included)
// divided by the tokens streamed.
//
//	go test -run '^$' -bench BenchmarkStreams -benchtime 1x ./internal/simhttp/
func BenchmarkStreams(b *testing.B) {
	for _, bc := range []struct {
		streams   int
		step      time.Duration
		maxTokens int
	}{
		{2000, 30 * time.Millisecond, 128},
		{4000, 60 * time.Millisecond, 64},
		{2000, 10 * time.Millisecond, 256},
	} {
		b.Run(fmt.Sprintf("streams=%d/step=%v", bc.streams, bc.step), func(b *testing.B) {
			benchStreams(b, chatShape, bc.streams, bc.step, bc.maxTokens)
		})
	}
}

// BenchmarkResponsesStreams is BenchmarkStreams on /v1/responses: the
// same waves, each stream a Responses event stream of maxTokens
// output_text deltas (ignore_eos, vLLM's extension), ended by
// response.incomplete.
//
//	go test -run '^$' -bench BenchmarkResponsesStreams -benchtime 1x ./internal/simhttp/
func BenchmarkResponsesStreams(b *testing.B) {
	b.Run("streams=2000/step=30ms", func(b *testing.B) {
		benchStreams(b, responsesShape, 2000, 30*time.Millisecond, 128)
	})
}

// streamShape is what benchStreams sends and counts: the request of a
// stream of maxTokens tokens, a token's line and the last line.
type streamShape struct {
	path       string
	body       func(maxTokens int) string
	token, end []byte // a token line contains token; the last line starts with end
}

var (
	chatShape = streamShape{
		path: "/v1/chat/completions",
		body: func(n int) string {
			return fmt.Sprintf(`{"model":"surge-sim","messages":[{"role":"user","content":"Say something."}],"max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, n)
		},
		token: []byte(`"delta":{"content":"`), end: []byte("data: [DONE]\n"),
	}
	responsesShape = streamShape{
		path: "/v1/responses",
		body: func(n int) string {
			return fmt.Sprintf(`{"model":"surge-sim","input":"Say something.","max_output_tokens":%d,"ignore_eos":true,"stream":true}`, n)
		},
		token: []byte(`data: {"type":"response.output_text.delta"`), end: []byte(`data: {"type":"response.incomplete"`),
	}
)

func benchStreams(b *testing.B, shape streamShape, streams int, step time.Duration, maxTokens int) {
	cfg := sim.DefaultConfig()
	cfg.MaxNumSeqs = streams
	cfg.MaxNumBatchedTokens = 1 << 20
	cfg.KVCacheTokens = 1 << 24
	cfg.MaxModelLen = 4096
	cfg.StepBase = step
	cfg.StepPerDecodeSeq = 0
	cfg.StepPerPrefillToken = 0
	s, base, err := Listen(context.Background(), "127.0.0.1:0", cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1")
	body := shape.body(maxTokens)
	req := []byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", shape.path, addr, len(body), body))

	var peakHeap atomic.Uint64
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() { // peak heap, sampled
		defer close(samplerDone)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peakHeap.Load() {
				peakHeap.Store(ms.HeapAlloc)
			}
			select {
			case <-t.C:
			case <-stopSampler:
				return
			}
		}
	}()
	defer func() { close(stopSampler); <-samplerDone }()

	var tokens, open, peakOpen, failed atomic.Int64
	var cpu, wall, ramp time.Duration
	var mallocs uint64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		conns, err := dialAll(addr, streams)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mallocs0 := ms.Mallocs
		cpu0 := cpuTime()
		start := time.Now()
		var wg, opened sync.WaitGroup
		opened.Add(streams)
		go func() { opened.Wait(); ramp += time.Since(start) }()
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := rawStream(c, shape, req, &open, &peakOpen, opened.Done)
				tokens.Add(int64(n))
				if err != nil || n != maxTokens {
					if failed.Add(1) == 1 {
						b.Errorf("stream: %d tokens, err %v", n, err)
					}
				}
			}()
		}
		wg.Wait()
		wall += time.Since(start)
		cpu += cpuTime() - cpu0
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - mallocs0
	}
	b.StopTimer()
	ideal := time.Duration(b.N) * time.Duration(maxTokens+1) * step // prefill step + one step per token
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(tokens.Load())/wall.Seconds(), "tokens/s")
	b.ReportMetric(float64(peakOpen.Load()), "streams")
	b.ReportMetric(wall.Seconds()/ideal.Seconds(), "slowdown")
	b.ReportMetric(ramp.Seconds()/float64(b.N), "open-all-s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/wave")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MB")
	b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(mallocs)/float64(tokens.Load()), "allocs/token")
	b.ReportMetric(float64(failed.Load()), "failed")
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dialAll opens n connections to addr, at most 64 dials at a time (a
// burst of thousands of SYNs overflows the listen backlog and costs
// retransmission seconds that would be the client's, not the server's).
func dialAll(addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return conns, nil
}

// rawStream sends one prepared request on connection c, counts the
// token lines of the SSE response until its last line and closes c.
func rawStream(c net.Conn, shape streamShape, req []byte, open, peak *atomic.Int64, opened func()) (int, error) {
	var once sync.Once
	defer once.Do(opened) // also on failure
	defer c.Close()
	if _, err := c.Write(req); err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(c, 4096)
	status, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200")) {
		return 0, fmt.Errorf("status line %q", status)
	}
	chunked := false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		if bytes.EqualFold(line, []byte("Transfer-Encoding: chunked\r\n")) {
			chunked = true
		}
	}
	if !chunked {
		return 0, fmt.Errorf("response not chunked")
	}
	once.Do(opened)
	n := open.Add(1)
	for {
		p := peak.Load()
		if n <= p || peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer open.Add(-1)
	sse := bufio.NewReaderSize(httputil.NewChunkedReader(br), 4096)
	tokens := 0
	for {
		line, err := sse.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // no last line
			}
			return tokens, err
		}
		if bytes.Contains(line, shape.token) {
			tokens++
		} else if bytes.HasPrefix(line, shape.end) {
			return tokens, nil
		}
	}
}
