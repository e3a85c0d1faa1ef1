package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/surge-bench/surge/internal/experiment/vary"
	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/sim"
)

// varyUsage is the help of burst's --vary.
const varyUsage = "with --simulate: run the whole experiment once per value of one simulator setting, named as its flag, into OUT/<knob>-<value>/, and compare them (OUT/compare.md, .json, .html with a chart of goodput and recovery per value), e.g. --vary max-waiting=0,20,50 or --vary replicas=1,2,4; the value given wins over the setting's own flag"

// notKnobs are the simulator flags --vary does not take: the seed is the
// experiment's (--seed), quirks live in the HTTP facade virtual time does
// not use, and virtual time has no /tokenize endpoint.
var notKnobs = []string{"seed", "quirk", "tokenize"}

// simKnobs binds the simulator's flags to c exactly as every command
// binds them (flags.simulator) and returns the flag set and the names
// --vary takes.
func simKnobs(c *sim.Config) (*pflag.FlagSet, []string) {
	fs := pflag.NewFlagSet("vary", pflag.ContinueOnError)
	f := newFlags(fs)
	f.simulator("sim.", c)
	var names []string
	for key := range f.sim {
		if n := f.byKey[key]; !slices.Contains(notKnobs, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return fs, names
}

// parseVary turns --vary KNOB=v1,v2,… into the variants of base: each a
// copy with the knob set from its value by the knob's own flag, and
// checked as the simulator checks its settings. Errors are usage errors
// naming the knob and value.
func parseVary(spec string, base sim.Config) (*vary.Config, error) {
	knob, list, ok := strings.Cut(spec, "=")
	knob = strings.TrimPrefix(strings.TrimSpace(knob), "--")
	_, names := simKnobs(&sim.Config{})
	if !slices.Contains(names, knob) {
		return nil, usageErr("--vary: unknown knob %q; the simulator settings it can vary: %s", knob, strings.Join(names, ", "))
	}
	var values []string
	for v := range strings.SplitSeq(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			values = append(values, v)
		}
	}
	if !ok || len(values) < 2 {
		return nil, usageErr("--vary %s: give two or more values, e.g. --vary %s=V1,V2", knob, knob)
	}
	baseOK := base.Validate() == nil // otherwise the base's own error is told by its flag
	c := &vary.Config{Knob: knob}
	for _, v := range values {
		if slices.ContainsFunc(c.Variants, func(x vary.Variant) bool { return x.Value == v }) {
			return nil, usageErr("--vary %s: the value %s is given twice", knob, v)
		}
		sc := base
		fs, _ := simKnobs(&sc)
		if err := fs.Set(knob, v); err != nil {
			return nil, usageErr("--vary %s=%s: %v", knob, v, err)
		}
		if baseOK {
			if err := sc.Validate(); err != nil {
				return nil, varyFieldError(knob, v, err)
			}
		}
		c.Variants = append(c.Variants, vary.Variant{Value: v, Sim: sc})
	}
	return c, nil
}

// varyFieldError tells the simulator's field errors of one value: the
// knob's own as "--vary max-waiting=-1: must be ≥ 0", another setting's
// by its flag.
func varyFieldError(knob, value string, err error) error {
	es, ok := field.As(err)
	if !ok {
		return usageErr("--vary %s=%s: %v", knob, value, err)
	}
	var lines []string
	for _, e := range es {
		name := strings.ReplaceAll(e.Field, "_", "-")
		if name == knob {
			lines = append(lines, fmt.Sprintf("--vary %s=%s: %s", knob, value, e.Message))
			continue
		}
		lines = append(lines, fmt.Sprintf("--vary %s=%s: --%s: %s", knob, value, name, e.Message))
	}
	return &exitError{exitUsage, errors.New(strings.Join(lines, "\n"))}
}
