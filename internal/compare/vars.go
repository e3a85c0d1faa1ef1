package compare

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/sim"
)

// Variable is one setting whose value differs between the folders, named
// as the user sets it (the flag without its dashes: max-waiting,
// baseline-rps, target), with its value in each folder.
type Variable struct {
	Name     string   `json:"name"`
	Category string   `json:"category"`
	Values   []string `json:"values"` // one per folder, in their order
	// Coverage marks a difference in what was run rather than in how: the
	// burst multipliers, a sweep's levels. It does not confound the rows
	// both folders ran; a row only one ran is not tested on the other.
	Coverage bool `json:"coverage,omitempty"`
	// Observation marks a difference in what was observed of the target
	// (engine metrics scraped, OTLP spans received), not in the target or
	// its load: it changes which metrics are tested, not their values.
	Observation bool `json:"observation,omitempty"`
}

// confounds reports whether v can change the metrics' values.
func (v Variable) confounds() bool { return !v.Coverage && !v.Observation }

// leaf is one setting of a manifest: its user-facing name and its value.
type leaf struct {
	name, value string
}

// settings flattens a manifest into the settings a comparison weighs,
// each named as the user knows it. Bookkeeping (run id, times, output
// folder, live view), what a run measured (prompt sizing, a trace's
// counts) and descriptions derived from other settings (prompt_set,
// cache_state) are left out; the simulator's serving_config is read key
// by key.
func settings(m *record.Manifest) map[string]leaf {
	out := map[string]leaf{}
	put := func(path, name, value string) {
		if _, ok := out[path]; !ok {
			out[path] = leaf{name, value}
		}
	}
	put("version", "surge version", m.Version)
	put("target", "target", m.Target)
	put("virtual_time", "target", strconv.FormatBool(m.VirtualTime))
	put("model", "model", m.Model)
	put("api", "api", m.API)
	put("deployment", "deployment", m.Deployment)
	put("hardware", "hardware", m.Hardware)
	put("seed", "seed", strconv.FormatInt(m.Seed, 10))
	if m.Dataset != nil {
		put("dataset.sha256", "dataset", m.Dataset.File+" (sha256 "+short(m.Dataset.SHA256)+")")
	}
	if js, ok := strings.CutPrefix(m.Serving, "surge simulator "); ok {
		var sc map[string]json.RawMessage
		if json.Unmarshal([]byte(js), &sc) == nil {
			for k, v := range sc {
				name, typ := simName(k)
				if name == "seed" {
					continue // the run's --seed, above
				}
				put("serving_config."+k, name, format(v, typ))
			}
		} else {
			put("serving_config", "serving-config", m.Serving)
		}
	} else {
		put("serving_config", "serving-config", m.Serving)
	}
	cfg, _ := json.Marshal(m.Config)
	var c struct {
		Options map[string]json.RawMessage `json:"options"`
		Extra   json.RawMessage            `json:"extra"`
	}
	json.Unmarshal(cfg, &c)
	for k, v := range c.Options {
		name, typ, ok := optionName(k)
		if !ok {
			continue
		}
		put("options."+k, name, shown(name, format(v, typ)))
	}
	flatten(c.Extra, "extra", func(path, key string, v json.RawMessage) {
		if slices.Contains(perRun, key) {
			return
		}
		put(path, kebab(key), shown(kebab(key), format(v, durationType(key, v))))
	})
	return out
}

// SettingName is the name a user sets one of m's settings by — the flag
// without its dashes, as Variables names it (rate, seed, max-waiting) —
// for its path in manifest.json: at the top (seed, model) or below config
// (options.Seed, extra.Rate). ok is false for a path that is no setting
// (the plan, bookkeeping). surge merge names a disagreement this way.
func SettingName(m *record.Manifest, path string) (name string, ok bool) {
	l, ok := settings(m)[path]
	return l.name, ok
}

// byProfile are the workload settings that, unset, take the profile's
// (or the mix's) own value.
var byProfile = []string{"mix", "prompt-tokens", "output-tokens"}

