package run

import (
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
)

// Every arrival of a plan ends in one of three classes: recorded (a line
// in requests.jsonl, whatever its outcome), unrecorded (due before the run
// ended, without a line: the run died with it in flight, or with its line
// still in memory) and unsent (due after the run ended). The accounting
// is exact for the schedule: the arrivals are rebuilt from the plan and
// the seed, so nothing is inferred from the records' rates.

// UnrecordedError is the Error of the record that stands in, in the
// analysis, for an arrival without a line: it counts as offered and as
// cut short by surge, never as a failure of the target.
const UnrecordedError = "no record: the run ended (killed, or its disk full) before this arrival's end was written"

// tally notes which arrivals have a record and how far the records reach.
type tally struct {
	seen   []uint64 // bit seq: a record of arrival seq was read
	latest int64    // the latest time a record shows the run alive (sent or done), ns
	// profile is the records' workload profile when they all have the
	// same one (mixed is set when they do not): the stand-ins get it, so
	// that they do not make a profile of their own.
	profile string
	mixed   bool
	any     bool
}

func (t *tally) add(r *record.Record) {
	if r.Seq >= 0 && r.Seq < 1<<40 {
		i := int(r.Seq >> 6)
		if i >= len(t.seen) {
			t.seen = slices.Grow(t.seen, i+1-len(t.seen))[:i+1]
		}
		t.seen[i] |= 1 << (r.Seq & 63)
	}
	t.latest = max(t.latest, r.ScheduledNs, r.SentNs, r.DoneNs)
	if !t.any {
		t.profile, t.any = r.Profile, true
	} else if r.Profile != t.profile {
		t.mixed = true
	}
}

func (t *tally) has(seq int64) bool {
	i := int(seq >> 6)
	return seq >= 0 && i < len(t.seen) && t.seen[i]&(1<<(seq&63)) != 0
}

// settle accounts for every arrival of the plan against the records
// tallied, the run having ended endNs after its origin, and passes a
// stand-in record of each unrecorded arrival to fn (for the analysis to
// count it as offered).
func (t *tally) settle(arrivals iter.Seq[schedule.Arrival], endNs int64, fn func(*record.Record) error) (record.Arrivals, error) {
	a := record.Arrivals{EndNs: endNs}
	for ar := range arrivals {
		a.Planned++
		switch at := int64(ar.At); {
		case t.has(ar.Seq):
			a.Recorded++
		case at < endNs:
			a.Unrecorded++
			r := record.New(fmt.Sprintf("unrecorded-%d", ar.Seq), ar.Seq, ar.Phase, at)
			r.Outcome, r.Cause, r.Error = record.Cancelled, record.CauseUnrecorded, UnrecordedError
			if !t.mixed {
				r.Profile = t.profile // a mix's draw is unknown: its own row
			}
			if fn != nil {
				if err := fn(&r); err != nil {
					return a, err
				}
			}
		default:
			a.Unsent++
		}
	}
	return a, nil
}

// ArrivalsLine says what became of the plan's arrivals, for the console
// and the notes of results.md; "" when every arrival has its record.
func ArrivalsLine(a *record.Arrivals) string {
	if a == nil || a.Planned == 0 || (a.Unrecorded == 0 && a.Unsent == 0) {
		return ""
	}
	s := fmt.Sprintf("arrivals of the plan: %d = %d recorded + %d sent but not recorded + %d never sent (the run ended at +%s)",
		a.Planned, a.Recorded, a.Unrecorded, a.Unsent, schedule.ShowDuration(time.Duration(a.EndNs)))
	if a.Unrecorded > 0 {
		s += "; the unrecorded count as offered and cut short by surge, not as failures of the target"
	}
	return s
}
