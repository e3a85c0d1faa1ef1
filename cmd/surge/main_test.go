package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/memnet"
	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schematest"
)

func surge(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	code = cli(context.Background(), args, &out, &errb)
	validateOut(t, args, start)
	return code, out.String(), errb.String()
}

// validateOut checks every file the command wrote into its -o/--out
// folder (and into the folders report re-rendered) against the run
// folder's JSON Schemas (docs/schema/).
func validateOut(t *testing.T, args []string, start time.Time) {
	t.Helper()
	for i, a := range args {
		var dir string
		switch {
		case (a == "-o" || a == "--out") && i+1 < len(args):
			dir = args[i+1]
		case strings.HasPrefix(a, "--out="):
			dir = strings.TrimPrefix(a, "--out=")
		case i > 0 && args[0] == "report" && !strings.HasPrefix(a, "-"):
			dir = a
		}
		if dir != "" {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				schematest.ValidateDir(t, dir, start)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := surge(t, "version")
	if code != 0 || !strings.HasPrefix(out, "surge ") {
		t.Fatalf("code %d out %q", code, out)
	}
}

// Bad input exits 2 with a message that names the flag or the file, line
// and field.
func TestUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("rate: 5\nduraton: 10s\n"), 0o644)
	badSim := filepath.Join(dir, "sim.yaml")
	os.WriteFile(badSim, []byte("max_num_seqs: 8\nreplicas: two\n"), 0o644)
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	empty := file("empty.yaml", "")
	comments := file("comments.yaml", "# nothing here yet\n")
	noPhases := file("nophases.yaml", "target: http://127.0.0.1:1/v1\nmodel: m\n")
	emptyPhases := file("emptyphases.yaml", "phases: []\n")
	badDuration := file("badduration.yaml", "phases:\n  - name: a\n    duration: 10s\n    rate: 1\n  - name: b\n    duration: five seconds\n    rate: 2\n")
	badRate := file("badrate.yaml", "rate: fast\nduration: 10s\n")
	badList := file("badlist.yaml", "multipliers: 5\n")
	badPhase := file("badphase.yaml", "phases:\n  - name: a\n    duration: 0s\n    rate: 1\n")
	notMap := file("list.yaml", "- rate: 5\n")
	zeroBurst := file("zeroburst.yaml", "baseline_rps: 5\nburst: 0s\n")
	zeroSeqs := file("zeroseqs.yaml", "rate: 5\nsim:\n  max_num_seqs: 0\n")
	emptyTarget := file("emptytarget.yaml", "target: \"\"\n")
	onlyWarmup := file("onlywarmup.yaml", "phases:\n  - name: warmup\n    rate: 2\n    duration: 5s\n")
	zeroMult := file("zeromult.yaml", "baseline_rps: 4\nphases:\n  - name: a\n    multiplier: 0\n    duration: 5s\n")
	cases := map[string]struct {
		args []string
		want string
	}{
		"sim flag out of range":       {[]string{"sim", "--max-num-seqs", "0"}, "--max-num-seqs (sim: max_num_seqs): must be ≥ 1, got 0"},
		"sim negative waiting":        {[]string{"sim", "--max-waiting", "-1"}, "--max-waiting"},
		"sim bad yaml value":          {[]string{"sim", "-f", badSim}, badSim + ":2: "},
		"unknown flag":                {[]string{"run", "--rat", "5"}, "unknown flag: --rat"},
		"unknown yaml field":          {[]string{"run", "-f", bad}, bad + `:2: unknown field "duraton"`},
		"missing yaml":                {[]string{"run", "-f", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		"negative rate":               {[]string{"run", "--rate", "-1", "-q"}, "--rate: must be a finite number of arrivals/s >= 0, got -1"},
		"infinite rate":               {[]string{"run", "--rate=Inf", "-q"}, "--rate: must be a finite number of arrivals/s >= 0, got +Inf"},
		"multipliers not numbers":     {[]string{"burst", "--multipliers", "2,two"}, `--multipliers: want numbers separated by commas, e.g. 2,5,10; "two" is not one`},
		"negative baseline, target":   {[]string{"burst", "--target", "http://127.0.0.1:1/v1", "--baseline-rps=-4"}, "--baseline-rps: must be a number of requests/s > 0 (or auto), got -4"},
		"empty target":                {[]string{"run", "--target", "", "-q"}, "--target: empty; omit it to use the built-in simulator"},
		"empty target in the file":    {[]string{"run", "-f", emptyTarget}, emptyTarget + ":1: target: empty; omit it to use the built-in simulator"},
		"only a warmup phase":         {[]string{"run", "-f", onlyWarmup}, onlyWarmup + ": phases: only a warmup phase, which the results leave out"},
		"multiplier zero":             {[]string{"run", "-f", zeroMult}, zeroMult + ": phases[0].rate: set rate (arrivals/s > 0) or multiplier (> 0, of baseline_rps)"},
		"zero burstiness":             {[]string{"run", "--arrival", "gamma", "--burstiness", "0", "-q"}, "--burstiness: must be > 0"},
		"zero duration":               {[]string{"run", "--duration", "0s", "-q"}, "--duration: must be > 0, got 0s"},
		"bad api":                     {[]string{"run", "--api", "anthropic", "-q"}, `--api: must be one of chat, completions, responses, messages, embeddings, rerank, got "anthropic"`},
		"bad http client":             {[]string{"run", "--http-client", "h2", "-q"}, `--http-client: must be auto, surge or go, got "h2"`},
		"bad target":                  {[]string{"run", "--target", "localhost:8000"}, "--target: must be an http:// or https:// URL"},
		"unknown profile":             {[]string{"run", "--profile", "poetry"}, `--profile: unknown profile "poetry"`},
		"burst zero multiplier":       {[]string{"burst", "--multipliers", "0"}, "--multipliers: each must be > 0, got 0"},
		"burst negative multiplier":   {[]string{"burst", "--multipliers", "2,-5"}, "--multipliers: each must be > 0, got -5"},
		"burst zero phase":            {[]string{"burst", "--burst", "0s"}, "--burst: must be > 0, got 0s"},
		"burst target no baseline":    {[]string{"burst", "--target", "http://127.0.0.1:1/v1"}, "--baseline-rps: required with --target"},
		"simulate with target":        {[]string{"burst", "--simulate", "--target", "http://127.0.0.1:1/v1", "--baseline-rps", "3"}, "surge: --simulate: runs against the engine model in virtual time; it cannot be combined with --target\n"},
		"header without colon":        {[]string{"run", "--header", "X-Secret-Token abc"}, `--header: must be "Name: value"`},
		"sweep levels not increasing": {[]string{"sweep", "--concurrency", "1,16,4"}, "--concurrency: levels must increase, got 4 after 16"},
		"sweep rates not increasing":  {[]string{"sweep", "--rates", "2,2"}, "--rates: levels must increase, got 2 after 2"},
		"sweep both loops":            {[]string{"sweep", "--concurrency", "1,2", "--rates", "1,2"}, "--concurrency: give either --concurrency (closed loop) or --rates (open loop), not both"},
		"sweep zero ttft budget":      {[]string{"sweep", "--ttft-budget", "0s"}, "--ttft-budget: must be > 0, got 0s (a budget of zero can never hold)"},
		"sweep zero tpot budget":      {[]string{"sweep", "--tpot-budget", "0s"}, "--tpot-budget: must be > 0"},
		"sweep unreachable rate":      {[]string{"sweep", "--rates", "1,5000000"}, "--rates: 5e+06 requests/s is more than the load generator can schedule"},
		"capacity unreachable rate":   {[]string{"capacity", "--start-rps", "2000000"}, "--start-rps: 2e+06 requests/s is more than the load generator can schedule"},
		"capacity growth not growing": {[]string{"capacity", "--growth", "1"}, "--growth: must be > 1 so that the steps increase"},
		"capacity no SLO":             {[]string{"capacity", "--slo-ttft-p95", "0", "--slo-e2e-p99", "0", "--slo-goodput", "0"}, "a capacity search needs at least one SLO clause"},
		"capacity max below start":    {[]string{"capacity", "--start-rps", "5", "--max-rps", "2"}, "--max-rps: must be ≥ --start-rps (5), got 2"},
		"soak target without rate":    {[]string{"soak", "--target", "http://127.0.0.1:1/v1"}, "--rate: required with --target"},
		"soak too short for a trend":  {[]string{"soak", "--duration", "2m"}, "--duration: must hold at least 6 windows"},
		"burst baseline neither":      {[]string{"burst", "--baseline-rps", "fast"}, `want requests/s or auto, got "fast"`},
		"slowdown negative":           {[]string{"soak", "--slowdown-per-hour", "-1"}, "--slowdown-per-hour (sim: slowdown_per_hour): must be in [0, 1000]"},
		"empty file":                  {[]string{"run", "-f", empty}, empty + ": the file is empty"},
		"only comments":               {[]string{"burst", "-f", comments}, comments + ": the file is empty"},
		"no phases":                   {[]string{"run", "-f", noPhases}, noPhases + ": no phases"},
		"empty phases":                {[]string{"run", "-f", emptyPhases}, emptyPhases + ":1: phases: the list is empty"},
		"duration in words":           {[]string{"run", "-f", badDuration}, badDuration + `:6: phases[1].duration: want a duration like 30s, got "five seconds"`},
		"rate in words":               {[]string{"run", "-f", badRate}, badRate + `:1: rate: want a number, got "fast"`},
		"list wanted":                 {[]string{"burst", "-f", badList}, badList + `:1: multipliers: want a list of numbers like [2, 5, 10], got "5"`},
		"phase field from a file":     {[]string{"run", "-f", badPhase}, badPhase + ": phases[0].duration: must be > 0, got 0s"},
		"not a mapping":               {[]string{"run", "-f", notMap}, notMap + ":1: want a mapping of keys"},
		// A value the file set is named by file, line and key, not by a flag
		// the user did not type; the flag wins when it is given.
		"value from the file":     {[]string{"burst", "-f", zeroBurst}, "surge: " + zeroBurst + ":2: burst: must be > 0, got 0s\n"},
		"flag over the file":      {[]string{"burst", "-f", zeroBurst, "--burst", "-1s"}, "surge: --burst: must be > 0, got -1s\n"},
		"sim value from the file": {[]string{"run", "-f", zeroSeqs}, "surge: " + zeroSeqs + ":3: sim.max_num_seqs: must be ≥ 1, got 0\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := surge(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q lacks %q", stderr, tc.want)
			}
			if strings.Contains(stderr, "abc") {
				t.Fatalf("a header value leaked into the error: %q", stderr)
			}
		})
	}
}

