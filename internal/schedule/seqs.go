package schedule

// LaterSeqs numbers what a sessions run sends beyond its arrivals — later
// turns and fan-out sub-requests — so that seqs stay unique when n
// generators each send their share of one schedule (generator i the
// arrivals whose Seq mod n is i). Generator i takes the seqs above every
// one of its arrivals' that are congruent to i mod n, in the order it
// creates the requests:
//
//	first = the smallest s > max(arrivals' Seq) with s mod n = i
//	then first + n, first + 2n, …   (step = n)
//
// so such a seq names its generator (ShardOf) as an arrival's does, and no
// two generators share one. Every one lies above all arrivals' seqs of the
// whole schedule too: with T arrivals numbered 0…T−1 and T = q·n + r,
// generator i's last arrival is q·n + i when i < r (first = (q+1)·n + i)
// and (q−1)·n + i otherwise (first = q·n + i ≥ T). One generator (n ≤ 1)
// numbers them max + 1, max + 2, …, as a single process always has.
func LaterSeqs(arrivals []Arrival, i, n int) (first, step int64) {
	top := int64(-1)
	for k := range arrivals {
		top = max(top, arrivals[k].Seq)
	}
	if n <= 1 {
		return top + 1, 1
	}
	s, m := top+1, int64(n)
	return s + ((int64(i)-s%m)%m+m)%m, m
}
