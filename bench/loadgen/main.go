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
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
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

// Stats is what one run measured.
type Stats struct {
	Asked, Achieved        float64 // arrivals/s (see the package doc)
	Scheduled, Sent        int64
	Completed              int64
	Outcomes               map[record.Outcome]int64
	Good                   int64
	LagP50, LagP99, LagMax time.Duration
	SteadyLagP99           time.Duration // lag P99 of arrivals scheduled after SteadyAfter
	TTFTP50, TTFTP99       time.Duration
	CPU                    float64 // CPU-seconds of the run
	Wall                   time.Duration
	RSSMiB                 float64
	ServerCPU              float64 // -1 when unknown
	Load0, Load1           string
	OthersGen              float64 // CPU-seconds others used on the generator's CPU; -1 unknown
	OthersServer           float64 // CPU-seconds others used on the server's CPU; -1 unknown
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

// SteadyAfter is where the steady-state lag percentile starts: by then the
// pool has opened its connections (TTFT + stream length ≈ 0.4 s of arrivals)
// and the heap has grown to its working size.
const SteadyAfter = 2 * time.Second

// analyze fills the schedule and latency statistics from the records.
func (st *Stats) analyze(recs []record.Record) {
	var lags, steady, ttfts []int64
	var lastSent int64
	for i := range recs {
		r := &recs[i]
		st.Outcomes[r.Outcome]++
		if r.Outcome != record.GeneratorDrop {
			st.Completed++
		}
		if r.Good {
			st.Good++
		}
		if r.Sent() {
			st.Sent++
			lags = append(lags, r.Lag())
			if r.ScheduledNs >= int64(SteadyAfter) {
				steady = append(steady, r.Lag())
			}
			lastSent = max(lastSent, r.SentNs)
		}
		if v := r.TTFTSend(); v != record.None {
			ttfts = append(ttfts, v)
		}
	}
	if st.Sent > 0 {
		span := float64(lastSent)/1e9 + 1/st.Asked
		st.Achieved = float64(st.Sent) / span
	}
	slices.Sort(lags)
	slices.Sort(ttfts)
	slices.Sort(steady)
	st.SteadyLagP99 = rank(steady, 0.99)
	st.LagP50, st.LagP99 = rank(lags, 0.50), rank(lags, 0.99)
	if len(lags) > 0 {
		st.LagMax = time.Duration(lags[len(lags)-1])
	}
	st.TTFTP50, st.TTFTP99 = rank(ttfts, 0.50), rank(ttfts, 0.99)
}

// rank is the nearest-rank percentile of sorted v: v[⌈q·n⌉−1].
func rank(v []int64, q float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	i := int(float64(len(v))*q+0.999999999) - 1
	return time.Duration(v[max(0, min(i, len(v)-1))])
}

func (st *Stats) outcomes() string {
	var parts []string
	for _, o := range record.Outcomes {
		if n := st.Outcomes[o]; n > 0 {
			parts = append(parts, string(o)+" "+strconv.FormatInt(n, 10))
		}
	}
	return strings.Join(parts, ", ")
}

func (st *Stats) cpuPer1k() float64 { return st.CPU / float64(st.Scheduled) * 1000 }

func (st *Stats) serverShare() string {
	if st.ServerCPU < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*st.ServerCPU/st.Wall.Seconds())
}

// others is what other processes used on the two pinned CPUs, as shares
// of the run's wall time.
func (st *Stats) others() string {
	f := func(v float64) string {
		if v < 0 {
			return "?"
		}
		return fmt.Sprintf("%.0f %%", 100*v/st.Wall.Seconds())
	}
	return f(st.OthersGen) + " / " + f(st.OthersServer)
}

func (st *Stats) summary(w io.Writer) {
	fmt.Fprintf(w, "asked %.0f/s  achieved %.1f/s (%.2f %%)  scheduled %d  sent %d  completed %d  good %d\n",
		st.Asked, st.Achieved, 100*st.Achieved/st.Asked, st.Scheduled, st.Sent, st.Completed, st.Good)
	fmt.Fprintf(w, "outcomes: %s\n", st.outcomes())
	fmt.Fprintf(w, "schedule lag p50 %v  p99 %v  max %v; p99 after the first %v: %v\n", ms(st.LagP50), ms(st.LagP99), ms(st.LagMax), SteadyAfter, ms(st.SteadyLagP99))
	fmt.Fprintf(w, "ttft (send) p50 %v  p99 %v\n", ms(st.TTFTP50), ms(st.TTFTP99))
	fmt.Fprintf(w, "GOMAXPROCS %d; cpu %.2f s over %.1f s wall = %.3f CPU-s per 1,000 requests; peak RSS %.0f MiB; server cpu %s; others on gen/server CPU %s; load %s → %s\n",
		runtime.GOMAXPROCS(0), st.CPU, st.Wall.Seconds(), st.cpuPer1k(), st.RSSMiB, st.serverShare(), st.others(), st.Load0, st.Load1)
}

const mdHead = "| rate | achieved/s | sent | completed | outcomes | lag p50 | lag p99 | lag max | lag p99 (t ≥ 2 s) | TTFT p50 / p99 | CPU-s per 1k | peak RSS | server CPU | others on gen / server CPU | load 1m |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

func (st *Stats) row(w io.Writer, label string) {
	fmt.Fprintf(w, "| %s | %.1f (%.2f %%) | %d | %d | %s | %s | %s | %s | %s | %s / %s | %.3f | %.0f MiB | %s | %s | %s→%s |\n",
		label, st.Achieved, 100*st.Achieved/st.Asked, st.Sent, st.Completed, st.outcomes(),
		ms(st.LagP50), ms(st.LagP99), ms(st.LagMax), ms(st.SteadyLagP99), ms(st.TTFTP50), ms(st.TTFTP99),
		st.cpuPer1k(), st.RSSMiB, st.serverShare(), st.others(), st.Load0, st.Load1)
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
}

// cpuSeconds is this process's user + system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// maxRSSMiB is this process's peak resident set (Linux reports KiB).
func maxRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// procCPU is the user + system CPU-seconds of process pid from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s), or -1.
func procCPU(pid int) float64 {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stt, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return float64(ut+stt) / 100
}

// cpuBusy returns each CPU's busy time so far in seconds (/proc/stat:
// everything but idle and iowait, in ticks of 1/100 s), or nil.
func cpuBusy() []float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	var out []float64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n != len(out) {
			return nil
		}
		var busy int64
		for i, v := range f[1:] {
			if i >= 8 { // guest time is already in user
				break
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil
			}
			if i != 3 && i != 4 { // idle, iowait
				busy += x
			}
		}
		out = append(out, float64(busy)/100)
	}
	return out
}

// loadavg is the 1-minute load average.
func loadavg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if s.Scan() {
		if v, _, ok := strings.Cut(s.Text(), " "); ok {
			return v
		}
	}
	return "?"
}
