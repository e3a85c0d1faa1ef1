package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// The APIs the client can call.
const (
	APIChat        = "chat"        // POST {BaseURL}/chat/completions with one user message
	APICompletions = "completions" // POST {BaseURL}/completions with a prompt
	APIResponses   = "responses"   // POST {BaseURL}/responses (OpenAI's Responses API) with the input
	APIMessages    = "messages"    // POST {BaseURL}/messages (Anthropic's Messages API)
	APIEmbeddings  = "embeddings"  // POST {BaseURL}/embeddings with the request's inputs; never streamed
	APIRerank      = "rerank"      // POST {BaseURL}/rerank with a query and its documents; never streamed
)

// APIs lists the APIs the client speaks, in the order help names them.
var APIs = []string{APIChat, APICompletions, APIResponses, APIMessages, APIEmbeddings, APIRerank}

// Generates reports whether api generates tokens (and may stream them);
// embeddings and rerank only read their inputs: one prefill, one JSON
// answer.
func Generates(api string) bool { return api != APIEmbeddings && api != APIRerank }

// Conversational reports whether api sends chat messages, which the
// server renders with the model's chat template (chat, Responses,
// Messages), rather than a raw prompt (completions).
func Conversational(api string) bool {
	return api == "" || api == APIChat || api == APIResponses || api == APIMessages
}

// AnthropicVersion is the anthropic-version header sent with the Messages
// API unless Config.Headers sets one.
const AnthropicVersion = "2023-06-01"

// apiPath is the path under the base URL that api is served at.
func apiPath(api string) string {
	switch api {
	case APICompletions:
		return "/completions"
	case APIResponses:
		return "/responses"
	case APIMessages:
		return "/messages"
	case APIEmbeddings:
		return "/embeddings"
	case APIRerank:
		return "/rerank"
	}
	return "/chat/completions"
}

// Endpoint is the URL path the client posts to for api under baseURL
// (e.g. "/v1/messages"), for messages that name what a target lacks.
func Endpoint(baseURL, api string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return apiPath(api)
	}
	return strings.TrimRight(u.Path, "/") + apiPath(api)
}

// The HTTP client transports (Config.Transport).
const (
	TransportAuto  = "auto"  // surge's own for http:// without a proxy, net/http otherwise
	TransportSurge = "surge" // surge's own HTTP/1.1 transport, http and https (no proxy)
	TransportGo    = "go"    // net/http's (HTTP/2 over https, proxies)
)

// Defaults applied by New to zero fields, and by DefaultConfig.
const (
	DefaultTimeout      = 60 * time.Second // per request, the whole exchange including retries
	DefaultMaxConns     = 256              // connections per host; size it to the in-flight cap
	DefaultRetryMaxWait = 10 * time.Second // longest wait before a retry
	DefaultAPIKeyEnv    = "OPENAI_API_KEY" // environment variable LoadAPIKey reads by default
	MaxRetries          = 10               // upper bound for Config.Retries
	MaxLineBytes        = 1 << 20          // longest SSE line accepted; longer is a stream_error
	maxErrorBodyBytes   = 4 << 10          // error bodies are read this far for an error type
	maxDrainBytes       = 64 << 10         // bytes read after [DONE] or an error to reuse the connection
	maxFullBodyBytes    = 16 << 20         // longest non-streamed response body
	lineBufferBytes     = 1 << 10          // a stream's line buffer; longer lines spill (see exchange)
	spillKeepBytes      = 16 << 10         // a pooled exchange keeps a spill buffer up to this size
	writeBufferBytes    = 1 << 10          // a connection's write buffer (the request head; see newTransport)
	readBufferBytes     = 2 << 10          // a connection's read buffer (see newTransport)
	dialTimeout         = 10 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
)

