package merge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// plan is the plan of every generated run: 20 s at 10 req/s, then 10 s
// at 30 req/s.
var plan = schedule.Plan{Phases: []schedule.Phase{
	{Name: "base", Duration: 20 * time.Second, Rate: 10},
	{Name: "burst", Duration: 10 * time.Second, Rate: 30},
}}

// genRecords makes n records of the plan with random times and outcomes,
// in Seq order, their times relative to t0.
func genRecords(rng *rand.Rand, n int) []record.Record {
	recs := make([]record.Record, n)
	span := int64(30 * time.Second)
	for i := range recs {
		at := rng.Int64N(span)
		phase := "base"
		if at >= int64(20*time.Second) {
			phase = "burst"
		}
		r := record.New(fmt.Sprintf("r-%d", i), int64(i), phase, at)
		r.MaxTokens = 1 + rng.IntN(200)
		switch k := rng.IntN(10); {
		case k == 0:
			r.Outcome = record.GeneratorDrop
			r.DoneNs = at
		case k == 1:
			r.Outcome = record.Timeout
			r.SentNs = at + rng.Int64N(int64(5*time.Millisecond))
			r.DoneNs = r.SentNs + int64(60*time.Second)
		default:
			r.Outcome = record.OK
			r.Status = 200
			r.SentNs = at + rng.Int64N(int64(5*time.Millisecond))
			r.ConnNs, r.HeadersNs = r.SentNs, r.SentNs+int64(time.Millisecond)
			r.FirstChunkNs = r.SentNs + rng.Int64N(int64(3*time.Second))
			r.FirstTokenNs, r.FirstTextNs = r.FirstChunkNs, r.FirstChunkNs
			r.OutputTokens = 1 + rng.IntN(r.MaxTokens)
			r.PromptTokens = 10 + rng.IntN(1000)
			r.UsageFromServer = true
			r.DoneNs = r.FirstTokenNs + int64(r.OutputTokens)*rng.Int64N(int64(80*time.Millisecond))
			r.Chunks = r.OutputTokens
			r.Attempts = 1
			r.Good = r.DoneNs-r.ScheduledNs < int64(12*time.Second)
		}
		recs[i] = r
	}
	return recs
}

// manifestOf is a run's manifest as surge writes it: the plan and the
// default options in its config.
func manifestOf(started time.Time, d *record.Distribution) *record.Manifest {
	o := run.DefaultOptions()
	if d != nil {
		o.Shard = fmt.Sprintf("%d/%d", d.Shard, d.Generators)
	}
	return &record.Manifest{Tool: "surge", Version: "test", Command: "run", RunID: "r", Target: "http://engine:8000/v1",
		Started: started, Finished: started.Add(40 * time.Second), Model: "m", API: "chat", Workload: "chat", Seed: 7,
		Config: run.ManifestConfig{Plan: plan, Options: o}, Distributed: d}
}

// writeRun writes a run folder of the records (in the order given) with
// the manifest.
func writeRun(t testing.TB, dir string, m *record.Manifest, recs []record.Record) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteManifest(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	w, err := record.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeShards splits the records (times relative to t0) into n shard
// folders by Seq mod n; shard i started offsets[i] after t0, so its times
// are relative to that, and its file is in Seq order or, when shuffle,
// in a random order (a live run writes in completion order).
func writeShards(t testing.TB, rng *rand.Rand, root string, recs []record.Record, n int, offsets []time.Duration, shuffle bool) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		var part []record.Record
		for _, r := range recs {
			if schedule.ShardOf(r.Seq, n) == i {
				r.Shard = i
				for _, p := range []*int64{&r.ScheduledNs, &r.SentNs, &r.ConnNs, &r.HeadersNs, &r.FirstChunkNs, &r.FirstTokenNs, &r.FirstTextNs, &r.DoneNs} {
					if *p != record.None {
						*p -= int64(offsets[i]) // on the shard's own origin
					}
				}
				part = append(part, r)
			}
		}
		if shuffle {
			rng.Shuffle(len(part), func(a, b int) { part[a], part[b] = part[b], part[a] })
		}
		d := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		g := record.Generator{Index: i, Started: t0.Add(offsets[i]), Arrivals: int64(len(part)), Records: int64(len(part))}
		writeRun(t, d, manifestOf(t0.Add(offsets[i]), &record.Distribution{Mode: record.DistShard, Generators: n, Shard: i, Each: []record.Generator{g}}), part)
		dirs = append(dirs, d)
	}
	// Shuffle the order the folders are given in: merge orders them.
	rng.Shuffle(len(dirs), func(a, b int) { dirs[a], dirs[b] = dirs[b], dirs[a] })
	return dirs
}

