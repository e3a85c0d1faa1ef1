package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestK8sJob(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "burst.yaml")
	os.WriteFile(exp, []byte("baseline_rps: 20\nmultipliers: [2, 5]\n"), 0o644)
	out := filepath.Join(dir, "k8s")
	code, stdout, stderr := surge(t, "k8s", "job", "-f", exp, "--workers", "3", "--namespace", "llm", "--api-key-secret", "vllm-key", "-o", out, "--", "--target", "http://vllm.llm.svc:8000/v1")
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	for _, f := range []string{"00-experiment.yaml", "10-results.yaml", "20-coordinator.yaml", "30-workers.yaml", "later/50-fetch.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{"kubectl -n llm apply -f " + out, "kubectl -n llm cp surge-fetch:/results/surge ./surge-results", "surge report ./surge-results", "create secret generic vllm-key"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("steps lack %q:\n%s", want, stdout)
		}
	}
	// A second write into the same folder is refused without --force.
	if code, _, stderr := surge(t, "k8s", "job", "-f", exp, "--workers", "3", "-o", out); code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("rewrite: code %d %s", code, stderr)
	}
	bad := []struct {
		args []string
		msg  string
	}{
		{[]string{"--workers", "0", "-f", exp}, "--workers: must be ≥ 1"},
		{[]string{"--workers", "2"}, "--file: the experiment file is required"},
		{[]string{"--workers", "2", "-f", exp, "--command", "soak"}, "--command:"},
		{[]string{"--workers", "2", "-f", exp, "--static", "--start-at", "tomorrow"}, "--start-at:"},
	}
	for _, b := range bad {
		args := append([]string{"k8s", "job", "-o", filepath.Join(dir, "bad")}, b.args...)
		if code, _, stderr := surge(t, args...); code != exitUsage || !strings.Contains(stderr, b.msg) {
			t.Errorf("%v: code %d, stderr %q; want 2 with %q", b.args, code, stderr, b.msg)
		}
	}
}

// TestK8sJobChecksTheFile: REVIEW15 #15. The experiment file is parsed by
// the command's own parser before any manifest is written: an unknown
// field, or a key of another command, is refused with the message surge
// COMMAND -f gives; so is a typo in the flags after --, and a --start-at
// in the past.
func TestK8sJobChecksTheFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	burst := write("burst.yaml", "baseline_rps: 20\nmultipliers: [2, 5]\n")
	bogus := write("bogus.yaml", "baseline_rps: 20\nbogus_key: 1\n")
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"-f", burst, "--command", "run"}, `burst.yaml:2: unknown field "multipliers"`},
		{[]string{"-f", bogus}, `bogus.yaml:2: unknown field "bogus_key"`},
		{[]string{"-f", burst, "--", "--taget", "http://x"}, "--taget"},
		{[]string{"-f", burst, "--static", "--start-at", "2020-01-01T00:00:00Z"}, "--start-at: 2020-01-01T00:00:00Z is in the past"},
	}
	for i, tc := range cases {
		out := filepath.Join(dir, "k8s"+strconv.Itoa(i))
		args := append([]string{"k8s", "job", "--workers", "2", "-o", out}, tc.args...)
		code, _, stderr := surge(t, args...)
		if code != exitUsage || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: code %d, stderr %q; want 2 with %q", tc.args, code, stderr, tc.msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: manifests written in spite of the error", tc.args)
		}
	}
	// The same file is fine for the command it was written for.
	if code, _, stderr := surge(t, "k8s", "job", "--workers", "2", "-f", burst, "-o", filepath.Join(dir, "ok"), "--", "--target", "http://vllm.llm.svc:8000/v1"); code != 0 {
		t.Errorf("good file: code %d %s", code, stderr)
	}
}

// TestK8sJobExternal: REVIEW15 #16. The printed coordinator command names
// the file given to -f (or none without -f, never a file the user does
// not have), the step says the coordinator must reach the target and the
// metrics URL, and one manifest is "1 manifest file".
func TestK8sJobExternal(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "my burst.yaml")
	os.WriteFile(exp, []byte("baseline_rps: 20\nmultipliers: [2, 5]\n"), 0o644)
	code, stdout, stderr := surge(t, "k8s", "job", "--workers", "4", "--coordinator-listen", "203.0.113.7:7070", "-f", exp, "-o", filepath.Join(dir, "a"))
	if code != 0 {
		t.Fatalf("code %d %s", code, stderr)
	}
	for _, want := range []string{"surge burst --file '" + exp + "' --workers 4 --coordinator-listen :7070", "Wrote 1 manifest file to", "reach the target", "--metrics-url"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = surge(t, "k8s", "job", "--workers", "4", "--coordinator-listen", "203.0.113.7:7070", "-o", filepath.Join(dir, "b"), "--", "--baseline-rps", "20")
	if code != 0 {
		t.Fatalf("code %d %s", code, stderr)
	}
	if strings.Contains(stdout, "experiment.yaml") || !strings.Contains(stdout, "surge burst --workers 4 --coordinator-listen :7070 --out surge --baseline-rps 20") {
		t.Errorf("without -f the command must not name a file:\n%s", stdout)
	}
}
