package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// smallBurst runs a short simulated burst experiment into dir/name with
// extra flags and returns its folder.
func smallBurst(t *testing.T, dir, name string, extra ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := append([]string{"burst", "--simulate", "-q", "--baseline-rps", "8", "--multipliers", "5",
		"--warmup", "20s", "--baseline", "60s", "--burst", "30s", "--recovery", "60s", "--recovery-limit", "2m", "-o", out}, extra...)
	if code, stdout, stderr := surge(t, args...); !ran(code) {
		t.Fatalf("burst %v: exit %d\n%s\n%s", extra, code, stdout, stderr)
	}
	return out
}

// compareJSON reads the compare.json surge compare wrote.
func compareJSON(t *testing.T, dir string) (doc struct {
	Statement  string `json:"statement"`
	Confounded bool   `json:"confounded"`
	Variables  []struct {
		Name     string   `json:"name"`
		Values   []string `json:"values"`
		Coverage bool     `json:"coverage"`
	} `json:"variables"`
}) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// Two simulated bursts that differ only in --max-waiting: surge compare
// names exactly that variable, with the values as the user gave them;
// two that differ in --max-waiting and --baseline-rps: it warns that the
// comparison confounds them and names both.
func TestCompareNamesTheVariable(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := t.TempDir()
	a := smallBurst(t, dir, "a")
	b := smallBurst(t, dir, "b", "--max-waiting", "20")
	c := smallBurst(t, dir, "c", "--max-waiting", "20", "--baseline-rps", "6")

	out := filepath.Join(dir, "ab")
	code, stdout, stderr := surge(t, "compare", a, b, "-o", out)
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "One variable differs: max-waiting (0 → 20)") {
		t.Errorf("stdout does not name the one variable:\n%s", stdout)
	}
	doc := compareJSON(t, out)
	var names []string
	for _, v := range doc.Variables {
		names = append(names, v.Name)
	}
	if doc.Confounded || !slices.Equal(names, []string{"max-waiting"}) || !slices.Equal(doc.Variables[0].Values, []string{"0", "20"}) {
		t.Errorf("variables %v (%+v), confounded %v; want exactly max-waiting 0 → 20", names, doc.Variables, doc.Confounded)
	}
	for _, f := range []string{"compare.md", "compare.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}

	out = filepath.Join(dir, "ac")
	code, stdout, stderr = surge(t, "compare", a, c, "-o", out)
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "WARNING: 2 variables differ (baseline-rps, max-waiting): the comparison confounds them") {
		t.Errorf("stdout does not warn of the confounded pair:\n%s", stdout)
	}
	doc = compareJSON(t, out)
	names = nil
	for _, v := range doc.Variables {
		names = append(names, v.Name)
	}
	if !doc.Confounded || !slices.Equal(names, []string{"baseline-rps", "max-waiting"}) {
		t.Errorf("variables %v, confounded %v; want baseline-rps and max-waiting, confounded", names, doc.Confounded)
	}

	// One multiplier's run of each compares too, in the single-run layout.
	code, stdout, _ = surge(t, "compare", filepath.Join(a, "burst-5x"), filepath.Join(b, "burst-5x"), "-o", filepath.Join(dir, "runs"))
	if code != exitOK || !strings.Contains(stdout, "one run of a burst experiment") || !strings.Contains(stdout, "One variable differs: max-waiting") {
		t.Errorf("lone runs: exit %d\n%s", code, stdout)
	}
}

// Bad input exits 2 with a message naming the folder or the kinds.
func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	a := smallBurst(t, dir, "a")
	r := filepath.Join(dir, "r")
	if code, stdout, stderr := surge(t, "run", "--simulate", "-q", "--rate", "2", "--duration", "10s", "-o", r); !ran(code) {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	empty := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"one folder", []string{"compare", a}, "give at least two folders"},
		{"kinds", []string{"compare", a, r}, a + " is a burst experiment; " + r + " is a surge run"},
		{"not a run folder", []string{"compare", a, empty}, empty + " is not a folder surge wrote"},
		{"missing", []string{"compare", a, filepath.Join(dir, "nope")}, "nope: no such folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := surge(t, append(tc.args, "-o", filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-")))...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// Two capacity searches compare step by step (by planned rate), with the
