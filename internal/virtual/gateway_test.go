package virtual

import (
	"context"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// TestGatewayRecords: in virtual time the simulator's gateway is recorded
// as the HTTP simulator's headers would show it: a request held past its
// timeout never got headers (no gateway wait, no rate-limit numbers); one
// held and released has its wait; a 429 of the gateway has its buckets,
// a whole-second Retry-After and no replica.
func TestGatewayRecords(t *testing.T) {
	cfg := baseConfig()
	cfg.Timeout = 5 * time.Second
	cfg.Sim.QuotaRequestsPerMinute, cfg.Sim.GatewayQueue = 60, 20 // stock 60, then one a second
	arrivals := constant(t, "main", 100, time.Second)             // 100 at once, roughly
	out, err := Open(context.Background(), cfg, fixedGen(t, 100, 4), arrivals, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var passed, held, timedOut, throttled int
	for i := range out.Records {
		r := &out.Records[i]
		switch {
		case r.Outcome == record.RateLimited:
			throttled++
			if !r.RateLimit.Seen() || r.RetryAfterNs <= 0 || r.RetryAfterNs%int64(time.Second) != 0 || r.Replica != "" || r.GatewayNs != record.None {
				t.Errorf("gateway 429: %+v", r)
			}
		case r.Outcome == record.Timeout && r.HeadersNs == record.None:
			timedOut++
			if r.GatewayNs != record.None || r.RateLimit.Seen() {
				t.Errorf("held past its timeout, yet gateway %d and rate limit %+v", r.GatewayNs, r.RateLimit)
			}
		case r.GatewayNs > 0:
			held++
			if r.HeadersNs-r.SentNs != r.GatewayNs {
				t.Errorf("held %d ns, headers after %d ns", r.GatewayNs, r.HeadersNs-r.SentNs)
			}
		case r.GatewayNs == 0:
			passed++
		default:
			t.Errorf("unexpected record %+v", r)
		}
	}
	t.Logf("passed %d, held and released %d, held past the timeout %d, throttled %d", passed, held, timedOut, throttled)
	if passed != 60 || held == 0 || timedOut == 0 || throttled != 100-60-20 {
		t.Errorf("passed %d (want the stock, 60), held %d, timed out %d, throttled %d (want 20)", passed, held, timedOut, throttled)
	}
}
