package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// applyConfigFile decodes the YAML file at path into dst strictly (an
// unknown field is an error naming file, line and field; a value of the
// wrong type names the key and what it wants) and then re-applies every
// flag the user set, so that flags win over the file. dst must be the
// struct the flags are bound to. It returns the file's top-level keys.
func applyConfigFile(fs *pflag.FlagSet, path string, dst any) (map[string]*yaml.Node, error) {
	if path == "" {
		return nil, nil
	}
	// Remember what the user set on the command line, item by item for
	// slice flags (their String() form would split values at commas).
	set := map[string]string{}
	items := map[string][]string{}
	fs.Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			items[f.Name] = sv.GetSlice()
			return
		}
		set[f.Name] = f.Value.String()
	})
	keys, err := decodeYAMLFile(path, dst)
	if err != nil {
		return nil, err
	}
	for name, v := range items {
		if err := fs.Lookup(name).Value.(pflag.SliceValue).Replace(v); err != nil {
			return nil, usageErr("--%s: %v", name, err)
		}
	}
	for name, v := range set {
		if err := fs.Lookup(name).Value.Set(v); err != nil {
			return nil, usageErr("--%s: %v", name, err)
		}
	}
	return keys, nil
}

var (
	yamlLine    = regexp.MustCompile(`line (\d+): (.*)`)
	yamlUnknown = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlType    = regexp.MustCompile("cannot unmarshal !!(\\w+) `.*` into (\\S+)")
)

// decodeYAMLFile reads one YAML document strictly into dst. An empty file
// (or one of comments only) is an error: it would silently run defaults.
func decodeYAMLFile(path string, dst any) (map[string]*yaml.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("-f %s: %v", path, errors.Unwrap(err))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, usageErr("%s", formatYAMLError(path, err, nil))
	}
	if len(doc.Content) == 0 {
		return nil, usageErr("%s: the file is empty: an experiment file sets at least one key (see the examples in --help)", path)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, usageErr("%s:%d: want a mapping of keys such as rate: 5, got %s", path, top.Line, kindName(top))
	}
	b = resolveRelative(b, top, filepath.Dir(path))
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		return nil, usageErr("%s", formatYAMLError(path, err, top))
	}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		keys[top.Content[i].Value] = top.Content[i+1]
	}
	return keys, nil
}

// resolveRelative makes the relative paths an experiment file names —
// the FILE of every "empirical:FILE" value and the value of every
// "dataset" key — relative to the file's own folder dir, as trace paths
// are, rewriting each value in place on its line (so that error lines stay
// right). Values with escapes, or spread over lines, are left alone.
func resolveRelative(b []byte, top *yaml.Node, dir string) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	changed := false
	rewrite := func(n *yaml.Node, value string) {
		raw := n.Value
		switch n.Style {
		case 0:
		case yaml.DoubleQuotedStyle:
			raw = `"` + n.Value + `"`
		case yaml.SingleQuotedStyle:
			raw = "'" + n.Value + "'"
		default:
			return
		}
		if n.Line < 1 || n.Line > len(lines) {
			return
		}
		line := lines[n.Line-1]
		at := n.Column - 1
		if at < 0 || at+len(raw) > len(line) || string(line[at:at+len(raw)]) != raw {
			return // escapes or folding: not the literal text
		}
		lines[n.Line-1] = slices.Concat(line[:at], []byte(strconv.Quote(value)), line[at+len(raw):])
		changed = true
	}
	relative := func(p string) bool { return p != "" && !filepath.IsAbs(p) }
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k, v := n.Content[i], n.Content[i+1]; k.Value == "dataset" && v.Kind == yaml.ScalarNode && relative(v.Value) {
					rewrite(v, filepath.Join(dir, v.Value))
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
		if file, ok := strings.CutPrefix(n.Value, "empirical:"); ok && n.Kind == yaml.ScalarNode && relative(file) {
			rewrite(n, "empirical:"+filepath.Join(dir, file))
		}
	}
	walk(top)
	if !changed {
		return b
	}
	return bytes.Join(lines, nil)
}

// formatYAMLError turns yaml.v3's errors into one line per problem:
// "file.yaml:3: unknown field "x"", or, for a value of the wrong type,
// "file.yaml:4: phases[1].duration: want a duration like 30s, got "five
// seconds"".
func formatYAMLError(path string, err error, top *yaml.Node) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		m := yamlLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		msg := m[2]
		line, _ := strconv.Atoi(m[1])
		if u := yamlUnknown.FindStringSubmatch(msg); u != nil {
			msg = fmt.Sprintf("unknown field %q", u[1])
		} else if t := yamlType.FindStringSubmatch(msg); t != nil && top != nil {
			if key, val := keyAt(top, line, ""); key != "" {
				msg = fmt.Sprintf("%s: want %s, got %q", key, wantType(t[2]), val)
			}
		}
		lines = append(lines, fmt.Sprintf("%s:%s: %s", path, m[1], msg))
	}
	if len(lines) == 0 {
		return fmt.Sprintf("%s: %v", path, err)
	}
	return strings.Join(lines, "\n")
}

// keyAt finds the key path of the value on line (the first one when a
// line holds several), e.g. "phases[1].duration", and the value's text.
func keyAt(n *yaml.Node, line int, path string) (string, string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if v.Kind == yaml.ScalarNode && v.Line == line {
				return p, v.Value
			}
			if key, val := keyAt(v, line, p); key != "" {
				return key, val
			}
			if v.Line == line && v.Kind != yaml.ScalarNode {
				return p, kindName(v)
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if v.Kind == yaml.ScalarNode && v.Line == line {
				return p, v.Value
			}
			if key, val := keyAt(v, line, p); key != "" {
				return key, val
			}
		}
	}
	return "", ""
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return n.Value
}

// wantType says in words what a Go type wants.
func wantType(goType string) string {
	switch strings.TrimPrefix(goType, "[]") {
	case "time.Duration":
		if strings.HasPrefix(goType, "[]") {
			return "a list of durations like [30s, 1m]"
		}
		return "a duration like 30s"
	case "float64", "float32":
		if strings.HasPrefix(goType, "[]") {
			return "a list of numbers like [2, 5, 10]"
		}
		return "a number"
	case "int", "int64", "int32", "uint64":
		if strings.HasPrefix(goType, "[]") {
			return "a list of whole numbers like [1, 4, 16]"
		}
		return "a whole number"
	case "bool":
		return "true or false"
	case "string":
		if strings.HasPrefix(goType, "[]") {
			return "a list of text values"
		}
		return "text"
	}
	if strings.HasPrefix(goType, "[]") {
		return "a list"
	}
	return "a mapping of keys"
}
