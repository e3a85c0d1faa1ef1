package experiment

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every experiment's configuration reaches the manifest without its
// options (recorded separately, redacted), also inside maps.
func TestRedactedExtraDropsOptions(t *testing.T) {
	o := DefaultOptions()
	o.Headers = []string{"X-Key: header-canary-42"}
	o.Target = "https://user:pw-canary@h/v1"
	run, burst, capc, sweep, soak := DefaultRunConfig(), DefaultBurstConfig(), DefaultCapacityConfig(), DefaultSweepConfig(), DefaultSoakConfig()
	run.Options, burst.Options, capc.Options, sweep.Options, soak.Options = o, o, o, o, o
	for name, v := range map[string]any{
		"run": &run, "burst in a map": map[string]any{"multiplier": 5.0, "burst": &burst},
		"capacity": &capc, "sweep": map[string]any{"level": 1, "sweep": &sweep}, "soak": &soak,
	} {
		b, err := json.Marshal(redactedExtra(v))
		if err != nil {
			t.Fatal(err)
		}
		for _, canary := range []string{"header-canary-42", "pw-canary"} {
			if strings.Contains(string(b), canary) {
				t.Errorf("%s: %q recorded: %s", name, canary, b)
			}
		}
	}
	// The caller's configuration is left alone.
	if run.Target != o.Target || capc.Headers[0] != o.Headers[0] {
		t.Fatal("redactedExtra modified its argument")
	}
}
