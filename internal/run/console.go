package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// ConsoleLogger is a logger that writes warnings and errors to w in the
// console's own format — "WARNING: engine metrics: scrape failed; samples
// will have a gap (reason: connection refused)", like every other line a
// command prints — instead of slog's key=value lines; it drops the levels
// below. cmd/surge gives it to commands without a console of their own
// (check, coldstart); a run with a console routes the Env's warnings there
// (PrepareWith).
func ConsoleLogger(w io.Writer) *slog.Logger {
	return slog.New(&consoleHandler{w: w, mu: &sync.Mutex{}, next: slog.DiscardHandler})
}

// consoleHandler writes records at Warn and above to w as console lines
// and passes the others to next.
type consoleHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	next  slog.Handler
	attrs []slog.Attr // the handler's own, with group prefixes applied
	group string      // "a.b." for attributes added from now on
}

// Enabled is true for warnings and errors, next's otherwise.
func (h *consoleHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

// Handle writes r as one console line (a warning or an error) or passes
// it to next.
func (h *consoleHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		if !h.next.Enabled(ctx, r.Level) {
			return nil
		}
		return h.next.Handle(ctx, r)
	}
	attrs := h.attrs
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs[:len(attrs):len(attrs)], h.prefixed(a))
		return true
	})
	line := consoleLine(r.Level, r.Message, attrs)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line+"\n")
	return err
}

// consoleLine is "WARNING: msg (k: v; k2: v2)", or "ERROR: …" above Warn.
func consoleLine(l slog.Level, msg string, attrs []slog.Attr) string {
	word := "WARNING: "
	if l >= slog.LevelError {
		word = "ERROR: "
	}
	if len(attrs) == 0 {
		return word + msg
	}
	parts := make([]string, 0, len(attrs))
	for _, a := range attrs {
		parts = append(parts, fmt.Sprintf("%s: %s", a.Key, a.Value.Resolve()))
	}
	return word + msg + " (" + strings.Join(parts, "; ") + ")"
}

func (h *consoleHandler) prefixed(a slog.Attr) slog.Attr {
	if h.group != "" {
		a.Key = h.group + a.Key
	}
	return a
}

// WithAttrs adds attributes to every line from now on (and to next).
func (h *consoleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, h.prefixed(a))
	}
	return &c
}

// WithGroup prefixes the attributes added from now on with name.
func (h *consoleHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	c.group = h.group + name + "."
	return &c
}
