package analyze

import (
	"strconv"
	"strings"
)

// Quantile selects one of the percentiles a Dist reports.
type Quantile int

// The reported quantiles.
const (
	Q50 Quantile = 50
	Q95 Quantile = 95
	Q99 Quantile = 99
)

// Value returns the quantile's value in ms and whether it is censored (then
// the value is only a lower bound).
func (d Dist) Value(q Quantile) (ms float64, censored bool) {
	switch q {
	case Q50:
		return d.P50Ms, d.P50Censored
	case Q95:
		return d.P95Ms, d.P95Censored
	default:
		return d.P99Ms, d.P99Censored
	}
}

// Unbounded reports that the censored percentiles have no bound at all:
// no value was recorded and every request that could have given one was
// cancelled in flight (an interrupted run), none timed out. Such a
// percentile is unknown, not "> 0".
func (d Dist) Unbounded() bool { return d.Count == 0 && d.Interrupted && d.CensorMs == 0 }

// Text formats a quantile for people: "812ms", "1.52s", "> 60s" when it is
// censored (">" followed by its lower bound: the timeout when the rank lies
// among timeouts, else the largest value observed, as when it lies among
// requests cancelled in flight), "n/a" when there are no samples.
func (d Dist) Text(q Quantile) string {
	v, cens := d.Value(q)
	switch {
	case cens && d.Unbounded():
		return "n/a (interrupted)" // nothing finished: no bound at all
	case cens: // v is the bound: the timeout, or the largest value observed
		return "> " + FormatMs(v)
	case d.Count == 0:
		return "n/a"
	}
	return FormatMs(v)
}

// String formats the distribution on one line:
// "p50 812ms  p95 1.52s  p99 > 60s  (n=1234)".
func (d Dist) String() string {
	return "p50 " + d.Text(Q50) + "  p95 " + d.Text(Q95) + "  p99 " + d.Text(Q99) +
		"  (n=" + strconv.FormatInt(d.Count, 10) + ")"
}

// FormatMs formats a duration given in milliseconds with three significant
// digits: "0.42ms", "81.2ms", "812ms", "1.52s", "60s", "125s".
func FormatMs(ms float64) string {
	switch {
	case ms < 10:
		return trimZeros(strconv.FormatFloat(ms, 'f', 2, 64)) + "ms"
	case ms < 100:
		return trimZeros(strconv.FormatFloat(ms, 'f', 1, 64)) + "ms"
	case ms < 999.5:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	}
	s := ms / 1000
	switch {
	case s < 9.995:
		return trimZeros(strconv.FormatFloat(s, 'f', 2, 64)) + "s"
	case s < 99.95:
		return trimZeros(strconv.FormatFloat(s, 'f', 1, 64)) + "s"
	}
	return strconv.FormatFloat(s, 'f', 0, 64) + "s"
}

// trimZeros drops trailing zeros after a decimal point, and the point.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Thousands formats n with thousands separators: "1,204", "-4,820".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