// Flags win over the YAML file.
func TestFlagsWinOverFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "exp.yaml")
	os.WriteFile(f, []byte("multipliers: [3]\nbaseline_rps: 4\nwarmup: 0s\nbaseline: 20s\nburst: 10s\nrecovery: 20s\nrecovery_limit: 20s\nquiet: true\n"), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := surge(t, "burst", "--simulate", "-f", f, "--multipliers", "2", "-o", out)
	if !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "burst-2x")); err != nil {
		t.Fatalf("the flag's multiplier 2 should win over the file's 3: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "burst-3x")); err == nil {
		t.Fatal("the file's multiplier ran too")
	}
}

// A file's target: and --simulate on the command line: the flag wins, as
// help says, and a line says so; the other way round too. Both as flags
// stay a usage error.
func TestSimulateFlagWinsOverFileTarget(t *testing.T) {
	dir := t.TempDir()
	withTarget := filepath.Join(dir, "target.yaml")
	os.WriteFile(withTarget, []byte("target: http://127.0.0.1:1/v1\nmodel: m\n"), 0o644)
	code, stdout, stderr := surge(t, "run", "-f", withTarget, "--simulate", "--rate", "1", "--duration", "2s", "-q", "-o", filepath.Join(dir, "a"))
	if !ran(code) || !strings.Contains(stderr, "--simulate wins over "+withTarget+"'s target:") || !strings.Contains(stdout, "virtual time") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	withSim := filepath.Join(dir, "sim.yaml")
	os.WriteFile(withSim, []byte("simulate: true\nrate: 1\nduration: 2s\n"), 0o644)
	if code, _, stderr := surge(t, "run", "-f", withSim, "--target", "http://127.0.0.1:1/v1", "--dry-run"); code != exitOK || !strings.Contains(stderr, "--target wins over "+withSim+"'s simulate:") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if code, _, stderr := surge(t, "run", "--target", "http://127.0.0.1:1/v1", "--simulate", "--dry-run"); code != exitUsage || !strings.Contains(stderr, "cannot be combined with --target") {
		t.Fatalf("both flags: exit %d, stderr %s", code, stderr)
	}
}

