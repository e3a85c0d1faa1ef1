package main

import (
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
