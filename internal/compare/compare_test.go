package compare

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/sim"
)

func mustCompare(t *testing.T, paths ...string) *Comparison {
	t.Helper()
	c, err := Folders(paths)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// With repeats (testdata: rows with "rep" 1..5 and a pooled row), the
// value compared is the pooled row's — never a mean of the runs — and the
// per-run values give the confidence statement: a bootstrap interval with
// five runs a side.
func TestRepeatsPooledAndBootstrap(t *testing.T) {
	c := mustCompare(t, "testdata/repeats-a", "testdata/repeats-b")
	if !c.Repeats {
		t.Fatal("repeats not seen")
	}
	a, _ := c.Value("5×", "goodput_rps", 0)
	b, _ := c.Value("5×", "goodput_rps", 1)
	if *a.Value != 0.5 || *b.Value != 1.58 {
		t.Errorf("goodput %v vs %v, want the pooled rows' 0.5 and 1.58", *a.Value, *b.Value)
	}
	if len(a.Runs) != 5 || len(b.Runs) != 5 {
		t.Fatalf("runs %v and %v, want five each", a.Runs, b.Runs)
	}
	if *b.Delta.Value != 1.58-0.5 {
		t.Errorf("delta %v", *b.Delta.Value)
	}
	// Per-run goodput 0.40–0.60 against 1.50–1.70: the medians differ by
	// 1.08, and every resample's difference lies within [0.9, 1.3].
	if !strings.Contains(b.Confidence, "bootstrap, 5 vs 5 runs): excludes 0: distinguishable") {
		t.Errorf("confidence %q", b.Confidence)
	}
	lo, hi := bootstrapDiff(a.Runs, b.Runs)
	if lo < 0.9 || hi > 1.3 || lo > 1.08 || hi < 1.08 {
		t.Errorf("interval [%v, %v] does not bracket 1.08 within [0.9, 1.3]", lo, hi)
	}
	// The setting that differs is named as the user sets it.
	if v, ok := c.Variable("max-waiting"); !ok || v.Values[0] != "0" || v.Values[1] != "20" || c.Confounded {
		t.Errorf("variables %+v", c.Variables)
	}
}

// Three runs a side whose ranges overlap are not distinguishable; the
// statement says so instead of giving an interval.
func TestRepeatsOverlap(t *testing.T) {
	c := mustCompare(t, "testdata/repeats-c", "testdata/repeats-d")
	b, _ := c.Value("5×", "goodput_rps", 1)
	if b.Confidence != "ranges overlap: not distinguishable with 3 vs 3 runs" {
		t.Errorf("confidence %q", b.Confidence)
	}
	if len(c.Variables) != 0 || !strings.HasPrefix(c.Statement, "No setting differs") {
		t.Errorf("variables %+v, statement %q", c.Variables, c.Statement)
	}
}

func TestConfidence(t *testing.T) {
	cases := []struct {
		name string
		a, b []float64
		want string
	}{
		{"single runs", nil, nil, ""},
		{"one side", []float64{1, 2}, nil, "repeats on one side only: no confidence statement"},
		{"disjoint, few", []float64{1, 2}, []float64{3, 4}, "ranges do not overlap (2 vs 2 runs; too few for an interval: --repeat 5 gives one)"},
		{"overlap, few", []float64{1, 3}, []float64{2, 4}, "ranges overlap: not distinguishable with 2 vs 2 runs"},
		{"overlap, many", []float64{1, 2, 3, 4, 5}, []float64{1.5, 2.5, 3.5, 4.5, 5.5}, "includes 0: not distinguishable"},
		{"constant", []float64{8, 8}, []float64{8, 8, 8}, "the same in every run (2 vs 3 runs)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := confidence("number", runSet{v: tc.a}, runSet{v: tc.b})
			if !strings.HasSuffix(got, tc.want) || (tc.want == "" && got != "") {
				t.Errorf("got %q, want …%q", got, tc.want)
			}
		})
	}
}