// The what-if mode runs the whole default experiment in virtual time.
func TestBurstSimulate(t *testing.T) {
	skipVirtualUnderRace(t)
	out := filepath.Join(t.TempDir(), "o")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "5", "-o", out)
	if code != exitSLO { // a 10× burst over a half-loaded simulator fails the SLO
		t.Fatalf("exit %d, want 1 (SLO failed)\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"virtual time", "burst-2x", "burst-5x", "burst-10x", "prediction with μ", "recovery (e2e_schedule)", "results.md"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// surge report re-renders a burst experiment from its files alone.
func TestReportRerendersBurst(t *testing.T) {
	skipVirtualUnderRace(t)
	out := filepath.Join(t.TempDir(), "o")
	code, stdout, stderr := surge(t, "burst", "--simulate", "--baseline-rps", "5", "--multipliers", "3", "-o", out)
	if !ran(code) {
		t.Fatalf("burst: exit %d\n%s\n%s", code, stdout, stderr)
	}
	before, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// summary.json stays: it holds the prediction made before the run.
	for _, f := range []string{"results.csv", "results.md", "report.html", "burst-3x/timeseries.csv"} {
		os.Remove(filepath.Join(out, f))
	}
	code, stdout, stderr = surge(t, "report", out)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	after, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatalf("re-rendered results differ:\nbefore %s\nafter  %s", before, after)
	}
	for _, f := range []string{"results.md", "report.html", "burst-3x/timeseries.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not re-rendered: %v", f, err)
		}
	}
	if code, _, stderr := surge(t, "report", t.TempDir()); code != exitUsage || !strings.Contains(stderr, "holds no run surge wrote: no requests.jsonl") {
		t.Fatalf("empty folder: exit %d %q", code, stderr)
	}
}

