package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

func recordsIn(t *testing.T, dir string) []record.Record {
	t.Helper()
	var out []record.Record
	if err := record.ReadFile(filepath.Join(dir, "requests.jsonl"), func(r *record.Record) error {
		out = append(out, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Two virtual-time shards of one run, merged, hold the requests one
// process sends of the whole schedule: the same seqs, arrival times,
// phases and requests, each record with its shard; the merged folder is a
// run folder with its reports. (Their latencies differ: each shard's
// engine model saw half the load — the merge says so.)
func TestShardsMergeToTheWholeSchedule(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--simulate", "--rate", "20", "--duration", "10s", "--seed", "3", "-q"}
	for _, s := range []string{"", "0/2", "1/2"} {
		a := append(args, "-o", filepath.Join(dir, "s"+strings.ReplaceAll(s, "/", "of")))
		if s != "" {
			a = append(a, "--shard", s)
		}
		if code, out, errs := surge(t, a...); !ran(code) {
			t.Fatalf("surge %v: exit %d\n%s\n%s", a, code, out, errs)
		}
	}
	code, out, errs := surge(t, "merge", filepath.Join(dir, "s1of2"), filepath.Join(dir, "s0of2"), "-o", filepath.Join(dir, "m"))
	if (!ran(code)) || !strings.Contains(out, "merged 2 shards") || !strings.Contains(out, "each against its own engine model") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errs)
	}
	whole, merged := recordsIn(t, filepath.Join(dir, "s")), recordsIn(t, filepath.Join(dir, "m"))
	if len(whole) == 0 || len(merged) != len(whole) {
		t.Fatalf("merged %d records, one process %d", len(merged), len(whole))
	}
	for i, w := range whole {
		m := merged[i]
		if m.Seq != w.Seq || m.ScheduledNs != w.ScheduledNs || m.Phase != w.Phase || m.MaxTokens != w.MaxTokens || m.PromptTokens != w.PromptTokens || m.Shard != int(w.Seq%2) {
			t.Fatalf("record %d: merged seq %d at %d (%s, max_tokens %d, prompt %d, shard %d); one process seq %d at %d (%s, %d, %d)",
				i, m.Seq, m.ScheduledNs, m.Phase, m.MaxTokens, m.PromptTokens, m.Shard, w.Seq, w.ScheduledNs, w.Phase, w.MaxTokens, w.PromptTokens)
		}
	}
	for _, f := range []string{"manifest.json", "summary.json", "results.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, "m", f)); err != nil {
			t.Error(err)
		}
	}
	// The prompt lengths, intended and server-reported, are counted over
	// the merged records: those of one process, and in the report.
	ms, err := record.ReadManifest(filepath.Join(dir, "m", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := record.ReadManifest(filepath.Join(dir, "s", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if mp, wp := ms.PromptSizing, ws.PromptSizing; mp == nil || wp == nil || wp.Actual.Samples == 0 || mp.Intended != wp.Intended || mp.Actual != wp.Actual {
		t.Errorf("merged prompt sizing %+v, one process %+v", mp, wp)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "m", "results.md")); !strings.Contains(string(md), "prompt tokens") || !strings.Contains(string(md), "server-reported p50") {
		t.Errorf("the merged results.md has no prompt tokens line")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "m", "results.md"))
	if !strings.Contains(string(md), "merged from 2 shards") {
		t.Errorf("results.md does not say it is a merge")
	}
	md, _ = os.ReadFile(filepath.Join(dir, "s0of2", "results.md"))
	if !strings.Contains(string(md), "SHARD 0 of 2") {
		t.Errorf("a shard's results.md does not say it is one shard")
	}

	// Bad input exits 2 and says why.
	if code, _, errs := surge(t, append(args, "--rate", "10", "--shard", "1/2", "-o", filepath.Join(dir, "slow"))...); !ran(code) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"disagree":   {[]string{"merge", filepath.Join(dir, "s0of2"), filepath.Join(dir, "slow"), "-o", filepath.Join(dir, "x")}, "disagree on config.extra.Rate (--rate): 20 in"},
		"missing":    {[]string{"merge", filepath.Join(dir, "s0of2"), "-o", filepath.Join(dir, "x")}, "shard 1 of 2 missing"},
		"twice":      {[]string{"merge", filepath.Join(dir, "s0of2"), filepath.Join(dir, "s0of2"), "-o", filepath.Join(dir, "x")}, "given twice"},
		"not shard":  {[]string{"merge", filepath.Join(dir, "s"), "-o", filepath.Join(dir, "x")}, "not a shard"},
		"no out":     {[]string{"merge", filepath.Join(dir, "s0of2"), filepath.Join(dir, "s1of2")}, "no output folder"},
		"shard flag": {append(args, "--shard", "2/2", "-o", filepath.Join(dir, "y")), "--shard: the shard index 2 must be below N = 2"},
	} {
		code, _, errs := surge(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 with %q", name, code, errs, c.want)
		}
	}
}

// Live shards (the simulator over an in-memory network, in a synctest
// bubble each) write their records as they complete; merged, they are the
// whole schedule, in seq order, each record once.
func TestLiveShardsMerge(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--rate", "6", "--duration", "5s", "--seed", "4", "-q"}
	for _, s := range []string{"0/2", "1/2"} {
		runVirtual(t, append(args, "--shard", s, "-o", filepath.Join(dir, "s"+s[:1]))...)
	}
	runVirtual(t, append(args, "-o", filepath.Join(dir, "one"))...)
	code, out, errs := surge(t, "merge", filepath.Join(dir, "s0"), filepath.Join(dir, "s1"), "-o", filepath.Join(dir, "m"))
	if (!ran(code)) || !strings.Contains(out, "its own in-process simulator") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errs)
	}
	one, merged := recordsIn(t, filepath.Join(dir, "one")), recordsIn(t, filepath.Join(dir, "m"))
	if len(one) == 0 || len(merged) != len(one) {
		t.Fatalf("merged %d records, one process %d", len(merged), len(one))
	}
	seen := map[int64]bool{}
	for i, m := range merged {
		if seen[m.Seq] || (i > 0 && m.Seq < merged[i-1].Seq) || m.Shard != int(m.Seq%2) {
			t.Fatalf("record %d: seq %d (shard %d) repeated, out of seq order or in the wrong shard", i, m.Seq, m.Shard)
		}
		seen[m.Seq] = true
	}
	for _, w := range one {
		if !seen[w.Seq] {
			t.Fatalf("seq %d of the schedule missing from the merge", w.Seq)
		}
	}
}

