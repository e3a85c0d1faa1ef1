package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// Stats is what one run measured.
type Stats struct {
	Asked, Achieved        float64 // arrivals/s (see the package doc)
	Scheduled, Sent        int64
	Completed              int64
	Outcomes               map[record.Outcome]int64
	Good                   int64
	LagP50, LagP99, LagMax time.Duration
	SteadyLagP99           time.Duration // lag P99 of arrivals scheduled after SteadyAfter
	TTFTP50, TTFTP99       time.Duration
	CPU                    float64       // CPU-seconds of env.Execute: CPURun + CPUAnalysis + CPUFiles
	CPURun                 float64       // CPU-seconds until the end of the run phase
	CPUAnalysis            float64       // CPU-seconds from the end of the run to Spec.Finish (records closed, sorted, analysed)
	CPUFiles               float64       // CPU-seconds from Spec.Finish to Execute's return (manifest, summary, timeseries)
	Wall                   time.Duration // wall time of env.Execute
	RunWall                time.Duration // wall time of the run phase (Result.Elapsed)
	RSSMiB                 float64
	ServerCPU              float64 // -1 when unknown
	Load0, Load1           string
	OthersGen              float64 // CPU-seconds others used on the generator's CPU; -1 unknown
	OthersServer           float64 // CPU-seconds others used on the server's CPU; -1 unknown
}

// SteadyAfter is where the steady-state lag percentile starts: by then the
// pool has opened its connections (TTFT + stream length ≈ 0.4 s of arrivals)
// and the heap has grown to its working size.
const SteadyAfter = 2 * time.Second

// analyze fills the schedule and latency statistics from the records.
func (st *Stats) analyze(recs []record.Record) {
	var lags, steady, ttfts []int64
	var lastSent int64
	for i := range recs {
		r := &recs[i]
		st.Outcomes[r.Outcome]++
		if r.Outcome != record.GeneratorDrop {
			st.Completed++
		}
		if r.Good {
			st.Good++
		}
		if r.Sent() {
			st.Sent++
			lags = append(lags, r.Lag())
			if r.ScheduledNs >= int64(SteadyAfter) {
				steady = append(steady, r.Lag())
			}
			lastSent = max(lastSent, r.SentNs)
		}
		if v := r.TTFTSend(); v != record.None {
			ttfts = append(ttfts, v)
		}
	}
	if st.Sent > 0 {
		span := float64(lastSent)/1e9 + 1/st.Asked
		st.Achieved = float64(st.Sent) / span
	}
	slices.Sort(lags)
	slices.Sort(ttfts)
	slices.Sort(steady)
	st.SteadyLagP99 = rank(steady, 0.99)
	st.LagP50, st.LagP99 = rank(lags, 0.50), rank(lags, 0.99)
	if len(lags) > 0 {
		st.LagMax = time.Duration(lags[len(lags)-1])
	}
	st.TTFTP50, st.TTFTP99 = rank(ttfts, 0.50), rank(ttfts, 0.99)
}

// rank is the nearest-rank percentile of sorted v: v[⌈q·n⌉−1].
func rank(v []int64, q float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	i := int(float64(len(v))*q+0.999999999) - 1
	return time.Duration(v[max(0, min(i, len(v)-1))])
}

func (st *Stats) outcomes() string {
	var parts []string
	for _, o := range record.Outcomes {
		if n := st.Outcomes[o]; n > 0 {
			parts = append(parts, string(o)+" "+strconv.FormatInt(n, 10))
		}
	}
	return strings.Join(parts, ", ")
}

// per1k scales CPU-seconds to CPU-seconds per 1,000 scheduled arrivals.
func (st *Stats) per1k(cpu float64) float64 { return cpu / float64(st.Scheduled) * 1000 }

// cpuAfter is the CPU-seconds spent after the run phase.
func (st *Stats) cpuAfter() float64 { return st.CPUAnalysis + st.CPUFiles }

func (st *Stats) serverShare() string {
	if st.ServerCPU < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*st.ServerCPU/st.RunWall.Seconds())
}

// others is what other processes used on the two pinned CPUs, as shares
// of env.Execute's wall time.
func (st *Stats) others() string {
	f := func(v float64) string {
		if v < 0 {
			return "?"
		}
		return fmt.Sprintf("%.0f %%", 100*v/st.Wall.Seconds())
	}
	return f(st.OthersGen) + " / " + f(st.OthersServer)
}

func (st *Stats) summary(w io.Writer) {
	fmt.Fprintf(w, "asked %.0f/s  achieved %.1f/s (%.2f %%)  scheduled %d  sent %d  completed %d  good %d\n",
		st.Asked, st.Achieved, 100*st.Achieved/st.Asked, st.Scheduled, st.Sent, st.Completed, st.Good)
	fmt.Fprintf(w, "outcomes: %s\n", st.outcomes())
	fmt.Fprintf(w, "schedule lag p50 %v  p99 %v  max %v; p99 after the first %v: %v\n", ms(st.LagP50), ms(st.LagP99), ms(st.LagMax), SteadyAfter, ms(st.SteadyLagP99))
	fmt.Fprintf(w, "ttft (send) p50 %v  p99 %v\n", ms(st.TTFTP50), ms(st.TTFTP99))
	fmt.Fprintf(w, "GOMAXPROCS %d; cpu %.2f s over %.1f s wall = %.3f CPU-s per 1,000 requests; peak RSS %.0f MiB; server cpu %s; others on gen/server CPU %s; load %s → %s\n",
		runtime.GOMAXPROCS(0), st.CPU, st.Wall.Seconds(), st.per1k(st.CPU), st.RSSMiB, st.serverShare(), st.others(), st.Load0, st.Load1)
	fmt.Fprintf(w, "of which: run %.2f s over %.1f s; after the run %.3f s over %.0f ms (%.3f CPU-s per 1,000): analysis %.3f s, files %.3f s\n",
		st.CPURun, st.RunWall.Seconds(), st.cpuAfter(), float64(st.Wall-st.RunWall)/1e6, st.per1k(st.cpuAfter()), st.CPUAnalysis, st.CPUFiles)
}

const mdHead = "| rate | achieved/s | sent | completed | outcomes | lag p50 | lag p99 | lag max | lag p99 (t ≥ 2 s) | TTFT p50 / p99 | CPU-s per 1k | of which after the run | peak RSS | server CPU | others on gen / server CPU | load 1m |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

func (st *Stats) row(w io.Writer, label string) {
	fmt.Fprintf(w, "| %s | %.1f (%.2f %%) | %d | %d | %s | %s | %s | %s | %s | %s / %s | %.3f | %.3f | %.0f MiB | %s | %s | %s→%s |\n",
		label, st.Achieved, 100*st.Achieved/st.Asked, st.Sent, st.Completed, st.outcomes(),
		ms(st.LagP50), ms(st.LagP99), ms(st.LagMax), ms(st.SteadyLagP99), ms(st.TTFTP50), ms(st.TTFTP99),
		st.per1k(st.CPU), st.per1k(st.cpuAfter()), st.RSSMiB, st.serverShare(), st.others(), st.Load0, st.Load1)
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
}
