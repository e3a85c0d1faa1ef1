package judge

import (
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/record/recordtest"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

// okRec and failRec build records (recordtest).
var okRec, failRec = recordtest.OK, recordtest.Fail

// srcOf streams recs; nil for none, as a run without records has no source.
func srcOf(recs []record.Record) record.Source {
	if recs == nil {
		return nil
	}
	return record.SliceSource(recs)
}

// sloOf is the run's verdicts under the default SLO.
func sloOf(r *analyze.Result) *Verdicts { return Run(r, Rules{SLO: DefaultSLO}) }
