package main

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/racedetect"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/schematest"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/simhttp"
)

// TestMain lets a test run surge itself in a child process (under a small
// tmpfs, for instance): with SURGE_TEST_CLI set, the test binary is surge.
func TestMain(m *testing.M) {
	if os.Getenv("SURGE_TEST_CLI") == "1" {
		os.Exit(signalled()) // as main: Ctrl-C and SIGTERM end the context
	}
	os.Exit(m.Run())
}

// A folder held by another run is refused with exit 2, naming the folder
// and the other run; nothing in it is touched.
func TestFolderInUseExits2(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "busy")
	other, err := rundir.Create(dir, rundir.Options{Owner: "surge burst"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	code, _, stderr := surge(t, "run", "-q", "--duration", "1s", "-o", dir)
	if code != exitUsage {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	for _, want := range []string{dir, "in use by another run", "surge burst", "pid "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the held folder was written to: %v", entries)
	}
}

// Two runs started together on one folder: one runs, the other exits 2 —
// never two runs interleaving their records.
func TestTwoRunsOnOneFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	dir := filepath.Join(t.TempDir(), "same")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = surge(t, "run", "-q", "--rate", "5", "--duration", "2s", "-o", dir)
		}()
	}
	wg.Wait()
	refused := 0
	for i, c := range codes {
		switch c {
		case exitUsage:
			refused++
			if !strings.Contains(errs[i], dir) {
				t.Errorf("the refusal does not name the folder: %q", errs[i])
			}
		case exitOK, exitSLO, exitUndecided:
		default:
			t.Errorf("exit %d: %s", c, errs[i])
		}
	}
	if refused != 1 {
		t.Fatalf("exit codes %v: exactly one run must be refused", codes)
	}
	checkRecords(t, filepath.Join(dir, "requests.jsonl"))
	// The folder now holds a run: a third one is refused, --force replaces it.
	if code, _, stderr := surge(t, "run", "-q", "--duration", "1s", "-o", dir); code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Fatalf("a run over a finished one: exit %d %q", code, stderr)
	}
	if code, _, stderr := surge(t, "run", "-q", "--duration", "1s", "--force", "-o", dir); !ran(code) {
		t.Fatalf("--force: exit %d %q", code, stderr)
	}
}

// Two runs started in the same second without --out get different folders.
func TestDefaultNamesNeverCollide(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	t.Chdir(t.TempDir())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, stderr := surge(t, "run", "-q", "--rate", "2", "--duration", "1s"); !ran(code) {
				t.Errorf("exit %d: %s", code, stderr)
			}
		}()
	}
	wg.Wait()
	entries, err := os.ReadDir("out")
	if err != nil || len(entries) != 2 {
		t.Fatalf("out/ holds %v (%v), want two run folders", entries, err)
	}
	if a, b := entries[0].Name(), entries[1].Name(); a == b || a[:len(a)-5] != b[:len(b)-5] {
		t.Logf("names %s, %s", a, b) // same second or not, they differ
	}
	for _, e := range entries {
		checkRecords(t, filepath.Join("out", e.Name(), "requests.jsonl"))
	}
}

