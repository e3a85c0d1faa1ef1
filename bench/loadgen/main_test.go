package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
)

func TestRank(t *testing.T) {
	v := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name string
		v    []int64
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"one value", []int64{7}, 0.5, 7},
		{"median of ten is the fifth", v, 0.50, 5},
		{"p99 of ten is the largest", v, 0.99, 10},
		{"p90 of ten is the ninth", v, 0.90, 9},
		{"p100", v, 1, 10},
		{"p0 clamps to the first", v, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rank(tc.v, tc.q); got != tc.want {
				t.Errorf("rank(%v, %v) = %v, want %v", tc.v, tc.q, got, tc.want)
			}
		})
	}
}

// rec returns a sent, completed record scheduled at sched and sent lag later.
func rec(seq int64, sched, lag time.Duration) record.Record {
	r := record.New("x", seq, "bench", int64(sched))
	r.SentNs = int64(sched + lag)
	r.FirstTokenNs = r.SentNs + int64(50*time.Millisecond)
	r.DoneNs = r.FirstTokenNs + int64(300*time.Millisecond)
	r.Outcome, r.Status, r.Good = record.OK, 200, true
	return r
}

func TestAnalyze(t *testing.T) {
	const rate = 10.0 // arrivals/s: one every 100 ms over 1 s
	onTime := func() []record.Record {
		var out []record.Record
		for i := range 10 {
			out = append(out, rec(int64(i), time.Duration(i)*100*time.Millisecond, 0))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		recs     []record.Record
		achieved float64
		sent     int64
		lagMax   time.Duration
		drops    int64
	}{
		{"on schedule: achieved is the asked rate", onTime(), 10, 10, 0, 0},
		{"the last send 1 s late: 10 in 2 s", func() []record.Record {
			r := onTime()
			r[9] = rec(9, 900*time.Millisecond, time.Second)
			return r
		}(), 5, 10, time.Second, 0},
		{"a drop is neither sent nor completed", func() []record.Record {
			r := onTime()
			d := record.New("x", 9, "bench", int64(900*time.Millisecond))
			d.Outcome = record.GeneratorDrop
			r[9] = d
			return r
		}(), 10, 9, 0, 1},
		{"nothing sent", nil, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &Stats{Asked: rate, Outcomes: map[record.Outcome]int64{}}
			st.analyze(tc.recs)
			if st.Achieved < tc.achieved-1e-9 || st.Achieved > tc.achieved+1e-9 {
				t.Errorf("achieved %v/s, want %v/s", st.Achieved, tc.achieved)
			}
			if st.Sent != tc.sent || st.Completed != tc.sent {
				t.Errorf("sent %d, completed %d, want %d each", st.Sent, st.Completed, tc.sent)
			}
			if st.LagMax != tc.lagMax {
				t.Errorf("lag max %v, want %v", st.LagMax, tc.lagMax)
			}
			if got := st.Outcomes[record.GeneratorDrop]; got != tc.drops {
				t.Errorf("%d drops, want %d", got, tc.drops)
			}
		})
	}
}

func TestProcCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"this process", selfPID(), true},
		{"no pid", 0, false},
		{"a pid that does not exist", 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := procCPU(tc.pid)
			if (got >= 0) != tc.ok {
				t.Errorf("procCPU(%d) = %v, want a value: %v", tc.pid, got, tc.ok)
			}
		})
	}
}

func selfPID() int { return os.Getpid() }

func TestCPUSamplesAt(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := cpuSamples{{at(0), 1}, {at(10), 2}, {at(30), 2}, {at(40), 6}}
	for _, tc := range []struct {
		name    string
		samples cpuSamples
		t       time.Time
		want    float64
	}{
		{"on a sample", s, at(10), 2},
		{"halfway between two samples", s, at(5), 1.5},
		{"a quarter of the way", s, at(31), 2.4},
		{"flat between two equal samples", s, at(20), 2},
		{"the last sample", s, at(40), 6},
		{"before the first: the first", s, at(-5), 1},
		{"after the last: the last", s, at(50), 6},
		{"one sample", s[:1], at(7), 1},
		{"no samples", nil, at(7), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.samples.at(tc.t); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("at(%v) = %v, want %v", tc.t.Sub(t0), got, tc.want)
			}
		})
	}
}

func TestCPUTrace(t *testing.T) {
	start := cpuSample{time.Now(), cpuSeconds()}
	tr := startCPUTrace(start, start.At.Add(20*time.Millisecond), time.Millisecond)
	time.Sleep(40 * time.Millisecond) // real time: the trace samples a real clock
	mid := cpuSample{time.Now(), cpuSeconds()}
	time.Sleep(20 * time.Millisecond)
	s := tr.stop(cpuSample{time.Now(), cpuSeconds()}, cpuSample{}, mid)
	if len(s) < 4 {
		t.Fatalf("%d samples in 40 ms of 1 ms sampling, want the first, some sampled ones, the extra one and the last", len(s))
	}
	if s[1].At.Before(start.At.Add(20 * time.Millisecond)) {
		t.Errorf("sampled %v after the start, before the 20 ms it was asked to wait", s[1].At.Sub(start.At))
	}
	if !slices.Contains(s, mid) || s[0] != start {
		t.Errorf("the extra sample or the first is missing")
	}
	// Times strictly increase. CPU does not decrease among the trace's
	// own samples; the extra one is read on this goroutine (its clock and
	// CPU readings are two calls, racing the trace's), so next to it the
	// CPU may read a few µs backwards.
	var prev *cpuSample
	for i := 1; i < len(s); i++ {
		if !s[i].At.After(s[i-1].At) {
			t.Fatalf("sample %d at %v does not follow sample %d at %v", i, s[i].At.Sub(start.At), i-1, s[i-1].At.Sub(start.At))
		}
		if s[i] == mid {
			continue
		}
		if prev != nil && s[i].CPU < prev.CPU {
			t.Fatalf("sample %d (%v, %v): CPU below the sample before it (%v, %v)", i, s[i].At.Sub(start.At), s[i].CPU, prev.At.Sub(start.At), prev.CPU)
		}
		prev = &s[i]
	}
}

