// Command surge-tinymodel writes a tiny random-weight llama model as a GGUF
// file that Ollama and llama.cpp load, for testing surge against a real
// inference engine (see scripts/ollama-e2e.sh and package internal/gguf).
//
//	go run ./cmd/surge-tinymodel -o model.gguf [-seed N]
//
// The same flags give the same bytes on every machine. The file is written
// to a temporary name next to -o and renamed into place when complete.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/surge-bench/surge/internal/gguf"
)

// config is the parsed command line.
type config struct {
	out  string
	opts gguf.Options
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "surge-tinymodel:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "surge-tinymodel:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("surge-tinymodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.out, "o", "", "output GGUF file (required)")
	fs.Uint64Var(&cfg.opts.Seed, "seed", 1, "seed for the weights and word list")
	fs.IntVar(&cfg.opts.Dim, "dim", gguf.DefaultDim, "embedding dimension")
	fs.IntVar(&cfg.opts.Layers, "layers", gguf.DefaultLayers, "transformer blocks")
	fs.IntVar(&cfg.opts.Heads, "heads", gguf.DefaultHeads, "attention heads")
	fs.IntVar(&cfg.opts.KVHeads, "kv-heads", gguf.DefaultKVHeads, "key/value heads")
	fs.IntVar(&cfg.opts.FFN, "ffn", gguf.DefaultFFN, "feed-forward width")
	fs.IntVar(&cfg.opts.Vocab, "vocab", gguf.DefaultVocab, "vocabulary size")
	fs.IntVar(&cfg.opts.ContextLength, "ctx", gguf.DefaultContextLength, "training context length (metadata)")
	fs.StringVar(&cfg.opts.Name, "name", gguf.DefaultName, "general.name")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.out == "" {
		return cfg, errors.New("-o is required")
	}
	return cfg, cfg.opts.Validate()
}

func run(ctx context.Context, cfg config, stderr io.Writer) (err error) {
	start := time.Now()
	m, err := gguf.NewModel(cfg.opts)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(cfg.out), filepath.Base(cfg.out)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if _, err = m.WriteTo(ctxWriter{ctx, f}); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), cfg.out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "surge-tinymodel: wrote %s: %.1fM parameters, %.1f MB, seed %d, %s\n",
		cfg.out, float64(m.Params())/1e6, float64(m.Size())/1e6, cfg.opts.Seed, time.Since(start).Round(time.Millisecond))
	return nil
}

// ctxWriter stops writing once ctx is done (Ctrl-C).
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
