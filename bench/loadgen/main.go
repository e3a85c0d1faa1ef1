// Command loadgen benchmarks surge's client side by running what `surge run`
// runs, against an SSE server (bench/sseserver), at one rate for one
// duration, and reports how well the generator kept its schedule and what it
// cost.
//
// It prepares a run.Env for the server (run.Prepare: model "bench", fixed
// prompt and output lengths, the default deadlines and timeout, quiet, no
// engine metrics), claims a run folder with rundir.Create — a temporary one,
// removed afterwards, unless --out — and calls env.Execute with one
// constant-rate phase, as `surge run` (experiment.Run) does. So the measured
// span holds the whole live pipeline: schedule.Build, a workload.Generator per
// goroutine, loadgen.Open, the openai.Client, analyze.Judge, the collector
// that keeps every record in memory, record.Writer flushed twice a second,
// the watcher and live-state plumbing (with no view drawn), and after the
// load the analysis (analyze.Records) and the writing of manifest.json,
// summary.json and timeseries.csv. It leaves out what `surge run` does after
// Execute returns: printing the phase table and rendering results.md/.csv/
// .json and report.html (as experiment.Run writes them).
//
// # What it reports
//
// The schedule and latency figures are computed from Result.Records, the
// records Execute returns:
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
//
// and the costs from the process's own accounting:
//
//	cpu        user + system CPU-seconds of this process (getrusage) from just
//	           before env.Execute to its return, per 1,000 scheduled arrivals:
//	           the run and everything Execute does after it
//	after      the part of cpu spent after the run phase, per 1,000 scheduled
//	           arrivals: from the end of the run (Result.Started +
//	           Result.Elapsed: the generator has stopped and the last response
//	           has ended) to Execute's return — closing requests.jsonl,
//	           sorting the records, the analysis and the files. The human
//	           summary splits it at Spec.Finish, which Execute calls after the
//	           analysis and before it writes the files. The CPU time at the
//	           end of the run is interpolated linearly between getrusage
//	           samples taken every millisecond from the end of the schedule
//	           on (none during the schedule, so as not to disturb it) and one
//	           taken at Spec.Finish; a busy process lets the sampler in at
//	           least every 10 ms (Go's preemption period), so the split is
//	           good to the CPU of one such interval, a few ms at most
//	rss        peak resident set (ru_maxrss) when Execute has returned, MiB:
//	           the run, the records kept in memory and the analysis
//	server     with --server-pid: the server's CPU-seconds (from
//	           /proc/PID/stat) over the same span as cpu, as a share of the run
//	           phase's wall time (Result.Elapsed; the server has nothing to do
//	           after the last response)
//	others     what other processes used on the two pinned CPUs over the same
//	           span (/proc/stat busy time minus this process's and the
//	           server's), as a share of the span's wall time
//	load       /proc/loadavg 1-minute average at the start and at the end
//
// A CPU profile (--cpuprofile) covers env.Execute, analysis and files
// included.
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
	"strings"
	"syscall"
	"time"

	"github.com/surge-bench/surge/internal/calibrate"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// Options are the command's flags.
type Options struct {
	URL          string        // base URL including /v1
	Rate         float64       // arrivals/s
	Duration     time.Duration // schedule length
	Spin         time.Duration // run.Options.Spin
	PromptTokens int           // fixed prompt length, tokens (4 bytes each)
	OutputTokens int           // max_tokens requested (the server sends its own count)
	MaxInFlight  int           // run.Options.MaxInFlight, the in-flight cap
	CPUProfile   string        // write a CPU profile of env.Execute here
	Out          string        // keep the run folder here ("" = temporary, removed)
	Records      string        // keep requests.jsonl as this file ("" = not kept)
	ServerPID    int           // measure this process's CPU too
	Label        string        // first column of the markdown row
	GenCPU       int           // the CPU the generator is pinned to (-1 = unknown)
	ServerCPU    int           // the CPU the server is pinned to (-1 = unknown)
	MetricsOut   []string      // run.Options.MetricsOut: push while the run goes
}

// strs is a repeatable string flag.
type strs []string