// Config configures a Client. Start from DefaultConfig: a zero Stream or
// IncludeUsage means false. New fills zero Timeout, MaxConns, RetryMaxWait
// and API with their defaults. Never log a Config with %#v of its fields by
// hand: String and GoString redact the key and header values.
type Config struct {
	BaseURL            string            // base URL including /v1, e.g. http://127.0.0.1:8000/v1
	Model              string            // model name sent in every request
	API                string            // APIChat (default), APICompletions, APIResponses or APIMessages
	Stream             bool              // stream the response (SSE); DefaultConfig sets it
	IncludeUsage       bool              // send stream_options.include_usage; DefaultConfig sets it
	APIKey             string            `json:"-" yaml:"-"` // sent as "Authorization: Bearer <key>" (Messages: also "x-api-key"); held in memory only
	Headers            map[string]string // extra request headers; values are never logged
	Timeout            time.Duration     // per request, the whole exchange including retries
	MaxConns           int               // connections per host (idle and active)
	CACertFile         string            // PEM file with extra root CAs for private endpoints
	InsecureSkipVerify bool              // skip TLS certificate verification
	Retries            int               // retries after a retryable failure; 0 = off
	RetryMaxWait       time.Duration     // longest wait before a retry; a longer Retry-After ends retrying
	ExtraBody          map[string]any    // extra members of the request JSON (e.g. ignore_eos)
	ReplicaHeader      string            // response header naming the replica (or pod) that answered; "" = ReplicaHeader
	Transport          string            // TransportAuto ("" too), TransportSurge or TransportGo (doc.go, "Transport")
	// GatewayTiming is how a gateway in front of the engine announces its
	// own wait and the upstream's time (ParseGatewayTiming; "" = auto).
	GatewayTiming string
	// TokenBudget is the per-token budget of smooth goodput: the client
	// keeps, per stream, the latest of chunk i's time − (i − 1) × it
	// (record.SmoothNs), one multiply and compare per chunk; 0 = off.
	TokenBudget time.Duration
	// TracePrefix is the first half of every trace id sent in traceparent
	// (see TraceID); zero means random, chosen by New.
	TracePrefix [8]byte `json:"-" yaml:"-"`
	// Dial, when set, replaces the network dialer: tests dial in-memory
	// pipes so that a whole run executes under testing/synctest.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error) `json:"-" yaml:"-"`
}

// DefaultConfig returns the defaults: chat API, streaming with usage,
// DefaultTimeout, DefaultMaxConns, no retries. BaseURL and Model are unset.
func DefaultConfig() Config {
	return Config{
		API:          APIChat,
		Stream:       true,
		IncludeUsage: true,
		Timeout:      DefaultTimeout,
		MaxConns:     DefaultMaxConns,
		RetryMaxWait: DefaultRetryMaxWait,
	}
}

