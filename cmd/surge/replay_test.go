package main

import (
	"strings"
	"testing"
)

// A bad --speed is reported as --speed, not as the --duration derived
// from it.
func TestReplayBadSpeedNamesSpeed(t *testing.T) {
	trace := writeFile(t, "t.csv", "offset_s\n0\n0.130\n")
	code, _, stderr := surge(t, "run", "--trace", trace, "--speed", "-2", "--dry-run")
	if code != exitUsage || !strings.Contains(stderr, "--speed: must be > 0") || strings.Contains(stderr, "--duration") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming --speed", code, stderr)
	}
}
