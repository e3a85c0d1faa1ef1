package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// applyConfigFile decodes the YAML file at path into dst strictly (an
// unknown field is an error naming file, line and field) and then re-applies
// every flag the user set, so that flags win over the file. dst must be the
// struct the flags are bound to.
func applyConfigFile(fs *pflag.FlagSet, path string, dst any) error {
	if path == "" {
		return nil
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
	if err := decodeYAMLFile(path, dst); err != nil {
		return err
	}
	for name, v := range items {
		if err := fs.Lookup(name).Value.(pflag.SliceValue).Replace(v); err != nil {
			return usageErr("--%s: %v", name, err)
		}
	}
	for name, v := range set {
		if err := fs.Lookup(name).Value.Set(v); err != nil {
			return usageErr("--%s: %v", name, err)
		}
	}
	return nil
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)
var yamlUnknown = regexp.MustCompile(`field (\S+) not found in type \S+`)

// decodeYAMLFile reads one YAML document strictly into dst.
func decodeYAMLFile(path string, dst any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return usageErr("config: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		return usageErr("%s", formatYAMLError(path, err))
	}
	return nil
}

// formatYAMLError turns yaml.v3's "yaml: unmarshal errors:\n  line 3: field
// x not found in type T" into "file.yaml:3: unknown field "x"", one line per
// problem.
func formatYAMLError(path string, err error) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		m := yamlLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		msg := m[2]
		if u := yamlUnknown.FindStringSubmatch(msg); u != nil {
			msg = fmt.Sprintf("unknown field %q", u[1])
		}
		lines = append(lines, fmt.Sprintf("%s:%s: %s", path, m[1], msg))
	}
	if len(lines) == 0 {
		return fmt.Sprintf("%s: %v", path, err)
	}
	return strings.Join(lines, "\n")
}
