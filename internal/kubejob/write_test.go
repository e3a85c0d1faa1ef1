package kubejob

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Write refuses a manifest already in the folder before writing any, and
// replaces it with force.
func TestWriteRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	files := []File{{Name: "00-a.yaml", Objects: []any{map[string]string{"kind": "ConfigMap"}}}, {Name: "later/40-b.yaml", Objects: []any{map[string]string{"kind": "Job"}}}}
	if err := os.MkdirAll(filepath.Join(dir, "later"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "later/40-b.yaml"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ex *ExistsError
	if err := Write(dir, files, false); !errors.As(err, &ex) || ex.Path != filepath.Join(dir, "later/40-b.yaml") {
		t.Fatalf("Write without force: %v, want the existing later/40-b.yaml refused", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00-a.yaml")); err == nil {
		t.Error("00-a.yaml was written although the refusal came first")
	}
	if err := Write(dir, files, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "later/40-b.yaml")); string(b) == "old" {
		t.Error("force did not replace later/40-b.yaml")
	}
}
