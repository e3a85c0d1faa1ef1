package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/surge-bench/surge/internal/field"
)

// Quirks make the HTTP facade misbehave the way real endpoints and the
// proxies in front of them do, so that `surge check` can be tested both
// ways: every check passes on the plain simulator and fails on its quirk.
// The engine model itself ignores them, and run.Check refuses them in
// virtual time (--simulate), which never reaches the facade.
const (
	// QuirkBufferedStream holds every chunk of a stream and sends them all
	// at the end, as a buffering proxy does (the headers go at once).
	QuirkBufferedStream = "buffered-stream"
	// QuirkNoUsage never sends usage: no usage chunk when
	// stream_options.include_usage asks for it, no usage in a body.
	QuirkNoUsage = "no-usage"
	// QuirkIgnoreStop ignores the request's stop strings.
	QuirkIgnoreStop = "ignore-stop"
	// QuirkIgnoreMaxTokens generates past max_tokens: max(2×max_tokens,
	// max_tokens+8) tokens within the context, finish "length"; a request
	// without max_tokens is unchanged.
	QuirkIgnoreMaxTokens = "ignore-max-tokens"
	// QuirkBadToolArgs sends tool-call arguments that do not assemble into
	// valid JSON: their closing brace never comes.
	QuirkBadToolArgs = "bad-tool-args"
	// QuirkSchemaViolations answers response_format json_schema with JSON
	// that violates the schema at its root: the first required property
	// missing, else a wrong type or a value outside the enum.
	QuirkSchemaViolations = "schema-violations"
	// QuirkNoRetryAfter rejects overload (429) without a Retry-After header.
	QuirkNoRetryAfter = "no-retry-after"
	// QuirkTruncateOnOverload cuts a stream short (no finish, no [DONE])
	// when it queued (waited more than 4 engine steps, 4 × step_base,
	// before it entered a running batch): after 3 tokens the connection is
	// closed.
	QuirkTruncateOnOverload = "truncate-on-overload"
	// QuirkCloseAfterResponse advertises keep-alive (no Connection: close)
	// but closes the connection once every response went out whole.
	QuirkCloseAfterResponse = "close-after-response"
)

// QuirkNames lists every quirk, in the order of the documentation.
func QuirkNames() []string {
	return []string{
		QuirkBufferedStream, QuirkNoUsage, QuirkIgnoreStop, QuirkIgnoreMaxTokens,
		QuirkBadToolArgs, QuirkSchemaViolations, QuirkNoRetryAfter,
		QuirkTruncateOnOverload, QuirkCloseAfterResponse,
	}
}

// HasQuirk reports whether the quirk name is on.
func (c Config) HasQuirk(name string) bool { return slices.Contains(c.Quirks, name) }

// checkQuirks names the first unknown quirk.
func (c Config) checkQuirks() error {
	for _, q := range c.Quirks {
		if !slices.Contains(QuirkNames(), q) {
			return fmt.Errorf("sim: %w", &field.Error{Field: "quirks",
				Message: fmt.Sprintf("unknown quirk %q; known: %s", q, strings.Join(QuirkNames(), ", "))})
		}
	}
	return nil
}
