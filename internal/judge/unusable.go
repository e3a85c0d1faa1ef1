package judge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
)

// The early stop of a target that cannot serve (Unusable).
const (
	// UnusableFirst: when the first 20 requests that ended all failed by
	// a cause no load explains, the target is unusable.
	UnusableFirst = 20
	// UnusableMin and UnusableAfter: so are the first 5 or more, once 10 s
	// of the schedule have passed — a dead port at 1 req/s stops after
	// 10 s, not 20.
	UnusableMin   = 5
	UnusableAfter = 10 * time.Second
)

// Unusable watches the first requests of a run against a real target
// (a run.Stopper): when the first UnusableFirst requests that ended — or
// at least UnusableMin of them once UnusableAfter of the schedule has
// passed — all failed by a cause no load explains (analyze.Fault: the
// target unreachable, no response at all, not authorized, not an
// inference endpoint, a request refused as invalid, a protocol
// violation, a quota), Stop says the target is unusable and why, in one
// line. A request that succeeds, or fails as load makes requests fail (a
// timeout after the response began, a 429 without quota headers, a 503),
// ends the watch: the run goes on. Requests surge cancelled or dropped
// count neither way.
type Unusable struct {
	n         int64
	faults    analyze.FaultCounts
	detail    [len(analyze.FaultCounts{})]string
	first     int64 // scheduled time of the first request counted, ns
	done      bool  // the target answered (or failed as load): nothing to decide
	why       string
	endpoint  string // what the requests call (NewUnusable)
	notServed int    // 404 or 405: a status by which the requests were not an inference endpoint
}

// NewUnusable returns a watch that has seen nothing. endpoint names what
// the requests call, e.g. "POST /v1/rerank (--api rerank)", for the
// cause of a target that does not serve it ("" = not named).
func NewUnusable(endpoint string) *Unusable { return &Unusable{endpoint: endpoint} }

// CheckFrom is when the watch is first asked.
func (u *Unusable) CheckFrom() time.Duration { return time.Second }

// Add counts one ended request.
func (u *Unusable) Add(r *record.Record) {
	if u.done || u.why != "" || r.Outcome == record.Cancelled || r.Outcome == record.GeneratorDrop {
		return
	}
	if u.n == 0 {
		u.first = r.ScheduledNs
	}
	u.n++
	f := analyze.FaultOf(r)
	if f == analyze.FaultNone || f.Load() && f != analyze.FaultNoResponse {
		u.done = true
		return
	}
	if u.faults[f] == 0 {
		u.detail[f] = r.Error
	}
	if f == analyze.FaultNotInference && (r.Status == 404 || r.Status == 405) {
		u.notServed = r.Status
	}
	u.faults[f]++
}

// Stop says why the target is unusable, once the first requests show it.
func (u *Unusable) Stop(horizon time.Duration) string {
	if u.why != "" || u.done {
		return u.why
	}
	if u.n >= UnusableFirst || u.n >= UnusableMin && int64(horizon)-u.first >= int64(UnusableAfter) {
		u.why = fmt.Sprintf("the target is unusable: the first %d requests all failed: %s", u.n, u.Causes())
		if u.endpoint != "" && u.notServed != 0 {
			u.why += fmt.Sprintf("; %s answered %d: the target does not serve this API at this URL", u.endpoint, u.notServed)
		}
		return u.why
	}
	return ""
}

// Tripped says whether Stop found the target unusable.
func (u *Unusable) Tripped() bool { return u.why != "" }

// Causes names what the requests failed by, the most common first:
// "target unreachable (connection refused)".
func (u *Unusable) Causes() string {
	fs := slices.Clone(analyze.Faults)
	slices.SortStableFunc(fs, func(a, b analyze.Fault) int { return cmp.Compare(u.faults[b], u.faults[a]) })
	var parts []string
	for _, f := range fs {
		n := u.faults[f]
		if n == 0 {
			break
		}
		p := f.Text()
		if d := u.detail[f]; d != "" {
			p += " (" + d + ")"
		}
		if n < u.n {
			p += fmt.Sprintf(" ×%d", n)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}
