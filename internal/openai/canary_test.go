package openai

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/workload"
)

const (
	canaryKey    = "sk-canary-XYZ"
	canaryPrompt = "PROMPT-CANARY"
)

// TestCanary runs with a canary API key and prompt against a server that
// fails in every way and echoes both back wherever it can; neither may
// reach a record or an error.
func TestCanary(t *testing.T) {
	var (
		mu    sync.Mutex
		auths []string
	)
	echo := func(r *http.Request) string { // what a hostile server would echo
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		return r.Header.Get("Authorization") + " " + string(b)
	}
	q := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) }
	faults := map[string]http.HandlerFunc{
		"401 echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set(ReplicaHeader, canaryKey)
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"%s","type":"%s","code":"%s"}}`, q(e), canaryKey, canaryPrompt)
		},
		"429 echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Retry-After", canaryKey)
			w.Header().Set(ReplicaHeader, canaryPrompt)
			w.WriteHeader(429)
			fmt.Fprintf(w, `{"object":"error","message":"%s","type":"x-%s-y"}`, q(e), canaryPrompt)
		},
		"500 type part of key": func(w http.ResponseWriter, r *http.Request) {
			echo(r)
			w.WriteHeader(500)
			fmt.Fprint(w, `{"error":{"type":"canary"}}`)
		},
		"stream error echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, content("x"))
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"%s\",\"type\":\"%s\"}}\n\n", q(e), canaryKey)
		},
		"object error echo": func(w http.ResponseWriter, r *http.Request) {
			echo(r)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"object\":\"error\",\"type\":\"%s\"}\n\n", canaryPrompt)
		},
		"malformed echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[%s\n\n", e)
		},
		"not SSE echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			fmt.Fprintf(w, "%s\n", e)
		},
		"html echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<p>%s</p>", e)
		},
		"content type echo": func(w http.ResponseWriter, r *http.Request) {
			echo(r)
			w.Header().Set("Content-Type", "application/"+canaryKey+"+json")
			fmt.Fprint(w, "{}")
		},
		"content echo": func(w http.ResponseWriter, r *http.Request) {
			e := echo(r)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, content(q(q(e))))
			fmt.Fprint(w, done)
		},
		"garbage status line": hijack(func(_ net.Conn, rw *bufio.ReadWriter) {
			fmt.Fprintf(rw, "HTTP/1.1 %s %s\r\n\r\n", canaryKey, canaryPrompt)
			_ = rw.Flush()
		}),
		"stall": func(w http.ResponseWriter, r *http.Request) {
			echo(r)
			<-r.Context().Done()
		},
	}
	for name, h := range faults {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				srv := httptest.NewServer(h)
				defer srv.Close()
				c := newTestClient(t, srv.URL+"/v1", func(c *Config) {
					c.APIKey = canaryKey
					c.Stream = stream
					c.Timeout = 200 * time.Millisecond // for "stall"
				})
				req := workload.Request{Prompt: "Tell me about " + canaryPrompt + " please", MaxTokens: 16}
				rec := run(context.Background(), c, &req)
				line := string(rec.AppendJSON(nil))
				for _, secret := range []string{canaryKey, canaryPrompt, "Tell me"} {
					if strings.Contains(line, secret) {
						t.Errorf("record holds %q: %s", secret, line)
					}
				}
			})
		}
	}
	for _, a := range auths {
		if a != "Bearer "+canaryKey {
			t.Errorf("Authorization = %q, want Bearer <key>", a)
		}
	}
	if len(auths) == 0 {
		t.Error("the server saw no request")
	}
}

// TestCanaryErrors: configuration and key-loading errors, and formatted
// configs, never hold the key or header values.
func TestCanaryErrors(t *testing.T) {
	dir := t.TempDir()
	spaced := filepath.Join(dir, "spaced")
	if err := os.WriteFile(spaced, []byte(canaryKey+" "+canaryKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func() Config {
		c := DefaultConfig()
		c.BaseURL, c.Model = "http://127.0.0.1:1/v1", "m"
		return c
	}
	var texts []string
	for _, mod := range []func(*Config){
		func(c *Config) { c.APIKey = canaryKey + "\n" },
		func(c *Config) {
			c.APIKey = canaryKey
			c.Headers = map[string]string{"X-Secret": canaryKey + "\r\nInjected: 1"}
		},
		func(c *Config) {
			c.APIKey = canaryKey
			c.Headers = map[string]string{"Authorization": "Bearer " + canaryKey}
		},
		func(c *Config) { c.BaseURL = "http://user:" + canaryKey + "@127.0.0.1/v1" },
		func(c *Config) { c.BaseURL = "http://127.0.0.1/v1\x00" + canaryKey },
		func(c *Config) { c.APIKey = canaryKey; c.ExtraBody = map[string]any{"x": func() {}} },
		func(c *Config) { c.APIKey = canaryKey; c.CACertFile = spaced },
	} {
		cfg := base()
		mod(&cfg)
		_, err := New(cfg, time.Now())
		if err == nil {
			t.Errorf("New accepted a bad config")
			continue
		}
		texts = append(texts, err.Error())
		cfg.Headers = map[string]string{"X-Secret": canaryKey}
		texts = append(texts, cfg.String(), fmt.Sprintf("%v|%+v|%#v|%s", cfg, cfg, cfg, cfg))
	}
	t.Setenv("SURGE_TEST_CANARY_KEY", canaryKey+" "+canaryKey)
	for _, args := range [][2]string{{"SURGE_TEST_CANARY_KEY", ""}, {"", spaced}} {
		_, _, err := LoadAPIKey(args[0], args[1])
		if err == nil {
			t.Errorf("LoadAPIKey(%q, %q) accepted a key with inner whitespace", args[0], args[1])
			continue
		}
		texts = append(texts, err.Error())
	}
	for _, s := range texts {
		if strings.Contains(s, canaryKey) {
			t.Errorf("text holds the key: %s", s)
		}
	}
}