// The three level experiments run end to end in virtual time, and burst
// --baseline-rps auto takes its baseline and μ from a capacity search.
func TestLevelCommandsSimulate(t *testing.T) {
	skipVirtualUnderRace(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"capacity", []string{"capacity", "--simulate", "--slo-e2e-p99", "0", "--e2e-deadline", "10m", "--timeout", "10m"}, exitOK,
			[]string{"step  1:", "Sustainable capacity: 9", "Suggested baseline: 6", "\n  sustainable 9", "exit 0: a sustainable rate was found"}},
		{"sweep", []string{"sweep", "--simulate", "--max-num-seqs", "16", "--concurrency", "4,16,64", "--duration", "5m"}, exitOK,
			[]string{"throughput knee:       c16", "usable level:          c16", "\n  usable c16 ", "budget PASS  p95 TTFT", "exit 0: a usable level was found: c16"}},
		{"soak stable", []string{"soak", "--simulate", "--duration", "20m", "--warmup", "1m"}, exitOK, []string{"drift STABLE", "exit 0: the SLO held", "and nothing drifted"}},
		{"soak drifting", []string{"soak", "--simulate", "--duration", "20m", "--warmup", "1m", "--rate", "6", "--slowdown-per-hour", "1"}, exitSLO, []string{"drift DRIFTING", "a metric drifted"}},
		{"burst auto", []string{"burst", "--simulate", "--baseline-rps", "auto", "--multipliers", "2", "--warmup", "30s", "--baseline", "1m", "--burst", "30s", "--recovery", "1m", "--recovery-limit", "2m"}, -1,
			[]string{"--baseline-rps auto: searching", "burst baseline: ", "μ = ", "(capacity search: sustainable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			code, stdout, stderr := surge(t, append(tc.args, "-q", "-o", out)...)
			if tc.code >= 0 && code != tc.code || code == exitUsage || code == exitInternal {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q\n%s", w, stdout)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
				t.Error(err)
			}
			sloColumns(t, filepath.Join(out, "results.csv"))
		})
	}
}