// A configuration error is found before anything is created: no folder, no
// file, exit 2 with the flag named.
func TestConfigErrorCreatesNoFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	os.WriteFile(empty, nil, 0o644)
	cases := map[string]struct {
		args []string
		want string
	}{
		"ca cert":          {[]string{"run", "--target", "https://127.0.0.1:1/v1", "--ca-cert", "/nonexistent.pem"}, "--ca-cert: cannot read /nonexistent.pem"},
		"metrics url":      {[]string{"run", "--metrics-url", "localhost:8000/metrics"}, "--metrics-url: must be an http:// or https:// URL"},
		"metrics preset":   {[]string{"run", "--metrics-url", "http://127.0.0.1:1/metrics", "--metrics-preset", "tensorrt"}, `--metrics-preset: unknown preset "tensorrt"`},
		"prometheus addr":  {[]string{"burst", "--prometheus-addr", "9099"}, "--prometheus-addr: must be host:port"},
		"metrics out":      {[]string{"run", "--metrics-out", "influx=http://127.0.0.1:1"}, `--metrics-out: unknown kind "influx"`},
		"web address":      {[]string{"run", "--web", "localhost"}, `--web: want host:port or a port, got "localhost"`},
		"web port in use":  {[]string{"burst", "--web", busy.Addr().String()}, "--web: cannot listen on " + busy.Addr().String()},
		"empty file":       {[]string{"run", "-f", empty}, "the file is empty"},
		"sweep levels":     {[]string{"sweep", "--rates", "3,1"}, "--rates: levels must increase"},
		"capacity no slo":  {[]string{"capacity", "--slo-ttft-p95", "0", "--slo-e2e-p99", "0", "--slo-goodput", "0"}, "needs at least one SLO clause"},
		"soak with target": {[]string{"soak", "--target", "http://127.0.0.1:1/v1"}, "--rate: required with --target"},
		"burst too fast":   {[]string{"burst", "--simulate", "--baseline-rps", "200000", "--multipliers", "10"}, "--multipliers: 10 × the baseline 200000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, out := range []string{"", filepath.Join(t.TempDir(), "named")} {
				args := append([]string{}, tc.args...)
				if out != "" {
					args = append(args, "-o", out)
				}
				code, _, stderr := surge(t, append(args, "-q")...)
				if code != exitUsage || !strings.Contains(stderr, tc.want) {
					t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
				}
				if out != "" {
					if _, err := os.Stat(out); err == nil {
						t.Errorf("%s was created", out)
					}
				}
				if _, err := os.Stat("out"); err == nil {
					t.Errorf("out/ was created")
				}
			}
		})
	}
}

// A full disk mid-run: the run stops within seconds (not at its planned
// end), exits 4 with a message naming the folder, and the space it set
// aside at the start (rundir.Reserve) holds the records of its requests in
// flight and its results: every line of requests.jsonl parses, the
// manifest says PARTIAL with cause disk_full, every arrival of the plan is
// accounted for, and a re-render says so again. The disk is a 10 MiB
// tmpfs (8 MiB of it the reserve) in a mount namespace of its own.
func TestFullDiskStopsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("no mount namespace here (%v): run as root", err)
	}
	mnt, keep := t.TempDir(), t.TempDir()
	// A target that refuses connections: records are written as fast as
	// they are scheduled, so the 2 MiB left fill within seconds. The tmpfs
	// lives in the child's namespace: the folder is copied out before it
	// ends.
	script := `mount -t tmpfs -o size=10m tmpfs "$1" && cd "$1" || exit 99
keep=$2; shift 2
"$@"; rc=$?
cp -r r "$keep/" ; exit $rc`
	cmd := exec.Command("unshare", "-m", "sh", "-c", script, "sh", mnt, keep, os.Args[0],
		"run", "-q", "--target", "http://127.0.0.1:1/v1", "--rate", "1000", "--duration", "60s", "--no-early-stop", "--prompt-calibration", "off", "-o", "r")
	cmd.Env = append(os.Environ(), "SURGE_TEST_CLI=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != exitInternal {
		t.Fatalf("exit %d, want 4\n%s", code, stderr.String())
	}
	if took > 30*time.Second {
		t.Errorf("the run went on for %s after the disk filled (planned 60 s)", took)
	}
	for _, want := range []string{"run folder r", "no space left on device"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: %s", want, stderr.String())
		}
	}
	dir := filepath.Join(keep, "r")
	n := checkRecords(t, filepath.Join(dir, "requests.jsonl"))
	if n == 0 {
		t.Fatal("no record was kept")
	}
	m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil || !m.Partial || m.PartialCause != record.PartialDiskFull || m.Arrivals == nil {
		t.Fatalf("manifest: %v, partial %v %q %q, arrivals %v", err, m != nil && m.Partial, m.PartialCause, m.PartialWhy, m.Arrivals)
	}
	a := m.Arrivals
	plan := planned(t, dir, time.Minute)
	if a.Planned != plan || a.Recorded+a.Unrecorded+a.Unsent != a.Planned || a.Recorded != int64(n) {
		t.Errorf("arrivals %+v: the plan has %d, the file %d records", *a, plan, n)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Errorf("no summary.json: the reserve did not hold the results: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ReserveFile)); err == nil {
		t.Error("the reserve is still there")
	}
	schematest.ValidateDir(t, dir, time.Time{})
	code, out, errOut := surge(t, "report", dir)
	if code != exitOK || !strings.Contains(out, "(PARTIAL: the disk filled up (") {
		t.Errorf("re-render: exit %d, %s\n%s", code, errOut, out)
	}
	t.Logf("stopped after %s: %s; %s", took.Round(time.Millisecond), m.PartialWhy, run.ArrivalsLine(a))
}

