package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
)

// resultsDoc is what these tests read of results.json.
type resultsDoc struct {
	Rows    []map[string]json.RawMessage `json:"rows"`
	Spreads []struct {
		Scope  string `json:"scope"`
		Metric string `json:"metric"`
		Values []struct {
			Value *float64 `json:"value"`
		} `json:"values"`
	} `json:"spreads"`
}

func readResults(t *testing.T, path string) resultsDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc resultsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// cellOf is one Opt cell of a row: its value, or its lower bound when
// censored.
func cellOf(t *testing.T, row map[string]json.RawMessage, key string) (v float64, censored bool) {
	t.Helper()
	var c struct {
		Value      *float64 `json:"value"`
		LowerBound *float64 `json:"lower_bound"`
	}
	if err := json.Unmarshal(row[key], &c); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	switch {
	case c.Value != nil:
		return *c.Value, false
	case c.LowerBound != nil:
		return *c.LowerBound, true
	}
	t.Fatalf("%s: n/a: %s", key, row[key])
	return 0, false
}

func intField(row map[string]json.RawMessage, key string) (int, bool) {
	raw, ok := row[key]
	if !ok {
		return 0, false
	}
	var v int
	json.Unmarshal(raw, &v)
	return v, true
}

func readRecords(t *testing.T, path string) []record.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// nearestRank is the q-quantile of the latencies as analyze defines it
// (internal/analyze/doc.go), computed here from the raw records: the ok
// requests' values sorted, every timeout ranked above them, r = ⌈q·N⌉
// over N = ok + timeouts; censored when r falls among the timeouts.
func nearestRank(recs []record.Record, q float64, latency func(*record.Record) int64) (ms float64, censored bool) {
	var vals []int64
	timeouts := 0
	for i := range recs {
		switch r := &recs[i]; {
		case r.Outcome == record.OK:
			vals = append(vals, latency(r)/1000) // analyze records whole µs
		case r.Outcome != record.Timeout:
		case latency(r) >= 0 && r.DoneNs != record.None && latency(r) < r.DoneNs-r.ScheduledNs:
			// a timeout whose boundary came before its end (a first
			// token): that latency is known
			vals = append(vals, latency(r)/1000)
		default:
			timeouts++
		}
	}
	slices.Sort(vals)
	n := len(vals) + timeouts
	r := int(math.Ceil(q * float64(n)))
	if r > len(vals) {
		return 0, true
	}
	return float64(vals[max(r, 1)-1]) / 1000, false
}

