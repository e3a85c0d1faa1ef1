package e2e

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// distributed sends one schedule to a real engine twice, from two
// generators each time: a coordinator with two worker processes, and two
// static shards started together and merged. Both must hold every arrival
// of the schedule exactly once (the same seqs, the same max_tokens), split
// Seq mod 2 between the generators, and be answered like a single
// process's run. engineArgs are the target, model and workload flags.
func distributed(t *testing.T, engineArgs []string) {
	dir := t.TempDir()
	// Poisson arrivals: the split is seq mod 2 whatever the gaps, and the
	// seed fixes the schedule both ways.
	load := append(engineArgs, "--rate", "2", "--duration", "12s", "--arrival", "poisson", "--seed", "9", "-q")

	// Coordinator mode: the coordinator listens on a free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	coordDir := filepath.Join(dir, "coord")
	coord := exec.Command(surgeBin, append([]string{"run"}, append(load, "--workers", "2", "--coordinator-listen", addr, "--workers-wait", "60s", "-o", coordDir)...)...)
	var coordOut strings.Builder
	coord.Stdout, coord.Stderr = &coordOut, &coordOut
	if err := coord.Start(); err != nil {
		t.Fatal(err)
	}
	var workers []*exec.Cmd
	var workerOut []*strings.Builder
	for _, name := range []string{"wa", "wb"} {
		w := exec.Command(surgeBin, "worker", "--coordinator", "http://"+addr, "--name", name)
		var out strings.Builder
		w.Stdout, w.Stderr = &out, &out
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		workers, workerOut = append(workers, w), append(workerOut, &out)
	}
	code := exitCode(t, coord.Wait())
	t.Logf("coordinator → exit %d\n%s", code, coordOut.String())
	for i, w := range workers {
		if c := exitCode(t, w.Wait()); c != 0 {
			t.Errorf("worker %d exit %d (want 0: the coordinator finished)\n%s", i, c, workerOut[i])
		}
	}
	if code != 0 && code != 1 && code != 5 {
		t.Fatalf("coordinator exit %d", code)
	}
	coordRecs := readRecords(t, filepath.Join(coordDir, "requests.jsonl"))
	checkSplit(t, "coordinator", coordRecs)
	m := readManifest(t, coordDir)
	if d := m.Distributed; d == nil || d.Mode != record.DistCoordinator || d.Generators != 2 || len(d.Each) != 2 {
		t.Fatalf("coordinator manifest: distributed %+v", m.Distributed)
	} else {
		sum := int64(0)
		for _, g := range d.Each {
			sum += g.Records
			t.Logf("worker %d %s: %d records, clock offset %.3f ms, RTT %.3f ms, lag p99 %.1f ms", g.Index, g.Name, g.Records, float64(g.ClockOffsetNs)/1e6, float64(g.RTTNs)/1e6, g.LagP99Ms)
		}
		if sum != int64(len(coordRecs)) {
			t.Errorf("the workers' record counts sum to %d, the folder holds %d", sum, len(coordRecs))
		}
	}

	// Static shards: two processes that start together and a merge. The
	// start is far enough ahead for both to size their prompts first:
	// against Ollama that is 12 probe requests each, through one slot
	// (4 s ahead, both shards started 5.5 and 7.7 s late).
	at := time.Now().Add(25 * time.Second).UTC().Format(time.RFC3339)
	var shards []*exec.Cmd
	var shardOut []*strings.Builder
	var shardDirs []string
	for i := range 2 {
		d := filepath.Join(dir, "shard"+strconv.Itoa(i))
		s := exec.Command(surgeBin, append([]string{"run"}, append(load, "--shard", strconv.Itoa(i)+"/2", "--start-at", at, "-o", d)...)...)
		var out strings.Builder
		s.Stdout, s.Stderr = &out, &out
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		shards, shardOut, shardDirs = append(shards, s), append(shardOut, &out), append(shardDirs, d)
	}
	for i, s := range shards {
		c := exitCode(t, s.Wait())
		t.Logf("shard %d/2 → exit %d\n%s", i, c, shardOut[i])
		if c != 0 && c != 1 && c != 5 { // 5: its few requests could not decide a p99
			t.Fatalf("shard %d exit %d", i, c)
		}
	}
	merged := filepath.Join(dir, "merged")
	out, err := exec.Command(surgeBin, "merge", shardDirs[0], shardDirs[1], "-o", merged).CombinedOutput()
	t.Logf("surge merge → %v\n%s", err, out)
	if err != nil {
		t.Fatal(err)
	}
	mergedRecs := readRecords(t, filepath.Join(merged, "requests.jsonl"))
	checkSplit(t, "merged shards", mergedRecs)
	if len(mergedRecs) != len(coordRecs) {
		t.Fatalf("the merged shards hold %d records, the coordinated run %d: the same seed must give the same schedule", len(mergedRecs), len(coordRecs))
	}
	for i := range mergedRecs {
		a, b := coordRecs[i], mergedRecs[i]
		if a.MaxTokens != b.MaxTokens || a.Shard != b.Shard {
			t.Fatalf("seq %d: coordinated max_tokens %d shard %d, merged %d shard %d", a.Seq, a.MaxTokens, a.Shard, b.MaxTokens, b.Shard)
		}
	}
	if md := readManifest(t, merged).Distributed; md == nil || md.Mode != record.DistShard || md.Generators != 2 || md.StartSkewNs > int64(time.Second) {
		t.Errorf("merged manifest: distributed %+v (start skew must be well under 1 s with --start-at)", md)
	} else {
		t.Logf("shards started %.1f ms apart", float64(md.StartSkewNs)/1e6)
	}
}

