package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/workload"
)

// A dataset whose rows carry tools or a response format cannot be sent to
// the completions endpoint: Prepare and the dry run's preview refuse it,
// naming --api and the line, before anything runs; chat takes it, and so
// does completions when no row has them.
func TestDatasetExtraNeedsChat(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.jsonl", `{"messages": [{"role": "user", "content": "hello"}]}`+"\n")
	tools := write("tools.jsonl", `{"messages": [{"role": "user", "content": "hello"}]}`+"\n"+
		`{"messages": [{"role": "user", "content": "weather?"}], "tools": [{"type": "function", "function": {"name": "w"}}]}`+"\n")
	opts := func(path, api string) Options {
		o := quietOptions()
		o.Dataset, o.DatasetFormat, o.API = path, workload.FormatOpenAIJSONL, api
		return o
	}
	o := opts(tools, "completions")
	_, err := PrepareWith(context.Background(), o, true, Setup{})
	var ce *ConfigError
	var fe *field.Error
	if !errors.As(err, &ce) || !errors.As(err, &fe) || fe.Field != "api" || !strings.Contains(err.Error(), "--dataset") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("completions with a tools row: %v", err)
	}
	if _, _, err := o.WorkloadPreview(); !errors.As(err, &fe) || fe.Field != "api" {
		t.Fatalf("dry-run preview: %v", err)
	}
	for _, o := range []Options{opts(tools, "chat"), opts(plain, "completions")} {
		env, err := PrepareWith(context.Background(), o, true, Setup{})
		if err != nil {
			t.Fatalf("%s with %s: %v", o.API, filepath.Base(o.Dataset), err)
		}
		env.Close()
	}
}
