package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/sim"
)

// Every simulator setting has a flag, named as the kebab case of its YAML
// key (quirks: the repeatable --quirk), with help and the default as its
// value.
func TestSimulatorFlags(t *testing.T) {
	c := sim.DefaultConfig()
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	newFlags(fs).simulator("", &c)
	for _, name := range simYAMLNames(t) {
		flag := strings.ReplaceAll(name, "_", "-")
		if name == "quirks" {
			flag = "quirk"
		}
		f := fs.Lookup(flag)
		if f == nil {
			t.Errorf("no flag for yaml field %s", name)
			continue
		}
		if f.Usage == "" {
			t.Errorf("flag --%s has no help", f.Name)
		}
	}
	if f := fs.Lookup("step-base"); f.DefValue != "20ms" {
		t.Errorf("--step-base default %q, want 20ms", f.DefValue)
	}
	err := fs.Parse([]string{"--max-num-seqs", "8", "--step-base", "5ms", "--scale-up-hold", "30s",
		"--autoscale", "--fault-500", "0.25", "--seed", "42", "--quirk", "no-usage", "--quirk", "ignore-stop"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxNumSeqs != 8 || c.StepBase != 5*time.Millisecond || c.ScaleUpHold != 30*time.Second ||
		!c.Autoscale || c.Fault500 != 0.25 || c.Seed != 42 || !reflect.DeepEqual(c.Quirks, []string{"no-usage", "ignore-stop"}) {
		t.Fatalf("flags not applied: %+v", c)
	}
}

// An experiment's own --seed is left alone: the simulator's settings do not
// redefine it (its seed follows the experiment's).
func TestSimulatorFlagsLeaveExistingFlags(t *testing.T) {
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	var seed int64
	fs.Int64Var(&seed, "seed", 7, "the command's own seed")
	c := sim.DefaultConfig()
	newFlags(fs).simulator("sim.", &c) // must not panic on the duplicate
	if err := fs.Parse([]string{"--seed", "9"}); err != nil {
		t.Fatal(err)
	}
	if seed != 9 || c.Seed != sim.DefaultConfig().Seed {
		t.Fatalf("seed=%d c.Seed=%d: the existing flag should win", seed, c.Seed)
	}
}

func simYAMLNames(t *testing.T) []string {
	t.Helper()
	var names []string
	ty := reflect.TypeFor[sim.Config]()
	for i := range ty.NumField() {
		tag := ty.Field(i).Tag.Get("yaml")
		if tag == "" {
			t.Fatalf("field %s has no yaml tag", ty.Field(i).Name)
		}
		names = append(names, tag)
	}
	return names
}

// A simulator flag's message names the other settings it refers to by
// their flags, as the user typed them; from a YAML file it keeps the keys
// (review 13).
func TestSimulatorMessagesNameFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"burst", "--simulate", "--min-replicas", "0", "--dry-run"}, "--min-replicas (sim: min_replicas): 0 (scale from zero) needs --autoscale\n"},
		{[]string{"sim", "--min-replicas", "0"}, "--min-replicas (sim: min_replicas): 0 (scale from zero) needs --autoscale\n"},
		{[]string{"burst", "--simulate", "--autoscale", "--min-replicas", "3", "--max-replicas", "2", "--dry-run"},
			"--max-replicas (sim: max_replicas): must be ≥ --min-replicas (3), got 2\n"},
		{[]string{"burst", "--simulate", "--autoscale", "--min-replicas", "0", "--max-replicas", "0", "--dry-run"},
			"--max-replicas (sim: max_replicas): must be ≥ 1 (a replica to scale to, even from zero), got 0\n"},
	}
	for _, tc := range cases {
		code, _, stderr := surge(t, tc.args...)
		if code != exitUsage || !strings.HasSuffix(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	file := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(file, []byte("rate: 1\nduration: 5s\nsim:\n  min_replicas: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := surge(t, "run", "--simulate", "-f", file, "--dry-run"); code != exitUsage ||
		!strings.HasSuffix(stderr, "x.yaml:4: sim.min_replicas: 0 (scale from zero) needs autoscale: true\n") {
		t.Errorf("YAML: exit %d, stderr %q", code, stderr)
	}
}
