package fleet

import "testing"

// The workers' in-flight caps sum to the run's --max-in-flight, each
// within one of the others, so N workers allow what one process allows.
func TestWorkerCapSumsToRunCap(t *testing.T) {
	for _, c := range []int{8, 9, 10, 16, 10000} {
		for n := 1; n <= 7; n++ {
			if c < n {
				continue
			}
			sum, lo, hi := 0, c, 0
			for i := range n {
				w := workerCap(c, n, i)
				sum += w
				lo, hi = min(lo, w), max(hi, w)
			}
			if sum != c || hi-lo > 1 {
				t.Errorf("cap %d over %d workers: sum %d (want %d), shares %d..%d", c, n, sum, c, lo, hi)
			}
		}
	}
	if got := workerCap(9, 2, 0); got != 5 {
		t.Errorf("cap 9 over 2: worker 0 gets %d, want 5 (the remainder first)", got)
	}
	if got := workerCap(2, 3, 2); got != 1 {
		t.Errorf("cap 2 over 3: worker 2 gets %d, want 1 (never 0, the default)", got)
	}
}
