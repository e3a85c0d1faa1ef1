package main

import (
	"net"
	"os"
	"strings"
	"testing"
)

// An OTLP address already in use: every experiment exits 2 naming
// --otlp-listen before any folder is created.
func TestOTLPListenInUse(t *testing.T) {
	t.Chdir(t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, cmd := range []string{"run", "burst", "sweep", "capacity", "soak"} {
		t.Run(cmd, func(t *testing.T) {
			code, _, stderr := surge(t, cmd, "--otlp-listen", ln.Addr().String(), "-q")
			want := "--otlp-listen: cannot listen on " + ln.Addr().String() + ": address already in use"
			if code != exitUsage || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
			}
			if _, err := os.Stat("out"); err == nil {
				t.Errorf("out/ was created")
			}
		})
	}
	code, _, stderr := surge(t, "run", "--otlp-listen", "4318", "-q")
	if code != exitUsage || !strings.Contains(stderr, "--otlp-listen: must be host:port") {
		t.Errorf("bad address: exit %d, %q", code, stderr)
	}
}