// analysis re-analyses a run folder as surge report does and returns the
// analysis as JSON.
func analysis(t *testing.T, dir string) []byte {
	t.Helper()
	r, err := run.Reload(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Reopen(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := r.Result(d, analyze.RecoveryRule{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.Analysis)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readRecords(t *testing.T, dir string) []record.Record {
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

// TestMergeEqualsRecordingOnce is the property: records split into n
// shards by Seq mod n (each shard's times on its own origin, started up
// to 2 s apart, its file in any order), then merged, are the records one
// process would have recorded — the same records, the same analysis.
func TestMergeEqualsRecordingOnce(t *testing.T) {
	for iter := range 12 {
		rng := rand.New(rand.NewPCG(uint64(iter), 15))
		n := 1 + rng.IntN(5)
		recs := genRecords(rng, rng.IntN(400))
		offsets := make([]time.Duration, n)
		for i := range offsets {
			offsets[i] = time.Duration(rng.Int64N(int64(2 * time.Second)))
		}
		offsets[rng.IntN(n)] = 0 // the earliest shard started at t0: the merged origin
		shuffle := iter%2 == 1
		t.Run(fmt.Sprintf("n=%d,records=%d,shuffled=%v", n, len(recs), shuffle), func(t *testing.T) {
			root := t.TempDir()
			whole := filepath.Join(root, "whole")
			writeRun(t, whole, manifestOf(t0, nil), recs)
			dirs := writeShards(t, rng, root, recs, n, offsets, shuffle)
			out := filepath.Join(root, "merged")
			var w bytes.Buffer
			m, err := Folders(context.Background(), dirs, Options{Out: out}, &w)
			if err != nil {
				t.Fatalf("%v\n%s", err, w.String())
			}
			if m.Records != int64(len(recs)) {
				t.Errorf("merged %d records, want %d", m.Records, len(recs))
			}
			got := readRecords(t, out)
			want := slices.Clone(recs)
			for i := range want {
				want[i].Shard = schedule.ShardOf(want[i].Seq, n)
			}
			// Shuffled or not, each shard's file is within its reorder
			// window: the merge is in seq order.
			if !slices.EqualFunc(got, want, func(a, b record.Record) bool { return string(a.AppendJSON(nil)) == string(b.AppendJSON(nil)) }) {
				t.Fatalf("merged records differ from the records recorded once")
			}
			if a, b := analysis(t, out), analysis(t, whole); !bytes.Equal(a, b) {
				t.Errorf("the merged analysis differs from the analysis of the records recorded once:\nmerged %.400s\nonce   %.400s", a, b)
			}
			mm, err := record.ReadManifest(filepath.Join(out, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			d := mm.Distributed
			if d == nil || d.Mode != record.DistShard || d.Generators != n || d.Shard != -1 || len(d.Each) != n || !mm.Started.Equal(t0) {
				t.Fatalf("merged manifest: started %v, distributed %+v", mm.Started, d)
			}
			if want := slices.Max(offsets); d.StartSkewNs != int64(want) {
				t.Errorf("start skew %d ns, want %d", d.StartSkewNs, want)
			}
			for i, g := range d.Each {
				if g.Index != i || !g.Started.Equal(t0.Add(offsets[i])) {
					t.Errorf("each[%d] = index %d started %v, want started %v", i, g.Index, g.Started, t0.Add(offsets[i]))
				}
			}
			if skewed := slices.Max(offsets) > run.StartSkewWarn; skewed != strings.Contains(w.String(), "WARNING: the shards' origins") {
				t.Errorf("start skew %s: warned %v\n%s", slices.Max(offsets), !skewed, w.String())
			}
		})
	}
}

// Virtual-time shards share their origin: nothing is shifted, whatever
// the wall clock said when each ran.
func TestMergeVirtualTimeNoShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	recs := genRecords(rng, 60)
	root := t.TempDir()
	var dirs []string
	for i := range 2 {
		var part []record.Record
		for _, r := range recs {
			if int(r.Seq%2) == i {
				r.Shard = i
				part = append(part, r)
			}
		}
		m := manifestOf(t0.Add(time.Duration(i)*time.Minute), &record.Distribution{Mode: record.DistShard, Generators: 2, Shard: i})
		m.VirtualTime, m.Simulated, m.Target = true, true, "engine model in virtual time (--simulate)"
		d := filepath.Join(root, fmt.Sprint(i))
		writeRun(t, d, m, part)
		dirs = append(dirs, d)
	}
	var w bytes.Buffer
	if _, err := Folders(context.Background(), dirs, Options{Out: filepath.Join(root, "m")}, &w); err != nil {
		t.Fatal(err)
	}
	got := readRecords(t, filepath.Join(root, "m"))
	for i := range got {
		if got[i].ScheduledNs != recs[i].ScheduledNs || got[i].DoneNs != recs[i].DoneNs {
			t.Fatalf("record %d moved: scheduled %d done %d, want %d %d", i, got[i].ScheduledNs, got[i].DoneNs, recs[i].ScheduledNs, recs[i].DoneNs)
		}
	}
	if strings.Contains(w.String(), "WARNING: the shards' origins") || !strings.Contains(w.String(), "virtual time") {
		t.Errorf("warnings:\n%s", w.String())
	}
}

// Bad input is refused before anything is written, as a configuration
// error (exit 2) naming the field, the shard or the folder.
func TestMergeRefuses(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(1, 1)), 30)
	shard := func(t *testing.T, dir string, i, n int, edit func(*record.Manifest)) string {
		var part []record.Record
		for _, r := range recs {
			if schedule.ShardOf(r.Seq, n) == i {
				r.Shard = i
				part = append(part, r)
			}
		}
		m := manifestOf(t0, &record.Distribution{Mode: record.DistShard, Generators: n, Shard: i})
		if edit != nil {
			edit(m)
		}
		writeRun(t, dir, m, part)
		return dir
	}
	otherRate := func(m *record.Manifest) {
		p := plan
		p.Phases = slices.Clone(plan.Phases)
		p.Phases[1].Rate = 40
		c := m.Config.(run.ManifestConfig)
		c.Plan = p
		m.Config = c
	}
	cases := map[string]struct {
		dirs func(t *testing.T, root string) []string
		want []string // in the message
	}{
		"model differs": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/b", 1, 2, func(m *record.Manifest) { m.Model = "other" })}
		}, []string{"disagree on model", `"m" in `, `"other" in `, "/a", "/b"}},
		"plan differs": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/b", 1, 2, otherRate)}
		}, []string{"disagree on config.plan.Phases[1].Rate: 30 in", "40 in"}},
		"seed differs": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/b", 1, 2, func(m *record.Manifest) { m.Seed = 8 })}
		}, []string{"disagree on seed: 7 in", "8 in"}},
		"option differs": {func(t *testing.T, root string) []string { // named by its flag too
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/b", 1, 2, func(m *record.Manifest) {
				c := m.Config.(run.ManifestConfig)
				c.Options.TTFTDeadline = 9
				m.Config = c
			})}
		}, []string{"disagree on config.options.TTFTDeadline (--ttft-deadline): 2000000000 in", "9 in"}},
		"version differs": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/b", 1, 2, func(m *record.Manifest) { m.Version = "v9" })}
		}, []string{"disagree on version"}},
		"N differs": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/b", 1, 3, nil)}
		}, []string{"disagree on distributed.generators", "2 in", "3 in"}},
		"same folder twice": {func(t *testing.T, root string) []string {
			a := shard(t, root+"/a", 0, 2, nil)
			return []string{a, root + "/./a"}
		}, []string{"given twice"}},
		"a shard twice": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, nil), shard(t, root+"/copy", 0, 2, nil)}
		}, []string{"shard 0 of 2 twice", "/a and ", "/copy"}},
		"missing shard": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 3, nil), shard(t, root+"/c", 2, 3, nil)}
		}, []string{"shard 1 of 3 missing"}},
		"not a run folder": {func(t *testing.T, root string) []string {
			os.MkdirAll(root+"/empty", 0o755)
			return []string{shard(t, root+"/a", 0, 2, nil), root + "/empty"}
		}, []string{"/empty: not a run folder"}},
		"a file": {func(t *testing.T, root string) []string {
			a := shard(t, root+"/a", 0, 1, nil)
			return []string{a + "/requests.jsonl"}
		}, []string{"not a folder"}},
		"not a shard": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, func(m *record.Manifest) { m.Distributed = nil })}
		}, []string{"not a shard", "without --shard"}},
		"already merged": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, func(m *record.Manifest) { m.Distributed.Shard = -1 })}
		}, []string{"already a merge of 2 shards"}},
		"a coordinated run": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 2, func(m *record.Manifest) { m.Distributed.Mode = record.DistCoordinator })}
		}, []string{`distributed mode "coordinator"`}},
		"not finished": {func(t *testing.T, root string) []string {
			return []string{shard(t, root+"/a", 0, 1, func(m *record.Manifest) { m.Finished = time.Time{} })}
		}, []string{"has not finished"}},
		"a record of another shard": {func(t *testing.T, root string) []string {
			a := shard(t, root+"/a", 0, 2, nil)
			b := shard(t, root+"/b", 1, 2, nil)
			os.Rename(a+"/requests.jsonl", root+"/x")
			os.Rename(b+"/requests.jsonl", a+"/requests.jsonl")
			os.Rename(root+"/x", b+"/requests.jsonl")
			return []string{a, b}
		}, []string{"says shard 1, its manifest shard 0"}},
		"experiments with different runs": {func(t *testing.T, root string) []string {
			shard(t, root+"/e0/burst-2x", 0, 2, nil)
			shard(t, root+"/e0/burst-5x", 0, 2, nil)
			shard(t, root+"/e1/burst-2x", 1, 2, nil)
			return []string{root + "/e0", root + "/e1"}
		}, []string{"e0 has burst-5x", "e1 does not"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dirs := tc.dirs(t, root)
			out := filepath.Join(root, "merged")
			var w bytes.Buffer
			_, err := Folders(context.Background(), dirs, Options{Out: out}, &w)
			var ce *run.ConfigError
			if !errorsAs(err, &ce) {
				t.Fatalf("err = %v, want a configuration error (exit 2)", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written despite the refusal", out)
			}
		})
	}
	// What each process sets for itself (its client, output, printing)
	// is no disagreement: e.g. one shard on surge's HTTP client, one on Go's.
	t.Run("per-process options differ", func(t *testing.T) {
		root := t.TempDir()
		own := func(hc string, quiet bool) func(*record.Manifest) {
			return func(m *record.Manifest) {
				c := m.Config.(run.ManifestConfig)
				c.Options.HTTPClient, c.Options.Quiet, c.Options.Out = hc, quiet, m.Model+hc
				m.Config = c
			}
		}
		dirs := []string{shard(t, root+"/a", 0, 2, own("surge", false)), shard(t, root+"/b", 1, 2, own("go", true))}
		if _, err := Folders(context.Background(), dirs, Options{Out: root + "/merged"}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("out is a shard", func(t *testing.T) {
		root := t.TempDir()
		a := shard(t, root+"/a", 0, 1, nil)
		_, err := Folders(context.Background(), []string{a}, Options{Out: a}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "is one of the shard folders") {
			t.Fatalf("err = %v", err)
		}
	})
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

// A record later in its shard's file than the reorder window is written
// out of order, never lost, and counted in a warning.
func TestMergeBeyondWindow(t *testing.T) {
	old := windowOf
	windowOf = func(int) int { return 4 }
	t.Cleanup(func() { windowOf = old })
	rng := rand.New(rand.NewPCG(9, 9))
	recs := genRecords(rng, 50)
	root := t.TempDir()
	rev := slices.Clone(recs)
	slices.Reverse(rev) // seq 49 first: every record but the last four is beyond the window
	writeRun(t, root+"/a", manifestOf(t0, &record.Distribution{Mode: record.DistShard, Generators: 1, Shard: 0}), rev)
	var w bytes.Buffer
	m, err := Folders(context.Background(), []string{root + "/a"}, Options{Out: root + "/m"}, &w)
	if err != nil {
		t.Fatal(err)
	}
	got := readRecords(t, root+"/m")
	if m.Records != 50 || len(got) != 50 {
		t.Fatalf("%d records merged, %d in the file; want 50", m.Records, len(got))
	}
	if !strings.Contains(w.String(), "records are out of seq order") {
		t.Errorf("no warning of records out of order:\n%s", w.String())
	}
	if a, b := analysis(t, root+"/m"), analysis(t, root+"/a"); !bytes.Equal(a, b) {
		t.Errorf("the analysis depends on the order of the records")
	}
}

// A partial shard makes the merged run partial, saying which shard and
// why; the spend is summed.
func TestMergePartialShard(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(5, 5)), 40)
	root := t.TempDir()
	var dirs []string
	for i := range 2 {
		var part []record.Record
		for _, r := range recs {
			if int(r.Seq%2) == i {
				r.Shard = i
				part = append(part, r)
			}
		}
		m := manifestOf(t0, &record.Distribution{Mode: record.DistShard, Generators: 2, Shard: i})
		m.Spent = &record.Spent{Requests: int64(len(part)), OutputTokens: 100}
		if i == 1 {
			m.Partial, m.PartialWhy = true, "interrupted (Ctrl-C) before the plan completed"
		}
		d := filepath.Join(root, fmt.Sprint(i))
		writeRun(t, d, m, part)
		dirs = append(dirs, d)
	}
	if _, err := Folders(context.Background(), dirs, Options{Out: filepath.Join(root, "m")}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	m, err := record.ReadManifest(filepath.Join(root, "m", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Partial || !strings.Contains(m.PartialWhy, "(shard 1, ") || m.PartialCause != record.PartialInterrupted {
		t.Errorf("partial %v: %q", m.Partial, m.PartialWhy)
	}
	if m.Spent == nil || m.Spent.Requests != 40 || m.Spent.OutputTokens != 200 {
		t.Errorf("spent %+v, want the shards' sum", m.Spent)
	}
	if !m.Distributed.Each[1].Partial || m.Distributed.Each[0].Partial {
		t.Errorf("each %+v", m.Distributed.Each)
	}
}

// sessionize makes recs (arrivals 0…len−1) a sessions run of n shards: each
// arrival starts a session (turn 1), and each shard sends later turns of
// its own sessions, numbered as the session drivers number them
// (schedule.LaterSeqs). It returns every record, in Seq order.
func sessionize(rng *rand.Rand, recs []record.Record, n int) []record.Record {
	turns := map[int64]int{} // session → its turns so far
	for i := range recs {
		recs[i].Session, recs[i].Turn, recs[i].SessionTurns = recs[i].Seq+1, 1, 1
		turns[recs[i].Session] = 1
	}
	all := slices.Clone(recs)
	arrivals := make([]schedule.Arrival, len(recs))
	for i := range recs {
		arrivals[i] = schedule.Arrival{Seq: recs[i].Seq}
	}
	for i := range n {
		mine := schedule.Shard(arrivals, i, n)
		if len(mine) == 0 {
			continue
		}
		seq, step := schedule.LaterSeqs(mine, i, n)
		for range rng.IntN(2 * len(mine)) {
			a := recs[mine[rng.IntN(len(mine))].Seq]
			turns[a.Session]++
			r := a
			r.Seq, r.ID, r.Turn = seq, fmt.Sprintf("r-%d", seq), turns[a.Session]
			r.ScheduledNs = min(a.ScheduledNs+int64(r.Turn)*int64(time.Second), int64(29*time.Second))
			r.Phase = schedule.PhaseNameAt(plan.Bounds(), time.Duration(r.ScheduledNs))
			all = append(all, r)
			seq += step
		}
	}
	for i := range all {
		all[i].SessionTurns = turns[all[i].Session]
	}
	slices.SortFunc(all, func(a, b record.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return all
}

// The property with sessions (--sessions --shard): later turns numbered by
// each shard's driver are sent by their session's shard and share no seq
// with another shard's, so shards merged are the records recorded once —
// the same records in seq order, the same analysis, sessions included.
func TestMergeSessionsEqualsRecordingOnce(t *testing.T) {
	for iter := range 8 {
		rng := rand.New(rand.NewPCG(uint64(iter), 16))
		n := 2 + rng.IntN(4)
		recs := sessionize(rng, genRecords(rng, 20+rng.IntN(200)), n)
		offsets := make([]time.Duration, n)
		shuffle := iter%2 == 1
		t.Run(fmt.Sprintf("n=%d,records=%d,shuffled=%v", n, len(recs), shuffle), func(t *testing.T) {
			seen := map[int64]bool{}
			for _, r := range recs {
				if seen[r.Seq] {
					t.Fatalf("seq %d twice among the shards' records", r.Seq)
				}
				seen[r.Seq] = true
			}
			root := t.TempDir()
			whole := filepath.Join(root, "whole")
			writeRun(t, whole, manifestOf(t0, nil), recs)
			dirs := writeShards(t, rng, root, recs, n, offsets, shuffle)
			out := filepath.Join(root, "merged")
			var w bytes.Buffer
			if _, err := Folders(context.Background(), dirs, Options{Out: out}, &w); err != nil {
				t.Fatalf("%v\n%s", err, w.String())
			}
			got := readRecords(t, out)
			want := slices.Clone(recs)
			for i := range want {
				want[i].Shard = schedule.ShardOf(want[i].Seq, n)
				if want[i].Shard != schedule.ShardOf(want[i].Session-1, n) {
					t.Fatalf("seq %d (session %d turn %d) falls to shard %d, its session's arrival to shard %d", want[i].Seq, want[i].Session, want[i].Turn, want[i].Shard, schedule.ShardOf(want[i].Session-1, n))
				}
			}
			if !slices.EqualFunc(got, want, func(a, b record.Record) bool { return string(a.AppendJSON(nil)) == string(b.AppendJSON(nil)) }) {
				t.Fatalf("merged records differ from the records recorded once")
			}
			a, b := analysis(t, out), analysis(t, whole)
			if !bytes.Equal(a, b) {
				t.Errorf("the merged analysis differs from the analysis of the records recorded once:\nmerged %.400s\nonce   %.400s", a, b)
			}
			if !bytes.Contains(a, []byte(`"sessions":{`)) {
				t.Errorf("no sessions in the analysis: %.400s", a)
			}
		})
	}
}
