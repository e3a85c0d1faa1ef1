package main

import (
	"os"
	"path/filepath"
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
	for _, want := range []string{"kubectl -n llm apply -f " + out, "kubectl -n llm cp surge-fetch:/results/surge ./surge", "create secret generic vllm-key"} {
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