// --repeat 3 writes three run folders, three rows with their P99s and
// spread, and a pooled row whose percentiles are those of the three runs'
// records merged — timeouts ranked above successes — not the average of
// the runs' percentiles.
func TestRunRepeatPoolsRawRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	// Near the engine model's capacity with a short timeout: some requests
	// time out, so their rank above the successes matters.
	code, out, errs := surge(t, "run", "--simulate", "--rate", "9", "--duration", "30s", "--timeout", "14s", "--repeat", "3", "-o", dir, "-q")
	if code != 0 && code != 1 && code != 5 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var all []record.Record
	var timeouts int
	for k := 1; k <= 3; k++ {
		rep := filepath.Join(dir, "rep-"+string(rune('0'+k)))
		recs := readRecords(t, filepath.Join(rep, "requests.jsonl"))
		for _, r := range recs {
			if r.Outcome == record.Timeout {
				timeouts++
			}
		}
		all = append(all, recs...)
		b, err := os.ReadFile(filepath.Join(rep, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m record.Manifest
		json.Unmarshal(b, &m)
		if m.Seed != int64(k) || m.Rep != k || m.Repeats != 3 {
			t.Errorf("rep-%d manifest: seed %d rep %d repeats %d, want seed %d (seed 1 + k − 1)", k, m.Seed, m.Rep, m.Repeats, k)
		}
		if _, err := os.Stat(filepath.Join(rep, "results.md")); err != nil {
			t.Errorf("rep-%d is not a whole run folder: %v", k, err)
		}
	}
	if timeouts == 0 {
		t.Fatal("no request timed out: the test no longer checks the timeouts' rank")
	}
	doc := readResults(t, filepath.Join(dir, "results.json"))
	if len(doc.Rows) != 4 {
		t.Fatalf("%d rows, want 3 runs and the pooled row", len(doc.Rows))
	}
	var p50s []float64
	for i, row := range doc.Rows[:3] {
		if rep, _ := intField(row, "rep"); rep != i+1 {
			t.Errorf("row %d: rep %d", i, rep)
		}
		if _, ok := row["pooled"]; ok {
			t.Errorf("row %d: a run's row says pooled", i)
		}
		v, _ := cellOf(t, row, "ttft_p50_ms")
		p50s = append(p50s, v)
	}
	pooled := doc.Rows[3]
	if rep, ok := intField(pooled, "rep"); !ok || rep != 0 || string(pooled["pooled"]) != "true" || string(pooled["repeats"]) != "3" {
		t.Errorf("pooled row: rep %s pooled %s repeats %s", pooled["rep"], pooled["pooled"], pooled["repeats"])
	}
	ttft := func(r *record.Record) int64 { return r.FirstTokenNs - r.ScheduledNs }
	e2e := func(r *record.Record) int64 { return r.DoneNs - r.ScheduledNs }
	for _, c := range []struct {
		key string
		q   float64
		lat func(*record.Record) int64
	}{
		{"ttft_p50_ms", 0.50, ttft}, {"ttft_p95_ms", 0.95, ttft}, {"ttft_p99_ms", 0.99, ttft},
		{"completion_p50_ms", 0.50, e2e}, {"completion_p95_ms", 0.95, e2e}, {"completion_p99_ms", 0.99, e2e},
	} {
		want, wantCens := nearestRank(all, c.q, c.lat)
		got, cens := cellOf(t, pooled, c.key)
		switch {
		case cens != wantCens:
			t.Errorf("pooled %s: censored %v, want %v", c.key, cens, wantCens)
		case cens && got < 14000:
			t.Errorf("pooled %s: lower bound %g, want at least the 14 s timeout", c.key, got)
		case !cens && (got < want-0.001 || got > want*1.001+0.001): // HDR: never below, at most 0.1% above
			t.Errorf("pooled %s = %g ms, want the merged records' nearest rank %g ms", c.key, got, want)
		}
	}
	// The pooled median is not the average of the runs' medians.
	mean := (p50s[0] + p50s[1] + p50s[2]) / 3
	if want, _ := nearestRank(all, 0.5, ttft); math.Abs(mean-want) > 1 {
		if got, _ := cellOf(t, pooled, "ttft_p50_ms"); math.Abs(got-mean) < 0.5 {
			t.Errorf("pooled ttft p50 %g is the runs' average %g", got, mean)
		}
	}
	if len(doc.Spreads) == 0 {
		t.Fatal("no spread lines")
	}
	for _, s := range doc.Spreads {
		if len(s.Values) != 3 {
			t.Errorf("spread %s: %d values, want 3", s.Metric, len(s.Values))
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	if !strings.Contains(string(md), "Spread over repeats") || !strings.Contains(string(md), "| pooled |") {
		t.Errorf("results.md lacks the spread or the pooled row:\n%s", md)
	}

	// surge report re-renders the repeated folder: the same rows.
	before, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if code, out, errs := surge(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errs)
	}
	after := readResults(t, filepath.Join(dir, "results.json"))
	var was resultsDoc
	json.Unmarshal(before, &was)
	if len(after.Rows) != len(was.Rows) || string(after.Rows[3]["ttft_p99_ms"]) != string(was.Rows[3]["ttft_p99_ms"]) {
		t.Errorf("re-rendered rows differ: %d rows, pooled p99 %s, was %s", len(after.Rows), after.Rows[3]["ttft_p99_ms"], was.Rows[3]["ttft_p99_ms"])
	}
}

// --multipliers 5,5 is two runs of 5× into burst-5x/rep-1 and rep-2 with
// seeds 1 and 2, two rows that differ and their pooled row — not one
// folder written twice and two identical rows.
func TestBurstDuplicateMultiplierIsRepeat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	code, out, errs := surge(t, "burst", "--simulate", "--baseline-rps", "4", "--multipliers", "5,5", "--warmup", "0s", "--baseline", "1m", "--burst", "10s",
		"--recovery", "30s", "--recovery-limit", "2m", "-o", dir, "-q")
	if code != 0 && code != 1 && code != 5 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "burst-5x", "requests.jsonl")); err == nil {
		t.Error("burst-5x holds a run of its own: the repeats were written into one folder")
	}
	// The closing verdict block has the pooled row's line too, as surge run's does.
	if !strings.Contains(out, "5× pooled  burst") {
		t.Errorf("no pooled verdict line:\n%s", out)
	}
	var counts []int
	for k := 1; k <= 2; k++ {
		rep := filepath.Join(dir, "burst-5x", "rep-"+string(rune('0'+k)))
		counts = append(counts, len(readRecords(t, filepath.Join(rep, "requests.jsonl"))))
		b, _ := os.ReadFile(filepath.Join(rep, "manifest.json"))
		var m record.Manifest
		json.Unmarshal(b, &m)
		if m.Seed != int64(k) || m.Rep != k || m.Repeats != 2 {
			t.Errorf("rep-%d manifest: seed %d rep %d repeats %d", k, m.Seed, m.Rep, m.Repeats)
		}
	}
	doc := readResults(t, filepath.Join(dir, "results.json"))
	if len(doc.Rows) != 3 {
		t.Fatalf("%d rows, want two runs of 5× and their pooled row", len(doc.Rows))
	}
	if string(doc.Rows[0]["ttft_p99_ms"]) == string(doc.Rows[1]["ttft_p99_ms"]) && counts[0] == counts[1] {
		t.Errorf("the two runs of 5× are identical (%d records each, p99 %s): not seeded apart", counts[0], doc.Rows[0]["ttft_p99_ms"])
	}
	for i, want := range []int{1, 2, 0} {
		if rep, _ := intField(doc.Rows[i], "rep"); rep != want {
			t.Errorf("row %d: rep %d, want %d", i, rep, want)
		}
	}
	if string(doc.Rows[2]["pooled"]) != "true" || string(doc.Rows[2]["repeats"]) != "2" {
		t.Errorf("third row is not the pooled row of 2: %s %s", doc.Rows[2]["pooled"], doc.Rows[2]["repeats"])
	}
	var rec []string
	for _, s := range doc.Spreads {
		rec = append(rec, s.Metric)
	}
	if !slices.Contains(rec, "recovery_s") {
		t.Errorf("no spread of the recovery times: %v", rec)
	}
	// surge report re-renders it with the same rows.
	if code, out, errs := surge(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errs)
	}
	if again := readResults(t, filepath.Join(dir, "results.json")); len(again.Rows) != 3 || string(again.Rows[2]["ttft_p99_ms"]) != string(doc.Rows[2]["ttft_p99_ms"]) {
		t.Errorf("re-rendered: %d rows", len(again.Rows))
	}
}