// withDefaults fills zero durations, counts and the API with defaults.
func (c Config) withDefaults() Config {
	if c.API == "" {
		c.API = APIChat
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.RetryMaxWait == 0 {
		c.RetryMaxWait = DefaultRetryMaxWait
	}
	c.ReplicaHeader = http.CanonicalHeaderKey(cmp.Or(c.ReplicaHeader, ReplicaHeader))
	return c
}

// headers the client sets itself; Config.Headers may not replace them.
var reservedHeaders = []string{"Content-Length", "Content-Type", "Transfer-Encoding", "Host", "Connection", "Accept-Encoding", TraceparentHeader, RequestIDHeader}

// Validate checks the configuration. Its errors name fields, never secret
// values (the API key, header values).
func (c Config) Validate() error {
	if c.BaseURL == "" {
		return errors.New("openai: config: base URL is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return errors.New("openai: config: base URL does not parse") // the parse error quotes the URL
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("openai: config: base URL scheme must be http or https, not %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("openai: config: base URL has no host")
	}
	if u.User != nil {
		return errors.New("openai: config: base URL must not hold credentials; use the API key")
	}
	if u.Fragment != "" {
		return errors.New("openai: config: base URL must not have a fragment")
	}
	if c.Model == "" {
		return errors.New("openai: config: model is required")
	}
	if c.API != "" && !slices.Contains(APIs, c.API) {
		return fmt.Errorf("openai: config: api must be one of %s, not %q", strings.Join(APIs, ", "), c.API)
	}
	if _, err := ParseGatewayTiming(c.GatewayTiming); err != nil {
		return fmt.Errorf("openai: config: %w", err)
	}
	if c.Transport != "" && c.Transport != TransportAuto && c.Transport != TransportSurge && c.Transport != TransportGo {
		return fmt.Errorf("openai: config: transport must be %q, %q or %q, not %q", TransportAuto, TransportSurge, TransportGo, c.Transport)
	}
	if c.Timeout < 0 {
		return errors.New("openai: config: timeout must not be negative")
	}
	if c.MaxConns < 0 {
		return errors.New("openai: config: max conns must not be negative")
	}
	if c.Retries < 0 || c.Retries > MaxRetries {
		return fmt.Errorf("openai: config: retries must be between 0 and %d", MaxRetries)
	}
	if c.RetryMaxWait < 0 {
		return errors.New("openai: config: retry max wait must not be negative")
	}
	if strings.ContainsFunc(c.APIKey, isSpaceOrControl) {
		return errors.New("openai: config: api key contains whitespace or control characters")
	}
	for name, value := range c.Headers {
		if !validHeaderName(name) {
			return fmt.Errorf("openai: config: header name %q is not a valid token", name)
		}
		canon := http.CanonicalHeaderKey(name)
		if slices.Contains(reservedHeaders, canon) {
			return fmt.Errorf("openai: config: header %q is set by the client", canon)
		}
		if (canon == "Authorization" || canon == "X-Api-Key" && c.API == APIMessages) && c.APIKey != "" {
			return fmt.Errorf("openai: config: header %q conflicts with the api key", canon)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return fmt.Errorf("openai: config: header %q: value contains CR, LF or NUL", canon)
		}
	}
	if _, err := newBodyTemplate(&c); err != nil {
		return err
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7F }

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// Redacted returns a copy of c that is safe to log or store: the API key,
// every header value and query values in the base URL are replaced by
// "<redacted>", user info in the base URL by "redacted", an unparseable
// base URL entirely.
func (c Config) Redacted() Config {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			c.BaseURL = "<redacted>"
		} else {
			if u.User != nil {
				u.User = url.User("redacted")
			}
			if u.RawQuery != "" {
				q := u.Query()
				for k := range q {
					q[k] = []string{"<redacted>"}
				}
				u.RawQuery = q.Encode()
			}
			c.BaseURL = u.String()
		}
	}
	if c.APIKey != "" {
		c.APIKey = "<redacted>"
	}
	if c.Headers != nil {
		h := make(map[string]string, len(c.Headers))
		for k := range c.Headers {
			h[k] = "<redacted>"
		}
		c.Headers = h
	}
	return c
}

// String formats the redacted configuration (fmt's %v and %+v use it).
func (c Config) String() string {
	type plain Config // no methods: avoids recursion
	return fmt.Sprintf("%+v", plain(c.Redacted()))
}

// GoString formats the redacted configuration (fmt's %#v uses it).
func (c Config) GoString() string {
	type plain Config
	return fmt.Sprintf("%#v", plain(c.Redacted()))
}

// LoadAPIKey reads the API key from a file (when file is set; surrounding
// whitespace trimmed) or from the environment variable envName
// (DefaultAPIKeyEnv when empty). It returns the key and where it came from
// ("file", "env NAME" or "none" when the default variable is unset). A named
// variable that is unset, an empty file or a key with inner whitespace is an
// error. Errors never contain the key.
func LoadAPIKey(envName, file string) (key, source string, err error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", "", fmt.Errorf("openai: api key file: %w", err)
		}
		key = strings.TrimSpace(string(data))
		if key == "" {
			return "", "", fmt.Errorf("openai: api key file %s is empty", file)
		}
		if strings.ContainsFunc(key, isSpaceOrControl) {
			return "", "", fmt.Errorf("openai: api key file %s: key contains whitespace or control characters", file)
		}
		return key, "file", nil
	}
	name := envName
	if name == "" {
		name = DefaultAPIKeyEnv
	}
	key, ok := os.LookupEnv(name)
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		if envName == "" {
			return "", "none", nil
		}
		return "", "", fmt.Errorf("openai: api key: environment variable %s is not set or empty", name)
	}
	if strings.ContainsFunc(key, isSpaceOrControl) {
		return "", "", fmt.Errorf("openai: api key: environment variable %s contains whitespace or control characters", name)
	}
	return key, "env " + name, nil
}
