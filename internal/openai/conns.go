package openai

// fdReserve is how many file descriptors MaxConnsFor leaves to everything
// but the connections: the run folder's files, listeners, the engine
// scraper, the runtime's own.
const fdReserve = 256

// MaxConnsFor returns the connection pool size (Config.MaxConns) for up to
// inFlight requests in flight: one connection each, as HTTP/1.1 streams
// need, but no more than the process's file-descriptor limit leaves after
// fdReserve. Beyond that a request waits for a connection (its connection
// wait) instead of failing with "too many open files". At least 1.
func MaxConnsFor(inFlight int) int {
	n := inFlight
	if lim := fdLimit(); lim > 0 {
		n = min(n, lim-fdReserve)
	}
	return max(n, 1)
}
