package openai

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Response headers that carry numbers surge keeps (docs/metrics.md). Only
// numbers are kept: never a header's text.
const (
	hdrLimitRequests     = "X-Ratelimit-Limit-Requests"
	hdrLimitTokens       = "X-Ratelimit-Limit-Tokens"
	hdrRemainingRequests = "X-Ratelimit-Remaining-Requests"
	hdrRemainingTokens   = "X-Ratelimit-Remaining-Tokens"
	hdrResetRequests     = "X-Ratelimit-Reset-Requests"
	hdrResetTokens       = "X-Ratelimit-Reset-Tokens"
	hdrServerTiming      = "Server-Timing"
)

// tokenHeaders are the minute's token-bucket headers (limit, remaining,
// reset) in the order tried: OpenAI's plain names, then DigitalOcean's
// -tokens-per-minute. dayHeaders are DigitalOcean's -tokens-per-day.
var (
	tokenHeaders = [...][3]string{
		{hdrLimitTokens, hdrRemainingTokens, hdrResetTokens},
		{hdrLimitTokens + "-Per-Minute", hdrRemainingTokens + "-Per-Minute", hdrResetTokens + "-Per-Minute"},
	}
	dayHeaders = [3]string{hdrLimitTokens + "-Per-Day", hdrRemainingTokens + "-Per-Day", hdrResetTokens + "-Per-Day"}
)

// unixReset is the smallest reset value read as a Unix time in seconds
// rather than a delay (2001-09-09): no bucket resets 31 years from now.
const unixReset = 1e9

// parseRateLimit reads the x-ratelimit-* headers of h; now converts a reset
// given as a Unix time into a delay. A header that is absent leaves its
// field at record.None; one that is present but not a number surge reads
// (garbage, negative, a unit it does not know) does too, and is counted
// in Unparsed. It allocates nothing when the headers are absent.
func parseRateLimit(h http.Header, now time.Time) record.RateLimit {
	l := record.NoRateLimit
	if len(h) == 0 {
		return l
	}
	bad := &l.Unparsed
	l.LimitRequests = headerCount(h, hdrLimitRequests, bad)
	l.RemainingRequests = headerCount(h, hdrRemainingRequests, bad)
	l.ResetRequestsNs = headerReset(h, hdrResetRequests, now, bad)
	for _, k := range tokenHeaders {
		if !anyHeader(h, k[:]) {
			continue
		}
		l.LimitTokens = headerCount(h, k[0], bad)
		l.RemainingTokens = headerCount(h, k[1], bad)
		l.ResetTokensNs = headerReset(h, k[2], now, bad)
		break // the first naming that is there: never mix two windows
	}
	l.LimitTokensDay = headerCount(h, dayHeaders[0], bad)
	l.RemainingTokensDay = headerCount(h, dayHeaders[1], bad)
	l.ResetTokensDayNs = headerReset(h, dayHeaders[2], now, bad)
	return l
}

// anyHeader reports whether h has any of keys.
func anyHeader(h http.Header, keys []string) bool {
	for _, k := range keys {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// headerCount reads a count; a value that is not a whole number ≥ 0 is
// counted in *bad.
func headerCount(h http.Header, key string, bad *int) int64 {
	v := h[key]
	if len(v) == 0 {
		return record.None
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
	if err != nil || n < 0 {
		*bad++
		return record.None
	}
	return n
}

// headerReset parses a reset: an OpenAI duration ("1s", "6m0s", "20ms",
// "1h2m3.5s"), plain seconds ("5", "0.5"), or a Unix time in seconds; a
// value beyond maxRetryAfter is capped there. Anything else is counted in
// *bad.
func headerReset(h http.Header, key string, now time.Time, bad *int) int64 {
	v := h[key]
	if len(v) == 0 {
		return record.None
	}
	s := strings.TrimSpace(v[0])
	if isDecimal(s) && s != "" && s != "." {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil {
			*bad++
			return record.None
		}
		if secs >= unixReset {
			// A Unix time (beyond 2255 read as 2255, where nanoseconds
			// still fit an int64), as a delay from now.
			at := time.Unix(0, 0).Add(time.Duration(min(secs, 9e9) * 1e9))
			return int64(min(max(at.Sub(now), 0), maxRetryAfter))
		}
		return int64(min(secs, maxRetryAfter.Seconds()) * 1e9)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		*bad++
		return record.None
	}
	return int64(min(d, maxRetryAfter))
}

// isDecimal reports whether s is digits with at most one '.'.
func isDecimal(s string) bool {
	dot := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.' && !dot:
			dot = true
		case c < '0' || c > '9':
			return false
		}
	}
	return true
}

// maxServerTimings bounds the Server-Timing entries kept per response.
const maxServerTimings = 16

// parseServerTiming appends to dst the metrics of the W3C Server-Timing
// headers in h that have a "dur" (milliseconds): "queue;dur=12.5,
// upstream;dur=8;desc=\"x\"". A name that is not a short token of
// [A-Za-z0-9_.-] (at most 64 bytes) or that holds or is part of the API key
// drops the metric; "desc" and other parameters are ignored, never kept. At
// most maxServerTimings metrics are kept. A single prompt word may be a
// name (a stage called "queue"): prose cannot be, it holds spaces.
func (c *Client) parseServerTiming(dst []record.Timing, h http.Header) []record.Timing {
	for _, v := range h[hdrServerTiming] {
		for v != "" && len(dst) < maxServerTimings {
			var metric string
			metric, v = nextMetric(v)
			name, params, _ := strings.Cut(metric, ";")
			name = strings.TrimSpace(name)
			dur, ok := durParam(params)
			if !ok || name == "" {
				continue
			}
			if name = c.token(name, "", maxTokenLen, "_.-"); name == "" {
				continue
			}
			dst = append(dst, record.Timing{Name: name, DurNs: dur})
		}
	}
	return dst
}

// nextMetric splits v at the first comma outside a quoted string.
func nextMetric(v string) (metric, rest string) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			if quoted {
				i++
			}
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				return v[:i], v[i+1:]
			}
		}
	}
	return v, ""
}

// durParam finds "dur=<ms>" among ';'-separated parameters and returns it
// in nanoseconds (the first dur wins, as the W3C specification says).
func durParam(params string) (int64, bool) {
	for params != "" {
		var p string
		p, params, _ = cutUnquoted(params, ';')
		k, val, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "dur") {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"`)
		ms, err := strconv.ParseFloat(val, 64)
		if err != nil || ms < 0 || ms > float64(time.Hour/time.Millisecond) {
			return 0, false
		}
		return int64(ms*1e6 + 0.5), true
	}
	return 0, false
}

// cutUnquoted is strings.Cut at the first sep outside a quoted string.
func cutUnquoted(s string, sep byte) (before, after string, found bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if quoted {
				i++
			}
		case '"':
			quoted = !quoted
		case sep:
			if !quoted {
				return s[:i], s[i+1:], true
			}
		}
	}
	return s, "", false
}
