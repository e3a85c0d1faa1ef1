package grafana

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/surge-bench/surge/internal/push"
)

func TestDashboard(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q title %q schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, want := range []string{"datasource", "run_id", "run", "engine_job"} {
		if !vars[want] {
			t.Errorf("no variable %q", want)
		}
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("%q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Fatalf("%q overlaps %q at %d,%d", p.Title, other, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("%q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%q has no query", p.Title)
		}
	}
	for _, want := range []string{"burst", "recovery"} {
		found := false
		for _, a := range d.Annotations.List {
			found = found || a.Name == want
		}
		if !found {
			t.Errorf("no %s annotation", want)
		}
	}
}

// Every expression parses with Prometheus's parser, and names only
// metrics surge pushes (push.Catalogue, with a histogram's _bucket, _sum
// and _count series) or vLLM's (vllm:…).
func TestDashboardPromQL(t *testing.T) {
	known := map[string]bool{}
	for _, m := range push.Catalogue() {
		for _, s := range []string{"", "_bucket", "_sum", "_count"} {
			known[m.Prom+s] = true
		}
	}
	p := parser.NewParser(parser.Options{})
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	exprs := Expressions(d)
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found", len(exprs))
	}
	for where, e := range exprs {
		expr, err := p.ParseExpr(Substitute(e, nil))
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, e, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					name = m.Value
				}
			}
			if !known[name] && !strings.HasPrefix(name, "vllm:") {
				t.Errorf("%s: metric %q is neither one surge pushes nor vLLM's", where, name)
			}
			return nil
		})
	}
}