// sse is a minimal OpenAI chat endpoint: a role chunk, three content chunks,
// the finish and usage chunks and [DONE].
func sse(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"))
	fl.Flush()
	for range 3 {
		time.Sleep(time.Millisecond)
		w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok\"}}]}\n\n"))
		fl.Flush()
	}
	w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"))
}

// TestMeasure runs the benchmark against an httptest server and checks that
// it ran surge run's pipeline: every arrival sent and ok, the run folder
// written whole, the CPU accounted for in parts that add up.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: a 0.5 s run")
	}
	srv := httptest.NewServer(http.HandlerFunc(sse))
	defer srv.Close()
	opts := func(edit func(*Options)) Options {
		o := Options{URL: srv.URL + "/v1", Rate: 40, Duration: 500 * time.Millisecond, PromptTokens: 8, OutputTokens: 3,
			MaxInFlight: 100, GenCPU: -1, ServerCPU: -1}
		edit(&o)
		return o
	}
	const n = 20 // 40/s for 0.5 s

	t.Run("run folder kept with --out", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		st, err := measure(context.Background(), opts(func(o *Options) { o.Out = out }))
		if err != nil {
			t.Fatal(err)
		}
		if st.Scheduled != n || st.Sent != n || st.Outcomes[record.OK] != n || st.Good != n {
			t.Errorf("scheduled %d, sent %d, ok %d, good %d; want %d each", st.Scheduled, st.Sent, st.Outcomes[record.OK], st.Good, n)
		}
		if st.Achieved <= 0 || st.TTFTP50 <= 0 {
			t.Errorf("achieved %v/s, TTFT p50 %v: want both > 0", st.Achieved, st.TTFTP50)
		}
		if st.CPURun <= 0 || st.CPUAnalysis < 0 || st.CPUFiles < 0 || math.Abs(st.CPURun+st.CPUAnalysis+st.CPUFiles-st.CPU) > 1e-9 {
			t.Errorf("cpu %v = run %v + analysis %v + files %v: want the parts ≥ 0 (run > 0) and adding up", st.CPU, st.CPURun, st.CPUAnalysis, st.CPUFiles)
		}
		if st.RunWall <= 0 || st.RunWall > st.Wall {
			t.Errorf("run phase %v of %v: want 0 < run ≤ all", st.RunWall, st.Wall)
		}
		r, err := rundir.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		nrec := 0
		if err := r.Records(func(*record.Record) error { nrec++; return nil }); err != nil {
			t.Fatal(err)
		}
		if nrec != n || r.Manifest.Command != "bench" || r.Manifest.Model != "bench" || len(r.Summary) == 0 {
			t.Errorf("run folder: %d records, command %q, model %q, summary %d bytes; want %d, bench, bench, some",
				nrec, r.Manifest.Command, r.Manifest.Model, len(r.Summary), n)
		}
		entries, _ := os.ReadDir(out)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if want := []string{"manifest.json", "requests.jsonl", "summary.json", "timeseries.csv"}; !slices.Equal(names, want) {
			t.Errorf("run folder holds %v, want %v (and no lock left behind)", names, want)
		}
	})

	t.Run("records kept with --records, the temporary folder removed", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "recs.jsonl")
		if _, err := measure(context.Background(), opts(func(o *Options) { o.Records = file })); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(b, []byte("\n")); lines != n {
			t.Errorf("%s: %d lines, want %d", file, lines, n)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s holds %d entries, want only the records file", dir, len(entries))
		}
	})

	t.Run("sad paths", func(t *testing.T) {
		full := t.TempDir()
		if err := os.WriteFile(filepath.Join(full, "notes.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			edit func(*Options)
			want string // the error's text, or "" to match rundir.ErrFolder
		}{
			{"no rate", func(o *Options) { o.Rate = 0 }, "loadgen bench: rate and duration must be > 0"},
			{"no prompt", func(o *Options) { o.PromptTokens = 0 }, "loadgen bench: prompt-tokens and max-tokens must be > 0"},
			{"--out and --records", func(o *Options) { o.Out, o.Records = "a", "b" }, "loadgen bench: give --out (the run folder, requests.jsonl included) or --records, not both"},
			{"a bad URL is the run options' error", func(o *Options) { o.URL = "ftp://x" }, `loadgen bench: target: must be an http:// or https:// URL, got "ftp://x"`},
			{"a folder holding other files", func(o *Options) { o.Out = full }, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := measure(context.Background(), opts(tc.edit))
				switch {
				case err == nil:
					t.Fatal("no error")
				case tc.want == "" && !errors.Is(err, rundir.ErrFolder):
					t.Errorf("error %q does not match rundir.ErrFolder", err)
				case tc.want != "" && err.Error() != tc.want:
					t.Errorf("error %q, want %q", err, tc.want)
				}
			})
		}
	})
}
