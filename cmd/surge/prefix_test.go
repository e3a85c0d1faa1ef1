package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

// --shared-prefix and the simulator's prefix cache from the command line and
// from YAML: bad values exit 2 naming the flag or the file, line and key; a
// run from a file records the shared prefix in the manifest and the cached
// tokens in requests.jsonl.
func TestSharedPrefixFlagAndYAML(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	negative := file("neg.yaml", "rate: 1\nduration: 1s\nshared_prefix: -3\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--shared-prefix", "-1", "-q"}, "--shared-prefix: must be 0..1048560 tokens, got -1"},
		{[]string{"run", "-f", negative, "-q"}, negative + ":3: shared_prefix: must be 0..1048560 tokens, got -3"},
		{[]string{"burst", "--simulate", "--prefix-cache-tokens", "8"}, "--prefix-cache-tokens (sim: prefix_cache_tokens): must be 0 (off) or at least --prefix-block-tokens (16), got 8"},
		{[]string{"sim", "--prefix-block-tokens", "-2"}, "--prefix-block-tokens (sim: prefix_block_tokens): must be 1..4096 tokens"},
	} {
		code, _, stderr := surge(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, code, stderr, tc.want)
		}
	}

	good := file("prefix.yaml", "rate: 4\nduration: 2s\nquiet: true\nprompt_tokens: 600\noutput_tokens: 4\nshared_prefix: 400\nsim:\n  prefix_cache_tokens: 50000\n")
	out := filepath.Join(dir, "run")
	if code, stdout, stderr := surge(t, "run", "-f", good, "-o", out); !ran(code) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	m, err := record.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sp := m.SharedPrefix; sp == nil || sp.Tokens != 400 || !strings.HasPrefix(m.CacheState, "shared prefix of 400 tokens (66.7% of prompt tokens") {
		t.Fatalf("manifest: cache_state %q, shared_prefix %+v", m.CacheState, m.SharedPrefix)
	}
	f, err := os.Open(filepath.Join(out, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, hits := 0, 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var r struct {
			Cached int `json:"cached_tokens"`
			Prefix int `json:"prefix_tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Prefix != 400 {
			t.Fatalf("record %d: prefix_tokens %d", n, r.Prefix)
		}
		if r.Cached >= 384 { // whole 16-token blocks of the 400-token prefix
			hits++
		}
	}
	if n < 4 || hits < n-2 { // Poisson arrivals: one close behind the first may find nothing cached yet
		t.Fatalf("%d of %d records served the prefix from the simulator's cache", hits, n)
	}
}