// A row only one folder ran (10× in B) is "not tested" in the other, and
// a value a folder did not measure (null) is not tested either — neither
// is zero, and neither has a delta.
func TestNotTested(t *testing.T) {
	c := mustCompare(t, "testdata/repeats-a", "testdata/repeats-b")
	a, tested := c.Value("10×", "goodput_rps", 0)
	if tested || !a.NotTested || a.Value != nil || !strings.Contains(a.Reason, "no 10× row in A") {
		t.Errorf("A at 10×: %+v", a)
	}
	b, _ := c.Value("10×", "goodput_rps", 1)
	if b.Delta != nil || b.Ratio != nil {
		t.Errorf("a delta against a row not tested: %+v", b)
	}
	r, tested := c.Value("10×", "recovery_s", 1)
	if tested || r.Reason != "not judged" {
		t.Errorf("recovery n/a: %+v", r)
	}
	var md bytes.Buffer
	if err := c.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| goodput ") || !strings.Contains(md.String(), "not tested") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// A censored reference (> 60 s) bounds the difference instead of hiding
// it: B − A < b − 60000.
func TestCensoredDelta(t *testing.T) {
	c := mustCompare(t, "testdata/repeats-a", "testdata/repeats-b")
	b, _ := c.Value("5×", "ttft_p99_ms", 1)
	if b.Delta == nil || b.Delta.Upper == nil || *b.Delta.Upper != 3100-60000 || b.Delta.Value != nil {
		t.Fatalf("delta %+v, want an upper bound of %d", b.Delta, 3100-60000)
	}
	if got := deltaText("ms", b); got != "< −56900 ms" {
		t.Errorf("delta text %q", got)
	}
	if len(b.Runs) != 5 || b.Confidence == "" {
		t.Errorf("runs %v, confidence %q", b.Runs, b.Confidence)
	}
	a, _ := c.Value("5×", "ttft_p99_ms", 0)
	if a.Runs == nil {
		// A's runs are exact (60000..60004): the pooled value is censored,
		// the runs are not; the per-run spread stays.
		t.Errorf("A's runs dropped")
	}
}

func TestDeltaRatio(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name     string
		a, b     Cell
		wantD    string
		wantR    string
		wantNone bool
	}{
		{"exact", Cell{Value: f(2)}, Cell{Value: f(3)}, "+1.00", "1.50×", false},
		{"zero reference", Cell{Value: f(0)}, Cell{Value: f(3)}, "+3.00", "–", false},
		{"B above", Cell{Value: f(2)}, Cell{Lower: f(5)}, "> +3.00", "> 2.50×", false},
		{"A above", Cell{Lower: f(10)}, Cell{Value: f(4)}, "< −6.00", "< 0.40×", false},
		{"both bounds", Cell{Lower: f(10)}, Cell{Lower: f(4)}, "–", "–", true},
		{"not measured", Cell{}, Cell{Value: f(4)}, "–", "–", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, r := deltaRatio(tc.a, tc.b)
			s := Side{Delta: d, Ratio: r}
			if got := deltaText("number", s); got != tc.wantD {
				t.Errorf("delta %q, want %q", got, tc.wantD)
			}
			if got := ratioText(s); got != tc.wantR {
				t.Errorf("ratio %q, want %q", got, tc.wantR)
			}
			if tc.wantNone != (d == nil) {
				t.Errorf("delta %+v", d)
			}
		})
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"StartRPS": "start-rps", "TTFTBudget": "ttft-budget", "baseline_rps": "baseline-rps",
		"MaxStepDuration": "max-step-duration", "Rate": "rate", "warmup": "warmup",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBadInput(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(empty, "f")
	os.WriteFile(file, []byte("x"), 0o644)
	cases := []struct {
		name  string
		paths []string
		want  string
	}{
		{"one", []string{"testdata/repeats-a"}, "give at least two folders"},
		{"empty folder", []string{"testdata/repeats-a", empty}, "is not a folder surge wrote"},
		{"a file", []string{"testdata/repeats-a", file}, "not a folder (give the folder a surge command wrote)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Folders(tc.paths)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInput with %q", err, tc.want)
			}
		})
	}
}

// Censored runs (each run's P99 > 60 s) still bound the range: B's runs
// all below 60 s do not overlap A's. A metric with one value per run and
// no pooled one (recovery) is compared by the runs' median, marked so.
func TestCensoredRunsAndMedianOfRuns(t *testing.T) {
	c := mustCompare(t, "testdata/censored-a", "testdata/censored-b")
	b, _ := c.Value("5×", "ttft_p99_ms", 1)
	if b.Confidence != "ranges do not overlap (3 vs 3 runs; some runs only bound it (> x): no interval)" {
		t.Errorf("confidence %q", b.Confidence)
	}
	a, _ := c.Value("5×", "ttft_p99_ms", 0)
	if got := sideText("ms", a); got != "> 60000 ms (runs > 60000 ms, > 60000 ms, > 60000 ms)" {
		t.Errorf("A %q", got)
	}
	ra, okA := c.Value("5×", "recovery_s", 0)
	rb, okB := c.Value("5×", "recovery_s", 1)
	if !okA || !okB || !ra.OfRuns || *ra.Value != 390 || *rb.Value != 10 || *rb.Delta.Value != -380 {
		t.Fatalf("recovery A %+v, B %+v", ra, rb)
	}
	if got := sideText("seconds", rb); got != "median 10 s (of 10 s, 20 s, 10 s)" {
		t.Errorf("B %q", got)
	}
	if rb.Confidence != "ranges do not overlap (3 vs 3 runs; too few for an interval: --repeat 5 gives one)" {
		t.Errorf("recovery confidence %q", rb.Confidence)
	}
}

// capacity --repeat N writes rep-k/ each a whole search and, at the top,
// each search's sustainable step (a different step per search) and their
// pooled row: they compare as one row, "sustainable step".
func TestCapacityRepeats(t *testing.T) {
	c := mustCompare(t, "testdata/capacity-repeats-a", "testdata/capacity-repeats-b")
	if c.Kind != KindCapacity || len(c.Groups) != 1 || c.Groups[0].Key != "sustainable step" {
		t.Fatalf("kind %q, rows %d (%+v)", c.Kind, len(c.Groups), c.Groups)
	}
	b, _ := c.Value("sustainable step", "goodput_rps", 1)
	if *b.Value != 13.7 || len(b.Runs) != 2 || !strings.HasPrefix(b.Confidence, "ranges do not overlap (2 vs 2 runs") {
		t.Errorf("B %+v", b)
	}
	if v, ok := c.Variable("replicas"); !ok || len(c.Differing()) != 1 || v.Values[1] != "2" {
		t.Errorf("variables %+v", c.Variables)
	}
}

