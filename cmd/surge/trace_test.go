package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/surge-bench/surge/internal/memnet"
	"github.com/surge-bench/surge/internal/record"
)

// A Mooncake trace: 0 s, 1.5 s and 7 s share blocks [1 2 3] (the last one
// all of the first's), 3 s shares [1 2]; 4.5 s and 6 s share nothing.
const mooncakeTrace = `{"timestamp": 0, "input_length": 1200, "output_length": 12, "hash_ids": [1, 2, 3]}
{"timestamp": 3000, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 4]}
{"timestamp": 1500, "input_length": 1500, "output_length": 20, "hash_ids": [1, 2, 3]}
{"timestamp": 4500, "input_length": 600, "output_length": 8, "hash_ids": [5, 6]}
{"timestamp": 6000, "input_length": 2000, "output_length": 30}
{"timestamp": 7000, "input_length": 1200, "output_length": 12, "hash_ids": [1, 2, 3]}
`

const azureTrace = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,19
2023-11-16 18:15:46.1,879,1
2023-11-16 18:15:47.0000000,100,7
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runVirtual runs surge in a synctest bubble over an in-memory network
// (the simulator is the target) and returns the exit code and stdout.
func runVirtual(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var code int
	var stdout, stderr bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		network = &memnet.Network{}
		defer func() { network = nil }()
		code = cli(context.Background(), args, &stdout, &stderr)
	})
	if !ran(code) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	return code, stdout.String()
}

// Replaying a Mooncake trace against the simulator: the format is found by
// its keys, every record carries the prefix tokens an earlier request had,
// and the manifest says what was replayed and the cache state it implies.
func TestReplayMooncakeTrace(t *testing.T) {
	trace := writeFile(t, "mooncake.jsonl", mooncakeTrace)
	out := filepath.Join(t.TempDir(), "o")
	runVirtual(t, "run", "--trace", trace, "--speed", "10", "-q", "-o", out)
	want := map[int64][2]int{ // seq → prompt tokens, prefix tokens
		0: {1200, 0}, 1: {1500, 1200}, 2: {1100, 1024}, 3: {600, 0}, 4: {2000, 0}, 5: {1200, 1200},
	}
	n := 0
	if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
		n++
		w := want[r.Seq]
		if r.Outcome != record.OK || r.PromptTokens != w[0] || r.PrefixTokens != w[1] {
			t.Errorf("seq %d: %s, prompt %d, prefix %d; want ok, %d, %d", r.Seq, r.Outcome, r.PromptTokens, r.PrefixTokens, w[0], w[1])
		}
		return nil
	}); err != nil || n != 6 {
		t.Fatalf("%d records, %v", n, err)
	}
	m, err := record.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Traces) != 1 {
		t.Fatalf("traces %+v", m.Traces)
	}
	tr := m.Traces[0]
	if tr.Format != "mooncake" || tr.Rows != 6 || tr.Kept != 6 || tr.Speed != 10 || tr.BlockTokens != 512 || tr.PromptTokens != 7600 || tr.RepeatedTokens != 3424 {
		t.Errorf("trace %+v", tr)
	}
	if !strings.Contains(m.CacheState, "45.1% of prompt tokens (3424 of 7600)") {
		t.Errorf("cache state %q", m.CacheState)
	}
}

// The Azure trace is found by its header; --trace-offset and
// --trace-window replay a slice of it, rebased, and the notes and the
// manifest say how much of it.
func TestReplayAzureSlice(t *testing.T) {
	trace := writeFile(t, "azure.csv", azureTrace)
	out := filepath.Join(t.TempDir(), "o")
	_, stdout := runVirtual(t, "run", "--trace", trace, "--trace-offset", "500ms", "--trace-window", "1s", "-q", "-o", out)
	if !strings.Contains(stdout, "replaying 2 of the 4 arrivals of the azure trace") {
		t.Errorf("stdout lacks the slice note:\n%s", stdout)
	}
	var at []int64
	record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
		at = append(at, r.ScheduledNs)
		return nil
	})
	// Rows at 0.58059 s and 0.9 s after the earliest (18:15:46.1), from 0.5 s.
	slices.Sort(at)
	if len(at) != 2 || at[0] != 80590000 || at[1] != 400000000 {
		t.Errorf("scheduled %v, want [80590000 400000000]", at)
	}
	m, _ := record.ReadManifest(filepath.Join(out, "manifest.json"))
	if len(m.Traces) != 1 || m.Traces[0].Format != "azure" || m.Traces[0].Kept != 2 || m.Traces[0].OffsetNs != 5e8 || m.Traces[0].WindowNs != 1e9 {
		t.Errorf("traces %+v", m.Traces)
	}
}

// Bad slice settings exit 2 naming the flag, or the file, line and key.
func TestTraceSliceErrors(t *testing.T) {
	trace := writeFile(t, "mooncake.jsonl", mooncakeTrace)
	yml := writeFile(t, "exp.yaml", "trace: "+trace+"\ntrace_offset: -2s\n")
	phases := writeFile(t, "phases.yaml", "phases:\n  - {name: a, arrival: replay, trace: "+trace+", trace_window: 1ms, trace_offset: 1s}\n")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"negative offset":   {[]string{"--trace-offset", "-1s"}, "surge: --trace-offset: must be >= 0, got -1s\n"},
		"negative window":   {[]string{"--trace-window", "-1s"}, "surge: --trace-window: must be >= 0, got -1s\n"},
		"offset beyond end": {[]string{"--trace-offset", "1h"}, "surge: --trace-offset: 1h0m0s is beyond the end of the trace " + trace + " (its last arrival is at 7s)\n"},
		"empty window":      {[]string{"--trace-offset", "1s", "--trace-window", "100ms"}, "surge: --trace-window: no arrival of the trace " + trace + " lies between 1s and 1.1s\n"},
		"tiny blocks":       {[]string{"--trace-block-tokens", "4"}, "surge: --trace-block-tokens: must be >= 16 (0 = 512), got 4\n"},
		"with warmup":       {[]string{"--warmup", "1s", "--trace-offset", "-1s"}, "surge: --trace-offset: must be >= 0, got -1s\n"},
		"from a file":       {[]string{"-f", yml}, "surge: " + yml + ":2: trace_offset: must be >= 0, got -2s\n"},
		"in a phase":        {[]string{"-f", phases}, "phases[0].trace_window: no arrival of the trace"},
		"not a replay":      {[]string{"--arrival", "poisson", "--rate", "1", "--trace-window", "1s"}, "--trace-window: only for replay arrivals, not poisson"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"run", "-q", "-o", filepath.Join(t.TempDir(), "o")}
			if !strings.HasPrefix(tc.args[0], "-f") && tc.args[0] != "--arrival" {
				args = append(args, "--trace", trace)
			}
			code, _, stderr := surge(t, append(args, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
