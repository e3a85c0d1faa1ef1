package experiment

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
)

func metaValue(kv []report.KV, key string) string {
	for _, e := range kv {
		if e.Key == key {
			return e.Value
		}
	}
	return ""
}

// The report header names the cache state when the workload shares
// prefixes on purpose, and the simulator's prefix cache when it is on;
// the default (unique prompts) stays in the manifest only.
func TestHTMLMetaCacheState(t *testing.T) {
	env := &run.Env{Opts: run.DefaultOptions(), Simulated: true}
	if v := metaValue(HTMLMeta(env), "cache state"); v != "" {
		t.Fatalf("default workload: cache state %q in the header", v)
	}
	env.Opts.SharedPrefix, env.Opts.Sim.PrefixCacheTokens = 2000, 100_000
	kv := HTMLMeta(env)
	if v := metaValue(kv, "cache state"); !strings.HasPrefix(v, "shared prefix of 2000 tokens") {
		t.Fatalf("cache state %q", v)
	}
	if v := metaValue(kv, "simulator prefix cache"); v != "100000 tokens per replica, blocks of 16" {
		t.Fatalf("simulator prefix cache %q", v)
	}
}
