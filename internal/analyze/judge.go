package analyze

import "github.com/surge-bench/surge/internal/record"

// Judge reports whether rec met the per-request deadline, i.e. counts toward
// goodput (docs/method.md §1): outcome ok, HTTP status 200, first content token within
// d.TTFT of the scheduled arrival and completion within d.E2E of it. A zero
// deadline field disables that clause. The load generator calls Judge to set
// rec.Good before writing the record.
func Judge(rec *record.Record, d Deadlines) bool {
	if rec.Outcome != record.OK || rec.Status != 200 ||
		rec.FirstTokenNs == record.None || rec.DoneNs == record.None {
		return false
	}
	if d.TTFT > 0 && rec.FirstTokenNs-rec.ScheduledNs > int64(d.TTFT) {
		return false
	}
	if d.E2E > 0 && rec.DoneNs-rec.ScheduledNs > int64(d.E2E) {
		return false
	}
	return true
}
