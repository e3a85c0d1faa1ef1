// Package grafana holds surge's Grafana dashboard (surge.json) and reads
// it for tests: this package's checks the JSON and parses every PromQL
// expression with Prometheus's own parser; e2e/prometheus_test.go runs
// each expression against a real Prometheus after a pushed run.
package grafana

import (
	_ "embed"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// JSON is surge.json, the dashboard to import into Grafana.
//
//go:embed surge.json
var JSON []byte

// Dashboard is the part of a Grafana dashboard the test reads.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
}

// Panel is one panel.
type Panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// Load reads surge.json.
func Load() (Dashboard, error) {
	var d Dashboard
	err := json.Unmarshal(JSON, &d)
	return d, err
}

// Expressions is every PromQL expression of d, by where it is: the
// panels' targets, the annotations and the selectors inside the
// variables' label_values(…).
func Expressions(d Dashboard) map[string]string {
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out[p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	for _, a := range d.Annotations.List {
		out["annotation "+a.Name] = a.Expr
	}
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			out["variable "+v.Name] = m[1]
		}
	}
	return out
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// Substitute replaces Grafana's variables in expr: those in vars by
// their values, the dashboard's others by ".*" (all), and the interval
// variables by 1m, 15s and 1h ($__range).
func Substitute(expr string, vars map[string]string) string {
	keys := slices.Collect(maps.Keys(vars))
	// The longer name first: $run_id before $run.
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, "$"+k, vars[k])
	}
	pairs = append(pairs, "$__rate_interval", "1m", "$__interval", "15s", "$__range", "1h", "$run_id", ".*", "$run", ".*", "$engine_job", ".*")
	return strings.NewReplacer(pairs...).Replace(expr)
}
