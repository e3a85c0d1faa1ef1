package analyze

import "github.com/surge-bench/surge/internal/record"

// Fault names the cause of a request that did not succeed, from what the
// client saw — its outcome, HTTP status, the boundaries it reached and
// its headers — never from error text. The diagnosis names these causes
// before it offers a hypothesis about load (docs/metrics.md "Causes").
type Fault int

// The faults, in the order the diagnosis lists them.
const (
	FaultNone         Fault = iota // succeeded, or ended by surge (cancelled, dropped)
	FaultUnreachable               // no connection or no response at all: refused, DNS, TLS, reset before headers
	FaultNoResponse                // timed out before any response header: the server accepted and never answered
	FaultUnauthorized              // 401, 403: the key or its permissions
	FaultNotInference              // 404, 405, 501, or an answer that is not an OpenAI stream (not SSE, not JSON, no choices)
	FaultBadRequest                // another 4xx but 429: the server refused the request as invalid
	FaultProtocol                  // a stream cut or malformed after its headers, or one that ran past max_tokens until the timeout
	FaultQuota                     // 429 whose rate-limit headers say a bucket is short: throttled by a quota
	faultRejected                  // another 429: an admission limit (a full queue)
	faultUnavailable               // 503
	FaultServerError               // another 5xx
	faultTimeout                   // timed out after the response began: the request waited or decoded too long
	numFaults
)

// Faults lists every fault but FaultNone, in order.
var Faults = []Fault{FaultUnreachable, FaultNoResponse, FaultUnauthorized, FaultNotInference, FaultBadRequest, FaultProtocol,
	FaultQuota, faultRejected, faultUnavailable, FaultServerError, faultTimeout}

var faultNames = [numFaults]string{"", "unreachable", "no_response", "unauthorized", "not_inference", "bad_request", "protocol",
	"quota", "rejected", "unavailable", "server_error", "timeout"}

var faultTexts = [numFaults]string{"", "target unreachable", "no response", "not authorized", "not an inference endpoint",
	"request refused as invalid", "protocol violation", "throttled by a quota (429, a rate-limit bucket short)", "rejected by an admission limit (429)",
	"unavailable (503)", "server errors (5xx)", "timeouts after the response began"}

// String is the fault's stable name, e.g. "unreachable".
func (f Fault) String() string { return faultNames[f] }

// Text is the fault for people, e.g. "target unreachable".
func (f Fault) Text() string { return faultTexts[f] }

// MarshalText encodes the fault as its name.
func (f Fault) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// Load says whether the fault can be what load does to a working
// inference server — a wait past the timeout, an admission limit, a 503
// — rather than a target that cannot serve this request at any load. A
// timeout before any response header is both: some servers (llama.cpp)
// send headers only once a slot takes the request; it is a cause of its
// own only when nothing was answered at all.
func (f Fault) Load() bool {
	switch f {
	case faultRejected, faultUnavailable, faultTimeout, FaultNoResponse:
		return true
	}
	return false
}

// FaultOf classifies rec.
func FaultOf(r *record.Record) Fault {
	switch r.Outcome {
	case record.OK, record.Cancelled, record.GeneratorDrop:
		return FaultNone
	case record.ConnError:
		return FaultUnreachable
	case record.InvalidResponse:
		return FaultNotInference
	case record.StreamError:
		return FaultProtocol
	case record.RateLimited:
		if Throttled(&r.RateLimit) {
			return FaultQuota
		}
		return faultRejected // an admission limit, Retry-After or not
	case record.Timeout:
		switch {
		case r.HeadersNs == record.None:
			return FaultNoResponse
		case r.MaxTokens > 0 && IgnoredMaxTokens(max(r.OutputTokens, r.Chunks), r.MaxTokens):
			return FaultProtocol // an endless stream: more chunks than tokens allowed
		}
		return faultTimeout
	case record.HTTPError:
		switch s := r.Status; {
		case s == 401 || s == 403:
			return FaultUnauthorized
		case s == 404 || s == 405 || s == 501:
			return FaultNotInference
		case s == 503:
			return faultUnavailable
		case s >= 500:
			return FaultServerError
		case s >= 400:
			return FaultBadRequest
		}
		return FaultServerError
	}
	return FaultServerError // an unknown outcome: counted, never dropped
}

// Throttled reports whether a 429's rate-limit headers say a quota bucket
// was short (BucketShort). A 429 whose headers show room everywhere came
// from elsewhere: a full queue.
func Throttled(l *record.RateLimit) bool {
	return BucketShort(l.LimitRequests, l.RemainingRequests, l.ResetRequestsNs) ||
		BucketShort(l.LimitTokens, l.RemainingTokens, l.ResetTokensNs) ||
		BucketShort(l.LimitTokensDay, l.RemainingTokensDay, l.ResetTokensDayNs)
}

// BucketShort reports whether one bucket's headers say it was short:
// nothing remaining, or a reset ahead with less than a tenth of the limit
// remaining (or either unknown). DigitalOcean's reset is 0 while the
// bucket holds a request of that size; OpenAI's is the time until it is
// full again, ahead after any use, so a reset alone does not mean short.
func BucketShort(limit, remaining, reset int64) bool {
	if remaining == 0 {
		return true
	}
	if reset == record.None || reset <= 0 {
		return false
	}
	return remaining == record.None || limit == record.None || limit <= 0 || remaining*10 < limit
}

// FaultCounts counts a group's failed requests by fault; the sum is every
// failure (outcomes other than ok, cancelled and generator_drop).
type FaultCounts [numFaults]int64

// Add counts rec.
func (c *FaultCounts) Add(r *record.Record) { c[FaultOf(r)]++ }

// Failed is the number of failed requests counted.
func (c *FaultCounts) Failed() int64 {
	var n int64
	for f := FaultUnreachable; f < numFaults; f++ {
		n += c[f]
	}
	return n
}

// NotLoad is the number of failures whose fault is not Load.
func (c *FaultCounts) NotLoad() int64 {
	var n int64
	for f := FaultUnreachable; f < numFaults; f++ {
		if !f.Load() {
			n += c[f]
		}
	}
	return n
}

// Top is the most common fault of the failures that are not Load (its
// count), FaultNone when there are none.
func (c *FaultCounts) Top() (Fault, int64) {
	top, n := FaultNone, int64(0)
	for f := FaultUnreachable; f < numFaults; f++ {
		if !f.Load() && c[f] > n {
			top, n = f, c[f]
		}
	}
	return top, n
}
