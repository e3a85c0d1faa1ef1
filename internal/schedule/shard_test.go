package schedule

import "testing"

func TestShardPartitions(t *testing.T) {
	var all []Arrival
	for i := range 10 {
		all = append(all, Arrival{Seq: int64(i)})
	}
	seen := map[int64]int{}
	for i := range 3 {
		for _, a := range Shard(all, i, 3) {
			if ShardOf(a.Seq, 3) != i {
				t.Errorf("seq %d in shard %d", a.Seq, i)
			}
			seen[a.Seq]++
		}
	}
	for _, a := range all {
		if seen[a.Seq] != 1 {
			t.Errorf("seq %d sent %d times, want once", a.Seq, seen[a.Seq])
		}
	}
	if got := len(Shard(all, 0, 1)); got != 10 {
		t.Errorf("one generator sends %d, want all 10", got)
	}
}
