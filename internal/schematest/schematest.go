// Package schematest holds the run folder's JSON Schemas to the files
// surge writes. The schemas live in docs/schema/, one per file kind; they
// are generated from the Go types that write the files (Generate, run by
// internal/run's TestSchemasMatchTheTypes with -update) and checked in, so
// that renaming a Go field changes a reviewed file instead of silently
// changing what users' scripts read. ValidateDir checks every file of a
// folder against them; the command-line tests call it after each command.
package schematest

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Kinds maps each file name to its schema in docs/schema/.
var Kinds = map[string]string{
	"manifest.json":  "manifest.schema.json",
	"summary.json":   "summary.schema.json",
	"results.json":   "results.schema.json",
	"requests.jsonl": "record.schema.json",
}

// Root is the repository's root: the folder above the working directory
// that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("schematest: no go.mod above the working directory")
		}
		dir = up
	}
}

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

func schemas() (map[string]*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		root, err := Root()
		if err != nil {
			compileErr = err
			return
		}
		c := jsonschema.NewCompiler()
		compiled = map[string]*jsonschema.Schema{}
		for _, name := range Kinds {
			p := filepath.Join(root, "docs", "schema", name)
			s, err := c.Compile(p)
			if err != nil {
				compileErr = fmt.Errorf("schematest: %s: %w", p, err)
				return
			}
			compiled[name] = s
		}
	})
	return compiled, compileErr
}

// ValidateFile checks the file at path against the schema of its name
// (Kinds); a file of another name is not checked.
func ValidateFile(path string) error {
	kind, ok := Kinds[filepath.Base(path)]
	if !ok {
		return nil
	}
	all, err := schemas()
	if err != nil {
		return err
	}
	s := all[kind]
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if filepath.Base(path) != "requests.jsonl" {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := s.Validate(inst); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 4<<20)
	for line := 1; sc.Scan(); line++ {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := s.Validate(inst); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	return sc.Err()
}

// ValidateDir checks every file under dir that has a schema and was
// written at or after since (zero: every file), and returns how many it
// checked.
func ValidateDir(tb testing.TB, dir string, since time.Time) int {
	tb.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if _, ok := Kinds[d.Name()]; !ok {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.ModTime().Before(since) {
			return nil
		}
		n++
		if err := ValidateFile(p); err != nil {
			tb.Errorf("schema: %v", err)
		}
		return nil
	})
	return n
}

// Generate returns the JSON Schema (draft 2020-12) of the JSON encoding/json
// makes of a value of type t: every exported field by its JSON name,
// required unless omitempty or omitzero, no other property allowed. over
// gives the schema of types whose encoding is their own (a custom
// MarshalJSON) or that a schema should say more of (an enumeration).
//
// fields gives the Go type of a field whose declared type says too little
// (an any), keyed "Type.json_name"; required, when not nil, lists the
// only properties the top type requires (for a type that leaves out what
// it does not know, as record.Record does).
func Generate(t reflect.Type, title string, over map[reflect.Type]map[string]any, fields map[string]reflect.Type, required []string) map[string]any {
	g := &gen{over: over, fieldType: fields, defs: map[string]any{}, named: map[reflect.Type]string{}}
	var s map[string]any
	if required != nil {
		s = g.fields(t)
		r := make([]any, len(required))
		for i, n := range required {
			r[i] = n
		}
		s["required"] = r
	} else {
		s = g.schema(t)
	}
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = title
	if len(g.defs) > 0 {
		s["$defs"] = g.defs
	}
	return s
}

type gen struct {
	over      map[reflect.Type]map[string]any
	fieldType map[string]reflect.Type
	defs      map[string]any
	named     map[reflect.Type]string // struct types given a $defs entry
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

func (g *gen) schema(t reflect.Type) map[string]any {
	if s, ok := g.over[t]; ok {
		return clone(s)
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{}
	case t.Kind() != reflect.Pointer && t.Implements(marshalerType):
		return map[string]any{} // its own encoding: over says more
	case t.Kind() != reflect.Pointer && t.Implements(textType):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return anyOf(g.schema(t.Elem()), map[string]any{"type": "null"})
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string"} // base64
		}
		return map[string]any{"type": []any{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		return g.object(t)
	}
	panic(fmt.Sprintf("schematest: no schema for %s", t))
}

// object is a struct's schema, once per named type in $defs.
func (g *gen) object(t reflect.Type) map[string]any {
	name := t.Name()
	if name == "" {
		return g.fields(t)
	}
	def := strings.ReplaceAll(t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]+"."+name, "/", ".")
	if _, ok := g.named[t]; !ok {
		g.named[t] = def
		g.defs[def] = g.fields(t)
	}
	return map[string]any{"$ref": "#/$defs/" + def}
}

func (g *gen) fields(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []any
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ft := f.Type
			if o, ok := g.fieldType[t.Name()+"."+name]; ok {
				ft = o
			}
			props[name] = g.schema(ft)
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
				required = append(required, name)
			}
		}
	}
	walk(t)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func anyOf(a, b map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{a, b}}
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Enum is the schema of a string that takes one of values.
func Enum[T ~string](values ...T) map[string]any {
	e := make([]any, len(values))
	for i, v := range values {
		e[i] = string(v)
	}
	return map[string]any{"type": "string", "enum": e}
}