// sloColumns checks that results.csv has a verdict column per SLO clause
// and that every row holds PASS, FAIL or INCONCLUSIVE in the goodput one
// (checked by default), and those or N/A in the others.
func sloColumns(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v, %d rows", path, err, len(rows))
	}
	for _, col := range []string{"slo_ttft_p95", "slo_e2e_p99", "slo_goodput_ratio"} {
		j := slices.Index(rows[0], col)
		if j < 0 {
			t.Errorf("%s: no %s column in %v", path, col, rows[0])
			continue
		}
		for _, r := range rows[1:] {
			if v := r[j]; v != "PASS" && v != "FAIL" && v != "INCONCLUSIVE" && (col == "slo_goodput_ratio" || v != "N/A") {
				t.Errorf("%s: %s = %q", path, col, v)
			}
		}
	}
}

// A repeated flag whose value holds a comma survives being re-applied over
// a YAML file: the run sees one header, not "X-A: 1" and a stray "2", and
// the file's rate and duration still apply.
func TestSliceFlagWithCommaOverFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "exp.yaml")
	os.WriteFile(f, []byte("rate: 2\nduration: 1s\n"), 0o644)
	out := filepath.Join(dir, "o")
	code, _, stderr := surge(t, "run", "-f", f, "--header", "X-A: 1,2", "--target", "http://127.0.0.1:1/v1", "-q", "-o", out)
	if code != exitTarget { // nothing listens on port 1: unusable, but it ran
		t.Fatalf("exit %d, want 3: %s", code, stderr)
	}
	m, err := record.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m.Config)
	var cfg struct {
		Plan struct {
			Phases []struct{ Duration, Rate float64 }
		} `json:"plan"`
		Options struct{ Headers []string } `json:"options"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if h := cfg.Options.Headers; len(h) != 1 || h[0] != "X-A: <redacted>" {
		t.Errorf("headers recorded as %q, want one, redacted", h)
	}
	if p := cfg.Plan.Phases; len(p) != 1 || p[0].Rate != 2 || time.Duration(p[0].Duration) != time.Second {
		t.Errorf("phases %+v, want the file's 1 s at 2/s", p)
	}
}

// surge predict reproduces the seed's worked example (docs/method.md §8).
func TestPredictSeedExample(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"predict", "--mu", "10", "--lambda", "8", "--burst-rps", "20", "--burst", "60s"}, []string{"peak backlog:   600.0 requests", "recovery time:  5m0s after the burst ends"}},
		{[]string{"predict", "--mu", "10", "--lambda", "8", "--burst-rps", "20", "--burst", "60s", "--boost-rps", "16"}, []string{"recovery time:  1m15s after the burst ends"}},
		{[]string{"predict", "--mu", "10", "--lambda", "10", "--burst-rps", "20", "--burst", "60s"}, []string{"recovery:       never"}},
		// Clients that give up after 60 s: the backlog stops at 9.14 × 60.
		{[]string{"predict", "--mu", "9.14", "--lambda", "4", "--burst-rps", "40", "--burst", "60s", "--timeout", "60s"},
			[]string{"peak backlog:   548.4 requests", "recovery time:  1m46.69", "gave up:        1303 requests"}},
		// An admission limit of 100 and one retry after 5 s (predict, "Rejections and retries").
		{[]string{"predict", "--mu", "10", "--lambda", "8", "--burst-rps", "20", "--burst", "60s", "--queue-limit", "100", "--retries", "1", "--retry-delay", "5s"},
			[]string{"peak backlog:   100.0 requests", "recovery time:  1m3.8", "rejected:       472 requests for good (queue limit 100; 711 retries sent)",
				"model:          fluid backlog; no timeout; queue limit 100, 1 retry after 5s"}},
	}
	for _, tc := range cases {
		code, out, stderr := surge(t, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
	if code, _, stderr := surge(t, "predict", "--mu", "0"); code != exitUsage || !strings.Contains(stderr, "--mu: must be > 0") {
		t.Fatalf("exit %d %q", code, stderr)
	}
	if code, _, stderr := surge(t, "predict", "--mu", "10", "--timeout", "-1s"); code != exitUsage || !strings.Contains(stderr, "--timeout: must be ≥ 0") {
		t.Fatalf("exit %d %q", code, stderr)
	}
	if code, _, stderr := surge(t, "predict", "--mu", "10", "--burst", "0s"); code != exitUsage || !strings.Contains(stderr, "--burst: must be > 0") {
		t.Fatalf("exit %d %q", code, stderr)
	}
	if code, _, stderr := surge(t, "predict", "--mu", "10", "--queue-limit", "20", "--retries", "2"); code != exitUsage || !strings.Contains(stderr, "--retry-delay: must be > 0 with retries") {
		t.Fatalf("exit %d %q", code, stderr)
	}
}

// An unreachable target: every request is classified conn_error, the run
// completes, says the target was unusable, and exits 3.
func TestUnreachableTargetExits3(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o")
	code, stdout, stderr := surge(t, "run", "--target", "http://127.0.0.1:1/v1", "--rate", "10", "--duration", "1s", "-q", "-o", out)
	if code != exitTarget {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"failures: conn_error", "The target was unusable"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "results.md")); err != nil {
		t.Fatalf("reports not written: %v", err)
	}
}

// Ctrl-C during `surge run`: the summary is still printed, the results are
// marked partial, rates are over the time that ran, and the exit code is 1.
// The whole command runs in virtual time over an in-memory network, so the
// interruption comes exactly 3 s into the run.
func TestRunInterruptPrintsSummary(t *testing.T) {
	synctest.Test(t, testRunInterrupt)
}

func testRunInterrupt(t *testing.T) {
	network = &memnet.Network{}
	defer func() { network = nil }()
	out := filepath.Join(t.TempDir(), "o")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Second, cancel)
	var stdout, stderr bytes.Buffer
	code := cli(ctx, []string{"run", "--rate", "10", "--duration", "60s", "-q", "-o", out}, &stdout, &stderr)
	if code != exitSLO {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"PARTIAL", "phase    offered/s", "Interrupted"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	// Offered RPS over the ~3 s that ran, not over the planned 60 s.
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Partial  bool `json:"partial"`
		Analysis struct {
			Overall struct {
				OfferedRPS float64 `json:"offered_rps"`
			} `json:"overall"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.Partial || sum.Analysis.Overall.OfferedRPS < 5 || sum.Analysis.Overall.OfferedRPS > 20 {
		t.Fatalf("partial %v, offered %.2f/s; want partial and ≈10/s", sum.Partial, sum.Analysis.Overall.OfferedRPS)
	}
}

