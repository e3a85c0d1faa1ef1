package rundir

import (
	"fmt"
	"io"
	"strconv"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/scrape"
)

// WriteTimeseries writes timeseries.csv: one row per arrival window with
// its rates and percentiles, the client queue view at the window's start
// and the engine's peak waiting and running queue over the scrapes within
// the window (engine_waiting, engine_running: the maximum, so a peak
// between two window starts is not lost).
func WriteTimeseries(w io.Writer, a *analyze.Result, engine []scrape.Sample) error {
	if _, err := fmt.Fprintln(w, "window_start_s,window_end_s,phase,offered_rps,sent_rps,completed_rps,arrivals_ok_ratio,goodput_rps,samples,error_rate,rate_limit_rate,timeout_rate,drop_rate,ttft_p50_ms,ttft_p95_ms,ttft_p99_ms,e2e_p50_ms,e2e_p95_ms,e2e_p99_ms,lag_p99_ms,in_flight,client_waiting,oldest_waiting_age_s,engine_waiting,engine_running"); err != nil {
		return err
	}
	for _, win := range a.Windows {
		l := &win.Latency
		tl := a.SampleAt(win.StartMs)
		ew, er := engineIn(engine, win.StartMs, win.EndMs)
		if _, err := fmt.Fprintf(w, "%s,%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%s,%s,%s\n",
			f3(win.StartMs/1000), f3(win.EndMs/1000), win.Phase,
			f3(win.OfferedRPS), f3(win.SentRPS), f3(win.CompletedRPS), f4(win.ArrivalsOKRatio), f3(win.GoodputRPS), win.Offered,
			f4(win.ErrorRate), f4(win.RateLimitRate), f4(win.TimeoutRate), f4(win.DropRate),
			pct(l.TTFTSchedule, analyze.Q50), pct(l.TTFTSchedule, analyze.Q95), pct(l.TTFTSchedule, analyze.Q99),
			pct(l.E2ESchedule, analyze.Q50), pct(l.E2ESchedule, analyze.Q95), pct(l.E2ESchedule, analyze.Q99),
			pct(l.ScheduleLag, analyze.Q99), tl.InFlight, tl.Waiting, f3(tl.OldestWaitingAgeMs/1000), ew, er); err != nil {
			return err
		}
	}
	return nil
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func f4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// pct prints a percentile for CSV: empty when unknown, ">x" when censored.
func pct(d analyze.Dist, q analyze.Quantile) string {
	if d.Count == 0 && !d.P99Censored {
		return ""
	}
	v, cens := d.Value(q)
	if cens {
		return ">" + f3(v)
	}
	return f3(v)
}

// engineIn is the engine's peak waiting and running queue over the samples
// in [fromMs, toMs) (scrape.MaxIn), as text.
func engineIn(samples []scrape.Sample, fromMs, toMs float64) (waiting, running string) {
	from, to := int64(fromMs*1e6), int64(toMs*1e6)
	if v, ok := scrape.MaxIn(samples, scrape.Waiting, from, to); ok {
		waiting = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if v, ok := scrape.MaxIn(samples, scrape.Running, from, to); ok {
		running = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return waiting, running
}
