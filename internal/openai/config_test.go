package openai

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

func TestValidate(t *testing.T) {
	base := func() Config {
		c := DefaultConfig()
		c.BaseURL, c.Model = "http://127.0.0.1:8000/v1", "m"
		return c
	}
	good := []struct {
		name string
		mod  func(*Config)
	}{
		{"defaults", func(*Config) {}},
		{"zero values defaulted", func(c *Config) { c.API, c.Timeout, c.MaxConns, c.RetryMaxWait = "", 0, 0, 0 }},
		{"completions https with query", func(c *Config) {
			c.API, c.BaseURL = APICompletions, "https://example.com/openai/v1?api-version=2024-06-01"
		}},
		{"key, headers, extra body, retries", func(c *Config) {
			c.APIKey = "sk-abc"
			c.Headers = map[string]string{"X-Tenant": "a", "OpenAI-Organization": "org"}
			c.ExtraBody = map[string]any{"ignore_eos": true, "temperature": 0.0, "stream_options": map[string]any{"include_usage": false}}
			c.Retries = MaxRetries
		}},
		{"authorization header without key", func(c *Config) { c.Headers = map[string]string{"Authorization": "Basic x"} }},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mod(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
	bad := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no base URL", func(c *Config) { c.BaseURL = "" }, "openai: config: base URL is required"},
		{"unparseable URL", func(c *Config) { c.BaseURL = "http://a b\x7f" }, "openai: config: base URL does not parse"},
		{"ftp", func(c *Config) { c.BaseURL = "ftp://h/v1" }, `openai: config: base URL scheme must be http or https, not "ftp"`},
		{"no host", func(c *Config) { c.BaseURL = "http:///v1" }, "openai: config: base URL has no host"},
		{"credentials", func(c *Config) { c.BaseURL = "http://u:p@h/v1" }, "openai: config: base URL must not hold credentials; use the API key"},
		{"fragment", func(c *Config) { c.BaseURL = "http://h/v1#x" }, "openai: config: base URL must not have a fragment"},
		{"no model", func(c *Config) { c.Model = "" }, "openai: config: model is required"},
		{"bad api", func(c *Config) { c.API = "embedding" }, `openai: config: api must be one of chat, completions, responses, messages, embeddings, rerank, not "embedding"`},
		{"negative timeout", func(c *Config) { c.Timeout = -1 }, "openai: config: timeout must not be negative"},
		{"negative conns", func(c *Config) { c.MaxConns = -1 }, "openai: config: max conns must not be negative"},
		{"too many retries", func(c *Config) { c.Retries = MaxRetries + 1 }, "openai: config: retries must be between 0 and 10"},
		{"negative retries", func(c *Config) { c.Retries = -1 }, "openai: config: retries must be between 0 and 10"},
		{"negative retry wait", func(c *Config) { c.RetryMaxWait = -1 }, "openai: config: retry max wait must not be negative"},
		{"key with newline", func(c *Config) { c.APIKey = "sk\n" }, "openai: config: api key contains whitespace or control characters"},
		{"bad header name", func(c *Config) { c.Headers = map[string]string{"X Bad": "v"} }, `openai: config: header name "X Bad" is not a valid token`},
		{"reserved header", func(c *Config) { c.Headers = map[string]string{"content-length": "1"} }, `openai: config: header "Content-Length" is set by the client`},
		{"authorization and key", func(c *Config) { c.APIKey = "k"; c.Headers = map[string]string{"authorization": "x"} },
			`openai: config: header "Authorization" conflicts with the api key`},
		{"header value CRLF", func(c *Config) { c.Headers = map[string]string{"X-A": "v\r\nX-B: w"} }, `openai: config: header "X-A": value contains CR, LF or NUL`},
		{"extra body reserved", func(c *Config) { c.ExtraBody = map[string]any{"max_tokens": 5} }, `openai: extra body: member "max_tokens" is set by the client`},
		{"extra body unmarshalable", func(c *Config) { c.ExtraBody = map[string]any{"f": make(chan int)} },
			`openai: extra body: member "f": json: unsupported type: chan int`},
	}
	for _, tt := range bad {
		t.Run("sad/"+tt.name, func(t *testing.T) {
			c := base()
			tt.mod(&c)
			err := c.Validate()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
			if _, err := New(c, time.Now()); err == nil || err.Error() != tt.want {
				t.Fatalf("New = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewCACert(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, file, want string }{
		{"missing", filepath.Join(dir, "missing.pem"), "openai: ca cert: open " + filepath.Join(dir, "missing.pem") + ": no such file or directory"},
		{"not PEM", notPEM, "openai: ca cert: " + notPEM + " holds no PEM certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.BaseURL, c.Model, c.CACertFile = "https://127.0.0.1/v1", "m", tt.file
			if _, err := New(c, time.Now()); err == nil || err.Error() != tt.want {
				t.Fatalf("New = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestTLS: a private CA from a file works and negotiates HTTP/2; without
// it the certificate is rejected (conn_error); InsecureSkipVerify works.
func TestTLS(t *testing.T) {
	var proto int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto = r.ProtoMajor
		sseHandler(content("a"), done)(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the "untrusted" case makes it log a handshake error
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		mod     func(*Config)
		outcome record.Outcome
		errText string
		proto   int
	}{
		{"private CA", func(c *Config) { c.CACertFile = caFile }, record.OK, "", 2},
		{"insecure", func(c *Config) { c.InsecureSkipVerify = true }, record.OK, "", 2},
		{"untrusted", nil, record.ConnError, "tls certificate rejected", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proto = 0
			rec := run(context.Background(), newTestClient(t, srv.URL+"/v1", tt.mod), &testReq)
			if rec.Outcome != tt.outcome || rec.Error != tt.errText || proto != tt.proto {
				t.Fatalf("got %s %q proto %d, want %s %q %d", rec.Outcome, rec.Error, proto, tt.outcome, tt.errText, tt.proto)
			}
		})
	}
}

func TestLoadAPIKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyFile := write("key", "  sk-file\n")
	emptyFile := write("empty", "\n \n")
	t.Setenv("SURGE_TEST_KEY", " sk-env ")
	t.Setenv("SURGE_TEST_EMPTY", "")
	t.Setenv(DefaultAPIKeyEnv, "sk-default")
	tests := []struct {
		name, env, file     string
		unsetDefault        bool
		wantKey, wantSource string
		wantErr             string
	}{
		{name: "default env", wantKey: "sk-default", wantSource: "env OPENAI_API_KEY"},
		{name: "default env unset", unsetDefault: true, wantSource: "none"},
		{name: "named env", env: "SURGE_TEST_KEY", wantKey: "sk-env", wantSource: "env SURGE_TEST_KEY"},
		{name: "file wins", env: "SURGE_TEST_KEY", file: keyFile, wantKey: "sk-file", wantSource: "file"},
		{name: "sad/named env unset", env: "SURGE_TEST_NOPE", wantErr: "openai: api key: environment variable SURGE_TEST_NOPE is not set or empty"},
		{name: "sad/named env empty", env: "SURGE_TEST_EMPTY", wantErr: "openai: api key: environment variable SURGE_TEST_EMPTY is not set or empty"},
		{name: "sad/empty file", file: emptyFile, wantErr: "openai: api key file " + emptyFile + " is empty"},
		{name: "sad/missing file", file: filepath.Join(dir, "nope"), wantErr: "openai: api key file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.unsetDefault {
				t.Setenv(DefaultAPIKeyEnv, "")
				os.Unsetenv(DefaultAPIKeyEnv)
			}
			key, source, err := LoadAPIKey(tt.env, tt.file)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || key != "" {
					t.Fatalf("LoadAPIKey = %q, %v, want error %q", key, err, tt.wantErr)
				}
				return
			}
			if err != nil || key != tt.wantKey || source != tt.wantSource {
				t.Fatalf("LoadAPIKey = %q, %q, %v, want %q, %q", key, source, err, tt.wantKey, tt.wantSource)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	c := DefaultConfig()
	c.BaseURL = "https://u:secret-pass@h/v1?key=secret-query"
	c.APIKey = "secret-key"
	c.Headers = map[string]string{"X-Api-Key": "secret-header"}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret-key") {
		t.Errorf("JSON holds the key: %s", b)
	}
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, "secret") {
			t.Errorf("formatted config holds a secret: %s", s)
		}
	}
	r := c.Redacted()
	if r.APIKey != "<redacted>" || r.Headers["X-Api-Key"] != "<redacted>" || strings.Contains(r.BaseURL, "secret") || c.Headers["X-Api-Key"] != "secret-header" {
		t.Errorf("Redacted = %+v (original headers %v)", r, c.Headers)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7", 7 * time.Second, true},
		{" 0 ", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"99999999999", 24 * time.Hour, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1e3", 0, false},
		{"NaN", 0, false},
		{"soon", 0, false},
		{"1.2.3", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTokens(t *testing.T) {
	c := &Client{cfg: Config{APIKey: "sk-live-ABCDEF"}}
	prompt := "summarise the quarterly report"
	tests := []struct {
		in             string
		safe, errToken string
	}{
		{"r0", "r0", "r0"},
		{"replica-3", "replica-3", ""},
		{"rate_limit_exceeded", "rate_limit_exceeded", "rate_limit_exceeded"},
		{"503", "503", "503"},
		{"Internal Server Error", "", ""},
		{"sk-live-ABCDEF", "", ""},   // the key
		{"live", "", ""},             // part of the key
		{"xsk-live-ABCDEFx", "", ""}, // holds the key
		{"quarterly", "", ""},        // part of the prompt
		{"qua", "qua", "qua"},        // too short to matter
		{strings.Repeat("a", 41), strings.Repeat("a", 41), ""},
		{strings.Repeat("a", 65), "", ""},
		{"text/html", "text/html", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := c.safeToken(tt.in, prompt); got != tt.safe {
			t.Errorf("safeToken(%q) = %q, want %q", tt.in, got, tt.safe)
		}
		if got := c.errorToken(tt.in, prompt); got != tt.errToken {
			t.Errorf("errorToken(%q) = %q, want %q", tt.in, got, tt.errToken)
		}
	}
}