// A `surge run` file without phases is refused, unless the command line
// gives the load: a file of connection settings plus --rate and
// --duration describes a run.
func TestPhasesGivenByFlags(t *testing.T) {
	keys := map[string]*yaml.Node{"model": {Kind: yaml.ScalarNode, Value: "m"}}
	none := func(string) bool { return false }
	if err := phasesGiven("f.yaml", keys, none); err == nil || !strings.Contains(err.Error(), "f.yaml: no phases") {
		t.Fatalf("no phases anywhere: %v", err)
	}
	rate := func(k string) bool { return k == "rate" }
	if err := phasesGiven("f.yaml", keys, rate); err != nil {
		t.Fatalf("--rate on the command line: %v", err)
	}
	keys["phases"] = &yaml.Node{Kind: yaml.SequenceNode, Line: 3}
	if err := phasesGiven("f.yaml", keys, rate); err == nil || !strings.Contains(err.Error(), "f.yaml:3: phases: the list is empty") {
		t.Fatalf("an empty phases list, whatever the flags: %v", err)
	}
}

// --prompt-tokens and --output-tokens take a count or a distribution, on
// the command line and in a file; the draws follow it, and a mistake is a
// usage error naming the flag or the file's key.
func TestLengthDistributions(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ln")
	args := []string{"run", "--rate", "60", "--duration", "4s", "-q",
		"--prompt-tokens", "lognormal:median=300,p95=1200,max=4000", "--output-tokens", "uniform:min=8,max=16", "-o", out}
	if racedetect.Enabled {
		// Most of the run's ~17 s is the one-replica simulator working
		// through the 240 arrivals; four replicas take ~6 s, through the
		// same client and server code. The draws checked below are the
		// workload's, whatever the engine.
		args = append(args, "--replicas", "4")
	}
	code, stdout, stderr := surge(t, args...)
	if !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var prompts, maxTokens []int
	if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
		prompts, maxTokens = append(prompts, r.PromptTokens), append(maxTokens, r.MaxTokens)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(prompts)
	n := len(prompts)
	// ~250 draws: the sample median is within ±15% of 300, and the sample
	// p95 between the distribution's p90 (883) and p99 (2130).
	if med, p95 := float64(prompts[n/2]), float64(prompts[n*95/100]); n < 200 || med < 255 || med > 345 || p95 < 883 || p95 > 2130 {
		t.Errorf("%d prompts: median %g, p95 %g; want about 300 and 1200", n, med, p95)
	}
	if lo, hi := slices.Min(maxTokens), slices.Max(maxTokens); lo < 8 || hi > 16 || lo == hi {
		t.Errorf("max_tokens in [%d, %d], want draws over [8, 16]", lo, hi)
	}
	f := filepath.Join(dir, "exp.yaml")
	os.WriteFile(f, []byte("rate: 5\nduration: 2s\nquiet: true\nprompt_tokens: \"normal:mean=100,sd=10\"\noutput_tokens: 8\n"), 0o644)
	if code, stdout, stderr := surge(t, "run", "-f", f, "-o", filepath.Join(dir, "yaml")); !ran(code) {
		t.Fatalf("from a file: exit %d: %s %s", code, stdout, stderr)
	}
	for args, want := range map[string]string{
		"--prompt-tokens lognormal:median=800,p95=600": "lognormal: p95: must be above the median (800), got 600",
		"--output-tokens lots":                         `want a token count such as 200`,
	} {
		code, _, stderr := surge(t, append([]string{"run", "--rate", "1", "--duration", "1s"}, strings.Fields(args)...)...)
		if code != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, strings.Fields(args)[0]) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming the flag and %q", args, code, stderr, want)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("rate: 1\nduration: 1s\nprompt_tokens: \"uniform:max=10\"\n"), 0o644)
	if code, _, stderr := surge(t, "run", "-f", bad); code != exitUsage || !strings.Contains(stderr, "uniform: min and max: required") {
		t.Errorf("bad file: exit %d, stderr %q", code, stderr)
	}
}