// planned is the number of arrivals of the one-phase plan of the run in
// dir had it run for full: its manifest holds the plan as cut by the stop.
func planned(t *testing.T, dir string, full time.Duration) int64 {
	t.Helper()
	m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, _, _, err := run.LoadManifestConfig(m)
	if err != nil || len(plan.Phases) != 1 {
		t.Fatalf("plan %+v: %v", plan, err)
	}
	plan.Phases[0].Duration = full
	arr, err := schedule.Build(plan, m.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(arr))
}

// checkRecords fails t unless every line of path is a whole record.
func checkRecords(t *testing.T, path string) int {
	t.Helper()
	n := 0
	if err := record.ReadFile(path, func(*record.Record) error { n++; return nil }); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// A run killed with SIGKILL at any moment leaves a folder that `surge
// report` re-renders as PARTIAL (killed), with the offered load taken from
// the plan and every arrival of the plan accounted for: recorded + sent
// but not recorded + never sent = the plan's arrivals. Twenty runs (five
// under -race) against the simulator served on loopback, each killed at a
// random moment once its manifest is written (before it, there is no run
// folder to report).
func TestKilledRunsAccountForThePlan(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	s, err := simhttp.New(sim.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 26))
	line := regexp.MustCompile(`arrivals of the plan: (\d+) = (\d+) recorded \+ (\d+) sent but not recorded \+ (\d+) never sent`)
	// Under -race, 5 kills. The run is a child process whose race
	// reports this test never sees (its stderr is discarded, its exit
	// status ignored); what runs in this process is the simulator's
	// server losing its client mid-stream and surge report, the same
	// code at every kill.
	kills := 20
	if racedetect.Enabled {
		kills = 5
	}
	for i := range kills {
		dir := filepath.Join(t.TempDir(), "k")
		cmd := exec.Command(os.Args[0], "run", "-q", "--target", srv.URL+"/v1", "--rate", "60", "--duration", "3s",
			"--prompt-tokens", "64", "--output-tokens", "32", "--prompt-calibration", "off", "-o", dir)
		cmd.Env = append(os.Environ(), "SURGE_TEST_CLI=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for { // the manifest is written before the first arrival
			if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
				break
			}
			if cmd.ProcessState != nil {
				t.Fatal("the run ended before it wrote its manifest")
			}
			time.Sleep(5 * time.Millisecond)
		}
		after := time.Duration(rng.Int64N(int64(3 * time.Second)))
		time.Sleep(after)
		cmd.Process.Kill()
		cmd.Wait()
		m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut := surge(t, "report", dir)
		if code != exitOK {
			t.Fatalf("kill %d at +%s: report exits %d: %s", i, after, code, errOut)
		}
		if m.Arrivals != nil { // it finished before the kill: nothing to account
			t.Logf("kill %d at +%s: the run had finished", i, after)
			continue
		}
		plan, _, _, err := run.LoadManifestConfig(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := schedule.Build(plan, m.Seed)
		if err != nil {
			t.Fatal(err)
		}
		g := line.FindStringSubmatch(out)
		if g == nil || !strings.Contains(out, "PARTIAL: killed") {
			t.Fatalf("kill %d at +%s: no PARTIAL: killed and no accounting line:\n%s", i, after, out)
		}
		n := make([]int, 5)
		for j := 1; j <= 4; j++ {
			n[j], _ = strconv.Atoi(g[j])
		}
		if n[1] != len(want) || n[2]+n[3]+n[4] != n[1] {
			t.Errorf("kill %d at +%s: %s; the plan has %d arrivals", i, after, g[0], len(want))
		}
		// Offered is the plan's: the arrivals due before the end, over the time.
		var recorded int
		record.ReadFile(filepath.Join(dir, "requests.jsonl"), func(*record.Record) error { recorded++; return nil })
		if recorded > n[2] {
			t.Errorf("kill %d: %d records in the file, the report counts %d", i, recorded, n[2])
		}
		t.Logf("kill %d at +%s: %s", i, after.Round(time.Millisecond), g[0])
	}
}