func (s *strs) String() string     { return strings.Join(*s, ",") }
func (s *strs) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var o Options
	flag.StringVar(&o.URL, "url", "http://127.0.0.1:8000/v1", "base URL of the SSE server, including /v1")
	flag.Float64Var(&o.Rate, "rate", 1000, "constant arrival rate, arrivals/s")
	flag.DurationVar(&o.Duration, "duration", 20*time.Second, "schedule length")
	flag.DurationVar(&o.Spin, "spin", 0, "loadgen spin: sleep until this long before each arrival, then spin (0 = off)")
	flag.IntVar(&o.PromptTokens, "prompt-tokens", 128, "prompt length in tokens (4 bytes each)")
	flag.IntVar(&o.OutputTokens, "max-tokens", 64, "max_tokens sent in each request")
	flag.IntVar(&o.MaxInFlight, "max-inflight", loadgen.DefaultMaxInFlight, "in-flight cap")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the run (env.Execute) to this file")
	flag.StringVar(&o.Out, "out", "", "keep the run folder (as surge run writes it) in this folder, which must be empty or absent")
	flag.StringVar(&o.Records, "records", "", "keep the records (requests.jsonl) in this file")
	flag.IntVar(&o.ServerPID, "server-pid", 0, "process id of the server, to report its CPU time over the run")
	flag.StringVar(&o.Label, "label", "", "first column of the --md row (default: the rate)")
	flag.IntVar(&o.GenCPU, "gen-cpu", -1, "the CPU this process is pinned to, to report what else ran there")
	flag.IntVar(&o.ServerCPU, "server-cpu", -1, "the CPU the server is pinned to, to report what else ran there")
	flag.Var((*strs)(&o.MetricsOut), "metrics-out", "push to this endpoint while the run goes, as surge's --metrics-out (repeatable), e.g. prometheus-rw=http://127.0.0.1:18081/api/v1/write")
	md := flag.Bool("md", false, "print a markdown table row on stdout")
	mdHeader := flag.Bool("md-header", false, "print the markdown table header and exit")
	flag.Parse()
	if *mdHeader {
		fmt.Print(mdHead)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := measure(ctx, o)
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

// runOptions are the options of `surge run --target URL` that the
// benchmark runs with.
func (o *Options) runOptions() run.Options {
	ro := run.DefaultOptions()
	ro.Target, ro.Model = o.URL, "bench"
	ro.PromptTokens, ro.OutputTokens = workload.FixedLength(o.PromptTokens), workload.FixedLength(o.OutputTokens)
	ro.MaxInFlight, ro.Spin = o.MaxInFlight, o.Spin
	ro.Quiet = true
	ro.Out = o.Out
	ro.MetricsOut = o.MetricsOut
	// The fake server's prompt counts are not a tokenizer's, and its
	// request counts are the benchmark's: no calibration requests.
	ro.PromptCalibration = calibrate.Off
	return ro
}

// validate says what is wrong with the options, if anything.
func (o *Options) validate() error {
	switch {
	case o.Rate <= 0 || o.Duration <= 0:
		return errors.New("loadgen bench: rate and duration must be > 0")
	case o.PromptTokens <= 0 || o.OutputTokens <= 0:
		return errors.New("loadgen bench: prompt-tokens and max-tokens must be > 0")
	case o.Out != "" && o.Records != "":
		return errors.New("loadgen bench: give --out (the run folder, requests.jsonl included) or --records, not both")
	}
	return nil
}

// runPath is the folder the run is written to: --out, or a temporary
// one that remove removes.
func (o *Options) runPath() (path string, remove func(), err error) {
	if o.Out != "" {
		return o.Out, func() {}, nil
	}
	// Beside the --records file, so that keeping it is a rename.
	parent := ""
	if o.Records != "" {
		parent = filepath.Dir(o.Records)
	}
	tmp, err := os.MkdirTemp(parent, "surge-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("loadgen bench: %w", err)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// startProfile starts a CPU profile into the file path (none when path
// is ""); stop stops it and closes the file.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("loadgen bench: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("loadgen bench: cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// othersCPU sets what other processes used on the pinned CPUs, from
// their busy time before (busy0) and after (busy1) less this process's
// and the server's: unknown (-1) where a CPU or a reading is missing.
func (st *Stats) othersCPU(o Options, busy0, busy1 []float64) {
	if busy0 != nil && busy1 != nil {
		if o.GenCPU >= 0 && o.GenCPU < len(busy1) {
			st.OthersGen = max(0, busy1[o.GenCPU]-busy0[o.GenCPU]-st.CPU)
		}
		if o.ServerCPU >= 0 && o.ServerCPU < len(busy1) && st.ServerCPU >= 0 {
			st.OthersServer = max(0, busy1[o.ServerCPU]-busy0[o.ServerCPU]-st.ServerCPU)
		}
	}
}

// analyzeRecords computes the schedule and latency statistics from the
// run's records.
func (st *Stats) analyzeRecords(res *run.Result) error {
	var recs []record.Record // the bench's own exact statistics, read back from requests.jsonl
	if err := res.Records.Each(func(r *record.Record) error { recs = append(recs, *r); return nil }); err != nil {
		return fmt.Errorf("loadgen bench: %w", err)
	}
	st.Scheduled = int64(len(recs)) // one record per scheduled arrival
	st.analyze(recs)
	return nil
}

// measure runs the benchmark: one env.Execute of a constant-rate phase.
func measure(ctx context.Context, o Options) (*Stats, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	// As cmd/surge: preparing outlives an interrupt; the run itself does not.
	env, err := run.Prepare(context.WithoutCancel(ctx), o.runOptions(), false, nil, nil, "bench/loadgen")
	if err != nil {
		return nil, fmt.Errorf("loadgen bench: %w", err)
	}
	defer env.Close()

	path, removeTmp, err := o.runPath()
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	d, err := rundir.Create(path, rundir.Options{Owner: "bench/loadgen"})
	if err != nil {
		return nil, fmt.Errorf("loadgen bench: %w", err)
	}
	defer d.Close()

	plan := schedule.Plan{Phases: []schedule.Phase{{Name: "bench", Duration: o.Duration, Rate: o.Rate, Arrival: schedule.ArrivalConstant}}}
	var analysed cpuSample // when Execute has analysed the records, before it writes the files
	spec := run.Spec{Name: "bench", Dir: d, Command: "bench", Plan: plan,
		Finish: func(*run.Result) { analysed = cpuSample{time.Now(), cpuSeconds()} }}

	stopProfile, err := startProfile(o.CPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()

	st := &Stats{Asked: o.Rate, Outcomes: map[record.Outcome]int64{}, ServerCPU: -1, OthersGen: -1, OthersServer: -1}
	st.Load0 = loadavg()
	busy0 := cpuBusy()
	srv0 := procCPU(o.ServerPID)
	start := cpuSample{time.Now(), cpuSeconds()}
	trace := startCPUTrace(start, start.At.Add(o.Duration), time.Millisecond)
	res, runErr := env.Execute(ctx, spec)
	end := cpuSample{time.Now(), cpuSeconds()}
	samples := trace.stop(end, analysed)
	pprof.StopCPUProfile() // the profile covers Execute only (no-op without one)
	srv1 := procCPU(o.ServerPID)
	busy1 := cpuBusy()
	st.RSSMiB = maxRSSMiB()
	st.Load1 = loadavg()
	if runErr != nil {
		return nil, fmt.Errorf("loadgen bench: %w", runErr)
	}
	if res.Partial {
		return nil, fmt.Errorf("loadgen bench: %s", res.PartialWhy)
	}

	st.Wall, st.RunWall = end.At.Sub(start.At), res.Elapsed
	st.CPU = end.CPU - start.CPU
	if analysed.At.IsZero() {
		return nil, errors.New("loadgen bench: Execute returned without calling Spec.Finish")
	}
	// Finish is a sample too, so the interpolation never reaches past it.
	st.CPURun = samples.at(res.Started.Add(res.Elapsed)) - start.CPU
	st.CPUAnalysis = analysed.CPU - start.CPU - st.CPURun
	st.CPUFiles = end.CPU - analysed.CPU
	if srv0 >= 0 && srv1 >= 0 {
		st.ServerCPU = srv1 - srv0
	}
	st.othersCPU(o, busy0, busy1)
	if err := st.analyzeRecords(res); err != nil {
		return nil, err
	}

	if o.Records != "" {
		if err := os.Rename(filepath.Join(d.Path(), "requests.jsonl"), o.Records); err != nil {
			return nil, fmt.Errorf("loadgen bench: keep the records: %w", err)
		}
	}
	return st, nil
}
