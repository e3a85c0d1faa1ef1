package analyze

import (
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// TestBucketShort: a bucket is short when nothing remains, or a reset is
// ahead with under a tenth of the limit left; OpenAI's reset (time until
// full again) with plenty remaining is not.
func TestBucketShort(t *testing.T) {
	const N = record.None
	for _, tc := range []struct {
		limit, remaining, reset int64
		want                    bool
	}{
		{10000, 9999, int64(6 * time.Millisecond), false}, // OpenAI after one request
		{200000, 150, int64(30 * time.Second), true},      // DigitalOcean, a request of that size does not fit
		{200000, 150000, 0, false},                        // DigitalOcean with room
		{200000, 0, 0, true},
		{N, 0, N, true},
		{N, N, int64(time.Second), true}, // a reset and nothing else
		{N, N, N, false},
		{100, 50, int64(time.Second), false},
	} {
		if got := BucketShort(tc.limit, tc.remaining, tc.reset); got != tc.want {
			t.Errorf("limit %d remaining %d reset %d: %v, want %v", tc.limit, tc.remaining, tc.reset, got, tc.want)
		}
	}
}
