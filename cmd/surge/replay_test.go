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

// The README's two-row sample at --speed 2 is offered at twice its own
// rate (1 gap of 130 ms: 7.69/s, so 15.38/s), not 2 arrivals over 65 ms.
func TestReplayShortTraceOfferedRate(t *testing.T) {
	trace := writeFile(t, "t.csv", "offset_s,prompt_tokens,output_tokens\n0.000,512,128\n0.130,2048,64\n")
	code, stdout, stderr := surge(t, "run", "--trace", trace, "--speed", "2", "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "1 phase(s), 130ms in all") || !strings.Contains(stdout, " 15.38 ") {
		t.Errorf("dry run:\n%s\nwant 130ms at 15.38 req/s", stdout)
	}
	// A window of a longer trace lasts the window ÷ speed.
	long := writeFile(t, "long.csv", "offset_s\n0\n1\n2\n4.32\n5\n6\n")
	code, stdout, stderr = surge(t, "run", "--trace", long, "--trace-window", "5s", "--speed", "2", "--dry-run")
	if code != exitOK || !strings.Contains(stdout, "1 phase(s), 2.5s in all") {
		t.Errorf("exit %d, dry run:\n%s%s\nwant 2.5s", code, stdout, stderr)
	}
}

// The dry-run table and its notes show durations rounded for people, and
// each note once as a note.
func TestDryRunDurationsRounded(t *testing.T) {
	trace := writeFile(t, "n.csv", "offset_s\n0\n1.2\n3.3194100005\n13.31941\n")
	for _, args := range [][]string{
		{"run", "--trace", trace, "--speed", "3", "--dry-run"},
		{"run", "--trace", trace, "--speed", "3", "--duration", "2.1s", "--dry-run"},
		{"run", "--trace", trace, "--speed", "3", "--trace-offset", "1s", "--dry-run"},
	} {
		code, stdout, stderr := surge(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if strings.Contains(stdout, "note: note:") || strings.Contains(stdout, "note: WARNING") {
			t.Errorf("%v: a doubled note prefix:\n%s", args, stdout)
		}
		for _, noise := range []string{"5.919737778s", "4.106470000", "0001", "9999"} {
			if strings.Contains(stdout, noise) {
				t.Errorf("%v: %s in:\n%s", args, noise, stdout)
			}
		}
	}
}
