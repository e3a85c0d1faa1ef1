package merge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/surge-bench/surge/internal/compare"
	"github.com/surge-bench/surge/internal/record"
)

// perRun are the manifest keys that differ between shards of one
// experiment by nature: the folder's name, its own clock and outcome,
// where its key came from, how its prompts were sized and what it spent
// (each its own), and how it was split (checked apart: N).
var perRun = []string{"run_id", "started", "finished", "partial", "partial_cause", "partial_why", "seen_ns", "arrivals", "key_source", "prompt_sizing", "spent", "budget", "distributed", "metrics_url",
	"shared_prefix", "cache_state", "http_client"} // counts of its own arrivals (the prefix itself is options.SharedPrefix)

// perProcess are the options (manifest config.options) each process
// sets for itself without changing the experiment: its shard, where it
// writes, what it prints or serves, how it reaches the target and its
// metrics (the target itself is compared), its own budget.
var perProcess = []string{"Shard", "StartAt", "Out", "Force", "Quiet", "PrometheusAddr", "MetricsOut", "Web", "OTLPListen", "OTLPGrace",
	"APIKeyEnv", "APIKeyFile", "CACert", "Insecure", "Headers", "HTTPClient", "Spin",
	"MetricsURL", "MetricsPreset", "MetricOverride", "ScrapeInterval",
	"MaxRequests", "MaxOutputTokens", "MaxCost"}

// Agree checks that two shards' manifests describe one experiment: the
// same command, target, model, API, plan, workload, seed, SLOs and other
// options, surge version and number of shards. A disagreement is refused
// naming the field (its path in manifest.json), both values and both
// folders.
func Agree(a, b *record.Manifest, dirA, dirB string) error {
	if na, nb := a.Distributed.Generators, b.Distributed.Generators; na != nb {
		return refuse("the shards disagree on distributed.generators (N of --shard I/N): %d in %s, %d in %s", na, dirA, nb, dirB)
	}
	ta, err := defining(a)
	if err != nil {
		return refuse("%s: manifest.json: %v", dirA, err)
	}
	tb, err := defining(b)
	if err != nil {
		return refuse("%s: manifest.json: %v", dirB, err)
	}
	if path, va, vb, ok := diff("", ta, tb); !ok {
		return refuse("the shards are not one experiment: they disagree on %s: %s in %s, %s in %s", named(path, a, b), va, dirA, vb, dirB)
	}
	return nil
}

// named is a manifest path as a refusal shows it: with the flag the user
// sets it by, when it has one (config.extra.Rate (--rate)), named as
// surge compare names the settings it weighs. An element or the length
// of a list is named by its list's flag.
func named(path string, a, b *record.Manifest) string {
	p := strings.TrimSuffix(strings.TrimPrefix(path, "config."), " (length)")
	for p != "" {
		for _, m := range []*record.Manifest{a, b} {
			if name, ok := compare.SettingName(m, p); ok {
				if name == p || strings.ContainsRune(name, ' ') { // seed, model; "surge version"
					return path
				}
				return path + " (--" + name + ")"
			}
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return path
}

// defining is the part of a manifest that defines the experiment, as a
// JSON tree.
func defining(m *record.Manifest) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var t map[string]any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	for _, k := range perRun {
		delete(t, k)
	}
	if c, ok := t["config"].(map[string]any); ok {
		if o, ok := c["options"].(map[string]any); ok {
			for _, k := range perProcess {
				delete(o, k)
			}
		}
	}
	return t, nil
}

// diff finds the first place (in key order) where two JSON trees differ:
// its path and both values rendered; ok when they are equal.
func diff(path string, a, b any) (where, va, vb string, ok bool) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := a.(type) {
	case map[string]any:
		y, isMap := b.(map[string]any)
		if !isMap {
			break
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if where, va, vb, ok := diff(join(k), x[k], y[k]); !ok {
				return where, va, vb, false
			}
		}
		return "", "", "", true
	case []any:
		y, isList := b.([]any)
		if !isList {
			break
		}
		for i := range min(len(x), len(y)) {
			if where, va, vb, ok := diff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); !ok {
				return where, va, vb, false
			}
		}
		if len(x) == len(y) {
			return "", "", "", true
		}
		return path + " (length)", fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d items", len(y)), false
	}
	ja, jb := render(a), render(b)
	if ja == jb {
		return "", "", "", true
	}
	return path, ja, jb, false
}

// render is a JSON value as the refusal shows it ("absent" for none),
// cut to a readable length.
func render(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	return strings.TrimSpace(s)
}
