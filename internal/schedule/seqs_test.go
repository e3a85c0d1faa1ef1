package schedule

import "testing"

// Every generator's later seqs name it (seq mod n), lie above the whole
// schedule's arrivals and are shared by no other generator; one generator
// numbers them straight on from its last arrival.
func TestLaterSeqs(t *testing.T) {
	cases := []struct {
		name        string
		total, i, n int
		first, step int64
	}{
		{"one process", 10, 0, 1, 10, 1},
		{"one process, no arrivals", 0, 0, 1, 0, 1},
		// T = 10 = 3·3 + 1: shard 0 ends at 9 → 12; shard 1 at 7 → 10; shard 2 at 8 → 11.
		{"shard 0 of 3", 10, 0, 3, 12, 3},
		{"shard 1 of 3", 10, 1, 3, 10, 3},
		{"shard 2 of 3", 10, 2, 3, 11, 3},
		{"shard 1 of 2, even", 10, 1, 2, 11, 2},
		{"shard 3 of 4, fewer arrivals than shards", 2, 3, 4, 3, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var all []Arrival
			for s := range tc.total {
				all = append(all, Arrival{Seq: int64(s)})
			}
			first, step := LaterSeqs(Shard(all, tc.i, tc.n), tc.i, tc.n)
			if first != tc.first || step != tc.step {
				t.Errorf("LaterSeqs = %d, %d; want %d, %d", first, step, tc.first, tc.step)
			}
		})
	}
	for total := range 30 {
		for n := 1; n <= 6; n++ {
			var all []Arrival
			for s := range total {
				all = append(all, Arrival{Seq: int64(s)})
			}
			seen := map[int64]int{}
			for i := range n {
				first, step := LaterSeqs(Shard(all, i, n), i, n)
				for k := range int64(5) {
					s := first + k*step
					if s < int64(total) || ShardOf(s, n) != i {
						t.Errorf("T=%d shard %d/%d: later seq %d (below T or not this shard's)", total, i, n, s)
					}
					if j, dup := seen[s]; dup {
						t.Errorf("T=%d n=%d: later seq %d of shards %d and %d", total, n, s, j, i)
					}
					seen[s] = i
				}
			}
		}
	}
}
