package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
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
// end), exits 4 with a message naming the folder, every line of
// requests.jsonl parses, and the manifest says the run is partial. The
// disk is a 64 KiB tmpfs in a mount namespace of its own.
func TestFullDiskStopsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("no mount namespace here (%v): run as root", err)
	}
	mnt, keep := t.TempDir(), t.TempDir()
	// A target that refuses connections: records are written as fast as
	// they are scheduled, so 64 KiB fill within seconds. The tmpfs lives
	// in the child's namespace: the folder is copied out before it ends.
	script := `mount -t tmpfs -o size=64k tmpfs "$1" && cd "$1" || exit 99
keep=$2; shift 2
"$@"; rc=$?
cp -r r "$keep/" ; exit $rc`
	cmd := exec.Command("unshare", "-m", "sh", "-c", script, "sh", mnt, keep, os.Args[0],
		"run", "-q", "--target", "http://127.0.0.1:1/v1", "--rate", "100", "--duration", "60s", "--no-early-stop", "-o", "r")
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
	if took > 20*time.Second {
		t.Errorf("the run went on for %s after the disk filled (planned 60 s)", took)
	}
	for _, want := range []string{"run folder r", "no space left on device", "marked partial"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: %s", want, stderr.String())
		}
	}
	dir := filepath.Join(keep, "r")
	n := checkRecords(t, filepath.Join(dir, "requests.jsonl"))
	if n == 0 {
		t.Fatal("no record was kept")
	}
	var last int64
	record.ReadFile(filepath.Join(dir, "requests.jsonl"), func(r *record.Record) error {
		last = max(last, r.ScheduledNs)
		return nil
	})
	if time.Duration(last) > 10*time.Second {
		t.Errorf("records scheduled until %s: the run did not stop when the disk filled", time.Duration(last))
	}
	m, err := record.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil || !m.Partial || m.PartialWhy == "" {
		t.Fatalf("manifest: %v, partial %v %q", err, m != nil && m.Partial, m.PartialWhy)
	}
	t.Logf("stopped after %s with %d whole records; manifest: %s", took.Round(time.Millisecond), n, m.PartialWhy)
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
