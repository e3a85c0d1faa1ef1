package fleet

// workerCap is worker i's share of the run's in-flight cap c among n
// workers: ⌈c/n⌉ or ⌊c/n⌋, the remainder to the first workers, so the
// fleet's caps sum to c — the cap of one process (--max-in-flight is the
// run's, not each worker's). A worker's cap is at least 1 (a cap of 0
// would mean the default), so with c < n the fleet allows n.
func workerCap(c, n, i int) int {
	if n < 1 {
		return c
	}
	share := c / n
	if i < c%n {
		share++
	}
	return max(share, 1)
}
