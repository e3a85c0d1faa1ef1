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
	if d.TPOT > 0 && rec.TPOTNs != record.None && rec.TPOTNs > int64(d.TPOT) {
		return false
	}
	return true
}

// smoothGood reports whether rec met the smooth goodput deadline of d:
// outcome ok, HTTP 200, and every content chunk i (0 = the first) by the
// scheduled arrival + d.TTFT + i × d.Token — which holds when
// rec.SmoothNs (the latest chunk time − i × budget, kept by the client)
// is within d.TTFT of the scheduled arrival. False without d.Token or a
// SmoothNs.
func smoothGood(rec *record.Record, d Deadlines) bool {
	if d.Token <= 0 || rec.Outcome != record.OK || rec.Status != 200 || rec.SmoothNs == record.None {
		return false
	}
	return d.TTFT <= 0 || rec.SmoothNs-rec.ScheduledNs <= int64(d.TTFT)
}