// --dry-run says that a shard sends only its share of what it shows.
func TestShardDryRun(t *testing.T) {
	code, out, errs := surge(t, "run", "--simulate", "--rate", "10", "--duration", "10s", "--shard", "1/3", "--dry-run")
	if code != exitOK || !strings.Contains(out, "shard 1 of 3 (--shard 1/3): this process sends only the arrivals whose seq mod 3 is 1") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// A burst experiment's shards are merged multiplier by multiplier, and
// the merged folder gets the burst layout.
func TestBurstShardsMerge(t *testing.T) {
	// surge merge's concurrent shard readers are raced by
	// TestShardsMergeToTheWholeSchedule and TestLiveShardsMerge.
	skipVirtualUnderRace(t)
	dir := t.TempDir()
	args := []string{"burst", "--simulate", "--baseline-rps", "4", "--multipliers", "2", "-q"}
	n := 0
	for _, s := range []string{"0/2", "1/2"} {
		o := filepath.Join(dir, "b"+s[:1])
		if code, out, errs := surge(t, append(args, "--shard", s, "-o", o)...); !ran(code) {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		n += len(recordsIn(t, filepath.Join(o, "burst-2x")))
	}
	code, out, errs := surge(t, "merge", filepath.Join(dir, "b0"), filepath.Join(dir, "b1"), "-o", filepath.Join(dir, "m"))
	if !ran(code) {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errs)
	}
	if got := len(recordsIn(t, filepath.Join(dir, "m", "burst-2x"))); got != n || n == 0 {
		t.Errorf("burst-2x: %d merged records, the shards had %d", got, n)
	}
	md, err := os.ReadFile(filepath.Join(dir, "m", "results.md"))
	if err != nil || !strings.Contains(string(md), " 2× |") || !strings.Contains(string(md), "merged from 2 shards") {
		t.Errorf("the merged burst's results.md (%v):\n%s", err, md)
	}
}

// A concurrency sweep with --shard is refused before its first level
// runs: exit 2, and no folder left behind (REVIEW15 #24).
func TestSweepShardRefusedBeforeItRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sw")
	code, _, errs := surge(t, "sweep", "--shard", "0/2", "--duration", "2s", "-q", "-o", out)
	if code != exitUsage || !strings.Contains(errs, "--shard: splits a schedule of arrivals, which a closed loop") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("the refused sweep left %s behind (%v)", out, err)
	}
}