// --sessions and its settings, on the command line and in a file; every
// mistake is a usage error naming the flag or the file's key.
func TestSessionsFlags(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "exp.yaml")
	os.WriteFile(f, []byte("rate: 2\nduration: 2s\nquiet: true\nsessions: true\nsession_turns: 2\nthink_time: 100ms\nturn_tokens: 20\nfanout: 1\nsession_drain: 20s\noutput_tokens: 8\n"), 0o644)
	out := filepath.Join(dir, "yaml")
	if code, stdout, stderr := surge(t, "run", "-f", f, "-o", out); !ran(code) {
		t.Fatalf("from a file: exit %d: %s %s", code, stdout, stderr)
	}
	turns := map[[2]int]int{}
	if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
		turns[[2]int{r.Turn, r.Branch}]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(turns) != 4 || turns[[2]int{2, 1}] == 0 {
		t.Fatalf("records by (turn, branch): %v; want turns 1 and 2, each with branch 1", turns)
	}
	for args, want := range map[string]string{
		"--fanout 2":                               "--fanout: needs --sessions",
		"--sessions --fanout 99":                   "--fanout: must be 0..64, got 99",
		"--sessions --think-time 2":                `--think-time: want a duration such as 2s or 500ms, got "2"`,
		"--sessions --session-turns uniform:min=3": `--session-turns: uniform: min and max: required`,
		"--session-drain 1m":                       "--session-drain: needs --sessions",
	} {
		code, _, stderr := surge(t, append([]string{"run", "--rate", "1", "--duration", "1s"}, strings.Fields(args)...)...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 with %q", args, code, stderr, want)
		}
	}
	if code, _, stderr := surge(t, "sweep", "--sessions", "--concurrency", "1,2"); code != exitUsage || !strings.Contains(stderr, "--sessions: needs open-loop arrivals") {
		t.Errorf("sweep --sessions: exit %d, stderr %q", code, stderr)
	}
	out = filepath.Join(dir, "virtual")
	if code, stdout, stderr := surge(t, "burst", "--simulate", "--sessions", "--baseline-rps", "1", "--multipliers", "3", "--session-turns", "3", "-q", "-o", out); !ran(code) {
		t.Fatalf("burst --simulate --sessions: exit %d: %s %s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(out, "results.md")); err != nil || !strings.Contains(string(b), "3×: sessions, per turn") {
		t.Fatalf("burst --simulate --sessions: results.md without the per-turn table: %v", err)
	}
}

