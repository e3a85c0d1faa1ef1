package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/burst"
	"github.com/surge-bench/surge/internal/experiment/capacity"
	"github.com/surge-bench/surge/internal/experiment/exptest"
	"github.com/surge-bench/surge/internal/experiment/soak"
	"github.com/surge-bench/surge/internal/experiment/sweep"
	"github.com/surge-bench/surge/internal/run"
)

// Every experiment's configuration reaches the manifest without its
// options (recorded separately, redacted).
func TestExperimentConfigsRecordNoOptions(t *testing.T) {
	o := run.DefaultOptions()
	o.Headers = []string{"X-Key: header-canary-42"}
	o.Target = "https://user:pw-canary@h/v1"
	single, b, c, sw, sk := experiment.DefaultRunConfig(), burst.DefaultConfig(), capacity.DefaultConfig(), sweep.DefaultConfig(), soak.DefaultConfig()
	single.Options, b.Options, c.Options, sw.Options, sk.Options = o, o, o, o, o
	for name, v := range map[string]any{"run": &single, "burst": &b, "capacity": &c, "sweep": &sw, "soak": &sk} {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, canary := range []string{"header-canary-42", "pw-canary"} {
			if strings.Contains(string(j), canary) {
				t.Errorf("%s: %q recorded: %s", name, canary, j)
			}
		}
	}
}

// No API key, prompt text or response text appears in any file written or
// in the output, even when the server echoes the prompt in its errors.
func TestSecretsAndContentNeverWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	const key = "sk-canary-5f1e2d3c4b5a"
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			http.NotFound(w, r) // e.g. /metrics: no engine metrics here
			return
		}
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer "+key {
			t.Errorf("authorization header not sent")
		}
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		switch calls.Add(1) % 4 {
		case 0:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"message":"bad prompt: ` + strings.ReplaceAll(string(body), `"`, `'`) + `","type":"invalid_request_error"}}`))
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(body)
		case 2:
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"RESPONSE-CANARY " + key + "\"}}]}\n\n"))
			w.Write([]byte("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"RESPONSE-CANARY\"}}]}\n\ndata: {broken " + key))
		}
	}))
	defer srv.Close()
	t.Setenv("SURGE_TEST_KEY", key)
	c := experiment.DefaultRunConfig()
	c.Options.Target, c.Options.APIKeyEnv, c.Options.Quiet = srv.URL+"/v1", "SURGE_TEST_KEY", true
	c.Rate, c.Duration = 20, 2*time.Second
	c.Options.Headers = []string{"X-Custom: header-canary-99"}
	c.Options.MetricsURL = srv.URL + "/metrics"
	d := exptest.Dir(t)
	dir := d.Path()
	var out, logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env, err := run.Prepare(context.Background(), c.Options, false, &out, logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := experiment.Run(context.Background(), env, &c, d, &out); err != nil {
		t.Fatal(err)
	}
	if logs.Len() == 0 {
		t.Fatal("expected log lines (the metrics endpoint 404s), got none: the log check would be vacuous")
	}
	if calls.Load() < 20 {
		t.Fatalf("only %d calls", calls.Load())
	}
	canaries := []string{key, "header-canary-99", "RESPONSE-CANARY", "[req "}
	check := func(name, text string) {
		for _, c := range canaries {
			if strings.Contains(text, c) {
				t.Errorf("%s contains %q", name, c)
			}
		}
	}
	check("stdout", out.String())
	check("log", logs.String())
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		check(path, string(b))
		return nil
	})
}
