package schedule

// ShardOf is the generator that sends arrival (or session) seq when n
// generators split a schedule: seq mod n. Interleaving keeps every
// generator's share the same shape as the whole (each phase, each burst
// at 1/n of the rate), which a split by time would not.
func ShardOf(seq int64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(seq % int64(n))
}

// Shard returns the arrivals generator i of n sends, in order.
func Shard(arrivals []Arrival, i, n int) []Arrival {
	if n <= 1 {
		return arrivals
	}
	out := make([]Arrival, 0, len(arrivals)/n+1)
	for _, a := range arrivals {
		if ShardOf(a.Seq, n) == i {
			out = append(out, a)
		}
	}
	return out
}