// ran says whether an exit code is one of a run that ran to a verdict:
// PASS (0), FAIL (1) or INCONCLUSIVE (5). Tests of what a run writes,
// not of its verdict, accept any of them: short test runs often have too
// few requests to decide a P99.
func ran(code int) bool { return code == exitOK || code == exitSLO || code == exitUndecided }

// skipVirtualUnderRace skips t under -race only (racedetect.Enabled). It is for
// a test whose commands all run in virtual time (--simulate) or only read
// folders (report, compare) and that costs 3 s or more of CPU under -race,
// 3–8 times its time without. internal/virtual runs without goroutines,
// sockets or a clock, so such a test repeats single-goroutine code the
// race detector has nothing to check in; cheaper --simulate tests of the
// same commands still run under -race (burst, capacity, sweep, soak,
// --vary, compare, report), and so do the experiments' own packages.
// Without -race the test runs in full.
func skipVirtualUnderRace(t *testing.T) {
	t.Helper()
	if racedetect.Enabled {
		t.Skip("virtual time only (--simulate: no goroutines): skipped under -race, runs in full without it")
	}
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Must show (issue 25): a burst against a dead port stops at its first
// requests with exit 3 and the cause in one line, instead of sending
// every phase (about 40 minutes at the defaults); --no-early-stop sends
// the whole plan anyway.
func TestDeadPortStopsEarly(t *testing.T) {
	target := "http://" + deadPort(t) + "/v1"
	dir := filepath.Join(t.TempDir(), "dead")
	code, out, errOut := surge(t, "burst", "--target", target, "--model", "m", "--baseline-rps", "4", "-q", "-o", dir)
	if code != exitTarget {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitTarget, out, errOut)
	}
	for _, want := range []string{"exit 3: the target is unusable: the first ", "requests all failed: target unreachable (connection refused)",
		"burst-5x and later: not started", "2×  burst UNUSABLE", "2×  unusable: "} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if n := len(readRecords(t, filepath.Join(dir, "burst-2x", "requests.jsonl"))); n > 60 {
		t.Errorf("%d requests sent to a dead port before the stop, want about %d", n, judge.UnusableFirst)
	}
	run := filepath.Join(t.TempDir(), "run")
	code, out, _ = surge(t, "run", "--target", target, "--model", "m", "--rate", "5", "--duration", "8s", "--no-early-stop", "-q", "-o", run)
	if n := len(readRecords(t, filepath.Join(run, "requests.jsonl"))); code != exitTarget || n < 30 {
		t.Errorf("--no-early-stop: exit %d, %d requests; want 3 after the whole plan (~40)\n%s", code, n, out)
	}
}
