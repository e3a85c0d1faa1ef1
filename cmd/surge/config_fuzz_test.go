package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/burst"
)

// An experiment file is the user's YAML: decoding it never panics, into
// the run's and the burst's configuration alike.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"rate: 5\nduration: 20s\n",
		"phases:\n  - name: a\n    duration: 10s\n    rate: 1\n",
		"multipliers: [2, 5]\nbaseline_rps: 4\nsim:\n  max_num_seqs: 8\n",
		"mix: {chat: 0.6, rag: 0.4}\nprofiles: [{name: x, prompt: \"lognormal:median=60,p95=300\", output: 30}]\n",
		"rate: &a 5\nduration: *a\n",
		"- 1\n",
		"{",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "exp.yaml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var rc experiment.RunConfig
		_, _ = decodeYAMLFile(path, &rc)
		var bc burst.Config
		_, _ = decodeYAMLFile(path, &bc)
	})
}
