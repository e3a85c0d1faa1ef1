package experiment

import (
	"fmt"
	"strconv"
	"strings"
)

// baselineFlag is --baseline-rps: a rate in requests/s, or "auto".
type baselineFlag struct{ c *BurstConfig }

// String returns the rate, or "auto".
func (f baselineFlag) String() string {
	if f.c.BaselineAuto {
		return "auto"
	}
	return strconv.FormatFloat(f.c.BaselineRPS, 'g', -1, 64)
}

// Set parses a rate or "auto".
func (f baselineFlag) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		f.c.BaselineAuto, f.c.BaselineRPS = true, 0
		return nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("want requests/s or auto, got %q", s)
	}
	f.c.BaselineAuto, f.c.BaselineRPS = false, v
	return nil
}

// Type names the value in --help.
func (f baselineFlag) Type() string { return "rps|auto" }