// --repeat below 1 is a usage error naming the flag, for every command
// that has it; a large count is accepted (checked with --dry-run).
func TestRepeatBadInput(t *testing.T) {
	for _, cmd := range []string{"run", "burst", "capacity"} {
		for _, n := range []string{"0", "-2"} {
			code, _, errs := surge(t, cmd, "--simulate", "--repeat", n, "-o", filepath.Join(t.TempDir(), "x"))
			if code != 2 || !strings.Contains(errs, "--repeat: must be ≥ 1") {
				t.Errorf("%s --repeat %s: exit %d, stderr %q", cmd, n, code, errs)
			}
		}
	}
	// The dry run draws every request of every rep (workload.Summarize)
	// on one goroutine: 200 reps take ~8 s, ~37 s under -race, where 20
	// go through the same code.
	reps := "200"
	if racedetect.Enabled {
		reps = "20"
	}
	if code, out, errs := surge(t, "burst", "--simulate", "--multipliers", "5", "--repeat", reps, "--dry-run"); code != 0 || !strings.Contains(out, "burst-5x/rep-"+reps) {
		t.Errorf("burst --repeat %s --dry-run: exit %d\n%s\n%s", reps, code, out[:min(len(out), 400)], errs)
	}
}

// Five runs get a bootstrap interval on every spread line, which contains
// the median and is the same when the experiment is run again (virtual
// time, the same seeds).
func TestRepeatFiveBootstrapDeterministic(t *testing.T) {
	spreads := func() string {
		dir := filepath.Join(t.TempDir(), "r")
		if code, out, errs := surge(t, "run", "--simulate", "--rate", "6", "--duration", "10s", "--repeat", "5", "-o", dir, "-q"); code != 0 && code != 1 && code != 5 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
		var doc struct {
			Spreads []map[string]json.RawMessage `json:"spreads"`
		}
		json.Unmarshal(b, &doc)
		if len(doc.Spreads) == 0 {
			t.Fatal("no spreads")
		}
		for _, s := range doc.Spreads {
			var lo, med, hi struct{ Value *float64 }
			json.Unmarshal(s["ci_low"], &lo)
			json.Unmarshal(s["median"], &med)
			json.Unmarshal(s["ci_high"], &hi)
			if lo.Value == nil || hi.Value == nil || med.Value == nil || *lo.Value > *med.Value || *med.Value > *hi.Value {
				t.Errorf("%s: no interval around the median: %s %s %s", s["metric"], s["ci_low"], s["median"], s["ci_high"])
			}
		}
		return string(b[strings.Index(string(b), `"spreads"`):])
	}
	if a, b := spreads(), spreads(); a != b {
		t.Errorf("the same five runs gave other spreads:\n%s\n%s", a, b)
	}
}

