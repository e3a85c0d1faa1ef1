package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schematest"
)

// The JSON Schemas in docs/schema/ are those of the Go types that write
// the files: a field renamed, added or removed changes a schema, and this
// test fails until the change is accepted with -update (and the schema
// version raised when a field is renamed or removed).
func TestSchemasMatchTheTypes(t *testing.T) {
	over := map[reflect.Type]map[string]any{
		reflect.TypeFor[record.PartialCause](): schematest.Enum(append([]record.PartialCause{""}, record.PartialCauses...)...),
		reflect.TypeFor[record.Outcome]():      schematest.Enum(record.Outcomes...),
		reflect.TypeFor[record.Cause]():        schematest.Enum(record.CauseWorkerLost, record.CauseWorkerInterrupted),
	}
	version := map[string]any{"const": record.SchemaVersion}
	cases := []struct {
		file     string
		title    string
		t        reflect.Type
		fields   map[string]reflect.Type
		required []string
	}{
		{"manifest.schema.json", "surge manifest.json: what a run tested", reflect.TypeFor[record.Manifest](),
			map[string]reflect.Type{"Manifest.config": reflect.TypeFor[ManifestConfig]()}, nil},
		{"summary.schema.json", "surge summary.json: the whole analysis of one run", reflect.TypeFor[rundir.Summary](), nil, nil},
		{"record.schema.json", "surge requests.jsonl: one line per scheduled arrival (a time not reached is absent)", reflect.TypeFor[record.Record](), nil,
			[]string{"schema_version", "id", "seq", "phase", "scheduled_ns", "status", "outcome", "good"}},
	}
	for _, c := range cases {
		s := schematest.Generate(c.t, c.title, over, c.fields, c.required)
		pin(s, version)
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("..", "..", "..", "docs", "schema", c.file), append(b, '\n'))
	}
}

// pin makes the top object's schema_version the current one: a file of
// another version does not validate.
func pin(s map[string]any, version map[string]any) {
	if ref, ok := s["$ref"].(string); ok {
		s = s["$defs"].(map[string]any)[filepath.Base(ref)].(map[string]any)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		props["schema_version"] = version
	}
}

// A folder written by surge before files carried a schema version still
// loads and re-renders: its files are read as the older layout, and the
// problems say so.
func TestOlderLayoutLoads(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"manifest.json", "requests.jsonl", "summary.json", "engine.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", "layout1", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Reload(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.HasPrefix(p, "schema: ") }) {
		t.Errorf("problems %q: the older layout is not said", r.Problems)
	}
	d, err := rundir.Reopen(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := r.Result(d, analyze.RecoveryRule{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recorded != 82 || res.Analysis.Overall.Offered != 82 || res.Partial {
		t.Errorf("recorded %d, offered %d, partial %v; want the 82 whole arrivals", res.Recorded, res.Analysis.Overall.Offered, res.Partial)
	}
}