// surge run --repeat N: D/rep-1 … rep-N (run folders) and D/results.json
// with the per-run and pooled rows read as a surge run's folder.
func TestRunRepeatsLayout(t *testing.T) {
	dir := t.TempDir()
	write := func(name, mw string, goodput ...float64) string {
		d := filepath.Join(dir, name)
		for k := range 2 {
			rep := filepath.Join(d, "rep-"+string(rune('1'+k)))
			os.MkdirAll(rep, 0o755)
			os.WriteFile(filepath.Join(rep, "manifest.json"), []byte(`{"tool":"surge","command":"run","seed":`+string(rune('1'+k))+`,"serving_config":"surge simulator {\"MaxWaiting\":`+mw+`}"}`), 0o644)
			os.WriteFile(filepath.Join(rep, "requests.jsonl"), nil, 0o644)
		}
		rows := ""
		for i, g := range goodput {
			rep := `"rep":` + string(rune('0'+i+1))
			if i == len(goodput)-1 {
				rep = `"rep":0,"pooled":true,"repeats":2`
			}
			rows += `,{"phase":null,` + rep + `,"goodput_rps":{"value":` + strconv.FormatFloat(g, 'f', -1, 64) + `}}`
		}
		os.WriteFile(filepath.Join(d, "results.json"), []byte(`{"rows":[`+rows[1:]+`]}`), 0o644)
		return d
	}
	a := write("a", "0", 1, 2, 1.5)
	b := write("b", "20", 3, 4, 3.5)
	c := mustCompare(t, a, b)
	if c.Kind != KindRun || !c.Repeats {
		t.Fatalf("kind %q, repeats %v", c.Kind, c.Repeats)
	}
	s, _ := c.Value("whole run", "goodput_rps", 1)
	if *s.Value != 3.5 || len(s.Runs) != 2 || *s.Delta.Value != 2 || !strings.HasPrefix(s.Confidence, "ranges do not overlap (2 vs 2 runs") {
		t.Errorf("B %+v", s)
	}
	if got := c.Differing(); len(got) != 1 || got[0] != "max-waiting" {
		t.Errorf("differing %v (rep-1's manifests: the same seed)", got)
	}
}

// Review 14 finding 7: the headline agrees with the settings table. A
// folder cut by its budget is warned about first, with its reason; a
// difference in what was run (repeat) or in the budget is named, not
// called "no setting differs".
func TestHeadlineNamesCoverageAndPartial(t *testing.T) {
	base := run.Options{Sim: sim.DefaultConfig()}
	base.Model, base.Timeout, base.Profile, base.Seed = "m", 60e9, "chat", 1
	cut := base
	limit := int64(5000)
	cut.MaxRequests = &limit
	type extra struct {
		Burst map[string]any `json:"burst"`
	}
	a := manifestOf(base, extra{map[string]any{"multipliers": []float64{5}}})
	b := manifestOf(cut, extra{map[string]any{"multipliers": []float64{5}, "repeat": 3}})
	b.Partial, b.PartialWhy = true, "budget: 5000 requests sent (--max-requests 5000)"
	c := compare([]Folder{{Label: "A", Path: "a", Manifest: a}, {Label: "B", Path: "b", Manifest: b, Partial: true, PartialWhy: b.PartialWhy}}, [][]Column{nil, nil})
	for _, want := range []string{
		"WARNING: B holds a partial run (budget: 5000 requests sent (--max-requests 5000))",
		"What was run differs: repeat (not recorded → 3)",
		"The budget differs: max-requests (none → 5000)",
	} {
		if !strings.Contains(c.Statement, want) {
			t.Errorf("statement lacks %q:\n%s", want, c.Statement)
		}
	}
	if !strings.HasPrefix(c.Statement, "WARNING: B holds a partial run") {
		t.Errorf("the partial warning is not first:\n%s", c.Statement)
	}
	if strings.Contains(c.Statement, "No setting differs between the folders") || strings.Contains(c.Statement, "run-to-run variation") {
		t.Errorf("statement denies the differences its table lists:\n%s", c.Statement)
	}
}

// Review 14 finding 16: the same folder twice is refused (it would show
// "no difference" and prove nothing), and a kind error reads as English.
func TestSameFolderAndKindWording(t *testing.T) {
	_, err := Folders([]string{"testdata/repeats-a", "testdata/../testdata/repeats-a"})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "are the same folder") {
		t.Errorf("err %v, want ErrInput naming the same folder", err)
	}
	if got := article("one run of a burst experiment"); got != "one run of a burst experiment" {
		t.Errorf("article %q", got)
	}
	if got := article(KindBurst); got != "a burst experiment" {
		t.Errorf("article %q", got)
	}
}
