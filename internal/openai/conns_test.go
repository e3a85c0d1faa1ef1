package openai

import "testing"

func TestMaxConnsFor(t *testing.T) {
	if got := MaxConnsFor(10); got != 10 {
		t.Errorf("MaxConnsFor(10) = %d, want one connection per request", got)
	}
	if got := MaxConnsFor(0); got != 1 {
		t.Errorf("MaxConnsFor(0) = %d, want 1", got)
	}
	lim := fdLimit()
	if lim == 0 {
		t.Skip("no file-descriptor limit on this platform")
	}
	if got := MaxConnsFor(1 << 29); got != max(lim-fdReserve, 1) {
		t.Errorf("MaxConnsFor(2^29) = %d, want the fd limit %d less %d", got, lim, fdReserve)
	}
}