// shown is a setting's value as people read it: an unset workload length
// or mix as "profile default" (not "" or 0), a burstiness of 1 as
// "1 (poisson)" — the shape that makes a gamma process Poisson.
func shown(name, value string) string {
	switch {
	case slices.Contains(byProfile, name) && (value == `""` || value == "0" || value == "none" || value == "{}"):
		return "profile default"
	case name == "burstiness" && value == "1":
		return "1 (poisson)"
	}
	return value
}

// perRun are keys of an experiment's own settings that differ between
// its runs (the multiplier, step, level of each) or record how it was
// invoked, not what it tested.
var perRun = []string{"multiplier", "step", "rate_rps", "level", "Level", "DurationSet", "ConfigFile", "Simulate", "simulate"}

// skipOptions are the options that do not change what is tested: where
// the files go, the live view, where the key comes from; and those the
// manifest records better itself (deployment, hardware, serving config;
// the simulator's settings are its serving_config).
var skipOptions = []string{"out", "force", "quiet", "prometheus_addr", "metrics_out", "web", "api_key_env", "api_key_file", "ca_cert", "sim", "deployment", "hardware", "serving_config"}

// coverage are the settings that say which rows an experiment ran, and
// how often (--repeat: more runs make the confidence statement sharper,
// they do not change what is tested).
// A budget (--max-requests, …) only says how much may run: a run it
// stopped is partial, and the comparison says so.
var coverage = []string{"multipliers", "concurrency", "rates", "repeat", "max-requests", "max-output-tokens", "max-cost"}

// observation are the settings that say what was observed of the target.
// Prices only turn tokens into a cost.
var observation = []string{"metrics-url", "metrics-preset", "metric", "scrape-interval", "otlp-listen", "otlp-grace", "price-input", "price-output"}

// optionName maps a run.Options field (as the manifest's JSON has it,
// the Go name) to its flag name and type.
func optionName(goName string) (name string, typ reflect.Type, ok bool) {
	f, found := reflect.TypeFor[run.Options]().FieldByName(goName)
	if !found {
		return kebab(goName), nil, true
	}
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if key == "" || key == "-" || slices.Contains(skipOptions, key) {
		return "", nil, false
	}
	switch key {
	case "headers":
		key = "header"
	}
	return strings.ReplaceAll(key, "_", "-"), f.Type, true
}

// simName maps a sim.Config field to its flag name and type.
func simName(goName string) (string, reflect.Type) {
	f, ok := reflect.TypeFor[sim.Config]().FieldByName(goName)
	if !ok {
		return kebab(goName), nil
	}
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if key == "quirks" {
		key = "quirk"
	}
	return strings.ReplaceAll(key, "_", "-"), f.Type
}

var durationT = reflect.TypeFor[time.Duration]()

// durationType guesses whether an experiment setting without a Go type
// at hand is a duration: an integer of nanoseconds under a name that
// says time.
func durationType(key string, v json.RawMessage) reflect.Type {
	k := strings.ToLower(key)
	if strings.Contains(k, "rps") || strings.Contains(k, "burstiness") { // a rate, a gamma shape: numbers
		return nil
	}
	if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
		return nil
	}
	for _, w := range []string{"duration", "timeout", "warmup", "baseline", "burst", "recovery", "settle", "after", "budget", "limit", "delay", "window", "offset"} {
		if strings.Contains(k, w) {
			return durationT
		}
	}
	return nil
}

// format prints a JSON value for people: a duration as 1m0s, a string
// without quotes, anything else as its compact JSON.
func format(v json.RawMessage, typ reflect.Type) string {
	if typ == durationT {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return time.Duration(n).String()
		}
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return string(v)
	}
	switch x := x.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case nil:
		return "none"
	case []any:
		if len(x) == 0 {
			return "none"
		}
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// flatten calls fn for every leaf of the JSON object raw (arrays are
// leaves), with its path and its own key.
func flatten(raw json.RawMessage, path string, fn func(path, key string, v json.RawMessage)) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return
	}
	for k, v := range obj {
		p := path + "." + k
		if len(v) > 0 && v[0] == '{' {
			flatten(v, p, fn)
			continue
		}
		fn(p, k, v)
	}
}