// checkSplit: every arrival has exactly one record, each from generator
// Seq mod 2, and nine in ten were answered (2 req/s is well inside the
// engines' capacity here) with the server's usage.
func checkSplit(t *testing.T, what string, recs []record.Record) {
	t.Helper()
	if len(recs) < 8 { // seed 9 draws 14 arrivals
		t.Fatalf("%s: %d records for 12 s at 2 req/s", what, len(recs))
	}
	ok := 0
	perShard := [2]int{}
	for i, r := range recs {
		if r.Seq != int64(i) {
			t.Fatalf("%s: record %d has seq %d: an arrival has no record or two", what, i, r.Seq)
		}
		if r.Shard != int(r.Seq%2) {
			t.Fatalf("%s: seq %d came from generator %d, want %d", what, r.Seq, r.Shard, r.Seq%2)
		}
		perShard[r.Shard]++
		if r.Outcome == record.OK {
			ok++
			if !r.UsageFromServer || r.OutputTokens == 0 {
				t.Errorf("%s: seq %d ok without the server's usage", what, r.Seq)
			}
		}
	}
	if ok < len(recs)*9/10 {
		t.Errorf("%s: only %d of %d ok", what, ok, len(recs))
	}
	if perShard[0] == 0 || perShard[1] == 0 {
		t.Errorf("%s: one generator sent nothing (%d + %d)", what, perShard[0], perShard[1])
	}
	t.Logf("%s: %d records (%d + %d), %d ok", what, len(recs), perShard[0], perShard[1], ok)
}

func readManifest(t *testing.T, dir string) record.Manifest {
	t.Helper()
	var m record.Manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestDistributedAgainstOllama(t *testing.T) {
	base, model := engine(t)
	distributed(t, []string{"--target", base, "--model", model, "--prompt-tokens", "64", "--output-tokens", "32"})
}

func TestDistributedAgainstVLLM(t *testing.T) {
	base, model, metrics := vllmEngine(t)
	distributed(t, []string{"--target", base, "--model", model, "--api", "completions",
		"--prompt-tokens", strconv.Itoa(vllmPromptTokens), "--output-tokens", strconv.Itoa(vllmOutputTokens), "--ignore-eos",
		"--metrics-url", metrics, "--metrics-preset", "vllm"})
}
