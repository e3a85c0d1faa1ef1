// Command loadgen benchmarks surge's client side: it drives the real
// pipeline of a live run — schedule.Build (constant arrivals), a
// workload.Generator per goroutine, loadgen.Open, the openai.Client, every
// record judged by analyze.Judge, written by record.Writer to a temporary
// file and kept in memory as `surge run` does — against an SSE server
// (bench/sseserver), at one rate for one duration, and reports how well the
// generator kept its schedule and what it cost.
//
// # What it reports
//
//	asked      the constant arrival rate λ, arrivals/s
//	achieved   sent ÷ (last SentNs + 1/λ) in arrivals/s: the rate at which sends
//	           actually happened. A generator that keeps up sends the last
//	           arrival at D − 1/λ, so achieved = λ; one that falls behind by L
//	           at the end gets λ·D/(D + L). (Sent ÷ D alone would read 100 %
//	           for a generator that sends every arrival late.)
//	lag        schedule lag SentNs − ScheduledNs of every sent record:
//	           P50, P99 (nearest rank on the sorted lags) and max; "steady"
//	           is the P99 of arrivals scheduled after the first 2 s, when the
//	           connections have been opened and the heap has grown
//	ttft       FirstTokenNs − SentNs, P50 and P99: the server's 50 ms plus what
//	           the client adds; it grows when either side saturates
//	cpu        user + system CPU-seconds of this process (getrusage) from just
//	           before the run to the records file closed, per 1,000 scheduled
//	           arrivals; the analysis afterwards is not counted
//	rss        peak resident set (ru_maxrss) at the end of the run, MiB
//	server     with --server-pid: the server's CPU-seconds over the same span
//	           (from /proc/PID/stat) and as a share of the run's wall time
//	load       /proc/loadavg 1-minute average at the start and at the end
//
// Output: a human summary on stderr; with --md a markdown table row on
// stdout (--md-header prints the header), which bench/run.sh collects.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// Options are the command's flags.
type Options struct {
	URL          string        // base URL including /v1
	Rate         float64       // arrivals/s
	Duration     time.Duration // schedule length
	Spin         time.Duration // loadgen.Config.Spin
	PromptTokens int           // fixed prompt length, tokens (4 bytes each)
	OutputTokens int           // max_tokens requested (the server sends its own count)
	MaxInFlight  int           // loadgen in-flight cap
	CPUProfile   string        // write a CPU profile of the run here
	Records      string        // keep the records file here ("" = temporary, removed)
	ServerPID    int           // measure this process's CPU too
	Label        string        // first column of the markdown row
	GenCPU       int           // the CPU the generator is pinned to (-1 = unknown)
	ServerCPU    int           // the CPU the server is pinned to (-1 = unknown)
}

