package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad empirical:FILE histogram named in an experiment file: the error
// names the CSV file and the CSV's line, not a line of the YAML file, and
// never shows the cell's text.
func TestEmpiricalErrorInYAMLNamesTheCSVLine(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	csv := file("bad.csv", "tokens,count\n100,3\nZEBRA-CANARY,2\n")
	// The histogram's bad line (3) is the YAML's prompt_tokens line too:
	// a message that put the CSV's line on the YAML file would pass a
	// looser check.
	yml := file("exp.yaml", "rate: 1\nduration: 1s\nprompt_tokens: \"empirical:bad.csv\"\n")
	profile := file("profile.yaml", "rate: 1\nduration: 1s\nprofiles:\n  - name: p\n    prompt: \"empirical:bad.csv\"\n    output: 8\n")
	for name, args := range map[string][]string{
		"yaml":    {"run", "-f", yml},
		"flag":    {"run", "--rate", "1", "--duration", "1s", "--prompt-tokens", "empirical:" + csv},
		"profile": {"run", "-f", profile},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := surge(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr)
			}
			if want := csv + ":3: tokens: not a whole number (a 12-byte text, not shown)"; !strings.Contains(stderr, want) {
				t.Errorf("stderr %q\nwant it to contain %q", stderr, want)
			}
			if strings.Contains(stderr, "ZEBRA") {
				t.Errorf("stderr shows the cell's text: %q", stderr)
			}
			if strings.Contains(stderr, "exp.yaml:3:") {
				t.Errorf("stderr blames the YAML file's line 3 for the CSV's: %q", stderr)
			}
		})
	}
}