// search's outcome — the sustainable rate — as a row of its own; a step
// only one search ran is not tested in the other.
func TestCompareCapacity(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := t.TempDir()
	search := func(name string, extra ...string) string {
		out := filepath.Join(dir, name)
		args := append([]string{"capacity", "--simulate", "-q", "--start-rps", "2", "--min-requests", "400", "--step-duration", "20s", "--max-step-duration", "5m", "-o", out}, extra...)
		if code, stdout, stderr := surge(t, args...); !ran(code) {
			t.Fatalf("capacity %v: exit %d\n%s\n%s", extra, code, stdout, stderr)
		}
		return out
	}
	a := search("a")
	b := search("b", "--replicas", "2")
	out := filepath.Join(dir, "ab")
	code, stdout, stderr := surge(t, "compare", a, b, "-o", out)
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"2 folders, capacity search", "One variable differs: replicas (1 → 2)", "## search outcome", "| sustainable rps ", "## 2 req/s", "not tested"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// Two soaks compare window by window.
func TestCompareSoak(t *testing.T) {
	dir := t.TempDir()
	var outs []string
	for _, extra := range [][]string{nil, {"--replicas", "2"}} {
		out := filepath.Join(dir, "soak"+strings.Join(extra, ""))
		args := append([]string{"soak", "--simulate", "-q", "--duration", "6m", "--rate", "2", "-o", out}, extra...)
		if code, stdout, stderr := surge(t, args...); !ran(code) {
			t.Fatalf("soak: exit %d\n%s\n%s", code, stdout, stderr)
		}
		outs = append(outs, out)
	}
	code, stdout, stderr := surge(t, "compare", outs[0], outs[1], "-o", filepath.Join(dir, "cmp"))
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"2 folders, soak", "One variable differs: replicas (1 → 2)", "## window 0–60 s", "## window 300–360 s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// Review 14 finding 8: a repeated capacity search and a single one line
// up — the search outcome (the repeated side's value the median of its
// searches, each listed) and the sustainable step — instead of every row
// "not tested".
func TestCompareRepeatedCapacityWithSingle(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := t.TempDir()
	search := func(name string, extra ...string) string {
		out := filepath.Join(dir, name)
		args := append([]string{"capacity", "--simulate", "-q", "--start-rps", "2", "--min-requests", "400", "--step-duration", "20s", "--max-step-duration", "5m", "-o", out}, extra...)
		if code, stdout, stderr := surge(t, args...); !ran(code) {
			t.Fatalf("capacity %v: exit %d\n%s\n%s", extra, code, stdout, stderr)
		}
		return out
	}
	a := search("a", "--repeat", "2")
	b := search("b")
	code, stdout, stderr := surge(t, "compare", a, b, "-o", filepath.Join(dir, "ab"))
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var outcome, step string
	for line := range strings.Lines(stdout) {
		if strings.HasPrefix(line, "| sustainable rps ") {
			outcome = line
		}
		if strings.HasPrefix(line, "| goodput ") && step == "" && strings.Contains(stdout, "## sustainable step") {
			step = line
		}
	}
	if !strings.Contains(outcome, "median ") || strings.Count(outcome, "not tested") > 0 {
		t.Errorf("search outcome row %q: want the searches' median against B's value", outcome)
	}
	if !strings.Contains(stdout, "## sustainable step") || strings.Contains(step, "not tested") {
		t.Errorf("sustainable step row %q:\n%s", step, stdout)
	}
	if !strings.Contains(stdout, "What was run differs: repeat") {
		t.Errorf("headline lacks the repeat difference:\n%s", stdout)
	}
}
