package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/gguf"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    gguf.Options
		wantErr string
	}{
		{name: "defaults", args: []string{"-o", "m.gguf"},
			want: gguf.Options{Seed: 1, Dim: 512, Layers: 8, Heads: 8, KVHeads: 4, FFN: 1408, Vocab: 8192, ContextLength: 32768, Name: "surge-tiny"}},
		{name: "small", args: []string{"-o", "m.gguf", "-seed", "7", "-dim", "64", "-layers", "2", "-heads", "4", "-kv-heads", "2", "-ffn", "96", "-vocab", "600"},
			want: gguf.Options{Seed: 7, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, ContextLength: 32768, Name: "surge-tiny"}},
		{name: "missing -o", args: []string{"-seed", "2"}, wantErr: "-o is required"},
		{name: "extra argument", args: []string{"-o", "m.gguf", "extra"}, wantErr: `unexpected arguments ["extra"]`},
		{name: "bad seed", args: []string{"-o", "m.gguf", "-seed", "-1"}, wantErr: `invalid value "-1" for flag -seed: parse error`},
		{name: "invalid model", args: []string{"-o", "m.gguf", "-vocab", "100"}, wantErr: "gguf: options: Vocab 100 below the minimum 512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseFlags() = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(): %v", err)
			}
			if cfg.out != "m.gguf" || cfg.opts != tt.want {
				t.Errorf("parseFlags() = %q %+v, want m.gguf %+v", cfg.out, cfg.opts, tt.want)
			}
		})
	}
}

func TestRunWritesReadableModel(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.gguf")
	cfg := config{out: out, opts: gguf.Options{Seed: 3, Dim: 64, Layers: 1, Heads: 4, KVHeads: 2, FFN: 64, Vocab: 512}}
	var stderr strings.Builder
	if err := run(context.Background(), cfg, &stderr); err != nil {
		t.Fatalf("run: %v", err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want -rw-r--r--", st.Mode().Perm())
	}
	g, err := gguf.Read(f)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if err := g.Validate(st.Size()); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if arch, _ := g.Get("general.architecture"); arch != "llama" {
		t.Errorf("architecture %v, want llama", arch)
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("wrote %s", out)) {
		t.Errorf("stderr %q does not report the file", stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the output directory, want only the model", len(entries))
	}
}

func TestRunCancelledLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, config{out: filepath.Join(dir, "m.gguf"), opts: gguf.Options{Vocab: 512, Dim: 64, Heads: 4, KVHeads: 2, Layers: 1, FFN: 64}}, io.Discard)
	if err == nil {
		t.Fatal("run with a cancelled context succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %d files behind", len(entries))
	}
}
