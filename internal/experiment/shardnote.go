package experiment

import (
	"fmt"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
)

// ShardNote says what a run folder of a distributed run holds, or "" for
// one process: a static shard's own folder holds 1/N of the arrivals, so
// its rates and counts are 1/N of the plan's (its latencies are those its
// share saw, under the whole load if the N shards ran together), and
// surge merge gives the whole; a merged folder says how many shards it
// joined and how far apart they started.
func ShardNote(res *run.Result) string {
	if res.Manifest == nil || res.Manifest.Distributed == nil || res.Manifest.Distributed.Mode != record.DistShard {
		return ""
	}
	d := res.Manifest.Distributed
	if d.Shard >= 0 {
		return fmt.Sprintf("SHARD %d of %d (--shard %d/%d): this folder holds only the arrivals whose seq mod %d is %d, so its offered, sent and completed counts and rates are 1/%d of the plan's; surge merge of the %d shard folders gives the whole run.",
			d.Shard, d.Generators, d.Shard, d.Generators, d.Generators, d.Shard, d.Generators, d.Generators)
	}
	return fmt.Sprintf("merged from %d shards (surge merge): every record keeps its shard; the shards' origins were %.1f ms apart (start skew).", d.Generators, float64(d.StartSkewNs)/1e6)
}
