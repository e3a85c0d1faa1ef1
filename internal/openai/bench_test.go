package openai

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// benchServerEnv makes the test binary run the benchmark's SSE server
// instead of the tests, so that the client's CPU is measured alone.
const benchServerEnv = "SURGE_OPENAI_BENCH_SERVER"

// benchTokens is the number of content chunks per benchmark response.
const benchTokens = 64

// runBenchServer serves a fast, fixed SSE response on a loopback port: a
// role chunk, 64 content chunks and a usage chunk in vLLM's format, then
// [DONE], each flushed on its own. It prints its address and exits when
// stdin closes.
func runBenchServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	events := [][]byte{[]byte(data(vllmRole))}
	for range benchTokens {
		events = append(events, []byte(data(vllmChunk)))
	}
	events = append(events, []byte(data(`{"id":"chatcmpl-7f3a","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":128,"completion_tokens":64,"total_tokens":192}}`)), []byte(done))
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var (
		mu      sync.Mutex
		held    int                   // /hold streams of this round that have sent their first chunks
		release = make(chan struct{}) // closed (and replaced: a new round) by /release
	)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/held": // how many /hold streams are waiting
			mu.Lock()
			fmt.Fprint(w, held)
			mu.Unlock()
			return
		case "/release": // let every /hold stream finish; a new round starts
			mu.Lock()
			close(release)
			release, held = make(chan struct{}), 0
			mu.Unlock()
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i, e := range events {
			_, _ = w.Write(e)
			f.Flush()
			if i == 1 && strings.HasPrefix(r.URL.Path, "/hold/") {
				mu.Lock()
				held++
				ch := release
				mu.Unlock()
				<-ch
			}
		}
	})}
	_ = srv.Serve(ln)
}

// startBenchServer runs runBenchServer in a child process and returns its address.
func startBenchServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return strings.TrimSpace(addr)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStream measures whole requests over loopback against a fast SSE
// server in another process (64 content chunks each): wall time per request
// (ns/op), the client process's CPU per request (cpu-ns/req) and its
// allocations per request.
func BenchmarkStream(b *testing.B) {
	addr := startBenchServer(b)
	for _, tc := range benchCases([]int{1, 16}) {
		conc := tc.n
		b.Run(tc.name("conc"), func(b *testing.B) {
			c := newTestClient(b, "http://"+addr+"/v1", func(c *Config) { c.MaxConns = conc; c.Transport = tc.transport })
			check := func(rec *record.Record) {
				if rec.Outcome != record.OK || rec.Chunks != benchTokens || rec.OutputTokens != benchTokens {
					b.Errorf("outcome %s %q chunks %d", rec.Outcome, rec.Error, rec.Chunks) // Errorf: RunParallel goroutines may not call Fatal
				}
			}
			for range conc { // open the connections
				rec := record.New("w", 0, "warmup", 0)
				c.Do(context.Background(), &testReq, &rec)
				check(&rec)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			if conc == 1 {
				for i := 0; i < b.N; i++ {
					rec := record.New("b", int64(i), "baseline", 0)
					c.Do(context.Background(), &testReq, &rec)
					check(&rec)
				}
			} else {
				b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						rec := record.New("b", 0, "baseline", 0)
						c.Do(context.Background(), &testReq, &rec)
						check(&rec)
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/req")
		})
	}
}

// benchCase is one transport at one size.
type benchCase struct {
	transport string
	n         int
}

func (tc benchCase) name(size string) string {
	return fmt.Sprintf("transport=%s/%s=%d", tc.transport, size, tc.n)
}

// benchCases is every size with surge's transport and net/http's.
func benchCases(ns []int) []benchCase {
	var cs []benchCase
	for _, tr := range []string{TransportSurge, TransportGo} {
		for _, n := range ns {
			cs = append(cs, benchCase{tr, n})
		}
	}
	return cs
}

// benchInFlight is the number of streams BenchmarkInFlight holds open.
const benchInFlight = 2000

// BenchmarkInFlight measures what one open stream costs the client: it
// starts benchInFlight requests, each on its own goroutine as loadgen
// sends them, against a server (another process) that sends the role and
// first content chunk and then holds every stream open; when all are
// held it reads the process's memory, releases them and checks every
// record. Reported per stream: heap in use (B), goroutine stacks (B),
// goroutines, and their sum (B/stream); the figures are for the client
// alone (records, request goroutines, net/http's two per connection).
// With SURGE_INFLIGHT_HEAP=FILE it also writes a heap profile taken while
// the streams are held (go tool pprof -sample_index=inuse_space FILE).
func BenchmarkInFlight(b *testing.B) {
	addr := startBenchServer(b)
	base := "http://" + addr
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if prof := os.Getenv("SURGE_INFLIGHT_HEAP"); prof != "" {
		runtime.MemProfileRate = 512
	}
	mem := func() (heap, stack uint64, gs int) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
	}
	for _, tr := range []string{TransportSurge, TransportGo} {
		b.Run("transport="+tr, func(b *testing.B) {
			c := newTestClient(b, base+"/hold/"+tr+"/v1", func(c *Config) { c.MaxConns = benchInFlight; c.Timeout = time.Minute; c.Transport = tr })
			benchInFlightOnce(b, c, base, get, mem)
		})
	}
}

func benchInFlightOnce(b *testing.B, c *Client, base string, get func(string) string, mem func() (uint64, uint64, int)) {
	b.ResetTimer()
	for range b.N {
		heap0, stack0, gs0 := mem()
		recs := make([]record.Record, benchInFlight)
		var wg sync.WaitGroup
		for i := range recs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := testReq
				rec := record.New("b", int64(i), "baseline", 0)
				c.Do(context.Background(), &req, &rec)
				recs[i] = rec
			}()
		}
		for get("/held") != fmt.Sprint(benchInFlight) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // the last first chunks are read
		heap1, stack1, gs1 := mem()
		if prof := os.Getenv("SURGE_INFLIGHT_HEAP"); prof != "" {
			f, err := os.Create(prof)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		get("/release")
		wg.Wait()
		for i := range recs {
			if rec := &recs[i]; rec.Outcome != record.OK || rec.Chunks != benchTokens {
				b.Fatalf("stream %d: outcome %s %q, %d chunks", i, rec.Outcome, rec.Error, rec.Chunks)
			}
		}
		n := float64(benchInFlight)
		heap, stack := float64(int64(heap1)-int64(heap0))/n, float64(int64(stack1)-int64(stack0))/n
		b.ReportMetric(heap, "heap-B/stream")
		b.ReportMetric(stack, "stack-B/stream")
		b.ReportMetric(float64(gs1-gs0)/n, "goroutines/stream")
		b.ReportMetric(heap+stack, "B/stream")
		c.CloseIdle()
	}
}
