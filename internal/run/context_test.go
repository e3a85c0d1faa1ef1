package run

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestContextWarnedBeforeTheRun: against a model whose context is too
// short for some of the default profile's requests, the run says before
// it starts how many will not fit — and exactly those are the ones the
// simulator refuses with 400. With the default context, nothing is said.
func TestContextWarnedBeforeTheRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		context int
		warned  bool
	}{{"short", 600, true}, {"default", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := quietOptions()
				if tc.context > 0 {
					o.Sim.MaxModelLen = tc.context
				}
				var console strings.Builder
				env := bubbleEnv(t, o, &console)
				if env.Calibration.ContextTokens != o.Sim.MaxModelLen {
					t.Fatalf("calibration read a context of %d tokens, the simulator has %d", env.Calibration.ContextTokens, o.Sim.MaxModelLen)
				}
				res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(5, 10*time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				refused, n := 0, 0
				for _, r := range recordsOf(t, res) {
					n++
					if r.Status == 400 {
						refused++
					}
				}
				var over, total int
				_, scanErr := fmt.Sscanf(console.String()[max(strings.Index(console.String(), "WARNING: "), 0):], "WARNING: %d of %d requests ask for more than the model's context", &over, &total)
				switch {
				case !tc.warned && strings.Contains(console.String(), "model's context"):
					t.Errorf("warned with a context that fits every request: %q", console.String())
				case !tc.warned && refused > 0:
					t.Errorf("%d requests refused with the default context", refused)
				case tc.warned && scanErr != nil:
					t.Fatalf("no context warning on the console: %q", console.String())
				case tc.warned && (over != refused || total != n || refused == 0):
					t.Errorf("warned %d of %d; the simulator refused %d of %d", over, total, refused, n)
				}
			})
		})
	}
}
