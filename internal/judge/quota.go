package judge

import (
	"cmp"
	"fmt"

	"github.com/surge-bench/surge/internal/analyze"
)

// Binding names the quota bucket that bound a group of responses: the one
// that was short (analyze.BucketShort) on the most
// responses, ties going to the later refill. It says when the bucket first
// ran out and when it was projected to hold a request again, relative to
// fromMs (the group's start, ms since the run began): "bound by tokens
// per minute: short on 340 of 420 responses; remaining reached 0 at
// +12.0s, refill projected at +48.0s". ok is false when no bucket was
// short.
func Binding(rl *analyze.RateLimitStats, fromMs float64) (text string, b analyze.BucketStats, ok bool) {
	for _, x := range rl.Buckets {
		if x.Short == 0 {
			continue
		}
		if !ok || cmp.Or(cmp.Compare(x.Short, b.Short), cmp.Compare(x.RefillAtMs, b.RefillAtMs)) > 0 {
			b, ok = x, true
		}
	}
	if !ok {
		return "", b, false
	}
	text = fmt.Sprintf("bound by %s: short on %d of %d responses", b.Bucket, b.Short, b.Responses)
	if b.EmptyAtMs >= 0 {
		text += "; remaining reached 0 at " + since(b.EmptyAtMs-fromMs)
	}
	if b.RefillAtMs >= 0 {
		text += ", refill projected at " + since(b.RefillAtMs-fromMs)
	}
	return text, b, true
}

// since writes an offset from a group's start: "+12.0s", "−0.4s".
func since(ms float64) string {
	if ms < 0 {
		return fmt.Sprintf("−%.1fs", -ms/1000)
	}
	return fmt.Sprintf("+%.1fs", ms/1000)
}
