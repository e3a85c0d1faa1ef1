// Package exptest holds what the experiments' tests share: a fresh run
// folder, a prepared target, the options of a fast live simulator, and
// field errors rendered the way the command line shows them.
package exptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/memnet"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

// Dir claims a fresh run folder under t.TempDir(), released at cleanup.
func Dir(t testing.TB) *rundir.Dir {
	t.Helper()
	d, err := rundir.Create(filepath.Join(t.TempDir(), "out"), rundir.Options{Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Env prepares the target of o (virtual time when virtual), closed at
// cleanup; the live view, if any, draws into the returned builder.
func Env(t testing.TB, o run.Options, virtual bool) (*run.Env, *SyncBuilder) {
	t.Helper()
	out := &SyncBuilder{}
	env, err := run.Prepare(context.Background(), o, virtual, out, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env, out
}

// LiveOptions are options for real-time tests against the in-process
// simulator: quiet, short answers (about 16 tokens) and a batch of 4, so
// that it saturates at a few requests per second.
func LiveOptions() run.Options {
	o := run.DefaultOptions()
	o.Quiet = true
	o.Timeout = 10 * time.Second
	o.Sim.OutputMean = 16
	o.Sim.MaxNumSeqs = 4
	o.ScrapeInterval = 100 * time.Millisecond
	return o
}

// FlagText renders field errors the way the command line names their
// flags (the YAML key in kebab case), to compare with what a user sees.
func FlagText(err error) string {
	es, ok := field.As(err)
	if !ok {
		return fmt.Sprint(err)
	}
	var lines []string
	for _, e := range es {
		lines = append(lines, "--"+strings.ReplaceAll(e.Field, "_", "-")+": "+e.Message)
	}
	return strings.Join(lines, "\n")
}

// Files fails t for every name that is missing or empty in dir.
func Files(t testing.TB, dir string, names ...string) {
	t.Helper()
	for _, f := range names {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
}

// Open opens path for the test, closed at cleanup.
func Open(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// BubbleEnv prepares the in-process simulator on an in-memory network, for
// a test running inside a testing/synctest bubble (real sockets are not
// allowed there); it is closed at cleanup.
func BubbleEnv(t testing.TB, o run.Options) (*run.Env, *SyncBuilder) {
	t.Helper()
	out := &SyncBuilder{}
	env, err := run.PrepareWith(context.Background(), o, false, run.Setup{View: out, Version: "test", Network: &memnet.Network{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env, out
}

// ConfigCase is one bad configuration: a change to the defaults and a
// text the error must contain, with its field named as a flag.
type ConfigCase[C any] struct {
	Mutate func(*C)
	Want   string
}

// ConfigErrors checks each case: fresh() gives the defaults, the case
// changes them, and validate must fail with its text (see FlagText).
func ConfigErrors[C any](t *testing.T, fresh func() C, validate func(*C) error, cases map[string]ConfigCase[C]) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fresh()
			tc.Mutate(&c)
			if got := FlagText(validate(&c)); !strings.Contains(got, tc.Want) {
				t.Fatalf("got %q, want %q", got, tc.Want)
			}
		})
	}
}
