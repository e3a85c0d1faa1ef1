package coldstart

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// Defaults of Config.
const (
	DefaultRepeat        = 3                      // cycles with a start command or an idle wait
	DefaultStartTimeout  = 10 * time.Minute       // t0 → first token, at most
	DefaultStopGrace     = 10 * time.Second       // SIGTERM → SIGKILL
	DefaultPortClose     = 30 * time.Second       // stopped → port closed, at most
	DefaultPoll          = 50 * time.Millisecond  // between connection attempts and failed probes
	DefaultWarmWindow    = 5                      // K: consecutive TTFTs of the warm rule
	DefaultWarmTolerance = 0.25                   // X: each within 25% of their median…
	WarmFloor            = 5 * time.Millisecond   // …or within 5 ms of it
	DefaultWarmMax       = 50                     // requests after the first success before "not steady"
	DefaultMaxTokens     = 8                      // tokens of each probe
	probeConnectTimeout  = 500 * time.Millisecond // one TCP connection attempt
)

// Config configures a cold-start measurement. The zero value of a field
// means its default (Repeat: see Cycles).
type Config struct {
	// Target is the base URL of the API, including /v1; its host:port is
	// the one a started server must open.
	Target string `yaml:"target"`
	// StartCmd is the command that starts the server, run with sh -c in
	// its own process group; "" measures a scale-from-zero endpoint.
	StartCmd string `yaml:"start_cmd"`
	// Repeat is the number of cycles (0 = DefaultRepeat with a start
	// command or an idle wait, else 1).
	Repeat int `yaml:"repeat"`
	// Idle is the wait between cycles of a scale-from-zero endpoint, long
	// enough for it to scale back to zero (needed for Repeat > 1).
	Idle time.Duration `yaml:"idle"`
	// StartTimeout bounds t0 → first token of one cycle.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// StopGrace is how long the process group has after SIGTERM before
	// SIGKILL.
	StopGrace time.Duration `yaml:"stop_grace"`
	// Poll is the interval between connection attempts and between failed
	// probe requests.
	Poll time.Duration `yaml:"poll"`
	// WarmWindow is K of the warm rule.
	WarmWindow int `yaml:"warm_window"`
	// WarmTolerance is X of the warm rule, a fraction (0.25 = 25%).
	WarmTolerance float64 `yaml:"warm_tolerance"`
	// WarmMax is the most requests sent after the first success while
	// waiting for a steady window.
	WarmMax int `yaml:"warm_max"`
	// MaxTokens is max_tokens of each probe request.
	MaxTokens int `yaml:"max_tokens"`

	// Log receives the started server's stdout and stderr (and one line
	// from surge per cycle); LogPath is its path, for messages. Needed
	// with StartCmd.
	Log     *os.File `yaml:"-"`
	LogPath string   `yaml:"-"`
}

// DefaultConfig returns the defaults, without target or command.
func DefaultConfig() Config {
	return Config{
		StartTimeout: DefaultStartTimeout, StopGrace: DefaultStopGrace, Poll: DefaultPoll,
		WarmWindow: DefaultWarmWindow, WarmTolerance: DefaultWarmTolerance, WarmMax: DefaultWarmMax,
		MaxTokens: DefaultMaxTokens,
	}
}

// Cycles is the number of cycles Repeat gives.
func (c *Config) Cycles() int {
	switch {
	case c.Repeat > 0:
		return c.Repeat
	case c.StartCmd != "" || c.Idle > 0:
		return DefaultRepeat
	}
	return 1
}

// Mode names the mode: "start-cmd" or "scale-from-zero".
func (c *Config) Mode() string {
	if c.StartCmd != "" {
		return ModeStartCmd
	}
	return ModeScaleFromZero
}

// The modes.
const (
	ModeStartCmd      = "start-cmd"
	ModeScaleFromZero = "scale-from-zero"
)

// hostPort is the address a started server must open: the target's host
// and port (80 or 443 by scheme when it names none).
func (c *Config) hostPort() (string, error) {
	u, err := url.Parse(c.Target)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("must be an http:// or https:// URL, got %q", c.Target)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// ErrConfig is matched by every error of Validate.
var ErrConfig = errors.New("coldstart: configuration")

// Validate checks the fields and returns the first problem as a
// *field.Error named by YAML key (wrapped with ErrConfig).
func (c *Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%w: %w", ErrConfig, &field.Error{Field: key, Message: fmt.Sprintf(format, a...)})
	}
	switch {
	case c.StartCmd != "" && c.Target == "":
		return bad("target", "--start-cmd needs the URL the started server will serve, e.g. --target http://127.0.0.1:8000/v1")
	case c.Repeat < 0:
		return bad("repeat", "must be ≥ 1 (0 = default), got %d", c.Repeat)
	case c.Idle < 0:
		return bad("idle", "must be ≥ 0, got %v", c.Idle)
	case c.StartCmd != "" && c.Idle > 0:
		return bad("idle", "is for a scale-from-zero endpoint; with --start-cmd the server is stopped between cycles")
	case c.StartCmd == "" && c.Repeat > 1 && c.Idle == 0:
		return bad("repeat", "%d cycles of a scale-from-zero endpoint need --idle: how long it takes to scale back to zero between them (e.g. --idle 10m)", c.Repeat)
	case c.StartTimeout <= 0:
		return bad("start_timeout", "must be > 0, got %v", c.StartTimeout)
	case c.StopGrace <= 0:
		return bad("stop_grace", "must be > 0, got %v", c.StopGrace)
	case c.Poll <= 0 || c.Poll > time.Minute:
		return bad("poll", "must be in (0, 1m], got %v", c.Poll)
	case c.WarmWindow < 2:
		return bad("warm_window", "must be ≥ 2 requests, got %d", c.WarmWindow)
	case !(c.WarmTolerance > 0 && c.WarmTolerance <= 10):
		return bad("warm_tolerance", "must be a fraction in (0, 10], e.g. 0.25 for 25%%, got %v", c.WarmTolerance)
	case c.WarmMax < c.WarmWindow:
		return bad("warm_max", "must be ≥ warm_window (%d), got %d", c.WarmWindow, c.WarmMax)
	case c.MaxTokens < 1:
		return bad("max_tokens", "must be ≥ 1, got %d", c.MaxTokens)
	}
	if c.StartCmd != "" {
		if _, err := c.hostPort(); err != nil {
			return bad("target", "%v", err)
		}
	}
	return nil
}