// capacity --repeat 2: two whole searches in rep-1 and rep-2, the
// folder's table with each one's sustainable step, the pooled row and the
// spread of the sustainable rates.
func TestCapacityRepeat(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := filepath.Join(t.TempDir(), "c")
	if code, out, errs := surge(t, "capacity", "--simulate", "--repeat", "2", "-o", dir, "-q"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, rep := range []string{"rep-1", "rep-2"} {
		if _, err := os.Stat(filepath.Join(dir, rep, "capacity.json")); err != nil {
			t.Errorf("%s is not a whole search: %v", rep, err)
		}
	}
	doc := readResults(t, filepath.Join(dir, "results.json"))
	if len(doc.Rows) != 3 || string(doc.Rows[2]["pooled"]) != "true" {
		t.Fatalf("%d rows, want two searches and the pooled row", len(doc.Rows))
	}
	if len(doc.Spreads) == 0 || doc.Spreads[0].Metric != "sustainable_rps" || len(doc.Spreads[0].Values) != 2 {
		t.Errorf("first spread is not the two sustainable rates: %+v", doc.Spreads)
	}
	if code, _, errs := surge(t, "report", dir); code != 2 || !strings.Contains(errs, "repeated capacity searches") {
		t.Errorf("report of repeated searches: exit %d %q", code, errs)
	}
}

// A rep cut short (here by the budget) is not a trial: the pooled row and
// the spread are built from the whole runs only, and a note names the one
// left out.
func TestRepeatLeavesOutPartialRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	// rate 6 for 10 s is about 60 requests a run: 150 lets two whole runs
	// happen and stops the third.
	code, out, errs := surge(t, "run", "--simulate", "--rate", "6", "--duration", "10s", "--repeat", "3", "--max-requests", "150", "-o", dir, "-q")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (stopped by the budget)\n%s\n%s", code, out, errs)
	}
	doc := readResults(t, filepath.Join(dir, "results.json"))
	var samples [4]int
	for _, row := range doc.Rows {
		rep, _ := intField(row, "rep")
		n, _ := intField(row, "samples")
		if rep >= 0 && rep < len(samples) {
			samples[rep] = n
		}
	}
	if samples[1] == 0 || samples[2] == 0 || samples[3] == 0 {
		t.Fatalf("rows' samples by rep %v: want three runs and a pooled row", samples)
	}
	if samples[0] != samples[1]+samples[2] {
		t.Errorf("pooled samples %d, want rep 1 + rep 2 = %d (rep 3 was cut short)", samples[0], samples[1]+samples[2])
	}
	for _, sp := range doc.Spreads {
		if len(sp.Values) != 2 {
			t.Errorf("spread %s over %d runs, want the 2 whole ones", sp.Metric, len(sp.Values))
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "rep 3 is left out of the pooled row and the spread: it was cut short (budget:") {
		t.Errorf("results.md does not say rep 3 was left out:\n%s", md)
	}
}
