package sim

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

func gatewayOf(t *testing.T, rpm, tpm, tpd, queue int) *Gateway {
	t.Helper()
	cfg := DefaultConfig()
	cfg.QuotaRequestsPerMinute, cfg.QuotaTokensPerMinute, cfg.QuotaTokensPerDay, cfg.GatewayQueue = rpm, tpm, tpd, queue
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return NewGateway(cfg)
}

// TestGatewayBucketRefills: 60 requests per minute is a stock of 60 and
// one more each second; the 61st request at 0 waits 1 s for it.
func TestGatewayBucketRefills(t *testing.T) {
	g := gatewayOf(t, 60, 0, 0, 0)
	for i := range 60 {
		a := g.Admit(0, 100)
		if a.Refused || a.Release != 0 {
			t.Fatalf("request %d of the stock: %+v", i, a)
		}
		if b := a.Buckets[BucketRequests]; b.Limit != 60 || b.Remaining != int64(59-i) {
			t.Fatalf("request %d: bucket %+v", i, b)
		}
	}
	a := g.Admit(0, 100)
	if !a.Refused || a.Full || a.RetryAfter != time.Second || a.Binding != BucketRequests {
		t.Fatalf("61st at 0: %+v", a)
	}
	if a.Buckets[BucketRequests].Reset != time.Second || a.Buckets[BucketTokensMinute].On {
		t.Errorf("61st at 0: buckets %+v", a.Buckets)
	}
	// A refusal takes nothing: at 1 s there is exactly one again.
	if a := g.Admit(time.Second, 100); a.Refused {
		t.Fatalf("at 1s: %+v", a)
	}
	if a := g.Admit(time.Second, 100); !a.Refused {
		t.Fatalf("second at 1s: %+v", a)
	}
}

// TestGatewayQueueWaitsInOrder: over quota, requests wait for the refill
// one after the other while the queue has room; then they are refused as
// a full queue.
func TestGatewayQueueWaitsInOrder(t *testing.T) {
	g := gatewayOf(t, 0, 6000, 0, 2) // 100 tokens a second
	if a := g.Admit(0, 6000); a.Refused || a.Release != 0 {
		t.Fatalf("the whole stock: %+v", a)
	}
	a1 := g.Admit(0, 200)
	a2 := g.Admit(0, 100)
	a3 := g.Admit(0, 100)
	if a1.Release != 2*time.Second || a2.Release != 3*time.Second || a1.Binding != BucketTokensMinute {
		t.Fatalf("queued: %+v, %+v", a1, a2)
	}
	if !a3.Refused || !a3.Full || a3.RetryAfter != 4*time.Second {
		t.Fatalf("a third with a queue of 2: %+v", a3)
	}
	if n := g.Queued(2500 * time.Millisecond); n != 1 {
		t.Errorf("queued at 2.5s: %d, want 1", n)
	}
	// A request larger than the bucket can never pass.
	if a := g.Admit(10*time.Second, 6001); !a.Refused || a.RetryAfter != 0 {
		t.Errorf("larger than the bucket: %+v", a)
	}
}

// TestGatewayDayBucket: the day's bucket refills over 86,400 s and binds
// when it is the one short.
func TestGatewayDayBucket(t *testing.T) {
	g := gatewayOf(t, 0, 100000, 1000, 0)
	if a := g.Admit(0, 1000); a.Refused || a.Buckets[BucketTokensDay].Remaining != 0 || a.Binding != BucketTokensDay {
		t.Fatalf("the day's stock: %+v", a)
	}
	a := g.Admit(time.Minute, 10)
	if !a.Refused || a.Binding != BucketTokensDay {
		t.Fatalf("past the day's quota: %+v", a)
	}
	// 10 tokens refill in 864 s; a minute of it has passed.
	if want := 864*time.Second - time.Minute; a.RetryAfter < want-time.Millisecond || a.RetryAfter > want+time.Millisecond {
		t.Errorf("retry after %v, want %v", a.RetryAfter, want)
	}
}

func TestGatewayConfig(t *testing.T) {
	cfg := DefaultConfig()
	if NewGateway(cfg) != nil {
		t.Error("a gateway without a quota")
	}
	cfg.GatewayQueue = 5 // no effect without a quota
	if err := cfg.Validate(); err != nil || NewGateway(cfg) != nil {
		t.Errorf("a queue without a quota: %v", err)
	}
	cfg.GatewayQueue, cfg.QuotaTokensPerMinute, cfg.GatewayHeaders = 0, 10, "nginx"
	if err := cfg.Validate(); err == nil {
		t.Error("gateway_headers nginx is accepted")
	}
	cfg.GatewayHeaders, cfg.QuotaRequestsPerMinute = "kong", -1
	if err := cfg.Validate(); err == nil {
		t.Error("a negative quota is accepted")
	}
}

// TestGatewayRefusalNamesTheBucketItCannotFit: a request larger than one
// bucket is refused for that bucket, whatever another one says.
func TestGatewayRefusalNamesTheBucketItCannotFit(t *testing.T) {
	g := gatewayOf(t, 0, 1000, 1500, 0)
	if a := g.Admit(0, 1000); a.Refused {
		t.Fatalf("the minute's stock: %+v", a)
	}
	a := g.Admit(time.Second, 1200)
	if !a.Refused || a.Binding != BucketTokensMinute || a.RetryAfter != 0 {
		t.Errorf("1200 tokens against 1000 a minute: %+v", a)
	}
}

// TestGatewayRemainingIsExact: what remains is the whole tokens left, as
// exact arithmetic gives them, not one less where floating point lands
// just under an integer. A bucket emptied at 0 holds rate × t − cost at t
// (whole milliseconds, rate = limit / 60 s).
func TestGatewayRemainingIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		limit := 1000 + rng.IntN(100000)
		ms := 1 + rng.IntN(50000)
		cost := 1 + rng.IntN(limit/4)
		g := gatewayOf(t, 0, limit, 0, 0)
		g.Admit(0, limit)
		// refilled = limit × ms / 60,000, exactly; then cost is taken.
		refilled := new(big.Rat).SetFrac64(int64(limit)*int64(ms), 60000)
		if refilled.Cmp(new(big.Rat).SetInt64(int64(limit))) > 0 || refilled.Cmp(new(big.Rat).SetInt64(int64(cost))) < 0 {
			continue // full again, or not enough for this request
		}
		rem := new(big.Rat).Sub(refilled, new(big.Rat).SetInt64(int64(cost)))
		want := new(big.Int).Quo(rem.Num(), rem.Denom()).Int64()
		a := g.Admit(time.Duration(ms)*time.Millisecond, cost)
		if got := a.Buckets[BucketTokensMinute].Remaining; a.Refused || got != want {
			t.Fatalf("limit %d, %d ms, cost %d: remaining %d (refused %v), want %d", limit, ms, cost, got, a.Refused, want)
		}
	}
}