// kebab turns a Go or YAML name into a flag's: StartRPS → start-rps,
// TTFTBudget → ttft-budget, baseline_rps → baseline-rps.
func kebab(s string) string {
	if strings.ContainsRune(s, '_') || strings.ToLower(s) == s {
		return strings.ReplaceAll(strings.ToLower(s), "_", "-")
	}
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]))) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// category groups a setting for people, in the words of docs/method.md:
// what was tested (target, model, engine, hardware), how it was loaded
// (workload, arrivals, phases) and how it was judged (SLOs).
func category(name string) string {
	switch name {
	case "target", "model", "api", "deployment", "hardware", "surge version", "seed":
		return name
	case "serving-config":
		return "serving config"
	case "profile", "mix", "prompt-tokens", "output-tokens", "ignore-eos", "no-nonce", "shared-prefix", "dataset", "dataset-format", "dataset-sample", "max-tokens-cap", "sessions", "session-turns", "think-time", "turn-tokens", "fanout", "session-drain", "profiles", "prompt-calibration":
		return "workload"
	case "arrival", "burstiness", "trace", "speed", "trace-offset", "trace-window", "trace-block-tokens":
		return "arrival process"
	case "baseline-rps", "rate", "duration", "warmup", "baseline", "burst", "recovery", "recovery-limit", "phases", "multipliers", "concurrency", "rates":
		return "phases"
	case "repeat":
		return "repeats"
	case "metrics-url", "metrics-preset", "metric", "scrape-interval", "otlp-listen", "otlp-grace":
		return "observation"
	case "max-requests", "max-output-tokens", "max-cost", "price-input", "price-output":
		return "budget"
	case "ttft-deadline", "e2e-deadline", "slo-ttft-p95", "slo-e2e-p99", "slo-goodput", "ttft-budget", "tpot-budget":
		return "SLOs and deadlines"
	}
	if _, ok := reflect.TypeFor[sim.Config]().FieldByNameFunc(func(n string) bool { s, _ := simName(n); return s == name }); ok {
		return "serving config"
	}
	return "client and analysis"
}

// Variables lists every setting whose value differs between the
// manifests, by name, in a stable order (category, then name); a name
// that several manifest fields carry (the model is both a field and an
// option) is listed once.
func Variables(ms []*record.Manifest) []Variable {
	sets := make([]map[string]leaf, len(ms))
	paths := map[string]bool{}
	for i, m := range ms {
		sets[i] = settings(m)
		for p := range sets[i] {
			paths[p] = true
		}
	}
	byName := map[string]*Variable{}
	var order []string
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		var name string
		vals := make([]string, len(ms))
		for i := range ms {
			l, ok := sets[i][p]
			if !ok {
				vals[i] = "not recorded"
				continue
			}
			vals[i], name = l.value, l.name
		}
		if allSame(vals) {
			continue
		}
		if v, ok := byName[name]; ok {
			for i := range vals { // a second field of the same setting: keep the first's values unless they agree
				if v.Values[i] != vals[i] && allSame(v.Values) {
					v.Values[i] = vals[i]
				}
			}
			continue
		}
		byName[name] = &Variable{Name: name, Category: category(name), Values: vals, Coverage: slices.Contains(coverage, name), Observation: slices.Contains(observation, name)}
		order = append(order, name)
	}
	var out []Variable
	for _, n := range order {
		out = append(out, *byName[n])
	}
	slices.SortStableFunc(out, func(a, b Variable) int {
		if a.confounds() != b.confounds() {
			if a.confounds() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func allSame(vs []string) bool {
	for _, v := range vs[1:] {
		if v != vs[0] {
			return false
		}
	}
	return true
}
