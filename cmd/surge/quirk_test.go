package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/sim"
)

// --quirk repeats, is bound to the YAML key quirks (sim.quirks inside an
// experiment's file), lists every name in --help, and an unknown name
// or --simulate with quirks is a usage error naming the flag.
func TestQuirkFlag(t *testing.T) {
	for _, cmd := range []string{"sim", "run"} {
		code, out, _ := surge(t, cmd, "--help")
		if code != exitOK || !strings.Contains(out, "--quirk stringArray") {
			t.Fatalf("%s --help: exit %d, no --quirk in\n%s", cmd, code, out)
		}
		for _, q := range sim.QuirkNames() {
			if !strings.Contains(out, q) {
				t.Errorf("%s --help does not name quirk %s", cmd, q)
			}
		}
	}
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "exp.yaml")
	os.WriteFile(yamlFile, []byte("rate: 1\nduration: 1s\nsim:\n  quirks: [no-usage, wobbly]\n"), 0o644)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown in surge sim":   {[]string{"sim", "--addr", "127.0.0.1:0", "--quirk", "no-usage", "--quirk", "wobbly"}, `surge: --quirk (sim: quirks): unknown quirk "wobbly"; known: buffered-stream, `},
		"unknown in surge run":   {[]string{"run", "--quirk", "wobbly", "--rate", "1", "--duration", "1s"}, `surge: --quirk (sim: quirks): unknown quirk "wobbly"`},
		"unknown from the file":  {[]string{"run", "-f", yamlFile}, yamlFile + `:4: sim.quirks: unknown quirk "wobbly"`},
		"quirks in virtual time": {[]string{"run", "--simulate", "--quirk", "no-usage", "--rate", "1", "--duration", "1s"}, "surge: --quirk (sim: quirks): quirks live in the simulator's HTTP facade, which virtual time (--simulate) does not use"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := surge(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
