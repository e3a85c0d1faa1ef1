package kubejob

import (
	"os"
	"path/filepath"
)

// ExistsError is Write's refusal of a manifest file already in the
// folder (without force).
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string { return e.Path + " already exists" }

// Write renders files into dir (subfolders made as needed). Without
// force, a file already there is refused before anything is written.
func Write(dir string, files []File, force bool) error {
	if !force {
		for _, f := range files {
			if p := filepath.Join(dir, f.Name); exists(p) {
				return &ExistsError{p}
			}
		}
	}
	for _, f := range files {
		b, err := Render(f)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