func main() {
	var o Options
	flag.StringVar(&o.URL, "url", "http://127.0.0.1:8000/v1", "base URL of the SSE server, including /v1")
	flag.Float64Var(&o.Rate, "rate", 1000, "constant arrival rate, arrivals/s")
	flag.DurationVar(&o.Duration, "duration", 20*time.Second, "schedule length")
	flag.DurationVar(&o.Spin, "spin", 0, "loadgen spin: sleep until this long before each arrival, then spin (0 = off)")
	flag.IntVar(&o.PromptTokens, "prompt-tokens", 128, "prompt length in tokens (4 bytes each)")
	flag.IntVar(&o.OutputTokens, "max-tokens", 64, "max_tokens sent in each request")
	flag.IntVar(&o.MaxInFlight, "max-inflight", loadgen.DefaultMaxInFlight, "in-flight cap")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.StringVar(&o.Records, "records", "", "keep the records (JSONL) in this file instead of a removed temporary one")
	flag.IntVar(&o.ServerPID, "server-pid", 0, "process id of the server, to report its CPU time over the run")
	flag.StringVar(&o.Label, "label", "", "first column of the --md row (default: the rate)")
	flag.IntVar(&o.GenCPU, "gen-cpu", -1, "the CPU this process is pinned to, to report what else ran there")
	flag.IntVar(&o.ServerCPU, "server-cpu", -1, "the CPU the server is pinned to, to report what else ran there")
	md := flag.Bool("md", false, "print a markdown table row on stdout")
	mdHeader := flag.Bool("md-header", false, "print the markdown table header and exit")
	flag.Parse()
	if *mdHeader {
		fmt.Print(mdHead)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st.summary(os.Stderr)
	if *md {
		label := o.Label
		if label == "" {
			label = strconv.FormatFloat(o.Rate, 'f', -1, 64)
		}
		st.row(os.Stdout, label)
	}
}

func run(ctx context.Context, o Options) (*Stats, error) {
	if o.Rate <= 0 || o.Duration <= 0 {
		return nil, errors.New("loadgen bench: rate and duration must be > 0")
	}
	plan := schedule.Plan{Phases: []schedule.Phase{{Name: "bench", Duration: o.Duration, Rate: o.Rate, Arrival: schedule.ArrivalConstant}}}
	arrivals, err := schedule.Build(plan, 1)
	if err != nil {
		return nil, err
	}
	prof := workload.Profile{Name: "bench", Prompt: workload.Fixed(o.PromptTokens), Output: workload.Fixed(o.OutputTokens), MaxTokens: o.OutputTokens}
	wcfg := workload.Config{Profile: prof, Seed: 1, Salt: uint64(time.Now().UnixNano())}
	if _, err := workload.New(wcfg); err != nil {
		return nil, err
	}
	pool := sync.Pool{New: func() any {
		g, _ := workload.New(wcfg) // validated above
		return g
	}}
	build := func(a *schedule.Arrival) workload.Request {
		g := pool.Get().(*workload.Generator)
		r := g.Generate(*a)
		pool.Put(g)
		return r
	}

	path := o.Records
	if path == "" {
		dir, err := os.MkdirTemp("", "surge-bench-")
		if err != nil {
			return nil, fmt.Errorf("loadgen bench: %w", err)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "requests.jsonl")
	}
	w, err := record.Create(path)
	if err != nil {
		return nil, err
	}
	defer w.Close()

	ccfg := openai.DefaultConfig()
	ccfg.BaseURL, ccfg.Model = o.URL, "bench"
	ccfg.MaxConns = min(o.MaxInFlight, 4096) // as experiment.executeLive

	// The sink of experiment.Execute: write the record, keep it in memory.
	var mu sync.Mutex
	var writeErr error
	recs := make([]record.Record, 0, len(arrivals))
	sink := func(r *record.Record) {
		err := w.Write(r)
		mu.Lock()
		if err != nil && writeErr == nil {
			writeErr = err
		}
		recs = append(recs, *r)
		mu.Unlock()
	}
	d := analyze.DefaultDeadlines
	lcfg := loadgen.Config{MaxInFlight: o.MaxInFlight, Spin: o.Spin, RunID: "bench", Profile: prof.Name,
		Judge: func(r *record.Record) bool { return analyze.Judge(r, d) }}

	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return nil, fmt.Errorf("loadgen bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("loadgen bench: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	st := &Stats{Asked: o.Rate, Scheduled: int64(len(arrivals)), Outcomes: map[record.Outcome]int64{}, ServerCPU: -1, OthersGen: -1, OthersServer: -1}
	st.Load0 = loadavg()
	busy0 := cpuBusy()
	srv0 := procCPU(o.ServerPID)
	cpu0 := cpuSeconds()
	origin := time.Now() // shared by the client and the driver
	client, err := openai.New(ccfg, origin)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdle()
	gen := loadgen.NewOpen(lcfg, origin, client, build, sink)
	runErr := gen.Run(ctx, arrivals)
	if err := w.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	st.Wall = time.Since(origin)
	st.CPU = cpuSeconds() - cpu0
	if srv1 := procCPU(o.ServerPID); srv0 >= 0 && srv1 >= 0 {
		st.ServerCPU = srv1 - srv0
	}
	if busy1 := cpuBusy(); busy0 != nil && busy1 != nil {
		if o.GenCPU >= 0 && o.GenCPU < len(busy1) {
			st.OthersGen = max(0, busy1[o.GenCPU]-busy0[o.GenCPU]-st.CPU)
		}
		if o.ServerCPU >= 0 && o.ServerCPU < len(busy1) && st.ServerCPU >= 0 {
			st.OthersServer = max(0, busy1[o.ServerCPU]-busy0[o.ServerCPU]-st.ServerCPU)
		}
	}
	st.RSSMiB = maxRSSMiB()
	st.Load1 = loadavg()
	pprof.StopCPUProfile() // the profile covers the run only (no-op without one)
	if runErr != nil {
		return nil, fmt.Errorf("loadgen bench: interrupted: %w", runErr)
	}
	if writeErr != nil {
		return nil, writeErr
	}
	st.analyze(recs)
	return st, nil
}
